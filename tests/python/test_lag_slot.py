"""One slot more for a warpgroup-MMA loop whose accumulators chain
(analysis/prefetch.c lag_slots; on by default, CTRITON_LAG_SLOT=0 turns it
off; part of the cache key).

With num_stages S slots, an iteration's copies refill the slot that the
previous iteration's MMAs read; those may still run, so every warpgroup
waits for its older MMA group and meets the others at a second barrier
before copying. With S + 1 slots the copies refill the slot of two
iterations back, which the barrier at the top of the iteration already
orders: the wait stays, the second barrier goes, and the copies run as far
ahead as before. Taken only when the extra slot leaves as many blocks on a
multiprocessor as before.

Checked on kernels compiled for sm_90a (no GPU needed): the shared memory,
the loop's barriers and waits in the PTX, the IR's wait, zero spills; that
it declines where a block would be lost, on sm_80 and without the variable;
and, marked `gpu`, against torch with the variable on and off."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ptx_util import ptx_loops


@triton.jit
def mm_masked_k(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # tutorial 03's form: grouped program ids, masked K loads with other=0
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc.to(C.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


TY = {"fp16": "*fp16", "bf16": "*bf16"}


def _compile(arch, BM, BN, BK, warps, stages, dtype="fp16"):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    t = TY[dtype]
    sig = {"A": t, "B": t, "C": t, "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32",
           "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "GROUP_M": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_masked_k, sig, dict(BM=BM, BN=BN, BK=BK, GROUP_M=8), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})


def _loop_ptx(ptx):
    """The PTX of the loop whose body holds the warpgroup MMAs."""
    return next((lp for lp in ptx_loops(ptx) if "wgmma.mma_async" in lp), "")


def _barriers(text):
    return len(re.findall(r"\bbar\.sync\b|\bbarrier\.sync\b|\bbarrier\.cta\.sync\b", text))


# (config, tile bytes a stage): each keeps its blocks per multiprocessor with
# one slot more (128x256x64: 144 -> 192 KiB, one block; 64x256x32: 80 ->
# 100 KiB, two; 128x128x64 with 4 stages: 128 -> 160 KiB, one)
TAKEN = [((128, 256, 64, 8, 3), 49152), ((64, 256, 32, 4, 4), 20480), ((128, 128, 64, 4, 4), 32768)]
# one slot more would cost a block: 128x128x32 with 4 stages (64 -> 80 KiB:
# three blocks -> two), 128x128x64 with 3 stages (96 -> 128 KiB: two -> one)
DECLINED = [(128, 128, 32, 4, 4), (128, 128, 64, 4, 3), (64, 128, 64, 4, 4)]


@pytest.mark.parametrize("cfg,stage_bytes", TAKEN)
def test_one_slot_more_one_barrier_fewer(cfg, stage_bytes, monkeypatch):
    BM, BN, BK, warps, stages = cfg
    monkeypatch.setenv("CTRITON_LAG_SLOT", "0")
    k0 = _compile(90, *cfg)
    monkeypatch.setenv("CTRITON_LAG_SLOT", "1")
    k1 = _compile(90, *cfg)
    assert k0.metadata.shared == stages * stage_bytes
    assert k1.metadata.shared == (stages + 1) * stage_bytes
    l0, l1 = _loop_ptx(k0.asm["ptx"]), _loop_ptx(k1.asm["ptx"])
    assert l0 and l1
    assert _barriers(l0) == 2 and _barriers(l1) == 1
    # the wait for all but the newest MMA group stays, before the copies
    for loop in (l0, l1):
        w = loop.index("wgmma.wait_group.sync.aligned 1;")
        assert w < loop.index("cp.async.cg.shared.global", loop.index("wgmma.mma_async"))
    assert "ttng.warp_group_dot_wait {pendings = 1 : i32}" in k1.asm["ttgir"]
    assert "ttng.warp_group_dot_wait" not in k0.asm["ttgir"]
    assert k0.metadata.n_spills == 0 and k1.metadata.n_spills == 0


@pytest.mark.parametrize("cfg", DECLINED)
def test_declined_where_a_block_would_go(cfg, monkeypatch):
    monkeypatch.setenv("CTRITON_LAG_SLOT", "0")
    k0 = _compile(90, *cfg)
    monkeypatch.setenv("CTRITON_LAG_SLOT", "1")
    k1 = _compile(90, *cfg)
    assert k1.metadata.shared == k0.metadata.shared
    assert _barriers(_loop_ptx(k1.asm["ptx"])) == 2


def test_on_by_default(monkeypatch):
    monkeypatch.delenv("CTRITON_LAG_SLOT", raising=False)
    k = _compile(90, 128, 256, 64, 8, 3)
    assert k.metadata.shared == 4 * 49152
    assert _barriers(_loop_ptx(k.asm["ptx"])) == 1
    monkeypatch.setenv("CTRITON_LAG_SLOT", "0")
    k = _compile(90, 128, 256, 64, 8, 3)
    assert k.metadata.shared == 3 * 49152
    assert _barriers(_loop_ptx(k.asm["ptx"])) == 2


def test_sm80_untouched(monkeypatch):
    monkeypatch.setenv("CTRITON_LAG_SLOT", "0")
    k0 = _compile(80, 128, 128, 32, 4, 3)
    monkeypatch.setenv("CTRITON_LAG_SLOT", "1")
    k1 = _compile(80, 128, 128, 32, 4, 3)
    assert k1.metadata.shared == k0.metadata.shared
    assert k1.asm["ptx"] == k0.asm["ptx"]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [c for c, _ in TAKEN] + [(64, 128, 64, 4, 2)])
@pytest.mark.parametrize("lag", ["1", "0"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gpu(cfg, lag, dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_LAG_SLOT", lag)
    BM, BN, BK, warps, stages = cfg
    tt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    for M, N, K in ((300, 264, 680), (512, 512, 4096), (256, 256, 40)):  # tails, a long K, K < BK
        g = torch.Generator().manual_seed(M + K)
        a = torch.randn(M, K, generator=g).to(tt)
        b = torch.randn(K, N, generator=g).to(tt)
        c = torch.full((M, N), float("nan"), dtype=tt, device="cuda")
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        mm_masked_k[grid](a.cuda(), b.cuda(), c, M, N, K, K, N, N, BM=BM, BN=BN, BK=BK, GROUP_M=8,
                          num_warps=warps, num_stages=stages)
        ref = (a.float() @ b.float()).numpy()
        np.testing.assert_allclose(c.float().cpu().numpy(), ref, rtol=2e-2, atol=2e-2 * np.sqrt(K))


def _have_disassembler():
    from ctriton import _toolkit
    return _toolkit.disassembler_path() is not None


def _sass_loop_barriers(sass):
    """BAR.SYNC in the SASS loop that holds the warpgroup MMAs: between the
    target of a backward branch and that branch."""
    ins = []
    for ln in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", ln)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    for addr, text in ins:
        b = re.search(r"\bBRA\s+(0x[0-9a-f]+)", text)
        if not b or int(b.group(1), 16) >= addr:
            continue
        body = [t for a, t in ins if int(b.group(1), 16) <= a <= addr]
        if any("HGMMA" in t for t in body):
            return sum("BAR.SYNC" in t for t in body)
    return None


@pytest.mark.skipif(not _have_disassembler(), reason="no cuobjdump / nvdisasm")
def test_sass_one_barrier_a_step(monkeypatch):
    """What ptxas made of it: the K loop's SASS keeps one BAR.SYNC of two."""
    monkeypatch.setenv("CTRITON_LAG_SLOT", "0")
    n0 = _sass_loop_barriers(_compile(90, 128, 256, 64, 8, 3).asm["sass"])
    monkeypatch.setenv("CTRITON_LAG_SLOT", "1")
    n1 = _sass_loop_barriers(_compile(90, 128, 256, 64, 8, 3).asm["sass"])
    assert (n0, n1) == (2, 1)
