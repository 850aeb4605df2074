"""Corpus: loads and stores (2-D blocks with row / column masks and an
`other` value, scalar pointers, cache and eviction modifiers, volatile) and
atomics: every read-modify-write kind and compare-and-swap, with their
sem / scope, masked, uncontended (the returned old values are checked) and
contended across programs (the final memory is checked), a spin lock, and
old values used by the threads holding copies of their elements."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add

# -- 2-D masked blocks ---------------------------------------------------------------------

M, N, BM, BN = 20, 40, 16, 32
GRID2 = (2, 2)


@triton.jit
def block2d_kernel(x_ptr, o_ptr, pad_ptr, M, N, stride_x, stride_o, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_x + rn[None, :], mask=m, other=-3)
    # every loaded element, the `other` ones included, into a padded matrix
    tl.store(pad_ptr + rm[:, None] * (2 * BN) + rn[None, :], x)
    tl.store(o_ptr + rm[:, None] * stride_o + rn[None, :], x, mask=m)


def _block2d(dt):
    def args(rng):
        if np.dtype(dt).kind == "f":
            x = rng.uniform(-100, 100, (M, N)).astype(dt)
        else:
            x = rng.integers(-100, 100, (M, N)).astype(dt)
        x = np.pad(x, ((0, 0), (0, 7)), constant_values=77)     # row stride N + 7
        return [x, np.full((M, N + 5), 55, dt), np.zeros((2 * BM, 2 * BN), dt), M, N, N + 7, N + 5]

    def ref(a):
        x, o = a[0], a[1]
        o[:, :N] = x[:, :N]
        pad = np.full((2 * BM, 2 * BN), -3, dt)
        pad[:M, :N] = x[:, :N]
        return {1: o, 2: pad}

    add(f"load-store-2d-mask-{dt}", block2d_kernel, args, ref, ["load", "store", "expand_dims",
        "broadcast", "and", "cmp"], cx=dict(BM=BM, BN=BN), grid=GRID2)


for dt in ["int8", "int16", "float16", "int32", "float32", "int64", "float64"]:
    _block2d(dt)


@triton.jit
def scalar_mem_kernel(x_ptr, o_ptr, n):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)                        # scalar pointer, scalar value
    w = tl.load(x_ptr + pid + 1, mask=pid + 1 < n, other=100)
    tl.store(o_ptr + pid, v * 10 + w)
    tl.store(o_ptr + n + pid, v, mask=pid % 2 == 0)


add("load-store-scalar", scalar_mem_kernel,
    lambda rng: [rng.integers(-50, 50, 8).astype(np.int32), np.full(16, -1, np.int32), 8],
    lambda a: {1: np.concatenate([a[0] * 10 + np.append(a[0][1:], 100),
                                  np.where(np.arange(8) % 2 == 0, a[0], -1)]).astype(np.int32)},
    ["load", "store"], grid=(8,))


@triton.jit
def modifiers_kernel(x_ptr, y_ptr, o_ptr, p_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs, cache_modifier=".cg", eviction_policy="evict_last")
    b = tl.load(y_ptr + offs, volatile=True)
    c = tl.load(x_ptr + offs, cache_modifier=".ca", eviction_policy="evict_first")
    tl.store(o_ptr + offs, a + b, cache_modifier=".cs")
    tl.store(p_ptr + offs, c * 2, cache_modifier=".wb", eviction_policy="evict_first")


def _modifiers_args(rng):
    return [rng.uniform(-1, 1, 128).astype(np.float32), rng.uniform(-1, 1, 128).astype(np.float32),
            np.zeros(128, np.float32), np.zeros(128, np.float32)]


# PTX takes a cache operator or an L1 eviction priority, not both: with both,
# the eviction goes to an L2 cache policy only (createpolicy)
_MODIFIER_PTX = ["ld.volatile.global", "createpolicy.fractional.L2::evict_last.b64",
                 "createpolicy.fractional.L2::evict_first.b64", "ld.global.cg.L2::cache_hint.b32",
                 "ld.global.ca.L2::cache_hint.b32", "st.global.cs.b32", "st.global.wb.L2::cache_hint.b32"]
add("load-store-modifiers", modifiers_kernel, _modifiers_args, lambda a: {2: a[0] + a[1], 3: a[0] * 2},
    ["load", "store"], cx=dict(BLOCK=128),
    ptx={"sm80": _MODIFIER_PTX, "sm90": _MODIFIER_PTX})


# -- atomics --------------------------------------------------------------------------------------

AN, ABLOCK = 100, 64


@triton.jit
def rmw_kernel(acc_ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, SEM: tl.constexpr,
               SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(val_ptr + offs, mask=m)
    p = acc_ptr + offs
    if KIND == "add":
        old = tl.atomic_add(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "max":
        old = tl.atomic_max(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "min":
        old = tl.atomic_min(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "and":
        old = tl.atomic_and(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "or":
        old = tl.atomic_or(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "xor":
        old = tl.atomic_xor(p, v, mask=m, sem=SEM, scope=SCOPE)
    else:
        tl.static_assert(KIND == "xchg")
        old = tl.atomic_xchg(p, v, mask=m, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + offs, old, mask=m)


NP_RMW = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor, "xchg": lambda a, v: v}


def _vals(dt, rng, n):
    if np.dtype(dt).kind == "f":
        return rng.uniform(-50, 50, n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)


def _rmw(kind, dt, sem, scope, tol=None, xfail=None):
    def args(rng):
        acc = _vals(dt, rng, AN)
        if kind in ("and", "or", "xor"):
            acc = rng.integers(0, np.iinfo(dt).max, AN, dtype=dt, endpoint=True)
            v = rng.integers(0, np.iinfo(dt).max, AN, dtype=dt, endpoint=True)
        else:
            v = _vals(dt, rng, AN)
        return [acc, v, np.full(AN, 9, dt), AN]

    def ref(a):
        with np.errstate(over="ignore"):
            return {0: NP_RMW[kind](a[0], a[1]).astype(dt), 2: a[0]}

    # the order and scope in Triton's spelling: atom.global.<scope>.<sem>.<op>
    form = f"atom.global.{scope}.{sem}."
    add(f"atomic-{kind}-{dt}-{sem}-scope_{scope}", rmw_kernel, args, ref, ["atomic_rmw"],
        cx=dict(KIND=kind, SEM=sem, SCOPE=scope, BLOCK=ABLOCK), grid=(2,), tol=tol, xfail=xfail,
        ptx={"sm80": [form], "sm90": [form]})


_rmw("add", "int32", "acq_rel", "gpu")
_rmw("add", "uint32", "relaxed", "cta")
_rmw("add", "int64", "release", "sys")
_rmw("add", "uint64", "acquire", "gpu")
_rmw("add", "float32", "relaxed", "gpu")
_rmw("add", "float64", "acq_rel", "cta")
_rmw("add", "float16", "relaxed", "gpu", tol=(1e-3, 1e-2))
_rmw("max", "int32", "acquire", "gpu")
_rmw("max", "uint32", "relaxed", "sys")
_rmw("max", "int64", "acq_rel", "gpu")
_rmw("max", "float32", "acq_rel", "gpu")
_rmw("max", "float64", "relaxed", "gpu")
_rmw("min", "int32", "release", "cta")
_rmw("min", "uint64", "acq_rel", "gpu")
_rmw("min", "float32", "relaxed", "gpu")
_rmw("min", "float64", "acquire", "sys")
_rmw("and", "int32", "acq_rel", "gpu")
_rmw("and", "uint64", "relaxed", "cta")
_rmw("or", "uint32", "release", "gpu")
_rmw("or", "int64", "acq_rel", "sys")
_rmw("xor", "int32", "relaxed", "gpu")
_rmw("xor", "uint64", "acquire", "cta")
_rmw("xchg", "int32", "acq_rel", "gpu")
_rmw("xchg", "int64", "relaxed", "cta")
_rmw("xchg", "float32", "release", "gpu")


@triton.jit
def contend_kernel(acc_ptr, val_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    # every program updates the same n slots
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(val_ptr + tl.program_id(0) * n + offs, mask=m)
    if KIND == "add":
        tl.atomic_add(acc_ptr + offs, v, mask=m)
    elif KIND == "max":
        tl.atomic_max(acc_ptr + offs, v, mask=m)
    elif KIND == "min":
        tl.atomic_min(acc_ptr + offs, v, mask=m)
    else:
        tl.static_assert(KIND == "or")
        tl.atomic_or(acc_ptr + offs, v, mask=m)


def _contend(kind, dt, tol=None):
    progs, n = 16, 50

    def args(rng):
        if kind == "or":
            v = (np.uint32(1) << rng.integers(0, 32, progs * n).astype(np.uint32)).astype(dt)
            return [np.zeros(64, dt), v, n]
        return [_vals(dt, rng, 64), _vals(dt, rng, progs * n), n]

    def ref(a):
        acc, v = a[0].copy(), a[1].reshape(progs, n)
        red = {"add": np.sum, "max": np.max, "min": np.min, "or": np.bitwise_or.reduce}[kind]
        acc[:n] = NP_RMW[kind](acc[:n], red(v, axis=0).astype(dt))
        return {0: acc}

    add(f"atomic-{kind}-{dt}-contended", contend_kernel, args, ref, ["atomic_rmw"],
        cx=dict(KIND=kind, BLOCK=64), grid=(progs,), tol=tol)


_contend("add", "int32")
_contend("add", "float32", tol=(1e-5, 1e-4))
_contend("max", "int64")
_contend("min", "float32")
_contend("or", "uint32")


@triton.jit
def cas_kernel(x_ptr, cmp_ptr, val_ptr, old_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr,
               BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(x_ptr + offs, tl.load(cmp_ptr + offs), tl.load(val_ptr + offs), sem=SEM,
                        scope=SCOPE)
    tl.store(old_ptr + offs, old)


def _cas(dt, sem, scope, xfail=None):
    def args(rng):
        x = _vals(dt, rng, 64)
        cmp = np.where(np.arange(64) % 3 == 0, x, x + 1).astype(dt)     # swaps on every third
        return [x, cmp, _vals(dt, rng, 64), np.zeros(64, dt)]

    def ref(a):
        return {0: np.where(a[0] == a[1], a[2], a[0]), 3: a[0]}

    form = f"atom.global.{sem}.{scope}.cas.b{np.dtype(dt).itemsize * 8}"   # CAS: <sem>.<scope>
    add(f"atomic-cas-{dt}-{sem}-scope_{scope}", cas_kernel, args, ref, ["atomic_cas"],
        cx=dict(SEM=sem, SCOPE=scope, BLOCK=64), xfail=xfail, ptx={"sm80": [form], "sm90": [form]})


_cas("int16", "acq_rel", "gpu")
_cas("int32", "acq_rel", "gpu")
_cas("int64", "acquire", "cta")
_cas("uint32", "relaxed", "sys")
_cas("float32", "release", "gpu")   # floats swap their bits
_cas("float16", "acq_rel", "gpu")
_cas("float64", "relaxed", "cta")


@triton.jit
def cas_lock_kernel(lock_ptr, counter_ptr, log_ptr, N_ITER: tl.constexpr):
    pid = tl.program_id(0)
    for _ in range(N_ITER):
        tries = 0      # bounded: a broken lock gives a wrong count, not a hang
        while (tl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1) & (tries < 10000000):
            tries += 1
        c = tl.load(counter_ptr, volatile=True)      # plain read-modify-write under the lock
        tl.store(counter_ptr, c + 1)
        tl.store(log_ptr + c, pid)
        tl.atomic_xchg(lock_ptr, 0, sem="release")


def _lock_ref(a):
    return {0: np.zeros(1, np.int32), 1: np.array([16 * 4], np.int32),
            2: np.sort(np.repeat(np.arange(16, dtype=np.int32), 4))}


def _lock_args(rng):
    return [np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(64, -1, np.int32)]


# the log records which program took each turn, in the scheduler's order: compared sorted
add("atomic-cas-spin-lock", cas_lock_kernel, _lock_args, _lock_ref,
    ["atomic_cas", "atomic_rmw", "while", "condition", "for"], cx=dict(N_ITER=4), grid=(16,), sort=(2,))


@triton.jit
def old_copies_kernel(index_ptr, out_ptr, SIZE: tl.constexpr, OP: tl.constexpr):
    # a [SIZE, 1] atomic whose old values, broadcast against [1, SIZE], index a
    # store: every thread holding a copy of an element needs its old value
    rows = tl.arange(0, SIZE)[:, None]
    if OP == "add":
        old = tl.atomic_add(index_ptr + rows, rows, sem="relaxed")
    else:
        old = tl.atomic_cas(index_ptr + rows, tl.zeros_like(rows), rows + 100, sem="relaxed")
    tl.store(out_ptr + (old % SIZE) * SIZE + tl.arange(0, SIZE)[None, :], old + 1)


def _old_copies(size, op, warps):
    def args(rng):
        return [rng.permutation(size).astype(np.int32) + (0 if op == "add" else 1), np.zeros((size, size), np.int32)]

    def ref(a):
        idx = a[0]
        new = idx + np.arange(size) if op == "add" else idx
        out = np.zeros((size, size), np.int32)
        out[idx % size] = (idx + 1)[:, None]
        return {0: new.astype(np.int32), 1: out}

    add(f"atomic-{op}-old-value-copies-{size}x1-{warps}w", old_copies_kernel, args, ref,
        ["atomic_rmw" if op == "add" else "atomic_cas", "broadcast", "expand_dims"],
        cx=dict(SIZE=size, OP=op), options=dict(num_warps=warps))


# copies in other warps get the old values through scratch (4x1 over 4 warps),
# copies in the same warp by shuffle (the others); test_atomics.py checks how
for _size, _warps in ((4, 4), (16, 1), (16, 4)):
    for _op in ("add", "cas"):
        _old_copies(_size, _op, _warps)


@triton.jit
def ticket_kernel(cnt_ptr, ticket_ptr):
    t = tl.atomic_add(cnt_ptr, 1)            # a scalar atomic: one ticket per program
    tl.store(ticket_ptr + tl.program_id(0), t)


add("atomic-add-scalar-tickets", ticket_kernel, lambda rng: [np.zeros(1, np.int32), np.full(64, -1, np.int32)],
    lambda a: {0: np.array([64], np.int32), 1: np.arange(64, dtype=np.int32)}, ["atomic_rmw"], grid=(64,),
    sort=(1,))


@triton.jit
def bf16_atomic_kernel(acc_ptr, val_ptr, BLOCK: tl.constexpr):
    # bf16 data in uint16 arrays: the pointers are cast to bf16 pointers
    offs = tl.arange(0, BLOCK)
    p = acc_ptr.to(tl.pointer_type(tl.bfloat16)) + offs
    v = tl.load(val_ptr + offs).to(tl.bfloat16)
    tl.atomic_add(p, v, sem="relaxed")


def _bf16_atomic_args(rng):
    from cpu_util import f32_to_bf16_bits
    acc = f32_to_bf16_bits(rng.integers(-8, 8, 64).astype(np.float32))
    return [acc, rng.integers(-8, 8, 64).astype(np.float32)]


def _bf16_atomic_ref(a):
    from cpu_util import bf16_bits_to_f32, f32_to_bf16_bits
    return {0: f32_to_bf16_bits(bf16_bits_to_f32(a[0]) + a[1])}    # small integers: exact


add("atomic-add-bfloat16-relaxed-scope_gpu", bf16_atomic_kernel, _bf16_atomic_args, _bf16_atomic_ref,
    ["atomic_rmw", "bitcast"], cx=dict(BLOCK=64))


@triton.jit
def bool_kernel(m_ptr, x_ptr, o_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = tl.load(m_ptr + offs)                    # a bool array (stored as bytes)
    x = tl.load(x_ptr + offs, mask=m, other=-1)
    tl.store(o_ptr + offs, x)
    tl.store(b_ptr + offs, (x > 0) ^ m)


add("load-store-bool", bool_kernel,
    lambda rng: [rng.integers(0, 2, 64).astype(bool), rng.integers(-5, 5, 64).astype(np.int32),
                 np.zeros(64, np.int32), np.zeros(64, bool)],
    lambda a: {2: np.where(a[0], a[1], -1).astype(np.int32), 3: (np.where(a[0], a[1], -1) > 0) ^ a[0]},
    ["load", "store", "xor"], cx=dict(BLOCK=64))


@triton.jit
def wide_kernel(x_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, N: tl.constexpr):
    # a large 2-D tile with 16-byte-aligned rows: vectorized accesses
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], x * 3)


for dt, vec in [("float32", "v4.b32"), ("float16", "v4.b32"), ("int8", "v4.b32")]:
    add(f"load-store-2d-vectorized-{dt}", wide_kernel,
        lambda rng, dt=dt: [rng.integers(-20, 20, (128, 128)).astype(dt), np.zeros((128, 128), dt)],
        lambda a: {1: (a[0] * 3).astype(a[0].dtype)}, ["load", "store"], cx=dict(BM=64, BN=128, N=128),
        grid=(2,), options=dict(num_warps=8),
        ptx={b: ["ld.global." + vec, "st.global." + vec] for b in ("sm80", "sm90")})
