"""Loads beside the tiles of pipelined warpgroup-MMA loops that cp.async
takes as well (analysis/prefetch.c):

- a tile loaded once before such loops and read only as a warpgroup MMA
  operand in them (attention's q; the backward pass's k, v, q and do) is
  copied into a one-slot buffer, in its own group, where the load was;
  each loop reads the slot after its first wait (async_invariants;
  CTRITON_ASYNC_INVARIANTS=0 keeps the load);
- a vector loaded in such a loop's body and read by elementwise ops (the
  backward pass's m and Di) goes through slots of its own, read in the
  layout its users want (vector_async_ok; CTRITON_ASYNC_VECTORS=0 keeps
  the load).

Checked on kernels compiled for sm_90a (no GPU needed) and, marked `gpu`,
against torch."""
import os
import re
import sys

import pytest

import ctriton as triton
import ctriton.language as tl

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))


@triton.jit
def a_once(A, B, O, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, A_TWICE: tl.constexpr,
           OTHER: tl.constexpr):
    """O[:M, n-block] = A[:M, :K] @ sum_i B_i[:, n-block]: A loaded once
    (its rows past M masked, zero), the B_i streamed."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    rk = tl.arange(0, K)
    rn = pid * BN + tl.arange(0, BN)
    a = tl.load(A + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=OTHER)
    acc = tl.zeros((BM, BN), tl.float32)
    for i in range(4):
        b = tl.load(B + i * K * N + rk[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    if A_TWICE:  # a second loop reading the same tile
        for i in range(4, 6):
            b = tl.load(B + i * K * N + rk[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
    tl.store(O + rm[:, None] * N + rn[None, :], acc, mask=rm[:, None] < M)


@triton.jit
def b_once(A, W, O, M, K: tl.constexpr, N: tl.constexpr, BM: tl.constexpr, STORE_W: tl.constexpr):
    """O[m-block] = sum_i A_i[m-block] @ W: W (K x N) loaded once as B."""
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)
    w = tl.load(W + rk[:, None] * N + rn[None, :])
    acc = tl.zeros((BM, N), tl.float32)
    for i in range(3):
        a = tl.load(A + i * M * K + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
        acc += tl.dot(a, w)
    if STORE_W:  # w also read outside the dots: it stays a load
        tl.store(O + M * N + rk[:, None] * N + rn[None, :], w.to(tl.float32))
    tl.store(O + rm[:, None] * N + rn[None, :], acc, mask=rm[:, None] < M)


@triton.jit
def col_scaled(A, B, V, O, N, NT, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, WRITE_V: tl.constexpr):
    """O = sum_i (A_i @ B_i) * V_i[None, :] over NT steps, V_i masked at N
    (the columns past N scaled by 0). WRITE_V: each step also writes
    V_{i+1} (doubled), which a later step reads: no read ahead there."""
    rm = tl.arange(0, BM)
    rk = tl.arange(0, K)
    rn = tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for i in range(NT):
        a = tl.load(A + i * BM * K + rm[:, None] * K + rk[None, :])
        b = tl.load(B + i * K * BN + rk[:, None] * BN + rn[None, :])
        v = tl.load(V + i * BN + rn, mask=rn < N, other=0.0)
        acc += tl.dot(a, b) * v[None, :]
        if WRITE_V:
            tl.store(V + (i + 1) * BN + rn, 2 * v, mask=(rn < N) & (i + 1 < NT))
    tl.store(O + rm[:, None] * BN + rn[None, :], acc)


CS_SIG = {"A": "*fp16", "B": "*fp16", "V": "*fp32", "O": "*fp32", "N": "i32", "NT": "i32", "K": "constexpr",
          "BM": "constexpr", "BN": "constexpr", "WRITE_V": "constexpr"}

A_SIG = {"A": "*fp16", "B": "*fp16", "O": "*fp32", "M": "i32", "N": "i32", "K": "constexpr", "BM": "constexpr",
         "BN": "constexpr", "A_TWICE": "constexpr", "OTHER": "constexpr"}
B_SIG = {"A": "*fp16", "W": "*fp16", "O": "*fp32", "M": "i32", "K": "constexpr", "N": "constexpr",
         "BM": "constexpr", "STORE_W": "constexpr"}


def _have_ptxas():
    import shutil
    return bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
                shutil.which("ptxas"))


needs_ptxas = pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")


def _compile(fn, sig, cx, warps=4, stages=3, arch=90):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32") and n != "M"}
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _once_copies(ttgir):
    """The one-slot copies (before any loop) and, per buffer, how many
    loop-body reads of it there are."""
    copies = re.findall(r"async_copy[^\n]*\{buffer = (\d+)[^\n]*stages = 1", ttgir)
    return {b: len(re.findall(r"local_read[^\n]*\{buffer = %s[,}]" % b, ttgir)) for b in copies}


def _a_cx(**kw):
    cx = dict(K=64, BM=64, BN=64, A_TWICE=False, OTHER=0.0)
    cx.update(kw)
    return cx


@needs_ptxas
@pytest.mark.parametrize("twice", [False, True])
def test_a_once_copied(twice, monkeypatch):
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    k = _compile(a_once, A_SIG, _a_cx(A_TWICE=twice))
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    # one copy, read in each loop's body
    assert list(_once_copies(ttgir).values()) == [2 if twice else 1], ttgir
    loop = ttgir.index(" = for ")
    # the copy comes before the loop's own first copies, and a's rows past
    # M are masked (zero-filled): the copy has a mask operand
    pre = ttgir[:loop]
    once = [ln for ln in pre.splitlines() if "async_copy" in ln and "stages = 1" in ln][0]
    assert pre.index(once) < min(pre.index(ln) for ln in pre.splitlines() if "async_copy" in ln and "stages = 3" in ln)
    assert once.count("%") == 3, once  # pointers, slot, mask
    # no staging of a through registers
    assert not re.search(r"convert_layout[^\n]*#dot_op<opidx = 0", pre)
    assert "wgmma.mma_async" in ptx and k.n_spills == 0


@needs_ptxas
def test_a_once_off_and_kept(monkeypatch):
    """CTRITON_ASYNC_INVARIANTS=0, a non-zero `other`, sm_80: the load stays."""
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "0")
    assert _once_copies(_compile(a_once, A_SIG, _a_cx()).asm["ct.ttgir"]) == {}
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    assert _once_copies(_compile(a_once, A_SIG, _a_cx(OTHER=1.0)).asm["ct.ttgir"]) == {}
    # sm_80, 64 x 32 with 4 warps: 16 registers of fragments
    assert _once_copies(_compile(a_once, A_SIG, _a_cx(K=32), arch=80).asm["ct.ttgir"]) == {}


@pytest.mark.parametrize("arch", [80, 90])
def test_a_once_big_fragments_on_mma_sync(arch, monkeypatch):
    """32 rows with 4 warps run on mma.sync with the warps along N: each
    warp would hold all of a (32 x 128 f16: 64 registers a thread) across
    the loop. It goes through a one-slot buffer instead and the loop reads
    it by ldmatrix in every iteration, as Triton does (a generated attention
    chain of this shape spilled 596 bytes, Triton 156 registers, none)."""
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    k = _compile(a_once, A_SIG, _a_cx(K=128, BM=32, BN=128), arch=arch)
    ttgir = k.asm["ct.ttgir"]
    assert "#mma<version = [2, 0], wpc = [1, 4]" in ttgir
    assert list(_once_copies(ttgir).values()) == [1], ttgir
    body = ttgir[ttgir.index(" = for "):]
    assert re.search(r"local_read[^\n]*stages|local_read[^\n]*#dot_op<opidx = 0", body)
    # 64 x 64 with 4 warps (32 registers of fragments) is copied too; 64 x 32
    # (16) keeps the load on sm_80 (on sm_90 a warpgroup MMA reads it)
    kept = _once_copies(_compile(a_once, A_SIG, _a_cx(), arch=arch).asm["ct.ttgir"])
    assert list(kept.values()) == [1], kept
    kept = _once_copies(_compile(a_once, A_SIG, _a_cx(K=32), arch=arch).asm["ct.ttgir"])
    assert list(kept.values()) == ([] if arch == 80 else [1]), kept


@pytest.mark.parametrize("arch", [80, 90])
def test_mma_sync_tile_read_at_its_dot(arch):
    """A slot read by mma.sync is read right before its dot: attention's V
    tile (32 x 128, 4 warps: 64 registers of fragments) is not held across
    Q K^T and the softmax."""
    from test_kmajor_staging import chain
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"Q": "*bf16", "Kp": "*bf16", "V": "*bf16", "O": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "BD": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("Q", "Kp", "V", "O")}
    k = triton.compile(ASTSource(chain, sig, dict(BM=32, BN=128, BD=128), attrs), target=GPUTarget("cuda", arch, 32),
                       options={"num_warps": 4, "num_stages": 3})
    body = k.asm["ct.ttgir"].split(" = for ", 1)[1]
    dots = [m.start() for m in re.finditer(r"= dot ", body)]
    reads = [m.start() for m in re.finditer(r"= local_read [^\n]*#dot_op<opidx = 1", body)]
    assert len(dots) == 2 and reads and max(reads) > dots[0], (dots, reads)


@needs_ptxas
@pytest.mark.parametrize("store_w", [False, True])
def test_b_once(store_w, monkeypatch):
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    k = _compile(b_once, B_SIG, dict(K=64, N=128, BM=128, STORE_W=store_w), warps=8)
    copies = _once_copies(k.asm["ct.ttgir"])
    assert list(copies.values()) == ([] if store_w else [1]), copies
    assert k.n_spills == 0


def _attn_fwd(D, nw, stage):
    import importlib
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    from compile_time import attn_fwd_sig
    at = importlib.import_module("kernels.attention")
    sig, cx = attn_fwd_sig()
    cx.update(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, STAGE=stage)
    sig.update({k: "constexpr" for k in cx})
    return _compile(at.attn_fwd, sig, cx, warps=nw, stages=2)


@needs_ptxas
@pytest.mark.parametrize("D,nw", [(64, 4), (128, 8)])
@pytest.mark.parametrize("stage", [1, 3])
def test_attention_forward_q(D, nw, stage, monkeypatch):
    """q copied once; the causal form (stage 3) reads it in both of its
    loops. Zero spills either way."""
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    k = _attn_fwd(D, nw, stage)
    assert list(_once_copies(k.asm["ct.ttgir"]).values()) == [2 if stage == 3 else 1]
    assert k.n_spills == 0


def _attn_bwd_d64():
    """kernels/attention.py's attn_bwd at D64 (blocks of 32 / 128), 4 warps,
    5 stages, for sm_90a."""
    import importlib
    at = importlib.import_module("kernels.attention")
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
           "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32", "stride_h": "i32",
           "stride_tok": "i32", "stride_d": "constexpr", "H": "i32", "N_CTX": "i32"}
    cx = dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=64)
    sig.update({k: "constexpr" for k in cx})
    return _compile(at.attn_bwd, sig, cx, warps=4, stages=5)


@needs_ptxas
def test_attention_backward_operands(monkeypatch):
    """The backward pass: k and v (the dK/dV loops' A operands) and q and
    do (the dQ loops'), each read in the masked and the unmasked loop."""
    monkeypatch.setenv("CTRITON_ASYNC_INVARIANTS", "1")
    k = _attn_bwd_d64()
    assert list(_once_copies(k.asm["ct.ttgir"]).values()) == [2, 2, 2, 2]
    assert k.n_spills == 0


def _vector_reads(ttgir):
    return re.findall(r"local_read [^\n]*: block<\d+xf32, #slice<dim = 0, parent = #mma<version = \[3", ttgir)


@needs_ptxas
def test_vector_through_slots(monkeypatch):
    """v (masked at N) is copied into slots of its own and read in the
    slice of the product's mma layout: no conversion of it in the body."""
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "1")
    k = _compile(col_scaled, CS_SIG, dict(K=64, BM=128, BN=64, WRITE_V=False), warps=4, stages=3)
    ttgir = k.asm["ct.ttgir"]
    body = ttgir[ttgir.index(" = for "):]
    assert len(_vector_reads(body)) == 1, body
    buf = re.search(r"local_read [^\n]*\{buffer = (\d+)[^\n]*: block<64xf32", body).group(1)
    # two copies ahead before the loop, one in it
    assert len(re.findall(r"async_copy [^\n]*\{buffer = %s,[^\n]*stages = 3" % buf, ttgir)) == 3, ttgir
    assert not re.search(r"convert_layout [^\n]*: block<64xf32", body)
    assert k.n_spills == 0
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "0")
    k0 = _compile(col_scaled, CS_SIG, dict(K=64, BM=128, BN=64, WRITE_V=False), warps=4, stages=3)
    assert _vector_reads(k0.asm["ct.ttgir"]) == []
    # a body that writes memory keeps its vector a load
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "1")
    kw = _compile(col_scaled, CS_SIG, dict(K=64, BM=128, BN=64, WRITE_V=True), warps=4, stages=3)
    assert _vector_reads(kw.asm["ct.ttgir"]) == []


