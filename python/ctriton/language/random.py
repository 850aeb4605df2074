"""Counter-based random numbers (Philox-4x32-10) written in the language.

philox_impl runs the rounds on four 32-bit counters with a 64-bit key; the
round function multiplies two counters by fixed constants, mixing the high
halves of the products with the other two counters and the key, which is
bumped by the Weyl constants after every round.
"""
from ..runtime.jit import jit
from . import core

N_ROUNDS_DEFAULT = 10
PHILOX_KEY_A: core.constexpr = 0x9E3779B9
PHILOX_KEY_B: core.constexpr = 0xBB67AE85
PHILOX_ROUND_A: core.constexpr = 0xD2511F53
PHILOX_ROUND_B: core.constexpr = 0xCD9E8D57


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    for _ in core.static_range(n_rounds):
        a0 = c0
        a2 = c2
        c0 = core.umulhi(PHILOX_ROUND_B, a2) ^ c1 ^ k0
        c2 = core.umulhi(PHILOX_ROUND_A, a0) ^ c3 ^ k1
        # the products and key bumps wrap by design: no overflow check
        c1 = core.mul(PHILOX_ROUND_B, a2, sanitize_overflow=False)
        c3 = core.mul(PHILOX_ROUND_A, a0, sanitize_overflow=False)
        k0 = core.add(k0, PHILOX_KEY_A, sanitize_overflow=False)
        k1 = core.add(k1, PHILOX_KEY_B, sanitize_overflow=False)
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    seed = core.to_tensor(seed)
    core.static_assert(seed.dtype.is_int(), "philox: the seed must be an integer scalar")
    seed = seed.to(core.uint64)
    c0 = core.to_tensor(c0)
    c1 = core.to_tensor(c1)
    c2 = core.to_tensor(c2)
    c3 = core.to_tensor(c3)
    c0 = c0.to(core.uint32, bitcast=True)
    c1 = c1.to(core.uint32, bitcast=True)
    c2 = c2.to(core.uint32, bitcast=True)
    c3 = c3.to(core.uint32, bitcast=True)
    k0 = (seed & 0xFFFFFFFF).to(core.uint32)
    k1 = ((seed >> 32) & 0xFFFFFFFF).to(core.uint32)
    return philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)


@jit
def randint(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    r, _, _, _ = randint4x(seed, offset, n_rounds)
    return r


@jit
def randint4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    # a 64-bit offset feeds its high half into the second counter
    lo = offset.to(core.uint32)
    zero = lo * 0
    if core.constexpr(offset.dtype.primitive_bitwidth) > 32:
        hi = (offset >> 32).to(core.uint32)
    else:
        hi = zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@jit
def uint_to_uniform_float(x):
    # the top 23 (resp. 52) bits, scaled into [0, 1)
    if x.dtype == core.uint32 or x.dtype == core.int32:
        u = x.to(core.int32, bitcast=True)
        u = core.where(u < 0, ~u, u)  # ~u == -u - 1, without overflow at the minimum
        return u.to(core.float32) * 4.6566127342e-10
    else:
        core.static_assert(x.dtype == core.uint64 or x.dtype == core.int64, "uint_to_uniform_float: 32- or 64-bit integers only")
        u = x.to(core.int64, bitcast=True)
        u = core.where(u < 0, ~u, u)  # ~u == -u - 1, without overflow at the minimum
        return u.to(core.float32) * 1.0842020432385337e-19


@jit
def rand(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@jit
def rand4x(seed, offsets, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3), uint_to_uniform_float(i4)


@jit
def pair_uniform_to_normal(u1, u2):
    # Box-Muller
    u1 = core.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = core.sqrt(-2.0 * core.log(u1))
    return r * core.cos(th), r * core.sin(th)


@jit
def randn(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@jit
def randn4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
