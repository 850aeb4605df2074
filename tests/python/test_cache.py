"""The on-disk cache: hits across processes, corrupt entries, concurrent
writers; compile-only for GPU targets; CTRITON_DUMP; the dump CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ctriton
from ctriton import _C
from ctriton.compiler import ASTSource
from ctriton.backends.compiler import GPUTarget
import kernels_for_tests as K

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def child(*ns, env=None, wait=True):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"), HERE]))
    e.update(env or {})
    cmd = [sys.executable, os.path.join(HERE, "fake_pipeline.py")] + [str(n) for n in ns]
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return p
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def test_sha256():
    assert _C.sha256(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert _C.sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert _C.sha256(b"a" * 1000) == __import__("hashlib").sha256(b"a" * 1000).hexdigest()


def test_hit_in_new_process(cache_dir):
    r1, _ = child(100, 4096)
    assert r1["compiled"] == 2
    r2, _ = child(100, 4096)
    assert r2["compiled"] == 0  # both variants from disk
    r3, _ = child(4097, 1)
    assert r3["compiled"] == 1  # 4097 is 100's variant (i32); 1 is a new one (constexpr)


def test_corrupt_entry_recompiled(cache_dir):
    child(100)
    entries = [d for d in os.listdir(cache_dir)
               if not d.startswith("tmp.") and os.path.isfile(cache_dir / d)]  # not source-index/
    assert len(entries) == 1
    path = os.path.join(cache_dir, entries[0])
    with open(path, "rb") as f:
        good = f.read()
    # an edited blob (same length), appended garbage, a truncated entry and
    # an edited header all read as corrupt and are recompiled
    edits = [good.replace(b"fake ttir", b"FAKE ttir"), good + b"garbage", good[:-10],
             good.replace(b" ttir ", b" ttjr ")]
    for bad in edits:
        assert bad != good
        with open(path, "wb") as f:
            f.write(bad)
        r, err = child(100)
        assert r["compiled"] == 1 and "corrupt" in err
        r, err = child(100)
        assert r["compiled"] == 0 and "corrupt" not in err


def test_concurrent_writers(cache_dir):
    ps = [child(100, 4096, 12, wait=False) for _ in range(2)]
    for p in ps:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    r, _ = child(100, 4096, 12)
    assert r["compiled"] == 0
    assert not [d for d in os.listdir(cache_dir) if d.startswith("tmp.")]


def _src():
    return ASTSource(K.add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                              "out_ptr": "*fp32", "n": "i32"},
                     constexprs={"BLOCK": 1024}, attrs={"x_ptr": [["tt.divisibility", 16]]})


@pytest.mark.parametrize("arch", [80, 90])
def test_compile_only_gpu_target(fake_compile, arch):
    k = ctriton.compile(_src(), target=GPUTarget("cuda", arch, 32))
    assert "ttir" in k.asm and k.metadata.arch == arch
    assert k.metadata.num_warps == 4 and k.metadata.shared == 0
    assert k.metadata.backend == "cuda"


def test_compile_keys_differ(fake_compile):
    a = ctriton.compile(_src(), target=GPUTarget("cuda", 80, 32))
    b = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    c = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    assert len({a.hash, b.hash, c.hash}) == 3
    d = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    assert d.hash == b.hash and len(fake_compile) == 3
    with pytest.MonkeyPatch.context() as mp:  # backend settings from the environment
        mp.setenv("CTRITON_LLVM_PIPELINE", "default<O1>")
        e = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    assert e.hash != b.hash and len(fake_compile) == 4
    with pytest.raises(KeyError, match="num_wraps"):
        ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32), options={"num_wraps": 8})


def test_dump_env(fake_compile, monkeypatch, capsys):
    monkeypatch.setenv("CTRITON_DUMP", "ttir,llir")
    ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    err = capsys.readouterr().err
    assert "ctriton: k ttir" in err and "fake ttir of add_kernel" in err
    ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))  # a disk hit dumps too
    err = capsys.readouterr().err
    assert "ttir (cached)" in err


def test_cache_key_follows_callees_and_globals(tmp_path):
    src = tmp_path / "mod1.py"
    body = ("from __future__ import annotations\nimport ctriton as triton\n"
            "SCALE = {s}\n@triton.jit\ndef helper(x):\n    return x * {h}\n"
            "@triton.jit\ndef kern(p):\n    helper(SCALE)\n")
    keys = []
    for s, h in ((2, 3), (2, 3), (5, 3), (2, 4)):
        src.write_text(body.format(s=s, h=h))
        import importlib.util
        spec = importlib.util.spec_from_file_location(f"mod_{len(keys)}", src)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        keys.append(m.kern.cache_key)
    assert keys[0] == keys[1] and len(set(keys)) == 3


def test_build_key(tmp_path):
    """The compiler build is named by the extension's build id and each .py
    file's path, size and mtime: a changed, added or touched .py file
    changes it; other files and __pycache__ do not."""
    d = tmp_path / "pkg"
    (d / "sub").mkdir(parents=True)
    (d / "a.py").write_text("x = 1\n")
    (d / "sub" / "b.py").write_text("y = 2\n")
    k0 = _C.build_key([str(d)])
    assert len(k0) == 64 and _C.build_key([str(d)]) == k0
    (d / "notes.txt").write_text("not python")
    (d / "__pycache__").mkdir()
    (d / "__pycache__" / "a.cpython-311.py").write_text("")
    assert _C.build_key([str(d)]) == k0
    keys = {k0}
    (d / "sub" / "b.py").write_text("y = 22\n")  # another size
    keys.add(_C.build_key([str(d)]))
    st = os.stat(d / "a.py")
    os.utime(d / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # touched
    keys.add(_C.build_key([str(d)]))
    (d / "c.py").write_text("")
    keys.add(_C.build_key([str(d)]))
    assert len(keys) == 4
    assert _C.build_key([str(d), str(d)]) != _C.build_key([str(d)])
    # the extension itself: a linker build id, so no file is read
    from ctriton.compiler.compiler import compiler_build_hash
    assert len(compiler_build_hash()) == 64


def test_unreadable_metadata_recompiled(fake_compile):
    k = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    root = _C.cache_root()
    entry = _C.cache_get(root, k.hash)
    entry["meta"] = b"\xffnot marshal data"  # checksummed, but not metadata
    _C.cache_put(root, k.hash, entry)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        k2 = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    assert k2.hash == k.hash and len(fake_compile) == 2
    k3 = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))  # rewritten: a hit
    assert len(fake_compile) == 2 and k3.metadata.num_warps == 4


ODD_LAYOUTS = '''
import ctriton as triton

@triton.jit(
    noinline=False,
)
def spread(
    x_ptr,
    n,
):
    y = (n +
         1)
    # a comment at the end of the body

    # another, after a blank line


class Holder:
    @staticmethod
    @triton.jit
    def nested(x_ptr):
        s = """
