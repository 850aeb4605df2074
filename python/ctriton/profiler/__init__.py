"""ctriton.profiler (``triton.profiler``, Triton's "proton"): a small
scope profiler. ``start(name)`` opens a session, ``scope(name, metrics)``
times a region (device-synchronised wall time, so it includes the kernels
launched inside it) and adds its metrics (``bytes``, ``flops16`` ...) per
call, ``activate``/``deactivate`` pause recording, ``finalize()`` writes
``<name>.hatchet`` (JSON: a tree of frames with ``time (ns)``, ``count`` and
the metrics) that ``ctriton.profiler.viewer`` reads.

Kernel-level records (the ``hook="triton"`` launch metadata) are not
collected: a scope is the unit."""
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


def _sync():
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def start(name=None, *, context="shadow", data="tree", backend=None, mode=None, hook=None):
    """Opens a profiling session (one at a time); returns its id (0)."""
    if _state["session"] is not None:
        raise RuntimeError("a profiling session is already open; finalize() it first")
    _state["session"] = _Session(name, context, data)
    return 0


def activate(session=None):
    s = _state["session"]
    if s is not None:
        s.active = True


def deactivate(session=None, flushing=False):
    s = _state["session"]
    if s is not None:
        s.active = False


def _record(name, ns, metrics):
    s = _state["session"]
    if s is None or not s.active:
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
    path = s.name if s.name.endswith(".hatchet") else f"{s.name}.hatchet"
    with open(path, "w") as f:
        json.dump(_tree(s), f, indent=1)
    return path
