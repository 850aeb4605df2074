"""Atomics on NVPTX without a GPU, and the same kernels on the CPU backend.

PTX (compiled for sm_80 / sm_90, assembled by ptxas): every read-modify-write
and compare-and-swap names the order and scope the op asks for in Triton's
spelling (`atom.global.gpu.acq_rel.add.f32`, `atom.global.acquire.gpu.cas.b32`),
predicated by the mask; float max / min are integer atomics on the bits; bf16
add before sm_90 is a relaxed compare-and-swap loop between fences. The old
value reaches every thread holding a copy of its element: by shuffle when
the copies share a warp, through shared scratch when they do not, and not at
all when nothing uses it. Histogram increments its shared bins with a
predicated `red.shared.add.u32 [bin], 1`, and `asm["sass"]` disassembles the
cubin when asked for. The GPU runs of these kernels: test_atomics_gpu.py."""
import os
import re
import shutil
import stat

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

SEMS = [None, "acquire", "release", "acq_rel", "relaxed"]
SIG = {"int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float16": "fp16",
       "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
BITS = {"int32": 32, "uint32": 32, "int64": 64, "uint64": 64, "float16": 16, "bfloat16": 16,
        "float32": 32, "float64": 64}

# the (op, dtype) pairs of Triton's test_atomic_rmw
RMW = [("add", d) for d in ("bfloat16", "float16", "uint32", "int32", "float32", "uint64", "int64", "float64")] + \
      [(op, d) for op in ("max", "min") for d in ("uint32", "int32", "float32", "uint64", "int64", "float64")]


def compile_for(fn, sig, cx=None, arch=90, attrs=None, **opts):
    sig = dict(sig)
    for k in cx or {}:
        sig[k] = "constexpr"
    k = triton.compile(ASTSource(fn, sig, dict(cx or {}), attrs), target=GPUTarget("cuda", arch, 32),
                       options=opts or None)
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF", "ptxas produced no cubin"
    return k


def rmw_forms(op, dt):
    """The PTX operation(s) and type of Triton's atomic for (op, dt)."""
    b = BITS[dt]
    if op == "add":
        if dt in ("float16", "bfloat16"):
            return [f"add.noftz.{'bf16' if dt == 'bfloat16' else 'f16'}"]
        return [f"add.f{b}" if dt.startswith("float") else f"add.u{b}"]
    if dt.startswith("float"):   # the sign trick: signed max / unsigned min (min: signed min / unsigned max)
        return [f"{op}.s{b}", f"{'min' if op == 'max' else 'max'}.u{b}"]
    return [f"{op}.{'u' if dt.startswith('u') else 's'}{b}"]


@triton.jit
def rmw_scalar_kernel(X, Z, OP: tl.constexpr, SEM: tl.constexpr):
    # Triton's test_atomic_rmw kernel: one scalar atomic per program, old unused
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    if OP == "add":
        old = tl.atomic_add(Z, x, sem=SEM)
    elif OP == "max":
        old = tl.atomic_max(Z, x, sem=SEM)
    else:
        tl.static_assert(OP == "min")
        old = tl.atomic_min(Z, x, sem=SEM)
    tl.static_assert(old.dtype == x.dtype)


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("op,dt", RMW)
def test_rmw_spelling(op, dt, sem, arch):
    """atom.global.<scope>.<sem>.<op>.<type>, as Triton's test_atomic_rmw
    checks; the unused old value of a scalar atomic is not broadcast."""
    k = compile_for(rmw_scalar_kernel, {"X": "*" + SIG[dt], "Z": "*" + SIG[dt]}, dict(OP=op, SEM=sem), arch)
    ptx = k.asm["ptx"]
    s = sem or "acq_rel"
    if dt == "bfloat16" and arch < 90:
        # no bf16 atomic add before sm_90: a relaxed CAS loop between fences
        assert "atom.relaxed.gpu.global.cas" in ptx
        assert ("fence.acq_rel.gpu" in ptx) == (s != "relaxed")
        assert ("fence.acq_rel.gpu;\n" in ptx.split("atom.relaxed")[0]) == (s in ("release", "acq_rel"))
    else:
        for form in rmw_forms(op, dt):
            assert re.search(rf"@%p\d+ atom\.global\.gpu\.{s}\.{re.escape(form)} ", ptx), (form, ptx)
        assert "fence" not in ptx
    assert "bar.sync" not in ptx and "st.shared" not in ptx


@triton.jit
def rmw_block_kernel(acc_ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, SEM: tl.constexpr,
                     SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(val_ptr + offs, mask=m)
    p = acc_ptr + offs
    if KIND == "and":
        old = tl.atomic_and(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "or":
        old = tl.atomic_or(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "xor":
        old = tl.atomic_xor(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "xchg":
        old = tl.atomic_xchg(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "add":
        old = tl.atomic_add(p, v, mask=m, sem=SEM, scope=SCOPE)
    elif KIND == "max":
        old = tl.atomic_max(p, v, mask=m, sem=SEM, scope=SCOPE)
    else:
        tl.static_assert(KIND == "min")
        old = tl.atomic_min(p, v, mask=m, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + offs, old, mask=m)


BLOCK_FORMS = [  # kind, dtype, sem, scope, the PTX operation and type
    ("and", "int32", "acq_rel", "gpu", "and.b32"), ("or", "uint64", "relaxed", "cta", "or.b64"),
    ("xor", "int64", "release", "sys", "xor.b64"), ("xchg", "int32", "acquire", "cta", "exch.b32"),
    ("xchg", "float32", "relaxed", "sys", "exch.b32"), ("xchg", "float64", "acq_rel", "gpu", "exch.b64"),
    ("add", "uint32", "relaxed", "cta", "add.u32"), ("add", "float64", "release", "sys", "add.f64"),
    ("max", "uint64", "acquire", "sys", "max.u64"), ("min", "int32", "relaxed", "cta", "min.s32"),
    ("max", "float64", "release", "cta", "max.s64 min.u64"), ("min", "float32", "acquire", "sys", "min.s32 max.u32"),
]


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("kind,dt,sem,scope,form", BLOCK_FORMS)
def test_rmw_kinds_scopes_masked(kind, dt, sem, scope, form, arch):
    """Every kind with the scope and order it is given, each element's
    atomic predicated by its mask (the result register set to 0 first: a
    masked-off element's old value is 0, as on the CPU)."""
    sig = {"acc_ptr": "*" + SIG[dt], "val_ptr": "*" + SIG[dt], "old_ptr": "*" + SIG[dt], "n": "i32"}
    k = compile_for(rmw_block_kernel, sig, dict(KIND=kind, SEM=sem, SCOPE=scope, BLOCK=256), arch)
    ptx = k.asm["ptx"]
    bits, forms = BITS[dt], form.split()
    asm = rf"@%p\d+ atom\.global\.{scope}\.{sem}\.{forms[0]} (%r[d]?\d+), \[%rd\d+\], %r[d]?\d+;"
    for f in forms[1:]:   # float max / min: the negatives' atomic on the same register
        asm += rf"\n\t@%p\d+ atom\.global\.{scope}\.{sem}\.{f} \1, "
    assert re.search(rf"mov\.b{bits} %r[d]?\d+, 0;\n\t" + asm, ptx), ptx
    assert "fence" not in ptx


@triton.jit
def serialized_add(data, Lock, triton_dtype: tl.constexpr, SEM: tl.constexpr):
    # Triton's test_atomic_cas spin lock: one program at a time adds 1
    num0 = tl.full((1, ), 0, dtype=triton_dtype).item()
    num1 = tl.full((1, ), 1, dtype=triton_dtype).item()
    ptrs = data + tl.arange(0, 128)
    while tl.atomic_cas(Lock, num0, num1, SEM) == 1:
        pass
    tl.store(ptrs, tl.load(ptrs) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, num0)


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_cas_spin_lock_spelling(dt, sem, arch):
    """atom.global.<sem>.<scope>.cas (Triton's order for CAS), its old value
    broadcast from thread 0 through scratch; the lock's release an acq_rel
    exchange (the acquire / release the lock needs are in the atomics
    themselves), whose unused old value is not broadcast."""
    k = compile_for(serialized_add, {"data": "*fp32", "Lock": "*" + SIG[dt]},
                    dict(triton_dtype=getattr(tl, dt), SEM=sem), arch)
    ptx = k.asm["ptx"]
    s, b = sem or "acq_rel", BITS[dt]
    assert f"atom.global.{s}" in ptx   # Triton's test_atomic_cas
    assert re.search(rf"@%p\d+ atom\.global\.{s}\.gpu\.cas\.b{b} ", ptx), ptx
    assert re.search(rf"@%p\d+ atom\.global\.gpu\.acq_rel\.exch\.b{b} ", ptx), ptx
    tail = ptx[ptx.index("exch.b"):]
    assert "st.shared" in ptx and "bar.sync" not in tail and "st.shared" not in tail


@requires_cpu
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_cas_spin_lock_cpu(dt, sem):
    lock = np.zeros(1, dt)
    data = np.zeros(128, np.float32)
    serialized_add[(300,)](data, lock, triton_dtype=getattr(tl, dt), SEM=sem)
    np.testing.assert_array_equal(data, np.full(128, 300.0, np.float32))
    assert lock[0] == 0


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int16"])
def test_cas_bits(dt, arch):
    """CAS compares and swaps the bits: b16 / b32 / b64."""
    @triton.jit
    def cas_kernel(x_ptr, c_ptr, v_ptr, o_ptr):
        offs = tl.arange(0, 64)
        old = tl.atomic_cas(x_ptr + offs, tl.load(c_ptr + offs), tl.load(v_ptr + offs), sem="release",
                            scope="cta")
        tl.store(o_ptr + offs, old)

    t = "*" + {"int16": "i16"}.get(dt, SIG.get(dt))
    k = compile_for(cas_kernel, {"x_ptr": t, "c_ptr": t, "v_ptr": t, "o_ptr": t}, arch=arch)
    bits = {"int16": 16}.get(dt, BITS.get(dt))
    assert re.search(rf"@%p\d+ atom\.global\.release\.cta\.cas\.b{bits} ", k.asm["ptx"])


# -- old values of elements held by several threads ----------------------------------------------

@triton.jit
def use_result_kernel(index_ptr, out_ptr, size: tl.constexpr, op: tl.constexpr):
    # Triton's test_tensor_atomic_use_result: a [size, 1] atomic whose old
    # values, broadcast against [1, size], index a store
    if op == "add":
        write_index = tl.atomic_add(index_ptr + tl.arange(0, size)[:, None], val=tl.arange(0, size)[:, None],
                                    sem="relaxed")
    elif op == "cas":
        write_index = tl.atomic_cas(
            index_ptr + tl.arange(0, size)[:, None],
            cmp=tl.zeros((size, ), dtype=index_ptr.dtype.element_ty)[:, None],
            val=tl.arange(0, size).to(index_ptr.dtype.element_ty)[:, None],
            sem="relaxed",
        )
    tl.store(out_ptr + write_index.to(tl.uint32) * size + tl.arange(0, size)[None, :], 5)


@requires_cpu
@pytest.mark.parametrize("op", ["add", "cas"])
@pytest.mark.parametrize("size", [1, 4, 16])
@pytest.mark.parametrize("dt", ["int32", "float16"])
def test_use_result_cpu(dt, size, op):
    index = np.arange(size).astype(dt)
    out = np.zeros((size, size), dt)
    use_result_kernel[(1,)](index, out, size, op)
    assert (out == 5).all()


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("op", ["add", "cas"])
@pytest.mark.parametrize("size,warps,how", [
    (1, 4, "scratch"), (4, 4, "scratch"), (16, 4, "shuffle"), (4, 1, "shuffle"), (16, 1, "shuffle"),
])
def test_use_result_shared(size, warps, how, op, arch):
    """Only one thread does each element's atomic; its old value reaches
    the threads with copies: a shuffle from the owner lane (lane & ~copy
    bits) when the copies share a warp, else through the block's row-major
    scratch (a scratch_offset in TTGIR, a store by the owners, a barrier)."""
    k = compile_for(use_result_kernel, {"index_ptr": "*i32", "out_ptr": "*i32"}, dict(size=size, op=op), arch,
                    num_warps=warps)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    atom = next(line for line in ttgir.splitlines() if "= atomic_" in line)
    after = ptx[ptx.index("atom.global."):]
    if how == "scratch":
        assert "scratch_offset" in atom
        assert "st.shared.b32" in after and "bar.sync" in after and "ld.shared.b32" in after
        assert "shfl.sync.idx.b32" not in after
    else:
        assert "scratch_offset" not in atom
        assert "shfl.sync.idx.b32" in after and "bar.sync" not in after and "st.shared" not in after


@needs_ptxas
def test_no_copies_no_exchange():
    """A layout without copies (one element per thread) hands nothing over;
    a 16-element block over one warp's 32 lanes shuffles its old values."""
    sig = {"acc_ptr": "*i32", "val_ptr": "*i32", "old_ptr": "*i32", "n": "i32"}
    k = compile_for(rmw_block_kernel, sig, dict(KIND="add", SEM="relaxed", SCOPE="gpu", BLOCK=32), num_warps=1)
    after = k.asm["ptx"][k.asm["ptx"].index("atom.global."):]
    assert "scratch_offset" not in k.asm["ct.ttgir"] and "bar.sync" not in after and "shfl.sync" not in after
    k = compile_for(rmw_block_kernel, sig, dict(KIND="add", SEM="relaxed", SCOPE="gpu", BLOCK=16), num_warps=1)
    after = k.asm["ptx"][k.asm["ptx"].index("atom.global."):]
    assert "shfl.sync.idx" in after and "bar.sync" not in after


# -- float max / min through the bits ------------------------------------------------------------

@triton.jit
def minmax_kernel(z_ptr, x_ptr, old_ptr, MAX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if MAX:
        old = tl.atomic_max(z_ptr + offs, x)
    else:
        old = tl.atomic_min(z_ptr + offs, x)
    tl.store(old_ptr + offs, old)


def minmax_case(dt):
    """(z, x): memory and operand pairs across signs, -0.0 and NaN operands."""
    z = [1.0, -3.0, -3.0, 2.0, -1.0, 1.0, 5.0, -5.0, 0.0, -0.0, 7.0, -7.0, 3.5, -2.5, 0.5, -0.5]
    x = [-2.0, -2.0, 2.0, 7.0, -0.0, -0.0, np.nan, np.nan, -1.0, 1.0, 7.0, -7.0, -np.inf, np.inf, 0.25, -0.75]
    return np.array(z, dt), np.array(x, dt)


def minmax_check(z0, x, z, old, is_max):
    ref = np.fmax(z0, x) if is_max else np.fmin(z0, x)   # a NaN operand leaves memory as it is
    np.testing.assert_array_equal(z, ref)
    np.testing.assert_array_equal(np.signbit(z), np.signbit(ref))   # max(-1, -0.0) is -0.0
    np.testing.assert_array_equal(old, z0)


@requires_cpu
@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_minmax_cpu(dt, is_max):
    z0, x = minmax_case(dt)
    z, old = z0.copy(), np.zeros_like(z0)
    minmax_kernel[(1,)](z, x, old, is_max, BLOCK=16)
    minmax_check(z0, x, z, old, is_max)


# -- histogram ------------------------------------------------------------------------------------

HIST = [[2048, 2], [1024, 8], [1024, 128], [256, 512], [32, 512], [8, 512], [8, 2]]


@triton.jit
def histogram_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    # Triton's test_histogram
    offset1 = tl.arange(0, M)
    offset2 = tl.arange(0, N)
    x = tl.load(x_ptr + offset1)
    z = tl.histogram(x, N)
    bias = tl.full([M, N], 1, dtype=tl.int32)
    biased = z + bias  # noqa: F841
    tl.store(z_ptr + offset2, z)


@triton.jit
def histogram_mask_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offset1 = tl.arange(0, 2 * M)
    offset2 = tl.arange(0, N)
    mask = offset1 < M
    x = tl.load(x_ptr + offset1)
    z = tl.histogram(x, N, mask)
    tl.store(z_ptr + offset2, z)


HIST_SIG = {"x_ptr": "*i32", "z_ptr": "*i32"}


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("M,N", HIST)
def test_histogram_increments(M, N, masked, arch):
    """Each bin increment is `@p red.shared.add.u32 [bin], 1`: masked-off,
    out-of-range and copied elements are predicated off, never added as 0."""
    k = compile_for(histogram_mask_kernel if masked else histogram_kernel, HIST_SIG, dict(M=M, N=N), arch)
    ptx = k.asm["ptx"]
    incs = re.findall(r"@%p\d+ red\.shared\.add\.u32 \[%r\d+\], 1;", ptx)
    assert incs and "atom.shared" not in ptx
    assert len(re.findall(r"red\.shared", ptx)) == len(incs)


@requires_cpu
@pytest.mark.parametrize("M,N", HIST)
def test_histogram_cpu(M, N):
    rng = np.random.default_rng(17)
    x = rng.integers(0, N, M).astype(np.int32)
    z = np.zeros(N, np.int32)
    histogram_kernel[(1,)](x, z, M=M, N=N)
    np.testing.assert_array_equal(z, np.bincount(x, minlength=N))
    z = np.zeros(N, np.int32)
    histogram_mask_kernel[(1,)](np.concatenate([x, x]), z, M=M, N=N)
    np.testing.assert_array_equal(z, np.bincount(x, minlength=N))


def have_disassembler():
    from ctriton import _toolkit
    return _toolkit.disassembler_path() is not None


@needs_ptxas
@pytest.mark.skipif(not have_disassembler(), reason="no cuobjdump / nvdisasm")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("M,N", HIST)
def test_histogram_sass(M, N, arch):
    """Triton's test_histogram check: ptxas turns the predicated increments
    of the constant 1 into warp-aggregated ATOMS.POPC.INC."""
    k = compile_for(histogram_kernel, HIST_SIG, dict(M=M, N=N), arch)
    assert "ATOMS.POPC.INC" in k.asm["sass"]


def fake_tool(tmp_path, name="cuobjdump"):
    """A stand-in disassembler that records its arguments and prints them."""
    log = tmp_path / f"{name}.log"
    p = tmp_path / name
    p.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\necho \"FAKE SASS $@\"\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p), log


@needs_ptxas
def test_sass_lazy_and_found_like_ptxas(tmp_path, monkeypatch):
    """asm["sass"] runs the disassembler when first asked for (a compile
    never does), once, on the cubin: cuobjdump -sass FILE, or nvdisasm FILE;
    the same on a disk-cache hit."""
    tool, log = fake_tool(tmp_path)
    monkeypatch.setenv("CTRITON_CUOBJDUMP_PATH", tool)
    k = compile_for(histogram_kernel, HIST_SIG, dict(M=8, N=2))
    assert not log.exists()
    assert "sass" not in k.asm
    s = k.asm["sass"]
    assert s.startswith("FAKE SASS -sass ") and s.strip().endswith(".cubin")
    assert k.asm["sass"] is s and len(log.read_text().splitlines()) == 1
    assert not os.path.exists(s.split()[-1])   # the temporary cubin is gone
    hit = compile_for(histogram_kernel, HIST_SIG, dict(M=8, N=2))
    assert hit.asm["sass"].startswith("FAKE SASS -sass ")
    monkeypatch.delenv("CTRITON_CUOBJDUMP_PATH")
    tool, log = fake_tool(tmp_path, "nvdisasm")
    monkeypatch.setenv("CTRITON_NVDISASM_PATH", tool)
    k = compile_for(histogram_kernel, HIST_SIG, dict(M=8, N=4))
    from ctriton import _toolkit
    if _toolkit._find_disassembler()[0] == "nvdisasm":   # no cuobjdump found before it
        assert k.asm["sass"].startswith("FAKE SASS /")


@needs_ptxas
def test_sass_without_disassembler(monkeypatch):
    from ctriton import _toolkit
    monkeypatch.setattr(_toolkit, "_find_disassembler", lambda: None)
    k = compile_for(histogram_kernel, HIST_SIG, dict(M=8, N=2))
    with pytest.raises(RuntimeError, match="needs a CUDA disassembler.*cuobjdump.*nvdisasm"):
        k.asm["sass"]


@requires_cpu
def test_sass_cpu_kernel_has_none():
    x, z = np.zeros(8, np.int32), np.zeros(2, np.int32)
    h = histogram_kernel[(1,)](x, z, M=8, N=2)
    with pytest.raises(KeyError):
        h.asm["sass"]
