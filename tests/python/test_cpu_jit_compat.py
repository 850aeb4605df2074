"""CPU: parts of Triton's @jit interface and language that Triton's own tests
lean on: the kernel name from `repr=`, read-only (tl.const) pointers,
numbers bound by plain assignment acting as scalar tensors, the
loop attributes (tl.condition, disable_licm), namedtuples built in kernels,
preload() of a cache hook's specialization data, runtime conditional
expressions with side effects, keyword loop bounds, one-element `if`
conditions, hasattr/getattr on runtime values, option errors."""
from typing import NamedTuple

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


def _name(spec):
    ones = "_".join(k for k, v in spec.constants.items() if v == 1)
    return f"add_{spec.signature['x_ptr'].lstrip('*')}_{spec.signature['n']}_{ones or 'none'}"


@triton.jit(repr=_name)
def named_kernel(x_ptr, n, step, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + step, mask=m)


def test_repr_names_the_compiled_kernel():
    x = np.zeros(16, np.float32)
    k = named_kernel[(1,)](x, 10, 1, BLOCK=16)          # step == 1: specialized to a constant
    assert k.name == "add_fp32_i32_step"
    assert "@add_fp32_i32_step(" in k.asm["ct.ttir"]
    np.testing.assert_array_equal(x, np.r_[np.ones(10), np.zeros(6)])
    k2 = named_kernel[(1,)](x, 2 ** 40, 3, BLOCK=16)   # n is an i64 now, step not a constant
    assert k2.name == "add_fp32_i64_none"
    np.testing.assert_array_equal(x, np.r_[np.full(10, 4.0), np.full(6, 3.0)])


@triton.jit(repr=lambda spec: "not a name")
def badly_named_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


def test_repr_must_give_an_identifier():
    with pytest.raises(ValueError, match="not a valid kernel name"):
        badly_named_kernel[(1,)](np.zeros(1, np.float32))


@triton.jit
def copy_kernel(src: tl.const, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m) * 2, mask=m)


def test_const_pointer_reads():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    k = copy_kernel[(1,)](x, y, 8, BLOCK=8)
    np.testing.assert_array_equal(y, x * 2)
    assert "%0: ptr<f32, const>" in k.asm["ct.ttir"]     # the read-only pointer in the IR


@triton.jit
def write_const_kernel(src: tl.const, dst, OP: tl.constexpr):
    if OP == "store":
        tl.store(src, 1.0)
    elif OP == "atomic":
        tl.atomic_add(src + tl.arange(0, 4), 1.0)
    elif OP == "cas":
        tl.atomic_cas(src, 0.0, 1.0)
    else:
        tl.store(dst, tl.load(src))   # fine


@pytest.mark.parametrize("op", ["store", "atomic", "cas"])
def test_const_pointer_rejects_writes(op):
    x = np.zeros(4, np.float32)
    with pytest.raises(triton.CompilationError, match="Cannot store to a constant pointer"):
        write_const_kernel[(1,)](x, x, OP=op)
    write_const_kernel[(1,)](x, x, OP="copy")


@triton.jit
def pick(a, b, choose_b):
    if choose_b:
        return b
    return a


@triton.jit
def mix_kernel(src: tl.const, dst, flag, MODE: tl.constexpr):
    if MODE == "if":
        if flag:
            p = src
        else:
            p = dst
    elif MODE == "ternary":
        p = src if flag else dst
    else:
        p = pick(dst, src, flag)
    tl.store(dst, tl.load(p))


@pytest.mark.parametrize("mode,msg", [("if", "Mismatched type for p"),
                                      ("ternary", "Ternary expression with dynamic condition has "
                                                  "inconsistent types"),
                                      ("call", "Return type mismatch")])
def test_const_and_plain_pointers_do_not_merge(mode, msg):
    # a runtime choice between a read-only and a writable pointer has no one
    # type (Triton's errors)
    x = np.zeros(4, np.float32)
    with pytest.raises(triton.CompilationError, match=msg):
        mix_kernel[(1,)](x, x, 3, MODE=mode)


