"""Vectorized global accesses and thread-local loop reductions, compiled for
sm_80 and sm_90 without a GPU (PTX checked, assembled by ptxas), and the
reductions run on the CPU backend.

- Every global load and store whose pointer is contiguous along some dim is
  done in a layout that moves up to 128 bits per thread (analysis/coalesce.c):
  a tile stored down its columns, a tensor-core result stored row-major, u8
  tiles under a 16-bit store's layout; the value is converted to it through
  shared memory (staged with the destination's fastest dim innermost, in
  vectors), and only there.
- A reduction accumulated into a loop-carried value reduces each thread's
  own elements per iteration and across threads once after the loop
  (analysis/locality.c): two reductions in the TTGIR, as Triton's shows.
"""
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
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
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
    assert "convert_layout" not in k.asm["ct.ttgir"] and "st.shared" not in k.asm["ptx"]
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
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    assert "#mma<" in ttgir
    assert "st.global.v4.b32" in ptx, _accesses(ptx)
    assert "ld.global.v4.b32" in ptx, _accesses(ptx)
    assert not re.search(r"st\.global\.(b16|b32|v2)", ptx), _accesses(ptx)
    assert k.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def _dot_store_ldc(A, B, C, ldc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b)
    tl.store(C + ldc * rm[:, None] + rn[None, :], c.to(tl.float16))


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("aligned", [False, True])
def test_dot_result_store_coalesced(arch, aligned):
    """A store no layout can vectorize (C of unknown alignment, as tutorial
    08's grouped GEMM loads its pointers and leading dimensions) still
    takes the accumulator through shared memory into the coalesced layout:
    a warp's 2-byte stores cover 32 neighbouring elements of one row, where
    the accumulator's own layout (two neighbouring columns per thread, 8
    rows a warp) would touch 8 rows per store (tutorial 08's epilogue three
    times longer, the kernel 0.90x of Triton on the H100; 1.00x converted).
    An aligned one is converted and stored 128 bits at a time. The unaligned
    one is versioned (version-stores): where C and ldc turn out aligned at
    run time its first branch stores 128 bits at a time; its second branch
    is the element store above."""
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "ldc": "i32"}
    attrs = {"A": {"divisibility": 16}, "B": {"divisibility": 16}}
    if aligned:
        attrs.update(C={"divisibility": 16}, ldc={"divisibility": 16})
    k = _compile(_dot_store_ldc, sig, {"BM": 128, "BN": 128, "BK": 64}, attrs, arch, num_warps=4, num_stages=1)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    stores = re.findall(r"\n *store (%\d+), (%\d+)", ttgir)
    values = [re.search(r"\n *" + s[1] + r" = (\w+) [^\n]*", ttgir).group(0) for s in stores]
    assert all("convert_layout" in v and "#mma<" not in v for v in values), values
    if aligned:
        assert len(stores) == 1 and "multiple_of" not in ttgir
        assert "st.global.v4.b32" in ptx, _accesses(ptx)
    else:
        assert len(stores) == 2 and "versioned = true" in ttgir
        assert "spt = [1, 8]" in values[0], values[0]
        assert "tpw = [1, 32]" in values[1] and "spt = [1, 1]" in values[1], values[1]
        # through shared memory (stmatrix on sm_90, an epilogue outside loops)
        after = ptx.split("mma")[-1]
        assert ("st.shared" in after or "stmatrix" in after) and re.search(r"st\.global\.b16", ptx), _accesses(ptx)
        assert len(re.findall(r"st\.global\.v4\.b32", ptx)) == 16, _accesses(ptx)  # 128x128x2 / 128 / 16
        assert not re.search(r"st\.global\.(v2|b32)", ptx), _accesses(ptx)
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


# ---------------------------------------------------------------------------
# Thread-local loop reductions
# ---------------------------------------------------------------------------

