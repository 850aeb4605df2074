"""Warpgroup MMA with the warpgroups split along N: a dot whose M is too
short for every warpgroup to get its own 64-row block (64 rows with 8
warps, 128 rows with 16) takes warps_per_cta [4 gm, gn], each warpgroup the
contiguous block of N / gn columns, B read from its block's start. Before,
such dots ran on mma.sync. Without a GPU: the layout, the instruction width,
each warpgroup's B offset and zero spills for every operand type; on the
GPU (marked `gpu`): results against torch, with the accumulator's row
reductions across warpgroups and a P tile converted into the next dot's A
(attention's form)."""
import os
import re
import shutil

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from test_wgmma_dtypes import run_dot_dtype
from wgmma_kernels import dot_dtype_kernel

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))

# (a, b, accumulator, PTX type names, K step)
TYPES = [
    ("fp16", "fp16", "fp32", "f32.f16.f16", 16),
    ("bf16", "bf16", "fp32", "f32.bf16.bf16", 16),
    ("fp16", "fp16", "fp16", "f16.f16.f16", 16),
    ("fp8e4nv", "fp8e5", "fp32", "f32.e4m3.e5m2", 32),
    ("fp32", "fp32", "fp32", "f32.tf32.tf32", 8),
    ("i8", "i8", "i32", "s32.s8.s8", 32),
]


def compile_dot(a, b, c, b_col, stages, M, N, nw, BK=64):
    sig = {"a_ptr": "*" + a, "b_ptr": "*" + b, "c_ptr": "*" + c, "K": "i32"}
    cx = dict(M=M, N=N, BK=BK, B_COL=b_col, INT=c == "i32", PREC="tf32", ACC16=c == "fp16")
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "K")}
    return triton.compile(ASTSource(dot_dtype_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": nw, "num_stages": stages})


# M, N, warps: split in two; 64 x 64, 64 x 32 and 64 x 16 with 8 warps give
# blocks of 32, 16 and 8 columns that start inside a swizzle atom of B;
# 64 x 128 with 16 warps four blocks of 32, two in each atom
SHAPES = [(64, 128, 8), (64, 256, 8), (128, 256, 16), (64, 64, 8), (64, 32, 8), (64, 16, 8),
          (64, 128, 16)]


@pytest.mark.parametrize("M,N,nw", SHAPES)
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0]}x{t[1]}-{t[2]}")
def test_split_layout_and_instruction(types, b_col, stages, M, N, nw):
    a, b, c, names, kstep = types
    k = compile_dot(a, b, c, b_col, stages, M, N, nw)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    gm = M // 64
    gn = nw // 4 // gm
    assert f"#mma<version = [3, 0], wpc = [{4 * gm}, {gn}]" in ttgir, re.findall(r"#mma<[^>]*>", ttgir)
    # one warpgroup's block: N / gn columns in one instruction
    assert f"wgmma.mma_async.sync.aligned.m64n{N // gn}k{kstep}.{names}" in ptx
    assert "mma.sync" not in ptx
    # 16 warps leave 128 registers a thread: the one-stage tf32 loop (tiles
    # through registers) spills there (about 200 bytes; 850-950 on mma.sync);
    # an 8-bit B given row-major, copied into its K-major slot byte by byte,
    # spills 24 bytes at 128 x 256 with 3 stages since shared addresses are
    # 32-bit (18 store bases, 24 before; ptxas 13.0 allocates it otherwise)
    tight = nw == 16 and M == 128 and stages == 3 and not b_col and a in ("i8", "fp8e4nv")
    if PTXAS and not (a == "fp32" and nw == 16 and stages == 1):
        assert k.n_spills <= (32 if tight else 0), f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


def test_fallback_where_no_split_fits():
    """64 x 16 with 16 warps: four blocks of 4 columns, under the 8 of the
    narrowest instruction; the dot stays on mma.sync."""
    k = compile_dot("fp16", "fp16", "fp32", False, 3, 64, 16, 16)
    assert "wgmma" not in k.asm["ptx"] and "mma.sync.aligned.m16n8k16" in k.asm["ptx"]


def test_block_inside_an_atom_offset():
    """64 x 64 with 8 warps (Triton's [4, 2] with 32-column instructions):
    the second warpgroup's B starts 64 bytes into the 128-byte rows of a
    row-major B (bits of the warp id: (warp << 4) & 64), and a column-major
    B 32 rows of 128 bytes on."""
    ptx = compile_dot("fp16", "fp16", "fp32", False, 3, 64, 64, 8).asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16" in ptx
    assert re.search(r"and\.b32\s+%r\d+, %r\d+, 64;", ptx)
    ptx = compile_dot("fp16", "fp16", "fp32", True, 3, 64, 64, 8).asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16" in ptx


