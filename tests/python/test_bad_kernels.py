"""The bad-kernel corpus: each file in bad_kernels/ defines a @jit `kernel`
that the frontend must reject. Its header states the expected message
substring (`# expect: ...`) and the expected `line:col` (`# at: L:C`, the
real line in that file and the 1-based column). The error must be a
ctriton.CompilationError naming `file:line:col`, with the source line and a
caret. CTRITON_UPDATE_GOLDEN=1 rewrites the `# at:` lines."""
import glob
import importlib.util
import os
import re

import pytest

import ctriton
import ctriton._C as C

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad_kernels")
FILES = sorted(glob.glob(os.path.join(HERE, "*.py")))


def load(path):
    spec = importlib.util.spec_from_file_location("bad_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def header(path):
    text = open(path).read()
    expect = re.search(r"^# expect: (.*)$", text, re.M).group(1)
    at = re.search(r"^# at: (.*)$", text, re.M).group(1)
    return text, expect, at


def test_corpus_size():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f)[:-3] for f in FILES])
def test_bad_kernel(path):
    text, expect, at = header(path)
    mod = load(path)
    sig = dict(mod.SIGNATURE)
    sig["BLOCK"] = "constexpr"
    with pytest.raises(ctriton.CompilationError) as ei:
        C.ast_to_ttir(mod.kernel, sig, {"BLOCK": 32}, {}, {"debug": False})
    err = ei.value
    msg = str(err)
    assert expect in msg, msg
    got = f"{err.lineno}:{err.col}"
    if os.environ.get("CTRITON_UPDATE_GOLDEN") == "1":
        with open(path, "w") as f:
            f.write(re.sub(r"^# at: .*$", f"# at: {got}", text, count=1, flags=re.M))
        return
    assert got == at, msg
    assert msg.startswith(f"{path}:{at}: error: "), msg
    lines = msg.split("\n")
    assert len(lines) == 3 and lines[2].endswith("^"), msg
    assert lines[1] == text.split("\n")[err.lineno - 1], msg
