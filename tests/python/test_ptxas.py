"""Every kernel of the library (the tutorial kernels of the golden tests),
compiled for sm_80 and sm_90 without a GPU, and its PTX assembled by ptxas:
invalid PTX fails here, on machines with no GPU. The compile driver runs
ptxas itself when it finds it and keeps the cubin; a failure is an error."""
import os
import re
import shutil

import pytest

import ctriton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from ptx_util import ptx_loops
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
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    # sm_90: warpgroup MMA with whole warpgroups (8 warps: two of 64 x 32)
    wg = arch == 90 and nw % 4 == 0
    assert "= dot " in ttgir and f"#mma<version = [{3 if wg else 2}, 0]" in ttgir
    assert "#dot_op<opidx = 0" in ttgir and "#dot_op<opidx = 1" in ttgir
    for line in ttgir.splitlines():
        if "= dot " in line:
            assert line.split(" : ")[-1].startswith("block<64x64xf32, #mma<"), line
    if acc:  # the loop carries the accumulator in the mma layout: no conversion inside
        body = ttgir[ttgir.index(" = for "):ttgir.index("yield")]
        assert "block<64x64xf32, #blocked" not in body
    ab = "bf16" if dt == "bf16" else "f16"
    if wg:  # loaded A and B both read from shared memory by descriptor;
        # a transposed B (registers along K) K-major, else read transposed
        import re
        n, tb = 64 // (nw // 4), 0 if trans else 1
        assert re.search(rf"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{[^}}]*}}, %rd\d+, %rd\d+, p, 1, 1, 0, "
                         rf"{tb};", ptx)
        assert "wgmma.fence.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned 0" in ptx
        assert "fence.proxy.async.shared::cta" in ptx
        assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    else:
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
        assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32" in ptx
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"


def test_dot_fma_before_sm80():
    """Before sm_80 dot stays on the FMA path; from sm_80 f32 operands (default
    precision tf32) take mma.sync m16n8k8 tf32, as in Triton."""
    from test_dot_gpu import dot_kernel
    cx = dict(M=64, N=64, K=32, STEPS=1, ACC=False, TRANS_B=False, EPI=False)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    sig.update({k: "constexpr" for k in cx})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 75, 32))
    assert "#mma" not in k.asm["ct.ttgir"] and "mma.sync" not in k.asm["ptx"]
    sig.update({"a_ptr": "*fp32", "b_ptr": "*fp32"})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 75, 32))
    assert "#mma" not in k.asm["ct.ttgir"] and "mma.sync" not in k.asm["ptx"]
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 80, 32))
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in k.asm["ptx"]


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
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    ahead = stages - 1  # tiles copied ahead
    if stages >= 2:
        assert ttgir.count("async_copy ") == 2 * (ahead + 1)  # prologue (ahead tiles) + body, A and B
        assert f"async_wait {{pending = {ahead - 1}}}" in ttgir and "async_wait {pending = 0}" in ttgir
        assert "local_read" in ttgir and "#dot_op<opidx = 0" in ttgir
        assert "cp.async.cg.shared.global" in ptx and "cp.async.commit_group" in ptx
        assert f"cp.async.wait_group {ahead - 1}" in ptx
    else:
        assert "cp.async" not in ptx and "async_copy" not in ttgir
    if arch == 80:  # sm_90: warpgroup MMA reads both tiles by descriptor
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    else:
        assert "wgmma.mma_async" in ptx and "ldmatrix" not in ptx
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"


