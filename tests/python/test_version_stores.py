"""version-stores (analysis/storever.c): a store whose vectors rest on
scalars the compiler cannot see (a base pointer or leading dimension loaded
from memory, as tutorial 08's grouped GEMM has them; a bound of unknown
divisibility) goes in an `if` on those scalars being multiples of what a
16-byte vector needs. The first branch stores through multiple_of-hinted
pointers in vectors, the second as before. By default only on CUDA and
only for stores of a dot's result (an epilogue, converted for its store
anyway); CTRITON_VERSION_STORES=1 versions every store it can, on the CPU
too (which takes no hints): then every case below runs one branch or the
other on the CPU against numpy (aligned, a leading dimension that is not a
multiple of the vector, a base one element off, a bound inside a vector).
On sm_90 and sm_80 the PTX holds both forms; ptxas assembles it. The GPU
cases check the same against torch."""
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
def store_loaded_kernel(c_ptrs, lds, sizes, BM: tl.constexpr, BN: tl.constexpr, DT: tl.constexpr):
    """C[r, c] = (r * 37 + c) % 2048 for r < M, c < N: the base pointer, the
    leading dimension and M, N all come from memory."""
    c_ptr = tl.load(c_ptrs).to(tl.pointer_type(DT))
    ldc = tl.load(lds)
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    v = ((rows[:, None] * 37 + cols[None, :]) % 2048).to(DT)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + ldc * rows[:, None] + cols[None, :], v, mask=mask)


@triton.jit
def dot_epilogue_kernel(a_ptr, b_ptr, c_ptrs, lds, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Tutorial 08's epilogue: C = A @ B (A [BM, BK], B [BK, BN], packed) in
    fp16 through a loaded base and leading dimension, no mask."""
    c_ptr = tl.load(c_ptrs).to(tl.pointer_type(tl.float16))
    ldc = tl.load(lds)
    rk = tl.arange(0, BK)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + tl.arange(0, BN)[None, :])
    acc = tl.dot(a, b)
    tl.store(c_ptr + ldc * rows[:, None] + cols[None, :], acc.to(tl.float16))


@triton.jit
def store_param_stride_kernel(c_ptr, ldc, n, BM: tl.constexpr, BN: tl.constexpr):
    """A stride parameter not specialized as divisible by 16 (ldc = 24, say):
    the branch checks ldc and n at run time."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    v = (rows[:, None] * 37 + cols[None, :]).to(tl.float32)
    tl.store(c_ptr + rows[:, None] * ldc + cols[None, :], v, mask=cols[None, :] < n)


def _ref(M, N, ld, dt):
    r = np.arange(M)[:, None]
    c = np.arange(N)[None, :]
    return ((r * 37 + c) % 2048).astype(dt)


CASES = [
    # M, N, ld, offset of the base (elements): which branch runs
    (64, 64, 64, 0),    # all aligned: the vector branch
    (64, 64, 72, 0),    # ld a multiple of 8 (not 16): the vector branch
    (64, 64, 67, 0),    # ld odd: the element branch
    (64, 64, 64, 1),    # base one element off: the element branch
    (50, 61, 64, 0),    # N inside a vector: the element branch
    (50, 56, 64, 0),    # N a multiple of 8 inside the tile: the vector branch, masked
]


@requires_cpu
@pytest.mark.parametrize("dt", ["float16", "float32"])
@pytest.mark.parametrize("M,N,ld,off", CASES)
def test_cpu_versioned_store(M, N, ld, off, dt, monkeypatch):
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    buf = np.full(M * ld + off + 64, -1, dt)
    c = buf[off:off + M * ld].reshape(M, ld)
    ptrs = np.array([c.ctypes.data], np.int64)
    lds = np.array([ld], np.int32)
    sizes = np.array([M, N], np.int32)
    k = store_loaded_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        ptrs, lds, sizes, BM=32, BN=32, DT=tl.float16 if dt == "float16" else tl.float32)
    np.testing.assert_array_equal(c[:, :N], _ref(M, N, ld, dt))
    assert (c[:, N:] == -1).all() and (buf[:off] == -1).all() and (buf[off + M * ld:] == -1).all()
    ir = k.asm["ct.ttgir"] if "ct.ttgir" in k.asm else k.asm["ttir"]
    assert ir.count("multiple_of") == 3, ir  # the base, ldc and N (M bounds whole rows)


