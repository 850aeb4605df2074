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
