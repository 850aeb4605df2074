"""CPU: parts of Triton's @jit interface and language that Triton's own tests
lean on: the kernel name from `repr=`, ..."""
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
    assert "@add_fp32_i32_step(" in k.asm["ttir"]
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