@requires_cpu
def test_cpu_versioning_off_by_default(monkeypatch):
    """Without CTRITON_VERSION_STORES=1 the CPU keeps the store as it is (it
    takes no hints); with =0 CUDA does too (below)."""
    monkeypatch.delenv("CTRITON_VERSION_STORES", raising=False)
    c = np.full((32, 32), -1, np.float32)
    # BM=16: a specialization the other tests do not compile (a launch reuses
    # what this process compiled, whatever the environment says now)
    k = store_loaded_kernel[(2, 1)](np.array([c.ctypes.data], np.int64), np.array([32], np.int32),
                                   np.array([32, 32], np.int32), BM=16, BN=32, DT=tl.float32)
    np.testing.assert_array_equal(c, _ref(32, 32, 32, "float32"))
    ir = k.asm["ct.ttgir"] if "ct.ttgir" in k.asm else k.asm["ttir"]
    assert "multiple_of" not in ir


@requires_cpu
@pytest.mark.parametrize("ld,n", [(40, 32), (40, 20), (33, 32), (32, 32), (24, 24), (24, 16)])
def test_cpu_versioned_param_stride(ld, n, monkeypatch):
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    c = np.full((64, ld), -1, np.float32)
    store_param_stride_kernel[(2,)](c, ld, n, BM=32, BN=32)
    ref = (np.arange(64)[:, None] * 37 + np.arange(n)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(c[:, :n], ref)
    assert (c[:, n:] == -1).all()


def _compile(fn, sig, cx, arch, attrs=None, warps=4):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    return triton.compile(ASTSource(fn, sig, cx, attrs or {}), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps})


def _stores(ptx):
    return {m: len(re.findall(r"\bst\.global(?:\.[a-z]+)*\." + m + r"\b", ptx)) for m in ("v4", "v2", "b16", "b32")}


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_sm_versioned_store_ptx(arch, monkeypatch):
    """The vector branch stores 16-byte vectors, the other one element at a
    time; three checks (base, ldc, N) guard the branch. (Not a dot's result:
    versioned with CTRITON_VERSION_STORES=1 only.)"""
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    sig = {"c_ptrs": "*i64", "lds": "*i32", "sizes": "*i32"}
    k = _compile(store_loaded_kernel, sig, dict(BM=64, BN=64, DT=tl.float16), arch, {(0,): {"divisibility": 16}})
    ptx = k.asm["ptx"]
    s = re.findall(r"\bst\.global[.\w]*", ptx)
    assert any(".v4." in x for x in s), s
    assert any(x.endswith(".b16") for x in s), s
    ttgir = k.asm["ct.ttgir"]
    assert ttgir.count("multiple_of") == 3
    assert k.n_spills == 0


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_sm_dot_epilogue_versioned_by_default(arch, monkeypatch):
    """Tutorial 08's unmasked epilogue (64x64 fp16, 4 warps), a dot's result:
    versioned by default, 4 vector stores a thread in the first branch
    (64*64*2 bytes / 128 threads / 16), 32 element stores in the other;
    with CTRITON_VERSION_STORES=0 only element stores."""
    monkeypatch.delenv("CTRITON_VERSION_STORES", raising=False)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptrs": "*i64", "lds": "*i32"}
    attrs = {(i,): {"divisibility": 16} for i in range(3)}
    k = _compile(dot_epilogue_kernel, sig, dict(BM=64, BN=64, BK=32), arch, attrs)
    ptx = k.asm["ptx"]
    v4 = re.findall(r"\bst\.global(?:\.\w+)*\.v4\.\w+", ptx)
    assert len(v4) == 4, v4
    assert len(re.findall(r"\bst\.global(?:\.\w+)*\.b16\b", ptx)) == 32
    assert k.asm["ct.ttgir"].count("multiple_of") == 2  # the base and ldc
    assert k.n_spills == 0
    monkeypatch.setenv("CTRITON_VERSION_STORES", "0")
    k0 = _compile(dot_epilogue_kernel, sig, dict(BM=64, BN=64, BK=32), arch, attrs)
    assert not re.search(r"\bst\.global(?:\.\w+)*\.v\d", k0.asm["ptx"])
    assert "multiple_of" not in k0.asm["ct.ttgir"]


@needs_ptxas
def test_sm90_not_a_dot_is_not_versioned_by_default(monkeypatch):
    """A store of a value that is no dot's result (here computed in the
    layout of its store) stays as it is by default: its vector branch would
    need a conversion through shared memory that the element store does
    without (a softmax row, say)."""
    monkeypatch.delenv("CTRITON_VERSION_STORES", raising=False)
    sig = {"c_ptr": "*fp32", "ldc": "i32", "n": "i32"}
    k = _compile(store_param_stride_kernel, sig, dict(BM=32, BN=32), 90, {(0,): {"divisibility": 16}})
    assert "multiple_of" not in k.asm["ct.ttgir"] and "versioned" not in k.asm["ct.ttgir"]