text at column 0
"""
        return s


@triton.jit
def last_paren(x):
    return max(x,
1)
def after(): pass
'''


def _inspect_source(jf):
    """(src, starting_line) by inspect and ast: the reference."""
    import ast
    import inspect
    import textwrap
    lines, first = inspect.getsourcelines(jf.fn)
    text = textwrap.dedent("".join(lines))
    def_line = ast.parse(text).body[0].lineno
    return "\n".join(text.splitlines()[def_line - 1:]) + "\n", first + def_line - 1


def test_source_reader_matches_inspect(tmp_path):
    """@jit sources are read from the file without inspect/tokenize; the
    text and starting line equal inspect's, odd layouts included."""
    import importlib.util
    import ctriton.language as tl
    from ctriton.runtime.jit import JITFunction
    path = tmp_path / "odd.py"
    path.write_text(ODD_LAYOUTS)
    spec = importlib.util.spec_from_file_location("odd_layouts", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    fns = [m.spread, m.last_paren]
    fns += [v for mod in (K, tl, tl.standard) for v in vars(mod).values()
            if isinstance(v, JITFunction)]
    assert len(fns) > 20
    for jf in fns:
        assert (jf.src, jf.starting_line) == _inspect_source(jf), jf.__name__
    assert m.spread.starting_line == 7 and m.spread.src.startswith("def spread(")
    assert m.spread.src.endswith("    # a comment at the end of the body\n\n"
                                 "    # another, after a blank line\n")
    assert m.last_paren.src.endswith("1)\n")
    # a string at column 0 in an indented method: inspect + dedent cannot
    # parse it (no common margin); the reader strips the def's indentation
    assert m.Holder.nested.src.startswith("def nested(x_ptr):\n    s = \"\"\"\ntext at column 0")
    assert m.Holder.nested.starting_line == 21


def test_hit_reads_stage_texts_on_use(fake_compile):
    from ctriton.compiler.compiler import CachedAsm
    k = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    hit = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    assert len(fake_compile) == 1 and isinstance(hit.asm, CachedAsm)
    assert "ttir" in hit.asm and "ttir" not in hit.asm._d  # listed, not read
    assert hit.asm["ttir"] == k.asm["ttir"] and hit.asm.get("ttir") == k.asm["ttir"]
    assert set(hit.asm) == set(k.asm) and "nope" not in hit.asm
    entry = _C.cache_get(_C.cache_root(), k.hash, ("meta",))
    assert entry["meta"] is not None and entry["ttir"] is None  # not read
    # a corrupt blob that a hit does not read is found when it is read
    path = os.path.join(_C.cache_root(), k.hash)
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "wb") as f:
        f.write(good.replace(b"fake ttir", b"FAKE ttir", 1))
    hit2 = ctriton.compile(_src(), target=GPUTarget("cuda", 90, 32))
    assert len(fake_compile) == 1
    with pytest.raises(KeyError, match="gone or corrupt"):
        hit2.asm["ttir"]
    assert not os.path.exists(path)  # removed when found corrupt


def test_ttir_path(tmp_path):
    # A .ttir file compiles from its text; its errors name the file.
    bad = tmp_path / "bad.ttir"
    bad.write_text("func kernel @k() loc(\"bad.ttir\":1:1) {\n  %0 = addd\n}\n")
    with pytest.raises(Exception, match=r"bad\.ttir:2:\d+: .*addd"):
        ctriton.compile(str(bad), target=GPUTarget("cuda", 90, 32))
    good = tmp_path / "k.ttir"
    text = ("func kernel @k(%0: ptr<f32> {divisibility = 16}) loc(\"k.ttir\":1:1) {\n"
            "  %1 = constant {value = 1.0} : f32 loc(2:3)\n"
            "  store %0, %1 loc(3:3)\n"
            "  return loc(4:3)\n"
            "}\n")
    good.write_text(text)
    k = ctriton.compile(str(good), target=GPUTarget("cuda", 90, 32))
    assert k.asm["ct.ttir"] == text
    assert "tt.store %0, %1 : !tt.ptr<f32>" in k.asm["ttir"]
    assert ".entry k" in k.asm["ptx"]


def test_dump_cli(fake_compile, capsys):
    from ctriton import dump
    rc = dump.main([K.__file__, "add_kernel", "--signature",
                    "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32", "--constexpr", "BLOCK=1024",
                    "--stage", "ttir"])
    assert rc == 0
    assert "fake ttir of add_kernel" in capsys.readouterr().out
    r = subprocess.run([sys.executable, "-m", "ctriton.dump", "--help"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert r.returncode == 0 and "--signature" in r.stdout
