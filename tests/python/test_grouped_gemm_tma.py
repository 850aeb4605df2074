"""Tutorial 08's TMA form: a grouped GEMM whose tensor descriptors are made
in the kernel from values it loads (per-group pointers, sizes and leading
dimensions). On sm_90 the kernel writes each map itself (tensormap_create:
tensormap.replace on a staged copy, tensormap.cp_fenceproxy into the
program's global scratch slot, the acquire fence, a barrier) and the
pipelined dot loop copies its A and B tiles through them
(cp.async.bulk.tensor); the kernel asks for global scratch in its metadata.
sm_80 and the CPU keep plain loads. CPU end-to-end against numpy, GPU
against torch (several groups of sizes that are not multiples of the
block, the launch getting its scratch from triton.set_allocator)."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


@triton.jit
def grouped_tma_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, lds, n_groups, NUM_PROGRAMS: tl.constexpr,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FP8: tl.constexpr):
    """C_g = A_g @ B_g.T for each group g (A_g [M, K], B_g [N, K], C_g [M, N],
    row-major with leading dimensions lds[3g:3g+3]), the tiles of all groups
    shared out over a fixed number of programs; descriptors made per group
    from what the kernel loads."""
    dtype = tl.float8e4nv if FP8 else tl.float16
    tile = tl.program_id(0)
    first = 0
    for g in range(n_groups):
        M = tl.load(sizes + g * 3)
        N = tl.load(sizes + g * 3 + 1)
        K = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(N, BN)
        tiles = tl.cdiv(M, BM) * tiles_n
        if tile >= first and tile < first + tiles:
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            a = tl.load(a_ptrs + g).to(tl.pointer_type(dtype))
            b = tl.load(b_ptrs + g).to(tl.pointer_type(dtype))
            c = tl.load(c_ptrs + g).to(tl.pointer_type(dtype))
            a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK])
            b_desc = tl.make_tensor_descriptor(b, shape=[N, K], strides=[ldb, 1], block_shape=[BN, BK])
            c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[ldc, 1], block_shape=[BM, BN])
            while tile >= first and tile < first + tiles:
                t = tile - first
                om = (t // tiles_n) * BM
                on = (t % tiles_n) * BN
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for kk in range(0, tl.cdiv(K, BK)):
                    x = a_desc.load([om, kk * BK])
                    y = b_desc.load([on, kk * BK])
                    acc += tl.dot(x, y.T)
                c_desc.store([om, on], acc.to(dtype))
                tile += NUM_PROGRAMS
        first = first + tiles


SIG = {"a_ptrs": "*i64", "b_ptrs": "*i64", "c_ptrs": "*i64", "sizes": "*i32", "lds": "*i32", "n_groups": "i32"}


def _compile(arch, BM, BN, BK, warps, stages, fp8=False):
    sig = dict(SIG)
    cx = dict(NUM_PROGRAMS=132, BM=BM, BN=BN, BK=BK, FP8=fp8)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(5)}
    return triton.compile(ASTSource(grouped_tma_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


CONFIGS = [(128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (64, 128, 64, 4, 3), (64, 128, 64, 4, 4)]


# -- sm_90: maps made in the kernel, tiles through the tensor memory access unit --

@needs_ptxas
@pytest.mark.parametrize("BM,BN,BK,warps,stages", CONFIGS)
def test_sm90_maps_made_in_kernel(BM, BN, BK, warps, stages):
    k = _compile(90, BM, BN, BK, warps, stages)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    # A's and B's maps written by the kernel for the tiles; C is stored by
    # pointers (a store through a made map wrote past its columns on the
    # H200: analysis/tmastore.c takes TensorDescriptor arguments' maps only)
    made = re.findall(r"%\d+ = tensormap_create [^\n]*", ttgir)
    used = [m for m in made if "gscratch = " in m]
    assert sorted(re.search(r"gscratch = (\d+)", m).group(1) for m in used) == ["0", "128"]
    assert f"tma_box = [{BK}, {BM}]" in used[0] and "tma_swizzle = 128" in used[0]
    vs = re.findall(r"(%\d+) = tensormap_create [^\n]*gscratch", ttgir)
    for v in vs[:2]:
        assert re.search(rf"tma_copy {v}, ", ttgir), v
    assert "tma_store" not in ttgir and " store " in ttgir
    assert "async_copy" not in ttgir
    # the metadata asks the launch for 2 maps of global scratch per program
    assert k.metadata.global_scratch_size == 256 and k.metadata.global_scratch_align == 128
    # the PTX: the fields, the copy to global memory with its release, the
    # acquire, then the copies through the map; no per-thread cp.async
    assert ptx.count("tensormap.replace.tile.global_address.shared::cta.b1024.b64") == 2
    for field in ("rank", "box_dim", "global_dim", "global_stride", "element_stride", "elemtype",
                  "interleave_layout", "swizzle_mode", "fill_mode"):
        assert f"tensormap.replace.tile.{field}.shared::cta" in ptx, field
    assert ptx.count("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned") == 2
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 2
    # a map is rewritten only once warp 0's tensor stores through it completed
    assert ptx.count("@p cp.async.bulk.wait_group 0;\n@p tensormap.cp_fenceproxy") == 2
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile" in ptx
    assert "cp.async.cg.shared.global" not in ptx
    assert "wgmma.mma_async" in ptx
    assert re.search(r"^\.version 8\.7$", ptx, re.M)
    i_rep = ptx.index("tensormap.replace")
    i_cp = ptx.index("tensormap.cp_fenceproxy")
    i_acq = ptx.index("fence.proxy.tensormap::generic.acquire.gpu")
    i_bar = ptx.index("bar.sync", i_acq)
    i_copy = ptx.index("cp.async.bulk.tensor")
    assert ptx.rindex("st.shared.b32", 0, i_rep) < i_rep < i_cp < i_acq < i_bar < i_copy
    # assembled by ptxas, zero spills
    assert k.asm.get("cubin") and k.n_regs > 0
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@needs_ptxas
def test_sm90_map_fields():
    """The fields written are the launch's encoding of such a block: an f16
    [128, 64] tile is one 64 x 128 box (inner first), 128-byte swizzle
    (mode 3), data type f16 (6), zero fill; the global dims innermost
    first (K, then M or N) and the outer stride in bytes (lda * 2)."""
    ptx = _compile(90, 128, 128, 64, 4, 3).asm["ptx"]
    assert "tensormap.replace.tile.rank.shared::cta.b1024.b32 [%r" in ptx
    assert re.search(r"box_dim\.shared::cta\.b1024\.b32 \[%r\d+\], 0, 64;", ptx)
    assert re.search(r"box_dim\.shared::cta\.b1024\.b32 \[%r\d+\], 1, 128;", ptx)
    assert re.search(r"elemtype\.shared::cta\.b1024\.b32 \[%r\d+\], 6;", ptx)
    assert re.search(r"swizzle_mode\.shared::cta\.b1024\.b32 \[%r\d+\], 3;", ptx)
    assert re.search(r"fill_mode\.shared::cta\.b1024\.b32 \[%r\d+\], 0;", ptx)
    assert re.search(r"mul\.wide\.s32 \t%rd\d+, %r\d+, 2;", ptx)  # the stride in bytes


@needs_ptxas
def test_sm90_fp8_maps():
    """fp8 tiles: 64-byte rows, a 64-byte swizzle (mode 2), unsigned bytes (0)."""
    k = _compile(90, 128, 128, 64, 4, 3, fp8=True)
    ptx = k.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == 2 and "cp.async.bulk.tensor" in ptx
    assert re.search(r"elemtype\.shared::cta\.b1024\.b32 \[%r\d+\], 0;", ptx)
    assert re.search(r"swizzle_mode\.shared::cta\.b1024\.b32 \[%r\d+\], 2;", ptx)
    assert k.n_spills == 0


@needs_ptxas
def test_sm80_keeps_plain_loads():
    """Before sm_90 no map is made and no scratch asked for: the loop keeps
    today's loads (its transposed B tile has no 4-byte runs along the rows
    cp.async needs there)."""
    k = _compile(80, 128, 128, 64, 4, 3)
    ptx = k.asm["ptx"]
    assert "tensormap" not in k.asm["ct.ttgir"] and "tensormap" not in ptx
    assert "cp.async.bulk" not in ptx and "mbarrier" not in ptx
    assert k.metadata.global_scratch_size == 0
    assert "mma.sync.aligned.m16n8k16" in ptx


@triton.jit
def made_kn_kernel(ptrs, sizes, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A [M, K] and B [K, N], both descriptors over loaded values."""
    a = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    b = tl.load(ptrs + 1).to(tl.pointer_type(tl.float16))
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    a_desc = tl.make_tensor_descriptor(a, [M, K], [tl.load(sizes + 3), 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [K, N], [tl.load(sizes + 4), 1], [BK, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([om, kk * BK]), b_desc.load([kk * BK, on]), acc)
    rm = om + tl.arange(0, BM)
    rn = on + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _compile_kn(arch):
    sig = {"ptrs": "*i64", "sizes": "*i32", "c_ptr": "*fp16", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr"}
    return triton.compile(ASTSource(made_kn_kernel, sig, dict(BM=128, BN=128, BK=64),
                                    {(i,): {"divisibility": 16} for i in range(3)}),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": 4, "num_stages": 3})


@needs_ptxas
def test_sm80_keeps_cp_async_sm90_takes_tma():
    """The same descriptors with B as [K, N]: sm_80 copies both tiles with
    zero-filling cp.async as before, sm_90 through the maps it makes."""
    k80, k90 = _compile_kn(80), _compile_kn(90)
    assert "cp.async.cg.shared.global" in k80.asm["ptx"] and "tensormap" not in k80.asm["ptx"]
    assert k80.metadata.global_scratch_size == 0
    ptx = k90.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == 2 and "cp.async.bulk.tensor" in ptx
    assert "cp.async.cg.shared.global" not in ptx
    assert k90.metadata.global_scratch_size == 256 and k90.n_spills == 0


@needs_ptxas
def test_sm90_single_stage_makes_no_map():
    """num_stages = 1: no pipelined copy reads A's and B's maps, so those are
    not written, and C is stored by pointers: no map, no global scratch."""
    k = _compile(90, 128, 128, 64, 4, 1)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    assert "tensormap.replace.tile.global_address" not in ptx and "tma_copy" not in ttgir
    assert "tma_store" not in ttgir and "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" not in ptx
    assert getattr(k.metadata, "global_scratch_size", 0) == 0


# -- CPU: the same kernel against numpy ------------------------------------------

def _groups(rng, dims, dtype=np.float16, pad=8):
    """Per group (a [M, K], b [N, K], c [M, N]) with leading dimensions padded
    to multiples of 8 elements (16 bytes), the padding NaN (never read)."""
    out = []
    for M, N, K in dims:
        ld = (K + pad - 1) // pad * pad
        a = np.full((M, ld), np.nan, dtype)
        b = np.full((N, ld), np.nan, dtype)
        a[:, :K] = rng.standard_normal((M, K)).astype(dtype)
        b[:, :K] = rng.standard_normal((N, K)).astype(dtype)
        ldc = (N + pad - 1) // pad * pad
        c = np.full((M, ldc), 7.0, dtype)
        out.append((a, b, c, M, N, K))
    return out


@requires_cpu
def test_cpu_grouped_against_numpy():
    rng = np.random.default_rng(0)
    groups = _groups(rng, [(70, 40, 50), (33, 100, 64), (128, 64, 17), (1, 1, 1)])
    aptr = np.array([g[0].ctypes.data for g in groups], np.int64)
    bptr = np.array([g[1].ctypes.data for g in groups], np.int64)
    cptr = np.array([g[2].ctypes.data for g in groups], np.int64)
    sizes = np.array([x for g in groups for x in g[3:]], np.int32)
    lds = np.array([x for g in groups for x in (g[0].shape[1], g[1].shape[1], g[2].shape[1])], np.int32)
    nprog = 5
    grouped_tma_kernel[(nprog,)](aptr, bptr, cptr, sizes, lds, len(groups), NUM_PROGRAMS=nprog, BM=32, BN=32,
                                 BK=16, FP8=False)
    for a, b, c, M, N, K in groups:
        ref = a[:, :K].astype(np.float32) @ b[:, :K].astype(np.float32).T
        np.testing.assert_allclose(c[:, :N].astype(np.float32), ref, rtol=1e-2, atol=5e-2)
        assert (c[:, N:] == 7.0).all()


TTIR_CPU = """module {num_warps = 1}

func kernel @made(%0: ptr<f32>, %1: ptr<f32>, %2: i32) loc("made.ttir":3:1) {
  %3 = constant {value = 16} : i32 loc(4:3)
  %4 = tensormap_create %0, %2, %3, %3 {tma_box = [16, 16], tma_dtype = 7, tma_nan = 0, tma_swizzle = 64} : ptr<i8> loc(5:3)
  %5 = make_range {end = 16, start = 0} : block<16xi32> loc(6:3)
  %6 = splat %0 : block<16xptr<f32>> loc(7:3)
  %7 = addptr %6, %5 : block<16xptr<f32>> loc(8:3)
  %8 = splat %2 : block<16xi32> loc(9:3)
  %9 = cmp %5, %8 {pred = "lt"} : block<16xi1> loc(10:3)
  %10 = constant {value = 0.0} : block<16xf32> loc(11:3)
  %11 = constant {value = 0} : i32 loc(12:3)
  %12 = load %7, %9, %10, %4, %11, %11 {tma = 3} : block<16xf32> loc(13:3)
  %13 = splat %1 : block<16xptr<f32>> loc(14:3)
  %14 = addptr %13, %5 : block<16xptr<f32>> loc(15:3)
  store %14, %12 loc(16:3)
  return loc(17:3)
}
"""


@requires_cpu
def test_cpu_ignores_made_maps(tmp_path):
    """The CPU backend takes tensormap_create as a null map (its loads ignore
    the tail) and needs no scratch."""
    path = tmp_path / "made.ttir"
    path.write_text(TTIR_CPU)
    k = triton.compile(str(path), target=GPUTarget("cpu", 0, 1))
    assert getattr(k.metadata, "global_scratch_size", 0) == 0
    x = np.arange(16, dtype=np.float32) + 1
    out = np.zeros(16, np.float32)
    k[(1, 1, 1)](x, out, 11)
    np.testing.assert_array_equal(out, np.where(np.arange(16) < 11, x, 0))


# -- GPU: grouped GEMM against torch ---------------------------------------------

@pytest.fixture
def torch_allocator():
    """triton.set_allocator with torch memory on the current device; yields
    the (size, alignment, stream) of each call."""
    import torch
    calls = []

    def alloc(size, alignment, stream):
        calls.append((size, alignment, stream))
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    yield calls
    triton.set_allocator(None)


def _torch_groups(dims, dtype):
    import torch
    groups = []
    for M, N, K in dims:
        ld = (K + 15) // 16 * 16  # 16-byte aligned rows, NaN padding past K (never read)
        a = torch.full((M, ld), float("nan"), device="cuda", dtype=torch.float16)
        b = torch.full((N, ld), float("nan"), device="cuda", dtype=torch.float16)
        a[:, :K] = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b[:, :K] = torch.randn((N, K), device="cuda", dtype=torch.float16)
        a, b = a.to(dtype), b.to(dtype)
        ldc = (N + 15) // 16 * 16
        c = torch.full((M, ldc), 7.0, device="cuda", dtype=torch.float16).to(dtype)
        groups.append((a, b, c, M, N, K))
    return groups


def _launch(groups, nprog, BM, BN, BK, warps, stages, fp8=False):
    import torch
    dev = "cuda"
    aptr = torch.tensor([g[0].data_ptr() for g in groups], device=dev)
    bptr = torch.tensor([g[1].data_ptr() for g in groups], device=dev)
    cptr = torch.tensor([g[2].data_ptr() for g in groups], device=dev)
    sizes = torch.tensor([x for g in groups for x in g[3:]], device=dev, dtype=torch.int32)
    lds = torch.tensor([x for g in groups for x in (g[0].stride(0), g[1].stride(0), g[2].stride(0))],
                       device=dev, dtype=torch.int32)
    return grouped_tma_kernel[(nprog,)](aptr, bptr, cptr, sizes, lds, len(groups), NUM_PROGRAMS=nprog, BM=BM,
                                        BN=BN, BK=BK, FP8=fp8, num_warps=warps, num_stages=stages)


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN,BK,warps,stages", CONFIGS + [(128, 256, 64, 8, 3), (128, 128, 128, 8, 3)])
def test_gpu_grouped_gemm(BM, BN, BK, warps, stages, torch_allocator):
    """Groups of sizes that are not multiples of the block (K tails of 1 to
    15 elements zero-filled by the copy engine, NaN padding past K never
    read, C's padding columns untouched), more tiles than programs."""
    import torch
    torch.manual_seed(0)
    dims = [(1024, 512, 256), (300, 260, 200), (129, 72, 61), (17, 300, 8), (256, 128, 1000)]
    groups = _torch_groups(dims, torch.float16)
    nprog = 7
    k = _launch(groups, nprog, BM, BN, BK, warps, stages)
    torch.cuda.synchronize()
    assert torch_allocator == [(k.metadata.global_scratch_size * nprog, 128, torch_allocator[0][2])]
    # two maps for the copies, and C's with made-map tensor stores
    assert k.metadata.global_scratch_size == (384 if os.environ.get("CTRITON_TMA_STORE_MADE") == "1" else 256)
    for a, b, c, M, N, K in groups:
        ref = (a[:, :K].float() @ b[:, :K].float().T).half()
        torch.testing.assert_close(c[:, :N], ref, atol=6e-2, rtol=1e-2)
        assert (c[:, N:] == 7.0).all()


@pytest.mark.gpu
def test_gpu_grouped_gemm_again_and_fp8(torch_allocator):
    """A second launch with other groups (the maps rewritten in the same
    slots), then the fp8 form (e4m3 in, e4m3 out) against torch."""
    import torch
    torch.manual_seed(1)
    for dims in ([(200, 136, 96)], [(64, 64, 64), (513, 257, 72)]):
        groups = _torch_groups(dims, torch.float16)
        _launch(groups, 4, 128, 128, 64, 4, 3)
        for a, b, c, M, N, K in groups:
            torch.testing.assert_close(c[:, :N], (a[:, :K].float() @ b[:, :K].float().T).half(), atol=6e-2,
                                       rtol=1e-2)
    groups = _torch_groups([(256, 128, 128), (130, 70, 64)], torch.float8_e4m3fn)
    _launch(groups, 3, 128, 128, 64, 4, 3, fp8=True)
    for a, b, c, M, N, K in groups:
        ref = (a[:, :K].float() @ b[:, :K].float().T).to(torch.float8_e4m3fn).float()
        torch.testing.assert_close(c[:, :N].float(), ref, atol=0.5, rtol=0.13)


@pytest.mark.gpu
def test_gpu_no_allocator_then_launch():
    """Without an allocator the launch raises Triton's RuntimeError and
    launches nothing; once one is set the same launch works."""
    import torch
    triton.set_allocator(None)
    groups = _torch_groups([(100, 90, 80)], torch.float16)
    with pytest.raises(RuntimeError, match="no allocator was set"):
        _launch(groups, 2, 128, 128, 64, 4, 3)
    torch.cuda.synchronize()
    assert (groups[0][2] == 7.0).all()
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    try:
        _launch(groups, 2, 128, 128, 64, 4, 3)
    finally:
        triton.set_allocator(None)
    a, b, c, M, N, K = groups[0]
    torch.testing.assert_close(c[:, :N], (a[:, :K].float() @ b[:, :K].float().T).half(), atol=6e-2, rtol=1e-2)


@triton.jit
def made_in_loop_kernel(ptrs, sizes, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The descriptors made anew in each iteration of the dot loop."""
    a = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    b = tl.load(ptrs + 1).to(tl.pointer_type(tl.float16))
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(tl.cdiv(K, BK)):
        a_desc = tl.make_tensor_descriptor(a, [M, K], [K, 1], [BM, BK])
        b_desc = tl.make_tensor_descriptor(b, [K, N], [N, 1], [BK, BN])
        acc = tl.dot(a_desc.load([tl.program_id(0) * BM, kk * BK]), b_desc.load([kk * BK, 0]), acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc.to(tl.float16))


@needs_ptxas
def test_sm90_map_made_in_the_loop_keeps_cp_async():
    """A map made inside the dot loop cannot be ahead of the copies: the loop
    keeps its cp.async pipeline, and the maps (read by no tensor copy) are
    neither written nor given scratch."""
    sig = {"ptrs": "*i64", "sizes": "*i32", "c_ptr": "*fp16", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr"}
    k = triton.compile(ASTSource(made_in_loop_kernel, sig, dict(BM=64, BN=64, BK=64),
                                 {(i,): {"divisibility": 16} for i in range(3)}),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
    ptx = k.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx
    assert "tensormap" not in ptx and "cp.async.bulk.tensor" not in ptx
    assert k.metadata.global_scratch_size == 0


@triton.jit
def mixed_maps_kernel(a_desc, b_ptrs, sizes, c_ptr, BN: tl.constexpr):
    """A through a TensorDescriptor argument (the launch encodes its map), B
    over a loaded pointer and sizes (the kernel makes its map)."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    b = tl.load(b_ptrs).to(tl.pointer_type(tl.float16))
    N = tl.load(sizes)
    K = tl.load(sizes + 1)
    b_desc = tl.make_tensor_descriptor(b, [N, K], [K, 1], [BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([tl.program_id(0) * BM, kk * BK]), b_desc.load([0, kk * BK]).T, acc)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16), mask=rm[:, None] < a_desc.shape[0])


def _compile_mixed():
    dt = ("*fp16", ("i32", "i32"), ("i32", "constexpr"))
    sig = {"a_desc": dt, "b_ptrs": "*i64", "sizes": "*i32", "c_ptr": "*fp16", "BN": "constexpr"}
    cx = {"BN": 128, (0, "tensordesc"): ((128, 64), "zero"), (0, 2, 1): 1}
    return triton.compile(ASTSource(mixed_maps_kernel, sig, cx, {}), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "num_stages": 3})


@needs_ptxas
def test_sm90_parameter_order_with_both_kinds_of_map():
    """The kernel's parameters: the arguments, then the maps the launch
    encodes (128-byte grid constants), then the global scratch buffer; the
    metadata (also from the disk cache) names both."""
    k = _compile_mixed()
    params = re.search(r"\.entry mixed_maps_kernel\((.*?)\)", k.asm["ptx"], re.S).group(1).split(",")
    assert ".b8 mixed_maps_kernel_param_7[128]" in params[-2]
    assert ".ptr .global" in params[-1] and params[-1].strip().endswith("_param_8")
    assert [t[0] for t in k.metadata.tma] == [0] and k.metadata.global_scratch_size == 128
    assert k.asm["ptx"].count("tensormap.cp_fenceproxy") == 1 and k.n_spills == 0
    hit = _compile_mixed()
    assert hit.times.get("load") is not None and "frontend" not in hit.times
    assert hit.metadata.global_scratch_size == 128 and hit.metadata.global_scratch_align == 128


@pytest.mark.gpu
def test_gpu_mixed_maps(torch_allocator):
    import torch
    from ctriton.tools.tensor_descriptor import TensorDescriptor
    torch.manual_seed(0)
    M, N, K = 300, 100, 200
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.zeros((M, 128), device="cuda", dtype=torch.float16)
    bp = torch.tensor([b.data_ptr()], device="cuda")
    sizes = torch.tensor([N, K], device="cuda", dtype=torch.int32)
    mixed_maps_kernel[(triton.cdiv(M, 128),)](TensorDescriptor.from_tensor(a, [128, 64]), bp, sizes, c, 128,
                                              num_warps=4, num_stages=3)
    torch.testing.assert_close(c[:, :N], (a.float() @ b.float().T).half(), atol=6e-2, rtol=1e-2)
    assert (c[:, N:] == 0).all()
    assert torch_allocator[0][:2] == (128 * triton.cdiv(M, 128), 128)


@triton.jit
def made_ws_kernel(a_desc, b_ptr, N, K, PAD, c_ptr, BN: tl.constexpr):
    """A through a launch-encoded map, B's rows K + PAD apart (a sum: the
    kernel makes B's map), the loop asking for warp specialization."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K + PAD, 1], [BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in tl.range(tl.cdiv(K, BK), warp_specialize=True):
        acc = tl.dot(a_desc.load([tl.program_id(0) * BM, kk * BK]), b_desc.load([0, kk * BK]).T, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc.to(tl.float16))


@needs_ptxas
def test_sm90_made_maps_are_not_warp_specialized():
    """A warp_specialize loop copying through a map the kernel makes (and one
    the launch encodes): the producer would run before the made map exists,
    so the loop pipelines as without the request (tensor copies through
    both maps, no producer warpgroup)."""
    dt = ("*fp16", ("i32", "i32"), ("i32", "constexpr"))
    sig = {"a_desc": dt, "b_ptr": "*fp16", "N": "i32", "K": "i32", "PAD": "i32", "c_ptr": "*fp16",
           "BN": "constexpr"}
    cx = {"BN": 128, (0, "tensordesc"): ((128, 64), "zero"), (0, 2, 1): 1}
    k = triton.compile(ASTSource(made_ws_kernel, sig, cx, {(1,): {"divisibility": 16}}),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert "warp_specialize {" not in ttgir and "tma_release" not in ttgir and "setmaxnreg" not in ptx
    assert ptx.count("tensormap.cp_fenceproxy") == 1 and ttgir.count("tma_copy ") == 6
    assert k.n_spills == 0
