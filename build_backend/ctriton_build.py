"""The PEP 517 / PEP 660 build backend of ctriton (pyproject.toml names it).

It drives Bazel and needs nothing from the network:

- ``build_wheel`` builds //python:_C_static.abi3.so (LLVM, libstdc++ and
  zlib linked in) with ``-c opt`` and packs one stable-ABI wheel:
  ``cp311-abi3-manylinux_2_XX_x86_64``, 2_XX being the newest glibc symbol
  version the extension asks for. The CUDA toolkit's libdevice.10.bc goes in
  too when the build machine has it (NVIDIA lists it as distributable).
- ``build_editable`` builds the development extension //python:_C.abi3.so
  (shared libLLVM, as scripts/setup.sh does), copies it into python/ctriton/
  and installs a .pth file that points at python/.
- ``build_sdist`` packs the files git tracks.

Bazel runs in this tree with its own output tree per configuration, so a
wheel build leaves the development build (and the bazel-* links) alone.
Set CTRITON_BAZEL to use another bazel binary.
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "python", "ctriton")

WHEEL_TARGET = "//python:_C_static.abi3.so"
DEV_TARGET = "//python:_C.abi3.so"
# -O2 brings GCC's -Wmaybe-uninitialized false positives that the fastbuild
# development build (which -Werror is tuned for) never sees.
WHEEL_FLAGS = [
    "-c", "opt",
    "--incompatible_strict_action_env",
    r"--per_file_copt=.*\.c@-Wno-error=maybe-uninitialized",
]
LIBDEVICE_CANDIDATES = ["nvvm/libdevice/libdevice.10.bc"]
LIBDEVICE_NOTICE = """\
libdevice.10.bc is NVIDIA's "Common Device Math Functions Library" from the
CUDA Toolkit, distributed here unmodified as part of ctriton under the NVIDIA
CUDA Toolkit End User License Agreement, which lists it among the toolkit's
distributable components (Attachment A). Its use is subject to that agreement:
https://docs.nvidia.com/cuda/eula/
"""


# -- metadata --------------------------------------------------------------------

def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version():
    with open(os.path.join(PKG, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in python/ctriton/__init__.py")
    return m.group(1)


def _dist_name():
    return _project()["name"].replace("-", "_")


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {_version()}"]
    if "description" in p:
        lines.append(f"Summary: {p['description']}")
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    for c in p.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    for extra, reqs in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for r in reqs:
            lines.append(f'Requires-Dist: {r}; extra == "{extra}"')
    for r in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {r}")
    body = ""
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme)) as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _entry_points():
    scripts = _project().get("scripts", {})
    if not scripts:
        return None
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


def _dist_info(tag):
    """The .dist-info files other than RECORD: {name: bytes}."""
    files = {
        "METADATA": _metadata().encode(),
        "WHEEL": (f"Wheel-Version: 1.0\nGenerator: ctriton_build\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n").encode(),
    }
    ep = _entry_points()
    if ep:
        files["entry_points.txt"] = ep.encode()
    return files


# -- bazel -----------------------------------------------------------------------

def _env():
    """The caller's environment minus pip's build-isolation entries, which
    would change Bazel's action keys (PATH) from one build to the next."""
    env = dict(os.environ)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and "pip-build-env" not in p]
    env["PATH"] = os.pathsep.join(path) or "/usr/bin:/bin"
    for k in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME"):
        env.pop(k, None)
    # Python headers of the interpreter that builds (any >= 3.11: abi3).
    env.setdefault("PYTHON_BIN_PATH", sys.executable)
    return env


def _bazel(*args):
    bazel = os.environ.get("CTRITON_BAZEL", "bazel")
    cmd = [bazel, *args]
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise RuntimeError(f"ctriton_build: {bazel} not found (Debian: apt-get install "
                           "bazel-bootstrap; see scripts/setup.sh)") from None
    if r.returncode != 0:
        raise RuntimeError(f"ctriton_build: {' '.join(cmd)} failed (exit {r.returncode}); "
                           "its output is above")
    return r.stdout.strip()


def _ephemeral():
    """True for a source tree that is not a checkout (pip's unpacked sdist
    in a temporary folder): its Bazel server and output tree are dropped
    after the build instead of being left behind for a rebuild that never
    comes."""
    return not os.path.exists(os.path.join(ROOT, ".git"))


def _drop_bazel():
    try:
        _bazel("clean", "--expunge")
        _bazel("shutdown")
    except RuntimeError as e:
        print(f"ctriton_build: warning: {e}", file=sys.stderr)


def _build(target, flags):
    t = time.monotonic()
    print(f"ctriton_build: bazel build {' '.join(flags)} {target}", file=sys.stderr, flush=True)
    # --symlink_prefix=/ : no bazel-* links, so bazel-bin keeps pointing at
    # the development build.
    _bazel("build", "--color=no", "--symlink_prefix=/", *flags, target)
    out = _bazel("info", "--color=no", *flags, "bazel-bin")
    so = os.path.join(out, *target.lstrip("/").replace(":", "/").split("/"))
    print(f"ctriton_build: built {so} in {time.monotonic() - t:.0f} s", file=sys.stderr)
    return so


