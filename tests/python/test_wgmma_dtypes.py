"""tl.dot on warpgroup MMA (sm_90a) for every operand type it takes: f16,
bf16, fp8 e4m3 / e5m2 (any mix), f32 as tf32, int8 -> int32; B row-major and
column-major; one and several pipeline stages. Without a GPU: the PTX holds
the wgmma form each type needs (16-bit: B may be read transposed; others:
both operands K-major from shared memory) and ptxas accepts it. On the GPU
(marked `gpu`): the results against torch."""
import os
import re
import shutil

import pytest

import ctriton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from wgmma_kernels import dot_dtype_kernel

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))

# (a, b, accumulator, input_precision, PTX type names)
TYPES = [
    ("fp16", "fp16", "fp32", "tf32", "f32.f16.f16"),
    ("bf16", "bf16", "fp32", "tf32", "f32.bf16.bf16"),
    ("fp8e4nv", "fp8e4nv", "fp32", "tf32", "f32.e4m3.e4m3"),
    ("fp8e5", "fp8e5", "fp32", "tf32", "f32.e5m2.e5m2"),
    ("fp8e4nv", "fp8e5", "fp32", "tf32", "f32.e4m3.e5m2"),
    ("fp32", "fp32", "fp32", "tf32", "f32.tf32.tf32"),
    ("i8", "i8", "i32", "tf32", "s32.s8.s8"),
]


def compile_dot(a, b, c, prec, b_col, stages, M=128, N=128, BK=64, nw=4, arch=90):
    sig = {"a_ptr": "*" + a, "b_ptr": "*" + b, "c_ptr": "*" + c, "K": "i32"}
    cx = dict(M=M, N=N, BK=BK, B_COL=b_col, INT=c == "i32", PREC=prec, ACC16=c == "fp16")
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "K")}
    return ctriton.compile(ASTSource(dot_dtype_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                           options={"num_warps": nw, "num_stages": stages})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0]}x{t[1]}")
def test_wgmma_form(types, b_col, stages):
    a, b, c, prec, names = types
    k = compile_dot(a, b, c, prec, b_col, stages)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    kstep = 16 if a in ("fp16", "bf16") else 8 if a == "fp32" else 32
    assert "#mma<version = [3, 0]" in ttgir
    m = re.findall(rf"wgmma.mma_async.sync.aligned.m64n128k{kstep}.{names} {{[^}}]*}}, ([^;]*);", ptx)
    assert m, ptx[-3000:]
    tail = m[0].split(", ")
    if a in ("fp16", "bf16"):
        # A from shared memory (it is loaded); B read transposed unless it is
        # a column-major tile: copied straight into a K-major slot, or (one
        # stage) staged K-major from registers that run along K
        assert tail[2:] == ["p", "1", "1", "0", "0" if b_col else "1"], tail
    elif a == "i8":
        assert tail[2:] == ["p"], tail
    else:
        assert tail[2:] == ["p", "1", "1"], tail
    if stages > 1 and (b_col or a in ("fp16", "bf16")):
        assert "cp.async.cg.shared.global" in ptx  # K-major B straight from global memory
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"


def test_ieee_stays_exact_tf32x3_splits():
    """f32 with input_precision ieee keeps full precision: no tensor cores
    (the FMA path); tf32x3 runs as three tf32 warpgroup MMAs (split-dots)."""
    k = compile_dot("fp32", "fp32", "fp32", "ieee", False, 1)
    assert "wgmma" not in k.asm["ptx"] and "#mma" not in k.asm["ct.ttgir"]
    k = compile_dot("fp32", "fp32", "fp32", "tf32x3", False, 1)
    assert k.asm["ct.ttgir"].count("input_precision = \"tf32\"") == 3
    assert "wgmma.mma_async.sync.aligned" in k.asm["ptx"] and ".tf32.tf32" in k.asm["ptx"]


TORCH_DT = {"fp16": "float16", "bf16": "bfloat16", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
            "fp32": "float32", "i8": "int8"}


