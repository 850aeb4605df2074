"""Compile options that shape the PTX, as Triton's: enable_fp_fusion (a*b+c
as fma or not), enable_reflect_ftz (the approximate ex2 flushing subnormals
or not), and the target architecture from the `arch=` launch option or
TRITON_OVERRIDE_ARCH (named in the TTGIR as `cuda:NN`). Compiled for CUDA
without a GPU: the driver is asked for nothing but the target."""
import re

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource


@triton.jit
def mul_add(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.load(ptrs) * 1.5 + 1.0)


@triton.jit
def exp2(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.math.exp2(tl.load(ptrs)))


def ptx_of(fn, arch=90, **opts):
    k = triton.compile(ASTSource(fn, {"data": "*fp32"}, {}, {"data": {"divisibility": 16}}),
                       target=GPUTarget("cuda", arch, 32), options=opts)
    return k


@pytest.mark.parametrize("fusion", [False, True])
def test_enable_fp_fusion(fusion):
    ptx = ptx_of(mul_add, enable_fp_fusion=fusion).asm["ptx"]
    assert (re.search(r"(mad|fma)\.r[nzmp]\.(ftz\.)?f32", ptx) is not None) == fusion


@pytest.mark.parametrize("ftz", [False, True])
def test_enable_reflect_ftz(ftz):
    ptx = ptx_of(exp2, enable_reflect_ftz=ftz).asm["ptx"]
    assert ("ex2.approx.ftz.f32" in ptx) == ftz
    assert "ex2.approx" in ptx


@pytest.mark.parametrize("arch", [80, 90])
def test_ttgir_names_the_target(arch):
    assert re.search(r'target = "cuda:(\d+)"', ptx_of(mul_add, arch=arch).asm["ttgir"]).group(1) == str(arch)


def test_override_target_parsing():
    from ctriton.runtime.jit import _override_target
    t = GPUTarget("cuda", 90, 32)
    assert [_override_target(t, a).arch for a in ("sm80", "sm_90a", "75")] == [80, 90, 75]
    with pytest.raises(ValueError, match="CUDA architecture"):
        _override_target(t, "gfx942")


@triton.jit
def small_dot(a, b, c):
    r = tl.arange(0, 64)
    x = tl.load(a + r[:, None] * 64 + r[None, :])
    y = tl.load(b + r[:, None] * 64 + r[None, :])
    tl.store(c + r[:, None] * 64 + r[None, :], tl.dot(x, y))


def test_arch_option_below_the_target():
    """options={"arch": "sm80"} for an sm_90 target, as Triton takes it: the
    code is sm_80's (mma.sync, `cuda:80`), assembled for sm_90a (the PTX
    target and ptxas), so that it loads on the device; the option is part
    of the key."""
    sig = {"a": "*fp16", "b": "*fp16", "c": "*fp32"}
    k90 = triton.compile(ASTSource(small_dot, sig, {}, {}), target=GPUTarget("cuda", 90, 32))
    k80 = triton.compile(ASTSource(small_dot, sig, {}, {}), target=GPUTarget("cuda", 90, 32),
                         options={"arch": "sm80"})
    assert "wgmma.mma_async" in k90.asm["ptx"] and "mma.sync" not in k90.asm["ptx"]
    assert "mma.sync" in k80.asm["ptx"] and "wgmma" not in k80.asm["ptx"]
    assert re.search(r'target = "cuda:(\d+)"', k80.asm["ttgir"]).group(1) == "80"
    assert re.search(r"\.target (\S+)", k80.asm["ptx"]).group(1) == "sm_90a"
    # sm_80 asked of an sm_80 target: assembled for sm_80
    k = triton.compile(ASTSource(small_dot, sig, {}, {}), target=GPUTarget("cuda", 80, 32), options={"arch": "sm80"})
    assert re.search(r"\.target (\S+)", k.asm["ptx"]).group(1) == "sm_80"
    with pytest.raises(ValueError, match="CUDA architecture"):
        triton.compile(ASTSource(small_dot, sig, {}, {}), target=GPUTarget("cuda", 90, 32), options={"arch": "hopper"})


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["option", "knob"])
def test_arch_override_on_the_gpu(how, monkeypatch):
    import torch
    from ctriton import knobs

    @triton.jit
    def simple(data, out):
        tl.store(out + tl.arange(0, 128), tl.load(data + tl.arange(0, 128)) * 1.5 + 1.0)

    data = torch.randn(128, device="cuda")
    out = torch.empty_like(data)
    if how == "knob":
        monkeypatch.setattr(knobs.runtime, "override_arch", "sm80")
        h = simple.warmup(data, out, grid=(1,))
    else:
        h = simple.warmup(data, out, arch="sm80", grid=(1,))
    assert re.search(r"cuda:(\d+)", h.asm["ttgir"]).group(1) == "80"
    # as in Triton, sm_80 code is assembled for the device it runs on
    major, minor = torch.cuda.get_device_capability()
    dev = major * 10 + minor
    assert re.search(r"\.target sm_(\d+)", h.asm["ptx"]).group(1) == str(max(dev, 80))
    if how == "knob":
        simple[(1,)](data, out)
    else:
        simple[(1,)](data, out, arch="sm80")
    torch.testing.assert_close(out, data * 1.5 + 1.0)


def test_arch_older_than_ptxas_knows():
    """sm_70 through a ptxas that no longer assembles it (CUDA 13): the PTX
    is kept for the driver to compile, as when no ptxas is found."""
    k = ptx_of(mul_add, arch=70)
    assert ".target sm_70" in k.asm["ptx"]
    assert re.search(r'target = "cuda:70"', k.asm["ttgir"])


@pytest.mark.parametrize("arch", [75, 80, 89])
def test_num_ctas_needs_sm90(arch):
    """num_ctas > 1 before sm_90: Triton's ValueError at compile time."""
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        ptx_of(mul_add, arch=arch, num_ctas=2)
    assert ".target sm_" in ptx_of(mul_add, arch=arch, num_ctas=1).asm["ptx"]


def test_num_ctas_on_sm90_and_the_cpu():
    assert ".target sm_90" in ptx_of(mul_add, arch=90, num_ctas=2).asm["ptx"]
    k = triton.compile(ASTSource(mul_add, {"data": "*fp32"}, {}), target=GPUTarget("cpu", 0, 1),
                       options={"num_ctas": 2})
    assert "store" in k.asm["ttir"]


@pytest.mark.gpu
def test_num_ctas_pre_sm90_through_the_knob(monkeypatch):
    import torch
    from ctriton import knobs

    @triton.jit
    def nothing(src):
        pass

    monkeypatch.setattr(knobs.runtime, "override_arch", "sm80")
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        nothing.warmup(torch.empty(1, device="cuda"), grid=(1,), num_ctas=2)
