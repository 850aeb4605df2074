"""ctriton.profiler (``triton.profiler``, Triton's "proton"): a small
scope profiler. ``start(name)`` opens a session, ``scope(name, metrics)``
times a region (device-synchronised wall time, so it includes the kernels
launched inside it) and adds its metrics (``bytes``, ``flops16`` ...) per
call, ``activate``/``deactivate`` pause recording, ``finalize()`` writes
``<name>.hatchet`` (JSON: a tree of frames with ``time (ns)``, ``count`` and
the metrics) that ``ctriton.profiler.viewer`` reads.

``start(..., hook="triton")`` also records every kernel launch (through
``knobs.runtime.launch_enter_hook``/``launch_exit_hook``) as a frame named
by its ``@jit(launch_metadata=fn)`` (``fn(grid, metadata, args)["name"]``,
else the kernel's name) with the numeric metrics it returns (``flops16``,
``bytes`` ...): on a GPU timed by CUDA events on the launch's stream
(torch's; read back at ``finalize()``), on the CPU backend by the wall
time of the launch, which runs to completion. Frames are flat (a kernel
launched inside a scope is not nested under it)."""
import contextlib
import functools
import json
import time

from . import viewer  # noqa: F401

_state = {"session": None}


class _Session:
    def __init__(self, name, context, data):
        self.name = name or "proton"
        self.context = context
        self.data = data
        self.active = True
        self.frames = {}  # name -> {"time": ns, "count": n, metrics...}
        self.order = []
        self.hooked = False  # hook="triton": kernel launches recorded
        self.pending = []    # (name, start event, end event, metrics) to read back


_RESERVED = ("name", "function", "stream")


def _events():
    """torch.cuda's Event when kernels run on the GPU, else None."""
    import sys
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    from ..runtime.driver import driver
    return torch.cuda.Event if driver.active.backend == "cuda" else None


def _kernel_enter(md):
    s = _state["session"]
    if s is None or not s.active:
        md._ct_prof = None
        return
    import numbers
    data = md.get()
    metrics = {k: v for k, v in data.items()
               if k not in _RESERVED and isinstance(v, numbers.Number) and not isinstance(v, bool)}
    ev = _events()
    if ev is not None:
        start = ev(enable_timing=True)
        start.record()
        md._ct_prof = (s, data.get("name", "kernel"), metrics, start)
    else:
        md._ct_prof = (s, data.get("name", "kernel"), metrics, time.perf_counter_ns())


def _kernel_exit(md):
    rec = getattr(md, "_ct_prof", None)
    if rec is None:
        return
    s, name, metrics, start = rec
    if isinstance(start, int):
        _record(name, time.perf_counter_ns() - start, metrics, s)
        return
    end = type(start)(enable_timing=True)
    end.record()
    s.pending.append((name, start, end, metrics))
    if len(s.pending) >= 4096:
        _drain(s)


def _drain(s):
    """Adds the GPU times of the recorded launches (waits for them)."""
    for name, start, end, metrics in s.pending:
        end.synchronize()
        _record(name, int(start.elapsed_time(end) * 1e6), metrics, s, force=True)
    s.pending.clear()


def _hook(on):
    from .. import knobs
    rt = knobs.runtime
    if on:
        rt.launch_enter_hook.add(_kernel_enter)
        rt.launch_exit_hook.add(_kernel_exit)
    else:
        rt.launch_enter_hook.remove(_kernel_enter)
        rt.launch_exit_hook.remove(_kernel_exit)


def _sync():
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def start(name=None, *, context="shadow", data="tree", backend=None, mode=None, hook=None):
    """Opens a profiling session (one at a time); returns its id (0)."""
    if _state["session"] is not None:
        raise RuntimeError("a profiling session is already open; finalize() it first")
    if hook not in (None, "triton"):
        raise ValueError(f"profiler.start: unknown hook {hook!r} (None or 'triton')")
    s = _state["session"] = _Session(name, context, data)
    if hook == "triton":
        _hook(True)
        s.hooked = True
    return 0


def activate(session=None):
    s = _state["session"]
    if s is not None:
        s.active = True


def deactivate(session=None, flushing=False):
    s = _state["session"]
    if s is not None:
        s.active = False


def _record(name, ns, metrics, s=None, force=False):
    s = s or _state["session"]
    if s is None or not (s.active or force):
        return
    f = s.frames.get(name)
    if f is None:
        f = s.frames[name] = {"time (ns)": 0, "count": 0}
        s.order.append(name)
    f["time (ns)"] += ns
    f["count"] += 1
    for k, v in (metrics or {}).items():
        f[k] = f.get(k, 0) + v


@contextlib.contextmanager
def scope(name, metrics=None):
    """Times the region under ``name`` and adds ``metrics`` to its frame."""
    if _state["session"] is None or not _state["session"].active:
        yield
        return
    _sync()
    t0 = time.perf_counter_ns()
    try:
        yield
    finally:
        _sync()
        _record(name, time.perf_counter_ns() - t0, metrics)


def cpu_timed_scope(name, metrics=None):
    return scope(name, metrics)


def enter_scope(name, *, triton_op=False, metrics=None):
    cm = scope(name, metrics)
    cm.__enter__()
    _state.setdefault("stack", []).append(cm)
    return 0


def exit_scope(triton_op=False, metrics=None):
    stack = _state.get("stack") or []
    if stack:
        stack.pop().__exit__(None, None, None)


def profile(func=None, *, name=None, context="shadow", backend=None, mode=None, hook=None):
    """Decorator: the call runs inside a session named ``name``."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start(name or fn.__name__, context=context, hook=hook)
            try:
                return fn(*args, **kwargs)
            finally:
                finalize()
        return wrapper
    return deco(func) if func is not None else deco


def _tree(s):
    children = []
    total = 0
    for n in s.order:
        f = s.frames[n]
        total += f["time (ns)"]
        children.append({"frame": {"name": n, "type": "function"}, "metrics": dict(f),
                         "children": []})
    root = {"frame": {"name": "ROOT", "type": "function"},
            "metrics": {"time (ns)": total, "count": 0}, "children": children}
    return [root, {"version": 1, "tool": "ctriton"}]


def finalize(session=None, output_format="hatchet"):
    """Closes the session and writes ``<name>.hatchet``; returns its path."""
    s = _state["session"]
    if s is None:
        return None
    _state["session"] = None
    if s.hooked:
        _hook(False)
        _drain(s)
    path = s.name if s.name.endswith(".hatchet") else f"{s.name}.hatchet"
    with open(path, "w") as f:
        json.dump(_tree(s), f, indent=1)
    return path
