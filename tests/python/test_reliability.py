"""Reliability regressions: inputs that once killed the process or produced
invalid LLVM IR. Each must now compile and run correctly, or raise a Python
exception; none may crash. CPU backend, and compile-only for sm_80/sm_90."""
import os
import re
import shutil
from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler.compiler import ASTSource
from ctriton.compiler.errors import CompilationError
from cpu_util import cpu_driver, fp8_round, fp8_table, requires_cpu  # noqa: F401

pytestmark = requires_cpu
PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))

# ---- tuple arguments: more IR parameters than Python arguments ----------


@triton.jit
def tuple_ignored(A):
    pass


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 17])
def test_tuple_arg_unused(n):
    t = np.zeros(4, np.float32)
    tuple_ignored[(1,)](tuple(t for _ in range(n)))
    tuple_ignored[(1,)](tuple(t if i % 2 else None for i in range(n)))


NT5 = namedtuple("NT5", "a b c d e")


def test_namedtuple_arg_unused():
    t = np.zeros(4, np.float32)
    tuple_ignored[(1,)](NT5(t, t, t, t, t))
    tuple_ignored[(1,)](NT5(t, None, 3, 2.5, (t, t)))


@triton.jit
def tuple_store_all(P, vals, N: tl.constexpr):
    for i in tl.static_range(N):
        tl.store(P[i] + tl.arange(0, 4), tl.load(vals[i][0] + tl.arange(0, 4)) + vals[i][1])


@pytest.mark.parametrize("n", [3, 5, 9])
def test_tuple_arg_many_leaves(n):
    srcs = [np.arange(4, dtype=np.float32) + 10 * i for i in range(n)]
    outs = [np.zeros(4, np.float32) for _ in range(n)]
    tuple_store_all[(1,)](tuple(outs), tuple((s, i) for i, s in enumerate(srcs)), n)
    for i in range(n):
        np.testing.assert_array_equal(outs[i], srcs[i] + i)


@triton.jit
def tuple_assign(XPtrs, YPtrs, values):
    X0, X1 = XPtrs
    x0, x1, _ = values
    tl.store(X0, x0)
    tl.store(X1, x1)
    Y0, Y1, Y2 = YPtrs
    Y = Y0, Y1, Y2
    y = x0, 10, x1
    tl.store(Y[0], y[0])
    tl.store(Y[1], y[1])
    tl.store(Y[2], y[2])


def test_tuple_assign_with_none():
    vals = (2.0, 3.0, None)
    x = tuple(np.zeros(1, np.float32) for _ in range(2))
    y = tuple(np.zeros(1, np.float32) for _ in range(3))
    tuple_assign[(1,)](x, y, vals)
    assert x[0][0] == 2 and x[1][0] == 3
    assert y[0][0] == 2 and y[1][0] == 10 and y[2][0] == 3


