/* ir_demo.c: builds Triton's vector-add kernel with the builder API,
 * verifies it and prints its IR. It is the smallest end-to-end use of ir/:
 *
 *   @jit
 *   def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):
 *       pid = tl.program_id(axis=0)
 *       offs = pid * BLOCK + tl.arange(0, BLOCK)
 *       mask = offs < n
 *       x = tl.load(x_ptr + offs, mask=mask)
 *       y = tl.load(y_ptr + offs, mask=mask)
 *       tl.store(out_ptr + offs, x + y, mask=mask)
 */
#include <stdio.h>

#include "ir.h"

static IrFunc *build_add_kernel(IrModule *m)
{
	IrCtx *ctx = m->ctx;
	const char *file = "01-vector-add.py";
	const int64_t block = 1024;
	const IrType *f32 = ir_type(ctx, TY_F32);
	const IrType *i32 = ir_type(ctx, TY_I32);
	const IrType *pf32 = ir_type_ptr(ctx, f32, 1);
	const IrType *params[4] = {pf32, pf32, pf32, i32};
	IrFunc *f = ir_func_new(m, "add_kernel", 4, params, 0, NULL, ir_loc(ctx, file, 1, 1));
	f->is_kernel = true;
	for (int i = 0; i < 3; i++)
		ir_set_attr_int(ctx, &f->params[i].nattrs, &f->params[i].attrs, "divisibility", 16);

	IrValue *x = f->body->args[0], *y = f->body->args[1], *out = f->body->args[2];
	IrValue *n = f->body->args[3];
	const IrType *vi32 = ir_type_block(ctx, i32, 1, &block, NULL);
	const IrType *vpf32 = ir_type_block(ctx, pf32, 1, &block, NULL);

	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_at_end(&b, f->body);
	b.loc = ir_loc(ctx, file, 3, 11);
	IrValue *pid = ir_program_id(&b, 0);
	b.loc = ir_loc(ctx, file, 4, 12);
	IrValue *start = ir_binary(&b, OP_MUL, pid, ir_const_int(&b, i32, block));
	IrValue *offs = ir_binary(&b, OP_ADD, ir_splat(&b, start, vi32), ir_make_range(&b, 0, block));
	b.loc = ir_loc(ctx, file, 5, 12);
	IrValue *mask = ir_cmp(&b, "lt", offs, ir_splat(&b, n, vi32));
	b.loc = ir_loc(ctx, file, 6, 9);
	IrValue *xv = ir_load(&b, ir_addptr(&b, ir_splat(&b, x, vpf32), offs), mask, NULL);
	b.loc = ir_loc(ctx, file, 7, 9);
	IrValue *yv = ir_load(&b, ir_addptr(&b, ir_splat(&b, y, vpf32), offs), mask, NULL);
	b.loc = ir_loc(ctx, file, 8, 5);
	IrValue *sum = ir_binary(&b, OP_ADD, xv, yv);
	ir_store(&b, ir_addptr(&b, ir_splat(&b, out, vpf32), offs), sum, mask);
	ir_return(&b, 0, NULL);
	return f;
}

int main(void)
{
	IrCtx *ctx = ir_ctx_new();
	if (!ctx)
		return 1;
	IrModule *m = ir_module_new(ctx);
	build_add_kernel(m);
	IrError *err = ir_verify(m);
	if (err) {
		fprintf(stderr, "%s\n", ir_error_str(ctx, err));
		ir_ctx_free(ctx);
		return 1;
	}
	fputs(ir_print_module(m), stdout);
	ir_ctx_free(ctx);
	return 0;
}
