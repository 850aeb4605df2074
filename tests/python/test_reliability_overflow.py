"""Integer overflow checks, as Triton's sanitize_overflow: every integer
+, -, * (and unary minus, tl.add/sub/mul, the combines of tl.sum, cumsum,
prod) on types narrower than 64 bits is also computed in 64 bits, and a
device assert fails where the result does not fit. On with debug=True
(sanitize_overflow=False turns it off) on both backends, and under the CPU
sanitizer (sanitize=True, CTRITON_SANITIZE=1). The CPU message names the
operator's file:line:col, the kernel, the program, the element and the
operands; on the GPU the PTX carries the assert."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu
PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
I32_MAX = 2**31 - 1


def line_of(fn, text):
    lines = fn.src.splitlines()
    return fn.starting_line + next(i for i, s in enumerate(lines) if text in s)


@triton.jit
def add_n(X, Y, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(X + offs)
    tl.store(Y + offs, x + n)


def test_sanitizer_reports_the_first_overflowing_element():
    x = np.arange(16, dtype=np.int32)
    x[5], x[9] = I32_MAX, I32_MAX - 1
    y = np.full(16, -1, np.int32)
    with pytest.raises(RuntimeError) as e:
        add_n[(1,)](x, y, 2, 16, sanitize=True)
    msg = str(e.value)
    line = line_of(add_n, "x + n")
    assert msg.startswith(f"int32 overflow detected for operation add at {__file__}:{line}:")
    assert "(kernel add_n, program (0, 0, 0), element 5): 2147483647 + 2 = 2147483649" in msg
    np.testing.assert_array_equal(y, -1)  # the store after the add never ran
    add_n[(1,)](x, y, 0, 16, sanitize=True)  # in range: no report
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("opts,checked", [
    ({}, False), ({"sanitize": True}, True), ({"debug": True}, True),
    ({"debug": True, "sanitize_overflow": False}, False),
    ({"sanitize": True, "sanitize_overflow": False}, False),
    ({"debug": True, "sanitize_overflow": True}, True)])
def test_when_the_check_is_on(opts, checked):
    x = np.full(4, I32_MAX, np.int32)
    y = np.zeros(4, np.int32)
    if checked:
        with pytest.raises(RuntimeError, match="int32 overflow detected for operation add"):
            add_n[(1,)](x, y, 1, 4, **opts)
    else:
        add_n[(1,)](x, y, 1, 4, **opts)
        np.testing.assert_array_equal(y, np.full(4, -2**31, np.int32))  # wraps, as on the GPU
    k = triton.compile(ASTSource(add_n, {"X": "*i32", "Y": "*i32", "n": "i32", "B": "constexpr"}, {"B": 4}),
                       target=GPUTarget("cpu", 0, 1), options=opts)
    assert ("overflow = 1" in k.asm["ct.ttir"]) == checked


def test_environment_turns_the_sanitizer_on(monkeypatch):
    monkeypatch.setenv("CTRITON_SANITIZE", "1")
    x = np.full(4, I32_MAX, np.int32)
    with pytest.raises(RuntimeError, match="overflow detected"):
        add_n[(1,)](x, np.zeros(4, np.int32), 1, 4)


@triton.jit
def arith(X, Y, n: tl.constexpr, OP: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(X + offs)  # n: a weak scalar, x's type
    if OP == "add":
        r = x + n
    elif OP == "sub":
        r = x - n
    elif OP == "mul":
        r = x * n
    elif OP == "neg":
        r = -x
    elif OP == "tl.add":
        r = tl.add(x, n)
    elif OP == "tl.add_unchecked":
        r = tl.add(x, n, sanitize_overflow=False)
    elif OP == "tl.mul_unchecked":
        r = tl.mul(x, n, sanitize_overflow=False)
    else:
        r = tl.sub(x, n)
    tl.store(Y + offs, r)


# dtype, op, operand values x, n: (in range, overflowing element, n)
CASES = [
    ("int8", "add", [27, 28], 100), ("int8", "mul", [11, 12], 11), ("int16", "sub", [10, -30000], 2769),
    ("int32", "mul", [46340, 46341], 46341), ("int32", "neg", [I32_MAX, -2**31], 0),
    ("uint32", "sub", [7, 2], 3), ("uint8", "add", [5, 250], 6), ("uint16", "mul", [255, 257], 256),
    ("int32", "tl.add", [1, I32_MAX], 1), ("int32", "tl.sub", [0, -2**31], 1),
]


@pytest.mark.parametrize("dt,op,vals,n", CASES)
def test_each_operation_and_type(dt, op, vals, n):
    x = np.array(vals, dt)
    y = np.zeros(2, dt)
    with pytest.raises(RuntimeError) as e:
        arith[(1,)](x, y, n, op, 2, sanitize=True)
    name = {"neg": "sub", "tl.add": "add", "tl.sub": "sub"}.get(op, op)
    assert f"{dt} overflow detected for operation {name} at" in str(e.value)
    assert "element 1)" in str(e.value)
    arith[(1,)](x[:1].repeat(2), y, n, op, 2, sanitize=True)  # the first value fits


@pytest.mark.parametrize("op", ["tl.add_unchecked", "tl.mul_unchecked"])
def test_opting_out_per_operation(op):
    x = np.array([I32_MAX, 3], np.int32)
    y = np.zeros(2, np.int32)
    arith[(1,)](x, y, 2, op, 2, sanitize=True, debug=True)
    want = (x.astype(np.int64) + 2 if "add" in op else x.astype(np.int64) * 2).astype(np.int32)
    np.testing.assert_array_equal(y, want)


def test_64_bit_integers_are_not_checked():
    x = np.array([2**63 - 1, 1], np.int64)
    y = np.zeros(2, np.int64)
    arith[(1,)](x, y, 1, "add", 2, sanitize=True)
    np.testing.assert_array_equal(y, [-2**63, 2])


@triton.jit
def scalar_mul(Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(Y + pid, n * BLOCK + pid)


def test_scalar_arithmetic():
    y = np.zeros(3, np.int32)
    scalar_mul[(3,)](y, 1000, 65536, sanitize=True)
    np.testing.assert_array_equal(y, 1000 * 65536 + np.arange(3))
    with pytest.raises(RuntimeError) as e:
        scalar_mul[(3,)](y, 40000, 65536, sanitize=True)
    msg = str(e.value)
    assert f":{line_of(scalar_mul, 'n * BLOCK')}:" in msg
    assert "40000 * 65536 = 2621440000" in msg and "element" not in msg


@triton.jit
def loop_sum(X, Y, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    acc = tl.zeros((B,), tl.int32)
    for i in range(n):
        acc += tl.load(X + i * B + offs)
    tl.store(Y + offs, acc)


@triton.jit
def reductions(X, Y, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(X + offs)
    tl.store(Y, tl.sum(x))
    tl.store(Y + 1 + offs, tl.cumsum(x))


def test_loops():
    x = np.full((3, 8), 2**29, np.int32)
    y = np.zeros(8, np.int32)
    loop_sum[(1,)](x, y, 3, 8, sanitize=True)  # 3 * 2**29 fits
    np.testing.assert_array_equal(y, 3 * 2**29)
    x = np.full((4, 8), 2**28, np.int32)
    x[3, 6] = 2**30 + 2**29
    with pytest.raises(RuntimeError) as e:  # 3 * 2**28 + 2**30 + 2**29 does not
        loop_sum[(1,)](x, y, 4, 8, sanitize=True)
    msg = str(e.value)
    assert f":{line_of(loop_sum, 'acc +=')}:" in msg
    assert "element 6): 805306368 + 1610612736 = 2415919104" in msg


def test_sum_and_cumsum_combines():
    y = np.zeros(9, np.int32)
    x = np.full(8, 2**27, np.int32)
    reductions[(1,)](x, y, 8, sanitize=True)
    assert y[0] == 2**30
    np.testing.assert_array_equal(y[1:], 2**27 * np.arange(1, 9))
    x = np.full(8, 2**28, np.int32)  # 8 * 2**28 = 2**31 does not fit
    with pytest.raises(RuntimeError) as e:
        reductions[(1,)](x, y, 8, sanitize=True)
    assert "int32 overflow detected for operation add" in str(e.value)
    assert f":{line_of(reductions, 'tl.sum')}:" in str(e.value)


@triton.jit
def randoms(Y, seed, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(Y + offs, tl.randint(seed, offs))
    tl.store(Y + B + offs, (tl.rand(seed, offs) * 1000).to(tl.uint32))


def test_random_numbers_wrap_by_design_and_pass():
    """Philox multiplies and adds 32-bit words modulo 2**32 on purpose; it
    opts out (tl.mul/tl.add with sanitize_overflow=False, as in Triton)."""
    a = np.zeros(256, np.uint32)
    b = np.zeros(256, np.uint32)
    randoms[(1,)](a, 1234, 128)
    randoms[(1,)](b, 1234, 128, sanitize=True, debug=True)
    np.testing.assert_array_equal(a, b)


# ---- GPU: the check is a device assert in the PTX ---------------------------

def ptx_strings(ptx):
    """The byte-array globals of the PTX, as text."""
    return [bytes(int(v) for v in body.split(",") if v.strip()).rstrip(b"\0").decode()
            for body in re.findall(r"\.global \.align 1 \.b8 \w+\[\d+\] = \{([^}]*)\}", ptx)]


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("opts,checked", [({"debug": True}, True), ({}, False),
                                          ({"debug": True, "sanitize_overflow": False}, False),
                                          ({"sanitize": True}, False)])
def test_gpu_device_assert(arch, opts, checked):
    """Only debug builds pay for the check on the GPU: the i64 add, the
    range compare and a call of __assertfail with Triton's message."""
    k = triton.compile(ASTSource(add_n, {"X": "*i32", "Y": "*i32", "n": "i32", "B": "constexpr"}, {"B": 128}),
                       target=GPUTarget("cuda", arch, 32), options=opts)
    ptx = k.asm["ptx"]
    assert ("call.uni __assertfail" in ptx) == checked
    assert ("int32 overflow detected for operation add" in ptx_strings(ptx)) == checked
    if checked:
        assert "add.s64" in ptx
    if PTXAS:
        assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"
