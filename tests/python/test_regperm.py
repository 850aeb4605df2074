"""Shape ops that only rename registers (analysis/regperm.c): reshape,
permute, split and join whose layouts keep every element in its thread
compile to register moves, with no shared-memory exchange and no barrier.

The epilogue of upstream tutorial 09's persistent matmul (acc reshaped to
[BM, 2, BN / 2], permuted, split into two halves that are stored apart) is
the case that matters: through shared memory element by element it spilled
and took tens of seconds to compile. Here: the forms compiled for sm_80 and
sm_90 without a GPU (the TTGIR and ptxas's register report), the same
kernels on the CPU backend against numpy, and on the GPU against torch."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


@triton.jit
def subtile_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   SUBTILE: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    if SUBTILE:
        t = tl.reshape(acc, (BM, 2, BN // 2))
        t = tl.permute(t, (0, 2, 1))
        c0, c1 = tl.split(t)
        offs_h = tl.arange(0, BN // 2)
        tl.store(c_ptr + offs_m[:, None] * BN + offs_h[None, :], c0.to(tl.float16))
        tl.store(c_ptr + offs_m[:, None] * BN + (BN // 2 + offs_h)[None, :], c1.to(tl.float16))
    else:
        tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


@triton.jit
def interleave_kernel(x_ptr, y_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.join(x, y)                       # [R, C, 2]
    z = tl.reshape(z, (R, 2 * C))            # x0 y0 x1 y1 ...
    offs2 = tl.arange(0, R)[:, None] * (2 * C) + tl.arange(0, 2 * C)[None, :]
    tl.store(out_ptr + offs2, z)


@triton.jit
def deinterleave_kernel(x_ptr, even_ptr, odd_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * (2 * C) + tl.arange(0, 2 * C)[None, :]
    x = tl.load(x_ptr + offs)
    a, b = tl.split(tl.reshape(x, (R, C, 2)))
    offs2 = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(even_ptr + offs2, a)
    tl.store(odd_ptr + offs2, b)


@triton.jit
def permute3_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)
    y = tl.permute(x, (2, 0, 1)) + 1.0      # [C, A, B]
    jc = tl.arange(0, C)[:, None, None]
    ja = tl.arange(0, A)[None, :, None]
    jb = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + jc * A * B + ja * B + jb, y)


def _compile(fn, sig, cx, arch, nw=4, ns=3):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    # as a launch specializes them: pointers and sizes divisible by 16
    attrs = {(i,): {"divisibility": 16} for i, k in enumerate(sig) if sig[k] != "constexpr"}
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": nw, "num_stages": ns})


def _ops_with_scratch(ttgir, name):
    return [ln for ln in ttgir.splitlines() if re.search(rf"= {name} ", ln) and "scratch_offset" in ln]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("bn,nw", [(128, 4), (256, 8)])
def test_subtile_epilogue_renames_registers(arch, bn, nw):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
    k = _compile(subtile_matmul, sig, dict(BM=128, BN=bn, BK=64, SUBTILE=True), arch, nw=nw)
    ttgir = k.asm["ct.ttgir"]
    # the accumulator is converted once (staged, vectorized); the reshape,
    # permute and split that follow move no data
    for op in ("reshape", "trans", "split"):
        assert re.search(rf"= {op} ", ttgir), op
        assert not _ops_with_scratch(ttgir, op), (op, _ops_with_scratch(ttgir, op))
    # the halves' .to(fp16) moved before the data movement: the accumulator
    # is cast in its mma layout and the conversion moves 16-bit values
    assert [ln for ln in ttgir.splitlines() if "= convert_layout" in ln and f"block<128x{bn}xf16" in ln]
    assert not [ln for ln in ttgir.splitlines() if "= convert_layout" in ln and f"block<128x{bn}xf32" in ln]
    assert re.search(rf"= cast .*block<128x{bn}xf16, #mma", ttgir)
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    plain = _compile(subtile_matmul, sig, dict(BM=128, BN=bn, BK=64, SUBTILE=False), arch, nw=nw)
    # as lean as the epilogue without the subtiling (within a few registers)
    assert k.n_regs <= plain.n_regs + 16, (k.n_regs, plain.n_regs)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
def test_join_split_permute_without_scratch(arch):
    k = _compile(interleave_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                 dict(R=32, C=64), arch)
    assert re.search(r"= join ", k.asm["ct.ttgir"]) and not _ops_with_scratch(k.asm["ct.ttgir"], "join")
    k = _compile(deinterleave_kernel, {"x_ptr": "*fp32", "even_ptr": "*fp32", "odd_ptr": "*fp32"},
                 dict(R=32, C=64), arch)
    assert re.search(r"= split ", k.asm["ct.ttgir"]) and not _ops_with_scratch(k.asm["ct.ttgir"], "split")
    k = _compile(permute3_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, dict(A=8, B=16, C=32), arch)
    assert re.search(r"= trans ", k.asm["ct.ttgir"]) and not _ops_with_scratch(k.asm["ct.ttgir"], "trans")
    for kk in (k,):
        assert kk.n_spills == 0


def _run_all(dev, xp, to_host, empty):
    rng = np.random.default_rng(0)
    # interleave / deinterleave
    x = rng.standard_normal((32, 64)).astype(np.float32)
    y = rng.standard_normal((32, 64)).astype(np.float32)
    out = empty((32, 128), np.float32)
    interleave_kernel[(1,)](xp(x), xp(y), out, R=32, C=64)
    ref = np.stack([x, y], axis=-1).reshape(32, 128)
    np.testing.assert_array_equal(to_host(out), ref)
    even, odd = empty((32, 64), np.float32), empty((32, 64), np.float32)
    deinterleave_kernel[(1,)](xp(ref), even, odd, R=32, C=64)
    np.testing.assert_array_equal(to_host(even), x)
    np.testing.assert_array_equal(to_host(odd), y)
    # permute of a 3-D block
    z = rng.standard_normal((8, 16, 32)).astype(np.float32)
    out = empty((32, 8, 16), np.float32)
    permute3_kernel[(1,)](xp(z), out, A=8, B=16, C=32)
    np.testing.assert_array_equal(to_host(out), np.transpose(z, (2, 0, 1)) + 1.0)
    # the subtiled matmul epilogue, both forms
    K = 128
    for bn, nw in ((128, 4), (256, 8)):
        a = (rng.standard_normal((128, K)) / 8).astype(np.float16)
        b = (rng.standard_normal((K, bn)) / 8).astype(np.float16)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        for sub in (True, False):
            c = empty((128, bn), np.float16)
            subtile_matmul[(1,)](xp(a), xp(b), c, K, BM=128, BN=bn, BK=64, SUBTILE=sub, num_warps=nw)
            np.testing.assert_allclose(to_host(c).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_forms_cpu():
    _run_all("cpu", lambda a: a.copy(), lambda a: a, lambda s, dt: np.zeros(s, dt))


@pytest.mark.gpu
def test_forms_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    _run_all("cuda", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy(),
             lambda s, dt: torch.zeros(s, dtype={np.float32: torch.float32, np.float16: torch.float16}[dt],
                                       device="cuda"))
