"""ctriton's command line: ``python -m ctriton COMMAND`` (or ``ctriton``).

    run SCRIPT [ARGS...]     run an unmodified Triton program on ctriton
    run -m MODULE | -c CODE  (the same, for a module or a string)
    dump FILE KERNEL ...     print one compile stage of a kernel (no GPU needed)
    cache list|size|clear    the on-disk kernel cache ($CTRITON_CACHE_DIR)
    info                     version, backend, device, driver, ptxas, LLVM, cache

``COMMAND --help`` describes each.
"""
import argparse
import importlib.util
import json
import marshal
import os
import re
import subprocess
import sys
import time

PROG = "python -m ctriton"

# The on-disk cache's format (jit/cache.c): a file per kernel named by its
# key, a text header of blob names and lengths, then the blobs.
_CACHE_MAGIC = b"ctriton-cache 4\n"  # jit/cache.c
_KEY = re.compile(r"^[0-9a-f]{64}$")
_TMP = re.compile(r"^tmp\.[0-9a-f]{64}\.\d+\.\d+$")
_INDEX_KEY = re.compile(r"^[0-9a-f]{32}-[0-9a-f]+$")  # jit_content_key


# -- run, dump -------------------------------------------------------------------

_RUN_HELP = f"""\
usage: {PROG} run SCRIPT [ARGS...]
       {PROG} run -m MODULE [ARGS...]
       {PROG} run -c CODE [ARGS...]

Runs a Python program written for Triton on ctriton: `import triton` (and
every triton.* module) resolves to ctriton's before the program starts.
The program gets ARGS as its sys.argv[1:], as with python itself.
"""


