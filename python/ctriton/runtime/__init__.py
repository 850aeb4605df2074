from .jit import JITFunction, MockTensor, jit  # noqa: F401
from .driver import driver  # noqa: F401  (the DriverConfig: driver.active)
from .interface import KernelInterface  # noqa: F401
from .autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from .errors import InterpreterError, OutOfResources  # noqa: F401