@triton.jit
def lifted_kernel(out_ptr, lo, hi, K: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)               # a plain assignment makes a scalar tensor (Triton)
    tl.static_assert(acc.dtype == tl.int64)
    for i in range(lo, hi):
        acc += i
    k: tl.constexpr = K
    tl.static_assert(k.type == tl.constexpr_type(K))   # annotated: still a constexpr
    tl.static_assert(K.type == tl.constexpr_type(K))
    plain = K
    tl.static_assert(plain.type == tl.int32)
    f = 1.5
    tl.static_assert(f.type == tl.float32)
    offs = tl.arange(0, plain)           # and still a compile-time value where one is needed
    tl.store(out_ptr + offs, acc + offs)


def test_plain_assignment_gives_scalar_tensor_attributes():
    out = np.zeros(4, np.int64)
    lifted_kernel[(1,)](out, 2 ** 33, 2 ** 33 + 5, K=4)
    np.testing.assert_array_equal(out, sum(range(2 ** 33, 2 ** 33 + 5)) + np.arange(4))


@triton.jit
def licm_kernel(x_ptr, n, NO_LICM: tl.constexpr):
    i = 0
    while tl.condition(i < n, disable_licm=NO_LICM):
        tl.store(x_ptr + i, i * 3)
        i += 1
    for j in tl.range(n, 2 * n, disable_licm=NO_LICM):
        tl.store(x_ptr + j, -j)


@pytest.mark.parametrize("no_licm", [False, True])
def test_condition_and_disable_licm(no_licm):
    x = np.zeros(10, np.int32)
    k = licm_kernel[(1,)](x, 5, NO_LICM=no_licm)
    np.testing.assert_array_equal(x, np.r_[np.arange(5) * 3, -np.arange(5, 10)])
    # the loops carry LLVM's llvm.licm.disable loop metadata through O3
    assert ("llvm.licm.disable" in k.asm["llir"]) == no_licm
    assert k.asm["ct.ttir"].count("disable_licm = true") == (2 if no_licm else 0)


class View(NamedTuple):
    ptr: object
    n: object
    scale: object = 2


@triton.jit
def make_view(ptr, n):
    return View(ptr, n=n)


@triton.jit
def namedtuple_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    src = make_view(x_ptr, n)                  # tensors in the fields
    dst = View(ptr=y_ptr, n=n, scale=3)
    offs = tl.arange(0, BLOCK)
    c = View(1, 2)                             # every field constant: a constant namedtuple
    tl.static_assert(c.scale == 2 and c.n == 2)
    v = tl.load(src.ptr + offs, mask=offs < src.n)
    tl.store(dst.ptr + offs, v * src.scale * dst.scale, mask=offs < dst.n)


def test_namedtuple_built_in_a_kernel():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    namedtuple_kernel[(1,)](x, y, 6, BLOCK=8)
    np.testing.assert_array_equal(y, np.r_[x[:6] * 6, 0, 0])


@triton.jit
def bad_view_kernel(x_ptr, WHICH: tl.constexpr):
    if WHICH == 0:
        v = View(x_ptr)                    # n has no default
    else:
        v = View(x_ptr, 1, nope=3)
    tl.store(v.ptr, 1.0)


@pytest.mark.parametrize("which,msg", [(0, "missing field 'n'"), (1, "has no field 'nope'")])
def test_namedtuple_field_errors(which, msg):
    with pytest.raises(triton.CompilationError, match=msg):
        bad_view_kernel[(1,)](np.zeros(1, np.float32), WHICH=which)


@triton.jit
def nested_kernel(x_ptr, t, K: tl.constexpr):
    tl.store(x_ptr, t[0][0] + t[1][0] * K)


def test_preload_from_the_cache_hook(monkeypatch):
    from ctriton import knobs
    seen = {}

    def hook(*args, **kwargs):
        seen["data"] = kwargs["compile"]["specialization_data"]

    monkeypatch.setattr(knobs.runtime, "jit_cache_hook", hook)
    nested_kernel.device_caches["cpu"][0].clear()   # so that the hook sees a compilation
    x = np.zeros(1, np.int32)
    k = nested_kernel[(1,)](x, ((5,), (tl.constexpr(2),)), K=10)
    assert x[0] == 25 and seen["data"] is not None
    assert len(nested_kernel.device_caches["cpu"][0]) == 1
    again = nested_kernel.preload(seen["data"])
    assert again.hash == k.hash and again.name == k.name
    with pytest.raises(ValueError, match="not 'named_kernel'"):
        named_kernel.preload(seen["data"])