def cmd_run(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(_RUN_HELP, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if importlib.util.find_spec("ctriton.compat") is None:
        print(f"{PROG} run: this ctriton has no ctriton.compat module (the Triton "
              "compatibility layer), so it cannot run Triton programs", file=sys.stderr)
        return 2
    from . import compat
    rc = compat.run_main(list(argv))
    return rc if isinstance(rc, int) else 0


def cmd_dump(argv):
    from . import dump
    return dump.main(list(argv), prog=f"{PROG} dump")


# -- cache -----------------------------------------------------------------------

def cache_root():
    from . import _C
    return _C.cache_root()


def read_entry(path):
    """The header of a cache entry: {"blobs": {name: length}, "meta": dict or
    None, "size": bytes, "mtime": s}; None when the file is not an entry."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            head = f.read(8192)
            if not head.startswith(_CACHE_MAGIC):
                return None
            blobs, off = {}, len(_CACHE_MAGIC)
            while True:
                nl = head.find(b"\n", off)
                if nl < 0:
                    return None
                line = head[off:nl].decode("ascii", "replace")
                off = nl + 1
                if line.startswith("end "):
                    break
                if line.startswith("key "):
                    continue
                name, length, _check = line.split(" ")
                blobs[name] = int(length)
            meta, pos = None, off
            for name, length in blobs.items():
                if name == "meta":
                    f.seek(pos)
                    try:
                        meta = marshal.loads(f.read(length))
                    except (ValueError, EOFError, TypeError):
                        meta = None
                    if not isinstance(meta, dict):
                        meta = None
                pos += length
    except (OSError, ValueError):
        return None
    return {"blobs": blobs, "meta": meta, "size": st.st_size, "mtime": st.st_mtime}


def scan_cache(root):
    """(kernels, autotune files, stray temporaries, source index entries) of
    the cache at root: kernels as (key, entry), the others as (path, size).
    The source index (source-index/, runtime/jit.py) holds what a new
    process would otherwise read from the kernels' files."""
    kernels, tuned, temps, index = [], [], [], []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return kernels, tuned, temps, index
    for n in names:
        p = os.path.join(root, n)
        if _KEY.match(n) and os.path.isfile(p):
            e = read_entry(p)
            if e is not None:
                kernels.append((n, e))
        elif _TMP.match(n) and os.path.isfile(p):
            temps.append((p, os.path.getsize(p)))
    for dirpath, _, files in os.walk(os.path.join(root, "autotune")):
        for fn in files:
            if fn.endswith(".autotune.json") or ".autotune.json.tmp." in fn:
                p = os.path.join(dirpath, fn)
                try:
                    tuned.append((p, os.path.getsize(p)))
                except OSError:
                    pass
    idir = os.path.join(root, "source-index")
    try:
        inames = sorted(os.listdir(idir))
    except OSError:
        inames = []
    for n in inames:
        p = os.path.join(idir, n)
        if (n.startswith("tmp.") or _INDEX_KEY.match(n)) and os.path.isfile(p):
            try:
                index.append((p, os.path.getsize(p)))
            except OSError:
                pass
    return kernels, tuned, temps, index


def _human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _target(meta):
    if not meta:
        return "?"
    if meta.get("backend") == "cuda":
        return f"cuda sm_{meta.get('arch', '?')}"
    return str(meta.get("backend", "?"))


def cmd_cache(argv):
    ap = argparse.ArgumentParser(
        prog=f"{PROG} cache", description="The on-disk kernel cache: $CTRITON_CACHE_DIR, "
        "default ~/.cache/ctriton. Compiled kernels (one file each) and autotuning results.")
    sub = ap.add_subparsers(dest="action", required=True, metavar="ACTION")
    ls = sub.add_parser("list", help="one line per cached kernel, newest first",
                        description="One line per cached kernel, newest first: key, kernel, "
                        "target, stages, size, age.")
    ls.add_argument("--json", action="store_true", help="a JSON list instead")
    sub.add_parser("size", help="how many entries and bytes", description="How many kernels "
                   "and autotuning results the cache holds, and their bytes.")
    sub.add_parser("clear", help="remove every entry", description="Removes every kernel "
                   "entry, autotuning result and source index entry (only files in ctriton's "
                   "cache formats; other files in the directory are left alone).")
    a = ap.parse_args(argv)
    root = cache_root()
    kernels, tuned, temps, index = scan_cache(root)

    if a.action == "list":
        kernels.sort(key=lambda ke: -ke[1]["mtime"])
        if a.json:
            print(json.dumps([{"key": k, "name": (e["meta"] or {}).get("name"),
                               "target": _target(e["meta"]), "stages": sorted(e["blobs"]),
                               "size": e["size"], "mtime": e["mtime"]} for k, e in kernels],
                             indent=1))
            return 0
        now = time.time()
        for k, e in kernels:
            age = now - e["mtime"]
            age_s = (f"{age / 86400:.0f}d" if age >= 86400 else f"{age / 3600:.0f}h"
                     if age >= 3600 else f"{age / 60:.0f}m")
            stages = ",".join(s for s in e["blobs"] if s != "meta")
            print(f"{k[:16]}  {(e['meta'] or {}).get('name', '?'):<28} {_target(e['meta']):<11}"
                  f" {stages:<28} {_human(e['size']):>9}  {age_s:>4}")
        print(f"{len(kernels)} kernels, {_human(sum(e['size'] for _, e in kernels))} in {root}")
        return 0

    if a.action == "size":
        kb = sum(e["size"] for _, e in kernels)
        tb = sum(s for _, s in tuned)
        ib = sum(s for _, s in index)
        print(f"{root}: {len(kernels)} kernels ({_human(kb)}), {len(tuned)} autotuning "
              f"results ({_human(tb)}), {len(index)} source index entries ({_human(ib)}); "
              f"{_human(kb + tb + ib + sum(s for _, s in temps))} in all")
        return 0

    # clear
    removed, freed, failed = 0, 0, []
    for path, size in [(os.path.join(root, k), e["size"]) for k, e in kernels] + tuned + temps + \
            index:
        try:
            os.unlink(path)
            removed += 1
            freed += size
        except FileNotFoundError:
            pass
        except OSError as e:
            failed.append(f"{path}: {e.strerror}")
    at = os.path.join(root, "autotune")
    for dirpath, _, _ in sorted(os.walk(at), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)  # only empty folders go
        except OSError:
            pass
    try:
        os.rmdir(os.path.join(root, "source-index"))  # when empty
    except OSError:
        pass
    print(f"removed {removed} files ({_human(freed)}) from {root}")
    for f in failed:
        print(f"cannot remove {f}", file=sys.stderr)
    return 1 if failed else 0


# -- info ------------------------------------------------------------------------

def _ptxas_version(path):
    try:
        r = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run: {e}"
    m = re.search(r"release [^\n]*", r.stdout)
    lines = r.stdout.strip().splitlines()
    return m.group(0) if m else lines[-1] if lines else "?"


def _llvm_linkage():
    """Where LLVM comes from: a shared libLLVM mapped into this process, or
    linked into the extension."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                m = re.search(r"(/\S*libLLVM[^/\s]*\.so[^/\s]*)$", line.strip())
                if m:
                    return m.group(1)
    except OSError:
        pass
    return "linked into the extension"


def _cuda_facts(drv):
    """Device name, compute capability, count and driver version, through
    the extension's loader of the CUDA driver (the one launches use)."""
    from . import _C
    dev = drv.get_current_device()
    name, ver = _C.cuda_device_info(dev)
    t = drv.get_current_target()
    return {"device": f"{name} (sm_{t.arch}, device {dev} of {_C.cuda_probe()})",
            "driver": f"CUDA {ver // 1000}.{ver % 1000 // 10}"}


def gather_info():
    import platform

    import ctriton
    from . import _C, _toolkit
    info = {
        "ctriton": f"{ctriton.__version__} ({os.path.dirname(ctriton.__file__)})",
        "python": f"{platform.python_version()} ({sys.executable})",
        "llvm": f"{_C.llvm_version()} ({_llvm_linkage()})",
    }
    try:
        drv = ctriton.runtime.driver.active
        info["backend"] = drv.backend
        if drv.backend == "cuda":
            info.update(_cuda_facts(drv))
        else:
            info["device"] = f"host CPU, {os.cpu_count()} threads"
            info["driver"] = "none needed"
    except Exception as e:  # a broken CUDA set-up is a fact to show
        info["backend"] = f"error: {e}"
    ptxas = _toolkit.ptxas_path()
    info["ptxas"] = (f"{ptxas} ({_ptxas_version(ptxas)})" if ptxas else
                     "not found: PTX is handed to the CUDA driver")
    info["libdevice"] = _toolkit.libdevice_path() or "not found (GPU math functions fail)"
    info["disassembler"] = _toolkit.disassembler_path() or "not found (asm['sass'] fails)"
    root = cache_root()
    kernels, tuned, _, _ = scan_cache(root)
    info["cache"] = (f"{root} ({len(kernels)} kernels, "
                     f"{_human(sum(e['size'] for _, e in kernels) + sum(s for _, s in tuned))})")
    return info


def cmd_info(argv):
    ap = argparse.ArgumentParser(
        prog=f"{PROG} info", description="What this ctriton runs with: its version, the "
        "backend and device, the CUDA driver, ptxas, libdevice, the SASS disassembler, LLVM and "
        "the cache directory.")
    ap.add_argument("--json", action="store_true", help="a JSON object instead")
    a = ap.parse_args(argv)
    info = gather_info()
    if a.json:
        print(json.dumps(info, indent=1))
    else:
        w = max(map(len, info))
        for k, v in info.items():
            print(f"{k + ':':<{w + 1}} {v}")
    return 0


# -- main ------------------------------------------------------------------------

COMMANDS = {
    "run": (cmd_run, "run an unmodified Triton program (SCRIPT or -m MODULE) on ctriton"),
    "dump": (cmd_dump, "print one compile stage (ttir, ttgir, llir, ptx, asm) of a kernel"),
    "cache": (cmd_cache, "list, size or clear the on-disk kernel cache"),
    "info": (cmd_info, "version, backend, device, driver, ptxas, LLVM, cache directory"),
}


def _top_parser():
    ap = argparse.ArgumentParser(prog=PROG, description="ctriton's command line.",
                                 epilog=f"'{PROG} COMMAND --help' describes a command.")
    ap.add_argument("--version", action="store_true", help="print ctriton's version")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        try:
            return COMMANDS[argv[0]][0](argv[1:])
        except BrokenPipeError:  # `... | head`: the reader is gone, so is our output
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    ap = _top_parser()
    a = ap.parse_args(argv)  # --help, --version or an unknown command
    if a.version:
        import ctriton
        print(ctriton.__version__)
        return 0
    ap.print_usage(sys.stderr)
    print(f"{PROG}: error: a command is needed ({', '.join(COMMANDS)})", file=sys.stderr)
    return 2
