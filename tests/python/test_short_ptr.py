"""CTRITON_SHORT_PTR=1 (opt-in, read once a process; backend/llvm/llvm.c):
LLVM's NVPTX shared pointers are 32-bit, as Triton compiles, so the
addresses of ld.shared / st.shared are 32-bit registers; unset, they are
64-bit. Each setting compiles in a child process of its own. No GPU
needed."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CHILD = r"""
import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

@triton.jit
def colsum(X, Y, N: tl.constexpr):
    # a column sum across the warps: the partial sums meet in shared memory
    r = tl.arange(0, N)
    x = tl.load(X + r[:, None] * N + r[None, :])
    tl.store(Y + r, tl.sum(x, axis=0))

k = triton.compile(ASTSource(colsum, {"X": "*fp32", "Y": "*fp32", "N": "constexpr"}, {"N": 64}),
                   target=GPUTarget("cuda", 80, 32), options={"num_warps": 4})
print(k.asm["ptx"])
"""


def _ptx(short, tmp_path):
    env = dict(os.environ, CTRITON_CACHE_DIR=str(tmp_path / ("c" + short)),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")]))
    env.pop("CTRITON_SHORT_PTR", None)
    if short:
        env["CTRITON_SHORT_PTR"] = short
    script = tmp_path / f"child{short or 0}.py"  # @jit reads its source from a file
    script.write_text(CHILD)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("short,reg", [("1", "%r"), ("", "%rd")])
def test_shared_address_width(short, reg, tmp_path):
    ptx = _ptx(short, tmp_path)
    addrs = re.findall(r"(?:ld|st)\.shared[.\w]*\s+(?:[^,;]+,\s*)?\[(%r[d]?)\d+", ptx)
    assert addrs, "no shared access through a register"
    assert all(a == reg for a in addrs), sorted(set(addrs))
