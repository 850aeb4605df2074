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
timed too; the driver is active and (--gpu) torch's CUDA context made before
the clock starts, as in a program that already uses the GPU.

first launch (--gpu): the same in the way programs meet it, for ctriton and
Triton side by side: a new process with torch's context up and the disk
cache filled by an earlier process runs bench/kernels_src.py's vector add
once; the time of that first `add[grid](...)` (until the launch returns,
then synchronized) is the warm start of each.

Figures: median over reps, milliseconds.
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
name, load = sys.argv[2], sys.argv[3] != "0"
if sys.argv[3] == "gpu":
    import torch
    torch.zeros(1, device="cuda")  # torch's context, as in a program using the GPU
if load:
    ctriton.runtime.driver.active
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


FIRST_LAUNCH = r"""
import importlib.util, sys, time, json
import torch
x = torch.rand(1 << 20, device="cuda"); y = torch.rand(1 << 20, device="cuda")
out = torch.empty_like(x)
torch.cuda.synchronize()
impl = sys.argv[2]
lib = importlib.import_module(impl)
tl = importlib.import_module(impl + ".language")
spec = importlib.util.spec_from_file_location("kernels_src_" + impl, sys.argv[1])
m = importlib.util.module_from_spec(spec)
m.triton, m.tl = lib, tl
spec.loader.exec_module(m)
t = time.perf_counter()
m.add[(1024,)](x, y, out, 1 << 20, BLOCK_SIZE=1024)
t1 = time.perf_counter()
torch.cuda.synchronize()
assert torch.allclose(out, x + y)
print(json.dumps({"first_launch_ms": (t1 - t) * 1e3}))
"""


def first_launches(reps, tmp):
    """impl -> median ms of the first launch in a new process, disk cache warm."""
    script = os.path.join(tmp, "first_launch.py")
    with open(script, "w") as f:
        f.write(FIRST_LAUNCH)
    out = {}
    for impl in ("ctriton", "triton"):
        cache = os.path.join(tmp, "fl-cache-" + impl)
        env = child_env(tmp, {"CTRITON_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache})
        cmd = [sys.executable, script, os.path.join(HERE, "kernels_src.py"), impl]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)  # fills the cache
        if p.returncode:
            if impl == "triton":
                continue
            sys.exit(p.stderr)
        ms = []
        for _ in range(reps):
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            ms.append(json.loads(p.stdout.strip().splitlines()[-1])["first_launch_ms"])
        out[impl] = statistics.median(ms)
    return out


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
        cmd = [sys.executable, script, HERE, name, load or "0"]
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
        res["hit"] = cache_hits(args.reps, "gpu" if args.gpu else "1" if args.fake else None,
                                extra, tmp)
        if args.gpu:
            res["first_launch"] = first_launches(args.reps, tmp)
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
    fl = res.get("first_launch")
    if fl:
        print(f"\nfirst launch of vector add in a new process, disk cache warm, ms "
              f"(median of {args.reps})")
        for impl, ms in fl.items():
            ratio = f"   ctriton/{impl} = {fl['ctriton'] / ms:.3f}" if impl != "ctriton" else ""
            print(f"  {impl:8s} {ms:9.3f}{ratio}")


if __name__ == "__main__":
    main()
