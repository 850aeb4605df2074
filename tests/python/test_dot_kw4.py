"""fp8 (e5m2) dots as mma.sync code (sm_80): tutorial 03's fp8 path, A
[M][K] and B given as b.T (K contiguous), both upcast to fp16 for the MMA;
and the same with B as it comes ([K][N]), whose slot is read byte by byte.

Both tiles go through cp.async slots and are read back into registers in
the 8-bit operand layout, 4 consecutive K elements a register group
(analysis/layout.c dot_kw4, Triton's kWidth = 4): B's slot holds it as
[N][K] (prefetch.c regs_ok, 16-byte runs down the columns), each slot is
read with ldmatrix (dot.c read_kw4_ldmatrix), and the upcast is one byte
permute a register pair (elem.c pair_e5m2_upcasts). The m16n8k16 MMA takes
each thread's 4 bytes as K 2t, 2t + 1, 2t + 8, 2t + 9 on both sides, so
the sum is the same. Before, B stayed a load each iteration, was upcast and
staged through shared memory, and A was read byte by byte: 16.7 TFLOP/s
against Triton's 466 on an H100 (128x256x128, 8 warps).

CTRITON_DOT_KW4=0 keeps the 2-wide operands (part of the key). Also here:
an int8 B^T dequantized before the dot, which now takes a transposed slot
too (read back in a blocked layout and staged, its A being fp16); and
int8 dots on mma.sync (m16n8k32, whose operands have that 4-wide layout
natively): A [M][K] and B given as [N][K] go through slots the dot reads
itself with ldmatrix (prefetch.c async_ok), as Triton does (a B given as
[K][N] through a slot as loaded, read byte by byte); before, both
were loads staged through shared memory each iteration (sm_80 loop SASS at
128x256x128 w8: 1123 instructions with 95 spill accesses -> 261; Triton
260)."""
import re
import subprocess

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from test_slot_bases import _loop  # noqa: F401 (test_fp8_mma_sync and others import it from here)


