"""Kernels for the tensor-core dtype tests (test_wgmma_dtypes.py): one
K loop of tl.dot over row-major A tiles and B tiles that are either
row-major ([K][N], N contiguous) or column-major (stored [N][K], K
contiguous), for every operand type warpgroup MMA takes."""
import ctriton as triton
import ctriton.language as tl


@triton.jit
def dot_dtype_kernel(a_ptr, b_ptr, c_ptr, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr,
                     B_COL: tl.constexpr, INT: tl.constexpr, PREC: tl.constexpr, ACC16: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    if INT:
        acc = tl.zeros((M, N), dtype=tl.int32)
    elif ACC16:
        acc = tl.zeros((M, N), dtype=tl.float16)
    else:
        acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        if B_COL:
            b = tl.load(b_ptr + rn[None, :] * K + (k + rk)[:, None])
        else:
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        if ACC16:  # an f16 accumulator (out_dtype=tl.float16)
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

