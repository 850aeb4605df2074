"""CPU end-to-end: atomics (add/max/min/and/or/xor/xchg/cas), with masks,
returned old values, and many programs contending for the same words."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu

PROGS = 64
BLOCK = 32


@triton.jit
def contend_kernel(x_ptr, acc_ptr, OP: tl.constexpr, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    p = acc_ptr + offs % SLOTS
    if OP == "add":
        tl.atomic_add(p, x)
    elif OP == "max":
        tl.atomic_max(p, x)
    elif OP == "min":
        tl.atomic_min(p, x)
    elif OP == "and":
        tl.atomic_and(p, x)
    elif OP == "or":
        tl.atomic_or(p, x)
    else:
        tl.static_assert(OP == "xor")
        tl.atomic_xor(p, x)


def _contend_ref(x, init, op, slots):
    fn = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    ref = init.copy()
    cols = x.reshape(PROGS, BLOCK)
    for j in range(BLOCK):
        ref[j % slots] = fn.reduce(np.concatenate([[ref[j % slots]], cols[:, j]])).astype(ref.dtype)
    return ref


@pytest.mark.parametrize("op,dt", [
    ("add", "int32"), ("add", "int64"), ("add", "uint32"), ("add", "float32"),
    ("add", "float64"), ("max", "int32"), ("max", "uint32"), ("max", "float32"),
    ("min", "int32"), ("min", "int64"), ("min", "float32"), ("and", "int32"), ("or", "uint32"),
    ("xor", "int64"),
])
def test_contended_rmw(op, dt):
    rng = np.random.default_rng(0)
    slots = 4
    if dt.startswith("float"):
        # small integers: float sums are exact in any order
        x = rng.integers(-50, 50, PROGS * BLOCK).astype(dt)
    elif op in ("and", "or", "xor"):
        x = rng.integers(0, 1 << 30, PROGS * BLOCK).astype(dt)
        x[rng.integers(0, x.size, 40)] |= 1 << 30
    else:
        lo = 0 if dt[0] == "u" else -1000
        x = rng.integers(lo, 1000, PROGS * BLOCK).astype(dt)
    init = {"and": np.full(slots, -1).astype(dt) if dt[0] != "u" else
            np.full(slots, np.iinfo(dt).max, dt)}.get(op, np.full(slots, 3).astype(dt))
    acc = init.copy()
    contend_kernel[(PROGS,)](x, acc, op, slots, BLOCK=BLOCK)
    np.testing.assert_array_equal(acc, _contend_ref(x, init, op, slots))


@triton.jit
def old_value_kernel(acc_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_add(acc_ptr + offs, offs + 1, mask=m)
    tl.store(old_ptr + offs, old, mask=m)
    old2 = tl.atomic_max(acc_ptr + offs, 50, mask=m, sem="relaxed")
    tl.store(old_ptr + BLOCK + offs, old2, mask=m)


def test_returned_old_values_and_mask():
    acc = np.arange(32, dtype=np.int32) * 2
    old = np.full(64, -9, np.int32)
    old_value_kernel[(1,)](acc, old, 20, BLOCK=32)
    a0 = np.arange(32) * 2
    after_add = a0 + np.arange(1, 33)
    m = np.arange(32) < 20
    np.testing.assert_array_equal(old[:32][m], a0[m])
    np.testing.assert_array_equal(old[32:][m], after_add[m])
    np.testing.assert_array_equal(old[:32][~m], -9)       # masked lanes do not run
    np.testing.assert_array_equal(acc, np.where(m, np.maximum(after_add, 50), a0))


@triton.jit
def scalar_atomic_kernel(cnt_ptr, ticket_ptr):
    pid = tl.program_id(0)
    t = tl.atomic_add(cnt_ptr, 1)            # scalar atomic: unique tickets
    tl.store(ticket_ptr + pid, t)


def test_scalar_atomic_tickets_unique():
    n = 200
    cnt = np.zeros(1, np.int32)
    tickets = np.full(n, -1, np.int32)
    scalar_atomic_kernel[(n,)](cnt, tickets)
    assert cnt[0] == n
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))


@triton.jit
def xchg_kernel(slot_ptr, old_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_xchg(slot_ptr, pid + 1)
    tl.store(old_ptr + pid, old)


def test_xchg_chain_is_permutation():
    n = 100
    slot = np.zeros(1, np.int32)
    old = np.full(n, -1, np.int32)
    xchg_kernel[(n,)](slot, old)
    # every value written is read back exactly once, by the next exchanger or at the end
    np.testing.assert_array_equal(np.sort(np.append(old, slot[0])), np.arange(n + 1))


@triton.jit
def cas_lock_kernel(lock_ptr, counter_ptr, log_ptr, N_ITER: tl.constexpr):
    pid = tl.program_id(0)
    for _ in range(N_ITER):
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        c = tl.load(counter_ptr, volatile=True)      # plain read-modify-write under the lock
        tl.store(counter_ptr, c + 1)
        tl.store(log_ptr + c, pid)
        tl.atomic_xchg(lock_ptr, 0)


def test_cas_spin_lock():
    progs, iters = 16, 8
    lock = np.zeros(1, np.int32)
    counter = np.zeros(1, np.int32)
    log = np.full(progs * iters, -1, np.int32)
    cas_lock_kernel[(progs,)](lock, counter, log, iters)
    assert counter[0] == progs * iters and lock[0] == 0
    np.testing.assert_array_equal(np.bincount(log, minlength=progs), iters)


@triton.jit
def cas_block_kernel(x_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(x_ptr + offs, offs % 3, offs * 10)   # swaps where x == offs % 3
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_cas_block(dt):
    x = np.array([0, 1, 5, 0, 1, 2, 7, 1] * 4, dt)
    old = np.zeros(32, dt)
    cas_block_kernel[(1,)](x, old, BLOCK=32)
    offs = np.arange(32)
    x0 = np.array([0, 1, 5, 0, 1, 2, 7, 1] * 4, dt)
    np.testing.assert_array_equal(old, x0)
    np.testing.assert_array_equal(x, np.where(x0 == offs % 3, offs * 10, x0))


@triton.jit
def histogram_atomic_kernel(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(h_ptr + x, 1, mask=m)


def test_global_histogram_many_programs():
    rng = np.random.default_rng(1)
    n = 5000
    x = rng.integers(0, 10, n).astype(np.int32)
    h = np.zeros(10, np.int32)
    histogram_atomic_kernel[(triton.cdiv(n, 128),)](x, h, n, BLOCK=128)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=10))


# -- bfloat16 (held as uint16 bits; the CPU computes it in f32) ---------------

@triton.jit
def bf16_add_kernel(x_ptr, acc_ptr, old_ptr, n, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs).to(tl.bfloat16, bitcast=True)
    p = acc_ptr.to(tl.pointer_type(tl.bfloat16), bitcast=True) + offs % SLOTS
    m = pid * BLOCK + offs < n
    old = tl.atomic_add(p, x, mask=m)   # Triton allows only add on bf16
    tl.static_assert(old.dtype == tl.bfloat16)
    tl.store(old_ptr + pid * BLOCK + offs, old.to(tl.uint16, bitcast=True), mask=m)


def test_bf16_add_contended():
    from cpu_util import bf16_bits_to_f32, f32_to_bf16_bits
    rng = np.random.default_rng(3)
    slots, n = BLOCK, PROGS * BLOCK - 5   # the last program's tail is masked off
    # small integers whose partial sums stay below 2**8: exact in bf16, so
    # the sums do not depend on the order
    xf = rng.integers(-3, 4, PROGS * BLOCK).astype(np.float32)
    x = f32_to_bf16_bits(xf)
    init = rng.integers(-8, 8, slots).astype(np.float32)
    acc = f32_to_bf16_bits(init)
    old = np.full(PROGS * BLOCK, 0xFFFF, np.uint16)
    bf16_add_kernel[(PROGS,)](x, acc, old, n, SLOTS=slots, BLOCK=BLOCK)
    slot = np.arange(n) % BLOCK % slots
    ref = np.array([init[s] + xf[:n][slot == s].sum() for s in range(slots)], np.float32)
    np.testing.assert_array_equal(bf16_bits_to_f32(acc), ref)
    # the old values are each slot's successive states: {init} + {old + x}
    # lists every state once, as {old} + {final} does
    oldf = bf16_bits_to_f32(old[:n])
    for s in range(slots):
        o, v = oldf[slot == s], xf[:n][slot == s]
        np.testing.assert_array_equal(np.sort(np.concatenate([[init[s]], o + v])),
                                      np.sort(np.concatenate([o, [ref[s]]])))
    assert (old[n:] == 0xFFFF).all()   # masked off: nothing stored


@triton.jit
def bf16_cas_kernel(x_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr.to(tl.pointer_type(tl.bfloat16), bitcast=True) + offs
    cmp = (offs % 3).to(tl.bfloat16)
    val = (offs * 10).to(tl.bfloat16)
    old = tl.atomic_cas(p, cmp, val)   # swaps where x == offs % 3
    tl.store(old_ptr + offs, old.to(tl.uint16, bitcast=True))


def test_bf16_cas_block():
    from cpu_util import bf16_bits_to_f32, f32_to_bf16_bits
    x0 = np.array([0, 1, 5, 0, 1, 2, 7, 1] * 4, np.float32)
    x = f32_to_bf16_bits(x0)
    old = np.zeros(32, np.uint16)
    bf16_cas_kernel[(1,)](x, old, BLOCK=32)
    offs = np.arange(32)
    np.testing.assert_array_equal(bf16_bits_to_f32(old), x0)
    np.testing.assert_array_equal(bf16_bits_to_f32(x), np.where(x0 == offs % 3, offs * 10, x0))
