"""A dot with an f16 result added to an f32 accumulator in a K loop
(`acc = tl.dot(x, y, out_dtype=tl.float16) + acc`): the dot does not chain
its accumulator, so its operands take the register prefetch and are staged
through shared memory for the warpgroup MMA.

Known failure on the GPU (xfail, found 2026-12-07 on an H100): with a trip
count known when compiled (K a constexpr of 160 or 192 in steps of 32; 128
too when the result is stored as f16), each tile's offsets summed before one
pointer add, and num_stages 3, the second iteration computes with the first
iteration's tiles again (a least-squares fit of the output over the per-
chunk products gives X0 Y0 twice and no X1 Y1; the other steps are right).
Runtime K, one stage, an f32 dot chained into the accumulator, or the
offsets added to the pointer one by one are right. The PTX reads as correct,
and the result depends on ptxas's optimization level: right with -O0 and
-O1, wrong with -O2, -O3 (the default), Triton's ptxas 12.8 and the driver's
own compile; LLVM at O0 and every ctriton pass switch leave it wrong. The
cause is not found yet. On the CPU backend the same kernels are right
(checked here)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl


@triton.jit
def f16_out_loop(Z, X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, BK: tl.constexpr):
    # each tile's offsets summed as i32, then added to the base (one addptr):
    # the form that fails; with the offsets added to the pointer one by one
    # the GPU result is right
    pidn = tl.program_id(1)
    pidm = tl.program_id(0)
    offm = tl.arange(0, BM)[:, None]
    offn = tl.arange(0, BN)[None, :]
    offak = tl.arange(0, BK)[None, :]
    offbk = tl.arange(0, BK)[:, None]
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for k in range(0, K // BK):
        x = tl.load(X + ((pidm * K * BM) + (offm * K) + (k * BK) + offak))
        y = tl.load(Y + ((pidn * BN) + (offbk * N) + (k * N * BK) + offn))
        t = tl.dot(x, y, out_dtype=tl.float16, input_precision="ieee")
        acc = t + acc
    tl.store(Z + ((pidm * BM * N) + (pidn * BN) + (offm * N) + offn), acc)


M, N, BM, BN, BK = 256, 192, 128, 32, 32


@pytest.mark.parametrize("K", [128, 160])
def test_on_cpu(K):
    rs = np.random.RandomState(5)
    x = (rs.randn(M, K) * 0.1).astype(np.float16)
    y = (rs.randn(K, N) * 0.1).astype(np.float16)
    z = np.zeros((M, N), np.float32)
    f16_out_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK)
    np.testing.assert_allclose(z, x.astype(np.float32) @ y.astype(np.float32), atol=2e-3, rtol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("K,stages", [
    pytest.param(160, 3, marks=pytest.mark.xfail(strict=True, reason="second K step repeats the first (see the docstring)")),
    (160, 1),
])
def test_on_gpu(K, stages):
    import torch
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(M, K, device="cuda", generator=g) * 0.1).half()
    y = (torch.randn(K, N, device="cuda", generator=g) * 0.1).half()
    z = torch.zeros(M, N, device="cuda")
    f16_out_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK, num_stages=stages)
    torch.testing.assert_close(z, x.float() @ y.float(), atol=2e-3, rtol=0)