@triton.jit
def _loop_reduce(X, Y, N, OP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    nprog = tl.num_programs(1)
    rm = pid_m * BM + tl.arange(0, BM)
    if OP == "sum":
        acc = tl.zeros([BM], dtype=X.dtype.element_ty)
    elif OP == "max":
        acc = tl.full([BM], float("-inf"), dtype=X.dtype.element_ty)
    elif OP == "min":
        acc = tl.full([BM], float("inf"), dtype=X.dtype.element_ty)
    else:
        acc = tl.zeros([BM], dtype=X.dtype.element_ty) + 5
    for start in range(pid_n, tl.cdiv(N, BN), nprog):
        rn = start * BN + tl.arange(0, BN)
        x = tl.load(X + rm[:, None] * N + rn[None, :])
        if OP == "sum":
            acc = acc + tl.sum(x, axis=1)
        elif OP == "max":
            acc = tl.maximum(acc, tl.max(x, axis=1))
        elif OP == "min":
            acc = tl.minimum(tl.min(x, axis=1), acc)
        else:
            acc = acc ^ tl.xor_sum(x, axis=1)
    tl.store(Y + rm * nprog + pid_n, acc)


REF = {"sum": np.sum, "max": np.max, "min": np.min, "xor": np.bitwise_xor.reduce}


def _loop_reduce_sm90(op, dt, bn, nw=4):
    sig = {"X": "*" + dt, "Y": "*" + dt, "N": "i32"}
    attrs = {name: {"divisibility": 16} for name in sig}
    return _compile(_loop_reduce, sig, {"OP": op, "BM": 32, "BN": bn}, attrs, 90, num_warps=nw)


@needs_ptxas
@pytest.mark.parametrize("op,dt", [("sum", "fp32"), ("max", "fp32"), ("min", "fp32"), ("sum", "i32"),
                                   ("xor", "i32")])
@pytest.mark.parametrize("bn", [32, 64, 128])
def test_loop_reduction_thread_local(op, dt, bn):
    """The reduction in the loop becomes an in-thread one over a view of the
    tile that keeps every register (no shared memory), the loop carries the
    partials, and one reduction after the loop goes across the lanes."""
    k = _loop_reduce_sm90(op, dt, bn)
    ttgir = k.asm["ct.ttgir"]
    assert ttgir.count(" = reduce ") == 2, ttgir
    loop = ttgir[ttgir.index(" = for "):]
    body = loop[:loop.index("\n  } loc")]
    view = [ln for ln in body.splitlines() if " = reshape " in ln]
    assert len(view) == 1 and "can_reorder = true" in view[0] and "scratch_offset" not in view[0]
    red = [ln for ln in body.splitlines() if " = reduce " in ln]
    assert len(red) == 1 and "{axis = 2}" in red[0]
    assert "scratch_offset" not in body and "barrier" not in body
    after = loop[loop.index("\n  } loc"):]
    assert " = reduce " in after
    assert k.asm["cubin"][:4] == b"\x7fELF"


@needs_ptxas
def test_loop_reduction_left_alone():
    """Reductions whose every element already lies in one thread, and a
    reduction read in the loop (here: stored each iteration), stay as
    written."""
    @triton.jit
    def each_iteration(X, Y, Z, N, BM: tl.constexpr, BN: tl.constexpr):
        rm = tl.arange(0, BM)
        acc = tl.zeros([BM], dtype=tl.float32)
        for start in range(0, N, BN):
            x = tl.load(X + rm[:, None] * N + start + tl.arange(0, BN)[None, :])
            s = tl.sum(x, axis=1)
            tl.store(Z + start // BN * BM + rm, s)
            acc = acc + s
        tl.store(Y + rm, acc)

    sig = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "N": "i32"}
    attrs = {name: {"divisibility": 16} for name in sig}
    k = _compile(each_iteration, sig, {"BM": 32, "BN": 128}, attrs, 90, num_warps=4)
    assert k.asm["ct.ttgir"].count(" = reduce ") == 1 and " = reshape " not in k.asm["ct.ttgir"]
    # 128 rows of 4 elements with 4 warps: every row in one thread
    k = _compile(_loop_reduce, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, {"OP": "sum", "BM": 128, "BN": 4},
                 {"X": {"divisibility": 16}, "Y": {"divisibility": 16}, "N": {"divisibility": 16}}, 90,
                 num_warps=4)
    assert k.asm["ct.ttgir"].count(" = reduce ") == 1 and " = reshape " not in k.asm["ct.ttgir"]


@requires_cpu
@pytest.mark.parametrize("op,dt", [("sum", "float32"), ("max", "float32"), ("min", "float32"),
                                   ("sum", "int32"), ("xor", "int32")])
@pytest.mark.parametrize("n,nprog", [(512, 2), (1024, 4), (96, 4)])
def test_loop_reduction_results_cpu(op, dt, n, nprog):
    """The same kernel on the CPU backend (its own reduce-lanes rewrite):
    each program's share of the columns, reduced; numpy combines the
    programs' results (float sums within reassociation tolerance). With n =
    96 and 4 programs of 32 columns, the last program runs no iteration and
    keeps the initial value."""
    bm, bn = 32, 32
    rng = np.random.default_rng(n + nprog)
    if dt == "float32":
        x = rng.standard_normal((bm, n)).astype(dt)
    else:
        x = rng.integers(-1000, 1000, (bm, n)).astype(dt)
    y = np.zeros((bm, nprog), dt)
    _loop_reduce[(1, nprog)](x, y, n, OP=op, BM=bm, BN=bn)
    init = {"sum": 0, "max": -np.inf, "min": np.inf, "xor": 5}[op]
    ref = np.empty((bm, nprog), dt)
    blocks = [x[:, b * bn:(b + 1) * bn] for b in range(n // bn)]
    for p in range(nprog):
        mine = blocks[p::nprog]
        part = np.full(bm, init, dt)
        for blk in mine:
            r = REF[op](blk, axis=1).astype(dt)
            part = (part + r if op == "sum" else np.maximum(part, r) if op == "max"
                    else np.minimum(part, r) if op == "min" else part ^ r).astype(dt)
        ref[:, p] = part
    if dt == "float32":
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(y, ref)
