"""Standard library of ctriton.language written in the language itself:
compiled through @jit like user code."""
from ..runtime.constexpr_function import constexpr_function
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


# ---- flip, sort, topk --------------------------------------------------------
# Sorting uses a bitonic network along the last dimension. The block is viewed
# as rows (M, N), N a power of two. One compare-exchange step at distance 2**j
# reshapes a row to (N / 2**(j+1), 2, 2**j), moves the pair axis last and
# splits it: the two halves are the partners. Their minima and maxima are
# joined back in the order the element's direction asks for. The direction of
# element i is ascending when bit `s` of i equals `desc` (bits beyond the row
# are 0, so a large `s` gives one direction for the whole row).


@constexpr_function
def _log2(n):
    k = int(n).bit_length() - 1
    if n <= 0 or 1 << k != n:
        raise ValueError(f"size {n} is not a power of two")
    return k


@constexpr_function
def _last_dim(shape, dim):
    rank = len(shape)
    d = rank - 1 if dim is None else dim
    if d < 0:
        d += rank
    if d != rank - 1:
        raise ValueError(f"only the last dimension is supported (dim={dim}, rank {rank})")
    return d


@constexpr_function
def _rows(shape):
    m = 1
    for s in shape[:-1]:
        m *= s
    return m


@constexpr_function
def _with_last(shape, n):
    return tuple(shape[:-1]) + (n, )


@constexpr_function
def _axis_only(shape, dim):
    d = dim % len(shape)
    return tuple(s if i == d else 1 for i, s in enumerate(shape))


@jit
def _compare_exchange(x, M: core.constexpr, N: core.constexpr, j: core.constexpr, s: core.constexpr,
                      desc: core.constexpr):
    H: core.constexpr = N >> (j + 1)
    W: core.constexpr = 1 << j
    y = core.permute(core.reshape(x, (M, H, 2, W)), 0, 1, 3, 2)
    a, b = core.split(y)
    lo = core.minimum(a, b)
    hi = core.maximum(a, b)
    h = core.arange(0, H)[None, :, None]
    up = ((h >> (s - j - 1)) & 1) == desc
    first = core.where(up, lo, hi)
    second = core.where(up, hi, lo)
    z = core.permute(core.join(first, second), 0, 1, 3, 2)
    return core.reshape(z, (M, N))


@jit
def _bitonic_merge_rows(x, M: core.constexpr, N: core.constexpr, stage: core.constexpr, s: core.constexpr,
                        desc: core.constexpr):
    # merges bitonic runs of 2**stage elements, distances 2**(stage-1) .. 1
    for j in core.static_range(stage - 1, -1, -1):
        x = _compare_exchange(x, M, N, j, s, desc)
    return x


@jit
def sort(x, dim: core.constexpr = None, descending: core.constexpr = False):
    _last_dim(x.shape, dim)
    N: core.constexpr = x.shape[len(x.shape) - 1]
    K: core.constexpr = _log2(N)
    M: core.constexpr = _rows(x.shape)
    y = core.reshape(x, (M, N))
    for stage in core.static_range(1, K + 1):
        y = _bitonic_merge_rows(y, M, N, stage, stage, 1 if descending else 0)
    return core.reshape(y, x.shape)


@jit
def bitonic_merge(x, dim: core.constexpr = None, descending: core.constexpr = False):
    _last_dim(x.shape, dim)
    N: core.constexpr = x.shape[len(x.shape) - 1]
    K: core.constexpr = _log2(N)
    M: core.constexpr = _rows(x.shape)
    y = _bitonic_merge_rows(core.reshape(x, (M, N)), M, N, K, K, 1 if descending else 0)
    return core.reshape(y, x.shape)


@jit
def topk(x, k: core.constexpr, dim: core.constexpr = None, descending: core.constexpr = True):
    # the k largest (descending) or smallest (ascending) elements of each
    # row, in that order: sort runs of k (alternately one way and the
    # other), then halve the row repeatedly: the elementwise maximum (min)
    # of two opposite runs is a bitonic run holding the k largest (smallest)
    # of both, merged again into sorted runs
    _last_dim(x.shape, dim)
    N: core.constexpr = x.shape[len(x.shape) - 1]
    KK: core.constexpr = _log2(k)
    LN: core.constexpr = _log2(N)
    core.static_assert(k <= N, "topk: k must not exceed the size of the last dimension")
    D: core.constexpr = 1 if descending else 0
    M: core.constexpr = _rows(x.shape)
    y = core.reshape(x, (M, N))
    for stage in core.static_range(1, KK + 1):
        y = _bitonic_merge_rows(y, M, N, stage, stage, D)
    for h in core.static_range(LN - KK):
        n: core.constexpr = N >> h
        pairs = core.permute(core.reshape(y, (M, n // (2 * k), 2, k)), 0, 1, 3, 2)
        a, b = core.split(pairs)
        if descending:
            y = core.reshape(core.maximum(a, b), (M, n // 2))
        else:
            y = core.reshape(core.minimum(a, b), (M, n // 2))
        y = _bitonic_merge_rows(y, M, n // 2, KK, KK, D)
    return core.reshape(y, _with_last(x.shape, k))


@jit
def flip(x, dim: core.constexpr = None):
    D: core.constexpr = len(x.shape) - 1 if dim is None else dim % len(x.shape)
    N: core.constexpr = x.shape[D]
    idx = core.reshape(N - 1 - core.arange(0, N), _axis_only(x.shape, D))
    return core.gather(x, core.broadcast_to(idx, x.shape), D)
