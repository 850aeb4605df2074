"""Standard library of ctriton.language written in the language itself:
compiled through @jit like user code."""
from ..runtime.jit import jit
from . import core


@jit
def cdiv(x, div):
    return (x + div - 1) // div


@jit
def sigmoid(x):
    return 1 / (1 + core.exp(-x))


@jit
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    if dim is None:
        d: core.constexpr = 0
    else:
        d: core.constexpr = dim
    z = x - core.max(x, d, keep_dims=True)
    num = core.exp(z)
    den = core.sum(num, d, keep_dims=True)
    return core.fdiv(num, den, ieee_rounding)


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    # programs are grouped by size_g rows; within a group, column-major order
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = core.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return new_i, new_j


@jit
def interleave(a, b):
    c = core.join(a, b)
    if len(c.shape) == 1:
        return c
    else:
        return core.reshape(c, c.shape[:-2] + (2 * c.shape[-2], ))
