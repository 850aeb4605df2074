"""sum(x[:, :, None] * y[None, :, :], axis=1) is a matmul (Triton's combine
rewrites it into tt.dot, input precision ieee): the pass
`combine-mul-reduce` (ir/passes.c) turns it into dot(x, y, 0), which
`combine-dot-add` then folds into an accumulator.

Checked in the TTIR (one dot, no reduce) and on the CPU backend against
numpy (the mul's operands either way round, inside a loop and alone); the
forms which are not an f32 matmul are left alone and still right: f16
(Triton rewrites it too, then fails to compile the f16 dot it made), a
reduce along another axis, a max, a block under 16 along M, and ints.
Compiled for sm_80 and sm_90a through ptxas with no spills; marked `gpu`,
run on the device against torch (f32 rewritten, f16 elementwise)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource


@triton.jit
def mul_sum_loop(Z, X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, BK: tl.constexpr, SWAP: tl.constexpr):
    # upstream test_dot_mulbroadcasted's kernel (Y's operand order optional)
    pidn = tl.program_id(1)
    pidm = tl.program_id(0)
    offm = tl.arange(0, BM)[:, None]
    offn = tl.arange(0, BN)[None, :]
    offak = tl.arange(0, BK)[None, :]
    offbk = tl.arange(0, BK)[:, None]
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for k in range(0, K // BK):
        x = tl.load(X + ((pidm * K * BM) + (offm * K) + (k * BK) + offak))
        y = tl.load(Y + ((pidn * BN) + (offbk * N) + (k * N * BK) + offn))
        x = tl.expand_dims(x, axis=2)
        y = tl.expand_dims(y, axis=0)
        if SWAP:
            t = tl.sum(y * x, axis=1)
        else:
            t = tl.sum(x * y, axis=1)
        acc = t + acc
    tl.store(Z + ((pidm * BM * N) + (pidn * BN) + (offm * N) + offn), acc)


@triton.jit
def mul_reduce_one(Z, X, Y, BM: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr, FORM: tl.constexpr):
    # one product block: FORM 0 the matmul, 1 the max of the products,
    # 2 the sum along N (not a matmul)
    m = tl.arange(0, BM)
    k = tl.arange(0, BK)
    n = tl.arange(0, BN)
    x = tl.load(X + m[:, None] * BK + k[None, :])
    y = tl.load(Y + k[:, None] * BN + n[None, :])
    p = x[:, :, None] * y[None, :, :]
    if FORM == 0:
        tl.store(Z + m[:, None] * BN + n[None, :], tl.sum(p, axis=1))
    elif FORM == 1:
        tl.store(Z + m[:, None] * BN + n[None, :], tl.max(p, axis=1))
    else:
        tl.store(Z + m[:, None] * BK + k[None, :], tl.sum(p, axis=2))


NP = {"fp32": np.float32, "fp16": np.float16, "i32": np.int32}


def loop_src(dt, swap=False, M=256, N=192, K=160, BM=128, BN=32, BK=32):
    sig = {"Z": "*fp32" if dt == "fp32" else "*" + dt, "X": "*" + dt, "Y": "*" + dt}
    cx = dict(M=M, N=N, K=K, BM=BM, BN=BN, BK=BK, SWAP=swap)
    sig.update({c: "constexpr" for c in cx})
    return ASTSource(mul_sum_loop, sig, cx, {})


def one_src(dt, BM, BK, BN, form):
    sig = {"Z": "*" + dt, "X": "*" + dt, "Y": "*" + dt}
    cx = dict(BM=BM, BK=BK, BN=BN, FORM=form)
    sig.update({c: "constexpr" for c in cx})
    return ASTSource(mul_reduce_one, sig, cx, {})


def ops(ttir):
    return [ln.split("=", 1)[1].split()[0] for ln in ttir.splitlines() if " = " in ln]


@pytest.mark.parametrize("swap", [False, True])
def test_loop_becomes_dot(swap):
    t = triton.compile(loop_src("fp32", swap)).asm["ct.ttir"]
    o = ops(t)
    assert o.count("dot") == 1 and "reduce" not in o
    dot = next(ln for ln in t.splitlines() if "= dot " in ln)
    assert 'input_precision = "ieee"' in dot
    # the sum accumulates in the dot: its accumulator is the loop's value
    acc = dot.split("= dot ")[1].split(" {")[0].split(", ")[2]
    assert not any(ln.strip().startswith(acc + " = constant") for ln in t.splitlines())


def test_f16_left_elementwise():
    o = ops(triton.compile(loop_src("fp16")).asm["ct.ttir"])
    assert "dot" not in o and "reduce" in o


@pytest.mark.parametrize("dt", ["fp32", "fp16"])
@pytest.mark.parametrize("swap", [False, True])
def test_loop_on_cpu(dt, swap):
    M, N, K, BM, BN, BK = 256, 192, 160, 128, 32, 32
    rs = np.random.RandomState(17)
    x = (rs.randn(M, K) * 0.1).astype(NP[dt])
    y = (rs.randn(K, N) * 0.1).astype(NP[dt])
    z = np.zeros((M, N), NP[dt])
    mul_sum_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK, swap)
    ref = x.astype(np.float32) @ y.astype(np.float32)
    np.testing.assert_allclose(z.astype(np.float32), ref, atol=1e-5 if dt == "fp32" else 2e-3, rtol=0)


@pytest.mark.parametrize("form,BM,dt,rewritten", [
    (0, 32, "fp32", True),
    (0, 32, "fp16", False),   # f16
    (1, 32, "fp32", False),   # max, not a sum
    (2, 32, "fp32", False),   # summed along N
    (0, 8, "fp32", False),    # M under 16
    (0, 32, "i32", False),    # ints
])
def test_forms(form, BM, dt, rewritten):
    BK, BN = 16, 32
    t = triton.compile(one_src(dt, BM, BK, BN, form)).asm["ct.ttir"]
    o = ops(t)
    assert ("dot" in o) == rewritten and ("reduce" in o) != rewritten
    rs = np.random.RandomState(3)
    x = rs.randint(-3, 4, (BM, BK)).astype(NP[dt])
    y = rs.randint(-3, 4, (BK, BN)).astype(NP[dt])
    p = x[:, :, None] * y[None, :, :]
    ref = {0: lambda: p.sum(1), 1: lambda: p.max(1), 2: lambda: p.sum(2)}[form]()
    z = np.zeros(ref.shape, NP[dt])
    mul_reduce_one[(1,)](z, x, y, BM, BK, BN, form)
    np.testing.assert_array_equal(z, ref.astype(NP[dt]))


@pytest.mark.parametrize("arch", [80, 90])
def test_ptxas(arch):
    k = triton.compile(loop_src("fp32"), target=GPUTarget("cuda", arch, 32))
    assert "tt.dot" in k.asm["ttir"]
    assert k.n_spills == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["fp32", "fp16"])
def test_loop_on_gpu(dt):
    import torch
    M, N, K, BM, BN, BK = 256, 192, 160, 128, 32, 32
    tdt = {"fp32": torch.float32, "fp16": torch.float16}[dt]
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(M, K, device="cuda", generator=g) * 0.1).to(tdt)
    y = (torch.randn(K, N, device="cuda", generator=g) * 0.1).to(tdt)
    z = torch.zeros(M, N, device="cuda", dtype=tdt)
    mul_sum_loop[(M // BM, N // BN)](z, x, y, M, N, K, BM, BN, BK, False)
    ref = x.float() @ y.float()
    torch.testing.assert_close(z.float(), ref, atol=1e-4 if dt == "fp32" else 2e-3, rtol=0)
