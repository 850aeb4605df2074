"""ctriton: a Triton-compatible JIT compiler runtime written in C.

    import ctriton as triton
    import ctriton.language as tl
"""
from .runtime.jit import JITFunction, jit  # noqa: F401
from . import language  # noqa: F401
from .compiler.errors import CompilationError  # noqa: F401


def cdiv(x, y):
    return (x + y - 1) // y


def next_power_of_2(n):
    n -= 1
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    n |= n >> 32
    n += 1
    return n