# -- wheel contents --------------------------------------------------------------

def _package_files():
    """(path in the wheel, path on disk) of the Python sources of ctriton."""
    out = []
    for dirpath, dirnames, files in os.walk(PKG):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(files):
            if fn.endswith((".py", ".pyi")) or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                out.append(("ctriton/" + os.path.relpath(full, PKG).replace(os.sep, "/"), full))
    return out


def _glibc_tag(so):
    """manylinux_2_XX_x86_64 for the newest GLIBC_2.XX version so needs."""
    try:
        r = subprocess.run(["objdump", "-T", so], stdout=subprocess.PIPE, text=True, check=True)
        vers = [tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+)", r.stdout)]
    except (OSError, subprocess.CalledProcessError):
        vers = []
    if not vers:  # no objdump: the build machine's own glibc is an upper bound
        import platform
        lib, ver = platform.libc_ver()
        vers = [tuple(map(int, ver.split(".")[:2]))] if lib == "glibc" else [(2, 17)]
    major, minor = max(vers)
    return f"manylinux_{major}_{minor}_x86_64"


def _libdevice():
    """The build machine's libdevice.10.bc, or None."""
    roots = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for r in roots:
        for rel in LIBDEVICE_CANDIDATES:
            if r and os.path.isfile(os.path.join(r, rel)):
                return os.path.join(r, rel)
    return None


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, tag, members):
    """members: [(name in the wheel, bytes, executable?)]; returns the file name."""
    name, ver = _dist_name(), _version()
    info = f"{name}-{ver}.dist-info"
    members = list(members) + [(f"{info}/{k}", v, False) for k, v in _dist_info(tag).items()]
    record = [_record_line(n, d) for n, d, _ in members] + [f"{info}/RECORD,,"]
    members.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), False))
    fname = f"{name}-{ver}-{tag}.whl"
    path = os.path.join(wheel_directory, fname)
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for n, data, exe in members:
            zi = zipfile.ZipInfo(n, stamp)
            zi.external_attr = (0o755 if exe else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(path + ".tmp", path)
    return fname


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# -- PEP 517 hooks ---------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def _prepare_metadata(metadata_directory):
    info = f"{_dist_name()}-{_version()}.dist-info"
    d = os.path.join(metadata_directory, info)
    os.makedirs(d, exist_ok=True)
    for k, v in _dist_info("cp311-abi3-linux_x86_64").items():
        if k != "WHEEL":
            with open(os.path.join(d, k), "wb") as f:
                f.write(v)
    return info


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    so = _build(WHEEL_TARGET, WHEEL_FLAGS)
    tag = "cp311-abi3-" + _glibc_tag(so)
    members = [(n, _read(p), False) for n, p in _package_files()]
    members.append(("ctriton/_C.abi3.so", _read(so), True))
    if _ephemeral():
        _drop_bazel()
    dev = _libdevice()
    if dev:
        members.append(("ctriton/lib/libdevice.10.bc", _read(dev), False))
        members.append(("ctriton/lib/NOTICE.libdevice", LIBDEVICE_NOTICE.encode(), False))
    else:
        print("ctriton_build: no CUDA toolkit libdevice.10.bc on this machine: the wheel "
              "finds one at run time (CUDA toolkit, CTRITON_LIBDEVICE_PATH)", file=sys.stderr)
    fname = _write_wheel(wheel_directory, tag, members)
    size = os.path.getsize(os.path.join(wheel_directory, fname))
    print(f"ctriton_build: {fname}: {size / 1e6:.1f} MB", file=sys.stderr)
    return fname


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    so = _build(DEV_TARGET, [])
    dst = os.path.join(PKG, "_C.abi3.so")
    if not os.path.exists(dst) or _read(dst) != _read(so):
        shutil.copyfile(so, dst + ".tmp")
        os.chmod(dst + ".tmp", 0o644)
        os.replace(dst + ".tmp", dst)
    pth = (os.path.join(ROOT, "python") + "\n").encode()
    members = [(f"__editable__.{_dist_name()}-{_version()}.pth", pth, False)]
    return _write_wheel(wheel_directory, "cp311-abi3-linux_x86_64", members)


def _sdist_files():
    try:
        r = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=True)
        files = [f for f in r.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        skip = {".git", "__pycache__", "gpu_carry", ".pytest_cache"}
        for dirpath, dirnames, fns in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith("bazel-")]
            for fn in fns:
                if not fn.endswith((".so", ".pyc", ".whl")):
                    files.append(os.path.relpath(os.path.join(dirpath, fn), ROOT))
    return sorted(f for f in files if os.path.isfile(os.path.join(ROOT, f)))


def build_sdist(sdist_directory, config_settings=None):
    base = f"{_dist_name()}-{_version()}"
    fname = base + ".tar.gz"
    path = os.path.join(sdist_directory, fname)
    with tarfile.open(path + ".tmp", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for f in _sdist_files():
            tar.add(os.path.join(ROOT, f), arcname=f"{base}/{f}", recursive=False)
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mtime = int(time.time())
        tar.addfile(ti, io.BytesIO(pkg_info))
    os.replace(path + ".tmp", path)
    return fname
