"""ctriton: a Triton-compatible JIT compiler runtime written in C.

    import ctriton as triton
    import ctriton.language as tl
"""
from . import _C  # noqa: F401
from . import _toolkit
_toolkit.register()  # the nvidia-cuda-nvcc package's ptxas, if installed
from .runtime.jit import JITFunction, MockTensor, jit  # noqa: F401
from .runtime.constexpr_function import constexpr_function  # noqa: F401
from .runtime.driver import driver as _driver  # noqa: F401
from . import runtime  # noqa: F401
from .compiler import compile  # noqa: F401
from .backends.compiler import GPUTarget  # noqa: F401
from . import language  # noqa: F401
from .compiler.errors import CompilationError  # noqa: F401
from .errors import TritonError  # noqa: F401
from .runtime.interface import KernelInterface, must_use_result  # noqa: F401
from .runtime.autotuner import Config, autotune, heuristics  # noqa: F401
from .runtime.errors import InterpreterError, OutOfResources  # noqa: F401
from .runtime.allocation import set_allocator  # noqa: F401
from .runtime.tensor import TensorWrapper, reinterpret  # noqa: F401
from .runtime.driver import max_shared_mem  # noqa: F401
from . import knobs  # noqa: F401
from . import tools  # noqa: F401

__version__ = "0.1.0"
# The Triton release whose API ctriton follows (what ``triton.__version__``
# reports when ctriton stands in for triton; see ctriton.compat).
__triton_version__ = "3.6.0"


def cdiv(x, y):
    """Ceiling division: the number of blocks of size y that cover x."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    n -= 1
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    n |= n >> 32
    n += 1
    return max(n, 1)


def __getattr__(name):
    # imported when first used: `import ctriton` stays cheap
    if name in ("testing", "profiler", "compat"):
        import importlib
        return importlib.import_module("." + name, __name__)
    if name == "use_as_triton":
        from .compat import use_as_triton
        return use_as_triton
    raise AttributeError(f"module 'ctriton' has no attribute {name!r}")