def _bench_matmul(arch, bm, bn, bk, nw, ns):
    import types
    import ctriton.language as tl
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "..", "bench", "kernels_src.py")
    ks = types.ModuleType("kernels_src_wgmma")
    ks.triton, ks.tl = ctriton, tl
    with open(src) as f:
        exec(compile(f.read(), src, "exec"), ks.__dict__)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, stride_ak=1, stride_bn=1, stride_cn=1)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(9)}
    return ctriton.compile(ASTSource(ks.matmul, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                           options={"num_warps": nw, "num_stages": ns})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("cfg", [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
                                 (64, 128, 64, 4, 4)])
def test_matmul_wgmma_no_spills(cfg):
    """Tutorial 03's matmul (masked K loads) on sm_90a: warpgroup MMA
    (m64nNk16, B from the cp.async slots by descriptor), the next tiles'
    copies issued between the dot's commit and its wait, and no register
    spills in ptxas's report for the configurations that matter."""
    bm, bn, bk, nw, ns = cfg
    k = _bench_matmul(90, *cfg)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert "#mma<version = [3, 0]" in ttgir and ".target sm_90a" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16" in ptx
    assert ptx.count("wgmma.mma_async") == (bm // (16 * nw)) * (bk // 16)
    body = ptx[ptx.index("wgmma.commit_group"):]
    assert "ordered = 1" in ttgir
    # the MMA stays in flight across the back edge, the copies follow a wait
    # for the previous iteration's group
    assert "wgmma_inflight = 1" in ttgir and "wgmma_pending = 1" in ttgir
    assert body.index("wgmma.wait_group.sync.aligned 1;") < body.index("cp.async.cg")
    assert "wgmma.wait_group.sync.aligned 0;" in body  # after the loop
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    assert k.n_regs <= 255
    assert not _ptxas_serializes(ptx)


def _ptxas_serializes(ptx):
    """ptxas's advisories about the warpgroup MMAs (C7514-C7520): it
    serialized them (a wait after each one) because other instructions read
    or write their accumulators, or injected a wait or a fence among them."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([PTXAS, "-arch=sm_90a", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return re.search(r"\(C75\d\d\)[^\n]*(wgmma|warpgroup)", r.stderr) is not None


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_attention_p_stays_in_registers():
    import re
    """Fused attention on sm_90a: both dots on warpgroup MMA, and P (an mma
    result) becomes the second dot's A operand without shared memory: the
    conversion moves no data (no scratch), the softmax runs in the mma
    layout."""
    import importlib
    import sys
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    sys.path.insert(0, root)
    from compile_time import attn_fwd_sig
    at = importlib.import_module("kernels.attention")
    sig, cx = attn_fwd_sig()
    cx.update(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGE=1)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] != "constexpr" and n != "sm_scale"}
    k = ctriton.compile(ASTSource(at.attn_fwd, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": 4, "num_stages": 2})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") == 16
    conv_a = [ln for ln in ttgir.splitlines()
              if "convert_layout" in ln and "block<128x64xf16, #dot_op<opidx = 0" in ln]
    assert conv_a and any("scratch_offset" not in ln for ln in conv_a), conv_a
    # Q is copied once, before the loop, into a one-slot buffer (its own
    # cp.async group, in flight with the loop's first tiles) that the loop's
    # first MMA reads; K (its columns contiguous) and V go through cp.async,
    # K into a transposed slot read K-major
    loop = ttgir.index(" = for ")
    pre = ttgir[:loop].splitlines()
    assert not any(ln.strip().startswith("%") and "convert_layout" in ln and "opidx = 0" in ln for ln in pre)
    assert any("async_copy" in ln and "stages = 1" in ln for ln in pre)
    assert "transposed = 1" in ttgir and ttgir.count("local_read") == 3
    assert re.search(r"local_read[^\n]*block<128x64xf16, #dot_op<opidx = 0", ttgir[loop:])
    assert re.search(r"wgmma.mma_async[^;]*, p, 1, 1, 0, 0;", ptx)  # B (K) untransposed
    assert k.n_spills == 0
    assert not _ptxas_serializes(ptx)
    assert "exp2" in ttgir and any("exp2" in ln and "#mma<version = [3, 0]" in ln for ln in ttgir.splitlines())


def _attn_fwd(D, nw, stage):
    import importlib
    import sys
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    sys.path.insert(0, root)
    from compile_time import attn_fwd_sig
    at = importlib.import_module("kernels.attention")
    sig, cx = attn_fwd_sig()
    cx.update(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, STAGE=stage)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] != "constexpr" and n != "sm_scale"}
    return ctriton.compile(ASTSource(at.attn_fwd, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": nw, "num_stages": 2})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("D,nw", [(64, 4), (128, 8)])
def test_attention_loop_body_is_lean(D, nw):
    """The attention loop as Triton compiles it: the running row statistics
    (m_i and l_i, carried by the loop) live in the mma layout's row slice, so
    the only layout conversion in the loop is P's (which moves no data);
    exp2 is ex2.approx.ftz, and qk * scale - m fuses into fma; no proxy fence
    after the cp.async waits (only ordinary shared stores need one); P @ V
    stays in flight across the back edge into the next Q @ K^T, whose wait
    (wait_group 0, one statement for both dots' registers) covers both; the
    copies' wait for all but P @ V (wait_group 1) is already covered by it,
    so the loop body holds that one wait for its two commits."""
    k = _attn_fwd(D, nw, 1)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert "wgmma_inflight = 2" in ttgir and "wgmma_pending = 1" in ttgir
    loop = [b for b in ptx_loops(ptx) if "wgmma.mma_async" in b]
    assert len(loop) == 1
    assert loop[0].count("wgmma.commit_group") == 2
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned \d+;", loop[0]) == ["wgmma.wait_group.sync.aligned 0;"]
    body = ttgir[ttgir.index(" = for "):]
    body = body[:body.index("\n  } loc")]
    convs = [ln for ln in body.splitlines() if "convert_layout" in ln]
    assert len(convs) == 1 and "#dot_op<opidx = 0" in convs[0], convs
    assert "ex2.approx.ftz.f32" in ptx and "ex2.approx.f32" not in ptx
    assert ptx.count("fma.rn.f32") >= 64 * 128 // (32 * nw)
    for i, ln in enumerate(ptx.splitlines()):
        if "cp.async.wait_group" in ln:
            nxt = "\n".join(ptx.splitlines()[i + 1:i + 4])
            assert "fence.proxy.async" not in nxt, nxt
    assert k.n_spills == 0
    assert not _ptxas_serializes(ptx)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_matmul_cp_async_addresses_share_a_base():
    """A thread's cp.async destinations in one swizzled slot lie at fixed
    distances from its first (rows 8 apart keep their swizzle), so the
    copies are addressed as one base plus constants: 16 copies per
    iteration for 128x128x64 / 4 warps, at most 2 distinct swizzles (one per
    operand) computed in the loop."""
    import re
    k = _bench_matmul(90, 128, 128, 64, 4, 4)
    ptx = k.asm["ptx"]
    loop = ptx[ptx.index("wgmma.commit_group"):]
    loop = loop[:loop.index(" bra ")]
    dsts = re.findall(r"cp\.async\.cg\.shared\.global \[(%r\d+)\]", loop)
    assert len(dsts) == 16, dsts
    # every destination but each operand's first is `base + constant`
    based = 0
    for d in dsts:
        m = re.search(r"add\.s32\s+" + re.escape(d) + r", %r\d+, -?\d+;", loop)
        based += bool(m)
    assert based >= 14, (based, dsts)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_inflight_mma_needs_pipelined_tiles():
    """An MMA left in flight across the loop's back edge reads its tiles
    during the next iteration: only when both come from the pipelined slots.
    A B tile transposed in registers (staged in shared scratch that the next
    iteration rewrites) makes the loop wait for its MMA instead."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_dot_gpu import dot_kernel
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    cx = dict(M=128, N=128, K=32, STEPS=3, ACC=True, TRANS_B=True, EPI=True)
    sig.update({k: "constexpr" for k in cx})
    k = ctriton.compile(ASTSource(dot_kernel, sig, cx), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": 4, "num_stages": 3})
    assert "wgmma.mma_async" in k.asm["ptx"]
    assert "wgmma_inflight" not in k.asm["ct.ttgir"]
    k2 = _bench_matmul(90, 128, 128, 32, 4, 3)
    assert "wgmma_inflight = 1" in k2.asm["ct.ttgir"]


@ctriton.jit
def _grouped_like(ptrs, sizes, c_ptr, BM: ctriton.language.constexpr, BN: ctriton.language.constexpr,
                  BK: ctriton.language.constexpr):
    # tutorial 08's form: base pointers read from memory, strides unknown,
    # `tl.multiple_of` as a statement whose result is not used
    tl = ctriton.language
    a_ptr = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    b_ptr = tl.load(ptrs + 1).to(tl.pointer_type(tl.float16))
    k = tl.load(sizes)
    lda = tl.load(sizes + 1)
    ldb = tl.load(sizes + 2)
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * lda + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(k, BK)):
        tl.multiple_of(a_ptrs, [16, 16])
        tl.multiple_of(b_ptrs, [16, 16])
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * ldb
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_dropped_multiple_of_still_hints():
    """`tl.multiple_of(ptrs, ...)` as a statement hints ptrs itself (as in
    Triton): the tiles behind base pointers read from memory go through
    16-byte cp.async into the warpgroup MMA's slots, and the loop no longer
    carries the original pointers the copies replaced."""
    sig = {"ptrs": "*i64", "sizes": "*i32", "c_ptr": "*fp16", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr"}
    cx = {"BM": 128, "BN": 128, "BK": 64}
    k = ctriton.compile(ASTSource(_grouped_like, sig, cx), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": 4, "num_stages": 3})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and ", 16, " in ptx and "wgmma.mma_async" in ptx
    loop = [ln for ln in ttgir.splitlines() if " = for " in ln and "#mma" in ln][0]
    # acc, the two pointers the copies run ahead with, the slot index
    assert loop.split(" = for ")[0].count("%") == 4, loop
    assert "spt = [1, 8]" in loop
    assert not _ptxas_serializes(ptx)


@ctriton.jit
def _gather_feeding_mma(X, O, M: ctriton.language.constexpr, K: ctriton.language.constexpr):
    tl = ctriton.language
    rm = tl.arange(0, M)
    s = tl.load(X + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    idx = (tl.arange(0, K) >> 5)[None, :] + tl.zeros((M, K), tl.int32)
    g = tl.gather(s, idx, 1)                   # wanted in the mma layout by the dot
    a = g.to(tl.float16)
    b = tl.load(X + tl.arange(0, K)[:, None] * 64 + tl.arange(0, 64)[None, :]).to(tl.float16)
    tl.store(O + rm[:, None] * 64 + tl.arange(0, 64)[None, :], tl.dot(a, b))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_gather_index_in_result_layout():
    """gather is lowered register by register over its result and its index:
    when the result takes another layout (here the mma layout the dot wants
    for A, as dot_scaled's scales do), the index is converted to it (an
    index computed from ranges and constants: computed again in it)."""
    import re
    k = ctriton.compile(ASTSource(_gather_feeding_mma, {"X": "*fp32", "O": "*fp32", "M": "constexpr",
                                                        "K": "constexpr"}, {"M": 128, "K": 64}),
                        target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    ttgir = k.asm["ct.ttgir"]
    g = [ln for ln in ttgir.splitlines() if " = gather " in ln][0]
    def layout(line):
        return re.sub(r" loc\(.*\)$", "", line.split(" : ")[-1].split(", ", 1)[1])

    idx = re.search(r"gather %\d+, (%\d+)", g).group(1)
    d = [ln for ln in ttgir.splitlines() if ln.strip().startswith(idx + " = ")][0]
    assert "#mma<" in layout(g) and layout(d) == layout(g), (g, d)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_warp_id_read_from_lane_zero():
    """The warp id comes from lane 0 (shfl.sync.idx), so ptxas keeps the
    warpgroup's matrix descriptors in uniform registers."""
    k = _bench_matmul(90, 128, 256, 64, 8, 3)
    assert "shfl.sync.idx.b32" in k.asm["ptx"]



@ctriton.jit
def _div_kernel(x, y, o, RN: ctriton.language.constexpr):
    i = ctriton.language.arange(0, 128)
    a = ctriton.language.load(x + i)
    b = ctriton.language.load(y + i)
    if RN:
        r = ctriton.language.math.div_rn(a, b)
    else:
        r = a / b
    ctriton.language.store(o + i, r)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt,rn,want", [("fp32", False, "div.full.f32"), ("fp32", True, "div.rn.f32"),
                                        ("fp16", False, "div.full.f32"), ("bf16", False, "div.full.f32"),
                                        ("fp64", False, "div.rn.f64")])
def test_float_division_as_triton(arch, dt, rn, want):
    """`/` on floats is Triton's: div.full.f32 for f32 (f16/bf16 through
    f32), no IEEE division subroutine; tl.div_rn stays correctly rounded."""
    k = ctriton.compile(ASTSource(_div_kernel, {"x": "*" + dt, "y": "*" + dt, "o": "*" + dt, "RN": "constexpr"},
                                  {"RN": rn}), target=GPUTarget("cuda", arch, 32))
    divs = {w for w in k.asm["ptx"].split() if w.startswith("div.")}
    assert divs == {want}, divs


@ctriton.jit
def _strided_half_load(x, o, n, stride):
    i = ctriton.language.arange(0, 256)
    v = ctriton.language.load(x + i * stride, mask=i < n, other=1.0)
    ctriton.language.store(o + i, v)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt,w", [("fp16", "b16"), ("i8", "b8")])
def test_masked_subword_load_is_predicated(arch, dt, w):
    """A masked load too narrow or too scattered to vectorize is one
    predicated ld.global per element (as Triton's), not a branch around
    each load."""
    k = ctriton.compile(ASTSource(_strided_half_load, {"x": "*" + dt, "o": "*" + dt, "n": "i32", "stride": "i32"},
                                  {}), target=GPUTarget("cuda", arch, 32))
    ptx = k.asm["ptx"]
    assert re.search(rf"@\$?%?\w+ ld\.global\.{w}", ptx) or re.search(rf"@%p\d+ ld\.global\.{w}", ptx), ptx[-2000:]
    assert ptx.count(" bra") + ptx.count("\tbra") <= 1


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("dstate", [64, 128])
@pytest.mark.parametrize("prec", ["ieee", "tf32"])
def test_mamba2_ssd_no_spills(dstate, prec):
    """The three kernels of the Mamba-2 SSD scan (kernels/mamba2_ssd.py) at
    the block sizes and warps its wrapper picks for chunk 64, headdim 64 on
    sm_90: no register spills in ptxas's report; tf32 dots on warpgroup
    MMA, "ieee" ones on FMA units."""
    import sys
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    sys.path.insert(0, root)
    import compile_time as ct
    ssd = ct.kernels_module("mamba2_ssd")
    cases = ct.cases()
    (sp, sn, sw), (cp, cn, cw) = ssd._config(64, 64, dstate, prec)
    for name, cx, nw in (("lib.ssd_chunk_state", dict(BLOCK_P=sp, BLOCK_N=sn, PREC=prec), sw),
                         ("lib.ssd_state_pass", {}, 4),
                         ("lib.ssd_chunk_cb", dict(BLOCK_N=cn, PREC=prec), cw),
                         ("lib.ssd_chunk_scan", dict(BLOCK_P=cp, BLOCK_N=cn, PREC=prec, SHARED_CB=True), cw),
                         ("lib.ssd_chunk_scan", dict(BLOCK_P=cp, BLOCK_N=cn, PREC=prec, SHARED_CB=False),
                          cw)):
        fn, sig, cx0, attrs, opts = cases[name]
        opts = dict(opts, num_warps=nw)
        k = ctriton.compile(ct.source((fn, sig, dict(cx0, CHUNK=64, **cx), attrs, opts)),
                            target=GPUTarget("cuda", 90, 32), options=opts)
        assert k.n_spills == 0, f"{name}: {k.n_spills} bytes spilled ({k.n_regs} registers)"
        if name != "lib.ssd_state_pass":
            assert ("wgmma.mma_async" in k.asm["ptx"]) == (prec == "tf32"), name


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
@pytest.mark.parametrize("nw", [4, 8])
def test_tf32_operands_copied_async_any_layout(layout, nw):
    """fp32 operands on tensor cores (tf32) in every layout, on sm_90a: wgmma
    reads 32-bit tiles K-major only, so a row-major B (N-contiguous, the
    usual [K][N]) or a column-major A is copied element by element (4-byte
    cp.async) into the K-major slot, as Triton does; the loop issues no
    global loads of its own and nothing spills. (Row-major B went through
    registers, with 212 bytes of spills at 4 warps.)"""
    import sys
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    sys.path.insert(0, root)
    import compile_time as ct
    lt = ct.kernels_module("lltm")
    fn = lt.matmul_f32_kernel
    sig = {n: "i32" for n in fn.arg_names}
    sig.update(a_ptr="*fp32", b_ptr="*fp32", c_ptr="*fp32")
    cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, PREC="tf32", stride_cn=1)
    cx["stride_ak" if layout[0] == "N" else "stride_am"] = 1
    cx["stride_bn" if layout[1] == "N" else "stride_bk"] = 1
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] != "constexpr"}
    k = ctriton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": nw, "num_stages": 3})
    (lp,) = [lp for lp in ptx_loops(k.asm["ptx"]) if "wgmma.mma_async" in lp]
    assert "ld.global" not in lp and "cp.async.c" in lp
    assert ("cp.async.ca.shared.global" in lp) == (layout != "NT")  # element copies
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


def _matmul_f32_sm80(nw, bm=128, bn=128):
    import sys
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    sys.path.insert(0, root)
    import compile_time as ct
    fn = ct.kernels_module("lltm").matmul_f32_kernel
    sig = {n: "i32" for n in fn.arg_names}
    sig.update(a_ptr="*fp32", b_ptr="*fp32", c_ptr="*fp32")
    cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=32, GROUP_M=8, PREC="tf32", stride_ak=1, stride_bn=1, stride_cn=1)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] != "constexpr"}
    return ctriton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", 80, 32),
                           options={"num_warps": nw, "num_stages": 3})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_spilling_kernel_keeps_its_registers(monkeypatch):
    """ptxas, told only a kernel's block size (.maxntid), trades registers
    for occupancy once spilling is unavoidable (a tf32 matmul at 128 x 128
    / 4 warps on sm_80, before its tiles went through cp.async: 32
    registers and 6.5 KB of spills). A kernel that spills with registers to
    spare is assembled again with `.minnctapersm 1` and the build with
    fewer spills kept: attention backward's preprocessing kernel with its
    masked stores as branches (CTRITON_BRANCH_STORES=1; predicated, it does
    not spill), 40 registers and 4 bytes spilled, becomes 80 registers and
    none. A kernel that does not spill is left as it was."""
    import sys
    monkeypatch.setenv("CTRITON_BRANCH_STORES", "1")
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, os.path.join(root, "bench"))
    import compile_time as ct
    fn, sig, cx, attrs, opts = ct.cases()["lib.attn_bwd_pre"]
    k = ctriton.compile(ct.source((fn, sig, cx, attrs, opts)), target=GPUTarget("cuda", 80, 32), options=opts)
    assert k.n_spills == 0 and ".minnctapersm 1" in k.asm["ptx"], (k.n_regs, k.n_spills)
    small = _matmul_f32_sm80(4, 64, 64)
    assert small.n_spills == 0 and ".minnctapersm" not in small.asm["ptx"]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("nw,bm,bn", [(4, 128, 128), (8, 128, 128), (4, 64, 64)])
def test_tf32_mma_sync_tiles_copied_async(nw, bm, bn):
    """tf32 dots on mma.sync (sm_80) take the cp.async slots like 16-bit
    ones: the loop issues no global load of its own, reads each fragment
    element from the swizzled slot (ld.shared.b32), and nothing spills (the
    128 x 128 / 4 warps tile went through registers: 6.5 KB of spills)."""
    k = _matmul_f32_sm80(nw, bm, bn)
    (lp,) = [lp for lp in ptx_loops(k.asm["ptx"]) if "mma.sync" in lp]
    assert "ld.global" not in lp and "cp.async.c" in lp and "ld.shared.b32" in lp
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in lp
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