@triton.jit
def mm(A, B, C, M, N, K, stride_am, stride_bk, stride_bn, stride_cm, scale,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FORM: tl.constexpr):
    # FORM 0: tutorial 03's fp8 (the dot upcasts); 1: int8 B dequantized to fp16
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        if FORM == 1:
            b = (b.to(tl.float32) * scale).to(tl.float16)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc.to(C.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


def _compile(form, bt, cfg, arch=80):
    BM, BN, BK, warps, stages = cfg
    ab = ("*fp8e5", "*fp8e5") if form == 0 else ("*fp16", "*i8")
    sig = {"A": ab[0], "B": ab[1], "C": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "constexpr" if bt else "i32", "stride_bn": "i32" if bt else "constexpr",
           "stride_cm": "i32", "scale": "fp32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
           "FORM": "constexpr"}
    cx = dict(BM=BM, BN=BN, BK=BK, FORM=form)
    cx["stride_bk" if bt else "stride_bn"] = 1
    attrs = {n: {"divisibility": 16}
             for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bn" if bt else "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _count(body, pat):
    return sum(1 for x in body if re.search(pat, x))


CFGS = [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (64, 128, 64, 4, 4)]


@pytest.mark.parametrize("cfg", CFGS)
def test_fp8_bt_reads(cfg, monkeypatch):
    monkeypatch.delenv("CTRITON_DOT_KW4", raising=False)
    k = _compile(0, True, cfg)
    ttgir = k.asm["ct.ttgir"]
    # both operands read back from their slots in the 4-wide layout, B's slot transposed
    reads = re.findall(r"local_read[^\n]*regs = 1[^\n]*", ttgir)
    assert len(reads) == 2 and sum("transposed = 1" in r for r in reads) == 1, reads
    assert all("k_width = 4" in r for r in reads), reads
    body = _loop(k.asm["ptx"])
    assert body
    # the slots read with ldmatrix (x4, untransposed), no byte loads, nothing staged
    ldm = _count(body, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16")
    assert ldm > 0 and _count(body, r"ldmatrix") == ldm
    assert _count(body, r"ld\.shared(\.v\d)?\.(b8|u8)") == 0
    assert _count(body, r"st\.shared") == 0
    # the upcast: one prmt per pair of fp8 values, 4 registers of 4 bytes an ldmatrix
    assert 0 < _count(body, r"prmt\.b32") <= 8 * ldm


def test_fp8_bt_kw4_off(monkeypatch):
    monkeypatch.setenv("CTRITON_DOT_KW4", "0")
    ttgir = _compile(0, True, (128, 128, 128, 4, 4)).asm["ct.ttgir"]
    assert "k_width = 4" not in ttgir


def test_fp8_bt_no_spills():
    ptxas = "/usr/local/cuda/bin/ptxas"
    try:
        subprocess.run([ptxas, "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no ptxas")
    import os
    import tempfile
    for cfg in CFGS:
        ptx = _compile(0, True, cfg).asm["ptx"]
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            open(p, "w").write(ptx)
            r = subprocess.run([ptxas, "-v", "-arch=sm_80", p, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert re.search(r"0 bytes spill stores, 0 bytes spill loads", r.stderr), (cfg, r.stderr)


@pytest.mark.parametrize("cfg", CFGS)
def test_fp8_row_major_b_reads(cfg, monkeypatch):
    # B as loaded ([K][N]): its slot read byte by byte straight into the
    # 4-wide operand layout (two rows a register pair, one prmt a pair), A
    # with ldmatrix; nothing staged, both tiles through slots (B was a load
    # each iteration, upcast and staged through shared memory: sm_80 loop
    # SASS at 128x256x128 w8 1903 instructions with 968 bytes spilled ->
    # 1159 with 284; Triton 1176 with 48)
    monkeypatch.delenv("CTRITON_DOT_KW4", raising=False)
    monkeypatch.setenv("CTRITON_KN_READS", "1")
    k = _compile(0, False, cfg)
    ttgir = k.asm["ct.ttgir"]
    reads = re.findall(r"local_read[^\n]*regs = 1[^\n]*", ttgir)
    assert len(reads) == 2 and not any("transposed = 1" in r for r in reads), reads
    assert all("k_width = 4" in r for r in reads), reads
    assert len(re.findall(r"\basync_copy\b", ttgir)) >= 4  # prologue and body, A and B
    body = _loop(k.asm["ptx"])
    _, BN, BK, _, _ = cfg
    # at most one byte load per element of B a lane (a warp reading all of B)
    assert 0 < _count(body, r"ld\.shared\.(b8|u8)") <= BK * BN // 32
    assert _count(body, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16") > 0
    assert _count(body, r"st\.shared") == 0
    assert _count(body, r"prmt\.b32") > 0 and _count(body, r"shl\.b16") == 0
    monkeypatch.setenv("CTRITON_DOT_KW4", "0")
    ttgir = _compile(0, False, cfg).asm["ct.ttgir"]
    # without the 4-wide layout B still goes straight into its (2-wide) operand layout
    reads = re.findall(r"local_read[^\n]*regs = 1[^\n]*", ttgir)
    assert len(reads) == 2 and not any("k_width = 4" in r for r in reads), reads


def test_int8_bt_slot():
    # an int8 B^T dequantized: through a transposed slot now (was a load each iteration)
    ttgir = _compile(1, True, (128, 128, 64, 4, 3)).asm["ct.ttgir"]
    reads = re.findall(r"local_read[^\n]*regs = 1[^\n]*", ttgir)
    assert any("transposed = 1" in r for r in reads), reads


@pytest.mark.gpu
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("kw4", ["1", "0"])
@pytest.mark.parametrize("form,bt", [(0, True), (0, False), (1, True)])
@pytest.mark.parametrize("cfg", CFGS + [(32, 32, 32, 4, 2)])
def test_gpu(form, bt, cfg, kw4, arch, monkeypatch):
    # small integers: exact against torch, with M, N and K tails
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    if arch is None and form == 0 and torch.cuda.get_device_capability() < (8, 9):
        arch = "sm80"
    monkeypatch.setenv("CTRITON_DOT_KW4", kw4)
    BM, BN, BK, warps, stages = cfg
    M, N, K = 300, 264, 232
    g = torch.Generator(device="cuda").manual_seed(11 + form)
    a = torch.randint(-4, 5, (M, K), device="cuda", generator=g).float()
    b = torch.randint(-4, 5, (K, N), device="cuda", generator=g).float()
    scale = 0.5
    if form == 0:
        ta, tb = a.to(torch.float8_e5m2), b.to(torch.float8_e5m2)
        ref = a.double() @ b.double()
    else:
        ta, tb = a.half(), b.to(torch.int8)
        ref = a.double() @ (b.double() * scale)
    if bt:
        tb = tb.T.contiguous().T  # [K][N] with K contiguous
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    opts = {"arch": arch} if arch else {}
    mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](ta, tb, c, M, N, K, ta.stride(0), tb.stride(0), tb.stride(1),
                                                 c.stride(0), scale, BM=BM, BN=BN, BK=BK, FORM=form,
                                                 num_warps=warps, num_stages=stages, **opts)
    assert torch.equal(c.double(), ref.half().double()), (c.double() - ref).abs().max()


@triton.jit
def mm_i8(A, B, C, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)) % M
    rn = (tl.program_id(1) * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _compile_i8(bt, cfg):
    BM, BN, BK, warps, stages = cfg
    sig = {"A": "*i8", "B": "*i8", "C": "*i32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "constexpr" if bt else "i32", "stride_bn": "i32" if bt else "constexpr",
           "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    cx = dict(BM=BM, BN=BN, BK=BK)
    cx["stride_bk" if bt else "stride_bn"] = 1
    attrs = {n: {"divisibility": 16}
             for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bn" if bt else "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_i8, sig, cx, attrs), target=GPUTarget("cuda", 80, 32),
                          options={"num_warps": warps, "num_stages": stages})


@pytest.mark.parametrize("cfg", CFGS + [(64, 64, 64, 4, 3)])
def test_int8_slots(cfg):
    k = _compile_i8(True, cfg)
    ttgir = k.asm["ct.ttgir"]
    reads = re.findall(r"local_read[^\n]*", ttgir)
    # both operands from slots the dot reads itself (no regs read), B's held [N][K]
    assert len(reads) == 2 and not any("regs = 1" in r for r in reads), reads
    assert sum("transposed = 1" in r for r in reads) == 1, reads
    body = _loop(k.asm["ptx"])
    assert _count(body, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16") > 0
    assert _count(body, r"ld\.shared(\.v\d)?\.(b8|u8|s8)") == 0 and _count(body, r"st\.shared") == 0
    assert _count(body, r"ld\.global") == 0  # every tile through cp.async


def test_row_major_b_kn_reads_off(monkeypatch):
    # CTRITON_KN_READS=0: an fp8 B given as [K][N] is not read straight into
    # the 4-wide operand layout (it is staged), an int8 one stays a load
    monkeypatch.setenv("CTRITON_KN_READS", "0")
    k = _compile(0, False, (128, 128, 128, 4, 4))
    assert "k_width = 4" not in k.asm["ct.ttgir"]
    assert _count(_loop(k.asm["ptx"]), r"st\.shared") > 0
    k = _compile_i8(False, (128, 128, 128, 4, 4))
    assert len(re.findall(r"local_read[^\n]*", k.asm["ct.ttgir"])) == 1
    assert _count(_loop(k.asm["ptx"]), r"ld\.global") > 0


@pytest.mark.parametrize("cfg", CFGS + [(64, 64, 64, 4, 3)])
def test_int8_row_major_b_slot(cfg, monkeypatch):
    monkeypatch.setenv("CTRITON_KN_READS", "1")
    # B given as [K][N]: a slot as loaded, read byte by byte into the dot's
    # operand (4 K bytes a register), A with ldmatrix; no loads or staging
    k = _compile_i8(False, cfg)
    ttgir = k.asm["ct.ttgir"]
    reads = re.findall(r"local_read[^\n]*", ttgir)
    assert len(reads) == 2 and not any("regs = 1" in r or "transposed = 1" in r for r in reads), reads
    body = _loop(k.asm["ptx"])
    _, BN, BK, _, _ = cfg
    assert _count(body, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16") > 0
    assert 0 < _count(body, r"ld\.shared\.(b8|u8|s8)") <= BK * BN // 32
    assert _count(body, r"st\.shared") == 0 and _count(body, r"ld\.global") == 0


@pytest.mark.gpu
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("bt", [True, False])
@pytest.mark.parametrize("cfg", CFGS + [(64, 64, 64, 4, 3), (32, 32, 32, 4, 2)])
def test_int8_gpu(bt, cfg, arch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    BM, BN, BK, warps, stages = cfg
    M, N, K = 300, 264, 232
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randint(-128, 128, (M, K), device="cuda", generator=g).to(torch.int8)
    b = torch.randint(-128, 128, (K, N), device="cuda", generator=g).to(torch.int8)
    ref = a.long().cpu() @ b.long().cpu()
    if bt:
        b = b.T.contiguous().T
    c = torch.zeros((M, N), device="cuda", dtype=torch.int32)
    opts = {"arch": arch} if arch else {}
    mm_i8[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, a.stride(0), b.stride(0), b.stride(1),
                                                    c.stride(0), BM=BM, BN=BN, BK=BK, num_warps=warps,
                                                    num_stages=stages, **opts)
    assert torch.equal(c.cpu().long(), ref)
