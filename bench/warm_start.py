"""Warm start: `import ctriton` and a disk-cache hit in a new process.

    PYTHONPATH=python python3 bench/warm_start.py [--reps N] [--fake | --gpu] [--json]

import: wall time of `import ctriton` (python3 -X importtime, the package's
cumulative line) in fresh interpreters, median and minimum over reps; the
same for `import triton` when it is installed, and numpy and torch beside.
Byte-code caches are allowed (PYTHONDONTWRITEBYTECODE is dropped for the
children; with a pycache prefix under the temporary directory when the
package directory is not writable).

cache hit: for each kernel of bench/compile_time.py, a first process
compiles it into an empty cache; then each of reps new processes imports
ctriton and the kernel's module, and times its first ctriton.compile() for
a CUDA target (sm_90): a disk-cache hit (cache key, file read + checksums,
metadata, CompiledKernel). With --gpu (a GPU) or --fake (the fake libcuda of
tests/python/fake_libcuda.c) the module load (Binary: cuModuleLoadData) is
timed too. Figures: median over reps, milliseconds.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child_env(tmp, extra=None):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tmp, "pycache"))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), ROOT,
                                         env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def import_ms(mod, reps, env):
    """(median, min) of the cumulative import time of mod, or None."""
    subprocess.run([sys.executable, "-c", f"import {mod}"], env=env, capture_output=True)
    times = []
    for _ in range(reps):
        p = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {mod}"],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            return None
        for line in p.stderr.splitlines():
            m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)$", line)
            if m and m.group(2) == mod:
                times.append(int(m.group(1)) / 1e3)
    return (statistics.median(times), min(times)) if times else None


CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
import ctriton
t_import = time.perf_counter() - t0
sys.path.insert(0, sys.argv[1])
import compile_time as ct
from ctriton.backends.compiler import GPUTarget
name, load = sys.argv[2], sys.argv[3] == "1"
case = ct.cases()[name]
src = ct.source(case)
t = time.perf_counter()
k = ctriton.compile(src, target=GPUTarget("cuda", 90, 32), options=case[4])
t1 = time.perf_counter()
if load:
    k._binary  # cuModuleLoadData
t2 = time.perf_counter()
print(json.dumps({"hit": "cache_read" in k.times and "ptxas" not in k.times,
                  "compile_ms": (t1 - t) * 1e3, "load_ms": (t2 - t1) * 1e3,
                  "times": k.times, "import_ms": t_import * 1e3}))
"""


def cache_hits(reps, load, extra_env, tmp):
    """kernel -> {compile, load, total, key, read}: medians over reps."""
    script = os.path.join(tmp, "hit_child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    sys.path.insert(0, HERE)
    import compile_time as ct
    names = list(ct.cases())
    out = {}
    for name in names:
        cache = os.path.join(tmp, "cache-" + name)
        env = child_env(tmp, dict(extra_env, CTRITON_CACHE_DIR=cache))
        cmd = [sys.executable, script, HERE, name, "1" if load else "0"]
        subprocess.run(cmd, env=env, check=True, capture_output=True)  # fills the cache
        rs = []
        for _ in range(reps):
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            assert r["hit"], f"{name}: not a cache hit"
            rs.append(r)
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        out[name] = {"compile()": med(lambda r: r["compile_ms"]),
                     "key": med(lambda r: r["times"].get("key", 0)),
                     "cache_read": med(lambda r: r["times"].get("cache_read", 0)),
                     "load": med(lambda r: r["times"].get("load", 0))}
        if load:
            out[name]["module load"] = med(lambda r: r["load_ms"])
            out[name]["total"] = med(lambda r: r["compile_ms"] + r["load_ms"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--fake", action="store_true", help="module load on the fake libcuda")
    ap.add_argument("--gpu", action="store_true", help="module load on the GPU")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ctriton-warm-")
    try:
        extra = {}
        if args.fake:
            cc = shutil.which("cc") or shutil.which("gcc")
            lib = os.path.join(tmp, "libfakecuda.so")
            subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib,
                            os.path.join(ROOT, "tests", "python", "fake_libcuda.c")], check=True)
            extra = {"CTRITON_LIBCUDA_PATH": lib, "CTRITON_BACKEND": "cuda"}
        env = child_env(tmp, extra)
        res = {"import": {}, "hit": {}}
        for mod in ("ctriton", "triton", "numpy", "torch"):
            r = import_ms(mod, args.reps, env)
            if r:
                res["import"][mod] = {"median": r[0], "min": r[1]}
        res["hit"] = cache_hits(args.reps, args.fake or args.gpu, extra, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(res))
        return
    print(f"import time, ms (median and min of {args.reps} fresh interpreters)")
    for mod, r in res["import"].items():
        ratio = ""
        if mod != "ctriton" and "ctriton" in res["import"]:
            ratio = f"   ctriton/{mod} = {res['import']['ctriton']['median'] / r['median']:.3f}"
        print(f"  import {mod:8s} {r['median']:9.1f} {r['min']:9.1f}{ratio}")
    cols = list(next(iter(res["hit"].values())))
    print(f"\ndisk-cache hit in a new process, ms (median of {args.reps}; cuda sm_90)")
    print(f"  {'kernel':16s}" + "".join(f"{c:>14s}" for c in cols))
    for name, r in res["hit"].items():
        print(f"  {name:16s}" + "".join(f"{r[c]:14.3f}" for c in cols))


if __name__ == "__main__":
    main()
