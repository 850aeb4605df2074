"""Every kernel of the library (the tutorial kernels of the golden tests),
compiled for sm_80 and sm_90 without a GPU, and its PTX assembled by ptxas:
invalid PTX fails here, on machines with no GPU. The compile driver runs
ptxas itself when it finds it and keeps the cubin; a failure is an error."""
import os
import shutil

import pytest

import ctriton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from test_golden_ttir import CASES

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ptxas_accepts(name, arch):
    import importlib
    mod, fn, sig, cx, attrs, opts = CASES[name]
    kernel = getattr(importlib.import_module(mod), fn)
    sig = dict(sig)
    for k in cx:
        sig[k] = "constexpr"
    k = ctriton.compile(ASTSource(kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                        options=opts)
    assert f".target sm_{arch}" in k.asm["ptx"]
    cubin = k.asm.get("cubin")
    assert cubin and cubin[:4] == b"\x7fELF", "ptxas produced no cubin"
    assert k.n_regs > 0


DOT_FORMS = [  # dtype, ACC (loop-carried), TRANS_B, EPI, num_warps
    ("fp16", False, False, False, 4), ("fp16", True, False, False, 4), ("fp16", True, True, True, 8),
    ("bf16", False, True, False, 4), ("bf16", True, False, True, 2),
]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("form", DOT_FORMS)
def test_dot_tensor_cores(form, arch):
    """tl.dot of 16-bit operands: the accumulator in #mma, the operands in
    #dot_op, ldmatrix and mma.sync in the PTX, accepted by ptxas."""
    from test_dot_gpu import dot_kernel
    dt, acc, trans, epi, nw = form
    cx = dict(M=64, N=64, K=32, STEPS=2, ACC=acc, TRANS_B=trans, EPI=epi)
    sig = {"a_ptr": "*" + dt, "b_ptr": "*" + dt, "c_ptr": "*fp32"}
    sig.update({k: "constexpr" for k in cx})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", arch, 32),
                        options={"num_warps": nw})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "= dot " in ttgir and "#mma<version = [2, 0]" in ttgir
    assert "#dot_op<opidx = 0" in ttgir and "#dot_op<opidx = 1" in ttgir
    for line in ttgir.splitlines():
        if "= dot " in line:
            assert line.split(" : ")[-1].startswith("block<64x64xf32, #mma<"), line
    if acc:  # the loop carries the accumulator in the mma layout: no conversion inside
        body = ttgir[ttgir.index(" = for "):ttgir.index("yield")]
        assert "block<64x64xf32, #blocked" not in body
    ab = "bf16" if dt == "bf16" else "f16"
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"


def test_dot_fma_before_sm80():
    """Before sm_80 (and for 32-bit operands) dot stays on the FMA path."""
    from test_dot_gpu import dot_kernel
    cx = dict(M=64, N=64, K=32, STEPS=1, ACC=False, TRANS_B=False, EPI=False)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    sig.update({k: "constexpr" for k in cx})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 75, 32))
    assert "#mma" not in k.asm["ttgir"] and "mma.sync" not in k.asm["ptx"]
    sig.update({"a_ptr": "*fp32", "b_ptr": "*fp32"})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 80, 32))
    assert "#mma" not in k.asm["ttgir"] and "mma.sync" not in k.asm["ptx"]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_matmul_cp_async(arch, stages):
    """The bench matmul (128x128x32, 8 warps): with num_stages >= 2 its A and
    B tiles go through cp.async into num_stages shared slots (async_copy /
    local_read in TTGIR, cp.async + wait_group + ldmatrix in PTX); with 1
    stage they are loaded into registers. Accepted by ptxas."""
    import types
    import ctriton.language as tl
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "..", "bench", "kernels_src.py")
    ks = types.ModuleType("kernels_src_ptxas")
    ks.triton, ks.tl = ctriton, tl
    with open(src) as f:
        exec(compile(f.read(), src, "exec"), ks.__dict__)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, stride_ak=1, stride_bn=1, stride_cn=1)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 7, 8)}
    k = ctriton.compile(ASTSource(ks.matmul, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                        options={"num_warps": 8, "num_stages": stages})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    if stages >= 2:
        assert ttgir.count("async_copy ") == 2 * stages  # prologue (stages-1 tiles) + body, A and B
        assert f"async_wait {{pending = {stages - 2}}}" in ttgir and "async_wait {pending = 0}" in ttgir
        assert "local_read" in ttgir and "#dot_op<opidx = 0" in ttgir
        assert "cp.async.cg.shared.global" in ptx and "cp.async.commit_group" in ptx
        assert f"cp.async.wait_group {stages - 2}" in ptx
    else:
        assert "cp.async" not in ptx and "async_copy" not in ttgir
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"
