"""A warpgroup MMA whose A the loop computes in registers (a tile read back
from its cp.async slot and cast: fp32 activations to fp16 or bf16, int8 to
fp16) is split into one MMA group per K step that stays in flight while the
next step's A is read and cast (analysis/rslice.c, pass
slice-register-dots; backend/nvptx/dot.c), and A's tile takes one slot
fewer than num_stages. Before, the whole dot was waited for at the end of
each iteration, its A registers being written again by the next one.
On by default; CTRITON_RS_SLICES=0 turns it off (part of the key).

Checked on kernels compiled for sm_90a and sm_80 (no GPU needed): the
IR's steps, the PTX's groups and waits, zero spills, the shared memory;
where a disassembler is found, the SASS: no register an MMA reads as A is
written before the wait that retires its group. On the CPU backend
against numpy, and, marked `gpu`, against torch."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401


@pytest.fixture(autouse=True)
def _rs_default(monkeypatch):
    monkeypatch.delenv("CTRITON_RS_SLICES", raising=False)  # the default: on

# FORM: 0 fp32 A cast to fp16 (B fp16), 1 int8 A cast to fp16 (B fp16),
# 2 fp32 A cast to bf16 (B bf16), 3 fp32 A scaled, tf32 (B fp32: K-major in
# its slot, K steps of 8)
TYPES = {0: ("*fp32", "*fp16"), 1: ("*i8", "*fp16"), 2: ("*fp32", "*bf16"), 3: ("*fp32", "*fp32")}


@triton.jit
def mm_cast_a(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FORM: tl.constexpr):
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)) % M
    rn = (tl.program_id(1) * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        if FORM == 3:
            acc = tl.dot(a * 0.5, b, acc)
        elif FORM == 2:
            acc = tl.dot(a.to(tl.bfloat16), b, acc)
        else:
            acc = tl.dot(a.to(tl.float16), b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _compile(arch, form=0, BM=128, BN=128, BK=64, warps=4, stages=3):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    ta, tb = TYPES[form]
    sig = {"A": ta, "B": tb, "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "FORM": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_cast_a, sig, dict(BM=BM, BN=BN, BK=BK, FORM=form), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})


def _loop_ptx(ptx):
    """The PTX of the K loop: from the label the backward branch goes to,
    to that branch (the loop whose body holds the MMAs)."""
    lines = ptx.splitlines()
    for i, ln in enumerate(lines):
        m = re.search(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ln)
        if not m:
            continue
        for j in range(i):
            if lines[j].startswith(m.group(1) + ":"):
                body = "\n".join(lines[j:i + 1])
                if "wgmma.mma_async" in body:
                    return body
    return ""


CONFIGS = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (64, 64, 32, 4, 4), (128, 64, 32, 8, 2)]


@pytest.mark.parametrize("form", [0, 1, 2, 3])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_steps_in_ir_and_ptx(form, cfg):
    BM, BN, BK, warps, stages = cfg
    if form == 3 and BN == 256:
        pytest.skip("tf32 at 128x256: the accumulator and A take every register")
    k = _compile(90, form, BM, BN, BK, warps, stages)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    step = 8 if form == 3 else 16
    S = BK // step
    # one read of A's columns and one of B's rows per K step, cast, one dot each
    ka = re.findall(r"local_read [^\n]*k0 = (\d+), kfull = %d, regs = 1" % BK, ttgir)
    kb = re.findall(r"local_read [^\n]*k0 = (\d+), kfull = %d, scratch_offset" % BK, ttgir)
    assert ka == [str(step * j) for j in range(S)] and kb == ka, ttgir
    assert len(re.findall(r"= dot [^\n]*rs_pending = %d\b" % (S - 1), ttgir)) == S
    assert "wgmma_inflight = 1" in ttgir and "barrier {wgmma_pending = %d}" % (S - 1) in ttgir
    # A's tile in one slot fewer than B's (num_stages, or fewer where the
    # slots do not fit: tf32 at 128x128x64)
    sa = set(re.findall(r"async_copy [^\n]*buffer = 0, [^\n]*stages = (\d+)", ttgir))
    sb = set(re.findall(r"async_copy [^\n]*buffer = 1, [^\n]*stages = (\d+)", ttgir))
    assert len(sa) == 1 and len(sb) == 1 and int(sa.pop()) == int(sb.pop()) - 1, (sa, sb)
    # the loop: a commit and a wait for all but S - 1 groups per step, A from
    # registers, and nothing waits for every group
    body = _loop_ptx(ptx)
    assert body.count("wgmma.commit_group") == S
    assert body.count("wgmma.wait_group.sync.aligned %d;" % (S - 1)) == S
    assert "wgmma.wait_group.sync.aligned 0;" not in body
    wg = [ln for ln in body.splitlines() if "wgmma.mma_async" in ln]
    assert wg and all(re.search(r"\}, \{%r", ln) for ln in wg), wg[:1]
    if (form, BM, BN, warps) != (3, 128, 128, 4):  # tf32 at 128x128, 4 warps spills either way
        assert k.metadata.n_spills == 0


def _a_order(ttgir):
    """For each op of the loop that reads A from its slot or is a dot: "r" or "d"."""
    return "".join("r" if "regs = 1" in ln else "d" for ln in ttgir.splitlines()
                   if re.search(r"local_read [^\n]*k0 = \d+, kfull = \d+, regs = 1|= dot ", ln))


@pytest.mark.parametrize("form", [0, 1, 2, 3])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_reads_first(form, cfg, monkeypatch):
    # every step's read of A from its slot comes before the first MMA, where
    # the raw registers of the whole tile fit beside the accumulator (at most
    # 160 a thread); each step's cast, which writes the registers its MMA
    # reads, stays right before that MMA, after the wait that retired the
    # previous iteration's MMA of that step (CTRITON_RS_READS_FIRST=0: each
    # read right before its step's cast)
    BM, BN, BK, warps, stages = cfg
    if form == 3 and BN == 256:
        pytest.skip("tf32 at 128x256")
    S = BK // (8 if form == 3 else 16)
    threads = 32 * warps
    # (an int8 A, form 1: its raw registers are a quarter of the elements)
    fits = BM * BN // threads + BM * BK // threads // (4 if form == 1 else 1) <= 160
    k = _compile(90, form, BM, BN, BK, warps, stages)
    assert _a_order(k.asm["ct.ttgir"]) == ("r" * S + "d" * S if fits else "rd" * S)
    assert k.metadata.n_spills == 0 or (form, BM, BN, warps) == (3, 128, 128, 4)
    monkeypatch.setenv("CTRITON_RS_READS_FIRST", "0")
    assert _a_order(_compile(90, form, BM, BN, BK, warps, stages).asm["ct.ttgir"]) == "rd" * S


def test_reads_first_where_they_fit():
    # fp32 A at 128x256x64 with 8 warps (128 + 32 registers) reads first; at
    # 128x128x64 with 4 warps (128 + 64) it does not: ptxas spilled 168 bytes
    assert _a_order(_compile(90, 0, 128, 256, 64, 8, 3).asm["ct.ttgir"]) == "rrrrdddd"
    assert _a_order(_compile(90, 0, 128, 128, 64, 4, 3).asm["ct.ttgir"]) == "rdrdrdrd"


@pytest.mark.parametrize("cfg", [(128, 256, 64, 8, 3), (128, 128, 64, 4, 3)])
def test_int8_a_reads_first(monkeypatch, cfg):
    # an int8 A's raw registers are a quarter of fp32's, so both tiles fit
    # (128 + 8, 128 + 16 registers) and ptxas spills nothing; =0 keeps
    # each read before its MMA
    k = _compile(90, 1, *cfg)
    assert _a_order(k.asm["ct.ttgir"]) == "rrrrdddd"
    assert k.metadata.n_spills == 0
    monkeypatch.setenv("CTRITON_RS_READS_FIRST", "0")
    assert _a_order(_compile(90, 1, *cfg).asm["ct.ttgir"]) == "rdrdrdrd"


@pytest.mark.parametrize("cfg,shared", [((128, 128, 64, 4, 3), 112 * 1024), ((128, 256, 64, 8, 3), 160 * 1024)])
def test_slots_as_triton(cfg, shared):
    # fp32 A: 2 slots of 32 or 64 KiB and 3 of B's; Triton 3.6 asks the same
    # (at 128x128, two CTAs fit a multiprocessor; 144 KiB before)
    assert _compile(90, 0, *cfg).metadata.shared == shared


@pytest.mark.parametrize("value", [None, "1"])
def test_on_by_default(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv("CTRITON_RS_SLICES", value)
    ttgir = _compile(90).asm["ct.ttgir"]
    assert "kfull" in ttgir and "rs_pending" in ttgir
    assert len(re.findall(r"= dot ", ttgir)) == 4  # BK 64: four K steps of 16


def test_wide_accumulator_keeps_one_dot():
    # 128x256 with 4 warps: the accumulator takes 256 registers a thread,
    # no room for K steps of A in flight (sliced, ptxas spilled twice as much)
    ttgir = _compile(90, 0, 128, 256, 64, 4, 3).asm["ct.ttgir"]
    assert "rs_pending" not in ttgir and len(re.findall(r"= dot ", ttgir)) == 1
    # the same tile with 8 warps (128 registers a thread) is sliced
    assert "rs_pending" in _compile(90, 0, 128, 256, 64, 8, 3).asm["ct.ttgir"]


def test_off_keeps_one_dot(monkeypatch):
    monkeypatch.setenv("CTRITON_RS_SLICES", "0")
    k = _compile(90)
    ttgir = k.asm["ct.ttgir"]
    assert "kfull" not in ttgir and "rs_pending" not in ttgir
    assert len(re.findall(r"= dot ", ttgir)) == 1
    assert "wgmma.wait_group.sync.aligned 0;" in _loop_ptx(k.asm["ptx"])
    assert k.metadata.shared == 3 * (128 * 64 * 4 + 64 * 128 * 2)


def test_sm80_untouched():
    ttgir = _compile(80).asm["ct.ttgir"]
    assert "kfull" not in ttgir and "rs_pending" not in ttgir


@triton.jit
def mm_tf32x3(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("BM,BN,BK,warps", [(64, 64, 32, 4), (128, 128, 32, 8)])
def test_tf32x3_b_halves_paired(BM, BN, BK, warps):
    # the big and small halves of B are staged side by side and written
    # before one barrier (an_staged_pair), not each before its own
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"A": "*fp32", "B": "*fp32", "C": "*fp32", "K": "i32", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "K")}
    k = triton.compile(ASTSource(mm_tf32x3, sig, dict(BM=BM, BN=BN, BK=BK), attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
    body = [ln.strip() for ln in k.asm["ct.ttgir"].split("= for ")[1].split(" yield ")[0].splitlines()]
    ops = [ln.split("=", 1)[1].split()[0] if re.match(r"%\d+ = ", ln) else ln.split()[0] for ln in body if ln]
    conv = [i for i, o in enumerate(ops) if o == "convert_layout"]
    assert len(conv) == 2 and conv[1] == conv[0] + 1, ops
    assert ops[conv[0] - 1] == "barrier" and ops[:conv[0] - 1].count("barrier") == 1, ops[:conv[0]]
    assert k.metadata.n_spills == 0


@pytest.mark.gpu
def test_tf32x3_paired_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    a = torch.randn(64, 256, device="cuda")
    b = torch.randn(256, 64, device="cuda")
    c = torch.full((64, 64), float("nan"), device="cuda")
    mm_tf32x3[(1,)](a, b, c, 256, BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    ref = (a.double() @ b.double()).float()
    torch.testing.assert_close(c, ref, rtol=1e-5, atol=1e-4)


def _sass_hazards(sass):
    """Registers an HGMMA reads as A that an instruction writes before the
    WARPGROUP.DEPBAR retiring its group, in each loop with HGMMA (walked
    twice, so that the next iteration's writes count)."""
    ins = []
    for ln in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", ln)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    at = {a: i for i, (a, _) in enumerate(ins)}

    def regs(tok, n):
        m = re.match(r"R(\d+)$", tok)
        return set(range(int(m.group(1)), int(m.group(1)) + n)) if m else set()

    def written(t):
        t = re.sub(r"^@!?U?P\w+\s+", "", t)
        parts = t.split(None, 1)
        if len(parts) < 2 or parts[0].startswith(("ST", "BAR", "BRA", "HGMMA", "WARPGROUP", "DEPBAR", "LDGSTS", "RED",
                                                  "ATOM", "EXIT", "RET", "SYNCS", "ISETP", "FSETP", "PLOP", "U")):
            return set()
        n = 4 if ".128" in parts[0] else 2 if ".64" in parts[0] else 1
        return regs(parts[1].split(",")[0].strip(), n)

    bad, loops = [], 0
    for i, (a, t) in enumerate(ins):
        m = re.search(r"BRA (0x[0-9a-f]+)", t)
        if not m or int(m.group(1), 16) >= a or int(m.group(1), 16) not in at:
            continue
        body = ins[at[int(m.group(1), 16)]:i + 1]
        if not any("HGMMA" in x for _, x in body):
            continue
        loops += 1
        pending, cur = [], set()
        for _ in range(2):
            for addr, x in body:
                w = written(x)
                if any(w & g for g in pending + [cur]):
                    bad.append((hex(addr), x))
                if "HGMMA" in x:
                    cur |= regs(re.sub(r"^@!?P\w+\s+", "", x).split(None, 1)[1].split(",")[1].strip(), 4)
                    if "gsb0" in x:
                        pending.append(cur)
                        cur = set()
                m = re.search(r"WARPGROUP.DEPBAR.LE gsb0, 0x([0-9a-f]+)", x)
                if m:
                    n = int(m.group(1), 16)
                    pending = pending[max(0, len(pending) - n):] if n else []
    return loops, bad


def _have_disassembler():
    from ctriton import _toolkit
    return _toolkit.disassembler_path() is not None


@pytest.mark.skipif(not _have_disassembler(), reason="no cuobjdump / nvdisasm")
@pytest.mark.parametrize("form", [0, 3])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_sass_keeps_a_registers_until_retired(cfg, form):
    if form == 3 and cfg[1] == 256:
        pytest.skip("tf32 at 128x256")
    k = _compile(90, form, *cfg)
    loops, bad = _sass_hazards(k.asm["sass"])
    assert loops >= 1 and not bad, bad[:4]
    # the check itself: with the waits allowing every group in flight, the
    # next iteration's reads of A overwrite registers still being read
    loose = re.sub(r"WARPGROUP.DEPBAR.LE gsb0, 0x[0-9a-f]+", "WARPGROUP.DEPBAR.LE gsb0, 0xf", k.asm["sass"])
    assert _sass_hazards(loose)[1]


def _inputs(form, M, N, K, seed):
    rng = np.random.default_rng(seed)
    if form == 1:
        a = rng.integers(-100, 101, (M, K)).astype(np.int8)
    else:
        a = rng.integers(-8, 9, (M, K)).astype(np.float32) / 4
    b = rng.integers(-4, 5, (K, N)).astype(np.float32)
    return a, b


def _reference(form, a, b):
    return a.astype(np.float64) @ b * (0.5 if form == 3 else 1.0)


@requires_cpu
@pytest.mark.parametrize("form", [0, 1, 3])
def test_cpu(form, cpu_driver):  # noqa: F811
    M, N, K, BM, BN, BK = 40, 48, 72, 32, 32, 32
    a, b = _inputs(form, M, N, K, form)
    c = np.full((M, N), np.nan, np.float32)
    mm_cast_a[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b if form == 3 else b.astype(np.float16), c, M, N, K,
                                                          K, N, N, BM=BM, BN=BN, BK=BK, FORM=form)
    np.testing.assert_allclose(c, _reference(form, a, b), rtol=1e-3, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("form", [0, 1, 2, 3])
@pytest.mark.parametrize("cfg", CONFIGS + [(64, 128, 64, 4, 2)])
@pytest.mark.parametrize("rs,rf", [("1", "1"), ("1", "0"), ("0", "1")])
def test_gpu(form, cfg, rs, rf, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_RS_SLICES", rs)
    monkeypatch.setenv("CTRITON_RS_READS_FIRST", rf)
    BM, BN, BK, warps, stages = cfg
    M, N, K = 300, 264, 680  # M, N not multiples of the tiles, a K tail
    a, b = _inputs(form, M, N, K, 11 + form)
    ta = torch.from_numpy(a).cuda()
    tb = torch.from_numpy(b).cuda().to({2: torch.bfloat16, 3: torch.float32}.get(form, torch.float16))
    c = torch.full((M, N), float("nan"), device="cuda")
    mm_cast_a[(triton.cdiv(M, BM), triton.cdiv(N, BN))](ta, tb, c, M, N, K, K, N, N, BM=BM, BN=BN, BK=BK,
                                                        FORM=form, num_warps=warps, num_stages=stages)
    np.testing.assert_allclose(c.cpu().numpy(), _reference(form, a, b), rtol=1e-3, atol=1e-2)
