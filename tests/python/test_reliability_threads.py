"""Thread safety of the compiler: different kernels compiled from 8 Python
threads at once (the C compile runs with the GIL released) give the same
TTIR, TTGIR, PTX and CPU code as when compiled one at a time, and the CPU
kernels compiled in parallel compute the right results."""
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def t_add(X, Y, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)


@triton.jit
def t_softmax(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + tl.program_id(0) * n + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(Y + tl.program_id(0) * n + offs, e / tl.sum(e, 0), mask=offs < n)


@triton.jit
def t_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def t_cumsum(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.cumsum(tl.load(X + offs), 0))


@triton.jit
def t_where(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    tl.store(Y + offs, tl.where(x > 0, x * 3, -x), mask=offs < n)


@triton.jit
def t_hist(H, V, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(H + tl.load(V + offs, mask=offs < n, other=0), 1, mask=offs < n)


@triton.jit
def t_transpose(X, Y, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])
    tl.store(Y + rn[:, None] * BM + rm[None, :], tl.trans(x))


@triton.jit
def t_reduce2d(X, Y, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])
    tl.store(Y + rm, tl.sum(x * x, 1))


# divisible pointers and sizes: the matmuls take the multi-buffered
# (cp.async) path of the GPU pipeline on sm_80/sm_90
DIV = {k: {"divisibility": 16} for k in ("A", "B", "C", "M", "N", "K")}
KERNELS = [
    (t_add, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32"}, {"BLOCK": 256}, {}),
    (t_softmax, {"X": "*fp32", "Y": "*fp32", "n": "i32"}, {"BLOCK": 128}, {}),
    (t_matmul, {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
     {"BM": 64, "BN": 64, "BK": 32}, {"num_stages": 3}, DIV),
    (t_matmul, {"A": "*fp32", "B": "*fp32", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
     {"BM": 32, "BN": 32, "BK": 16}, {"num_stages": 2}, DIV),
    (t_cumsum, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 64}, {}),
    (t_where, {"X": "*fp16", "Y": "*fp16", "n": "i32"}, {"BLOCK": 512}, {}),
    (t_hist, {"H": "*i32", "V": "*i32", "n": "i32"}, {"BLOCK": 32}, {}),
    (t_transpose, {"X": "*fp32", "Y": "*fp32"}, {"BM": 32, "BN": 16}, {}),
    (t_reduce2d, {"X": "*fp32", "Y": "*fp32"}, {"BM": 16, "BN": 64}, {}),
]
TARGETS = [GPUTarget("cpu", 0, 1), GPUTarget("cuda", 80, 32), GPUTarget("cuda", 90, 32)]


def compile_one(i, target):
    fn, sig, cx, opts = KERNELS[i][:4]
    attrs = KERNELS[i][4] if len(KERNELS[i]) > 4 else None
    return triton.compile(ASTSource(fn, signature=sig, constexprs=cx, attrs=attrs), target=target,
                          options=opts)


def texts(k):
    """The stage texts of a compiled kernel; the CPU entry symbol carries a
    per-process counter, which is not part of the code."""
    out = {}
    for s in ("ttir", "ct.ttir", "ttgir", "ct.ttgir", "llir", "ptx", "asm"):
        if s in k.asm:
            out[s] = re.sub(r"ct_kernel_\d+_", "ct_kernel_N_", k.asm[s])
    return out


def test_parallel_compiles_match_serial(monkeypatch):
    monkeypatch.setenv("CTRITON_ALWAYS_COMPILE", "1")
    jobs = [(i, t) for i in range(len(KERNELS)) for t in TARGETS]
    serial = {(i, t.key()): texts(compile_one(i, t)) for i, t in jobs}
    errors = []
    barrier = threading.Barrier(8)

    def worker(w):
        barrier.wait()  # start together
        got = {}
        # each thread compiles half of the jobs, starting at a different one
        for j in range(len(jobs) // 2):
            i, t = jobs[(j + w * 3) % len(jobs)]
            try:
                got[(i, t.key())] = texts(compile_one(i, t))
            except Exception as e:  # reported below
                errors.append(f"{KERNELS[i][0].__name__} {t.key()}: {e!r}")
        return got

    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(worker, range(8)))
    assert not errors, errors
    seen = set()
    for got in results:
        for key, stages in got.items():
            seen.add(key)
            for stage, text in serial[key].items():
                assert stages[stage] == text, f"{key} {stage} differs from the serial compile"
    assert seen == set(serial)


def test_parallel_cpu_compiles_run_correctly():
    rng = np.random.default_rng(1)

    def run(w):
        # one kernel body, a different specialization (BLOCK) per thread
        block = 1 << (4 + w % 6)
        n = 1000 + w
        x = rng.standard_normal(n).astype(np.float32) if w == 0 else \
            np.random.default_rng(w).standard_normal(n).astype(np.float32)
        y = np.random.default_rng(100 + w).standard_normal(n).astype(np.float32)
        z = np.zeros(n, np.float32)
        t_add[(triton.cdiv(n, block),)](x, y, z, n, block)
        return np.array_equal(z, x + y)

    with ThreadPoolExecutor(8) as ex:
        assert all(ex.map(run, range(32)))
