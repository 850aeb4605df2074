"""knobs.runtime.launch_enter_hook / launch_exit_hook around kernel[grid]
launches (the C launch path calls them only while one is registered), the
LazyDict they receive with the kernel's @jit(launch_metadata=...), and the
profiler's hook="triton" kernel frames built on them."""
import json

import numpy as np
import pytest

import ctriton
import ctriton.language as tl
from ctriton import knobs
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


def _meta(grid, kernel, args):
    return {"name": f"{kernel.name} [n={args['n']}]", "flops32": 2.0 * args["n"],
            "bytes": 4 * args["n"], "grid": grid, "B": args["B"]}


@ctriton.jit(launch_metadata=_meta)
def fill(x_ptr, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(x_ptr + offs, offs + 1, mask=offs < n)


@ctriton.jit
def plain(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B))


@pytest.fixture
def hooks():
    rt = knobs.runtime
    saved = (list(rt.launch_enter_hook.calls), list(rt.launch_exit_hook.calls))
    yield rt
    rt.launch_enter_hook = knobs.HookChain()
    rt.launch_exit_hook = knobs.HookChain(reversed=True)
    for f in saved[0]:
        rt.launch_enter_hook.add(f)
    for f in saved[1]:
        rt.launch_exit_hook.add(f)


def test_enter_and_exit_around_each_launch(hooks):
    x = np.zeros(16, np.int32)
    log = []

    def enter(md):
        d = md.get()
        log.append(("enter", d["name"], d["flops32"], d["grid"], d["B"], d["stream"],
                    int(x[0])))

    def exit_(md):
        log.append(("exit", md.data["name"], int(x[0])))

    fill[(1,)](x, 3, B=16)  # no hooks: nothing called
    x[:] = 0
    hooks.launch_enter_hook.add(enter)
    hooks.launch_exit_hook.add(exit_)
    fill[(2,)](x, 5, B=16)
    hooks.launch_enter_hook.remove(enter)
    hooks.launch_exit_hook.remove(exit_)
    x[:] = 0
    fill[(1,)](x, 7, B=16)
    assert log == [("enter", "fill [n=5]", 10.0, (2, 1, 1), 16, 0, 0),  # before the launch
                   ("exit", "fill [n=5]", 1)]                           # after it
    assert list(x[:8]) == [1, 2, 3, 4, 5, 6, 7, 0]


def test_assigned_hook_and_kernel_without_metadata(hooks):
    seen = []
    hooks.launch_enter_hook = lambda md: seen.append(md.get()["name"])
    x = np.zeros(8, np.int32)
    plain[(1,)](x, B=8)
    hooks.launch_enter_hook = None
    plain[(1,)](x, B=8)
    assert seen == ["plain"]


def test_metadata_is_lazy_and_hook_errors_stop_the_launch(hooks):
    calls = []

    def meta(grid, kernel, args):
        calls.append(1)
        return {"name": "m"}

    @ctriton.jit(launch_metadata=meta)
    def k(x_ptr, B: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B) + 5)

    x = np.zeros(8, np.int32)
    hooks.launch_enter_hook.add(lambda md: None)  # never asks: launch_metadata not called
    k[(1,)](x, B=8)
    assert calls == [] and x[1] == 6

    def boom(md):
        raise ValueError("hook says no")
    hooks.launch_enter_hook.add(boom)
    x[:] = 0
    with pytest.raises(ValueError, match="hook says no"):
        k[(1,)](x, B=8)
    assert not x.any()  # not launched


def test_profiler_records_kernels(hooks, tmp_path, monkeypatch):
    import ctriton.profiler as proton
    from ctriton.profiler import viewer
    monkeypatch.chdir(tmp_path)
    x = np.zeros(16, np.int32)
    proton.start("k", hook="triton")
    assert hooks.launch_enter_hook.calls and hooks.launch_exit_hook.calls
    proton.deactivate()
    fill[(1,)](x, 4, B=16)  # not recorded
    proton.activate(0)
    for _ in range(3):
        fill[(1,)](x, 4, B=16)
    fill[(1,)](x, 9, B=16)
    plain[(1,)](x, B=16)
    path = proton.finalize()
    assert not hooks.launch_enter_hook.calls and not hooks.launch_exit_hook.calls
    frames = {c["frame"]["name"]: c["metrics"] for c in json.load(open(path))[0]["children"]}
    assert set(frames) == {"fill [n=4]", "fill [n=9]", "plain"}
    assert frames["fill [n=4]"]["count"] == 3 and frames["fill [n=4]"]["flops32"] == 24.0
    assert frames["fill [n=4]"]["bytes"] == 48 and "grid" not in frames["fill [n=4]"]
    assert frames["fill [n=4]"]["time (ns)"] > 0
    tree, _ = viewer.parse(["time/ms"], path)
    assert [r["name"] for r in tree][1:] == ["fill [n=4]", "fill [n=9]", "plain"]
    with pytest.raises(ValueError, match="hook"):
        proton.start("bad", hook="nope")
