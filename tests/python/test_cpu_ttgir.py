"""CPU: the reduce-lanes pass (a reduction that only accumulates into a
loop-carried value carries lanes of partial results instead) and the CPU's
asm["ttgir"], the IR after its passes in Triton's MLIR spelling."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def loop_reduce_kernel(x_ptr, y_ptr, n_blocks, init, OP: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr):
    rows = tl.arange(0, BM)
    acc = tl.full([BM], init, x_ptr.dtype.element_ty)
    for b in range(0, n_blocks):
        cols = b * BN + tl.arange(0, BN)
        x = tl.load(x_ptr + rows[:, None] * (n_blocks * BN) + cols[None, :])
        if OP == "sum":
            acc = acc + tl.sum(x, axis=1)
        elif OP == "max":
            acc = tl.maximum(acc, tl.max(x, axis=1))
        elif OP == "min":
            acc = tl.minimum(tl.min(x, axis=1), acc)
        else:
            tl.static_assert(OP == "xor")
            acc = acc ^ tl.xor_sum(x, axis=1)
    tl.store(y_ptr + rows, acc)


REF = {"sum": np.sum, "max": np.max, "min": np.min, "xor": np.bitwise_xor.reduce}
COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor}


@pytest.mark.parametrize("op,dt", [("sum", "float32"), ("max", "float32"), ("min", "float32"),
                                   ("sum", "int32"), ("max", "int64"), ("min", "uint32"),
                                   ("xor", "int32")])
@pytest.mark.parametrize("bn", [32, 128])
@pytest.mark.parametrize("n_blocks", [0, 1, 5])
def test_loop_reduction_lanes(op, dt, bn, n_blocks):
    bm = 8
    rng = np.random.default_rng(bn + n_blocks)
    if dt.startswith("float"):
        x = rng.standard_normal((bm, max(n_blocks, 1) * bn)).astype(dt)
        init = 0.25
    else:
        x = rng.integers(0, 1000, (bm, max(n_blocks, 1) * bn)).astype(dt)
        init = 7
    y = np.zeros(bm, dt)
    k = loop_reduce_kernel[(1,)](x, y, n_blocks, init, OP=op, BM=bm, BN=bn)
    ref = np.full(bm, init, dt)
    if n_blocks:
        ref = COMBINE[op](ref, REF[op](x[:, :n_blocks * bn], axis=1)).astype(dt)
    if dt.startswith("float"):
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(y, ref)
    ttgir = k.asm["ttgir"]
    # the loop reduces each block to 16 lanes per row; one more reduce after it
    assert ttgir.count('"tt.reduce"') == 2
    body = ttgir[ttgir.index("scf.for"):ttgir.index("scf.yield")]
    assert '"tt.reduce"' in body and f"tensor<{bm}x{bn // 16}x16x" in body
    assert re.search(rf"iter_args\(%\d+ = %\d+\) -> \(tensor<{bm}x16x", ttgir)
    # the TTIR (before the pass) keeps the reduce as written
    assert k.asm["ttir"].count('"tt.reduce"') == 1


@triton.jit
def not_rewritten_kernel(x_ptr, y_ptr, z_ptr, n_blocks, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    acc = tl.zeros([BM], tl.float32)
    prod = tl.full([BM], 1.0, tl.float32)
    for b in range(0, n_blocks):
        x = tl.load(x_ptr + rows[:, None] * (n_blocks * BN) + b * BN + tl.arange(0, BN)[None, :])
        tl.store(z_ptr + b * BM + rows, acc)       # the running sum is read each iteration
        acc = acc + tl.sum(x, axis=1)
        prod = prod * tl.sum(x, axis=1)            # the update is not the combiner
    tl.store(y_ptr + rows, acc + prod)


def test_reductions_left_alone():
    bm, bn, nb = 4, 64, 3
    x = np.random.default_rng(0).standard_normal((bm, nb * bn)).astype(np.float32)
    y = np.zeros(bm, np.float32)
    z = np.zeros((nb, bm), np.float32)
    k = not_rewritten_kernel[(1,)](x, y, z, nb, BM=bm, BN=bn)
    sums = x.reshape(bm, nb, bn).sum(axis=2)
    np.testing.assert_allclose(z, np.concatenate([[np.zeros(bm)], np.cumsum(sums, 1).T[:-1]]),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, sums.sum(1) + sums.prod(1), rtol=1e-4)
    assert k.asm["ttgir"].count('"tt.reduce"') == 2   # both stay in the loop
    assert "tensor<4x4x16xf32>" not in k.asm["ttgir"]


@triton.jit
def spelling_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.assume(n > 0)
    s = tl.sum(tl.exp(x), axis=0)
    i = 0
    while i < 3:
        i += 1
    if n > 4:
        x = x * 2.0
    y = tl.where(x > 0, x, -x) + s + i
    tl.store(y_ptr + offs, y.to(tl.float16), mask=m)


def test_ttgir_in_triton_spelling():
    x = np.linspace(-1, 1, 64).astype(np.float32)
    y = np.zeros(64, np.float16)
    k = spelling_kernel[(1,)](x, y, 64, BLOCK=64)
    np.testing.assert_allclose(y, (np.abs(x * 2) + np.exp(x).sum() + 3).astype(np.float16), rtol=1e-3)
    t = k.asm["ttgir"]
    assert t.startswith("module attributes {") and 'ttg.target = "cpu"' in t
    assert '"ttg.num-warps" = 4 : i32' in t
    assert re.search(r"tt\.func public @spelling_kernel\(%0: !tt\.ptr<f32> \{tt\.divisibility = 16 : i32\}",
                     t)
    assert "tt.get_program_id x : i32" in t
    assert "tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>" in t
    assert re.search(r"tt\.load %\d+, %\d+, %\d+ : tensor<64x!tt\.ptr<f32>>", t)
    assert re.search(r"arith\.cmpi slt, %\d+, %\d+ : tensor<64xi32>", t)
    assert re.search(r"llvm\.intr\.assume %\d+ : i1", t)
    assert re.search(r"arith\.constant (dense<)?2\.000000e\+00>? : (tensor<64x)?f32", t)
    assert "math.exp" in t and "arith.mulf" in t and "arith.select" in t
    assert re.search(r'"tt\.reduce"\(%\d+\) <\{axis = 0 : i32\}> \(\{', t)
    assert "tt.reduce.return" in t
    assert "scf.while" in t and "scf.condition(" in t and "} do {" in t
    assert "scf.if" in t and "scf.yield" in t
    assert "arith.truncf" in t and "tt.store" in t and t.rstrip().endswith("}")
    # the numbering is that of ctriton's text: the same values, the same numbers
    defs = re.compile(r"^\s*(%\d+(?:, %\d+)*) = ", re.M)
    assert defs.findall(t) == defs.findall(k.asm["ct.ttgir"])
