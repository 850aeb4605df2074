"""A @jit function whose path falls off its end while another path returns
a value returns poison there, as Triton does (ub.poison): `if c: return x`
gives x or poison. A number bound by a plain assignment is a scalar tensor
to Triton, so `a = False; if a: return x` is a runtime `if` whose result is
poison, not None. A constexpr condition still folds, leaving no return."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.compiler.errors import CompilationError


@triton.jit
def return_poison(x):
    a = False
    if a:
        return x


@triton.jit
def return_taken(x):
    a = True
    if a:
        return x


@triton.jit
def return_folded(x, FLAG: tl.constexpr):
    if FLAG:
        return x


@triton.jit
def return_none_or_value(x):
    if x > 0:
        return x
    return


@triton.jit
def poison_kernel(Out):
    zero = 0
    tl.store(Out, return_poison(zero))


@triton.jit
def taken_kernel(Out):
    seven = 7
    tl.store(Out, return_taken(seven))


@triton.jit
def folded_kernel(Out):
    tl.store(Out, return_folded(1, False))


@triton.jit
def none_or_value_kernel(Out):
    tl.store(Out, return_none_or_value(tl.load(Out)))


def compile_for(kernel, target):
    return triton.compile(ASTSource(kernel, {"Out": "*i32"}, {}), target=target)


def test_fall_through_is_poison():
    k = compile_for(poison_kernel, GPUTarget("cpu", 0, 1))
    ttir = k.asm["ct.ttir"]
    assert "= poison : i32" in ttir, ttir
    assert "ub.poison : i32" in k.asm["ttir"]  # Triton's spelling
    # the store takes the if's result: the return value, or poison where the path falls off
    assert "ub.poison : i32" in k.asm["ttgir"]  # Triton's spelling in the MLIR view


@pytest.mark.parametrize("arch", [80, 90])
def test_fall_through_on_the_gpu(arch):
    k = compile_for(poison_kernel, GPUTarget("cuda", arch, 32))
    assert "= poison : i32" in k.asm["ct.ttgir"]
    assert ".target sm_" in k.asm["ptx"]


@pytest.fixture
def cpu_driver():
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    yield
    if prev is None:
        driver.reset_active()
    else:
        driver.set_active(prev)


def test_taken_return_of_a_lifted_number(cpu_driver):
    out = np.zeros(1, np.int32)
    taken_kernel[(1,)](out)
    assert out[0] == 7


def test_constexpr_condition_still_folds():
    with pytest.raises(CompilationError, match="expected a tensor or a number, got None"):
        compile_for(folded_kernel, GPUTarget("cpu", 0, 1))


def test_explicit_none_and_a_value_differ():
    """`return` (None) on one path and a value on another is an error (Triton:
    return type mismatch); only falling off the end gives poison."""
    with pytest.raises(CompilationError, match="return different numbers of values"):
        compile_for(none_or_value_kernel, GPUTarget("cpu", 0, 1))


def test_cached_ttir_with_poison_reparses():
    """The CPU rebuilds host code from the cached TTIR: the text parses back."""
    a = compile_for(poison_kernel, GPUTarget("cpu", 0, 1))
    b = compile_for(poison_kernel, GPUTarget("cpu", 0, 1))
    assert a.asm["ttir"] == b.asm["ttir"]
