"""@jit(noinline=True) functions: real calls on both backends.

On the GPU a noinline function is a PTX `.func` called with `call`: its
parameters are the registers each thread holds of the block arguments (in
the canonical layout blocks have at calls, analysis/call.c), scalars and
pointers, then the base of the shared scratch its caller reserves for the
call; several results come back as one struct. Each kernel here is
compiled for sm_80 and sm_90 without a GPU (ptxas assembles the PTX) and
run on the CPU backend against numpy; the tests marked `gpu` run the same
kernels on the GPU.

The first five kernels are the forms upstream Triton's test_noinline
checks: a callee storing through a pointer, a call graph, a callee that
uses shared memory (a dot through scratch), calls under data-dependent
conditions, and a callee returning two values.
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
from ctriton.compiler.errors import CompilationError

from cpu_util import cpu_driver  # noqa: F401  (fixture)

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
CALL = re.compile(r"^\s*call(\.uni)?\s", re.M)
FUNC = re.compile(r"^\.func\s+(\([^)]*\)\s*)?(\w+)\(", re.M)


# -- the five forms -------------------------------------------------------------------------------

@triton.jit(noinline=True)
def _put_sum(a, b, out_ptr):
    tl.store(out_ptr, a + b)


@triton.jit(noinline=True)
def _inc1(v):
    return v + 1


@triton.jit(noinline=True)
def _inc2(v):
    return v + 2


@triton.jit(noinline=True)
def _graph(a, b, out_ptr):
    tl.store(out_ptr, _inc1(a) + _inc2(b))


@triton.jit(noinline=True)
def _square_tile(a, b, out_ptr):
    idx = 16 * tl.arange(0, 16)[:, None] + tl.arange(0, 16)[None, :]
    t = tl.load(out_ptr + idx)
    tl.store(out_ptr + idx, tl.dot(t, t) + a + b)


@triton.jit(noinline=True)
def _branchy(a, b, out_ptr):
    if a >= 1:
        a = _inc1(a)
    else:
        a = _inc2(a)
    if b >= 2:
        b = _inc2(b)
    else:
        b = _inc1(b)
    tl.store(out_ptr, a + b)


@triton.jit(noinline=True)
def _two(a, b):
    return a + 1, b + 2


@triton.jit(noinline=True)
def _two_values(a, b, out_ptr):
    a, b = _two(a, b)
    tl.store(out_ptr, a + b)


@triton.jit
def simple_kernel(X, Y, Z):
    _put_sum(tl.load(X), tl.load(Y), Z)


@triton.jit
def call_graph_kernel(X, Y, Z):
    _graph(tl.load(X), tl.load(Y), Z)


@triton.jit
def shared_kernel(X, Y, Z):
    _square_tile(tl.load(X), tl.load(Y), Z)


@triton.jit
def dynamic_kernel(X, Y, Z):
    _branchy(tl.load(X), tl.load(Y), Z)


@triton.jit
def multi_values_kernel(X, Y, Z):
    _two_values(tl.load(X), tl.load(Y), Z)


MODES = {"simple": simple_kernel, "call_graph": call_graph_kernel, "shared": shared_kernel,
         "dynamic": dynamic_kernel, "multi_values": multi_values_kernel}
SIG3 = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"}
D16 = {"divisibility": 16}


def mode_args(mode):
    z = np.ones((16, 16), np.float32) if mode == "shared" else np.zeros(1, np.float32)
    return np.array([1.0], np.float32), np.array([2.0], np.float32), z


def mode_expected(mode, x, y):
    if mode == "simple":
        return x + y
    if mode == "shared":
        return np.full((16, 16), 16, np.float32) + x + y
    return x + 1 + y + 2


def gpu_compile(fn, sig, arch, cx=None, attrs=None, **opts):
    cx = dict(cx or {})
    sig = dict(sig, **{k: "constexpr" for k in cx})
    k = triton.compile(ASTSource(fn, sig, cx, attrs or {}), target=GPUTarget("cuda", arch, 32), options=opts)
    ptx = k.asm["ptx"]
    assert f".target sm_{arch}" in ptx
    if PTXAS:
        assert k.asm.get("cubin", b"")[:4] == b"\x7fELF", "ptxas produced no cubin"
    return k


def funcs(ptx):
    """The names of the .func definitions of a PTX module."""
    return [m.group(2) for m in FUNC.finditer(ptx)]


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_mode_compiles_to_calls(mode, arch):
    """Every form is a kernel calling device functions: a .func per callee
    (two levels for the call graphs), real `call`s, accepted by ptxas."""
    k = gpu_compile(MODES[mode], SIG3, arch, attrs={"Z": D16}, num_warps=1)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    want = {"simple": 1, "call_graph": 3, "shared": 1, "dynamic": 3, "multi_values": 2}[mode]
    assert len(funcs(ptx)) == want, funcs(ptx)
    assert len(CALL.findall(ptx)) >= want
    assert ".visible .entry " in ptx
    if mode == "shared":
        # the callee's dot stages its operands in scratch below the base the
        # kernel passes, and the kernel launches with the callee's bytes
        assert re.search(r"func noinline @_square_tile_\d+\(.*\{shared = \d+\}", ttgir)
        assert re.search(r"call .*\{callee = @_square_tile_\d+, scratch_offset = 0\}", ttgir)
        assert k.metadata.shared > 0
        # the pointer's divisibility reached the callee: its tile loads and
        # stores are 128-bit
        assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    if mode == "multi_values":
        assert re.search(r"\.func\s+\(\.param \.align \d+ \.b8 func_retval0\[8\]\)", ptx)  # a struct of two f32


@pytest.mark.parametrize("mode", sorted(MODES))
def test_mode_cpu(cpu_driver, mode):  # noqa: F811
    x, y, z = mode_args(mode)
    MODES[mode][(1,)](x, y, z, num_warps=1)
    np.testing.assert_array_equal(z, mode_expected(mode, x, y))


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_mode_gpu(mode, num_warps):
    import torch
    x, y, z = (torch.from_numpy(a).cuda() for a in mode_args(mode))
    MODES[mode][(1,)](x, y, z, num_warps=num_warps)
    want = mode_expected(mode, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_array_equal(z.cpu().numpy(), want)


# -- blocks crossing calls: layouts, barriers, shared memory ---------------------------------------

@triton.jit(noinline=True)
def _normalize(t, s):
    # t arrives in the canonical layout; the column sums cross the warps
    # (scratch), the row maxima stay in the warps
    col = tl.sum(t, 0)
    row = tl.max(t, 1)
    return t / col[None, :] * s, row


@triton.jit
def layouts_kernel(A, B, C, R, S, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)                       # in the tensor cores' layout on the GPU
    total = tl.sum(tl.sum(c, 1), 0)         # scratch in use just before the call
    c2, rows = _normalize(c, tl.load(S) + total * 0)
    tl.store(C + rm[:, None] * N + rn[None, :], c2)
    tl.store(R + rm, rows)


def layouts_args(rng, m=64, n=64, k=32):
    a = rng.integers(1, 4, (m, k)).astype(np.float16)
    b = rng.integers(1, 4, (k, n)).astype(np.float16)
    return a, b, np.zeros((m, n), np.float32), np.zeros(m, np.float32), np.array([2.0], np.float32)


def layouts_expected(a, b, s):
    c = a.astype(np.float32) @ b.astype(np.float32)
    return c / c.sum(0)[None, :] * s[0], c.max(1)


LAYOUTS_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "R": "*fp32", "S": "*fp32"}
LAYOUTS_CX = {"M": 64, "N": 64, "K": 32}


@pytest.mark.parametrize("arch", [80, 90])
def test_block_arguments_convert_at_the_call(arch):
    """The dot result (#mma) is converted to the canonical layout at the
    call; callee and call agree on every block's layout (the verifier
    checks it); the reduction before the call still reads scratch, so a
    barrier separates it from the callee's first write."""
    k = gpu_compile(layouts_kernel, LAYOUTS_SIG, arch, LAYOUTS_CX, num_warps=4)
    ttgir = k.asm["ct.ttgir"]
    kernel = ttgir[:ttgir.index("func noinline")]
    call = re.search(r"^ *(%\d+), (%\d+) = call (%\d+), .*callee = @_normalize_\d+", kernel, re.M)
    assert call, kernel
    conv = re.search(rf"^ *{call.group(3)} = convert_layout .*: block<64x64xf32, #blocked<", kernel, re.M)
    assert conv, "the mma accumulator is converted to the canonical layout before the call"
    lines = kernel.splitlines()
    at = next(i for i, l in enumerate(lines) if "callee = @_normalize_" in l)
    assert any(l.strip().startswith("barrier") for l in lines[at - 3:at]), lines[at - 4:at + 1]
    callee = ttgir[ttgir.index("func noinline"):]
    assert re.search(r"\{shared = \d+\}", callee.splitlines()[0])
    ptx = k.asm["ptx"]
    assert funcs(ptx) and CALL.search(ptx)


