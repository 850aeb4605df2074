"""tl.range(..., num_stages=N) sets the pipelining of its own loop, over the
kernel's num_stages, as in Triton (analysis/prefetch.c walk, an_ws_plan):
a loop asking for 3 stages in a kernel launched with num_stages=1 copies
its tiles through 3 slots; a loop asking for 1 in a kernel with 3 is not
pipelined. Before, the kernel's value held for every loop. Checked on
kernels compiled for sm_80 and sm_90a (no GPU needed), on the CPU backend
against numpy, and, marked `gpu`, against torch."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401


@triton.jit
def mm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, LOOP_STAGES: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=LOOP_STAGES):
        a = tl.load(A + rm[:, None] * K + (k * BK + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k * BK + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _compile(arch, kernel_stages, loop_stages):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "LOOP_STAGES": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "N", "K")}
    cx = dict(BM=64, BN=64, BK=32, LOOP_STAGES=loop_stages)
    return triton.compile(ASTSource(mm, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": 4, "num_stages": kernel_stages})


def _stages(ttgir):
    return sorted({int(s) for s in re.findall(r"async_copy [^\n]*stages = (\d+)", ttgir)})


@pytest.mark.parametrize("arch", [80, 90])
def test_loop_asks_more_than_kernel(arch):
    assert _stages(_compile(arch, 1, 3).asm["ct.ttgir"]) == [3]
    assert _stages(_compile(arch, 1, 2).asm["ct.ttgir"]) == [2]


@pytest.mark.parametrize("arch", [80, 90])
def test_loop_asks_one(arch):
    ttgir = _compile(arch, 3, 1).asm["ct.ttgir"]
    assert _stages(ttgir) == [] and "local_read" not in ttgir
    # the kernel's value where the loop says nothing
    assert _stages(_compile(arch, 3, None).asm["ct.ttgir"]) == [3]


@requires_cpu
@pytest.mark.parametrize("loop_stages", [None, 1, 3])
def test_cpu(loop_stages, cpu_driver):  # noqa: F811
    rng = np.random.default_rng(3)
    M, N, K = 70, 90, 96
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    mm[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, BM=64, BN=64, BK=32, LOOP_STAGES=loop_stages,
                                                 num_stages=1)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel_stages,loop_stages", [(1, 3), (3, 1), (1, 2), (4, None)])
def test_gpu(kernel_stages, loop_stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    M, N, K = 200, 136, 320
    g = torch.Generator(device="cuda").manual_seed(kernel_stages * 10 + (loop_stages or 0))
    a = torch.randn(M, K, device="cuda", generator=g).half()
    b = torch.randn(K, N, device="cuda", generator=g).half()
    c = torch.full((M, N), float("nan"), device="cuda")
    mm[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, BM=64, BN=64, BK=32, LOOP_STAGES=loop_stages,
                                                 num_stages=kernel_stages)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-1, rtol=1e-2)
