"""tl.dot over element types, input precisions and shapes, the forms each
takes on tensor cores: mma.sync for f16 (f32 or f16 accumulate), bf16, tf32
(m16n8k8), int8 (m16n8k32) and fp8 upcast to f16 where warpgroup MMA does
not fit (small M, 2 warps, sm_80); tf32x3 / bf16x3 / bf16x6 as several
tensor-core dots; a dot whose A is the previous dot's result (chained), which
warpgroup MMA reads from shared memory for tf32 and fp8; M and N below 16.

The instruction checks compile through ptxas for sm_80 and sm_90 (no GPU
needed); the results are checked against numpy on the GPU (marked `gpu`)
and, for the exact forms, on the CPU backend."""
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from test_ptxas import PTXAS


@triton.jit
def dot_kernel(X, Y, W, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               PREC: tl.constexpr, CHAIN: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x = tl.load(X + rm[:, None] * BLOCK_K + rk[None, :])
    y = tl.load(Y + rk[:, None] * BLOCK_N + rn[None, :])
    z = tl.dot(x, y, input_precision=PREC, out_dtype=OUT)
    if CHAIN:
        w = tl.load(W + rn[:, None] * BLOCK_N + rn[None, :])
        z = tl.dot(z.to(w.dtype), w, input_precision=PREC, out_dtype=OUT)
    tl.store(Z + rm[:, None] * BLOCK_N + rn[None, :], z)


OUT = {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32}


def compile_for(arch, dt, M, N, K, nw, prec, chain, out):
    sig = {"X": "*" + dt, "Y": "*" + dt, "W": "*" + dt, "Z": "*" + out}
    cx = {"BLOCK_M": M, "BLOCK_N": N, "BLOCK_K": K, "PREC": prec, "CHAIN": chain, "OUT": OUT[out]}
    sig.update({k: "constexpr" for k in cx})
    attrs = {k: {"divisibility": 16} for k in ("X", "Y", "W", "Z")}
    return triton.compile(ASTSource(dot_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": nw})


# (dtype, M, N, K, warps, precision, chain, out) -> the MMA instruction wanted on sm_80 and on sm_90
FORMS = [
    (("fp32", 16, 16, 16, 4, "tf32", 0, "fp32"), r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32",
     r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32"),
    (("fp32", 64, 64, 64, 2, "tf32", 0, "fp32"), r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32",
     r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32"),
    (("fp32", 64, 64, 64, 4, "tf32", 0, "fp32"), r"mma\.sync\.aligned\.m16n8k8", r"wgmma\.mma_async[.\w]*\.tf32\.tf32"),
    (("fp32", 32, 32, 32, 4, "tf32x3", 0, "fp32"), r"m16n8k8\.row\.col\.f32\.tf32", r"m16n8k8\.row\.col\.f32\.tf32"),
    (("fp32", 32, 32, 32, 4, "bf16x3", 0, "fp32"), r"m16n8k16\.row\.col\.f32\.bf16\.bf16",
     r"m16n8k16\.row\.col\.f32\.bf16\.bf16"),
    (("fp32", 64, 64, 64, 4, "bf16x6", 0, "fp32"), r"m16n8k16\.row\.col\.f32\.bf16\.bf16",
     r"wgmma\.mma_async[.\w]*\.f32\.bf16\.bf16"),
    (("fp16", 16, 16, 16, 4, "ieee", 0, "fp32"), r"m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
     r"m16n8k16\.row\.col\.f32\.f16\.f16\.f32"),
    (("fp16", 64, 64, 64, 4, "ieee", 0, "fp16"), r"m16n8k16\.row\.col\.f16\.f16\.f16\.f16",
     r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f16\.f16\.f16"),
    (("i8", 32, 128, 64, 4, "ieee", 0, "i32"), r"m16n8k32\.row\.col\.satfinite\.s32\.s8\.s8\.s32",
     r"m16n8k32\.row\.col\.satfinite\.s32\.s8\.s8\.s32"),
    (("i8", 128, 128, 64, 4, "ieee", 0, "i32"), r"m16n8k32\.row\.col\.satfinite\.s32\.s8\.s8\.s32",
     r"wgmma\.mma_async[.\w]*\.s32\.s8\.s8"),
    (("fp8e5", 16, 64, 32, 4, "ieee", 0, "fp32"), r"m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
     r"m16n8k16\.row\.col\.f32\.f16\.f16\.f32"),
    (("fp8e5", 128, 128, 64, 4, "ieee", 1, "fp32"), r"m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
     r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e5m2\.e5m2"),
]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f[0])))
def test_dot_instruction(form, arch):
    cfg, want80, want90 = form
    k = compile_for(arch, *cfg)
    ptx = k.asm["ptx"]
    assert re.search(want80 if arch == 80 else want90, ptx), sorted(set(re.findall(r"w?gmma[.\w]*|mma\.sync[.\w]*", ptx)))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("dt,prec", [("fp32", "tf32"), ("fp8e5", "ieee"), ("fp8e4nv", "ieee")])
def test_chained_dot_stages_its_a(dt, prec):
    """A tf32 or fp8 A that warpgroup MMA reads from shared memory has its own
    staging buffer even when it is the previous dot's result in registers
    (it once shared offset 0 with the staged B)."""
    M = 64 if dt == "fp32" else 128
    k = compile_for(90, dt, M, M, 64, 4, prec, 1, "fp32")
    ttgir = k.asm["ct.ttgir"]
    conv = [line for line in ttgir.splitlines() if "convert_layout" in line and "#dot_op<opidx" in line]
    assert len(conv) == 4, conv
    offs = [re.search(r"scratch_offset = (\d+)", line) for line in conv[2:]]
    assert all(offs), conv[2:]
    assert offs[0].group(1) != offs[1].group(1)


def f8_bits(rs, shape):
    # small positive fp8 values, as the upstream tests draw them
    return rs.randint(20, 40, shape).astype(np.uint8)


def f8_to_f32(bits, dt):
    import torch
    t = torch.from_numpy(bits.view(np.int8)).view(torch.float8_e5m2 if dt == "fp8e5" else torch.float8_e4m3fn)
    return t.float().numpy()


def run_case(dt, M, N, K, nw, prec, chain, out, device):
    import torch
    rs = np.random.RandomState(17)
    if dt == "i8":
        x, y, w = (rs.randint(-8, 8, s).astype(np.int8) for s in ((M, K), (K, N), (N, N)))
    elif dt.startswith("fp8"):
        x, y, w = (f8_bits(rs, s) for s in ((M, K), (K, N), (N, N)))
    else:
        npdt = np.float16 if dt == "fp16" else np.float32
        x, y, w = ((rs.randn(*s) * 0.1).astype(npdt) for s in ((M, K), (K, N), (N, N)))
        if prec in ("tf32", "bf16x3", "bf16x6") and dt == "fp32":
            x, y, w = ((v.view(np.uint32) & np.uint32(0xffffe000)).view(np.float32) for v in (x, y, w))
    tdt = {"fp8e5": torch.float8_e5m2, "fp8e4nv": torch.float8_e4m3fn}.get(dt)

    def dev(a):
        t = torch.from_numpy(a.view(np.int8) if tdt is not None else a).to(device)
        return t.view(tdt) if tdt is not None else t

    odt = {"fp32": torch.float32, "fp16": torch.float16, "i32": torch.int32}[out]
    z = torch.empty((M, N), dtype=odt, device=device)
    dot_kernel[(1,)](dev(x), dev(y), dev(w), z, BLOCK_M=M, BLOCK_N=N, BLOCK_K=K, PREC=prec, CHAIN=chain,
                     OUT=OUT[out], num_warps=nw)
    if tdt is not None:
        xf, yf, wf = f8_to_f32(x, dt), f8_to_f32(y, dt), f8_to_f32(w, dt)
    else:
        xf, yf, wf = (v.astype(np.float64) for v in (x, y, w))
    ref = xf.astype(np.float64) @ yf.astype(np.float64)
    if chain:
        if tdt is not None:  # z rounded to the operand type first, as the kernel does
            zr = torch.from_numpy(ref.astype(np.float32)).to(tdt).float().numpy()
        else:
            zr = ref.astype(x.dtype).astype(np.float64)
        ref = zr @ wf.astype(np.float64)
    got = z.cpu().numpy().astype(np.float64)
    if dt == "i8":
        np.testing.assert_array_equal(got, ref)
    else:
        tol = 1e-2 if out == "fp16" or dt.startswith("fp8") else 1e-3
        np.testing.assert_allclose(got, ref, rtol=1e-2, atol=tol)


GPU_CASES = [f[0] for f in FORMS] + [
    ("fp32", 64, 64, 64, 4, "tf32", 1, "fp32"),      # chained tf32 through shared memory
    ("fp8e4nv", 128, 128, 64, 4, "ieee", 1, "fp32"),  # chained fp8
    ("fp16", 2, 4, 32, 1, "ieee", 0, "fp32"),         # below the MMA tile: FMAs
    ("fp8e5", 1, 2, 32, 1, "ieee", 0, "fp32"),
    ("fp16", 64, 64, 64, 4, "ieee", 1, "fp16"),
    ("i8", 32, 32, 64, 2, "ieee", 0, "i32"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(map(str, c)))
def test_dot_form_gpu(case):
    run_case(*case, device="cuda")


@pytest.mark.parametrize("case", [c for c in GPU_CASES if c[0] in ("i8", "fp16") and c[6] == 0],
                         ids=lambda c: "-".join(map(str, c)))
def test_dot_form_cpu(case):
    pytest.importorskip("torch")
    run_case(*case, device="cpu")


@triton.jit
def dot3d_kernel(q_ptr, k_ptr, o_ptr, stride_qb, stride_qm, stride_kb, stride_kk, stride_ob, stride_om,
                 BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_b = tl.arange(0, BLOCK_B)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    q = tl.load(q_ptr + offs_b[:, None, None] * stride_qb + offs_m[None, :, None] * stride_qm + offs_k[None, None, :])
    k = tl.load(k_ptr + offs_b[:, None, None] * stride_kb + offs_k[None, :, None] * stride_kk + offs_n[None, None, :])
    o = tl.dot(q, k)
    tl.store(o_ptr + offs_b[:, None, None] * stride_ob + offs_m[None, :, None] * stride_om + offs_n[None, None, :], o)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("dt,B,nw", [("i8", 1, 4), ("fp32", 2, 2), ("fp16", 8, 4)])
def test_dot3d_index_slices_exchange(dt, B, nw):
    """offs_k broadcast along dim 1 of K's pointers and along dim 2 of Q's
    comes from one 1-D range: its two slice layouts (of one parent, different
    dims) hold different registers, so the conversion between them goes
    through scratch. Taken as free, the K loads read another thread's offset
    (misaligned vector loads on the H200) or a register it lacks."""
    sig = {"q_ptr": "*" + dt, "k_ptr": "*" + dt, "o_ptr": "*" + ("i32" if dt == "i8" else "fp32")}
    sig.update({s: "i32" for s in ("stride_qb", "stride_qm", "stride_kb", "stride_kk", "stride_ob", "stride_om")})
    cx = {"BLOCK_B": B, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
    sig.update({k: "constexpr" for k in cx})
    attrs = {k: {"divisibility": 16} for k in sig if sig[k] != "constexpr"}
    k = triton.compile(ASTSource(dot3d_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": nw})
    for line in k.asm["ct.ttgir"].splitlines():
        m = re.search(r"convert_layout .*: block<1x32xi32, #slice<dim = (\d)", line)
        if m:
            assert "scratch_offset" in line, line


@triton.jit
def imprecise_kernel(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, MNIA: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc=acc, max_num_imprecise_acc=MNIA)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


IMPRECISE = [(128, 256, 128, 32), (128, 256, 128, 128), (64, 64, 64, 32), (64, 64, 64, 64),
             (64, 128, 64, 32)]  # the last: warpgroups split along N


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("cfg", IMPRECISE, ids=lambda c: "x".join(map(str, c)))
def test_max_num_imprecise_acc_adds(cfg):
    """fp8 dots with max_num_imprecise_acc add a partial sum to the f32
    accumulator every mnia elements of K: one add.f32 per accumulator
    register and group, on warpgroup MMA and on mma.sync (upcast) alike."""
    BM, BN, BK, mnia = cfg
    sig = {"a_ptr": "*fp8e5", "b_ptr": "*fp8e5", "c_ptr": "*fp32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32"}
    cx = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "MNIA": mnia}
    sig.update({k: "constexpr" for k in cx})
    attrs = {k: {"divisibility": 16} for k in sig if sig[k] != "constexpr"}
    k = triton.compile(ASTSource(imprecise_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    assert k.asm["ptx"].count("add.f32") == BM * BN // (32 * 8) * (BK // mnia)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", IMPRECISE, ids=lambda c: "x".join(map(str, c)))
def test_max_num_imprecise_acc_gpu(cfg):
    import torch
    BM, BN, BK, mnia = cfg
    K = 256
    a = torch.randint(20, 40, (BM, K), dtype=torch.uint8).view(torch.float8_e5m2).cuda()
    b = torch.randint(20, 40, (K, BN), dtype=torch.uint8).view(torch.float8_e5m2).cuda()
    c = torch.empty((BM, BN), dtype=torch.float32, device="cuda")
    imprecise_kernel[(1,)](a, b, c, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                           MNIA=mnia, num_warps=8, num_stages=3)
    ref = a.float() @ b.float()
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)
