"""A block of pointers plus a scalar offset (`ptrs + k`, k a runtime i32:
the K step added to a fused nest's copy addresses, a row moved by a
stride). The NVIDIA backend makes the byte offset once, a sign extension
and a shift in 64 bits, and adds it to every pointer
(backend/nvptx/elem.c): no widening multiply, which ptxas would fuse into
one IMAD.WIDE per pointer (beside the warpgroup MMAs of tutorial 09's
persistent kernel that cost 6% on an H100).

Checked here: the PTX for sm_80 and sm_90 (assembled by ptxas), the
results on the CPU backend and, with a GPU, on the device; negative
offsets, every element size."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")

DTYPES = {"int8": ("*i8", 0), "float16": ("*fp16", 1), "float32": ("*fp32", 2), "float64": ("*fp64", 3)}


@triton.jit
def _shifted(X, Y, k, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = X + offs
    v = tl.load(p + k)  # the scalar offset, added to the whole block
    tl.store(Y + offs, v)


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_scalar_offset_ptx(arch, dt):
    ty, sh = DTYPES[dt]
    k = triton.compile(ASTSource(_shifted, {"X": ty, "Y": ty, "k": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256},
                                 {"X": {"divisibility": 16}, "Y": {"divisibility": 16}}),
                       target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
    ptx = k.asm["ptx"]
    m = re.search(r"cvt\.s64\.s32 (%rd\d+), %r\d+;", ptx)
    assert m, "the offset is sign-extended once"
    off = m.group(1)
    if sh:
        m = re.search(rf"shl\.b64 \t(%rd\d+), {off}, {sh};", ptx)
        assert m, f"and scaled by the element's {1 << sh} bytes"
        off = m.group(1)
    # every pointer of the block gets it by a 64-bit add, and nothing
    # multiplies it by the element size again
    assert re.search(rf"add\.s64 \t%rd\d+, %rd\d+, {off};|add\.s64 \t%rd\d+, {off}, %rd\d+;", ptx)
    assert "mul.wide.s32" not in ptx


@requires_cpu
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("k", [0, 5, -7, -256])
def test_scalar_offset_results_cpu(dt, k):
    _check(dt, k, lambda a: a)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("k", [0, 5, -7, -256, 1000])
def test_scalar_offset_results_gpu(dt, k):
    import torch

    def dev(a):
        return torch.from_numpy(a).cuda()
    _check(dt, k, dev, torch)


def _check(dt, k, dev, torch=None):
    """X points into the middle of a buffer, so that k < 0 reads before it."""
    block, pad = 256, 1024
    rng = np.random.default_rng(abs(k) + len(dt))
    buf = (rng.integers(-100, 100, 2 * pad + block) if dt == "int8"
           else rng.standard_normal(2 * pad + block)).astype(dt)
    want = buf[pad + k:pad + k + block].copy()
    b = dev(buf)
    y = dev(np.zeros(block, dt))
    _shifted[(1,)](b[pad:], y, k, BLOCK=block)
    got = y.cpu().numpy() if torch is not None else y
    np.testing.assert_array_equal(got, want)