def test_block_arguments_cpu(cpu_driver):  # noqa: F811
    a, b, c, r, s = layouts_args(np.random.default_rng(0))
    layouts_kernel[(1,)](a, b, c, r, s, **LAYOUTS_CX)
    wc, wr = layouts_expected(a, b, s)
    np.testing.assert_allclose(c, wc, rtol=1e-6)
    np.testing.assert_array_equal(r, wr)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [4, 8])
def test_block_arguments_gpu(num_warps):
    import torch
    host = layouts_args(np.random.default_rng(0))
    a, b, c, r, s = (torch.from_numpy(x).cuda() for x in host)
    layouts_kernel[(1,)](a, b, c, r, s, **LAYOUTS_CX, num_warps=num_warps)
    wc, wr = layouts_expected(host[0], host[1], host[4])
    np.testing.assert_allclose(c.cpu().numpy(), wc, rtol=1e-6)
    np.testing.assert_array_equal(r.cpu().numpy(), wr)


@triton.jit(noinline=True)
def _row_scale(acc):
    # a reduction across warps: scratch while the caller's tiles stay live
    return acc / (tl.max(tl.max(acc, 1), 0) + 1.0)


@triton.jit
def pipelined_kernel(A, B, C, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    acc = tl.zeros((M, N), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc = _row_scale(tl.dot(a, b, acc))
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


def pipelined_expected(a, b, bk):
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(0, a.shape[1], bk):
        acc = a[:, k:k + bk].astype(np.float32) @ b[k:k + bk].astype(np.float32) + acc
        acc = acc / (acc.max() + 1)
    return acc


PIPE_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "K": "i32"}
PIPE_CX = {"M": 64, "N": 64, "BK": 32}


@pytest.mark.parametrize("arch", [80, 90])
def test_callee_scratch_avoids_live_buffers(arch):
    """A call inside a cp.async-pipelined dot loop: the multi-buffered tiles
    are live across the call, so the callee's scratch (its whole "shared"
    total, from the call's scratch_offset) lies outside every tile buffer."""
    attrs = {n: D16 for n in ("A", "B", "C", "K")}
    k = gpu_compile(pipelined_kernel, PIPE_SIG, arch, PIPE_CX, attrs=attrs, num_warps=4, num_stages=3)
    ttgir = k.asm["ct.ttgir"]
    tile = 3 * 64 * 32 * 2  # stages x (64 x 32 | 32 x 64) x f16, for A and for B
    tiles = {}
    for m in re.finditer(r"async_copy .*\{buffer = (\d+), scratch_offset = (\d+), stages = 3\}", ttgir):
        tiles[m.group(1)] = (int(m.group(2)), tile)
    assert len(tiles) == 2, ttgir
    call = re.search(r"callee = @_row_scale_\d+, scratch_offset = (\d+)", ttgir)
    shared = re.search(r"func noinline @_row_scale_\d+\(.*\{shared = (\d+)\}", ttgir)
    assert call and shared, ttgir
    lo, hi = int(call.group(1)), int(call.group(1)) + int(shared.group(1))
    for off, size in tiles.values():
        assert hi <= off or off + size <= lo, (lo, hi, off, size)
    assert k.metadata.shared >= hi


def test_callee_scratch_cpu(cpu_driver):  # noqa: F811
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, (64, 96)).astype(np.float16)
    b = rng.integers(-2, 3, (96, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    pipelined_kernel[(1,)](a, b, c, 96, **PIPE_CX)
    np.testing.assert_allclose(c, pipelined_expected(a, b, 32), rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_callee_scratch_gpu():
    import torch
    rng = np.random.default_rng(1)
    ha = rng.integers(-2, 3, (64, 256)).astype(np.float16)
    hb = rng.integers(-2, 3, (256, 64)).astype(np.float16)
    a, b = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    c = torch.zeros((64, 64), device="cuda", dtype=torch.float32)
    pipelined_kernel[(1,)](a, b, c, 256, **PIPE_CX, num_warps=4, num_stages=3)
    np.testing.assert_allclose(c.cpu().numpy(), pipelined_expected(ha, hb, 32), rtol=1e-4, atol=1e-6)


# -- types across calls, loops, sharing, recursion -------------------------------------------------

@triton.jit(noinline=True)
def _mixed(h, keep, n, ptrs):
    # f16 and i1 blocks, an i64 scalar and a block of pointers in; an f16
    # block, an i1 block and an i64 scalar out
    v = tl.load(ptrs, mask=keep, other=0)
    return tl.where(keep, h * 2, -h), v > n, n * 3


@triton.jit
def mixed_kernel(H, I, O, Q, P, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    h = tl.load(H + offs)
    keep = offs % 3 != 0
    o, big, n3 = _mixed(h, keep, n.to(tl.int64), I + offs)
    tl.store(O + offs, o)
    tl.store(Q + offs, big.to(tl.int8))
    tl.store(P, n3)


def mixed_args(rng, b=256):
    return (rng.integers(-8, 8, b).astype(np.float16), rng.integers(0, 100, b).astype(np.int32),
            np.zeros(b, np.float16), np.zeros(b, np.int8), np.zeros(1, np.int64), 40)


def mixed_expected(h, i, n):
    keep = np.arange(len(h)) % 3 != 0
    return np.where(keep, h * 2, -h), (np.where(keep, i, 0) > n).astype(np.int8), 3 * n


MIXED_SIG = {"H": "*fp16", "I": "*i32", "O": "*fp16", "Q": "*i8", "P": "*i64", "n": "i32"}


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_mixed_types_compile(arch, num_warps):
    k = gpu_compile(mixed_kernel, MIXED_SIG, arch, {"B": 256}, num_warps=num_warps)
    ptx = k.asm["ptx"]
    assert funcs(ptx) and CALL.search(ptx)


def test_mixed_types_cpu(cpu_driver):  # noqa: F811
    h, i, o, q, p, n = mixed_args(np.random.default_rng(2))
    mixed_kernel[(1,)](h, i, o, q, p, n, B=256)
    wo, wq, wp = mixed_expected(h, i, n)
    np.testing.assert_array_equal(o, wo)
    np.testing.assert_array_equal(q, wq)
    assert p[0] == wp


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 4])
def test_mixed_types_gpu(num_warps):
    import torch
    host = mixed_args(np.random.default_rng(2))
    h, i, o, q, p = (torch.from_numpy(x).cuda() for x in host[:5])
    mixed_kernel[(1,)](h, i, o, q, p, host[5], B=256, num_warps=num_warps)
    wo, wq, wp = mixed_expected(host[0], host[1], host[5])
    np.testing.assert_array_equal(o.cpu().numpy(), wo)
    np.testing.assert_array_equal(q.cpu().numpy(), wq)
    assert p.item() == wp


@triton.jit(noinline=True)
def _scaled(x, k):
    return x * k


@triton.jit
def call_in_loop(X, Y, n):
    acc = 0
    for i in range(n):
        acc += _scaled(tl.load(X + i), 3)
    tl.store(Y, acc)


@triton.jit
def call_in_while(X, Y, n):
    acc = 0
    i = 0
    while acc < n:
        acc += _scaled(tl.load(X + i), 3)
        i += 1
    tl.store(Y, acc)


LOOPS = {"for": (call_in_loop, 5, 3 * 15), "while": (call_in_while, 20, 3 * (1 + 2 + 3 + 4))}


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_call_in_loop_compiles(loop, arch):
    """A call whose result a loop carries (once a crash of the lowering)."""
    k = gpu_compile(LOOPS[loop][0], {"X": "*i32", "Y": "*i32", "n": "i32"}, arch)
    assert funcs(k.asm["ptx"]) and CALL.search(k.asm["ptx"])


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_call_in_loop_cpu(cpu_driver, loop):  # noqa: F811
    fn, n, want = LOOPS[loop]
    y = np.zeros(1, np.int32)
    fn[(1,)](np.arange(1, 9, dtype=np.int32), y, n)
    assert y[0] == want


@pytest.mark.gpu
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_call_in_loop_gpu(loop):
    import torch
    fn, n, want = LOOPS[loop]
    y = torch.zeros(1, dtype=torch.int32, device="cuda")
    fn[(1,)](torch.arange(1, 9, dtype=torch.int32, device="cuda"), y, n)
    assert y.item() == want


@triton.jit
def shared_callee_kernel(X, Y, Z, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(Z + offs, _scaled(x, 2.0) + _scaled(y, 2.0) + _scaled(x, 3.0))


def test_one_function_per_specialization(cpu_driver):  # noqa: F811
    """Calls with equal bindings (the tensors' types, the constexprs' values)
    share one function: two here, for k = 2.0 and k = 3.0, each a .func."""
    k = gpu_compile(shared_callee_kernel, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"}, 80, {"B": 128})
    assert k.asm["ct.ttir"].count("func noinline @_scaled_") == 2
    assert len(funcs(k.asm["ptx"])) == 2
    assert len(CALL.findall(k.asm["ptx"])) == 3
    x, y, z = np.arange(128, dtype=np.float32), np.ones(128, np.float32), np.zeros(128, np.float32)
    shared_callee_kernel[(1,)](x, y, z, B=128)
    np.testing.assert_array_equal(z, 5 * x + 2)


@triton.jit(noinline=True)
def _forever(x):
    return _forever(x) + 1


@triton.jit
def recursive_kernel(X):
    tl.store(X, _forever(tl.load(X)))


def test_recursion_is_an_error():
    with pytest.raises(CompilationError, match=r"recursive call of noinline function _forever\(\)"):
        triton.compile(ASTSource(recursive_kernel, {"X": "*fp32"}, {}), target=GPUTarget("cuda", 80, 32))


@triton.jit(noinline=True)
def _inner_sum(t):
    return tl.sum(t, 0)


@triton.jit(noinline=True)
def _outer(t):
    # shared memory in the callee and in the function it calls
    s = _inner_sum(t)
    return tl.cumsum(t, 0) + s


@triton.jit
def nested_kernel(X, Y, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(Y + offs, _outer(tl.load(X + offs)))


@pytest.mark.parametrize("arch", [80, 90])
def test_nested_callees_with_shared_memory(arch):
    k = gpu_compile(nested_kernel, {"X": "*i32", "Y": "*i32"}, arch, {"B": 512}, num_warps=4)
    ttgir = k.asm["ct.ttgir"]
    outer = int(re.search(r"func noinline @_outer_\d+\(.*\{shared = (\d+)\}", ttgir).group(1))
    inner = int(re.search(r"func noinline @_inner_sum_\d+\(.*\{shared = (\d+)\}", ttgir).group(1))
    assert outer >= inner > 0 and k.metadata.shared >= outer
    assert len(funcs(k.asm["ptx"])) == 2


def test_nested_callees_cpu(cpu_driver):  # noqa: F811
    x = np.arange(512, dtype=np.int32) % 7
    y = np.zeros(512, np.int32)
    nested_kernel[(1,)](x, y, B=512)
    np.testing.assert_array_equal(y, np.cumsum(x) + x.sum())


@pytest.mark.gpu
def test_nested_callees_gpu():
    import torch
    x = torch.arange(512, dtype=torch.int32, device="cuda") % 7
    y = torch.zeros(512, dtype=torch.int32, device="cuda")
    nested_kernel[(1,)](x, y, B=512, num_warps=4)
    np.testing.assert_array_equal(y.cpu().numpy(), np.cumsum(x.cpu().numpy()) + x.sum().item())


@triton.jit(noinline=True)
def _mm(a, b):
    return tl.dot(a, b)


@triton.jit
def mm_kernel(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], _mm(a, b))


MM_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32"}
MM_CX = {"M": 64, "N": 64, "K": 64}


@pytest.mark.parametrize("arch", [80, 90])
def test_tensor_cores_in_a_callee(arch):
    """A dot on the tensor cores inside the callee: its operands staged in
    the callee's scratch (swizzled, 1 KiB aligned from the base the kernel
    passes), mma.sync on sm_80, warpgroup MMA on sm_90."""
    k = gpu_compile(mm_kernel, MM_SIG, arch, MM_CX, attrs={n: D16 for n in MM_SIG}, num_warps=4)
    ptx = k.asm["ptx"]
    body = ptx[ptx.index(".func"):ptx.index(".visible .entry")]
    assert ("wgmma.mma_async" if arch == 90 else "mma.sync.aligned.m16n8k16") in body
    shared = int(re.search(r"func noinline @_mm_\d+\(.*\{shared = (\d+)\}", k.asm["ct.ttgir"]).group(1))
    assert shared >= 1024 and k.metadata.shared >= shared


def _mm_args():
    rng = np.random.default_rng(3)
    return (rng.integers(-3, 4, (64, 64)).astype(np.float16), rng.integers(-3, 4, (64, 64)).astype(np.float16),
            np.zeros((64, 64), np.float32))


def test_tensor_cores_in_a_callee_cpu(cpu_driver):  # noqa: F811
    a, b, c = _mm_args()
    mm_kernel[(1,)](a, b, c, **MM_CX)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [4, 8])
def test_tensor_cores_in_a_callee_gpu(num_warps):
    import torch
    host = _mm_args()
    a, b, c = (torch.from_numpy(x).cuda() for x in host)
    mm_kernel[(1,)](a, b, c, **MM_CX, num_warps=num_warps)
    np.testing.assert_array_equal(c.cpu().numpy(), host[0].astype(np.float32) @ host[1].astype(np.float32))


RECURSIVE_TTIR = """module {num_warps = 4}

func kernel @k(%x: ptr<f32>) loc("rec.py":1:1) {
  %v = load %x : f32 loc(2:1)
  %r = call %v {callee = @f} : f32 loc(3:1)
  store %x, %r loc(4:1)
  return
}

func noinline @f(%a: f32) -> (f32) loc("rec.py":5:1) {
  %b = call %a {callee = @f} : f32 loc(6:1)
  return %b loc(7:1)
}
"""


def test_recursive_ttir_is_an_error(tmp_path):
    """A .ttir whose function calls itself: the GPU passes need callees
    before callers, so verify rejects it with the call's location."""
    path = tmp_path / "rec.ttir"
    path.write_text(RECURSIVE_TTIR)
    with pytest.raises(CompilationError, match=r"rec\.py:6:1: recursive call of @f"):
        triton.compile(str(path), target=GPUTarget("cuda", 80, 32))


@triton.jit(noinline=True)
def _zero(X):
    tl.store(X, 0)


@triton.jit
def maxnreg_kernel(X):
    _zero(X)
    tl.store(X, 1)


@pytest.mark.parametrize("arch", [80, 90])
def test_maxnreg_on_the_entry_only(arch):
    """The maxnreg option limits the kernel (.entry), not its .func callees
    (which ptxas allocates within the caller's budget)."""
    ptx = gpu_compile(maxnreg_kernel, {"X": "*i32"}, arch, maxnreg=42).asm["ptx"]
    assert re.search(r"\.visible \.entry [^{;]*\.maxnreg 42", ptx)
    assert not re.search(r"\.func [^{;]*\.maxnreg", ptx)
