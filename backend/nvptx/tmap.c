/* tmap.c: tensor maps made in the kernel (tensormap_create, sm_90a).
 *
 * A descriptor whose base, shape or strides the kernel computes (loaded
 * from memory, as a grouped GEMM's per-group pointers and sizes) has no map
 * the launch could encode. The kernel writes one itself, with the encoding
 * the launch gives a parameter's map (jit/cuda.c): a tiled 2-D map, the
 * box one 128-byte column block of the tile, swizzled at its row width.
 *
 *   1. warp 0 zeroes 128 bytes of shared scratch (the first 128-byte
 *      aligned address of the op's 256): every field not set below is 0;
 *   2. thread 0 sets the fields there with tensormap.replace (global
 *      address, rank, box, global dims innermost first, the outer stride
 *      in bytes, element strides, data type, interleave, swizzle, fill);
 *   3. warp 0 copies the 128 bytes to the op's slot of this program's
 *      global scratch with tensormap.cp_fenceproxy (a release of the new
 *      map to the tensormap proxy at gpu scope), then acquires it for
 *      itself (fence.proxy.tensormap::generic.acquire: thread 0, in warp 0,
 *      issues the copies through it; the bulk commit and wait after it
 *      keep ptxas from moving the fence, as Triton does);
 *   4. a barrier: no thread copies through the map before it is acquired.
 * The slot is program p's: the buffer (the kernel's last parameter) plus
 * p * (bytes per program) + the op's gscratch, p the linear program id (x
 * fastest). These instructions need PTX ISA 8.3 and sm_90a; a kernel that
 * makes maps is emitted as PTX 8.7 (be_nvptx_lower), where
 * tensormap.replace takes the stride in bytes.
 */
#include <stdio.h>
#include <string.h>

#include "nvptx.h"

/* An inline asm statement with side effects (and a memory clobber). */
static void asm_call(Nv *nv, const char *text, const char *cons, LLVMValueRef *args, int n)
{
	LLVMTypeRef at[8];
	for (int i = 0; i < n && i < 8; i++)
		at[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), at, (unsigned)n, 0);
	LLVMValueRef f = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					  LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, f, args, (unsigned)n, "");
}

static LLVMValueRef sreg(Nv *nv, const char *name)
{
	return nv_intrinsic(nv, name, NULL, 0, NULL, 0);
}

/* v (an integer scalar of IR type t) as an LLVM integer of bits bits, by
 * the signedness of t. */
static LLVMValueRef to_int(Nv *nv, const IrType *t, LLVMValueRef v, unsigned bits)
{
	LLVMTypeRef ty = LLVMIntTypeInContext(nv->c, bits);
	unsigned have = LLVMGetIntTypeWidth(LLVMTypeOf(v));
	if (have == bits)
		return v;
	if (have > bits)
		return LLVMBuildTrunc(nv->b, v, ty, "");
	return nv_is_unsigned(t) ? LLVMBuildZExt(nv->b, v, ty, "") : LLVMBuildSExt(nv->b, v, ty, "");
}

/* The PTX data-type code of tensormap.replace for a CUtensorMapDataType of
 * the launch's encoding (they differ from bf16 on). */
static int ptx_elemtype(int64_t cu)
{
	return cu == 9 ? 10 : (int)cu; /* bf16; u8 u16 u32 f16 f32 keep their codes */
}

/* The swizzle_mode code of a swizzle of bytes bytes. */
static int ptx_swizzle(int64_t bytes)
{
	return bytes == 128 ? 3 : bytes == 64 ? 2 : bytes == 32 ? 1 : 0;
}

