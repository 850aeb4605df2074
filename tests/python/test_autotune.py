"""@autotune, Config and @heuristics on the CPU backend, plus the other
top-level names Triton scripts use (OutOfResources, reinterpret, ...).

Most tests time configs with a scripted benchmarker (``FakeBench``): it runs
the trial once and returns the next scripted time, so which config wins is
decided by the test and the number of benchmark calls can be counted."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.join(HERE, "..", "..", "python")


class FakeBench:
    """do_bench stand-in: runs fn `runs` times, then returns (or raises) the
    next scripted entry."""

    def __init__(self, times, runs=1):
        self.times = list(times)
        self.runs = runs
        self.calls = 0
        self.quantiles = []

    def __call__(self, fn, quantiles=None, **kw):
        self.calls += 1
        self.quantiles.append(quantiles)
        t = self.times.pop(0)
        if isinstance(t, BaseException):
            raise t
        for _ in range(self.runs):
            fn()
        return [t, t * 0.9, t * 1.1]


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out += x, with atomics: running it twice doubles the effect."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def capped_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 128)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def even_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


def grid1(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


CONFIGS = [
    triton.Config({"BLOCK": 32}, num_warps=1),
    triton.Config({"BLOCK": 64}, num_warps=2),
    triton.Config({"BLOCK": 128}, num_warps=4),
]


def data(n, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    return x, y, np.zeros(n, dtype)


# --- Config --------------------------------------------------------------------

def test_config():
    c = triton.Config({"BLOCK": 64, "GROUP": 8}, num_warps=8, num_stages=2)
    assert c.kwargs == {"BLOCK": 64, "GROUP": 8}
    assert (c.num_warps, c.num_stages, c.num_ctas, c.maxnreg, c.pre_hook) == (8, 2, 1, None, None)
    assert c.all_kwargs() == {"BLOCK": 64, "GROUP": 8, "num_warps": 8, "num_ctas": 1,
                              "num_stages": 2}
    assert triton.Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    s = str(c)
    for part in ("BLOCK: 64", "GROUP: 8", "num_warps: 8", "num_stages: 2", "num_ctas: 1",
                 "maxnreg: None"):
        assert part in s
    assert c == triton.Config({"GROUP": 8, "BLOCK": 64}, num_warps=8, num_stages=2)
    assert c != triton.Config({"BLOCK": 64, "GROUP": 8}, num_warps=4, num_stages=2)
    import pickle
    assert pickle.loads(pickle.dumps(c)) == c


# --- tuning --------------------------------------------------------------------

def test_picks_best_and_retunes_on_new_key_and_dtype():
    bench = FakeBench([3.0, 1.0, 2.0,     # n=1000 fp32: the 2nd config wins
                       1.0, 5.0, 4.0,     # n=500 fp32: the 1st
                       4.0, 3.0, 2.0])    # n=1000 fp64: the 3rd
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench)(add_kernel)
    assert isinstance(k, triton.KernelInterface) and k.arg_names == add_kernel.arg_names
    seen = []

    def grid(meta):
        seen.append((meta["BLOCK"], meta["n"]))
        return grid1(meta)

    x, y, out = data(1000)
    k[grid](x, y, out, 1000)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 3
    assert bench.quantiles == [(0.5, 0.2, 0.8)] * 3
    assert k.best_config is CONFIGS[1]
    assert set(k.configs_timings) == set(CONFIGS)
    assert k.configs_timings[CONFIGS[1]][0] == 1.0
    assert seen[-1] == (64, 1000)               # the grid sees the config's BLOCK
    assert {b for b, _ in seen} == {32, 64, 128}  # ... and each trial's

    # same key: no tuning
    x, y, out = data(1000, seed=1)
    k[grid](x, y, out, 1000)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 3 and k.best_config is CONFIGS[1]

    # a new value of a key argument
    x, y, out = data(500)
    k[grid](x, y, out, 500)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 6 and k.best_config is CONFIGS[0]

    # a new dtype
    x, y, out = data(1000, np.float64)
    k.run(x, y, out, 1000, grid=grid)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 9 and k.best_config is CONFIGS[2]
    assert len(k.cache) == 3
    assert (1000, "float32", "float32", "float32") in k.cache

    # everything is cached now
    for dt, n in ((np.float32, 1000), (np.float32, 500), (np.float64, 1000)):
        x, y, out = data(n, dt)
        k[grid1](x, y, out, n)
        np.testing.assert_allclose(out, x + y)
    assert bench.calls == 9


def test_key_given_as_keyword():
    bench = FakeBench([2.0, 1.0, 3.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench)(add_kernel)
    x, y, out = data(300)
    k[grid1](x, y, out, n=300)
    np.testing.assert_allclose(out, x + y)
    assert k.best_config is CONFIGS[1] and (300, "float32", "float32", "float32") in k.cache


def test_default_benchmarker_and_single_config():
    # the driver's benchmarker (few repetitions) on the CPU
    k = triton.autotune(CONFIGS[:2], key=["n"], warmup=1, rep=1)(add_kernel)
    x, y, out = data(256)
    k[grid1](x, y, out, 256)
    np.testing.assert_allclose(out, x + y)
    assert k.best_config in CONFIGS[:2]
    for t in k.configs_timings.values():
        assert len(t) == 3 and 0 < t[0] < float("inf")
    # one config: launched without benchmarking
    bench = FakeBench([])
    k1 = triton.autotune([CONFIGS[2]], key=["n"], do_bench=bench)(add_kernel)
    x, y, out = data(256)
    k1[grid1](x, y, out, 256)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 0 and k1.best_config is CONFIGS[2]


def test_conflicting_kwargs():
    k = triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([1.0] * 3))(add_kernel)
    x, y, out = data(64)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK. Make sure that "
                       "you don't re-define auto-tuned symbols."):
        k[grid1](x, y, out, 64, BLOCK=64)


def test_bad_key_name():
    with pytest.raises(ValueError, match="'m' is not an argument"):
        triton.autotune(CONFIGS, key=["m"])(add_kernel)


# --- pruning -------------------------------------------------------------------

def test_early_config_prune():
    calls = []

    def prune(configs, named_args, **kwargs):
        calls.append((len(configs), dict(named_args), kwargs))
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]

    bench = FakeBench([2.0, 1.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench,
                        prune_configs_by={"early_config_prune": prune})(add_kernel)
    x, y, out = data(100)
    k[grid1](x, y, out, 100)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 2 and k.best_config is CONFIGS[1]
    assert set(k.configs_timings) == {CONFIGS[0], CONFIGS[1]}
    n_configs, named, kw = calls[0]
    assert n_configs == 3 and named["n"] == 100 and named["x_ptr"] is x
    assert kw["grid"] is grid1


def test_perf_model_top_k():
    est = {32: 3.0, 64: 1.0, 128: 2.0}
    seen = []

    def model(**kw):
        seen.append(kw)
        return est[kw["BLOCK"]]

    bench = FakeBench([5.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench,
                        prune_configs_by={"perf_model": model, "top_k": 1})(add_kernel)
    x, y, out = data(512)
    k[grid1](x, y, out, 512)
    np.testing.assert_allclose(out, x + y)
    assert bench.calls == 1 and k.best_config is CONFIGS[1]
    assert seen[0]["n"] == 512 and "num_warps" in seen[0]

    # a fraction: 2 of 3
    bench = FakeBench([5.0, 4.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench,
                        prune_configs_by={"perf_model": model, "top_k": 0.67})(add_kernel)
    x, y, out = data(512)
    k[grid1](x, y, out, 512)
    assert bench.calls == 2 and set(k.configs_timings) == {CONFIGS[1], CONFIGS[2]}
    assert k.best_config is CONFIGS[2]


# --- state around trials ---------------------------------------------------------

def test_reset_to_zero():
    x = np.arange(300, dtype=np.float32)

    def tuned(**kw):
        return triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([1.0, 2.0, 3.0], runs=3),
                               **kw)(accumulate_kernel)

    out = np.zeros(300, np.float32)
    tuned(reset_to_zero=["out_ptr"])[grid1](x, out, 300)
    np.testing.assert_array_equal(out, x)
    # without it, the 9 trials accumulate too
    out = np.zeros(300, np.float32)
    tuned()[grid1](x, out, 300)
    np.testing.assert_array_equal(out, 10 * x)


def test_restore_value():
    x = np.arange(300, dtype=np.float32)
    out = np.full(300, 7.0, np.float32)
    k = triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([1.0, 2.0, 3.0], runs=3),
                        restore_value=["out_ptr"])(accumulate_kernel)
    k[grid1](x, out, 300)
    np.testing.assert_array_equal(out, x + 7)
    # once tuned, launches go straight through
    k[grid1](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x + 7)


def test_hooks():
    events = []

    def pre(nargs):
        events.append(("pre", nargs["BLOCK"], nargs["n"]))

    def post(nargs, exception):
        events.append(("post", nargs["BLOCK"], exception))

    def cfg_pre(nargs):
        events.append(("cfg", nargs["BLOCK"]))

    configs = [triton.Config({"BLOCK": 32}, num_warps=1, pre_hook=cfg_pre),
               triton.Config({"BLOCK": 64}, num_warps=2)]
    k = triton.autotune(configs, key=["n"], do_bench=FakeBench([1.0, 2.0]),
                        pre_hook=pre, post_hook=post)(add_kernel)
    x, y, out = data(100)
    k[grid1](x, y, out, 100)
    np.testing.assert_allclose(out, x + y)
    # around each trial; the chosen config's own pre_hook also before the launch
    assert events == [("cfg", 32), ("pre", 32, 100), ("post", 32, None),
                      ("pre", 64, 100), ("post", 64, None), ("cfg", 32)]
    assert k.best_config is configs[0]
    events.clear()
    k[grid1](x, y, out, 100)
    assert events == [("cfg", 32)]


# --- failing configs -------------------------------------------------------------

def test_out_of_resources_config_skipped():
    err = triton.OutOfResources(300000, 232448, "shared memory")
    assert isinstance(err, triton.TritonError)
    assert "out of resource: shared memory" in str(err)
    bench = FakeBench([err, 5.0, 2.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench)(add_kernel)
    x, y, out = data(1000)
    k[grid1](x, y, out, 1000)
    np.testing.assert_allclose(out, x + y)
    assert k.configs_timings[CONFIGS[0]] == [float("inf")] * 3
    assert k.best_config is CONFIGS[2]


def test_config_that_does_not_compile_skipped():
    configs = [triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 64})]
    k = triton.autotune(configs, key=["n"], do_bench=FakeBench([0.5, 1.0]))(capped_kernel)
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(300, np.float32)
    k[grid1](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert k.configs_timings[configs[0]] == [float("inf")] * 3
    assert k.best_config is configs[1]


def test_other_errors_propagate():
    k = triton.autotune(CONFIGS, key=["n"],
                        do_bench=FakeBench([ZeroDivisionError("boom"), 1.0, 1.0]))(add_kernel)
    x, y, out = data(64)
    with pytest.raises(ZeroDivisionError):
        k[grid1](x, y, out, 64)


def test_compile_reports_out_of_resources():
    from ctriton.compiler.compiler import _compilation_error
    e = _compilation_error("k.py:3:0: out of resource: shared memory, Required: 300000, "
                           "Hardware limit: 232448. Reducing block sizes or `num_stages` "
                           "may help.")
    assert isinstance(e, triton.OutOfResources)
    assert (e.required, e.limit, e.name) == (300000, 232448, "shared memory")
    assert not isinstance(_compilation_error("some other error"), triton.OutOfResources)


# --- heuristics ------------------------------------------------------------------

def test_heuristics_block_from_n():
    seen = []

    def block(args):
        seen.append(dict(args))
        return triton.next_power_of_2(args["n"])

    k = triton.heuristics({"BLOCK": block})(add_kernel)
    assert k.arg_names == add_kernel.arg_names
    for n in (100, 300):
        x, y, out = data(n)
        k[grid1](x, y, out, n)
        np.testing.assert_allclose(out, x + y)
    assert seen[0]["n"] == 100 and seen[0]["x_ptr"] is not None
    assert [s["n"] for s in seen] == [100, 300]


def test_autotune_over_heuristics():
    # heuristics see the config's BLOCK
    configs = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})]
    evens = []

    def even(a):
        evens.append((a["BLOCK"], a["n"] % a["BLOCK"] == 0))
        return a["n"] % a["BLOCK"] == 0

    k = triton.autotune(configs, key=["n"], do_bench=FakeBench([2.0, 1.0, 1.0, 2.0]))(
        triton.heuristics({"EVEN": even})(even_kernel))
    x = np.arange(96, dtype=np.float32)
    out = np.zeros(96, np.float32)
    k[grid1](x, out, 96)
    np.testing.assert_array_equal(out, x + 1)
    assert k.best_config is configs[1] and (64, False) in evens and (32, True) in evens
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    k[grid1](x, out, 128)
    np.testing.assert_array_equal(out, x + 1)
    assert k.best_config is configs[0] and evens[-1] == (32, True)


def test_heuristics_over_autotune():
    configs = [triton.Config({}, num_warps=1), triton.Config({}, num_warps=2)]
    bench = FakeBench([2.0, 1.0])
    k = triton.heuristics({"BLOCK": lambda a: min(triton.next_power_of_2(a["n"]), 128)})(
        triton.autotune(configs, key=["n"], do_bench=bench)(add_kernel))
    x, y, out = data(200)
    k[grid1](x, y, out, 200)
    np.testing.assert_allclose(out, x + y)
    assert k.fn.best_config is configs[1] and bench.calls == 2
    # heuristics that set a tuned symbol conflict
    k2 = triton.heuristics({"BLOCK": lambda a: 64})(
        triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([1.0] * 3))(add_kernel))
    with pytest.raises(ValueError, match="Conflicting meta-parameters"):
        k2[grid1](x, y, out, 200)


# --- warmup, printing, the disk cache ---------------------------------------------

def test_warmup_compiles_every_config():
    @triton.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

    k = triton.autotune(CONFIGS, key=["n"],
                        prune_configs_by={"early_config_prune":
                                          lambda cs, a, **kw: cs[1:]})(scale)
    x = np.zeros(64, np.float32)
    res = k.warmup(x, x, 64, grid=(1,))
    assert len(res) == 2 and all(isinstance(r, triton.compiler.CompiledKernel) for r in res)
    assert len(scale.cache) == 2
    res = k.warmup(np.dtype(np.float32), np.dtype(np.float32), 64, grid=(1,))  # dtypes stand in for tensors
    assert len(res) == 2 and len(scale.cache) == 2


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("CTRITON_PRINT_AUTOTUNING", "1")
    k = triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([3.0, 1.0, 2.0]))(add_kernel)
    x, y, out = data(64)
    k[grid1](x, y, out, 64)
    text = capsys.readouterr().out
    assert "add_kernel" in text and "BLOCK: 64" in text and "1.0000 ms" in text
    k[grid1](x, y, out, 64)
    assert capsys.readouterr().out == ""


def test_cache_results_in_process(cache_dir):
    b1 = FakeBench([3.0, 1.0, 2.0])
    k1 = triton.autotune(CONFIGS, key=["n"], do_bench=b1, cache_results=True)(add_kernel)
    x, y, out = data(100)
    k1[grid1](x, y, out, 100)
    assert b1.calls == 3
    files = [f for _, _, fs in os.walk(cache_dir) for f in fs if f.endswith(".autotune.json")]
    assert files == ["add_kernel.autotune.json"]
    b2 = FakeBench([])
    k2 = triton.autotune(CONFIGS, key=["n"], do_bench=b2, cache_results=True)(add_kernel)
    out[:] = 0
    k2[grid1](x, y, out, 100)
    np.testing.assert_allclose(out, x + y)
    assert b2.calls == 0 and k2.best_config is CONFIGS[1]
    assert k2.configs_timings[CONFIGS[1]][0] == 1.0
    # other configs: another entry
    b3 = FakeBench([1.0, 2.0])
    triton.autotune(CONFIGS[1:], key=["n"], do_bench=b3, cache_results=True)(add_kernel)[grid1](
        x, y, out, 100)
    assert b3.calls == 2
    # a config with a pre_hook: not stored
    b4 = FakeBench([1.0, 2.0] * 2)
    cs = [triton.Config({"BLOCK": 32}, pre_hook=lambda a: None), triton.Config({"BLOCK": 64})]
    for _ in range(2):
        triton.autotune(cs, key=["n"], do_bench=b4, cache_results=True)(add_kernel)[grid1](
            x, y, out, 100)
    assert b4.calls == 4


SCRIPT = """
import sys
sys.path.insert(0, {pyroot!r})
import numpy as np
import ctriton as triton
import ctriton.language as tl

