"""The cache key in a new process: the source index (a @jit function's text
found by the content of its file, without splitting the file into lines),
the key's parts hashed in C, and what must change the key: an edit of the
kernel or of a callee, a constexpr or number global it reads, a constexpr
@jit argument's source. A corrupt or stale index is never used."""
import json
import marshal
import os
import subprocess
import sys
import types

import pytest

import ctriton
from ctriton import _C
from ctriton.compiler import ASTSource
from ctriton.runtime import jit as J

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

MOD = '''import os
import ctriton as triton
import ctriton.language as tl
import kcfg

SCALE = tl.constexpr(int(os.environ.get("KSCALE", "2")))


@triton.jit
def helper(x):
    return x * {h}


@triton.jit
def kern(p, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, helper(tl.load(p + offs)) + SCALE + kcfg.BIAS)
'''

# a new process: the kernel's cache_key, its text and how many sources it
# had to read from their files (the others came from the index)
CHILD = r'''
import importlib.util, json, sys
import ctriton.runtime.jit as J
reads = []
real = J._function_source
def counting(fn):
    reads.append(fn.__name__)
    return real(fn)
J._function_source = counting
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("kmod", sys.argv[1] + "/kmod.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print(json.dumps({"key": m.kern.cache_key, "helper": m.helper.cache_key, "src": m.kern.src,
                  "line": m.kern.starting_line, "reads": sorted(reads)}))
'''


def write(d, h=3, bias=1, mtime_step=0):
    """The kernel module and its config module; the kernel file gets an
    mtime mtime_step seconds past its old one (an edit, as an editor or a
    checkout leaves it), keeping its size when only h changes."""
    path = d / "kmod.py"
    old = os.stat(path).st_mtime_ns if path.exists() else None
    path.write_text(MOD.format(h=h))
    (d / "kcfg.py").write_text(f"BIAS = {bias}\n")
    if old is not None:
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, old + mtime_step * 10**9))
    return path


def run(d, env=None):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"), HERE]),
             PYTHONDONTWRITEBYTECODE="1")
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", CHILD, str(d)], env=e, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def index_files(cache_dir):
    d = cache_dir / "source-index"
    return sorted(p for p in d.iterdir() if not p.name.startswith("tmp.")) if d.exists() else []


def test_new_process_reads_sources_from_the_index(tmp_path, cache_dir):
    write(tmp_path)
    first = run(tmp_path)
    assert first["reads"] == ["helper", "kern"]  # read from the file, then indexed
    assert len(index_files(cache_dir)) == 1  # one entry: the file's contents
    again = run(tmp_path)
    assert again["reads"] == []  # both from the index
    assert again == dict(first, reads=[])  # the same key, text and starting line
    assert again["src"].startswith("def kern(p, BLOCK: tl.constexpr):") and again["line"] == 15


def test_key_follows_a_callee_edit(tmp_path, cache_dir):
    """helper's body changes (the file keeps its size, gets a new mtime):
    the kernel's key changes though its own text does not; the old contents
    back give the old key, from the index."""
    write(tmp_path, h=3)
    k3 = run(tmp_path)
    write(tmp_path, h=4, mtime_step=5)
    k4 = run(tmp_path)
    assert k4["reads"] == ["helper", "kern"]  # other contents: not in the index
    assert k4["helper"] != k3["helper"] and k4["key"] != k3["key"]
    assert k4["src"] == k3["src"]
    write(tmp_path, h=3, mtime_step=10)
    back = run(tmp_path)
    assert back["reads"] == [] and back["key"] == k3["key"]


def test_key_follows_constexpr_and_number_globals(tmp_path, cache_dir):
    """Values the kernel reads from its globals are part of the key, not of
    the index: a new value in an unchanged file changes the key."""
    write(tmp_path)
    a = run(tmp_path, {"KSCALE": "2"})
    b = run(tmp_path, {"KSCALE": "5"})  # SCALE: a tl.constexpr of the module
    assert b["reads"] == [] and b["key"] != a["key"] and b["helper"] == a["helper"]
    write(tmp_path, bias=7)  # kcfg.BIAS: a number in another module, read as kcfg.BIAS
    c = run(tmp_path, {"KSCALE": "2"})
    assert c["reads"] == [] and c["key"] not in (a["key"], b["key"])
    write(tmp_path, bias=1)
    assert run(tmp_path, {"KSCALE": "2"})["key"] == a["key"]


def _entry(cache_dir):
    files = index_files(cache_dir)
    assert len(files) == 1
    return files[0]


