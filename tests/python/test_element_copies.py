"""fp32 tiles copied into their tensor-core slot across the slot's rows (a
row-major B into the K-major slot tf32 needs, a column-major A) move one
4-byte element per cp.async. Their copies take a layout of one element a
thread, 8 lanes along the pointer's contiguous dim and 4 along the other
(analysis/layout.c element_copy_layout): a warp then writes 32 distinct
banks of the swizzled slot, where the coalesced layout (runs of 4 a
thread, 32 lanes along one row) put them on 2 (16-way conflicts).
CTRITON_ELEMENT_COPIES=0 keeps the coalesced layout (part of the key).

Checked without a GPU on the TTGIR for sm_90 (sm_80 copies runs in every
layout: mma.sync reads tf32 from slots of either orientation) and with a model
of the slot's swizzle (backend/nvptx/dot.c: 16-byte chunk c of 128-byte
row r stored at c ^ (r % 8), wider rows cut into 128-byte column blocks);
the results are checked on the GPU by test_wgmma_dtypes.py's
test_tf32_any_layout_gpu, and here with the variable at 0 and unset, on
the device's arch and as sm_80 code (whose mma.sync tf32 slots take the
swizzle their element reads want: CTRITON_REGS_SWIZZLE)."""
import os
import re
import sys

import pytest

import ctriton as triton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))
from lltm import matmul_f32_kernel  # noqa: E402

SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
       "stride_cn": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
       "GROUP_M": "constexpr", "PREC": "constexpr"}


