"""`python -m ctriton`: the run, dump, cache and info commands; the ptxas and
libdevice lookup orders (ctriton/_toolkit.py, jit_find_ptxas,
be_nvptx_libdevice_path); the one warning when PTX goes to the driver."""
import importlib
import importlib.machinery
import json
import os
import re
import stat
import subprocess
import sys
import types
import warnings

import pytest

import ctriton
from ctriton import _C, _toolkit, cli
from ctriton.compiler import ASTSource
from ctriton.backends.compiler import GPUTarget
import kernels_for_tests as K

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CPU = GPUTarget("cpu", 0, 1)


def ctriton_cmd(*args, env=None):
    path = [os.path.join(REPO, "python"), HERE] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "ctriton", *args], env=e, capture_output=True,
                          text=True, timeout=300)


def compile_add(block=64):
    return ctriton.compile(ASTSource(K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                    "out_ptr": "*fp32", "n": "i32"},
                                     {"BLOCK": block}), target=CPU)


# -- the command line ------------------------------------------------------------

def test_help_lists_commands():
    r = ctriton_cmd("--help")
    assert r.returncode == 0, r.stderr
    for c in ("run", "dump", "cache", "info"):
        assert c in r.stdout
    r = ctriton_cmd()
    assert r.returncode == 2 and "a command is needed" in r.stderr
    r = ctriton_cmd("frobnicate")
    assert r.returncode == 2 and "invalid choice" in r.stderr


