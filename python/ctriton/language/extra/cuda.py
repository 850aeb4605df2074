"""tl.extra.cuda: CUDA-specific extras: libdevice, and grid dependency
control for programmatic dependent launch (a kernel launched with
``launch_pdl=True``):

``gdc_wait()`` waits until the grids this one depends on have completed and
their memory writes are visible; ``gdc_launch_dependents()`` signals that
dependent grids may start once every program has called it or finished.
Both are PTX ``griddepcontrol`` on sm_90 and later and do nothing on older
GPUs and on the CPU backend; both are safe without ``launch_pdl``.

``num_warps()`` / ``num_threads()`` are the launch's warps and threads
(constants); ``globaltimer()`` and ``smid()`` read ``%globaltimer`` and
``%smid`` through inline PTX (GPU only).
"""
from . import libdevice  # noqa: F401
from ... import language as tl  # the jit functions below name tl (a cycle: resolved when they compile)


def _builtin(name):
    def stub(*args, **kwargs):
        raise RuntimeError(f"tl.extra.cuda.{name}() can only be called inside a @jit function")
    stub.__name__ = name
    stub.__qualname__ = name
    stub.__ctriton_builtin__ = name
    return stub


gdc_wait = _builtin("gdc_wait")
gdc_launch_dependents = _builtin("gdc_launch_dependents")
num_threads = _builtin("num_threads")  # threads of a program: num_warps * 32, a constexpr
num_warps = _builtin("num_warps")


def _jit(fn):
    from ...runtime.jit import jit
    return jit(fn)


@_jit
def globaltimer():
    """The GPU's nanosecond timer (%globaltimer), an int64; not CSE'd."""
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@_jit
def smid():
    """The id of the SM the program runs on (%smid), an int32."""
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
