from . import jit as _jit_module  # noqa: F401  (runtime.jit stays the module, as in Triton)
from .jit import JITFunction, MockTensor, TensorWrapper, reinterpret  # noqa: F401
from .driver import driver  # noqa: F401  (the DriverConfig: driver.active)
from .interface import KernelInterface  # noqa: F401
from .autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from .errors import InterpreterError, OutOfResources  # noqa: F401
from . import cache  # noqa: F401
