from .jit import JITFunction, jit  # noqa: F401
