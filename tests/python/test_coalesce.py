"""Vectorized global accesses, compiled for sm_80 and sm_90 without a GPU
(PTX checked, assembled by ptxas).

- Every global load and store whose pointer is contiguous along some dim is
  done in a layout that moves up to 128 bits per thread (analysis/coalesce.c):
  a tile stored down its columns, a tensor-core result stored row-major, u8
  tiles under a 16-bit store's layout; the value is converted to it through
  shared memory (staged with the destination's fastest dim innermost, in
  vectors), and only there.
"""
import os
import re
import shutil

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


def _compile(fn, sig, cx, attrs, arch, **opts):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", arch, 32), options=opts)


def _accesses(ptx):
    return sorted(set(re.findall(r"(?:ld|st)\.global[.a-z0-9]*", ptx)))


@triton.jit
def _copy2d(X, sxm, sxn, Z, szm, szn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * sxm + rn[None, :] * sxn)
    tl.store(Z + rm[:, None] * szm + rn[None, :] * szn, x)


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt", ["fp16", "fp32"])
@pytest.mark.parametrize("n", [64, 128])
@pytest.mark.parametrize("load_rows", [True, False])
def test_transposed_copy_vectorized(arch, dt, n, load_rows):
    """A tile loaded along one dim and stored along the other: both accesses
    in 128-bit vectors, one conversion between them (the stride that is 1
    is a constant, as specialization makes it)."""
    one = ("sxn", "szm") if load_rows else ("sxm", "szn")
    sig = {"X": "*" + dt, "sxm": "i32", "sxn": "i32", "Z": "*" + dt, "szm": "i32", "szn": "i32"}
    cx = {"BM": n, "BN": n}
    for s in one:
        del sig[s]
        cx[s] = 1
    attrs = {name: {"divisibility": 16} for name in sig}
    k = _compile(_copy2d, sig, cx, attrs, arch, num_warps=4)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx, _accesses(ptx)
    assert "st.global.b16" not in ptx and "st.global.b32 " not in ptx
    assert ttgir.count("convert_layout") == 1, ttgir
    # the destination reads its rows of the staged tile as vectors
    assert "ld.shared.v4" in ptx
    assert k.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def _copy_same(X, Z, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(Z + offs, tl.load(X + offs) * 2.0)


@needs_ptxas
def test_agreeing_layouts_convert_nothing():
    """Load and store contiguous along the same dim: one layout, no
    conversion, no shared memory."""
    k = _compile(_copy_same, {"X": "*fp32", "Z": "*fp32"}, {"BM": 64, "BN": 64},
                 {"X": {"divisibility": 16}, "Z": {"divisibility": 16}}, 90, num_warps=4)
    assert "convert_layout" not in k.asm["ttgir"] and "st.shared" not in k.asm["ptx"]
    assert "ld.global.v4.b32" in k.asm["ptx"] and "st.global.v4.b32" in k.asm["ptx"]


@triton.jit
def _dot_store(A, B, C, sam, sak, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * sam + rk[None, :] * sak)
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], c.to(C.dtype.element_ty))


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("out", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("col_a", [False, True])
@pytest.mark.parametrize("shape", [(128, 32, 64), (64, 64, 64), (32, 128, 64)])
def test_dot_result_store_vectorized(arch, out, col_a, shape):
    """The tensor cores' accumulator is converted to the store's coalesced
    layout and stored 128 bits at a time, whatever the layout of the
    largest tile (a column-major A of 128 x 64 is larger than a 128 x 32
    result)."""
    bm, bn, bk = shape
    sig = {"A": "*bf16", "B": "*bf16", "C": "*" + out, "sam": "i32", "sak": "i32"}
    cx = {"BM": bm, "BN": bn, "BK": bk}
    del sig["sam" if col_a else "sak"]
    cx["sam" if col_a else "sak"] = 1
    attrs = {name: {"divisibility": 16} for name in sig}
    k = _compile(_dot_store, sig, cx, attrs, arch, num_warps=4)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "#mma<" in ttgir
    assert "st.global.v4.b32" in ptx, _accesses(ptx)
    assert "ld.global.v4.b32" in ptx, _accesses(ptx)
    assert not re.search(r"st\.global\.(b16|b32|v2)", ptx), _accesses(ptx)
    assert k.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def _widen(A, B, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # u8 tiles widened to bf16: the 128 x 128 bf16 store anchors the rank
    a = tl.load(A + tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :])
    b = tl.load(A + BM * BK + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    c = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))
    tl.store(B + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c.to(tl.bfloat16))


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_narrow_loads_vectorized(arch):
    """u8 tiles of 64 elements a thread are loaded 16 at a time, not in the
    8-element vectors of the bf16 store's layout."""
    k = _compile(_widen, {"A": "*u8", "B": "*bf16"}, {"BM": 128, "BN": 128, "BK": 64},
                 {"A": {"divisibility": 16}, "B": {"divisibility": 16}}, arch, num_warps=4)
    ptx = k.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "ld.global.v2" not in ptx, _accesses(ptx)
    assert "st.global.v4.b32" in ptx
