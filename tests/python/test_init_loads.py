"""A K loop's initial accumulator loaded from memory (acc = tl.load(C0)
before a loop of dots, a GEMM that adds into C) is loaded straight in the
MMA layout (analysis/layout.c, init_loads), as Triton rematerialises it.
Converted from the coalesced layout, its tile took a scratch of its own
beside the loop's slots, whose prologue copies were already in flight:
128x128 fp32 with BK 64 and 2 stages asked 192 KiB on sm_80 (Triton 3.6
asks 64) and failed with OutOfResources. CTRITON_INIT_LOADS=0 (part of
the key) converts it, as before."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver  # noqa: F401


@triton.jit
def mm_acc_init(A, B, C0, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pm = pid // tl.cdiv(N, BN)
    pn = pid % tl.cdiv(N, BN)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.load(C0 + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0)
    for k0 in tl.range(0, K, BK, num_stages=2):
        kk = k0 + rk
        a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = {"A": "*fp32", "B": "*fp32", "C0": "*fp32", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
       "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}


def _compile(arch, dt="fp32", BM=128, BN=128, BK=64, warps=4):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = dict(SIG, A="*" + dt, B="*" + dt)
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C0", "C")}
    return triton.compile(ASTSource(mm_acc_init, sig, dict(BM=BM, BN=BN, BK=BK), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": 3})


def _load_layouts(ttgir):
    return [m.group(1) for m in re.finditer(r"= load [^\n]*: block<128x128xf32, #(\w+)", ttgir)]


@pytest.mark.parametrize("arch,shared", [(80, 128 * 1024), (90, 192 * 1024)])
def test_fits_where_triton_does(arch, shared, monkeypatch):
    # sm_80: two slots of 64 KiB; sm_90: three (the lag slot); no scratch
    # for the accumulator beside them
    monkeypatch.delenv("CTRITON_INIT_LOADS", raising=False)
    k = _compile(arch)
    assert _load_layouts(k.asm["ct.ttgir"]) == ["mma"]
    assert k.metadata.shared == shared
    monkeypatch.setenv("CTRITON_INIT_LOADS", "0")
    with pytest.raises(triton.OutOfResources):
        _compile(arch)


@pytest.mark.parametrize("arch", [80, 90])
def test_no_conversion_before_the_loop(arch, monkeypatch):
    # a tile that fits either way: the loaded accumulator is no longer
    # converted (one convert_layout fewer, the epilogue's alone), and the
    # scratch is the slots' only
    monkeypatch.delenv("CTRITON_INIT_LOADS", raising=False)
    ttgir = _compile(arch, "fp16", 64, 64, 32).asm["ct.ttgir"]
    monkeypatch.setenv("CTRITON_INIT_LOADS", "0")
    old = _compile(arch, "fp16", 64, 64, 32).asm["ct.ttgir"]
    assert ttgir.count("convert_layout") == old.count("convert_layout") - 1
    assert re.search(r"= load [^\n]*: block<64x64xf32, #mma", ttgir)
    assert not re.search(r"= load [^\n]*: block<64x64xf32, #mma", old)


def test_cpu(cpu_driver):  # noqa: F811
    M, N, K = 40, 36, 70
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-3, 4, s).astype(np.float32) for s in ((M, K), (K, N)))
    c0 = rng.integers(-3, 4, (M, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    mm_acc_init[(triton.cdiv(M, 32) * triton.cdiv(N, 32),)](a, b, c0, c, M, N, K, BM=32, BN=32, BK=16)
    np.testing.assert_array_equal(c, c0 + a @ b)


@pytest.mark.gpu
@pytest.mark.parametrize("env", ["1", "0"])
@pytest.mark.parametrize("cfg", [("fp32", 128, 128, 64, 4), ("fp16", 64, 64, 32, 4), ("fp16", 128, 128, 32, 8),
                                 ("fp32", 64, 128, 32, 4)])
def test_gpu(cfg, env, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    dt, BM, BN, BK, warps = cfg
    if env == "0" and (BM, BN, BK) == (128, 128, 64):
        pytest.skip("out of shared memory when converted")
    monkeypatch.setenv("CTRITON_INIT_LOADS", env)
    M, N, K = 300, 264, 200
    tdt = torch.float32 if dt == "fp32" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(4)
    a = torch.randint(-3, 4, (M, K), device="cuda", generator=g).to(tdt)
    b = torch.randint(-3, 4, (K, N), device="cuda", generator=g).to(tdt)
    c0 = torch.randint(-3, 4, (M, N), device="cuda", generator=g).float()
    c = torch.full((M, N), float("nan"), device="cuda")
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    mm_acc_init[grid](a, b, c0, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=warps)
    torch.testing.assert_close(c, c0 + a.float() @ b.float(), rtol=0, atol=0)