def test_corrupt_index_is_not_used(tmp_path, cache_dir):
    write(tmp_path)
    good = run(tmp_path)
    path = _entry(cache_dir)
    root, key = str(path.parent), path.name
    valid = path.read_bytes()
    fns = marshal.loads(_C.cache_get(root, key)["index"])["fns"]
    fp = next(iter(fns))
    bad_fns = {f: (d, line, "def kern(p, BLOCK):\n    pass\n") for f, (d, line, _) in fns.items()}
    wrong_shape = {f: ("0" * 64, "15", None) for f in fns}
    corruptions = {
        "garbage": lambda: path.write_bytes(b"\x00garbage" * 50),
        "truncated": lambda: path.write_bytes(valid[:len(valid) // 2]),
        "flipped": lambda: path.write_bytes(valid[:-20] + bytes([valid[-20] ^ 1]) + valid[-19:]),
        "not marshal": lambda: _C.cache_put(root, key, {"index": b"\xffnot marshal"}),
        "wrong shape": lambda: _C.cache_put(root, key, {"index": marshal.dumps(
            {"version": J._INDEX_VERSION, "content": key, "fns": wrong_shape})}),
        "not a dict": lambda: _C.cache_put(root, key, {"index": marshal.dumps([1, 2, 3])}),
        "other contents": lambda: _C.cache_put(root, key, {"index": marshal.dumps(
            {"version": J._INDEX_VERSION, "content": "0" * 32 + "-1", "fns": bad_fns})}),
        "other version": lambda: _C.cache_put(root, key, {"index": marshal.dumps(
            {"version": 99, "content": key, "fns": bad_fns})}),
    }
    for what, corrupt in corruptions.items():
        os.unlink(path)
        corrupt()
        r = run(tmp_path)
        assert r["reads"] == ["helper", "kern"], what  # not used: read from the file
        assert dict(r, reads=[]) == dict(good, reads=[]), what  # the right key, no crash
        assert run(tmp_path)["reads"] == [], what  # written again, whole
    assert fp in marshal.loads(_C.cache_get(root, key)["index"])["fns"]


def test_index_entry_of_other_contents_is_not_found(tmp_path, cache_dir):
    """An entry copied under another file's contents is the wrong key's:
    the cache's header names its own key, so it reads as corrupt."""
    write(tmp_path, h=3)
    run(tmp_path)
    old = _entry(cache_dir)
    saved = old.read_bytes()
    write(tmp_path, h=4, mtime_step=5)
    k4 = run(tmp_path)
    new = [p for p in index_files(cache_dir) if p != old]
    assert len(new) == 1
    new[0].write_bytes(saved)  # the h=3 entry under the h=4 contents' name
    r = run(tmp_path)
    assert r["reads"] == ["helper", "kern"] and r["key"] == k4["key"]


def test_unsafe_update_src_after_index(tmp_path, cache_dir):
    """A source found in the index is the function's src; replacing it
    changes the key as before."""
    write(tmp_path)
    run(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("kmod_here", tmp_path / "kmod.py")
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kcfg", None)
    key = m.kern.cache_key
    assert m.kern.src.startswith("def kern(") and m.kern.starting_line == 15
    m.kern._unsafe_update_src(m.kern.src.replace("+ SCALE", "- SCALE"))
    assert m.kern.cache_key != key and "- SCALE" in m.kern.src


def test_constexpr_jit_argument_by_its_source(tmp_path):
    """A @jit function passed as a constexpr (a higher-order kernel) is in
    the disk key by its cache_key, not by its name."""
    import importlib.util
    import kernels_for_tests as K
    keys = []
    for h in (3, 4):
        p = tmp_path / f"v{h}" / "act.py"
        p.parent.mkdir()
        p.write_text(f"import ctriton as triton\n\n\n@triton.jit\ndef act(x):\n    return x * {h}\n")
        spec = importlib.util.spec_from_file_location("act_same_name", p)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        assert repr(m.act) == "JITFunction(act_same_name:act)"
        src = ASTSource(K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                       "n": "i32"}, {"BLOCK": 64, "ACT": m.act})
        keys.append(src.hash())
    assert keys[0] != keys[1]


def test_key_digest():
    d = _C.key_digest
    assert d({"a": 1, "b": (2.0, None)}) == d({"b": (2.0, None), "a": 1})  # dicts: key order
    values = [1, True, 1.0, "1", b"1", (1,), [1], {1: 1}, None, "", (), ctriton.language.float32]
    assert len({d(v) for v in values}) == len(values)
    assert d([1, 2]) != d([2, 1]) and d(("a", "b")) != d(("ab",))
    ints = [0, 1, -1, 10, -10, 2**63 - 1, -2**63, 2**64, -2**64, 123456789012345]
    assert len({d(i) for i in ints}) == len(ints)
    big = {f"k{i}": i for i in range(100)}  # more items than the small-dict path holds
    assert d(big) == d(dict(reversed(list(big.items()))))
    assert d(ctriton.language.constexpr(3)) != d(3)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested too deeply"):
        d(loop)


def test_content_key_and_getenv(tmp_path, monkeypatch):
    p = tmp_path / "f.py"
    p.write_bytes(b"x = 1\n" * 1000)
    k = _C.content_key(str(p))
    assert k == _C.content_key(p.read_bytes()) and k.endswith("-%x" % 6000)
    p.write_bytes(b"x = 2\n" + b"x = 1\n" * 999)  # same size, other bytes
    assert _C.content_key(str(p)) != k
    with pytest.raises(OSError):
        _C.content_key(str(tmp_path / "missing.py"))
    # the environment as os.environ has it
    monkeypatch.setenv("CTRITON_TEST_KNOB", "é1")
    assert _C.getenv("CTRITON_TEST_KNOB") == "é1"
    monkeypatch.delenv("CTRITON_TEST_KNOB")
    assert _C.getenv("CTRITON_TEST_KNOB") is None
    with pytest.raises(ValueError):
        _C.getenv("A=B")


def test_fingerprint_follows_lines():
    """The fingerprint the index is looked up by follows the line table of
    the function and of the code nested in it."""
    a = compile("def f(x):\n    y = [i for i in x]\n    return y\n", "f.py", "exec")
    b = compile("def f(x):\n    y = [i for i in x]\n\n    return y\n", "f.py", "exec")
    fa = [c for c in a.co_consts if type(c) is types.CodeType][0]
    fb = [c for c in b.co_consts if type(c) is types.CodeType][0]
    assert J._lines_fingerprint(fa) != J._lines_fingerprint(fb)
    assert J._lines_fingerprint(fa) == J._lines_fingerprint(
        [c for c in compile("def f(x):\n    y = [i for i in x]\n    return y\n", "f.py",
                            "exec").co_consts if type(c) is types.CodeType][0])


def _reference_key(fn):
    """JITFunction.cache_key as its docstring defines it, in Python: the
    reference _C.global_key must agree with."""
    digest, line = fn._source_digest({})
    names, todo = set(), [fn.fn.__code__]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        names.update(c.co_freevars)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    names = sorted(names)
    parts = [digest, str(line), str(fn.noinline)]

    def note(dotted, obj, depth):
        if getattr(obj, "_ctriton_jit", False):
            if obj is not fn:
                parts.append(f"{dotted}:jit:{obj.cache_key}")
        elif type(obj).__name__ == "constexpr" or isinstance(obj, (bool, int, float, str)):
            parts.append(f"{dotted}:={obj!r}")
        elif depth < 2 and isinstance(obj, (type(os), type)):
            d = vars(obj)
            for a in names:
                if a in d:
                    note(f"{dotted}.{a}", d[a], depth + 1)
    g = fn.__globals__
    for n in names:
        if n in g:
            note(n, g[n], 0)
    return _C.sha256("\n".join(parts))


class _Consts:
    WIDTH = 8
    NAME = "w"

    class Inner:
        DEPTH = 2.5


def _closure_kernel(scale):
    import ctriton.language as tl

    @ctriton.jit
    def k(p, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK) * _Consts.WIDTH + _Consts.Inner.DEPTH
        tl.store(p + offs, tl.load(p + offs) * scale + tl.cdiv(BLOCK, 2))
    return k


def test_global_key_matches_its_definition():
    """The walk over globals (in C) gives what the Python definition gives,
    for ctriton's own @jit functions, the test kernels, and a closure that
    reads a captured value and class attributes one and two levels deep;
    and it follows each of those values."""
    import ctriton.language as tl
    import kernels_for_tests as K
    from ctriton.runtime.jit import JITFunction
    fns = [v for m in (tl, tl.standard, tl.random, K) for v in vars(m).values()
           if isinstance(v, JITFunction)]
    k2, k3 = _closure_kernel(2), _closure_kernel(3)
    fns += [k2, k3]
    assert len(fns) > 30
    for f in fns:
        assert f.cache_key == _reference_key(f), f
    assert k2.cache_key != k3.cache_key  # the captured value
    before = k2.cache_key
    for holder, attr in ((_Consts, "WIDTH"), (_Consts.Inner, "DEPTH")):
        old = getattr(holder, attr)
        setattr(holder, attr, old * 2)
        try:
            k2.hash = None
            assert k2.cache_key != before and k2.cache_key == _reference_key(k2)
        finally:
            setattr(holder, attr, old)
    k2.hash = None
    assert k2.cache_key == before
