"""The wheel: built by the in-tree backend (as `pip wheel .` does), it holds
an extension that needs nothing but glibc (LLVM, libstdc++ and zlib linked
in; libzstd, which every Debian and Ubuntu has, is the one exception),
exports only PyInit__C, is tagged for the glibc it needs and, installed into
a fresh virtual environment, runs tutorial 01 on the CPU backend from
another folder.

Slow (an optimised build of the whole extension): runs only with
CTRITON_TEST_WHEEL=1.
"""
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("CTRITON_TEST_WHEEL") != "1",
                                reason="builds the wheel: set CTRITON_TEST_WHEEL=1")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MAX_MB = 48
# What the extension may need at run time.
ALLOWED = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "libzstd.so.1",
           "libpthread.so.0", "libdl.so.2", "librt.so.1"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    t = time.monotonic()
    sys.path.insert(0, os.path.join(REPO, "build_backend"))
    try:
        import ctriton_build
        name = ctriton_build.build_wheel(str(out))
    finally:
        sys.path.remove(os.path.join(REPO, "build_backend"))
    print(f"\nwheel built in {time.monotonic() - t:.0f} s: {name}, "
          f"{os.path.getsize(out / name) / 1e6:.1f} MB")
    return out / name


@pytest.fixture(scope="module")
def extension(wheel, tmp_path_factory):
    d = tmp_path_factory.mktemp("so")
    with zipfile.ZipFile(wheel) as z:
        z.extract("ctriton/_C.abi3.so", d)
    return str(d / "ctriton" / "_C.abi3.so")


def test_name_size_record(wheel):
    m = re.fullmatch(r"ctriton-(.+)-cp311-abi3-manylinux_2_(\d+)_x86_64\.whl", wheel.name)
    assert m, wheel.name
    assert os.path.getsize(wheel) <= MAX_MB * 1e6
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"ctriton-{m.group(1)}.dist-info"
        assert {"ctriton/__init__.py", "ctriton/__main__.py", "ctriton/cli.py",
                "ctriton/_C.abi3.so", "ctriton/language/__init__.py", f"{info}/METADATA",
                f"{info}/WHEEL", f"{info}/RECORD", f"{info}/entry_points.txt"} <= names
        assert not any("__pycache__" in n for n in names)
        wheel_txt = z.read(f"{info}/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_txt
        assert f"Tag: cp311-abi3-manylinux_2_{m.group(2)}_x86_64" in wheel_txt
        assert "Requires-Python: >=3.11" in z.read(f"{info}/METADATA").decode()
        rows = list(csv.reader(io.StringIO(z.read(f"{info}/RECORD").decode())))
        assert {r[0] for r in rows} == names
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + want.decode() and int(size) == len(data), path
        toolkit = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
        if os.path.exists(toolkit):
            with open(toolkit, "rb") as f:
                assert z.read("ctriton/lib/libdevice.10.bc") == f.read()  # unmodified


def test_no_llvm_at_run_time(extension):
    r = subprocess.run(["ldd", extension], capture_output=True, text=True, check=True)
    print(r.stdout)
    needed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    needed = {os.path.basename(n) for n in needed}
    assert needed <= ALLOWED, needed - ALLOWED
    r = subprocess.run(["readelf", "-d", extension], capture_output=True, text=True, check=True)
    assert "RPATH" not in r.stdout and "RUNPATH" not in r.stdout


def test_exports_and_glibc(wheel, extension):
    r = subprocess.run(["nm", "-D", "--defined-only", extension], capture_output=True, text=True,
                       check=True)
    # global symbols (upper-case types); LLVM's, libstdc++'s and ctriton's own stay local
    exported = {ln.split()[-1] for ln in r.stdout.splitlines()
                if len(ln.split()) == 3 and ln.split()[1].isupper()}
    assert exported == {"PyInit__C"}, exported
    r = subprocess.run(["objdump", "-T", extension], capture_output=True, text=True, check=True)
    newest = max(tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+)", r.stdout))
    assert f"manylinux_{newest[0]}_{newest[1]}_x86_64" in wheel.name
    r = subprocess.run(["file", extension], capture_output=True, text=True)
    if r.returncode == 0:
        assert "not stripped" not in r.stdout


def test_fresh_venv_runs_tutorial(wheel, tmp_path):
    venv = tmp_path / "venv"
    # system site packages for numpy (the tutorial's, not ctriton's, need)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    t = time.monotonic()
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
                   check=True)
    print(f"\npip install: {time.monotonic() - t:.1f} s")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(CTRITON_BACKEND="cpu", CTRITON_CACHE_DIR=str(tmp_path / "cache"))

    def run(*args):
        r = subprocess.run([py, *args], cwd=elsewhere, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    where = run("-c", "import ctriton, sys; print(ctriton.__file__)").strip()
    assert where.startswith(str(venv)), where
    t = time.monotonic()
    run("-c", "import ctriton")
    print(f"python -c 'import ctriton': {time.monotonic() - t:.2f} s")
    info = json.loads(run("-m", "ctriton", "info", "--json"))
    assert "linked into the extension" in info["llvm"], info["llvm"]
    assert info["backend"] == "cpu"
    assert os.path.exists(venv / "bin" / "ctriton")  # the console script
    out = run(os.path.join(REPO, "tutorials", "01-vector-add.py"))
    assert "the kernel matches numpy exactly" in out, out
    print(out.splitlines()[0])
    # libdevice from the wheel's own lib/ when the toolkit's is not there
    if not os.path.exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"):
        assert run("-c", "from ctriton import _C; print(_C.libdevice_path())").startswith(
            str(venv))
    shutil.rmtree(venv)