@needs_ptxas
def test_sm90_known_alignment_is_not_versioned(monkeypatch):
    """Nothing to ask when the specialization already says it: a 16-divisible
    stride parameter and bound store vectors without a branch."""
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    sig = {"c_ptr": "*fp32", "ldc": "i32", "n": "i32"}
    attrs = {(0,): {"divisibility": 16}, (1,): {"divisibility": 16}, (2,): {"divisibility": 16}}
    k = _compile(store_param_stride_kernel, sig, dict(BM=32, BN=32), 90, attrs)
    assert "multiple_of" not in k.asm["ct.ttgir"]
    assert re.search(r"\bst\.global(?:\.\w+)*\.v4\.", k.asm["ptx"])
    # the stride without its hint: versioned on ldc and n
    k2 = _compile(store_param_stride_kernel, sig, dict(BM=32, BN=32), 90, {(0,): {"divisibility": 16}})
    assert k2.asm["ct.ttgir"].count("multiple_of") == 2


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float16", "float32"])
@pytest.mark.parametrize("M,N,ld,off", CASES)
def test_gpu_versioned_store(M, N, ld, off, dt, monkeypatch):
    import torch
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    tdt = getattr(torch, dt)
    buf = torch.full((M * ld + off + 64,), -1, dtype=tdt, device="cuda")
    c = buf[off:off + M * ld].view(M, ld)
    ptrs = torch.tensor([c.data_ptr()], dtype=torch.int64, device="cuda")
    lds = torch.tensor([ld], dtype=torch.int32, device="cuda")
    sizes = torch.tensor([M, N], dtype=torch.int32, device="cuda")
    store_loaded_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        ptrs, lds, sizes, BM=32, BN=32, DT=tl.float16 if dt == "float16" else tl.float32)
    ref = torch.from_numpy(_ref(M, N, ld, dt)).cuda()
    assert torch.equal(c[:, :N], ref)
    assert (c[:, N:] == -1).all() and (buf[:off] == -1).all() and (buf[off + M * ld:] == -1).all()


@pytest.mark.gpu
@pytest.mark.parametrize("ld,off", [(64, 0), (72, 0), (67, 0), (64, 1)])
def test_gpu_dot_epilogue(ld, off):
    """The default form (a dot's result) on the GPU, both branches."""
    import torch
    torch.manual_seed(0)
    a = torch.randn(64, 32, device="cuda", dtype=torch.float16)
    b = torch.randn(32, 64, device="cuda", dtype=torch.float16)
    buf = torch.full((2 * 64 * ld + off + 64,), -1, dtype=torch.float16, device="cuda")
    c = buf[off:off + 2 * 64 * ld].view(2 * 64, ld)
    ptrs = torch.tensor([c.data_ptr()], dtype=torch.int64, device="cuda")
    lds = torch.tensor([ld], dtype=torch.int32, device="cuda")
    dot_epilogue_kernel[(2, 1)](a, b, ptrs, lds, BM=64, BN=64, BK=32)
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c[:64, :64], ref, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(c[64:, :64], ref, atol=1e-2, rtol=1e-2)
    assert (c[:, 64:] == -1).all() and (buf[:off] == -1).all() and (buf[off + 2 * 64 * ld:] == -1).all()


@requires_cpu
@pytest.mark.parametrize("ld,off", [(64, 0), (72, 0), (67, 0), (64, 1)])
def test_cpu_dot_epilogue(ld, off, monkeypatch):
    monkeypatch.setenv("CTRITON_VERSION_STORES", "1")
    rng = np.random.default_rng(ld + off)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    buf = np.full(2 * 64 * ld + off + 64, -1, np.float16)
    c = buf[off:off + 2 * 64 * ld].reshape(2 * 64, ld)
    k = dot_epilogue_kernel[(2, 1)](a, b, np.array([c.ctypes.data], np.int64), np.array([ld], np.int32),
                                    BM=64, BN=64, BK=32)
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c[:64, :64].astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=1e-2)
    np.testing.assert_allclose(c[64:, :64].astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=1e-2)
    assert (c[:, 64:] == -1).all() and (buf[:off] == -1).all() and (buf[off + 2 * 64 * ld:] == -1).all()
    assert "versioned" in k.asm["ct.ttgir"]