@pytest.mark.parametrize("cmd", ["run", "dump", "cache", "info"])
def test_command_help(cmd):
    r = ctriton_cmd(cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m ctriton {cmd}")


def test_version():
    r = ctriton_cmd("--version")
    assert r.returncode == 0 and r.stdout.strip() == ctriton.__version__


def test_run_without_compat(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "ctriton.compat" else real(n, *a))
    assert cli.main(["run", "prog.py"]) == 2
    assert "no ctriton.compat module" in capsys.readouterr().err


def test_run_passes_argv(monkeypatch):
    seen = []
    fake = types.ModuleType("ctriton.compat")
    fake.__spec__ = importlib.machinery.ModuleSpec("ctriton.compat", None)
    fake.run_main = lambda argv: seen.append(argv) or 7
    monkeypatch.setitem(sys.modules, "ctriton.compat", fake)
    monkeypatch.setattr(ctriton, "compat", fake, raising=False)
    # everything after `run` is the program's, --help included
    assert cli.main(["run", "prog.py", "--help", "-x"]) == 7
    assert cli.main(["run", "-m", "pkg.mod", "a"]) == 7
    assert seen == [["prog.py", "--help", "-x"], ["-m", "pkg.mod", "a"]]


def test_dump_command(capsys):
    rc = cli.main(["dump", K.__file__, "add_kernel", "--signature",
                   "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32", "--constexpr", "BLOCK=64",
                   "--target", "cpu", "--stage", "ttir"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "tt.func public @add_kernel(" in out and "tt.store " in out
    # the old entry point still works
    r = subprocess.run([sys.executable, "-m", "ctriton.dump", "--help"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                           [os.path.join(REPO, "python"), os.environ.get("PYTHONPATH", "")])))
    assert r.returncode == 0 and "usage: python3 -m ctriton.dump" in r.stdout


def test_cache_list_size_clear(cache_dir, capsys):
    K.add_kernel._source, K.add_kernel.hash = None, None  # read again: into the source index
    compile_add(64)
    compile_add(128)
    tuned = cache_dir / "autotune" / "ab" / ("ab" + "0" * 62)
    tuned.mkdir(parents=True)
    (tuned / "k.autotune.json").write_text("{}")
    (cache_dir / "notes.txt").write_text("not ours")  # clear must leave it
    (cache_dir / ("f" * 64)).write_text("not a cache entry either")

    assert cli.main(["cache", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["add_kernel", "add_kernel"]
    assert all(r["target"] == "cpu" and "ttir" in r["stages"] and r["size"] > 0 for r in rows)
    assert cli.main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert out.count("add_kernel") == 2 and f"2 kernels" in out and str(cache_dir) in out

    assert cli.main(["cache", "size"]) == 0
    out = capsys.readouterr().out
    assert "2 kernels" in out and "1 autotuning results" in out
    assert "1 source index entries" in out  # the file of add_kernel

    assert cli.main(["cache", "clear"]) == 0
    assert "removed 4 files" in capsys.readouterr().out
    assert sorted(os.listdir(cache_dir)) == sorted(["notes.txt", "f" * 64])
    assert cli.main(["cache", "size"]) == 0
    assert "0 kernels" in capsys.readouterr().out
    # the cache still works after a clear
    k = compile_add(64)
    assert k.name == "add_kernel" and len(cli.scan_cache(str(cache_dir))[0]) == 1


def test_cache_of_missing_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CTRITON_CACHE_DIR", str(tmp_path / "none"))
    assert cli.main(["cache", "list"]) == 0
    assert "0 kernels" in capsys.readouterr().out
    assert cli.main(["cache", "clear"]) == 0


def test_info(cache_dir):
    r = ctriton_cmd("info", "--json", env={"CTRITON_BACKEND": "cpu"})
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    for k in ("ctriton", "python", "llvm", "backend", "device", "driver", "ptxas", "libdevice",
              "cache"):
        assert k in info
    assert info["ctriton"].startswith(ctriton.__version__)
    assert info["backend"] == "cpu"
    assert info["llvm"].split()[0] == _C.llvm_version()
    assert _C.llvm_version().split(".")[0] == "22"
    assert info["cache"].startswith(str(cache_dir))
    p = _C.ptxas_path()
    assert info["ptxas"].startswith(p) if p else "not found" in info["ptxas"]
    from ctriton import _toolkit
    d = _toolkit.disassembler_path()
    assert info["disassembler"] == d if d else "not found" in info["disassembler"]
    r = ctriton_cmd("info", env={"CTRITON_BACKEND": "cpu"})
    assert r.returncode == 0 and "llvm:" in r.stdout and "ptxas:" in r.stdout


@pytest.mark.gpu
def test_info_on_the_gpu():
    # the device's name and the driver's version, through the extension's
    # loader of the CUDA driver
    import torch
    r = ctriton_cmd("info", "--json", env={"CTRITON_BACKEND": "cuda"})
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["backend"] == "cuda", info
    assert info["device"].startswith(torch.cuda.get_device_name(0)), info
    major, minor = torch.cuda.get_device_capability(0)
    assert f"(sm_{major}{minor}, device 0 of {torch.cuda.device_count()})" in info["device"]
    assert re.fullmatch(r"CUDA \d+\.\d+", info["driver"]), info


def test_info_with_broken_cuda():
    # a CUDA set-up that fails is reported, not a crash
    r = ctriton_cmd("info", env={"CTRITON_BACKEND": "cuda", "CTRITON_LIBCUDA_PATH":
                                 "/nonexistent/libcuda.so"})
    assert r.returncode == 0, r.stderr
    assert "backend:" in r.stdout and "error" in r.stdout


# -- ptxas and libdevice lookup --------------------------------------------------

TOOL_ENV = ("CTRITON_PTXAS_PATH", "TRITON_PTXAS_PATH", "CUDA_HOME", "CUDA_PATH")


def fake_tool(d, rel="ptxas"):
    p = d / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


@pytest.fixture
def pkg_ptxas_restored():
    yield
    _toolkit.register()


def test_ptxas_order(tmp_path, monkeypatch, pkg_ptxas_restored):
    a = fake_tool(tmp_path / "a")
    b = fake_tool(tmp_path / "b")
    home = fake_tool(tmp_path / "home", "bin/ptxas")
    cpath = fake_tool(tmp_path / "cpath", "bin/ptxas")
    pkg = fake_tool(tmp_path / "pkg")
    on_path = fake_tool(tmp_path / "path")
    plain = tmp_path / "plain"
    plain.write_text("not executable")
    monkeypatch.setenv("CTRITON_PTXAS_PATH", a)
    monkeypatch.setenv("TRITON_PTXAS_PATH", b)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "cpath"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'path'}")
    _C.set_pkg_ptxas(pkg)
    assert _C.ptxas_path() == a
    monkeypatch.setenv("CTRITON_PTXAS_PATH", str(plain))  # not executable: skipped
    assert _C.ptxas_path() == b
    monkeypatch.delenv("CTRITON_PTXAS_PATH")
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(tmp_path / "missing"))
    assert _C.ptxas_path() == home
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    monkeypatch.delenv("CUDA_HOME")
    assert _C.ptxas_path() == cpath
    monkeypatch.delenv("CUDA_PATH")
    system = "/usr/local/cuda/bin/ptxas"
    if os.access(system, os.X_OK):
        assert _C.ptxas_path() == system  # the toolkit before the pip package
        return
    assert _C.ptxas_path() == pkg
    _C.set_pkg_ptxas(None)
    assert _C.ptxas_path() == on_path
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert _C.ptxas_path() is None


def test_pkg_ptxas_found_by_import_system(tmp_path, monkeypatch):
    # nvidia-cuda-nvcc's layout: the `nvidia` namespace package, cu13/bin/ptxas
    # (CUDA 13) or cuda_nvcc/bin/ptxas (CUDA 12)
    for layout, rel in (("n13", "nvidia/cu13/bin/ptxas"), ("n12", "nvidia/cuda_nvcc/bin/ptxas")):
        p = fake_tool(tmp_path / layout, rel)
        monkeypatch.setattr(sys, "path", [str(tmp_path / layout)] + sys.path)
        monkeypatch.delitem(sys.modules, "nvidia", raising=False)
        importlib.invalidate_caches()
        assert _toolkit.pkg_ptxas() == p
        monkeypatch.undo()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "empty")] + [
        d for d in sys.path if not os.path.isdir(os.path.join(d or ".", "nvidia"))])
    monkeypatch.delitem(sys.modules, "nvidia", raising=False)
    importlib.invalidate_caches()
    assert _toolkit.pkg_ptxas() is None


