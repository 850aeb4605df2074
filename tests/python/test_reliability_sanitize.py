"""The CPU sanitizer (sanitize=True, CTRITON_SANITIZE=1): every load, store
and atomic is checked against the extent of the tensor argument its pointer
derives from; the first out-of-bounds access raises before it happens,
naming the kernel's file:line:col, the argument, the program id and the
element range. Masked-off elements are never reported."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu
HERE = os.path.dirname(os.path.abspath(__file__))
SENTINEL = -7.0


def padded(n, pad=64, dtype=np.float32, fill=SENTINEL):
    """A view of the first n elements of a bigger buffer (and the buffer)."""
    big = np.full(n + pad, fill, dtype)
    return big[:n], big


@triton.jit(sanitize=True)
def copy_unmasked(X, Y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, x * 2)


@triton.jit(sanitize=True)
def copy_masked(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m, other=0) * 2, mask=m)


def line_of(fn, text):
    """The file line of the first source line of fn containing text."""
    lines = fn.src.splitlines()
    return fn.starting_line + next(i for i, s in enumerate(lines) if text in s)


def test_unmasked_load_past_the_end_raises_and_writes_nothing_outside():
    x, bigx = padded(1000)
    x[:] = np.arange(1000)
    y, bigy = padded(1000)
    with pytest.raises(RuntimeError) as e:
        copy_unmasked[(16,)](x, y, 64)
    msg = str(e.value)
    assert "out-of-bounds load" in msg
    assert f"test_reliability_sanitize.py:{line_of(copy_unmasked, 'tl.load')}:" in msg
    assert "argument 'X'" in msg
    assert "program (15, 0, 0)" in msg
    assert "elements [960, 1023]" in msg and "[0, 1000)" in msg
    np.testing.assert_array_equal(bigy[1000:], SENTINEL)  # nothing past the end of Y
    np.testing.assert_array_equal(bigx[1000:], SENTINEL)


@triton.jit(sanitize=True)
def store_unmasked(Y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, offs.to(tl.float32))


def test_unmasked_store_past_the_end_raises_before_writing():
    y, bigy = padded(1000)
    with pytest.raises(RuntimeError) as e:
        store_unmasked[(16,)](y, 64)
    msg = str(e.value)
    assert "out-of-bounds store" in msg and "argument 'Y'" in msg
    assert f":{line_of(store_unmasked, 'tl.store')}:" in msg
    np.testing.assert_array_equal(bigy[1000:], SENTINEL)
    # the programs that ran before the failure wrote inside Y only
    done = y != SENTINEL
    np.testing.assert_array_equal(y[done], np.arange(1000, dtype=np.float32)[done])


def test_masked_kernels_pass_cleanly():
    for n in (1, 63, 64, 1000, 1023):
        x, _ = padded(n)
        x[:] = np.arange(n)
        y, bigy = padded(n)
        copy_masked[(triton.cdiv(n, 64),)](x, y, n, 64)
        np.testing.assert_array_equal(y, np.arange(n) * 2)
        np.testing.assert_array_equal(bigy[n:], SENTINEL)


@triton.jit(sanitize=True)
def tile_2d(X, Y, M, N, sxm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    p = X + rm[:, None] * sxm + rn[None, :]
    q = Y + rm[:, None] * N + rn[None, :]
    if MASK:
        m = (rm[:, None] < M) & (rn[None, :] < N)
        tl.store(q, tl.load(p, mask=m) + 1, mask=m)
    else:
        tl.store(q, tl.load(p) + 1)


def test_2d_tiles_of_a_strided_view():
    base = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    x = base[3:33, 5:25]  # 30 x 20 view, row stride 48
    y = np.zeros((30, 20), np.float32)
    tile_2d[(2,)](x, y, 30, 20, 48, 16, 32, True)
    np.testing.assert_array_equal(y, x + 1)
    with pytest.raises(RuntimeError, match="argument 'X'"):
        tile_2d[(2,)](x, y, 30, 20, 48, 16, 32, False)


@triton.jit(sanitize=True)
def loop_carried(X, Y, n_iter, BLOCK: tl.constexpr):
    ptrs = X + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n_iter):
        acc += tl.load(ptrs)
        ptrs += BLOCK
    tl.store(Y + tl.arange(0, BLOCK), acc)


def test_loop_carried_pointer():
    x = np.arange(4 * 32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    loop_carried[(1,)](x, y, 4, 32)
    np.testing.assert_array_equal(y, x.reshape(4, 32).sum(0))
    with pytest.raises(RuntimeError) as e:
        loop_carried[(1,)](x, y, 5, 32)
    assert "argument 'X'" in str(e.value) and "elements [128, 159]" in str(e.value)


@triton.jit(sanitize=True)
def before_start(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs - 1))


def test_access_before_the_start_of_a_view():
    big = np.arange(64, dtype=np.float32)
    x = big[8:40]
    y = np.zeros(32, np.float32)
    with pytest.raises(RuntimeError) as e:
        before_start[(1,)](x, y, 32)
    assert "elements [-1, 30]" in str(e.value) and "argument 'X'" in str(e.value)


@triton.jit(sanitize=True)
def atomic_hist(H, V, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(V + offs, mask=offs < n, other=0)
    tl.atomic_add(H + v, 1, mask=offs < n)


def test_atomics_are_checked():
    h, bigh = padded(8, dtype=np.int32, fill=0)
    v = np.array([0, 1, 7, 3, 3], np.int32)
    atomic_hist[(1,)](h, v, 5, 8, 8)
    np.testing.assert_array_equal(h, [1, 1, 0, 2, 0, 0, 0, 1])
    v = np.array([0, 8, 2], np.int32)
    with pytest.raises(RuntimeError) as e:
        atomic_hist[(1,)](h, v, 3, 8, 8)
    assert "out-of-bounds atomic_rmw" in str(e.value) and "argument 'H'" in str(e.value)
    np.testing.assert_array_equal(bigh[8:], 0)


@triton.jit
def plain_copy(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs))


def test_launch_option_and_cache_key():
    x, _ = padded(16)
    y, bigy = padded(16)
    plain_copy[(1,)](x, y, 16)  # in bounds, unchecked
    plain_copy[(1,)](x, y, 16, sanitize=True)
    with pytest.raises(RuntimeError, match="out-of-bounds load"):
        plain_copy[(1,)](x, y, 32, sanitize=True)
    np.testing.assert_array_equal(bigy[16:], SENTINEL)
    variants = {k.metadata.options["sanitize"]: k for k in plain_copy.cache}
    assert set(variants) == {"False", "True"}
    assert "ct_cpu_san_fail" in variants["True"].asm["llir"]
    assert "ct_cpu_san" not in variants["False"].asm["llir"]


def test_sanitize_needs_no_gpu_and_keeps_reinterpreted_views():
    base = np.zeros(16, np.uint16)
    y = triton.reinterpret(base[:8], tl.float16)
    with pytest.raises(RuntimeError, match=r"elements \[0, 15\] of argument 'Y', which has elements \[0, 8\)"):
        store_unmasked[(1,)](y, 16)


SCRIPT = """
import numpy as np, ctriton as triton, ctriton.language as tl
from ctriton.runtime.driver import driver
driver.set_active("cpu")
import test_reliability_sanitize as t
big = np.full(80, -7.0, np.float32)
try:
    t.plain_copy[(1,)](big[:16], big[40:56], 32)
