"""A dot that does not chain its accumulator, whose result goes through f16,
in a K loop: `acc = tl.dot(x, y, out_dtype=tl.float16) + acc`, or
`acc += tl.dot(x, y).to(tl.float16).to(tl.float32)`, with 32 or fewer
columns a warpgroup.

With a trip count known when compiled, ptxas (12.8 to 13.0, at -O2 and
above, and the driver's own compile) fully unrolled the loop and dropped the
second iteration's warpgroup MMAs, reusing the first iteration's results
(its SASS: a placeholder `HGMMA.64x8x16.F16 RZ, gdesc[URZ]` where the four
MMAs were; on the GPU a least-squares fit of the output over the per-chunk
products gave X0 Y0 twice and no X1 Y1). ptxas -O0 / -O1, which do not
unroll, were right, and so were 64 columns a warpgroup, a runtime K, one
stage, or the dot's result used in f32 only. Such a loop now keeps its
back edge: `llvm.loop.unroll.disable`, printed as `.pragma "nounroll"`
(backend/nvptx/control.c, fresh_narrow_wgmma).

Checked without a GPU: the pragma, and every MMA in the SASS (no
placeholder) where a disassembler is found, over the shapes that lost one;
a 64-column loop left to unroll. On the CPU backend against numpy; marked
`gpu`, on the device against torch."""
import re

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


def compile90(cast, BM, BN, warps, stages):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    cx = dict(M=M, N=N, K=K, BM=BM, BN=BN, BK=BK, CAST=cast)
    sig = {"Z": "*fp32", "X": "*fp16", "Y": "*fp16"}
    sig.update({c: "constexpr" for c in cx})
    attrs = {p: {"divisibility": 16} for p in ("Z", "X", "Y")}  # as a launch specializes them
    return triton.compile(ASTSource(f16_loop, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=warps, num_stages=stages))


NARROW = [(False, 128, 32, 4, 3), (False, 128, 16, 4, 2), (True, 64, 32, 4, 3), (True, 128, 32, 8, 3)]


@pytest.mark.parametrize("cast,BM,BN,warps,stages", NARROW)
def test_narrow_loop_not_unrolled(cast, BM, BN, warps, stages):
    k = compile90(cast, BM, BN, warps, stages)
    assert '.pragma "nounroll";' in k.asm["ptx"]
    from ctriton import _toolkit
    if _toolkit.disassembler_path() is None:
        pytest.skip("no cuobjdump / nvdisasm")
    sass = k.asm["sass"]
    assert "gdesc[URZ]" not in sass  # no placeholder where MMAs were dropped
    assert re.search(r"HGMMA\.\S+ R\d+, gdesc\[UR\d+\]", sass)


def test_wide_loop_unrolls():
    # 64 columns a warpgroup: ptxas keeps every MMA; the loop is left to it
    assert '.pragma "nounroll"' not in compile90(False, 128, 64, 4, 3).asm["ptx"]


@pytest.mark.gpu
@pytest.mark.parametrize("cast,BM,BN,warps,stages", NARROW + [(False, 128, 32, 4, 1), (False, 128, 64, 4, 3),
                                                             (True, 128, 32, 4, 3)])
def test_on_gpu(cast, BM, BN, warps, stages):
    import torch
    x, y = (torch.from_numpy(a).cuda() for a in inputs(np.random.RandomState(5)))
    z = torch.zeros(M, N, device="cuda")
    f16_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK, cast, num_warps=warps, num_stages=stages)
    torch.testing.assert_close(z, x.float() @ y.float(), atol=2e-3, rtol=0)