@needs_ptxas
def test_attention_backward_vectors(monkeypatch):
    """The dK/dV loops read m and Di from slots, in the slice of qk^T's mma
    layout (two reads in each of the two loops); none is converted in
    them."""
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "1")
    k = _attn_bwd_d64()
    ttgir = k.asm["ct.ttgir"]
    loops = ttgir.split(" = for ")[1:3]  # the masked and the unmasked dK/dV loop
    for body in loops:
        body = body[:body.index("\n  }")]
        assert len(_vector_reads(body)) == 2, body
        assert not re.search(r"convert_layout [^\n]*: block<(16|32)xf32", body)
    assert k.n_spills == 0


# ---------------------------------------------------------------------------
# on the GPU, against torch

def _gpu_torch(monkeypatch, var, on):
    """torch, with a GPU (else the test is skipped), and the variable set."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv(var, on)
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("N", [64, 50])
def test_vector_through_slots_gpu(on, N, monkeypatch):
    torch = _gpu_torch(monkeypatch, "CTRITON_ASYNC_VECTORS", on)
    K, BM, BN, NT = 64, 128, 64, 5
    g = torch.Generator(device="cuda").manual_seed(N)
    a = torch.randn(NT, BM, K, device="cuda", generator=g).half()
    b = torch.randn(NT, K, BN, device="cuda", generator=g).half()
    v = torch.randn(NT, BN, device="cuda", generator=g)
    o = torch.full((BM, BN), float("nan"), device="cuda")
    vm = v.clone()
    col_scaled[(1,)](a, b, v, o, N, NT, K=K, BM=BM, BN=BN, WRITE_V=False, num_warps=4, num_stages=3)
    vm[:, N:] = 0
    ref = sum((a[i].float() @ b[i].float()) * vm[i][None, :] for i in range(NT))
    torch.testing.assert_close(o, ref, atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("twice", [False, True])
@pytest.mark.parametrize("M", [64, 37])
def test_a_once_gpu(on, twice, M, monkeypatch):
    torch = _gpu_torch(monkeypatch, "CTRITON_ASYNC_INVARIANTS", on)
    K, N, BN = 64, 256, 64
    g = torch.Generator(device="cuda").manual_seed(M + 7 * twice)
    a = torch.randn(M, K, device="cuda", generator=g).half()
    b = torch.randn(6, K, N, device="cuda", generator=g).half()
    o = torch.full((M, N), float("nan"), device="cuda")
    a_once[(N // BN,)](a, b, o, M, N, K=K, BM=64, BN=BN, A_TWICE=twice, OTHER=0.0, num_warps=4, num_stages=3)
    ref = a.float() @ b[:6 if twice else 4].float().sum(0)
    torch.testing.assert_close(o, ref, atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("M", [32, 21])
def test_a_once_mma_sync_gpu(on, M, monkeypatch):
    """The one-slot a read by mma.sync in every iteration (32 rows, 4 warps
    along N)."""
    torch = _gpu_torch(monkeypatch, "CTRITON_ASYNC_INVARIANTS", on)
    K, N, BN = 128, 256, 128
    g = torch.Generator(device="cuda").manual_seed(M)
    a = torch.randn(M, K, device="cuda", generator=g).half()
    b = torch.randn(4, K, N, device="cuda", generator=g).half()
    o = torch.full((M, N), float("nan"), device="cuda")
    a_once[(N // BN,)](a, b, o, M, N, K=K, BM=32, BN=BN, A_TWICE=False, OTHER=0.0, num_warps=4, num_stages=3)
    ref = a.float() @ b.float().sum(0)
    torch.testing.assert_close(o, ref, atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("M", [256, 200])
def test_b_once_gpu(on, M, monkeypatch):
    torch = _gpu_torch(monkeypatch, "CTRITON_ASYNC_INVARIANTS", on)
    K, N, BM = 64, 128, 128
    g = torch.Generator(device="cuda").manual_seed(M)
    a = torch.randn(3, M, K, device="cuda", generator=g).half()
    w = torch.randn(K, N, device="cuda", generator=g).half()
    o = torch.full((M * N + K * N,), float("nan"), device="cuda")
    b_once[(triton.cdiv(M, BM),)](a, w, o, M, K=K, N=N, BM=BM, STORE_W=False, num_warps=8, num_stages=3)
    ref = a.float().sum(0) @ w.float()
    torch.testing.assert_close(o[:M * N].view(M, N), ref, atol=5e-2, rtol=1e-2)