except RuntimeError as e:
    print("RAISED", e)
print("TAIL", (big[56:] == -7.0).all())
"""


def test_environment_variable(tmp_path):
    env = dict(os.environ, CTRITON_SANITIZE="1", CTRITON_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([HERE, os.path.join(HERE, "..", "..", "python")]))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.search(r"RAISED out-of-bounds load at .*test_reliability_sanitize.py:\d+:\d+", r.stdout)
    assert "argument 'X'" in r.stdout and "TAIL True" in r.stdout


@triton.jit(noinline=True)
def store_helper(P, offs, v):
    tl.store(P + offs, v)


@triton.jit(sanitize=True)
def through_callee(Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    store_helper(Y, offs, offs.to(tl.float32) + n)


def test_pointer_of_unknown_origin_is_checked_against_every_argument():
    y, bigy = padded(16)
    through_callee[(1,)](y, 1, 16)  # in bounds: a callee's pointer parameter
    np.testing.assert_array_equal(y, np.arange(16) + 1)
    with pytest.raises(RuntimeError, match="out-of-bounds store at .*outside every tensor argument"):
        through_callee[(1,)](y, 1, 32)
    np.testing.assert_array_equal(bigy[16:], SENTINEL)



@triton.jit(sanitize=True)
def hinted_store(Y, n, row_ptrs, B, BLOCK: tl.constexpr):
    """A hint on a scalar argument and one on a pointer loaded from memory
    (into B, passed too so that the bounds check knows its extent)."""
    m = tl.multiple_of(n, 16)
    base = tl.multiple_of(tl.load(row_ptrs).to(tl.pointer_type(tl.float32)), 16)
    offs = tl.arange(0, BLOCK)
    tl.store(base + offs, offs.to(tl.float32), mask=offs < m)
    tl.store(Y + offs, offs.to(tl.float32) + m, mask=offs < m)


def test_scalar_hint_is_checked():
    """A multiple_of hint on a scalar (an integer, a pointer's address) that
    does not hold stops the program before anything relies on it, naming
    the hint's file:line:col, the value and the multiple; one that holds
    runs as without the sanitizer."""
    y, _ = padded(64)
    buf = np.full(64 + 8, SENTINEL, np.float32)
    ptrs = np.array([buf.ctypes.data], np.int64)
    assert buf.ctypes.data % 16 == 0
    hinted_store[(1,)](y, 32, ptrs, buf, BLOCK=64)
    np.testing.assert_array_equal(y[:32], np.arange(32) + 32)
    np.testing.assert_array_equal(buf[:32], np.arange(32))
    with pytest.raises(RuntimeError, match=r"multiple_of hint does not hold at .*:\d+:\d+ .*: 20 is not a "
                                           r"multiple of 16"):
        hinted_store[(1,)](y, 20, ptrs, buf, BLOCK=64)
    ptrs[0] += 4  # one float off: the pointer's hint fails
    with pytest.raises(RuntimeError, match=r"multiple_of hint does not hold at .*: \d+ is not a multiple of 16"):
        hinted_store[(1,)](y, 32, ptrs, buf, BLOCK=64)


@triton.jit(sanitize=True)
def store_rows(c_ptrs, lds, sizes, C, BM: tl.constexpr, BN: tl.constexpr):
    """C (passed for its extent) through a base, leading dimension and
    bounds loaded from memory: a store version-stores versions."""
    c_ptr = tl.load(c_ptrs).to(tl.pointer_type(tl.float16))
    ldc = tl.load(lds)
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    v = ((rows[:, None] * 37 + cols[None, :]) % 2048).to(tl.float16)
    tl.store(c_ptr + ldc * rows[:, None] + cols[None, :], v, mask=(rows[:, None] < M) & (cols[None, :] < N))


def test_versioned_store_hints_hold_under_the_sanitizer(monkeypatch):
    """version-stores places multiple_of hints only on values its branch
    checked: with every store versioned on the CPU and the sanitizer on,
    aligned and unaligned launches run both branches and no hint fails."""
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    for ld, off in ((64, 0), (72, 0), (67, 0), (64, 1)):
        buf = np.full(64 * ld + off + 64, -1, np.float16)
        c = buf[off:off + 64 * ld].reshape(64, ld)
        k = store_rows[(2, 2)](np.array([c.ctypes.data], np.int64), np.array([ld], np.int32),
                               np.array([64, 56], np.int32), buf, BM=32, BN=32)
        r, col = np.arange(64)[:, None], np.arange(56)[None, :]
        np.testing.assert_array_equal(c[:, :56], ((r * 37 + col) % 2048).astype(np.float16))
        assert (c[:, 56:] == -1).all() and (buf[:off] == -1).all()
        assert k.asm["ct.ttgir"].count("multiple_of") == 3  # the base, ldc and N