def test_stacked_layout_unchanged():
    """Where M gives every warpgroup its own rows, the warps stay stacked
    along M (128 x 128, 8 warps: [8, 1])."""
    k = compile_dot("fp16", "fp16", "fp32", False, 3, 128, 128, 8)
    assert "#mma<version = [3, 0], wpc = [8, 1]" in k.asm["ct.ttgir"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16" in k.asm["ptx"]


@triton.jit
def attn_kernel(Q, K, V, O, N_CTX, scale, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, N_CTX, BN):
        k = tl.load(K + (start + rn)[None, :] * D + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + (start + rn)[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16))


def compile_attn(BM, BN, D, nw):
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "N_CTX": "i32", "scale": "fp32"}
    cx = dict(BM=BM, BN=BN, D=D)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in ("Q", "K", "V", "O", "N_CTX")}
    return triton.compile(ASTSource(attn_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": nw, "num_stages": 2})


@pytest.mark.parametrize("BN,D", [(128, 64), (128, 128), (64, 128), (64, 64), (32, 64)])
def test_attention_tile_of_64_rows_with_8_warps(BN, D):
    """A 64-row tile with 8 warps: S = Q K^T split along BN and P V along D,
    each warpgroup half of the columns (blocks of 16 or 32 columns inside a
    swizzle atom too). At BN = D = 128 this was 255 registers and 412 bytes
    spilled on mma.sync."""
    k = compile_attn(64, BN, D, 8)
    ptx = k.asm["ptx"]
    for n in (BN, D):
        assert f"wgmma.mma_async.sync.aligned.m64n{n // 2}k16" in ptx
    assert "mma.sync" not in ptx
    if PTXAS:
        assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


def _sm90():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,nw", SHAPES)
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0]}x{t[1]}-{t[2]}")
def test_split_dot_gpu(types, b_col, stages, M, N, nw):
    torch = _sm90()
    a_t, b_t, c_t, _, _ = types
    run_dot_dtype(torch, a_t, b_t, c_t, "tf32", b_col, stages, M, N, 256, nw, seed=5)


@pytest.mark.gpu
@pytest.mark.parametrize("BN,D", [(128, 64), (128, 128), (64, 128), (64, 64), (32, 64)])
def test_attention_split_gpu(BN, D):
    torch = _sm90()
    N_CTX, BM = 512, 64
    g = torch.Generator(device="cuda").manual_seed(9)
    q, k, v = (torch.randn((N_CTX, D), device="cuda", generator=g).half() for _ in range(3))
    o = torch.empty_like(q)
    scale = D ** -0.5
    attn_kernel[(N_CTX // BM,)](q, k, v, o, N_CTX, scale, BM=BM, BN=BN, D=D, num_warps=8, num_stages=2)
    ref = torch.softmax((q.float() @ k.float().t()) * scale, dim=1) @ v.float()
    torch.testing.assert_close(o.float(), ref, atol=2e-2, rtol=2e-2)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    npn = tl.cdiv(N, BN)
    pm, pn = pid // npn, pid % npn
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_p = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_p = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_p, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_p, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_p += BK * sak
        b_p += BK * sbk
    acc = tl.where(acc > 0, acc, 0.01 * acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "TN", "NT"])
@pytest.mark.parametrize("BM,BN,BK,nw", [(64, 128, 64, 8), (64, 256, 32, 8), (128, 256, 64, 16),
                                         (64, 64, 64, 8), (64, 32, 32, 8)])
def test_split_matmul_tails_gpu(layout, BM, BN, BK, nw):
    """Masked K loop (the tutorial's form) with M, N, K tails, A or B
    column-major, a leaky-relu epilogue in the accumulator's layout."""
    torch = _sm90()
    M, N, K = 200, 392, 328
    g = torch.Generator(device="cuda").manual_seed(4)
    a = torch.randn((M, K), device="cuda", generator=g).half()
    b = torch.randn((K, N), device="cuda", generator=g).half()
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    k = matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, num_warps=nw, num_stages=3)
    assert "wgmma.mma_async" in k.asm["ptx"]
    ref = a.float() @ b.float()
    ref = torch.where(ref > 0, ref, 0.01 * ref).half()
    torch.testing.assert_close(c, ref, atol=5e-2, rtol=1e-2)
