"""Tiles a dot reads only through other ops go through the cp.async slots
(analysis/prefetch.c regs_ok), as Triton pipelines every load a dot
depends on: an int8 weight dequantized to fp16, fp32 activations cast to
fp16, a tile scaled before the dot, the four halves of a tf32x3 dot; a
masked load whose `other` is not zero among them (the copies zero-fill,
the read puts `other` back). Each iteration reads the tile back into
registers in the layout its users want (`local_read {regs = 1}`,
backend/nvptx/dot.c nv_read_swizzled). Before, such a load was waited
for in its own iteration. A dot's own operand with a non-zero `other`
stays with the register prefetch (measured faster). CTRITON_ASYNC_REGS=0
keeps the loads (part of the key).

Checked on kernels compiled for sm_80 and sm_90a (no GPU needed), on the
CPU backend against numpy (which checks the kernels and references the GPU
tests use), and, marked `gpu`, against torch on the device's arch and on
sm_80 code. The slots' swizzle follows their reads (nv_regs_swizzle;
CTRITON_REGS_SWIZZLE=0 keeps the MMA layout's)."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

# FORM: 0 int8 B dequantized (times a scale), 1 fp32 A cast to fp16, 2 A scaled,
# 3 other != 0 (A cast, 1.0; B read by the dot itself, 2.0: the register
# prefetch), 4 tf32x3 on fp32 operands
FORMS = {0: ("*fp16", "*i8"), 1: ("*fp32", "*fp16"), 2: ("*fp16", "*fp16"), 3: ("*fp32", "*fp16"),
         4: ("*fp32", "*fp32")}


@triton.jit
def mm(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, scale,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FORM: tl.constexpr):
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)) % M
    rn = (tl.program_id(1) * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        ka = rk[None, :] < K - k * BK
        kb = rk[:, None] < K - k * BK
        if FORM == 0:
            a = tl.load(a_ptrs, mask=ka, other=0.0)
            b = (tl.load(b_ptrs, mask=kb, other=0).to(tl.float32) * scale).to(tl.float16)
            acc = tl.dot(a, b, acc)
        elif FORM == 1:
            a = tl.load(a_ptrs, mask=ka, other=0.0).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc)
        elif FORM == 2:
            a = (tl.load(a_ptrs, mask=ka, other=0.0) * scale).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc)
        elif FORM == 3:
            a = tl.load(a_ptrs, mask=ka, other=1.0).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=2.0)
            acc = tl.dot(a, b, acc)
        else:
            a = tl.load(a_ptrs, mask=ka, other=0.0)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _compile(arch, form, BM=128, BN=128, BK=64, warps=4, stages=3):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    ta, tb = FORMS[form]
    sig = {"A": ta, "B": tb, "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32", "scale": "fp32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "FORM": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    cx = dict(BM=BM, BN=BN, BK=BK, FORM=form)
    return triton.compile(ASTSource(mm, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _regs_reads(ttgir):
    return [ln for ln in ttgir.splitlines() if re.search(r"local_read .*regs = 1", ln)]


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_slots_read_back(arch, form):
    k = _compile(arch, form)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    reads = _regs_reads(ttgir)
    # the dequantized B, the cast or scaled A; on sm_90 the cast A's dot goes
    # one K step (16) at a time, each step reading its columns
    # (slice-register-dots)
    assert len(reads) == (4 if (arch, form) == (90, 1) else 1), ttgir
    # prologue and body, both tiles (form 3: A only, B prefetched in registers)
    assert len(re.findall(r"async_copy [^\n]*stages = [23]", ttgir)) >= (2 if form == 3 else 4)
    assert "cp.async" in ptx and "ld.shared" in ptx
    if form == 3:
        # other goes back where the mask is off: a select reads the read
        v = reads[0].split("=")[0].strip()
        assert re.search(r"= select [^\n]*" + re.escape(v) + r"\b", ttgir), ttgir


@pytest.mark.parametrize("arch", [80, 90])
def test_cast_read_into_operand_layout(arch):
    # fp32 A cast to fp16: read straight into operand A's layout, the cast
    # runs there and the MMA reads its registers (no staging in shared
    # memory: on sm_90 the warpgroup MMA takes A from registers)
    k = _compile(arch, 1)
    reads = _regs_reads(k.asm["ct.ttgir"])
    # (sm_90: one read per K step, slice-register-dots)
    assert len(reads) == (4 if arch == 90 else 1) and all("dot_op<opidx = 0" in r for r in reads), reads
    if arch == 90:
        wg = [ln for ln in k.asm["ptx"].splitlines() if "wgmma.mma_async" in ln]
        assert wg and all(re.search(r"\}, \{%r", ln) for ln in wg), wg[:2]


def test_off_keeps_loads(monkeypatch):
    monkeypatch.setenv("CTRITON_ASYNC_REGS", "0")
    ttgir = _compile(90, 1).asm["ct.ttgir"]
    assert not _regs_reads(ttgir)
    assert len(re.findall(r"(?m)^\s*%\d+ = load ", ttgir)) >= 1


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("form,changes", [(0, False), (1, True), (2, False)])
def test_regs_swizzle_follows_the_read(arch, form, changes, monkeypatch):
    # a slot only read back into registers takes the swizzle with the fewest
    # shared-memory wavefronts for its read (backend/nvptx/dot.c
    # nv_regs_swizzle): fp32 A read as operand pairs (form 1) moves off the
    # MMA layout's key; the int8 B (form 0) and the fp16 A read as operand
    # pairs (form 2) have no conflicts there and keep it
    ptx = _compile(arch, form).asm["ptx"]
    monkeypatch.setenv("CTRITON_REGS_SWIZZLE", "0")
    ptx0 = _compile(arch, form).asm["ptx"]
    assert (ptx != ptx0) == changes


def test_cast_operand_no_spills():
    # fp32 activations cast to fp16 at 128x128x64, 4 warps, 3 stages: the
    # copies hold no registers (spilled 172 bytes as a load; Triton none)
    k = _compile(90, 1)
    assert k.metadata.n_spills == 0


@pytest.mark.parametrize("arch", [80, 90])
def test_tf32x3_takes_slots(arch):
    # A is read into the tf32 operand's layout, split there (its constants
    # rematerialised in it) and read by the MMAs from registers: only B's
    # two halves are staged; 128x128x32 with 8 warps spilled 128 bytes on
    # sm_90 as loads, none now
    k = _compile(arch, 4, BM=128, BN=128, BK=32, warps=8, stages=2)
    ttgir = k.asm["ct.ttgir"]
    reads = _regs_reads(ttgir)
    assert len(reads) == 2 and "dot_op<opidx = 0" in reads[0], reads
    staged = re.findall(r"= convert_layout [^\n]*dot_op<opidx = (\d)", ttgir)
    assert staged == ["1", "1"], staged
    if arch == 90:
        assert k.metadata.n_spills == 0
        wg = [ln for ln in k.asm["ptx"].splitlines() if "wgmma.mma_async" in ln]
        assert wg and all(".tf32.tf32" in ln and re.search(r"\}, \{%r", ln) for ln in wg), wg[:1]


def _inputs(form, M, N, K, seed):
    rng = np.random.default_rng(seed)
    ta, tb = FORMS[form]
    a = rng.integers(-4, 5, (M, K)).astype(np.float32 if ta == "*fp32" else np.float16)
    if tb == "*i8":
        b = rng.integers(-100, 101, (K, N)).astype(np.int8)
    else:
        b = rng.integers(-4, 5, (K, N)).astype(np.float32 if tb == "*fp32" else np.float16)
    if form == 4:  # bits below tf32's mantissa, which tf32x3 keeps
        a = (a + rng.integers(0, 64, (M, K)) / 4096.0).astype(np.float32)
        b = (b + rng.integers(0, 64, (K, N)) / 4096.0).astype(np.float32)
    return a, b


def _reference(form, a, b, K, BK, scale):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if form == 0:
        b64 = b64 * scale
    elif form == 2:
        a64 = a64 * scale
    ref = a64 @ b64
    if form == 3:  # the K tail reads other: 1.0 in A times 2.0 in B
        ref = ref + 2.0 * (-K % BK)
    return ref


def _tol(form):
    return dict(rtol=1e-5, atol=5e-2) if form == 4 else dict(rtol=2e-3, atol=1e-1)


@requires_cpu
@pytest.mark.parametrize("form", [0, 1, 2, 3, 4])
def test_cpu(form, cpu_driver):  # noqa: F811
    M, N, K, BM, BN, BK = 40, 48, 72, 32, 32, 32
    a, b = _inputs(form, M, N, K, form)
    c = np.full((M, N), np.nan, np.float32)
    scale = 0.5
    mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, K, N, N, scale, BM=BM, BN=BN, BK=BK, FORM=form)
    np.testing.assert_allclose(c, _reference(form, a, b, K, BK, scale), **_tol(form))


@pytest.mark.gpu
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("form", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("cfg", [(128, 128, 64, 4, 3), (64, 64, 32, 4, 4), (128, 64, 32, 8, 2)])
def test_gpu(form, arch, cfg):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    BM, BN, BK, warps, stages = cfg
    M, N, K = 200, 136, 360  # M, N not multiples of the tiles, a K tail
    a, b = _inputs(form, M, N, K, 7 + form)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    c = torch.full((M, N), float("nan"), device="cuda")
    scale = 0.5
    opts = {"arch": arch} if arch else {}
    mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](ta, tb, c, M, N, K, K, N, N, scale, BM=BM, BN=BN, BK=BK,
                                                 FORM=form, num_warps=warps, num_stages=stages, **opts)
    np.testing.assert_allclose(c.cpu().numpy(), _reference(form, a, b, K, BK, scale), **_tol(form))


@triton.jit
def const_operand(X, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, WHICH: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if WHICH == 0:  # a constant A
        c = tl.dot(tl.full((BM, BK), 1.5, tl.float32), tl.load(X + rk[:, None] * BN + rn[None, :]))
    else:  # a constant B
        c = tl.dot(tl.load(X + rm[:, None] * BK + rk[None, :]), tl.full((BK, BN), 1.5, tl.float32))
    tl.store(C + rm[:, None] * BN + rn[None, :], c)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("which", [0, 1])
def test_constant_tf32_operand_staged(arch, which):
    # the split's constants are rematerialised in the tf32 operand's layout,
    # but a constant a dot reads itself is still converted to its operand
    # (a warpgroup MMA reads B from shared memory)
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"X": "*fp32", "C": "*fp32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "WHICH": "constexpr"}
    k = triton.compile(ASTSource(const_operand, sig, dict(BM=64, BN=64, BK=32, WHICH=which), {}),
                       target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
    staged = re.findall(r"= convert_layout [^\n]*dot_op<opidx = (\d)", k.asm["ct.ttgir"])
    assert sorted(staged) == ["0", "1"], staged


@pytest.mark.gpu
@pytest.mark.parametrize("which", [0, 1])
def test_constant_tf32_operand_gpu(which):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    x = torch.randint(-4, 5, (64, 64), device="cuda").float()
    c = torch.full((64, 64), float("nan"), device="cuda")
    const_operand[(1,)](x[:32] if which == 0 else x[:, :32].contiguous(), c, BM=64, BN=64, BK=32, WHICH=which)
    ref = 1.5 * (torch.ones(64, 32, device="cuda") @ x[:32] if which == 0 else x[:, :32] @ torch.ones(32, 64, device="cuda"))
    torch.testing.assert_close(c, ref)
