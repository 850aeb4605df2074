"""`import ctriton` stays cheap: the standard-library modules that only some
features need (json, inspect, dataclasses, subprocess, ...) are imported
where those features run, not at start-up; the features still work."""
import os
import subprocess
import sys

import ctriton

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ctriton.__file__)))

# imported by no part of `import ctriton` (each was once, through knobs,
# runtime.cache, dataclasses or compat)
LAZY = ("json", "inspect", "dataclasses", "subprocess", "uuid", "base64", "platform", "runpy",
        "locale", "tokenize", "ast", "dis", "shutil", "importlib.abc", "ctriton.compat",
        "ctriton.testing", "ctriton.profiler", "ctriton._libtriton")


def _child(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_import_ctriton_imports_none_of_the_lazy_modules():
    out = _child("import sys\n"
                 f"lazy = {LAZY!r}\n"
                 "before = {m for m in lazy if m in sys.modules}\n"
                 "import ctriton, ctriton.language, ctriton.knobs\n"
                 "print(sorted(m for m in lazy if m in sys.modules and m not in before))")
    assert out.strip() == "[]", f"imported at start-up: {out.strip()}"


def test_the_lazy_features_still_work(tmp_path):
    out = _child(f"""
import ctriton
from ctriton import use_as_triton, knobs
from ctriton.runtime.cache import FileCacheManager
assert ctriton.use_as_triton is ctriton.compat.use_as_triton is use_as_triton
t = knobs.NvidiaTool("/x/ptxas", "12.8")
assert t == knobs.NvidiaTool("/x/ptxas", "12.8") and t != knobs.NvidiaTool("/x/ptxas", "13.0")
assert repr(t) == "NvidiaTool(path='/x/ptxas', version='12.8')"
knobs.cache.dir = {str(tmp_path)!r}
m = FileCacheManager("ab" * 32)
m.put_group("g.json", {{"a.bin": m.put(b"1", "a.bin")}})
assert m.get_group("g.json")["a.bin"].endswith("a.bin")
use_as_triton()
import triton
print("ok", triton.__version__)
""")
    assert out.split() == ["ok", ctriton.__triton_version__]