def _compile(arch, layout, bm=128, bn=128, bk=32, nw=8):
    sig = dict(SIG)
    cx = {"stride_cn": 1, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "PREC": "tf32"}
    # the unit strides are constants, as specialization makes them
    ones = ["stride_ak" if layout[0] == "N" else "stride_am", "stride_bn" if layout[1] == "N" else "stride_bk"]
    for o in ones:
        sig[o] = "constexpr"
        cx[o] = 1
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
                                                "stride_bk", "stride_bn", "stride_cm") if n not in ones}
    return triton.compile(ASTSource(matmul_f32_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": nw, "num_stages": 3})


def _layouts(ttgir):
    out = {}
    for m in re.finditer(r"^(#blocked\d*) = #ttg\.blocked<\{sizePerThread = \[(\d+), (\d+)\], threadsPerWarp = "
                         r"\[(\d+), (\d+)\], warpsPerCTA = \[(\d+), (\d+)\], order = \[(\d+), (\d+)\]\}>", ttgir, re.M):
        g = [int(x) for x in m.groups()[1:]]
        out[m.group(1)] = dict(spt=g[0:2], tpw=g[2:4], wpc=g[4:6], order=g[6:8])
    return out


def _copies(ttgir):
    """(shape, layout, transposed) of the 2-D cp.async copies (the prologue's
    and the loop's are alike: one entry each)."""
    lays = _layouts(ttgir)
    out = []
    for ln in ttgir.splitlines():
        m = re.search(r"async_copy_global_to_local .*\(tensor<(\d+)x(\d+)x!tt\.ptr<f32>, (#blocked\d*)>", ln)
        c = m and ((int(m.group(1)), int(m.group(2))), lays[m.group(3)], "transposed = 1" in ln)
        if c and c not in out:
            out.append(c)
    return out


def _swizzled(row, col, R, C):
    """Element index of (row, col) in the 4-byte slot [R][C] (mode 0)."""
    w = 32
    blk = 0
    if C > w:
        blk, col, C = col // w, col % w, w
    nc = C // 4
    key = row % 8 if nc >= 8 else (row // (8 // nc)) % nc if nc > 1 else 0
    return blk * R * w + row * C + (((col // 4) ^ key) * 4) + col % 4


def _write_wavefronts(shape, lay, transposed):
    """The most wavefronts one warp-wide 4-byte copy of warp 0 takes: per
    register, the most distinct words of the 32 lanes on one bank."""
    S0, S1 = shape
    fast = lay["order"][0]
    worst = 0
    n0 = S0 // (lay["spt"][0] * lay["tpw"][0] * lay["wpc"][0]) or 1
    n1 = S1 // (lay["spt"][1] * lay["tpw"][1] * lay["wpc"][1]) or 1
    for j0 in range(n0 * lay["spt"][0]):
        for j1 in range(n1 * lay["spt"][1]):
            banks = {}
            for lane in range(32):
                l = [0, 0]
                l[fast] = lane % lay["tpw"][fast]
                l[1 - fast] = (lane // lay["tpw"][fast]) % lay["tpw"][1 - fast]
                c = [(j // lay["spt"][d]) * lay["spt"][d] * lay["tpw"][d] * lay["wpc"][d] + l[d] * lay["spt"][d]
                     + j % lay["spt"][d] for d, j in ((0, j0), (1, j1))]
                idx = _swizzled(c[1], c[0], S1, S0) if transposed else _swizzled(c[0], c[1], S0, S1)
                banks.setdefault(idx % 32, set()).add(idx)
            worst = max(worst, max(len(v) for v in banks.values()))
    return worst


@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_element_copies_take_distinct_banks(layout, monkeypatch):
    arch = 90
    # N: A [M][K] with K contiguous, B [K][N] with N contiguous; T the other
    # way. A column-major A (its rows along M) and a row-major B (into the
    # K-major slot, transposed) move single elements
    want = ([((128, 32), False)] if layout[0] == "T" else []) + ([((32, 128), True)] if layout[1] == "N" else [])
    copies = _copies(_compile(arch, layout).asm["ttgir"])
    elem = [c for c in copies if c[1]["spt"] == [1, 1]]
    assert sorted((c[0], c[2]) for c in elem) == sorted(want), copies
    for shape, lay, tr in elem:
        fast = lay["order"][0]
        assert lay["tpw"][fast] == 8 and lay["tpw"][1 - fast] == 4, lay
        assert _write_wavefronts(shape, lay, tr) == 1
    monkeypatch.setenv("CTRITON_ELEMENT_COPIES", "0")
    old = [c for c in _copies(_compile(arch, layout).asm["ttgir"]) if c[1]["order"][0] != (0 if c[2] else 1)]
    assert len(old) == len(want) and all(c[1]["spt"] != [1, 1] for c in old), old
    assert all(_write_wavefronts(*c) >= 8 for c in old), [_write_wavefronts(*c) for c in old]


@pytest.mark.parametrize("arch,layout", [(90, "NT"), (80, "NN"), (80, "TN"), (80, "TT"), (80, "NT")])
def test_runs_keep_their_layout(arch, layout):
    # K-contiguous A and B on sm_90, and every layout on sm_80 (mma.sync
    # reads tf32 operands element by element from slots in either
    # orientation) copy 16-byte runs: no element layout
    copies = _copies(_compile(arch, layout).asm["ttgir"])
    assert len(copies) == 2 and all(c[1]["spt"] != [1, 1] and c[1]["order"][0] == (0 if c[2] else 1)
                                    for c in copies), copies


@pytest.mark.parametrize("layout,changes", [("NN", True), ("TN", True), ("TT", True), ("NT", False)])
def test_mma_sync_tf32_slot_swizzle(layout, changes, monkeypatch):
    # sm_80: mma.sync reads tf32 operands from their slots element by
    # element; a slot read across its rows (an N-major B, a transposed A)
    # takes the swizzle that spreads those reads over the banks
    # (backend/nvptx/dot.c nv_regs_swizzle), a K-major one keeps the MMA's
    ptx = _compile(80, layout).asm["ptx"]
    monkeypatch.setenv("CTRITON_REGS_SWIZZLE", "0")
    assert (_compile(80, layout).asm["ptx"] != ptx) == changes


@pytest.mark.parametrize("layout,reads", [("NN", 16), ("NT", 24), ("TN", 0), ("TT", 8)])
def test_mma_sync_tf32_ldmatrix(layout, reads, monkeypatch):
    # sm_80: a K-major tf32 operand of mma.sync (A as [M][K], B held as
    # [N][K]) is read with ldmatrix.x4 as 16-bit pairs, one 16 x 8 A
    # fragment or two 8 x 8 B fragments a call (backend/nvptx/dot.c
    # tf32_ldmatrix); the other orientations stay element reads. At
    # 128x128x32 with 8 warps (2 x 4): A 4 calls a K step of 8 (4 steps,
    # loop and epilogue of the pipeline), B 2
    ptx = _compile(80, layout).asm["ptx"]
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == reads
    assert "ldmatrix" not in ptx.replace("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "")
    monkeypatch.setenv("CTRITON_TF32_LDMATRIX", "0")
    old = _compile(80, layout).asm["ptx"]
    assert "ldmatrix" not in old
    scalar = r"ld\.shared\.(?:b32|f32)"
    assert (len(re.findall(scalar, old)) > len(re.findall(scalar, ptx))) == (reads > 0)


def _run_gpu(layout, M, N, K, seed, cfg, arch):
    """matmul_f32_kernel (tf32) on A and B in the given layout (N: the
    contiguous dim the innermost), its relative error against float64."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g)
    b = torch.randn(K, N, device="cuda", generator=g)
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    c = torch.full((M, N), float("nan"), device="cuda")
    bm, bn, bk, nw = cfg
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_f32_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                            c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, PREC="tf32", num_warps=nw,
                            num_stages=3, **({"arch": arch} if arch else {}))
    ref = a.double() @ b.double()
    return ((c.double() - ref).norm() / ref.norm()).item()


@pytest.mark.gpu
@pytest.mark.parametrize("env", ["0", "1"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("cfg", [(128, 128, 32, 8), (64, 64, 16, 4), (16, 32, 16, 1), (32, 16, 16, 4)])
def test_mma_sync_tf32_ldmatrix_gpu(cfg, layout, env, monkeypatch):
    monkeypatch.setenv("CTRITON_TF32_LDMATRIX", env)
    assert _run_gpu(layout, 150, 136, 88, 3, cfg, "sm80") < 3e-3


@pytest.mark.gpu
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("env", ["0", "1"])
@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_element_copies_gpu(layout, env, arch, monkeypatch):
    monkeypatch.setenv("CTRITON_ELEMENT_COPIES", env)
    monkeypatch.setenv("CTRITON_REGS_SWIZZLE", env)
    assert _run_gpu(layout, 300, 264, 200, 2, (128, 128, 32, 8), arch) < 3e-3
