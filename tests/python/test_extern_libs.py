"""extern_libs, a launch and compile option as in Triton: {library name:
path of its LLVM bitcode (or IR text)}. On NVPTX a "libdevice" entry
replaces the libdevice ctriton finds, the others are linked after it, and
the files' contents are part of the cache key; the CPU backend accepts the
option and uses its own math."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ctriton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.language.extra import libdevice

from test_ptxas import PTXAS

SM90 = GPUTarget("cuda", 90, 32)
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}

# A stand-in libdevice whose asinf is x * 125 (0f42FA0000 in PTX).
FAKE_LIBDEVICE = """define float @__nv_asinf(float %x) {
  %y = fmul float %x, 1.250000e+02
  ret float %y
}
"""


@ctriton.jit
def asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, libdevice.asin(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def _compile(options, target=SM90):
    return ctriton.compile(ASTSource(asin_kernel, SIG, {"BLOCK": 256}), target=target,
                           options=options)


@pytest.fixture
def fake_lib(tmp_path):
    p = tmp_path / "fake_libdevice.ll"
    p.write_text(FAKE_LIBDEVICE)
    return str(p)


def test_libdevice_entry_replaces_the_default(fake_lib):
    plain = _compile({})
    assert "0f42FA0000" not in plain.asm["ptx"]
    k = _compile({"extern_libs": {"libdevice": fake_lib}})
    assert "0f42FA0000" in k.asm["ptx"]  # the stand-in's asinf, inlined
    assert ".target sm_90" in k.asm["ptx"]
    if PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF"


@pytest.mark.skipif(not ctriton._C.libdevice_path(), reason="no libdevice")
def test_real_libdevice_by_path_assembles_for_sm90(tmp_path):
    path = str(tmp_path / "libdevice.10.bc")
    os.symlink(ctriton._C.libdevice_path(), path)
    k = _compile({"extern_libs": {"libdevice": path}})
    assert k.asm["ptx"] == _compile({}).asm["ptx"]
    if PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF" and k.n_regs > 0


def test_other_entries_are_linked(tmp_path, fake_lib):
    # a second library whose function the stand-in libdevice calls
    lib2 = tmp_path / "scale.ll"
    lib2.write_text("define float @ct_scale(float %x) {\n"
                    "  %y = fmul float %x, 3.750000e+01\n  ret float %y\n}\n")
    caller = tmp_path / "caller.ll"
    caller.write_text("declare float @ct_scale(float)\n"
                      "define float @__nv_asinf(float %x) {\n"
                      "  %y = call float @ct_scale(float %x)\n  ret float %y\n}\n")
    k = _compile({"extern_libs": {"libdevice": str(caller), "scale": str(lib2)}})
    assert "0f42160000" in k.asm["ptx"] and "ct_scale" not in k.asm["ptx"]


def test_contents_are_part_of_the_key(tmp_path, fake_lib):
    a = _compile({"extern_libs": {"libdevice": fake_lib}})
    assert _compile({"extern_libs": {"libdevice": fake_lib}}).hash == a.hash
    assert _compile({}).hash != a.hash
    with open(fake_lib, "w") as f:
        f.write(FAKE_LIBDEVICE.replace("1.250000e+02", "2.500000e+02") + "; changed\n")
    b = _compile({"extern_libs": {"libdevice": fake_lib}})
    assert b.hash != a.hash and "0f437A0000" in b.asm["ptx"]


def test_bad_entries_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"extern_libs\['libdevice'\]"):
        _compile({"extern_libs": {"libdevice": str(tmp_path / "missing.bc")}})
    junk = tmp_path / "junk.bc"
    junk.write_text("not bitcode")
    with pytest.raises(ctriton.CompilationError, match="cannot parse libdevice"):
        _compile({"extern_libs": {"libdevice": str(junk)}})
    for bad in (5, {"libdevice": 3}, {1: "x"}, ["libdevice"]):
        with pytest.raises(TypeError, match="extern_libs"):
            _compile({"extern_libs": bad})
    # an empty libdevice entry means the default one, as in Triton
    assert _compile({"extern_libs": {"libdevice": ""}}).hash == _compile({}).hash


def test_launch_option_on_the_cpu_backend(tmp_path):
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    try:
        asin_kernel.clear_cache()
        x = np.random.default_rng(0).random(1000).astype(np.float32)
        y = np.zeros_like(x)
        asin_kernel[(4,)](x, y, 1000, BLOCK=256,
                          extern_libs={"libdevice": str(tmp_path / "any.bc")})
        np.testing.assert_allclose(y, np.arcsin(x), rtol=1e-6, atol=1e-6)
        assert len(asin_kernel.cache) == 1
        asin_kernel[(4,)](x, y, 1000, BLOCK=256)  # another option value: another variant
        assert len(asin_kernel.cache) == 2
        with pytest.raises(TypeError, match="extern_libs"):
            asin_kernel[(4,)](x, y, 1000, BLOCK=256, extern_libs=7)
    finally:
        asin_kernel.clear_cache()
        if prev is None:
            driver.reset_active()
        else:
            driver.set_active(prev)


def test_tutorial_style_program_through_the_compat_layer(tmp_path):
    """An unmodified-Triton-style program (triton.language.extra.libdevice,
    extern_libs at the launch) run by `python -m ctriton run` on the CPU."""
    script = tmp_path / "extern.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import triton
        import triton.language as tl
        from triton.language.extra import libdevice

        @triton.jit
        def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
            offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
            mask = offsets < n_elements
            x = libdevice.asin(tl.load(x_ptr + offsets, mask=mask))
            tl.store(y_ptr + offsets, x, mask=mask)

        x = np.random.default_rng(1).random(5000).astype(np.float32)
        y = np.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.size, meta['BLOCK_SIZE']), )
        asin_kernel[grid](x, y, x.size, BLOCK_SIZE=1024,
                          extern_libs={'libdevice': '/nowhere/libdevice.10.bc'})
        print("maxdiff", float(np.abs(y - np.arcsin(x)).max()))
    """))
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(ctriton.__file__)))
    env = dict(os.environ, CTRITON_BACKEND="cpu", PYTHONPATH=python_dir)
    r = subprocess.run([sys.executable, "-m", "ctriton", "run", str(script)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout.split("maxdiff")[1]) < 1e-6
