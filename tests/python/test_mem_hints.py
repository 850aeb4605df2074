"""cache_modifier and eviction_policy of tl.load / tl.store: compiled for
sm_80 and sm_90 without a GPU, the PTX names them as Triton's NVIDIA
lowering does (ld.global.ca / .cg; st.global.wb / .cg / .cs / .wt;
L1::evict_* and an L2 policy from createpolicy with L2::cache_hint), in
vectorized and masked accesses too, and ptxas assembles it. Accesses
without them keep the plain LLVM loads and stores. The CPU backend runs
them as ordinary accesses; modifiers Triton refuses are refused."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


@ctriton.jit
def load_kernel(dst, src, CACHE: tl.constexpr, POLICY: tl.constexpr):
    offsets = tl.arange(0, 128)
    x = tl.load(src + offsets, cache_modifier=CACHE, eviction_policy=POLICY)
    tl.store(dst + offsets, x)


@ctriton.jit
def store_kernel(dst, src, CACHE: tl.constexpr, POLICY: tl.constexpr):
    offsets = tl.arange(0, 128)
    x = tl.load(src + offsets)
    tl.store(dst + offsets, x, cache_modifier=CACHE, eviction_policy=POLICY)


@ctriton.jit
def copy_kernel(dst, src, n, BLOCK: tl.constexpr, LC: tl.constexpr, SC: tl.constexpr, EV: tl.constexpr,
                MASK: tl.constexpr, OTHER: tl.constexpr, VOLATILE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASK:
        if OTHER:
            x = tl.load(src + offs, mask=offs < n, other=1, cache_modifier=LC, eviction_policy=EV,
                        volatile=VOLATILE)
        else:
            x = tl.load(src + offs, mask=offs < n, cache_modifier=LC, eviction_policy=EV, volatile=VOLATILE)
        tl.store(dst + offs, x, mask=offs < n, cache_modifier=SC, eviction_policy=EV)
    else:
        x = tl.load(src + offs, cache_modifier=LC, eviction_policy=EV, volatile=VOLATILE)
        tl.store(dst + offs, x, cache_modifier=SC, eviction_policy=EV)


def compile_gpu(kernel, sig, cx, arch, attrs=None, num_warps=4):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    k = ctriton.compile(ASTSource(kernel, sig, cx, attrs or {}), target=GPUTarget("cuda", arch, 32),
                        options={"num_warps": num_warps})
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF", "ptxas produced no cubin"
    return k


def access_lines(ptx, what):
    return [ln.strip() for ln in ptx.splitlines() if what in ln]


SIG = {"dst": "*fp32", "src": "*fp32"}


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("cache", ["", ".ca", ".cg", ".cv"])
def test_load_cache_modifier(cache, arch):
    ptx = compile_gpu(load_kernel, SIG, dict(CACHE=cache, POLICY=""), arch).asm["ptx"]
    (ld,) = access_lines(ptx, "ld.global")
    if cache in (".ca", ".cg"):
        assert re.fullmatch(rf"ld\.global\{cache}\.b32 \{{%r\d+\}}, \[%rd\d+\];", ld), ld
    else:  # .cv is not emitted on NVIDIA (Triton's lowering): the plain load
        assert re.match(r"ld\.global\.b32\s+%r", ld), ld
    for c in (".ca", ".cg"):
        assert (f"ld.global{c}" in ptx) == (c == cache), ld
    assert "evict" not in ptx and "createpolicy" not in ptx


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("cache", ["", ".wb", ".cg", ".cs", ".wt"])
def test_store_cache_modifier(cache, arch):
    ptx = compile_gpu(store_kernel, SIG, dict(CACHE=cache, POLICY=""), arch).asm["ptx"]
    (st,) = access_lines(ptx, "st.global")
    for c in (".wb", ".cg", ".cs", ".wt"):
        assert (f"st.global{c}" in ptx) == (c == cache), st
    if not cache:
        assert re.match(r"st\.global\.b32\s+\[", st), st
    else:
        assert re.fullmatch(rf"st\.global\{cache}\.b32 \[%rd\d+\], \{{%r\d+\}};", st), st


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("kernel", [load_kernel, store_kernel], ids=["load", "store"])
@pytest.mark.parametrize("policy", ["", "evict_first", "evict_last"])
def test_eviction_policy(policy, kernel, arch):
    ptx = compile_gpu(kernel, SIG, dict(CACHE="", POLICY=policy), arch).asm["ptx"]
    what = "ld.global" if kernel is load_kernel else "st.global"
    (acc,) = access_lines(ptx, what)
    other = {"evict_first": "evict_last", "evict_last": "evict_first"}.get(policy)
    if not policy:
        assert "evict" not in ptx and "cache_hint" not in ptx and "createpolicy" not in ptx
        return
    assert other not in ptx
    m = re.search(rf"createpolicy\.fractional\.L2::{policy}\.b64 (%rd\d+), 1\.0;", ptx)
    assert m, ptx
    assert f"{what}.L1::{policy}.L2::cache_hint.b32" in acc, acc
    assert acc.endswith(f", {m.group(1)};"), acc  # the policy register is the access's operand


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_cache_operator_with_eviction(arch):
    """PTX takes a cache operator or an L1 eviction priority, not both (ptxas
    refuses ld.global.cg.L1::evict_last): the eviction goes to L2 only."""
    ptx = compile_gpu(load_kernel, SIG, dict(CACHE=".cg", POLICY="evict_last"), arch).asm["ptx"]
    (ld,) = access_lines(ptx, "ld.global")
    assert ld.startswith("ld.global.cg.L2::cache_hint.b32"), ld
    assert "L1::" not in ptx and "createpolicy.fractional.L2::evict_last.b64" in ptx
    ptx = compile_gpu(store_kernel, SIG, dict(CACHE=".cs", POLICY="evict_first"), arch).asm["ptx"]
    (st,) = access_lines(ptx, "st.global")
    assert st.startswith("st.global.cs.L2::cache_hint.b32"), st


# dtype, BLOCK: with 4 warps, 1024 elements give 8 per thread (128-bit
# vectors of fp16, two of fp32), 128 give one (8- and 16-bit words)
FORMS = [("fp16", 1024, ".v4.b32"), ("fp32", 1024, ".v4.b32"), ("fp64", 1024, ".v4.b32"),
         ("i8", 1024, ".v2.b32"), ("i8", 128, ".b8"), ("fp16", 128, ".b16"), ("i1", 128, ".b8"),
         ("bf16", 256, ".b32")]


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("mask,other", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f[0]}-{f[1]}")
def test_vector_and_masked_forms(form, mask, other, arch):
    dt, block, width = form
    cx = dict(BLOCK=block, LC=".cg", SC=".cs", EV="evict_first", MASK=mask, OTHER=other, VOLATILE=False)
    attrs = {"dst": {"divisibility": 16}, "src": {"divisibility": 16}, "n": {"divisibility": 16}}
    ptx = compile_gpu(copy_kernel, {"dst": "*" + dt, "src": "*" + dt, "n": "i32"}, cx, arch, attrs).asm["ptx"]
    pred = r"@%p\d+ " if mask else ""
    lds, sts = access_lines(ptx, "ld.global"), access_lines(ptx, "st.global")
    assert lds and sts
    for ld in lds:
        assert re.fullmatch(rf"{pred}ld\.global\.cg\.L2::cache_hint{re.escape(width)} \{{[^}}]+\}}, "
                            r"\[%rd\d+\], %rd\d+;", ld), ld
    for st in sts:
        assert re.fullmatch(rf"{pred}st\.global\.cs\.L2::cache_hint{re.escape(width)} \[%rd\d+\], "
                            r"\{[^}]+\}, %rd\d+;", st), st
    if other:  # the destination registers start as `other`
        assert re.search(r"mov\.b(16|32) %r", ptx)


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_volatile_takes_no_hints(arch):
    """ld.volatile has no cache operator or eviction priority in PTX."""
    cx = dict(BLOCK=1024, LC=".cg", SC="", EV="evict_last", MASK=True, OTHER=False, VOLATILE=True)
    ptx = compile_gpu(copy_kernel, {"dst": "*fp32", "src": "*fp32", "n": "i32"}, cx, arch).asm["ptx"]
    assert "ld.volatile.global" in ptx and "ld.global.cg" not in ptx
    assert all("L1::" not in ln and ".cg" not in ln for ln in access_lines(ptx, "ld."))


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
def test_no_hint_keeps_plain_accesses(arch):
    """Without hints the accesses stay LLVM loads and stores (no inline asm)."""
    cx = dict(BLOCK=1024, LC="", SC="", EV="", MASK=False, OTHER=False, VOLATILE=False)
    attrs = {"dst": {"divisibility": 16}, "src": {"divisibility": 16}}
    ptx = compile_gpu(copy_kernel, {"dst": "*fp32", "src": "*fp32", "n": "i32"}, cx, arch, attrs).asm["ptx"]
    assert "inline asm" not in ptx
    assert all(re.match(r"ld\.global\.v4\.b32\s+\{", ln) for ln in access_lines(ptx, "ld.global"))
    assert all(re.match(r"st\.global\.v4\.b32\s+\[", ln) for ln in access_lines(ptx, "st.global"))


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dtype", ["*fp32", "*fp16", "*i8", "*i1"])
def test_masked_store_is_predicated(dtype, arch, monkeypatch):
    """A masked store without hints is one predicated st.global in inline
    PTX, as Triton emits it, vectorized where the mask allows (16-byte
    runs of fp32 here); no branch goes around it. CTRITON_BRANCH_STORES=1
    brings back the branch around a plain store."""
    cx = dict(BLOCK=1024, LC="", SC="", EV="", MASK=True, OTHER=False, VOLATILE=False)
    attrs = {"dst": {"divisibility": 16}, "src": {"divisibility": 16}, "n": {"divisibility": 16}}
    sig = {"dst": dtype, "src": dtype, "n": "i32"}
    ptx = compile_gpu(copy_kernel, sig, cx, arch, attrs).asm["ptx"]
    stores = access_lines(ptx, "st.global")
    assert stores and all(re.match(r"@%p\d+ st\.global(\.v[24])?\.b(8|16|32) \[", ln) for ln in stores), stores
    if dtype == "*fp32":
        assert all(".v4.b32" in ln for ln in stores), stores
    assert not re.search(r"@%p\d+ bra", ptx)
    monkeypatch.setenv("CTRITON_BRANCH_STORES", "1")
    ptx = compile_gpu(copy_kernel, sig, cx, arch, attrs).asm["ptx"]
    assert re.search(r"@%p\d+ bra", ptx) and not any(ln.startswith("@") for ln in access_lines(ptx, "st.global"))


def test_ttir_keeps_the_attributes():
    k = ctriton.compile(ASTSource(load_kernel, dict(SIG, CACHE="constexpr", POLICY="constexpr"),
                                  dict(CACHE=".cg", POLICY="evict_last")), target=GPUTarget("cuda", 90, 32))
    assert re.search(r'= load %\d+ \{cache = "cg", evict = "evict_last"\}', k.asm["ct.ttir"]), k.asm["ct.ttir"]


@pytest.mark.parametrize("kernel,cache", [(load_kernel, ".wb"), (load_kernel, ".cs"), (load_kernel, ".wt"),
                                          (store_kernel, ".ca"), (store_kernel, ".cv"), (load_kernel, "cg")])
def test_modifier_refused(kernel, cache):
    """The cache operators Triton takes: .ca .cg .cv for loads, .wb .cg .cs .wt for stores."""
    with pytest.raises(Exception, match=rf"cache_modifier '{re.escape(cache)}' is not supported"):
        ctriton.compile(ASTSource(kernel, dict(SIG, CACHE="constexpr", POLICY="constexpr"),
                                  dict(CACHE=cache, POLICY="")), target=GPUTarget("cuda", 90, 32))


def test_policy_refused():
    with pytest.raises(Exception, match="eviction_policy 'evict_sometimes'"):
        ctriton.compile(ASTSource(load_kernel, dict(SIG, CACHE="constexpr", POLICY="constexpr"),
                                  dict(CACHE="", POLICY="evict_sometimes")), target=GPUTarget("cuda", 90, 32))


@pytest.fixture
def cpu_driver():
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    yield
    if prev is None:
        driver.reset_active()
    else:
        driver.set_active(prev)


@pytest.mark.parametrize("lc,sc,ev", [(".ca", ".wb", "evict_first"), (".cg", ".cs", "evict_last"),
                                      (".cv", ".wt", ""), ("", ".cg", "evict_last")])
def test_cpu_runs_them_as_plain_accesses(lc, sc, ev, cpu_driver):
    n = 1000
    src = np.arange(1024, dtype=np.float32) * 0.5
    dst = np.zeros(1024, dtype=np.float32)
    copy_kernel[(4,)](dst, src, n, BLOCK=256, LC=lc, SC=sc, EV=ev, MASK=True, OTHER=True, VOLATILE=False)
    np.testing.assert_array_equal(dst[:n], src[:n])
    assert not dst[n:].any()
