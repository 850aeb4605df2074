from .jit import JITFunction, MockTensor, jit  # noqa: F401
from .driver import driver  # noqa: F401  (the DriverConfig: driver.active)
