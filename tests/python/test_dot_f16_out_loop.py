"""A dot that does not chain its accumulator, whose result goes through f16,
in a K loop: `acc = tl.dot(x, y, out_dtype=tl.float16) + acc`, or
`acc += tl.dot(x, y).to(tl.float16).to(tl.float32)`. Its f16 operands take
the register prefetch and are staged through shared memory for the
warpgroup MMA.

Known failure on the GPU (strict xfails, found 2026-12-07 on an H100): with
a trip count known when compiled (K a constexpr, 5 steps of 32), each tile's
offsets summed before one pointer add, num_stages 2 to 4 and 32 columns a
warpgroup (128x32 with 4 warps for the f16 result; 64x32 with 4 warps and
128x32 with 8 for the f32 result cast), the second iteration computes with
the first iteration's tiles again: a least-squares fit of the output over
the per-chunk products gives X0 Y0 twice and no X1 Y1; the other steps are
right. Right: K a runtime value, one stage, 64 columns a warpgroup, the
offsets added to the pointer one by one, the same dot scaled and added in
f32, an f16 accumulator chained through the loop. The result depends on
ptxas's optimization level: right with -O0 and -O1, wrong with -O2, -O3
(the default), Triton's ptxas 12.8 and the driver's own compile of the PTX;
LLVM at O0 and every ctriton pass switch leave it wrong, and so do zeroed
(instead of undefined) accumulator registers for the first K step and an
f32 accumulator rounded to f16 after the MMAs. The PTX reads as correct;
the cause is open. On the CPU backend the same kernels are right (checked
here)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl


@triton.jit
def f16_loop(Z, X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, CAST: tl.constexpr):
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
        if CAST:
            acc += tl.dot(x, y).to(tl.float16).to(tl.float32)
        else:
            acc = tl.dot(x, y, out_dtype=tl.float16) + acc
    tl.store(Z + ((pidm * BM * N) + (pidn * BN) + (offm * N) + offn), acc)


M, N, K, BK = 256, 192, 160, 32


def inputs(rs):
    x = (rs.randn(M, K) * 0.1).astype(np.float16)
    y = (rs.randn(K, N) * 0.1).astype(np.float16)
    return x, y


@pytest.mark.parametrize("cast", [False, True])
@pytest.mark.parametrize("BM", [64, 128])
def test_on_cpu(cast, BM):
    x, y = inputs(np.random.RandomState(5))
    z = np.zeros((M, N), np.float32)
    f16_loop[(M // BM, N // 32)](z, x, y, M, N, K, BM, 32, BK, cast)
    np.testing.assert_allclose(z, x.astype(np.float32) @ y.astype(np.float32), atol=2e-3, rtol=0)


XF = pytest.mark.xfail(strict=True, reason="second K step repeats the first (see the docstring)")


@pytest.mark.gpu
@pytest.mark.parametrize("cast,BM,BN,warps,stages", [
    pytest.param(False, 128, 32, 4, 3, marks=XF),
    pytest.param(True, 64, 32, 4, 3, marks=XF),
    (False, 128, 32, 4, 1),
    (False, 128, 64, 4, 3),
    (True, 128, 32, 4, 3),
])
def test_on_gpu(cast, BM, BN, warps, stages):
    import torch
    x, y = (torch.from_numpy(a).cuda() for a in inputs(np.random.RandomState(5)))
    z = torch.zeros(M, N, device="cuda")
    f16_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK, cast, num_warps=warps, num_stages=stages)
    torch.testing.assert_close(z, x.float() @ y.float(), atol=2e-3, rtol=0)
