/* swizzle_test.c: the swizzled shared-memory tile layouts of the NVPTX
 * backend (backend/nvptx/dot.c). For every swizzle mode, element size and
 * tile shape: the layout puts each element of the tile at its own index
 * inside the tile (the cp.async copies and the reads of a slot agree on a
 * permutation), and the index the backend builds as LLVM IR (folded on
 * constants here) is the one the bank-conflict model computes. Mode 0 is
 * the layout the warpgroup MMA reads: chunk c of row r at c ^ (r % 8) in
 * 128-byte rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/nvptx/nvptx.h"
#include "tests/check.h"

static void test_permutation_and_ir(Nv *nv)
{
	static const int64_t shapes[][2] = {{16, 16}, {64, 16}, {128, 32}, {64, 64}, {128, 64}, {32, 128}};
	for (int es = 2; es <= 4; es += 2)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int mode = 0; mode < 8; mode++) {
				int64_t R = shapes[s][0], C = shapes[s][1];
				if (C * es < 16)
					continue;
				char *seen = calloc((size_t)(R * C), 1);
				int bad = 0, mismatch = 0;
				for (int64_t r = 0; r < R; r++)
					for (int64_t c = 0; c < C; c++) {
						int64_t i = nv_swizzled_index_int(r, c, R, C, es, mode);
						if (i < 0 || i >= R * C || seen[i]++)
							bad++;
						LLVMValueRef v = nv_swizzled_index(nv, nv_i32(nv, (int)r),
										   nv_i32(nv, (int)c), R, C, es, mode);
						if (!LLVMIsAConstantInt(v) || LLVMConstIntGetSExtValue(v) != i)
							mismatch++;
					}
				CHECK(!bad, "es %d tile %lldx%lld mode %d: %d elements collide or leave the tile", es,
				      (long long)R, (long long)C, mode, bad);
				CHECK(!mismatch, "es %d tile %lldx%lld mode %d: %d IR indices differ from the model",
				      es, (long long)R, (long long)C, mode, mismatch);
				free(seen);
			}
}

/* Mode 0 is the 128-byte swizzle: chunk c of row r of a 128-byte row at
 * chunk c ^ (r % 8); a 256-byte row is two 128-byte column blocks. */
static void test_mode0_is_the_mma_layout(void)
{
	CHECK(nv_swizzled_index_int(0, 0, 64, 64, 2, 0) == 0, "origin");
	CHECK(nv_swizzled_index_int(1, 0, 64, 64, 2, 0) == 64 + 8, "row 1 chunk 0 -> chunk 1");
	CHECK(nv_swizzled_index_int(3, 17, 64, 64, 2, 0) == 3 * 64 + (2 ^ 3) * 8 + 1, "row 3 col 17");
	CHECK(nv_swizzled_index_int(5, 40, 64, 64, 4, 0) == 64 * 32 + 5 * 32 + ((8 / 4) ^ 5) * 4, "fp32 block 1");
	/* mode 1: the key (r % 8) << 1 (mod 8); mode 4: the block index xored in */
	CHECK(nv_swizzled_index_int(1, 0, 64, 64, 4, 1) == 32 + 2 * 4, "mode 1 row 1");
	CHECK(nv_swizzled_index_int(0, 32, 64, 64, 4, 4) == 64 * 32 + 1 * 4, "mode 4 block 1");
}

/* The tf32 A of mma.sync read with ldmatrix (dot.c tf32_a_ldmatrix): lane l
 * of a matrix addresses (row, 4j) and receives the 32-bit word l % 4 of
 * the 16 bytes there as element (row, 4j + l % 4), so the 4 elements from
 * 4j on must be consecutive in the slot (mode 0), and a phase of 8 rows at
 * one K offset must fall on 8 distinct 16-byte bank groups. */
static void test_tf32_ldmatrix_rows(void)
{
	static const int64_t shapes[][2] = {{16, 8}, {64, 16}, {128, 32}, {128, 64}, {64, 128}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t R = shapes[s][0], C = shapes[s][1];
		int split = 0, conflicts = 0;
		for (int64_t r = 0; r < R; r++)
			for (int64_t c = 0; c < C; c += 4) {
				int64_t i = nv_swizzled_index_int(r, c, R, C, 4, 0);
				for (int e = 1; e < 4; e++)
					split += nv_swizzled_index_int(r, c + e, R, C, 4, 0) != i + e;
			}
		for (int64_t r0 = 0; r0 < R; r0 += 8)
			for (int64_t c = 0; c < C; c += 4) {
				unsigned groups = 0;
				for (int64_t r = r0; r < r0 + 8; r++)
					groups |= 1u << ((nv_swizzled_index_int(r, c, R, C, 4, 0) / 4) % 8);
				conflicts += groups != 0xffu;
			}
		CHECK(!split, "tf32 tile %lldx%lld: %d 16-byte rows of a fragment not contiguous", (long long)R,
		      (long long)C, split);
		CHECK(!conflicts, "tf32 tile %lldx%lld: %d ldmatrix phases with bank conflicts", (long long)R,
		      (long long)C, conflicts);
	}
}

int main(void)
{
	Nv nv;
	memset(&nv, 0, sizeof nv);
	nv.c = LLVMContextCreate();
	nv.b = LLVMCreateBuilderInContext(nv.c);
	test_permutation_and_ir(&nv);
	test_mode0_is_the_mma_layout();
	test_tf32_ldmatrix_rows();
	LLVMDisposeBuilder(nv.b);
	LLVMContextDispose(nv.c);
	printf("swizzle_test: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
