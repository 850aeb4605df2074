"""tl.dot on the GPU against torch, over the shapes, warp counts and operand
forms that pick different tensor-core layouts (warps along M and N, several
16 x 8 tiles per warp, K steps, a loop-carried accumulator, a transposed B,
an elementwise epilogue in the accumulator's layout) and a few that stay on
the FMA path. Marked `gpu`: skipped where no CUDA device is active."""
import pytest

import ctriton as triton
import ctriton.language as tl

pytestmark = pytest.mark.gpu


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               STEPS: tl.constexpr, ACC: tl.constexpr, TRANS_B: tl.constexpr, EPI: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    if ACC:
        acc = tl.zeros((M, N), dtype=tl.float32)
        for s in range(STEPS):
            a = tl.load(a_ptr + rm[:, None] * (K * STEPS) + (s * K + rk)[None, :])
            if TRANS_B:
                bt = tl.load(b_ptr + rn[:, None] * (K * STEPS) + (s * K + rk)[None, :])
                b = tl.trans(bt)
            else:
                b = tl.load(b_ptr + (s * K + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc)
    else:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        if TRANS_B:
            b = tl.trans(tl.load(b_ptr + rn[:, None] * K + rk[None, :]))
        else:
            b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        acc = tl.dot(a, b)
    if EPI:
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


CASES = [
    # m, n, k, num_warps
    (16, 16, 16, 1), (16, 16, 32, 1), (16, 32, 16, 2), (32, 32, 32, 4), (64, 64, 32, 4), (16, 64, 16, 4),
    (64, 32, 16, 2), (128, 64, 64, 8), (128, 128, 32, 4), (32, 128, 64, 8),
    (16, 16, 16, 4),  # too small for 4 warps (16 x 8 tiles): FMA path
]


@pytest.mark.parametrize("m,n,k,num_warps", CASES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("form", ["plain", "loop", "trans", "loop_trans_epi"])
def test_dot(m, n, k, num_warps, dtype, form):
    import torch
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    acc = form.startswith("loop")
    trans = "trans" in form
    epi = form.endswith("epi")
    steps = 3 if acc else 1
    a = torch.randn(m, k * steps, device="cuda", dtype=dt)
    b = torch.randn(k * steps, n, device="cuda", dtype=dt)
    bin_ = b.t().contiguous() if trans else b
    c = torch.empty(m, n, device="cuda", dtype=torch.float32)
    dot_kernel[(1,)](a, bin_, c, M=m, N=n, K=k, STEPS=steps, ACC=acc, TRANS_B=trans, EPI=epi,
                     num_warps=num_warps)
    ref = a.float() @ b.float()
    if epi:
        ref = torch.where(ref >= 0, ref, 0.01 * ref)
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