def run_dot_dtype(torch, a_t, b_t, c_t, prec, b_col, stages, M, N, K, nw, seed):
    """dot_dtype_kernel on the GPU over random a_t / b_t operands (B stored
    column-major when b_col), accumulating in c_t, against torch: int8
    exactly (int64 on the CPU: no integer matmul on CUDA), the others by
    relative error."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(shape, name):
        if name == "i8":
            return torch.randint(-8, 8, shape, device="cuda", generator=g, dtype=torch.int8)
        return torch.randn(shape, device="cuda", generator=g).to(getattr(torch, TORCH_DT[name]))

    a = rand((M, K), a_t)
    bm = rand((K, N), b_t)
    b = bm.t().contiguous() if b_col else bm  # column-major: stored [N][K]
    cdt = {"i32": torch.int32, "fp16": torch.float16, "fp32": torch.float32}[c_t]
    c = torch.full((M, N), -7, device="cuda", dtype=cdt)
    dot_dtype_kernel[(1,)](a, b, c, K, M=M, N=N, BK=64, B_COL=b_col, INT=c_t == "i32", PREC=prec,
                           ACC16=c_t == "fp16", num_warps=nw, num_stages=stages)
    if c_t == "i32":
        ref = a.cpu().to(torch.int64) @ bm.cpu().to(torch.int64)
        assert torch.equal(c.cpu().to(torch.int64), ref)
    else:
        ref = a.double() @ bm.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < (3e-3 if a_t == "fp32" else 1e-2), err


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0]}x{t[1]}")
def test_wgmma_dtype_gpu(types, b_col, stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU")
    a_t, b_t, c_t, prec, _ = types
    run_dot_dtype(torch, a_t, b_t, c_t, prec, b_col, stages, 128, 128, 256, 4, seed=0)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
@pytest.mark.parametrize("nw", [4, 8])
def test_tf32_any_layout_gpu(layout, nw):
    """fp32 operands on tensor cores (tf32) in every layout with M, N, K not
    multiples of the tile: a row-major B or a column-major A is copied into
    its K-major slot element by element (4-byte cp.async, zero-filled past
    the bounds); against a float64 reference."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU")
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))
    from lltm import matmul_f32_kernel
    M, N, K = 300, 264, 200
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(M, K, device="cuda", generator=g)
    b = torch.randn(K, N, device="cuda", generator=g)
    if layout[0] == "T":
        a = a.t().contiguous().t()  # column-major A
    if layout[1] == "T":
        b = b.t().contiguous().t()  # column-major B: K contiguous
    c = torch.full((M, N), float("nan"), device="cuda")
    bm, bn, bk = 128, 128, 32
    matmul_f32_kernel[(triton_cdiv(M, bm) * triton_cdiv(N, bn),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, PREC="tf32", num_warps=nw, num_stages=3)
    ref = a.double() @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 3e-3, err


def triton_cdiv(x, y):
    return (x + y - 1) // y


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("M,N,nw", [(128, 128, 4), (128, 256, 8), (64, 64, 4)])
def test_wgmma_f16_accumulator(b_col, stages, M, N, nw):
    """fp16 x fp16 -> fp16 (out_dtype=tl.float16) on warpgroup MMA: the
    accumulator lives in f16x2 registers (two adjacent columns of a row
    each, N / 4 a thread per m64 instruction), packed before the MMAs and
    unpacked after a wait for them; it was mma.sync. No spills."""
    k = compile_dot("fp16", "fp16", "fp16", "tf32", b_col, stages, M=M, N=N, nw=nw)
    ptx = k.asm["ptx"]
    assert f"wgmma.mma_async.sync.aligned.m64n{N}k16.f16.f16.f16" in ptx
    assert "mma.sync" not in ptx and "#mma<version = [3, 0]" in k.asm["ct.ttgir"]
    m = re.search(r"wgmma\.mma_async\S+ \{([^}]*)\}", ptx)
    assert len(m.group(1).split(",")) == N // 4  # f16x2 accumulator registers
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("M,N,nw", [(128, 128, 4), (128, 256, 8), (64, 64, 4)])
def test_wgmma_f16_accumulator_gpu(b_col, stages, M, N, nw):
    torch = pytest.importorskip("torch")
    K = 256
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn((M, K), device="cuda", generator=g).half()
    bm = torch.randn((K, N), device="cuda", generator=g).half()
    b = bm.t().contiguous() if b_col else bm
    c = torch.full((M, N), -7, device="cuda", dtype=torch.float16)
    dot_dtype_kernel[(1,)](a, b, c, K, M=M, N=N, BK=64, B_COL=b_col, INT=False, PREC="tf32", ACC16=True,
                           num_warps=nw, num_stages=stages)
    ref = a.double() @ bm.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
