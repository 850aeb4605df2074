"""tl.range(loop_unroll_factor=U): the TTIR holds U copies of the body and
a remainder loop (the unroll-loops pass); tl.range(flatten=True): a loop
nest becomes one loop over the inner iterations (flatten-loops). Results
checked on the CPU backend against Python; the GPU pipeline compiled
without a GPU."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

CPU = GPUTarget("cpu", 0, 1)


def compile_for(fn, sig, cx, target=CPU):
    return triton.compile(ASTSource(fn, sig, cx), target=target)


@triton.jit
def atomics_kernel(dst, U: tl.constexpr):
    pid = tl.program_id(axis=0)
    for i in tl.range(0, 10, loop_unroll_factor=U):
        tl.atomic_add(dst + pid, i + pid)


@pytest.mark.parametrize("u,copies,loops", [(1, 1, 1), (2, 2, 1), (4, 5, 2), (5, 5, 1), (8, 9, 2),
                                            (16, 1, 1)])
def test_unroll_constant_bounds(u, copies, loops):
    k = compile_for(atomics_kernel, {"dst": "*fp32"}, {"U": u})
    t = k.asm["ttir"]
    assert t.count("tt.atomic_rmw") == copies and t.count("scf.for") == loops
    assert "loop_unroll_factor" not in t or u == 1
    if loops == 2:  # the remainder is not pipelined
        assert t.count("{tt.num_stages = 1 : i32}") == 1
    assert "unroll-loops" in k.metadata.passes


@triton.jit
def recurrence_kernel(x_ptr, out_ptr, lo, hi, step, U: tl.constexpr, V: tl.constexpr):
    acc = 0.0
    cnt = 0
    for i in tl.range(lo, hi, step, loop_unroll_factor=U):
        acc = acc * 0.5 + tl.load(x_ptr + i)
        for j in tl.range(0, i % 3, loop_unroll_factor=V):
            cnt += j + 1
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, cnt.to(tl.float32))


def _recurrence(x, lo, hi, step):
    acc, cnt = np.float32(0), 0
    for i in range(lo, hi, step):
        acc = acc * np.float32(0.5) + x[i]
        cnt += sum(j + 1 for j in range(i % 3))
    return acc, cnt


@pytest.mark.parametrize("u,v", [(2, 1), (3, 2), (4, 4)])
def test_unroll_dynamic_bounds(u, v):
    x = np.random.default_rng(0).random(100).astype(np.float32)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "lo": "i32", "hi": "i32", "step": "i32"}
    t = compile_for(recurrence_kernel, sig, {"U": u, "V": v}).asm["ttir"]
    assert t.count("tt.load") == u + 1  # u copies, and the remainder loop's
    for lo, hi, step in [(0, 10, 1), (3, 50, 2), (5, 5, 1), (7, 3, 1), (0, 100, 7), (1, 4, 1), (2, 3, 5)]:
        out = np.zeros(2, np.float32)
        recurrence_kernel[(1,)](x, out, lo, hi, step, U=u, V=v)
        acc, cnt = _recurrence(x, lo, hi, step)
        np.testing.assert_allclose(out[0], acc, rtol=1e-6, err_msg=str((lo, hi, step)))
        assert out[1] == cnt, (lo, hi, step)


@triton.jit
def tile_sum_kernel(x_ptr, out_ptr, n_tiles, U: tl.constexpr, B: tl.constexpr):
    acc = tl.zeros([B], tl.float32)
    for t in tl.range(0, n_tiles, loop_unroll_factor=U):
        acc += tl.load(x_ptr + t * B + tl.arange(0, B))
    tl.store(out_ptr + tl.arange(0, B), acc)


@pytest.mark.parametrize("n_tiles", [0, 1, 3, 8])
def test_unroll_block_values(n_tiles):
    x = np.random.default_rng(1).random(8 * 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    tile_sum_kernel[(1,)](x, out, n_tiles, U=3, B=32)
    np.testing.assert_allclose(out, x[:n_tiles * 32].reshape(n_tiles, 32).sum(0), rtol=1e-5)


@triton.jit
def unrolled_dot_kernel(a, b, c, K, U: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, K, BK, loop_unroll_factor=U):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("arch", [80, 90])
def test_unroll_gpu_pipeline(arch):
    sig = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "K": "i32"}
    k = compile_for(unrolled_dot_kernel, sig, dict(U=2, BM=64, BN=64, BK=32), GPUTarget("cuda", arch, 32))
    assert k.asm["ttir"].count("tt.dot") == 3  # two in the main loop, one in the remainder
    assert ".entry unrolled_dot_kernel" in k.asm["ptx"]


def test_unroll_dot_on_cpu():
    rng = np.random.default_rng(2)
    for K in (32, 96, 128):
        a = rng.standard_normal((16, K)).astype(np.float16)
        b = rng.standard_normal((K, 16)).astype(np.float16)
        c = np.zeros((16, 16), np.float32)
        unrolled_dot_kernel[(1,)](a, b, c, K, U=2, BM=16, BN=16, BK=32)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


# -- flatten ---------------------------------------------------------------


@triton.jit
def nest_kernel(out_ptr, log_ptr, ub, inner, CASE: tl.constexpr):
    total = 0
    for i in tl.range(0, ub, flatten=True):
        row = out_ptr + i * 16                       # a pointer from the prologue
        if CASE == 0:
            lo = 0
            hi = inner                               # invariant bounds
        elif CASE == 1:
            lo = i
            hi = 2 * i % 5 + i                       # some outer iterations have none
        else:
            lo = 0
            hi = 4                                   # constant bounds
        s = total
        for j in tl.range(lo, hi):
            if j % 2 == 0:
                s += j * 10 + i
            else:
                s -= 1
            tl.store(row + (j - lo), s)
        tl.store(log_ptr + i, s - total)             # the epilogue reads the inner result
        total = s + 1


def _nest(ub, inner, case):
    out = np.zeros((16, 16), np.int32)
    log = np.zeros(16, np.int32)
    total = 0
    for i in range(ub):
        lo, hi = [(0, inner), (i, 2 * i % 5 + i), (0, 4)][case]
        s = total
        for j in range(lo, hi):
            s = s + j * 10 + i if j % 2 == 0 else s - 1
            out[i, j - lo] = s
        log[i] = s - total
        total = s + 1
    return out, log


@pytest.mark.parametrize("case", [0, 1, 2])
@pytest.mark.parametrize("ub,inner", [(0, 3), (1, 0), (5, 0), (5, 3), (9, 7), (16, 16)])
def test_flatten_results(case, ub, inner):
    out = np.zeros((16, 16), np.int32)
    log = np.zeros(16, np.int32)
    k = nest_kernel[(1,)](out, log, ub, inner, CASE=case)
    want_out, want_log = _nest(ub, inner, case)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(log, want_log)
    ttgir = k.asm["ttgir"]
    # one loop (plus the loop counting the iterations when the inner bounds
    # depend on the outer iteration), none nested in another
    assert ttgir.count("scf.for") == (2 if case == 1 else 1), ttgir
    assert "tt.flatten" in k.asm["ttir"] and "tt.flatten" not in ttgir
    assert "flatten-loops" in k.metadata.passes


@triton.jit
def block_nest_kernel(x_ptr, out_ptr, n_rows, n_cols, B: tl.constexpr):
    acc = tl.zeros([B], tl.float32)
    for r in tl.range(0, n_rows, flatten=True):
        row = tl.zeros([B], tl.float32)
        for c in tl.range(0, n_cols):
            row += tl.load(x_ptr + (r * n_cols + c) * B + tl.arange(0, B))
        acc = acc * 0.5 + row
    tl.store(out_ptr + tl.arange(0, B), acc)


@pytest.mark.parametrize("rows,cols", [(0, 2), (3, 0), (3, 4), (1, 1)])
def test_flatten_block_values(rows, cols):
    x = np.random.default_rng(3).random(max(rows * cols, 1) * 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    block_nest_kernel[(1,)](x, out, rows, cols, B=32)
    want = np.zeros(32, np.float32)
    for r in range(rows):
        want = want * np.float32(0.5) + x[r * cols * 32:(r + 1) * cols * 32].reshape(cols, 32).sum(0)
    np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.parametrize("arch", [80, 90])
def test_flatten_gpu_pipeline(arch):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"}
    k = compile_for(block_nest_kernel, sig, {"B": 128}, GPUTarget("cuda", arch, 32))
    assert k.asm["ttgir"].count("scf.for") == 1 and ".entry block_nest_kernel" in k.asm["ptx"]


@triton.jit
def unflattened_kernel(out_ptr, ub, TWO: tl.constexpr):
    n = 1
    for i in tl.range(0, ub, flatten=True):
        for j in tl.range(0, n):                    # bounds read a loop-carried value
            tl.store(out_ptr + i * 8 + j, j)
        if TWO:
            for j in tl.range(0, 2):                # a second inner loop
                tl.store(out_ptr + 64 + i * 2 + j, i)
        n += 1


@pytest.mark.parametrize("two", [False, True])
def test_nests_left_alone(two):
    out = np.zeros(128, np.int32)
    k = unflattened_kernel[(1,)](out, 5, TWO=two)
    want = np.zeros(128, np.int32)
    for i in range(5):
        for j in range(i + 1):
            want[i * 8 + j] = j
        if two:
            want[64 + i * 2:64 + i * 2 + 2] = i
    np.testing.assert_array_equal(out, want)
    assert k.asm["ttgir"].count("scf.for") == (3 if two else 2)
    assert re.search(r"\} \{tt\.flatten\}", k.asm["ttgir"])  # still asked for, not done


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, n_tiles, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, NUM_SMS: tl.constexpr):
    n_n = N // BN
    for tile in tl.range(tl.program_id(0), n_tiles, NUM_SMS, flatten=True):
        om = (tile // n_n) * BM
        on = (tile % n_n) * BN
        rm = om + tl.arange(0, BM)
        rn = on + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@pytest.mark.skipif(not __import__("shutil").which("ptxas") and not __import__("os").path.exists(
    "/usr/local/cuda/bin/ptxas"), reason="ptxas not found")
def test_flatten_keeps_a_dot_loop_pipelined():
    """A flatten=True nest whose inner loop holds a dot stays a nest: the
    dot's own loop keeps its cp.async stages and warpgroup MMA (fused, its
    tiles were plain loads and the kernel took 255 registers)."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "n_tiles": "i32"}
    cx = dict(BM=128, BN=128, BK=64, NUM_SMS=132)
    s = dict(sig, **{k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(6)}
    k = triton.compile(ASTSource(persistent_matmul, s, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 3})
    g = k.asm["ct.ttgir"]
    assert len(re.findall(r"^\s*(?:%[\w, %]+ = )?for ", g, re.M)) >= 2 and "async_copy " in g
    assert "wgmma.mma_async" in k.asm["ptx"] and k.n_spills == 0


def _persistent_sm90(BM, BN, BK, warps, stages):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "n_tiles": "i32"}
    cx = dict(BM=BM, BN=BN, BK=BK, NUM_SMS=132)
    s = dict(sig, **{k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(6)}
    return triton.compile(ASTSource(persistent_matmul, s, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages})


@pytest.mark.skipif(not __import__("shutil").which("ptxas") and not __import__("os").path.exists(
    "/usr/local/cuda/bin/ptxas"), reason="ptxas not found")
@pytest.mark.parametrize("BN,BK,stages", [(256, 64, 3), (256, 64, 4), (256, 128, 2), (128, 128, 3)])
def test_persistent_epilogue_reuses_the_slots(monkeypatch, BN, BK, stages):
    """In a persistent nest (kept: CTRITON_FLATTEN_DOT_NESTS=0; fused by
    default, test_flatten_dots.py) the K loop's cp.async slots are drained (wait for
    all copies) before each tile's epilogue, so the epilogue's layout
    conversion reuses their bytes: shared memory is the slots alone, and the
    stages asked for fit (the limit is the device's, not a fixed 160 KiB:
    128x256x64 with 4 stages is 192 KiB; 128x256x128 with 2 stages was left
    unpipelined and spilled). The next tile's first copies wait at a barrier
    for the epilogue's last reads of those bytes."""
    monkeypatch.setenv("CTRITON_FLATTEN_DOT_NESTS", "0")
    k = _persistent_sm90(128, BN, BK, 8, stages)
    slots = stages * (128 * BK + BK * BN) * 2
    assert k.metadata.shared == slots, (k.metadata.shared, slots)
    assert k.n_spills == 0 and "cp.async.cg" in k.asm["ptx"]
    g = k.asm["ct.ttgir"]
    conv = re.search(r"convert_layout .*\{scratch_offset = (\d+)\}", g)
    assert conv and int(conv.group(1)) < slots  # inside the slots' bytes
    outer = g[g.index("flatten = true"):]
    first_copy = outer.index("async_copy ")
    assert "barrier loc" in outer[:first_copy]  # epilogue reads, then the next tile's copies


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("n_tiles,programs", [(12, 5), (7, 9), (64, 16)])
@pytest.mark.parametrize("BN,warps", [(128, 4), (256, 8)])
def test_gpu_persistent_matmul(stages, n_tiles, programs, BN, warps):
    """A persistent nest (each tile's K loop pipelined, its epilogue in the
    slots' bytes): programs with several tiles, one tile and none (more
    programs than tiles) against torch; tiles past n_tiles untouched."""
    import torch
    BM = 128
    BK = 64
    n_n = 4
    M, N, K = (n_tiles + n_n - 1) // n_n * BM, n_n * BN, 512
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    persistent_matmul[(programs,)](a, b, c, M, N, K, n_tiles, BM=BM, BN=BN, BK=BK, NUM_SMS=programs,
                                   num_warps=warps, num_stages=stages)
    ref = (a.float() @ b.float())
    done = n_tiles // n_n * BM
    torch.testing.assert_close(c[:done].float(), ref[:done], atol=0.1, rtol=1e-2)
    if n_tiles % n_n:
        rows = slice(done, done + BM)
        cols = (n_tiles % n_n) * BN
        torch.testing.assert_close(c[rows, :cols].float(), ref[rows, :cols], atol=0.1, rtol=1e-2)
        assert torch.isnan(c[rows, cols:]).all()  # tiles past n_tiles untouched
