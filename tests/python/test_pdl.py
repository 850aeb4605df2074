"""Programmatic dependent launch, as the PDL tutorial uses it:
tl.extra.cuda.gdc_wait() / gdc_launch_dependents() are PTX griddepcontrol
on sm_90 (nothing on sm_80 and the CPU backend), and launch_pdl=True (and
launch_cooperative_grid=True) launch through cuLaunchKernelEx with the
matching launch attribute (checked with the fake libcuda)."""
import numpy as np
import pytest

import ctriton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from test_launch_fake_gpu import fake_cuda, run_child  # noqa: F401
from test_ptxas import PTXAS


@ctriton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
               USE_GDC: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if USE_GDC:
        tl.extra.cuda.gdc_wait()
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(output_ptr + offsets, x + y, mask=mask)


def _compile(arch, use_gdc=True):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32",
           "BLOCK_SIZE": "constexpr", "USE_GDC": "constexpr"}
    return ctriton.compile(ASTSource(add_kernel, sig, {"BLOCK_SIZE": 1024, "USE_GDC": use_gdc}),
                           target=GPUTarget("cuda", arch, 32))


def test_griddepcontrol_on_sm90():
    k = _compile(90)
    ttir, ptx = k.asm["ct.ttir"], k.asm["ptx"]
    assert 'griddepcontrol {kind = "wait"}' in ttir
    assert 'griddepcontrol {kind = "launch_dependents"}' in ttir
    lines = [ln.strip().split(" ", 1)[-1] if ln.strip().startswith("@") else ln.strip()
             for ln in ptx.splitlines()]  # predicated instructions without their guard
    wait, dep = lines.index("griddepcontrol.wait;"), lines.index("griddepcontrol.launch_dependents;")
    loads = [i for i, ln in enumerate(lines) if ln.startswith("ld.global")]
    store = max(i for i, ln in enumerate(lines) if ln.startswith("st.global"))
    assert loads and wait < min(loads) and max(loads) < dep < store  # program order kept
    if PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF"
    assert "griddepcontrol" not in _compile(90, use_gdc=False).asm["ptx"]


def test_griddepcontrol_is_nothing_before_sm90():
    k = _compile(80)
    assert 'griddepcontrol {kind = "wait"}' in k.asm["ct.ttir"]
    assert "griddepcontrol" not in k.asm["ptx"]
    if PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF"


def test_stubs_outside_a_kernel():
    with pytest.raises(RuntimeError, match="inside a @jit function"):
        tl.extra.cuda.gdc_wait()
    assert not hasattr(tl, "gdc_wait")  # tl.extra.cuda's, as in Triton


@pytest.mark.parametrize("use_gdc", [True, False])
def test_tutorial_kernel_on_the_cpu(use_gdc):
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    try:
        n = 98432
        rng = np.random.default_rng(0)
        x, y = rng.random(n, np.float32), rng.random(n, np.float32)
        out = np.zeros_like(x)
        grid = lambda meta: (ctriton.cdiv(n, meta["BLOCK_SIZE"]), )  # noqa: E731
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, USE_GDC=use_gdc, launch_pdl=use_gdc)
        np.testing.assert_array_equal(out, x + y)
    finally:
        if prev is None:
            driver.reset_active()
        else:
            driver.set_active(prev)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_launch_attributes_through_cuLaunchKernelEx(fake_cuda, tmp_path):  # noqa: F811
    got = run_child(fake_cuda, """
        class Rec2(ctypes.Structure):
            _fields_ = Rec._fields_ + [("device", ctypes.c_int), ("module", ctypes.c_int),
                                       ("ex", ctypes.c_int), ("nattrs", ctypes.c_uint),
                                       ("attr_id", ctypes.c_int * 4), ("attr_value", ctypes.c_int * 4)]
        lib.fake_launch.restype = ctypes.POINTER(Rec2)

        @triton.jit
        def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
                       USE_GDC: tl.constexpr):
            offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
            mask = offsets < n_elements
            if USE_GDC:
                tl.extra.cuda.gdc_wait()
            x = tl.load(x_ptr + offsets, mask=mask)
            y = tl.load(y_ptr + offsets, mask=mask)
            if USE_GDC:
                tl.extra.cuda.gdc_launch_dependents()
            tl.store(output_ptr + offsets, x + y, mask=mask)

        def launch(**opts):
            x, y, o = CudaTensor(1 << 20), CudaTensor(2 << 20), CudaTensor(3 << 20)
            add_kernel[(3,)](x, y, o, 3000, BLOCK_SIZE=1024, USE_GDC=True, **opts)
            r = lib.fake_launch().contents
            return [r.count, r.ex, [(r.attr_id[i], r.attr_value[i]) for i in range(r.nattrs)],
                    list(r.grid), list(r.block)]

        out = [launch(), launch(launch_pdl=True), launch(launch_pdl=False),
               launch(launch_cooperative_grid=True),
               launch(launch_pdl=True, launch_cooperative_grid=True), launch(launch_pdl=True)]
        print(json.dumps(out))
    """, tmp_path)
    plain, pdl, off, coop, both, again = got
    assert plain[1:] == [0, [], [3, 1, 1], [128, 1, 1]]      # cuLaunchKernel
    assert pdl[1:] == [1, [[6, 1]], [3, 1, 1], [128, 1, 1]]  # PROGRAMMATIC_STREAM_SERIALIZATION = 1
    assert off[1] == 0 and off[2] == []
    assert coop[1:3] == [1, [[2, 1]]]                        # COOPERATIVE = 1
    assert both[1:3] == [1, [[6, 1], [2, 1]]]
    assert again[1:3] == [1, [[6, 1]]]                       # the cached variant keeps it
    assert [r[0] for r in got] == [1, 2, 3, 4, 5, 6]