def test_pkg_ptxas_is_used_by_compiles(tmp_path, monkeypatch, pkg_ptxas_restored):
    """A GPU compile runs the ptxas the lookup found (here a fake that
    records its arguments and writes a cubin)."""
    log = tmp_path / "log"
    tool = tmp_path / "pkg" / "ptxas"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nwhile [ $# -gt 1 ]; do shift; done\n"
                    "printf '\\177ELFfake' > \"$1\"\necho 'Used 12 registers'\n")
    tool.chmod(0o755)
    for k in TOOL_ENV:
        monkeypatch.delenv(k, raising=False)
    if os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
        monkeypatch.setenv("CTRITON_PTXAS_PATH", str(tool))  # the toolkit's would win
    else:
        _C.set_pkg_ptxas(str(tool))
    r = _C.ptxas(".version 8.0\n.target sm_90\n", 90)
    assert r is not None and r[0] == b"\x7fELFfake" and r[1] == 12
    assert "-arch sm_90a" in log.read_text()


# -- the disassembler behind asm["sass"] ------------------------------------------

def _script(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_sass_puts_nvdisasm_on_cuobjdumps_path(tmp_path, monkeypatch):
    # cuobjdump -sass runs nvdisasm, which CUDA 13's pip wheels (and some
    # toolkits) keep elsewhere: the nvdisasm found goes on cuobjdump's PATH
    cuo = _script(tmp_path / "a" / "cuobjdump",
                  'command -v nvdisasm >/dev/null || { echo "no nvdisasm" >&2; exit 1; }\necho "sass of $2"\n')
    nvd = _script(tmp_path / "b" / "nvdisasm", 'echo "nvdisasm of $1"\n')
    monkeypatch.setenv("CTRITON_CUOBJDUMP_PATH", cuo)
    monkeypatch.setenv("CTRITON_NVDISASM_PATH", nvd)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert _toolkit.sass(b"\0").startswith("sass of ")


def test_sass_falls_back_to_nvdisasm(tmp_path, monkeypatch):
    cuo = _script(tmp_path / "a" / "cuobjdump", 'echo "cuobjdump fatal" >&2\nexit 1\n')
    nvd = _script(tmp_path / "b" / "nvdisasm", 'echo "nvdisasm of $1"\n')
    monkeypatch.setenv("CTRITON_CUOBJDUMP_PATH", cuo)
    monkeypatch.setenv("CTRITON_NVDISASM_PATH", nvd)
    assert _toolkit.sass(b"\0").startswith("nvdisasm of ")
    # with no nvdisasm anywhere, cuobjdump's own error is reported
    monkeypatch.setattr(_toolkit, "_find_disassembler",
                        lambda only=None: None if only == "nvdisasm" else ("cuobjdump", cuo))
    with pytest.raises(RuntimeError, match="cuobjdump fatal"):
        _toolkit.sass(b"\0")


def test_libdevice_order(tmp_path, monkeypatch):
    a = tmp_path / "a.bc"
    b = tmp_path / "b.bc"
    a.write_bytes(b"BC")
    b.write_bytes(b"BC")
    home = tmp_path / "home" / "nvvm" / "libdevice" / "libdevice.10.bc"
    home.parent.mkdir(parents=True)
    home.write_bytes(b"BC")
    monkeypatch.setenv("CTRITON_LIBDEVICE_PATH", str(a))
    monkeypatch.setenv("TRITON_LIBDEVICE_PATH", str(b))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    assert _C.libdevice_path() == str(a)
    monkeypatch.setenv("CTRITON_LIBDEVICE_PATH", str(tmp_path / "missing.bc"))
    assert _C.libdevice_path() == str(b)
    monkeypatch.delenv("TRITON_LIBDEVICE_PATH")
    assert _C.libdevice_path() == str(home)


def test_libdevice_missing_is_a_clear_error(tmp_path, monkeypatch):
    if os.path.exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc") or os.path.exists(
            os.path.join(os.path.dirname(_C.__file__), "lib", "libdevice.10.bc")):
        pytest.skip("a libdevice is always found here")
    for k in ("CTRITON_LIBDEVICE_PATH", "TRITON_LIBDEVICE_PATH", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(k, raising=False)
    assert _C.libdevice_path() is None


def test_no_ptxas_warns_once(monkeypatch):
    monkeypatch.setattr(_toolkit, "_warned", False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _toolkit.warn_no_ptxas()
        _toolkit.warn_no_ptxas()
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 1 and "ptxas not found" in msgs[0] and "CUDA driver" in msgs[0]


# -- the extension's identity in cache keys --------------------------------------

def test_extension_id_is_the_build_id(tmp_path):
    from ctriton.compiler.compiler import extension_id
    got = extension_id(_C.__file__)
    try:
        r = subprocess.run(["readelf", "-n", _C.__file__], capture_output=True, text=True)
    except OSError:
        pytest.skip("no readelf")
    want = [ln.split()[-1] for ln in r.stdout.splitlines() if "Build ID:" in ln]
    assert want and got == "build-id:" + want[0]
    other = tmp_path / "x.so"
    other.write_bytes(b"not an ELF file")
    assert extension_id(str(other)) == _C.sha256(b"not an ELF file")
