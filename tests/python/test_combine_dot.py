"""acc += tl.dot(a, b) accumulates in the dot (Triton's combine): the TTIR
holds dot(a, b, acc) and no add of its result, and the result is right on
the CPU backend; an add whose other operand is not available at the dot,
or a dot result used twice, is left alone."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from ctriton.compiler import ASTSource


@triton.jit
def acc_plus_dot(a_ptr, b_ptr, c_ptr, STEPS: tl.constexpr, TWICE: tl.constexpr):
    r = tl.arange(0, 16)
    acc = tl.zeros((16, 16), dtype=tl.float32)
    for s in range(STEPS):
        a = tl.load(a_ptr + s * 256 + r[:, None] * 16 + r[None, :])
        b = tl.load(b_ptr + s * 256 + r[:, None] * 16 + r[None, :])
        d = tl.dot(a, b)
        if TWICE:
            acc += d + d
        else:
            acc += d
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], acc)


def ttir(twice):
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "STEPS": "constexpr", "TWICE": "constexpr"}
    return triton.compile(ASTSource(acc_plus_dot, sig, {"STEPS": 3, "TWICE": twice})).asm["ct.ttir"]


def test_acc_plus_dot_folds():
    t = ttir(False)
    dots = [ln for ln in t.splitlines() if "= dot " in ln]
    assert len(dots) == 1
    res = dots[0].split(" = ")[0].strip()
    acc = dots[0].split("= dot ")[1].split(" {")[0].split(", ")[2]
    # the accumulator is the loop's carried value, not a zero constant ...
    assert not any(ln.strip().startswith(acc + " = ") for ln in t.splitlines())
    # ... and nothing adds the dot's result afterwards
    assert not any(" add " in ln and res in ln.split(" add ")[1] for ln in t.splitlines())


def test_used_twice_not_folded():
    t = ttir(True)
    assert " add " in t.split("= dot ")[1]


def test_result_on_cpu():
    a = np.random.rand(3, 16, 16).astype(np.float32)
    b = np.random.rand(3, 16, 16).astype(np.float32)
    for twice in (False, True):
        c = np.empty((16, 16), np.float32)
        acc_plus_dot[(1,)](a, b, c, STEPS=3, TWICE=twice)
        ref = sum(a[s] @ b[s] for s in range(3)) * (2 if twice else 1)
        np.testing.assert_allclose(c, ref, rtol=1e-4)
