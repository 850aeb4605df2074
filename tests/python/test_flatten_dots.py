"""tl.range(flatten=True) over a nest whose inner loop holds a dot, fused
into one loop (ir/loops.c; CTRITON_FLATTEN_DOT_NESTS=0 keeps the nest,
the tests set it either way): tutorial 09's
persistent matmul becomes one loop over every K step of every tile the
program takes. Its tile switch (the prologue) runs in an `if` on the first
K step of a tile, its epilogue in an `if` on the last, and where the inner
loop runs no iteration (K = 0) the nest runs as it is. On sm_90 the
pipeliner (analysis/prefetch.c) then issues the next tile's first copies
during this tile's last K steps, with the tile switch computed ahead in the
copies' own `if`, and the warpgroup MMA of a fresh tile ignores the
accumulator (scale-d) instead of reading zeros.

With the variable 0 the nest stays a nest (test_loops.py). The results
are checked on the CPU backend here and on the GPU with -m gpu; the sm_90
code is assembled by ptxas."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

ENV = "CTRITON_FLATTEN_DOT_NESTS"
HAVE_PTXAS = bool(shutil.which("ptxas")) or os.path.exists("/usr/local/cuda/bin/ptxas")


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


def _persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                NUM_SMS: tl.constexpr):
    # tutorial 09's matmul_kernel_persistent
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    offs_k_for_mask = tl.arange(0, BK)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BM + tl.arange(0, BM)
        offs_bn = pid_n * BN + tl.arange(0, BN)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BM), BM)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BN), BN)
        accumulator = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BK + tl.arange(0, BK)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BK, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BK, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)


# one JITFunction per setting: the in-process cache does not see the variable
fused_kernel = triton.jit(_persistent)
nested_kernel = triton.jit(_persistent)


def _n_loops(ttgir):
    return ttgir.count("scf.for")


@pytest.mark.parametrize("M,N,K,programs", [
    (100, 70, 90, 3),     # M, N and K tails, several tiles a program
    (33, 130, 200, 5),
    (16, 16, 16, 1),      # one tile, one K step
    (128, 64, 32, 7),     # more programs than tiles
    (64, 64, 0, 2),       # no K step: the nest as it is, zeros stored
])
def test_fused_results_cpu(monkeypatch, M, N, K, programs):
    rng = np.random.default_rng(M * 7 + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    args = lambda c: (a, b, c, M, N, K, a.strides[0] // 2, 1, b.strides[0] // 2, 1, c.strides[0] // 2, 1)
    cx = dict(BM=16, BN=32, BK=16, GROUP_SIZE_M=2, NUM_SMS=programs)
    monkeypatch.setenv(ENV, "1")
    c = np.full((M, N), 7, np.float16)
    k = fused_kernel[(programs,)](*args(c), **cx)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    # the fused loop under `if k_tiles > 0`, the nest (two loops) else
    assert _n_loops(k.asm["ttgir"]) == 3 and "tt.flatten" not in k.asm["ttgir"]
    monkeypatch.setenv(ENV, "0")
    c2 = np.full((M, N), 7, np.float16)
    k2 = nested_kernel[(programs,)](*args(c2), **cx)
    np.testing.assert_array_equal(c2, c)
    assert _n_loops(k2.asm["ttgir"]) == 2


def _bounds_inside(a_ptr, b_ptr, c_ptr, M, N, K, n_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   NUM_SMS: tl.constexpr):
    n_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), n_tiles, NUM_SMS, flatten=True):
        rm = (tile // n_n) * BM + tl.arange(0, BM)
        rn = (tile % n_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):  # bounds computed in the prologue
            kk = k * BK
            a = tl.load(a_ptr + rm[:, None] * K + (kk + rk)[None, :],
                        mask=(rm[:, None] < M) & ((kk + rk)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (kk + rk)[:, None] * N + rn[None, :],
                        mask=((kk + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _carried_pointers(a_ptr, b_ptr, c_ptr, M, N, K, n_tiles, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, NUM_SMS: tl.constexpr):
    n_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), n_tiles, NUM_SMS, flatten=True):
        rm = (tile // n_n) * BM + tl.arange(0, BM)
        rn = (tile % n_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK
            b_ptrs += BK * N
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


forms_kernels = [triton.jit(_bounds_inside), triton.jit(_carried_pointers)]


@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("M,N,K,programs", [(50, 70, 40, 3), (40, 40, 0, 2), (33, 20, 100, 4)])
def test_bounds_in_the_prologue_and_carried_pointers(monkeypatch, form, M, N, K, programs):
    """Inner bounds the prologue computes from invariants (tl.cdiv(K, BK))
    are moved before the loop and the nest fused; an inner loop that
    carries pointers keeps the nest (the copies ahead could not read them
    through the tile switch's `if`). Both against numpy."""
    monkeypatch.setenv(ENV, "1")
    rng = np.random.default_rng(K + form)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    BM, BN, BK = 16, 32, 16
    n_tiles = -(-M // BM) * -(-N // BN)
    k = forms_kernels[form][(programs,)](a, b, c, M, N, K, n_tiles, BM=BM, BN=BN, BK=BK, NUM_SMS=programs)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-3, atol=2e-2)
    assert _n_loops(k.asm["ttgir"]) == (3 if form == 0 else 2)


def _compile_sm(arch, BM, BN, BK, warps, stages, layout):
    """tutorial 09's kernel for the GPU: B row-major (nn, stride_bn = 1) or
    K-major (nt, stride_bk = 1, as the tutorial's benchmark passes it)."""
    nt = layout == "nt"
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "constexpr" if nt else "i32",
           "stride_bn": "i32" if nt else "constexpr", "stride_cm": "i32", "stride_cn": "constexpr"}
    cx = dict(stride_ak=1, stride_cn=1, BM=BM, BN=BN, BK=BK, GROUP_SIZE_M=8, NUM_SMS=132)
    cx["stride_bk" if nt else "stride_bn"] = 1
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in (0, 1, 2, 3, 4, 5, 6, 9 if nt else 8, 10)}
    return triton.compile(ASTSource(fused_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _fused_loop(g):
    """The fused loop's text in the CTTGIR: the first loop (the nest in the
    other branch comes later), to its closing brace."""
    m = re.search(r"^( *)%[\w, %]+ = for ", g, re.M)
    return g[m.start():g.index("\n" + m.group(1) + "}", m.start())]


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("BM,BN,BK,warps,stages,layout", [
    (128, 256, 64, 8, 3, "nn"), (128, 256, 64, 8, 3, "nt"), (128, 128, 64, 4, 4, "nt"),
    (128, 128, 128, 8, 2, "nn"), (128, 256, 64, 8, 4, "nt"), (128, 128, 128, 8, 3, "nn"),
])
def test_fused_sm90(monkeypatch, BM, BN, BK, warps, stages, layout):
    """The fused loop on sm_90: its tiles through the cp.async slots, the
    copies (the next tile's in a tile's last steps) issued after the MMAs
    and before the epilogue, which has its own buffer; no spills, and ptxas
    keeps the warpgroup MMAs asynchronous."""
    monkeypatch.setenv(ENV, "1")
    k = _compile_sm(90, BM, BN, BK, warps, stages, layout)
    assert k.n_spills == 0 and k.metadata.wgmma_advisory == ""
    loop = _fused_loop(k.asm["ct.ttgir"])
    assert "barrier {wgmma_pending = 1}" in loop and re.search(r"async_copy .*ordered = 1", loop)
    assert "local_read" in loop and " load " not in loop  # every tile from the slots
    epi = loop.rindex(" = if ")
    assert loop.rindex("async_commit") < epi < loop.index("store ", epi)
    # the tile switch for the copies ahead (an `if`) and their arithmetic
    # come before the MMA, which runs while the next iteration's are done;
    # after the barrier that waits for the previous MMA, only the copies
    dot, bar = loop.index(" dot "), loop.index("barrier {wgmma_pending = 1}")
    assert loop.index(" = if ") < dot < bar < loop.index("async_copy")
    after = loop[bar:loop.index("async_commit", bar)].splitlines()[1:-1]
    assert after and all(ln.strip().startswith("async_copy ") for ln in after), after
    ptx = k.asm["ptx"]
    # one MMA per K step of 16 and 64 rows of the warpgroup's: the fused
    # loop's (LLVM drops the nest's, which runs only where K has no step)
    assert ptx.count("wgmma.mma_async") == (BK // 16) * (BM // 64) // (warps // 4)
    assert "wgmma.wait_group.sync.aligned 0;" in ptx
    # the slots and, apart from them, the epilogue's conversion buffer: the
    # tile converted in rounds of at most 32 KiB (Triton's 4 stages of
    # 128x256x64 tiles fit beside it)
    slot_bytes = (BM * BK + BK * BN) * 2
    rounds = max(1, BM * BN * 2 // 32768)
    assert k.metadata.shared == stages * slot_bytes + BM * BN * 2 // rounds
    assert (f"rounds = {rounds}," in loop) == (rounds > 1)
    # the copies' tile switch carries the two tiles' base pointers (made
    # once a tile, before the K loop, by hoist-addresses): a K step adds
    # its offset to them (a 64-bit add per copy) and computes no row offsets
    sw = re.search(r"= if [^\n]*", loop).group(0)
    assert sorted(re.findall(r"block<(\d+x\d+)xptr<f16>", sw)) == sorted([f"{BM}x{BK}", f"{BK}x{BN}"])
    assert "xi32, #slice" not in sw
    # ... only for the copies: the loop carries those two blocks and not
    # the MMAs' tile switch's (dead once the tiles come from the slots)
    head = loop[:loop.index("\n")]
    assert head.count("xptr<f16>") == 2 and "xi32, #slice" not in head
    # a copy's mask is cp.async's ignore-src predicate
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %p\d+;", ptx)
    # the K step's offset: sign-extended and scaled once, then a 64-bit add
    # per 16-byte copy, not a widening multiply-add each (one IMAD.WIDE per
    # copy beside the MMAs cost 6% on an H100: backend/nvptx/elem.c)
    # (A's, and B's: the same or, B row-major, times its row stride)
    offs = re.findall(r"cvt\.s64\.s32 (%rd\d+), %r\d+;[^\n]*\n[^\n]*\n\tshl\.b64 \t(%rd\d+), \1, 1;", ptx)
    assert offs, "the K offset in bytes"
    copies = (BM * BK + BK * BN) * 2 // 16 // (warps * 32)
    adds = sum(len(re.findall(rf"add\.s64 \t%rd\d+, %rd\d+, {o};", ptx)) for _, o in offs)
    assert adds >= copies, (adds, copies)


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("dtype,BM,BN,BK,warps,stages", [("fp16", 128, 128, 64, 4, 3), ("fp16", 128, 256, 64, 8, 3),
                                                        ("fp32", 128, 128, 32, 4, 3)])
def test_fused_sm90_bounds_inside(monkeypatch, dtype, BM, BN, BK, warps, stages):
    """Without hints: the tile switch's results keep the offsets'
    divisibility (axis info meets an `if`'s yields), its constants are made
    again rather than carried, so both tiles go through the slots (fp32:
    tf32 MMAs, B transposed into its slot)."""
    monkeypatch.setenv(ENV, "1")
    sig = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "n_tiles": "i32"}
    cx = dict(BM=BM, BN=BN, BK=BK, NUM_SMS=132)
    k = triton.compile(ASTSource(forms_kernels[0], dict(sig, **{c: "constexpr" for c in cx}), cx,
                                 {(i,): {"divisibility": 16} for i in range(6)}),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
    loop = _fused_loop(k.asm["ct.ttgir"])
    assert loop.count("async_copy ") == 2 and " load " not in loop
    assert k.n_spills == 0 and k.metadata.wgmma_advisory == ""


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found")
def test_fused_sm90_first_step_ignores_the_accumulator(monkeypatch):
    """A tile's first MMA takes scale-d from the loop position (a register,
    not the constant 1 of the other K steps), and no instruction reads the
    accumulator to zero it."""
    monkeypatch.setenv(ENV, "1")
    ptx = _compile_sm(90, 128, 256, 64, 8, 3, "nn").asm["ptx"]
    scale = re.findall(r"setp\.ne\.b32 p, (%r\d+), 0;\n(?:add\.s64 d[ab], [^\n]*\n)*wgmma", ptx)
    movs = set(re.findall(r"mov\.b32\s+(%r\d+), 1;", ptx))
    assert any(r not in movs for r in scale) and any(r in movs for r in scale)


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found")
def test_nest_kept_without_room_or_warpgroup_mma(monkeypatch):
    """The nest stays a nest where the fused loop could not keep the stages
    asked for beside the epilogue's buffer in shared memory (128x256x128),
    with one stage, and on sm_80 (mma.sync would read a fresh tile's zeros
    through a select)."""
    monkeypatch.setenv(ENV, "1")
    for arch, cfg in ((90, (128, 256, 128, 8, 3)), (90, (128, 128, 64, 4, 1)),
                      (80, (128, 128, 32, 4, 3))):
        k = _compile_sm(arch, *cfg, "nn")
        assert re.search(r"\} \{tt\.flatten\}", k.asm["ttgir"]) and k.n_spills == 0


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,programs", [(1024, 1024, 512, 132), (1000, 1000, 1000, 7),
                                            (512, 768, 64, 13), (256, 256, 0, 3)])
@pytest.mark.parametrize("BN,warps,stages", [(128, 4, 4), (256, 8, 3), (256, 8, 4)])
@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_gpu_fused_persistent(monkeypatch, M, N, K, programs, BN, warps, stages, layout):
    import torch
    monkeypatch.setenv(ENV, "1")
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    if layout == "nt":
        b = b.T.contiguous().T
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    fused_kernel[(programs,)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              c.stride(0), c.stride(1), BM=128, BN=BN, BK=64, GROUP_SIZE_M=8,
                              NUM_SMS=programs, num_warps=warps, num_stages=stages)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.1, rtol=1e-2)


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found")
def test_fused_by_default_on_warpgroup_mma_only(monkeypatch):
    """Without the variable a nest whose dot runs on warpgroup MMA is fused
    on sm_90; one whose dot falls to mma.sync there (2 warps: no warpgroup)
    stays a nest, even with the variable at 1 (fused, such nests spilled
    more)."""
    monkeypatch.delenv(ENV, raising=False)
    k = _compile_sm(90, 128, 128, 64, 4, 3, "nt")
    assert "fused_nest" in k.asm["ct.ttgir"] and "wgmma.mma_async" in k.asm["ptx"]
    for v in (None, "1"):
        if v:
            monkeypatch.setenv(ENV, v)
        k = _compile_sm(90, 64, 64, 32, 2, 3, "nn")
        assert "mma.sync" in k.asm["ptx"] and "wgmma" not in k.asm["ptx"]
        assert "fused_nest" not in k.asm["ct.ttgir"] and re.search(r"\} \{tt\.flatten\}", k.asm["ttgir"])