class Tensor(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


@triton.jit
def namedtuple_copy(X, Y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    Xs = X.ptr + offs_m[:, None] * X.stride[0] + offs_n[None, :] * X.stride[1]
    Ys = Y.ptr + offs_m[:, None] * Y.stride[0] + offs_n[None, :] * Y.stride[1]
    mask = (offs_m[:, None] < Y.shape[0]) & (offs_n[None, :] < Y.shape[1])
    tl.store(Ys, tl.load(Xs, mask=mask, other=0) * 2, mask=mask)


def test_namedtuple_nested_args():
    x = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    y = np.zeros((16, 16), np.float32)
    tx = Tensor(x, x.shape, (x.strides[0] // 4, x.strides[1] // 4))
    ty = Tensor(y, y.shape, (y.strides[0] // 4, y.strides[1] // 4))
    namedtuple_copy[(1,)](tx, ty, 32, 32)
    np.testing.assert_array_equal(y, x[:16, :16] * 2)


def test_tuple_arg_compiles_for_gpu():
    for arch in (80, 90):
        src = ASTSource(tuple_ignored, signature={"A": ("*fp32", "*fp32", "*fp32", "*fp32", "*fp32")})
        k = triton.compile(src, target=GPUTarget("cuda", arch, 32))
        assert ".entry tuple_ignored" in k.asm["ptx"]


@triton.jit
def tuple_fn0(Ptr, cst2: tl.constexpr, tuple1):
    tl.static_assert(tuple1[1] is None)
    tl.store(Ptr + 5, cst2)
    tl.store(Ptr + 6, tuple1[0])
    tl.store(Ptr + 7, tl.load(tuple1[2][0]))
    tl.store(Ptr + 8, tuple1[2][1][0])
    tl.store(Ptr + 9, tl.load(tuple1[2][1][2]))


@triton.jit
def tuple_serialize(Ptr, N1, tuple1, cst1: tl.constexpr, val1, tuple2):
    tl.static_assert(N1 is None)
    tl.static_assert(tuple1[1][1] is None)
    tl.static_assert(tuple1[1][3] == 4)
    tl.store(Ptr + 0, tl.load(tuple1[0]))
    tl.store(Ptr + 1, tuple1[1][0])
    tl.store(Ptr + 2, tl.load(tuple1[1][2]))
    tl.store(Ptr + 3, cst1 + val1)
    tl.store(Ptr + 4, tl.load(tuple2[0]))
    tuple_fn0(Ptr, 15, (-1, None, tuple1))


def test_tuple_serialize_nested_none_constexpr():
    x0 = np.array([8], np.int32)
    x1 = np.array([12], np.int32)
    y0 = np.array([10], np.int32)
    z = np.zeros(10, np.int32)
    tuple_serialize[(1,)](z, None, (x0, (1, None, x1, tl.constexpr(4))), 20, 1, (y0,))
    np.testing.assert_array_equal(z, [8, 1, 12, 21, 10, 15, -1, 8, 1, 12])


# ---- valid kernels that produced invalid LLVM IR -------------------------


@triton.jit
def split_join_scalar(X, Y, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < tl.split(tl.join(K, K))[0]
    a, b = tl.split(tl.join(K, K + 1))
    tl.store(Y + offs, tl.load(X + offs, mask=m, other=0) + a * 10 + b * 100, mask=m)


def test_split_of_scalar_join():
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, -1, np.float32)
    split_join_scalar[(1,)](x, y, 5, 16)
    np.testing.assert_array_equal(y, np.where(np.arange(16) < 5, np.arange(16) + 50 + 600, -1))
    for arch in (80, 90):
        src = ASTSource(split_join_scalar, signature={"X": "*fp32", "Y": "*fp32", "K": "i32"},
                        constexprs={"BLOCK": 16})
        triton.compile(src, target=GPUTarget("cuda", arch, 32))


@triton.jit
def arange_negative(Y):
    offs = tl.arange(-1, 0)
    tl.store(Y + offs + 1, offs)


def test_arange_negative_start_is_a_user_error():
    y = np.zeros(4, np.int32)
    with pytest.raises(CompilationError) as e:
        arange_negative[(1,)](y)
    msg = str(e.value)
    assert "non-negative" in msg and "internal" not in msg
    assert "test_reliability.py" in msg


@triton.jit
def fma_int(X, Y):
    x = tl.load(X + tl.arange(0, 8))
    tl.store(Y + tl.arange(0, 8), tl.fma(x, x, x))


def test_fma_of_integers_is_a_user_error():
    x = np.zeros(8, np.int32)
    with pytest.raises(CompilationError, match="floating-point") as e:
        fma_int[(1,)](x, x)
    assert "internal" not in str(e.value)


# ---- x86 code generation failed on i1 blocks read back from bytes ----------


@triton.jit
def mask_bytes_physreg(X0, Y0, Y1, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    offs = rm[:, None] * N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    v1 = tl.load(X0 + offs, mask=mask, other=1)
    if M > 1:
        v2 = v1
    else:
        v2 = v1
    v4 = tl.where(v2 <= v1, v1, v2)
    tl.store(Y0 + offs, v2 ^ v2, mask=mask)
    tl.store(Y1 + offs, v4 << (v2 & 3), mask=mask)


def test_mask_bytes_do_not_break_x86_codegen():
    """LLVM folded the byte -> i1 truncs of mask buffers into <128 x i1>
    bitcasts of wide loads, and x86 code generation then aborted with
    "Cannot emit physreg copy instruction" (found by the fuzzer)."""
    x = np.arange(8, dtype=np.int32)
    y0 = np.full(8, -1, np.int32)
    y1 = np.zeros(8, np.int32)
    mask_bytes_physreg[(1,)](x, y0, y1, 2, 4, BM=2, BN=16)
    np.testing.assert_array_equal(y0, 0)
    np.testing.assert_array_equal(y1, x << (x & 3))


# ---- LLVM 22 drops the remainder of vectorized minnum/maxnum reductions ----


@triton.jit
def min_max_after_bf16(X, R, M, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    a = tl.abs(tl.load(X + offs, mask=offs < M, other=0))
    b = tl.minimum(a, a.to(tl.bfloat16))
    c = tl.maximum(a, a.to(tl.bfloat16))
    tl.store(R + tl.program_id(0) * 2, tl.min(b, 0))
    tl.store(R + tl.program_id(0) * 2 + 1, tl.max(c, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_max_reductions_see_every_element(dtype):
    """A minnum reduction the loop vectorizer turned into a NaN-checked
    vector loop skipped the last B % 4 elements (found by the fuzzer)."""
    x = np.linspace(3, 1, 64).astype(dtype)
    r = np.zeros(8, np.float64)
    min_max_after_bf16[(4,)](x, r, 61, 16)
    xs = np.where(np.arange(64) < 61, x.astype(np.float64), 0).reshape(4, 16)
    bf = np.asarray(xs, np.float32).view(np.uint32)
    bf16 = ((bf + 0x7FFF + ((bf >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(r[0::2], np.minimum(xs, bf16).min(1))
    np.testing.assert_array_equal(r[1::2], np.maximum(xs, bf16).max(1))


# ---- NVPTX: fp8 constants, loops over fp8, a failed op inside a loop -------

FP8_FMT = {"fp8e5": ("e5m2", tl.float8e5), "fp8e4nv": ("e4m3", tl.float8e4nv)}


def fp8_code(v, fmt):
    """The fp8 code of v rounded to nearest even (saturating)."""
    table = fp8_table(fmt)
    r = fp8_round(np.float64(v), fmt)
    return next(c for c in range(256) if table[c] == r and (c >= 128) == bool(np.signbit(r)))


def gpu_compile(fn, sig, cx, arch, **opts):
    sig = dict(sig, **{k: "constexpr" for k in cx})
    k = triton.compile(ASTSource(fn, sig, cx), target=GPUTarget("cuda", arch, 32), options=opts)
    assert f".target sm_{arch}" in k.asm["ptx"]
    if PTXAS:
        assert k.asm.get("cubin", b"")[:4] == b"\x7fELF", "ptxas produced no cubin"
    return k


@triton.jit
def fp8_masked_copy(X, Y, n, OTHER: tl.constexpr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(X + offs, mask=offs < n, other=OTHER)
    tl.store(Y + offs, x)


@pytest.mark.parametrize("dt", sorted(FP8_FMT))
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("other", [0.0, -0.0, 1.5, -2.0, 0.1, 3e-3, 1000.0])
def test_fp8_masked_load_other_gpu(dt, arch, other):
    """A float constant of an fp8 type (here `other` of a masked fp8 load,
    stored without a cast) was an LLVM half constant where the backend
    holds fp8 as i8: "PHI node operands are not the same type as the
    result" (found by the fuzzer). It is now the value's fp8 code, the same
    one the CPU backend gives."""
    fmt, f8 = FP8_FMT[dt]
    k = gpu_compile(fp8_masked_copy, {"X": "*" + dt, "Y": "*" + dt, "n": "i32"},
                    {"OTHER": other, "B": 128}, arch, num_warps=4)
    # one element per thread: a predicated load whose destination starts as
    # `other` (the inline asm's default operand, an i8)
    dflts = re.findall(r'asm sideeffect "mov\.b16 \$0, \$3;.*?ld\.global\.b8.*?"\(ptr addrspace\(1\) %\d+, '
                       r'i1 %\d+, i8 (-?\d+)\)', k.asm["llir"])
    assert [int(c) & 0xFF for c in dflts] == [fp8_code(other, fmt)], k.asm["llir"]
    x = np.full(128, 0x11, np.uint8)
    y = np.zeros(128, np.uint8)
    fp8_masked_copy[(1,)](triton.reinterpret(x, f8), triton.reinterpret(y, f8), 5, other, 128)
    np.testing.assert_array_equal(y[:5], 0x11)
    np.testing.assert_array_equal(y[5:], fp8_code(other, fmt))


@triton.jit
def fp8_ptr_loop(X, Y, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    ptrs = X + offs
    acc = tl.zeros((B,), tl.float32)
    for i in range(0, n):
        acc += tl.load(ptrs, mask=offs < 120, other=0.0).to(tl.float32)
        ptrs += B
    tl.store(Y + offs, acc)


@triton.jit
def fp8_value_loop(X, Y, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    ptrs = X + offs
    m = tl.load(ptrs)
    for i in range(1, n):
        ptrs += B
        m = tl.maximum(m, tl.load(ptrs, mask=offs < 100, other=0.0))
    tl.store(Y + offs, m.to(tl.float32))


@pytest.mark.parametrize("dt", sorted(FP8_FMT))
@pytest.mark.parametrize("fn", [fp8_ptr_loop, fp8_value_loop])
def test_fp8_loops(dt, fn):
    """A loop-carried pointer to fp8 (`ptrs += B`) and a loop-carried fp8
    block, converted to f32 in the loop: sm_80 and sm_90 compile them, and
    the CPU backend sums / maxes the rows."""
    fmt, f8 = FP8_FMT[dt]
    for arch in (80, 90):
        for nw in (1, 4):
            gpu_compile(fn, {"X": "*" + dt, "Y": "*fp32", "n": "i32"}, {"B": 128}, arch, num_warps=nw)
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 0x60, (4, 128)).astype(np.uint8)  # finite, positive
    y = np.zeros(128, np.float32)
    fn[(1,)](triton.reinterpret(codes, f8), y, 4, B=128)
    vals = fp8_table(fmt)[codes]
    if fn is fp8_value_loop:
        vals[1:, 100:] = 0
        want = vals.max(0)
    else:
        vals[:, 120:] = 0
        want = vals.astype(np.float32).sum(0, dtype=np.float32)
    np.testing.assert_array_equal(y, want.astype(np.float32))


def _reduce9(x, acc, out):
    """A reduction of 9 inputs (the frontend takes 4, the NVPTX lowering
    8), its last result added to acc as out."""
    res = ", ".join(f"%r{i}" for i in range(9))
    args = ", ".join(f"%a{i}: i32" for i in range(9)) + ", " + ", ".join(f"%b{i}: i32" for i in range(9))
    adds = "".join(f"      %s{i} = add %a{i}, %b{i} : i32 loc(4:1)\n" for i in range(9))
    return (f"    {res} = reduce {', '.join([x] * 9)} {{axis = 0}} : {', '.join(['i32'] * 9)} {{\n"
            f"    ^({args}):\n{adds}      yield {', '.join(f'%s{i}' for i in range(9))} loc(4:1)\n"
            f"    }} loc(4:1)\n    {out} = add {acc}, %r8 : i32 loc(5:1)\n")


_LOOP_HEAD = """module {num_warps = 4}

func kernel @k(%x: ptr<i32>, %y: ptr<i32>, %n: i32) loc("loop.py":1:1) {
  %r = make_range {end = 128, start = 0} : block<128xi32> loc(2:1)
  %p = splat %x : block<128xptr<i32>> loc(2:1)
  %q = addptr %p, %r : block<128xptr<i32>> loc(2:1)
  %c0 = constant {value = 0} : i32 loc(2:1)
  %c1 = constant {value = 1} : i32 loc(2:1)
"""

REDUCE9_IN_LOOP = _LOOP_HEAD + """  %out = for %c0, %n, %c1, %c0 : i32 {
  ^(%i: i32, %acc: i32):
    %v = load %q : block<128xi32> loc(3:1)
""" + _reduce9("%v", "%acc", "%next") + """    yield %next loc(6:1)
  } loc(6:1)
  store %y, %out loc(7:1)
  return
}
"""

REDUCE9_IN_WHILE = _LOOP_HEAD + """  %out = while %c0 : i32 {
  ^(%w: i32):
    %go = cmp %w, %n {pred = "lt"} : i1 loc(3:1)
    condition %go, %w loc(3:1)
  } {
  ^(%acc: i32):
    %v = load %q : block<128xi32> loc(3:1)
""" + _reduce9("%v", "%acc", "%next") + """    yield %next loc(6:1)
  } loc(6:1)
  store %y, %out loc(7:1)
  return
}
"""


@pytest.mark.parametrize("text", [REDUCE9_IN_LOOP, REDUCE9_IN_WHILE], ids=["for", "while"])
def test_failed_op_in_loop_is_an_error(text, tmp_path):
    """An op the NVPTX backend cannot lower (a reduction of more inputs
    than it takes), inside a loop that carries its result: lowering went
    on to the loop's back edge and aborted the process asking for the
    registers the op never produced. Now the op's error, with its
    location."""
    path = tmp_path / "loop.ttir"
    path.write_text(text)
    for arch in (80, 90):
        with pytest.raises(CompilationError, match=r"loop\.py:4:1: reduce: too many inputs"):
            triton.compile(str(path), target=GPUTarget("cuda", arch, 32))


@pytest.mark.parametrize("arch,cfg", [(90, (128, 256, 128, 3, 8)), (90, (64, 256, 128, 4, 4)),
                                      (80, (128, 128, 128, 4, 4))])
def test_tutorial03_fp8_matmul_compiles_fast(arch, cfg):
    """Tutorial 03's fp8 path as a launch specializes it (a in fp8e5, b its
    transpose, so stride_ak = stride_bk = 1, the other strides divisible by
    16), with the tutorial's fp8 configs: it once spent 21 s building
    constant vectors in the load lowering, then aborted. Now about a
    second each here without ptxas; the bound leaves room for a loaded
    machine. ptxas's own time is left out: the sm_80 tile spills (an fp8
    operand upcast in registers), so ptxas runs twice (the second time told
    one block a multiprocessor), about 3 s each here."""
    import time
    from kernels.matmul import matmul_kernel
    bm, bn, bk, stages, warps = cfg
    d16 = {"divisibility": 16}
    ints = ["M", "N", "K", "stride_am", "stride_bn", "stride_cm"]
    sig = dict(a_ptr="*fp8e5", b_ptr="*fp8e5", c_ptr="*fp16", **{k: "i32" for k in ints})
    cx = dict(stride_ak=1, stride_bk=1, stride_cn=1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
              GROUP_SIZE_M=8, ACTIVATION="")
    sig.update({k: "constexpr" for k in cx})
    attrs = {k: d16 for k in ["a_ptr", "b_ptr", "c_ptr"] + ints}
    t = time.perf_counter()
    k = triton.compile(ASTSource(matmul_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                       options=dict(num_warps=warps, num_stages=stages))
    dt = time.perf_counter() - t - k.times.get("ptxas", 0.0) / 1000
    assert f".target sm_{arch}" in k.asm["ptx"]
    if PTXAS:
        assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"
    if arch == 90:
        assert "wgmma.mma_async" in k.asm["ptx"] and "e5m2.e5m2" in k.asm["ptx"]
    assert dt < 6, f"{dt:.1f} s without ptxas"
