"""ctriton standing in for triton: use_as_triton(), run_main, Triton's
module layout and names (knobs, runtime.jit, dtypes, tools, testing,
profiler). The aliasing tests run in a child interpreter so that `triton`
stays unresolved in this one."""
import os
import subprocess
import sys
import textwrap

import pytest

import ctriton
import ctriton.language as tl
from ctriton import knobs

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ctriton.__file__)))


def _child(code, *args, cwd=None, env=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHON_DIR
    e["CTRITON_BACKEND"] = "cpu"
    e.update(env or {})
    return subprocess.run([sys.executable, *args] if args else [sys.executable, "-c", code],
                          capture_output=True, text=True, cwd=cwd, env=e, timeout=300)


def test_use_as_triton_aliases_modules():
    r = _child(textwrap.dedent("""
        import ctriton
        ctriton.use_as_triton()
        import triton, triton.language as tl
        from triton.runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict
        from triton.tools.tensor_descriptor import TensorDescriptor
        from triton.compiler import ASTSource, CompiledKernel
        from triton.compiler.errors import CompilationError
        from triton.runtime.cache import FileCacheManager, get_cache_manager
        from triton.language.extra import libdevice
        from triton import knobs
        import triton.testing, triton.profiler
        import ctriton.language, ctriton.runtime.jit, ctriton.knobs
        assert tl is ctriton.language
        assert triton.runtime.jit is ctriton.runtime.jit
        assert triton.jit is ctriton.jit and triton.knobs is ctriton.knobs
        assert triton.language.core is ctriton.language.core
        assert triton.__version__ == "3.6.0", triton.__version__
        assert ctriton.__version__ != "3.6.0"
        assert ctriton.language.__spec__.name == "ctriton.language"
        assert triton.testing.do_bench_cudagraph and triton.profiler.scope
        triton.some_new_attr = 5          # writes through to ctriton
        assert ctriton.some_new_attr == 5
        try:
            import triton.no_such_module
        except ModuleNotFoundError as e:
            assert "triton.no_such_module" in str(e)
        else:
            raise AssertionError("imported a missing module")
        print("ok")
    """))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_use_as_triton_refuses_a_real_triton(tmp_path):
    fake = tmp_path / "triton"
    fake.mkdir()
    (fake / "__init__.py").write_text("real = True\n")
    r = _child("import triton, ctriton\nctriton.use_as_triton()\n",
               env={"PYTHONPATH": f"{PYTHON_DIR}{os.pathsep}{tmp_path}"})
    assert r.returncode != 0
    assert "already imported" in r.stderr


SCRIPT = """
import sys
import numpy as np
import triton
import triton.language as tl

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

n = int(sys.argv[1])
x = np.arange(n, dtype=np.float32)
y = np.full(n, 2.0, dtype=np.float32)
out = np.zeros(n, dtype=np.float32)
add[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
assert np.array_equal(out, x + 2), out
print("sum", int(out.sum()), triton.__version__, sys.argv[1:], __name__)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def test_run_script(tmp_path):
    p = tmp_path / "prog.py"
    p.write_text(SCRIPT)
    r = _child(None, "-m", "ctriton.run", str(p), "100", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"sum {sum(range(100)) + 200} 3.6.0 ['100'] __main__"
    r = _child(None, "-m", "ctriton.run", str(p), "10", "3", cwd=tmp_path)
    assert r.returncode == 3, r.stderr


def test_run_module(tmp_path):
    (tmp_path / "progmod.py").write_text(SCRIPT)
    r = _child(None, "-m", "ctriton.run", "-m", "progmod", "7", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"sum {sum(range(7)) + 14} 3.6.0 ['7'] __main__"


def test_run_main_errors(tmp_path, capsys):
    from ctriton.compat import run_main
    assert run_main([]) == 2
    assert run_main([str(tmp_path / "missing.py")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert run_main(["-m"]) == 2
    assert run_main(["--bogus"]) == 2


def test_run_script_exception_propagates(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("raise ValueError('boom')\n")
    r = _child(None, "-m", "ctriton.run", str(p), cwd=tmp_path)
    assert r.returncode == 1
    assert "ValueError: boom" in r.stderr


# -- dtypes -----------------------------------------------------------------

def test_dtype_from_name_is_the_singleton():
    assert tl.dtype("fp32") is tl.float32
    assert tl.dtype("int1") is tl.int1
    assert tl.dtype(tl.constexpr("bf16")) is tl.bfloat16
    with pytest.raises(ValueError, match="unknown dtype name"):
        tl.dtype("fp33")


@pytest.mark.parametrize("name,mant,bias", [
    ("fp8e4b15", 3, 15), ("fp8e4nv", 3, 7), ("fp8e4b8", 3, 8), ("fp8e5", 2, 15),
    ("fp8e5b16", 2, 16), ("fp16", 10, 15), ("bf16", 7, 127), ("fp32", 23, 127), ("fp64", 52, 1023)])
def test_fp_dtype_attributes(name, mant, bias):
    d = tl.dtype(name)
    assert (d.fp_mantissa_width, d.exponent_bias) == (mant, bias)
    assert d.is_floating() and not d.is_int()
    assert d.is_standard_floating() == (name in tl.dtype.STANDARD_FP_TYPES)
    assert d.is_fp8() == name.startswith("fp8")
    assert getattr(d, f"is_{name}")()
    assert d.itemsize == d.primitive_bitwidth // 8
    assert d.kind() == tl.dtype.KIND.FLOATING


def test_int_dtype_attributes():
    assert tl.int8.get_int_max_value() == 127 and tl.int8.get_int_min_value() == -128
    assert tl.uint16.get_int_max_value() == 65535 and tl.uint16.get_int_min_value() == 0
    assert tl.int64.int_signedness == tl.dtype.SIGNEDNESS.SIGNED
    assert tl.uint32.int_signedness == tl.dtype.SIGNEDNESS.UNSIGNED
    assert tl.int1.is_bool() and tl.int1.kind() == tl.dtype.KIND.BOOLEAN
    assert tl.int32.kind() == tl.dtype.KIND.INTEGRAL
    assert tl.uint8.is_uint8() and tl.int16.is_int16()
    assert repr(tl.float16) == "triton.language.float16" and str(tl.bfloat16) == "bf16"
    assert tl.float32.codegen_name() == "float32" and tl.int32.mangle() == "i32"
    with pytest.raises(TypeError):
        tl.float32.get_int_max_value()


def test_str_to_ty():
    assert tl.str_to_ty("fp16", None) is tl.float16
    assert tl.str_to_ty("u1", None) is tl.int1
    p = tl.str_to_ty("*kfp32", None)
    assert p.is_ptr() and p.is_const() and p.element_ty is tl.float32
    assert p == tl.pointer_type(tl.float32, const=True) != tl.pointer_type(tl.float32)
    t = tl.str_to_ty(("i32", "*fp16"), None)
    assert isinstance(t, tl.tuple_type) and t.types[0] is tl.int32 and t.types[1].is_ptr()
    assert tl.str_to_ty("constexpr", 5) == tl.constexpr_type(5)
    with pytest.raises(TypeError, match="unknown type string"):
        tl.str_to_ty("fp7", None)


def test_type_canonicalisation_dict():
    from ctriton.runtime.jit import type_canonicalisation_dict as d
    assert d["float32"] == "fp32" and d["bool"] == "u1" and d["uint16"] == "u16"
    assert d["float8_e4m3fn"] == "fp8e4nv" and d["int"] == "i32" and d["fp16"] == "fp16"
    # every canonical value maps to itself, and to a type str_to_ty knows
    for v in set(d.values()) - {"void"}:
        assert d[v] == v
        assert tl.str_to_ty(v, None).name


def test_math_has_libdevice_names():
    assert tl.math.tanh.__ctriton_extern__ == "tanh"
    assert tl.math.exp is tl.exp
    assert tl.math.log1p.__ctriton_extern__ == "log1p"


# -- runtime.jit ------------------------------------------------------------

def test_unsafe_update_src_recompiles():
    import numpy as np

    @ctriton.jit
    def k(x_ptr):
        tl.store(x_ptr + tl.arange(0, 8), tl.full((8,), 1, tl.int32))

    x = np.zeros(8, dtype=np.int32)
    k[(1,)](x)
    assert (x == 1).all()
    with pytest.raises(AttributeError, match="_unsafe_update_src"):
        k.src = "x"
    k._unsafe_update_src(k.src.replace("1, tl.int32", "7, tl.int32"))
    assert "7, tl.int32" in k.src
    k[(1,)](x)
    assert (x == 7).all()


def test_runtime_jit_is_a_module():
    import ctriton.runtime
    assert ctriton.runtime.jit.__name__ == "ctriton.runtime.jit"
    assert ctriton.runtime.jit.TensorWrapper is ctriton.TensorWrapper


# -- knobs ------------------------------------------------------------------

def test_knobs_env_and_scope(monkeypatch):
    monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)
    monkeypatch.delenv("CTRITON_ALWAYS_COMPILE", raising=False)
    assert knobs.compilation.always_compile is False
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    assert knobs.compilation.always_compile is True
    monkeypatch.setenv("CTRITON_ALWAYS_COMPILE", "0")  # ctriton's name wins
    assert knobs.compilation.always_compile is False
    monkeypatch.delenv("CTRITON_ALWAYS_COMPILE")
    with knobs.compilation.scope():
        knobs.compilation.always_compile = False
        assert os.environ["TRITON_ALWAYS_COMPILE"] == "0"
        assert os.environ["CTRITON_ALWAYS_COMPILE"] == "0"
        assert knobs.compilation.always_compile is False
    assert os.environ["TRITON_ALWAYS_COMPILE"] == "1"
    assert "CTRITON_ALWAYS_COMPILE" not in os.environ
    assert knobs.compilation.always_compile is True


def test_knobs_propagate_env_off(monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    monkeypatch.setattr(knobs, "propagate_env", False)
    with knobs.language.scope():
        knobs.language.default_fp_fusion = False
        assert knobs.language.default_fp_fusion is False
        assert "TRITON_DEFAULT_FP_FUSION" not in os.environ
        knobs.language.default_fp_fusion = knobs.env  # back to the environment
        assert knobs.language.default_fp_fusion is True


def test_knobs_groups_copy_reset():
    groups = [v for v in vars(knobs).values() if isinstance(v, knobs.base_knobs)]
    assert {"cache", "compilation", "runtime", "language", "nvidia", "autotuning"} <= \
        {k for k, v in vars(knobs).items() if isinstance(v, knobs.base_knobs)}
    for g in groups:
        c = g.copy().reset()
        assert set(c.knob_descriptors) == set(g.knob_descriptors)
        if g is not knobs.nvidia:  # its tools may be missing here
            assert set(c.knobs) == set(g.knob_descriptors)
    with knobs.runtime.scope():
        knobs.runtime.override_arch = "sm90"
        c = knobs.runtime.copy()
        assert c.override_arch == "sm90"
        assert c.reset().override_arch in (None, os.environ.get("TRITON_OVERRIDE_ARCH"))


def test_knobs_bad_values(monkeypatch):
    monkeypatch.setenv("TRITON_REDIS_PORT", "abc")
    with pytest.raises(RuntimeError, match="expected int"):
        knobs.redis.port
    monkeypatch.setenv("TRITON_CACHE_MANAGER", "nocolon")
    with pytest.raises(RuntimeError, match="MODULE:CLASS"):
        knobs.cache.manager_class


def test_knobs_cache_dir_drives_compile(tmp_path, monkeypatch):
    import numpy as np
    monkeypatch.delenv("CTRITON_CACHE_DIR", raising=False)
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)

        @ctriton.jit
        def k2(x_ptr):
            tl.store(x_ptr, 3)

        x = np.zeros(1, dtype=np.int32)
        k2[(1,)](x)
        assert x[0] == 3
    assert any(tmp_path.iterdir())


def test_ptxas_knob():
    if not os.path.exists("/usr/local/cuda/bin/ptxas") and not __import__("shutil").which("ptxas"):
        pytest.skip("no ptxas")
    tool = knobs.nvidia.ptxas
    assert os.path.exists(tool.path) and tool.version.count(".") == 1


# -- tools, testing, cache, profiler -----------------------------------------

def test_tensor_descriptor_host_checks():
    np = pytest.importorskip("numpy")
    from ctriton.tools.tensor_descriptor import TensorDescriptor

    class T:  # a minimal tensor
        def __init__(self, a):
            self.a, self.shape, self.dtype = a, a.shape, a.dtype

        def data_ptr(self):
            return self.a.__array_interface__["data"][0]

        def stride(self):
            return tuple(s // self.a.itemsize for s in self.a.strides)

    buf = np.zeros(64 * 64 + 16, dtype=np.float32)
    off = (-buf.__array_interface__["data"][0] % 16) // 4
    a = buf[off:off + 64 * 64].reshape(64, 64)
    d = TensorDescriptor.from_tensor(T(a), [16, 32])
    assert d.shape == [64, 64] and d.strides == [64, 1] and d.block_shape == [16, 32]
    with pytest.raises(ValueError, match="power of 2"):
        TensorDescriptor.from_tensor(T(a), [16, 24])
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor(T(a), [64, 64], [64, 2], [16, 16])


def test_do_bench_cudagraph_cpu():
    from ctriton.testing import do_bench_cudagraph
    calls = []
    t = do_bench_cudagraph(lambda: calls.append(1), rep=5)
    assert t >= 0 and len(calls) > 3


def test_file_cache_manager(tmp_path):
    from ctriton.runtime.cache import FileCacheManager, get_cache_manager
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)
        m = get_cache_manager("ab" * 32)
        assert isinstance(m, FileCacheManager)
        p = m.put(b"\x00\x01", "k.bin")
        q = m.put("text", "k.txt")
        assert open(p, "rb").read() == b"\x00\x01" and open(q).read() == "text"
        m.put_group("k.json", {"k.bin": p, "k.txt": q})
        assert m.get_group("k.json") == {"k.bin": p, "k.txt": q}
        assert m.get_file("missing") is None


def test_profiler_scopes(tmp_path, monkeypatch, capsys):
    import ctriton.profiler as proton
    from ctriton.profiler import viewer
    monkeypatch.chdir(tmp_path)
    proton.start("prof")
    with proton.scope("a", {"bytes": 1000, "flops16": 2000}):
        sum(range(1000))
    proton.deactivate()
    with proton.scope("b"):
        pass
    proton.activate()
    with proton.scope("a", {"bytes": 1000}):
        pass
    path = proton.finalize()
    assert path == "prof.hatchet"
    tree, metrics = viewer.parse(["time/ms", "gbyte/s"], path)
    names = [r["name"] for r in tree]
    assert names == ["ROOT", "a"]
    assert tree[1]["time/ms"] > 0 and tree[1]["gbyte/s"] > 0
    viewer.print_tree(tree, metrics)
    assert " a" in capsys.readouterr().out
    with pytest.raises(RuntimeError):
        proton.start("x")
        proton.start("y")
    proton.finalize()


# -- closures and Triton's error wording ----------------------------------------

def _make_closure_kernel(lang, value):
    @ctriton.jit
    def k(o):
        lang.store(o + lang.arange(0, 4), lang.full((4,), value, lang.int32))
    return k


def test_closure_variables_resolve_like_globals():
    np = pytest.importorskip("numpy")
    k3 = _make_closure_kernel(tl, tl.constexpr(3))
    k5 = _make_closure_kernel(tl, tl.constexpr(5))
    o = np.zeros(4, np.int32)
    k3[(1,)](o)
    assert (o == 3).all()
    k5[(1,)](o)
    assert (o == 5).all()
    assert k3.cache_key != k5.cache_key  # the captured value is part of the key


def test_closure_non_constexpr_is_rejected_like_a_global():
    np = pytest.importorskip("numpy")
    n = 4

    @ctriton.jit
    def k(o):
        tl.store(o, n)

    with pytest.raises(ctriton.CompilationError, match="cannot access global variable n"):
        k[(1,)](np.zeros(4, np.int32))


def _raises(kernel, *args):
    with pytest.raises(ctriton.CompilationError) as e:
        kernel[(1,)](*args)
    return e.value


def test_error_wording_and_cause():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def div_mixed(x, y, o):
        tl.store(o, tl.load(x) / tl.load(y))

    @ctriton.jit
    def float_and(x, y, o):
        tl.store(o, tl.load(x) & tl.load(y))

    @ctriton.jit
    def bad_pid(o):
        tl.store(o, tl.program_id(20))

    @ctriton.jit
    def bad_axis(o):
        t = tl.expand_dims(tl.arange(0, 4), -3)

    @ctriton.jit
    def dup_axes(o):
        t = tl.expand_dims(tl.arange(0, 4), (0, -3))

    i = np.ones(4, np.int32)
    f = np.ones(4, np.float32)
    e = _raises(div_mixed, i, ctriton.reinterpret(i, tl.uint32), i)
    assert "Cannot use /, //, or % with i32 and u32 because they have different signedness" in str(e)
    e = _raises(float_and, f, i, i)
    assert "invalid operands of type f32 and i32" in str(e)
    e = _raises(bad_pid, i)
    assert "program_id axis must be 0, 1, or 2 but got 20" in str(e.__cause__)
    assert str(e.__cause__) == e.error_message
    e = _raises(bad_axis, i)
    assert "invalid axis -3" in str(e.__cause__)
    e = _raises(dup_axes, i)
    assert "duplicate axes, normalized axes = [0, 0]" in str(e.__cause__)
    assert e.lineno and "^" in str(e)  # ctriton's location and caret stay


def test_scalar_out_of_range_and_dtype_methods():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def overflow(o):
        big: tl.constexpr = 0xFFFFFFFFFFFFFF
        x = tl.full((), 32, dtype=tl.int32)
        tl.store(o, x + big)

    @ctriton.jit
    def big_u64(o):
        y = tl.full((4,), 32, dtype=tl.uint64)
        tl.store(o + tl.arange(0, 4), (y + 0xFFFFFFFFFFFFFFF0).to(tl.int32))

    @ctriton.jit
    def methods(o, x):
        if x.dtype.element_ty.is_floating():
            tl.store(o, 1)
        else:
            tl.store(o, 2)

    i = np.zeros(4, np.int32)
    e = _raises(overflow, i)
    assert "Scalar 72057594037927935 is out of range for type i32" in str(e)
    big_u64[(1,)](i)
    assert (i == 16).all()
    methods[(1,)](i, np.zeros(1, np.float32))
    assert i[0] == 1
    methods[(1,)](i, np.zeros(1, np.int8))
    assert i[0] == 2


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_randint_64bit_seed_and_offsets(dtype):
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(o, seed, N: tl.constexpr):
        offs = tl.arange(0, N).to(o.dtype.element_ty)
        tl.store(o + offs, tl.randint(seed, offs))

    a = np.zeros(16, getattr(np, dtype))
    k[(1,)](a, 0x0000000FCAFEB0BA, N=16)
    b = np.zeros(16, getattr(np, dtype))
    k[(1,)](b, 0x0000000ECAFEB0BA, N=16)  # the high half of the seed matters
    assert (a != b).any()
    # 64-bit offsets below 2**32 give the 32-bit stream
    if dtype == "int64":
        c = np.zeros(16, np.int32)
        k[(1,)](c, 0x0000000FCAFEB0BA, N=16)
        assert (a.astype(np.uint32) == c.astype(np.uint32)).all()


@pytest.mark.parametrize("descending", [True, False])
def test_topk_descending(descending):
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, D: tl.constexpr):
        m = tl.arange(0, M)[:, None]
        x = tl.load(x_ptr + m * N + tl.arange(0, N)[None, :])
        tl.store(z_ptr + m * K + tl.arange(0, K)[None, :], tl.topk(x, K, descending=D))

    rs = np.random.RandomState(0)
    x = rs.permutation(4 * 64).astype(np.int32).reshape(4, 64)
    z = np.zeros((4, 8), np.int32)
    k[(1,)](x, z, 4, 64, 8, descending)
    ref = -np.sort(-x, axis=1)[:, :8] if descending else np.sort(x, axis=1)[:, :8]
    assert (z == ref).all()


def test_tuple_of_tensors_in_kernel():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(o):
        t = tl.tuple([tl.full((4,), 1, tl.int32), tl.full((4,), 2, tl.int32)])
        u = tuple(t)
        tl.store(o + tl.arange(0, 4), u[0] + t[1])
        tl.static_assert(tl.tuple((1, 2)) == (1, 2))

    o = np.zeros(4, np.int32)
    k[(1,)](o)
    assert (o == 3).all()


def test_number_dtype_and_cast_method():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(o, N: tl.constexpr):
        value = 1
        big = 3000000000
        x = tl.full([N], value=value, dtype=value.dtype)
        tl.static_assert(value.dtype == tl.int32 and big.dtype == tl.uint32)
        tl.static_assert((1.5).dtype == tl.float32)
        tl.store(o + tl.arange(0, N), x.cast(tl.float32) * 2)

    o = np.zeros(8, np.float32)
    k[(1,)](o, 8)
    assert (o == 2).all()


@pytest.mark.parametrize("dtype,op", [("int8", "add"), ("int16", "add"), ("uint16", "max"),
                                      ("float16", "max"), ("float16", "xchg")])
def test_atomic_unsupported_types(dtype, op):
    np = pytest.importorskip("numpy")
    fn = getattr(tl, f"atomic_{op}")

    @ctriton.jit
    def k(o):
        fn(o, tl.load(o))

    with pytest.raises(ctriton.CompilationError, match=f"atomic_{op} does not support"):
        k[(1,)](np.zeros(4, getattr(np, dtype)))


def test_signed_lhs_shifts_arithmetically():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(X, Y, Z):
        o = tl.arange(0, 8)
        tl.store(Z + o, tl.load(X + o) >> tl.load(Y + o))

    x = np.array([-13, 5, -128, 127, -1, 64, -64, 3], np.int8)
    y = np.array([6, 1, 7, 2, 3, 0, 6, 1], np.uint8)
    z = np.zeros(8, np.uint8)
    k[(1,)](x, y, z)  # int8 >> uint8 computes in uint8, shifting like int8
    assert (z == (x >> y.astype(np.int8)).astype(np.uint8)).all()
    zu = np.zeros(8, np.uint8)
    k[(1,)](x.view(np.uint8), y, zu)  # an unsigned lhs shifts logically
    assert (zu == (x.view(np.uint8) >> y)).all()


def test_bf16_cumsum_runs_in_fp32():
    torch = pytest.importorskip("torch")

    @ctriton.jit
    def k(X, Z, N: tl.constexpr):
        o = tl.arange(0, N)
        z = tl.cumsum(tl.load(X + o), axis=0)
        tl.static_assert(z.dtype == tl.float32)
        tl.store(Z + o, z)

    x = torch.randn(64).to(torch.bfloat16)
    z = torch.zeros(64)
    k[(1,)](x, z, 64)
    assert torch.allclose(z, torch.cumsum(x.float(), 0), rtol=1e-5, atol=1e-5)


def test_jit_cache_hooks_and_fp_fusion_knob(monkeypatch):
    np = pytest.importorskip("numpy")
    seen = []

    def pre(**kw):
        seen.append(("pre", kw["fn"].name, kw["compile"]["enable_fp_fusion"], kw["already_compiled"]))

    def post(**kw):
        seen.append(("post", kw["fn"].name, kw["compile"]["enable_fp_fusion"], kw["already_compiled"]))

    @ctriton.jit
    def hooked(o):
        tl.store(o, 1.5)

    with knobs.runtime.scope(), knobs.language.scope():
        knobs.runtime.jit_cache_hook = pre
        knobs.runtime.jit_post_compile_hook = post
        knobs.language.default_fp_fusion = False
        o = np.zeros(1, np.float32)
        hooked[(1,)](o)
        hooked[(1,)](o)  # cached in memory: no second compile
    assert o[0] == 1.5
    assert seen == [("pre", "hooked", False, False), ("post", "hooked", False, True)]
    assert knobs.runtime.jit_cache_hook is None


def test_slice_written_with_none():
    np = pytest.importorskip("numpy")

    @ctriton.jit
    def k(o):
        data = tl.arange(0, 8)
        t = data[None, None:]
        tl.static_assert(t.shape == (1, 8))
        tl.store(o + tl.arange(0, 8)[None, :], t)

    o = np.zeros(8, np.int32)
    k[(1,)](o)
    assert (o == np.arange(8)).all()


def test_find_spec_of_triton_alias():
    """importlib.util.find_spec("triton") works on the alias (torch calls it
    when CUDA initialises; a module whose __spec__ is None makes it raise)."""
    import importlib.util
    import subprocess
    import sys
    code = ("import ctriton; ctriton.use_as_triton(); import triton, importlib.util; "
            "s = importlib.util.find_spec('triton'); assert s is not None and s.name == 'triton'; "
            "assert importlib.util.find_spec('triton.language') is not None; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_knob_mirror_dropped_when_triton_variable_is_removed(monkeypatch):
    """A knob set in Python writes TRITON_X and its CTRITON_X mirror; a
    restorer that knows only TRITON_X (Triton's fresh_knobs fixture,
    monkeypatch) removes that one, and the stale mirror must not keep the
    value alive (TRITON_OVERRIDE_ARCH leaked into later tests this way)."""
    import os
    from ctriton import knobs
    monkeypatch.delenv("TRITON_OVERRIDE_ARCH", raising=False)
    monkeypatch.delenv("CTRITON_OVERRIDE_ARCH", raising=False)
    fresh = knobs.runtime.copy().reset()
    fresh.override_arch = "sm80"
    assert os.environ["TRITON_OVERRIDE_ARCH"] == "sm80" and os.environ["CTRITON_OVERRIDE_ARCH"] == "sm80"
    del os.environ["TRITON_OVERRIDE_ARCH"]
    assert knobs.runtime.override_arch is None
    assert "CTRITON_OVERRIDE_ARCH" not in os.environ
    monkeypatch.setenv("CTRITON_OVERRIDE_ARCH", "sm90")  # set by the user: kept
    assert knobs.runtime.override_arch == "sm90"