@triton.jit
def ternary_effects_kernel(x_ptr, y_ptr, out_ptr, flag):
    pid = tl.program_id(0)
    # only the side chosen runs: the other pointer may be out of bounds
    v = tl.load(x_ptr + pid) if pid % 2 == 0 else tl.load(y_ptr + pid // 2)
    tl.store(out_ptr + pid, v)
    tl.atomic_add(out_ptr + 8, 1) if flag > 0 else tl.atomic_add(out_ptr + 9, 1)   # void sides
    w = 2.5 if pid % 2 == 0 else tl.load(y_ptr + pid // 2)                          # a number side
    tl.store(out_ptr + 10 + pid, w)


def test_dynamic_ternary_runs_one_side():
    x = np.arange(8, dtype=np.float32)
    y = np.full(4, 100, np.float32)
    out = np.zeros(18, np.float32)
    ternary_effects_kernel[(8,)](x, y, out, 1)
    np.testing.assert_array_equal(out[:8], [0, 100, 2, 100, 4, 100, 6, 100])
    assert out[8] == 8 and out[9] == 0
    np.testing.assert_array_equal(out[10:], [2.5, 100] * 4)


@triton.jit
def loops_and_conditions_kernel(x_ptr, out_ptr, N: tl.constexpr):
    acc = 0
    for i in tl.static_range(0, N, step=7):      # the bounds by keyword
        acc += i
    for j in tl.range(1, 10, step=4):
        acc += j * 1000
    one = tl.load(x_ptr + tl.arange(0, 1))       # a one-element block as an `if` condition
    if one > 0:
        acc += 1000000
    s, = tl.reduce((tl.load(x_ptr + tl.arange(0, 4)),), 0, _add)   # a tuple of one: a tuple back
    c, = tl.associative_scan((tl.load(x_ptr + tl.arange(0, 4)),), 0, _add)
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, s)
    tl.store(out_ptr + 2 + tl.arange(0, 4), c)


@triton.jit
def _add(a, b):
    return a + b


def test_loop_bounds_keywords_unsplat_and_one_tuples():
    x = np.array([1, 2, 3, 4], np.int32)
    out = np.zeros(6, np.int32)
    loops_and_conditions_kernel[(1,)](x, out, N=100)
    assert out[0] == sum(range(0, 100, 7)) + 1000 * sum(range(1, 10, 4)) + 1000000
    assert out[1] == 10
    np.testing.assert_array_equal(out[2:], np.cumsum(x))


@triton.jit
def big_float_kernel(out_ptr):
    val = 1e50                                   # beyond f32: an f64, as in Triton
    tl.static_assert(val.dtype == tl.float64)
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


def test_float_literal_beyond_f32_is_f64():
    out = np.zeros(1, np.float64)
    big_float_kernel[(1,)](out)
    assert out[0] == 1e50


@triton.jit
def attr_probe_kernel(x, out_ptr):
    r = 0
    if (x is not None) and hasattr(x, "dtype") and isinstance(x.dtype, tl.pointer_type) and \
            (x.dtype.element_ty == tl.int32) and (tl.load(x) > 42):
        r = 1
    if hasattr(x, "no_such_attribute"):
        r += 10
    tl.store(out_ptr, r + getattr(x, "no_such_attribute", 100))


@pytest.mark.parametrize("arg,want", [(None, 100), (2, 100), ("big", 101), ("small", 100)])
def test_hasattr_getattr_on_runtime_values(arg, want):
    out = np.zeros(1, np.int32)
    x = {"big": np.array([100000], np.int32), "small": np.array([3], np.int32)}.get(arg, arg)
    attr_probe_kernel[(1,)](x, out)
    assert out[0] == want


@triton.jit
def empty_kernel(x):
    pass


def test_num_warps_power_of_two_error_is_both_kinds():
    x = np.zeros(1, np.float32)
    for kind in (ValueError, AssertionError):   # ctriton's and Triton's
        with pytest.raises(kind, match="must be a power of 2"):
            empty_kernel.warmup(x, grid=(1,), num_warps=3)
    empty_kernel.warmup(x, grid=(1,), num_warps=2)