/* This program's slot of byte off in the kernel's global scratch. */
static LLVMValueRef slot_addr(Nv *nv, int64_t off)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(nv->c);
	LLVMValueRef x = LLVMBuildZExt(nv->b, sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.x"), i64, "");
	LLVMValueRef y = LLVMBuildZExt(nv->b, sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.y"), i64, "");
	LLVMValueRef z = LLVMBuildZExt(nv->b, sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.z"), i64, "");
	LLVMValueRef nx = LLVMBuildZExt(nv->b, sreg(nv, "llvm.nvvm.read.ptx.sreg.nctaid.x"), i64, "");
	LLVMValueRef ny = LLVMBuildZExt(nv->b, sreg(nv, "llvm.nvvm.read.ptx.sreg.nctaid.y"), i64, "");
	LLVMValueRef lin = LLVMBuildAdd(
		nv->b, x, LLVMBuildMul(nv->b, nx, LLVMBuildAdd(nv->b, y, LLVMBuildMul(nv->b, ny, z, ""), ""), ""), "");
	LLVMValueRef byte = LLVMBuildAdd(
		nv->b, LLVMBuildMul(nv->b, lin, LLVMConstInt(i64, (unsigned long long)an_global_scratch(nv->f), 0), ""),
		LLVMConstInt(i64, (unsigned long long)off, 0), "");
	return LLVMBuildGEP2(nv->b, LLVMInt8TypeInContext(nv->c), nv->gscratch, &byte, 1, "");
}

void nv_lower_tmap_create(Nv *nv, IrOp *op)
{
	const IrAttr *gs = ir_op_attr(op, "gscratch");
	LLVMTypeRef rty = nv_llty(nv, op->res[0].type);
	if (!gs) { /* no tensor copy reads it: nothing to make */
		nv_set1(nv, &op->res[0], LLVMConstNull(rty));
		return;
	}
	if (nv->ao.arch != 90 || !nv->gscratch || !nv->f->is_kernel) {
		nv_fail(nv, op,
			"tensormap_create: a tensor map is made on the device only in a kernel for sm_90 "
			"(sm_90a), with global scratch");
		return;
	}
	const IrAttr *box = ir_op_attr(op, "tma_box");
	const IrType *elem = op->ops[0]->type->elem;
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c), i64 = LLVMInt64TypeInContext(nv->c);
	LLVMValueRef gaddr = slot_addr(nv, gs->i);
	LLVMValueRef g64 = LLVMBuildPtrToInt(nv->b, gaddr, i64, "");
	/* the staging copy: 128-byte aligned inside the op's scratch (the
	 * shared block itself is 1 KiB aligned) */
	int64_t soff = (nv_scratch_off(op) + AN_TMAP_BYTES - 1) / AN_TMAP_BYTES * AN_TMAP_BYTES;
	LLVMValueRef s0 = nv_smem_addr(nv, soff, nv_i32(nv, 0), 1);
	LLVMValueRef s32 = LLVMBuildTrunc(nv->b, LLVMBuildPtrToInt(nv->b, s0, i64, ""), i32, "");
	LLVMValueRef warp0 =
		LLVMBuildZExt(nv->b, LLVMBuildICmp(nv->b, LLVMIntULT, nv->tid, nv_i32(nv, 32), ""), i32, "");
	LLVMValueRef thread0 =
		LLVMBuildZExt(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, nv->tid, nv_i32(nv, 0), ""), i32, "");

	/* 1. zeros, one word per lane of warp 0 */
	LLVMValueRef zw[2] = {warp0, LLVMBuildAdd(nv->b, s32, LLVMBuildShl(nv->b, nv->lane, nv_i32(nv, 2), ""), "")};
	asm_call(nv, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p st.shared.b32 [$1], 0; }", "r,r,~{memory}", zw, 2);
	nv_intrinsic(nv, "llvm.nvvm.bar.warp.sync", NULL, 0, (LLVMValueRef[]){nv_i32(nv, -1)}, 1);

	/* 2. the fields, thread 0 */
	char text[2048];
	int es = (int)nv_esize(elem);
	snprintf(text, sizeof text,
		 "{ .reg .pred p; setp.ne.b32 p, $0, 0;\n"
		 "@p tensormap.replace.tile.global_address.shared::cta.b1024.b64 [$1], $2;\n"
		 "@p tensormap.replace.tile.rank.shared::cta.b1024.b32 [$1], 1;\n"
		 "@p tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [$1], 0, %lld;\n"
		 "@p tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [$1], 1, %lld;\n"
		 "@p tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [$1], 0, $3;\n"
		 "@p tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [$1], 1, $4;\n"
		 "@p tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [$1], 0, $5;\n"
		 "@p tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [$1], 0, 1;\n"
		 "@p tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [$1], 1, 1;\n"
		 "@p tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [$1], %d;\n"
		 "@p tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [$1], 0;\n"
		 "@p tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [$1], %d;\n"
		 "@p tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [$1], %d; }",
		 (long long)box->ints[0], (long long)box->ints[1], ptx_elemtype(ir_op_int(op, "tma_dtype", 0)),
		 ptx_swizzle(ir_op_int(op, "tma_swizzle", 0)), ir_op_int(op, "tma_nan", 0) ? 1 : 0);
	LLVMValueRef base = LLVMBuildPtrToInt(nv->b, nv_reg(nv, op->ops[0], 0), i64, "");
	LLVMValueRef stride = to_int(nv, op->ops[3]->type, nv_reg(nv, op->ops[3], 0), 64);
	LLVMValueRef fa[6] = {thread0,
			      s32,
			      base,
			      to_int(nv, op->ops[2]->type, nv_reg(nv, op->ops[2], 0), 32),
			      to_int(nv, op->ops[1]->type, nv_reg(nv, op->ops[1], 0), 32),
			      LLVMBuildMul(nv->b, stride, LLVMConstInt(i64, (unsigned long long)es, 0), "")};
	asm_call(nv, text, "r,r,l,r,r,l,~{memory}", fa, 6);
	nv_intrinsic(nv, "llvm.nvvm.bar.warp.sync", NULL, 0, (LLVMValueRef[]){nv_i32(nv, -1)}, 1);

	/* 3. to global memory, released to the tensormap proxy, acquired; first
	 * warp 0's tensor stores (mem.c, which wait only until they have read
	 * shared memory) complete, so none still uses the map this replaces */
	LLVMValueRef ca[3] = {warp0, g64, s32};
	asm_call(nv,
		 "{ .reg .pred p; setp.ne.b32 p, $0, 0;\n"
		 "@p cp.async.bulk.wait_group 0;\n"
		 "@p tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [$1], "
		 "[$2], 128;\n"
		 "@p fence.proxy.tensormap::generic.acquire.gpu [$1], 128;\n"
		 "@p cp.async.bulk.commit_group;\n"
		 "@p cp.async.bulk.wait_group.read 0; }",
		 "r,l,r,~{memory}", ca, 3);
	/* 4. every thread past the acquire */
	nv_barrier(nv);
	nv_set1(nv, &op->res[0], LLVMBuildPointerCast(nv->b, gaddr, rty, ""));
}
