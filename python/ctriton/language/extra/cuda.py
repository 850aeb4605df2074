"""tl.extra.cuda: CUDA-specific extras: libdevice, and grid dependency
control for programmatic dependent launch (a kernel launched with
``launch_pdl=True``):

``gdc_wait()`` waits until the grids this one depends on have completed and
their memory writes are visible; ``gdc_launch_dependents()`` signals that
dependent grids may start once every program has called it or finished.
Both are PTX ``griddepcontrol`` on sm_90 and later and do nothing on older
GPUs and on the CPU backend; both are safe without ``launch_pdl``.
"""
from . import libdevice  # noqa: F401


def _builtin(name):
    def stub(*args, **kwargs):
        raise RuntimeError(f"tl.extra.cuda.{name}() can only be called inside a @jit function")
    stub.__name__ = name
    stub.__qualname__ = name
    stub.__ctriton_builtin__ = name
    return stub


gdc_wait = _builtin("gdc_wait")
gdc_launch_dependents = _builtin("gdc_launch_dependents")