triton.runtime.driver.set_active("cpu")
calls = []

def bench(fn, quantiles=None):
    calls.append(1)
    fn()
    return [[3.0, 1.0, 2.0][len(calls) - 1]] * 3

@triton.autotune(configs=[triton.Config({{"BLOCK": 32}}), triton.Config({{"BLOCK": 64}}),
                          triton.Config({{"BLOCK": 128}})], key=["n"], do_bench=bench)
@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

x = np.arange(200, dtype=np.float32)
out = np.zeros(200, np.float32)
double[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, out, 200)
assert (out == 2 * x).all()
print("calls", len(calls), "best", double.best_config.kwargs["BLOCK"])
"""


def test_cache_results_new_process(tmp_path, cache_dir):
    script = tmp_path / "tuned.py"
    script.write_text(textwrap.dedent(SCRIPT.format(pyroot=os.path.abspath(PYROOT))))
    env = dict(os.environ, CTRITON_CACHE_DIR=str(cache_dir), CTRITON_CACHE_AUTOTUNING="1",
               CTRITON_BACKEND="cpu")

    def run():
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.split()

    assert run() == ["calls", "3", "best", "64"]
    assert run() == ["calls", "0", "best", "64"]
    env.pop("CTRITON_CACHE_AUTOTUNING")
    assert run() == ["calls", "3", "best", "64"]


# --- tutorial 03: matrix multiplication, tuned -----------------------------------

@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16,
                       "GROUP_SIZE_M": 2}, num_stages=3, num_warps=1),
        triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32,
                       "GROUP_SIZE_M": 4}, num_stages=4, num_warps=2),
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16,
                       "GROUP_SIZE_M": 8}, num_stages=2, num_warps=4),
    ],
    key=["M", "N", "K"],
    warmup=1, rep=2,
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = tl.where(accumulator >= 0, accumulator, 0.01 * accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a, b, activation=""):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    M, K = a.shape
    K, N = b.shape
    c = np.empty((M, N), dtype=np.float16)

    def grid(META):
        return (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K,
                        a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,
                        b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,
                        c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,
                        ACTIVATION=activation)
    return c


def test_tutorial_matmul_autotuned():
    rng = np.random.default_rng(0)
    for (M, N, K), act in (((64, 48, 32), ""), ((40, 72, 48), "leaky_relu"),
                           ((64, 48, 32), "")):
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        c = matmul(a, b, act)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        if act:
            ref = np.where(ref >= 0, ref, 0.01 * ref)
        np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=2e-2)
        assert matmul_kernel.best_config in matmul_kernel.configs
    assert set(matmul_kernel.cache) == {(64, 48, 32, "float16", "float16", "float16"),
                                        (40, 72, 48, "float16", "float16", "float16")}


# --- the other top-level names ------------------------------------------------------

def test_top_level_names():
    for name in ("jit", "autotune", "Config", "heuristics", "JITFunction", "KernelInterface",
                 "compile", "CompilationError", "TritonError", "OutOfResources",
                 "InterpreterError", "MockTensor", "TensorWrapper", "reinterpret",
                 "set_allocator", "cdiv", "next_power_of_2", "must_use_result", "language",
                 "testing", "runtime", "max_shared_mem"):
        assert hasattr(triton, name), name
    assert issubclass(triton.OutOfResources, triton.TritonError)
    assert issubclass(triton.CompilationError, triton.TritonError)
    assert isinstance(add_kernel, triton.KernelInterface)
    assert isinstance(add_kernel, triton.JITFunction)
    assert triton.runtime.Autotuner is type(triton.autotune(CONFIGS, key=["n"])(add_kernel))
    assert triton.max_shared_mem() > 0

    @triton.must_use_result
    def f():
        return 1
    assert f() == 1
    assert triton.must_use_result("reason")(f) is f

    from ctriton.runtime.allocation import get_allocator
    seen = []
    triton.set_allocator(lambda size, align, stream: seen.append(size))
    get_allocator()(16, 16, None)
    assert seen == [16]
    triton.set_allocator(None)
    with pytest.raises(RuntimeError, match="no allocator was set"):
        get_allocator()(16, 16, None)
    for name in ("assert_close", "do_bench", "Benchmark", "perf_report"):
        assert hasattr(triton.testing, name)


@triton.jit
def widen_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.int32), mask=m)


def test_reinterpret():
    raw = np.array([1, 127, 128, 255, 200, 0], np.uint8)
    out = np.zeros(6, np.int32)
    widen_kernel[(1,)](raw, out, 6, BLOCK=8)
    np.testing.assert_array_equal(out, raw.astype(np.int32))
    as_i8 = triton.reinterpret(raw, tl.int8)
    assert isinstance(as_i8, triton.TensorWrapper) and as_i8.dtype == tl.int8
    assert as_i8.data_ptr() == raw.ctypes.data and as_i8.numel() == 6
    assert as_i8.element_size() == 1
    widen_kernel[(1,)](as_i8, out, 6, BLOCK=8)
    np.testing.assert_array_equal(out, raw.view(np.int8).astype(np.int32))
    assert len(widen_kernel.cache) == 2   # a u8 and an i8 variant
    assert triton.reinterpret(as_i8, tl.uint16).base is raw
    assert triton.reinterpret(as_i8, raw.dtype) is raw
    with pytest.raises(TypeError):
        triton.reinterpret(3, tl.int8)


def test_configs_compile_on_a_thread_pool(monkeypatch):
    """Before the benchmark, the pruned configs compile concurrently (one
    compile per config, on the pool's threads); the benchmark then runs
    what they compiled and the best config's result is right."""
    import threading
    from ctriton import knobs
    names = []

    def hook(**kw):
        names.append(threading.current_thread().name)

    monkeypatch.setattr(knobs.runtime, "jit_post_compile_hook", hook)

    @triton.jit
    def add_again(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    bench = FakeBench([3.0, 1.0, 2.0])
    k = triton.autotune(CONFIGS, key=["n"], do_bench=bench)(add_again)
    x, y, out = data(1000)
    k[grid1](x, y, out, 1000)
    np.testing.assert_allclose(out, x + y)
    assert k.best_config is CONFIGS[1]
    pool = [n for n in names if n.startswith("ctriton-autotune")]
    assert len(pool) == len(CONFIGS), names      # each config compiled once, on the pool
    assert len(names) == len(CONFIGS)            # and not again by the benchmark or the launch

    monkeypatch.setenv("CTRITON_AUTOTUNE_THREADS", "1")
    names.clear()
    k2 = triton.autotune(CONFIGS, key=["n"], do_bench=FakeBench([1.0, 2.0, 3.0]))(add_again)
    x, y, out = data(999, np.float64)  # new variants: compiled again, one at a time on this thread
    k2[grid1](x, y, out, 999)
    np.testing.assert_allclose(out, x + y)
    assert len(names) == len(CONFIGS) and not any(n.startswith("ctriton-autotune") for n in names)
