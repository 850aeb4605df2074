"""Warm start: `import ctriton` and a disk-cache hit in a new process.

    PYTHONPATH=python python3 bench/warm_start.py [--reps N] [--fake | --gpu] [--json]
                                                  [--kernels add,matmul,...]

import: wall time of `import X` (perf_counter around the statement, the
first one of the interpreter) in fresh interpreters, median and minimum over
reps, for ctriton, triton (when it imports), numpy and torch. With --gpu,
torch's figure comes from the first-launch processes below, which import
torch anyway (a torch import costs about a second or two: it is the bulk of
this script's run time). Byte-code caches are allowed (PYTHONDONTWRITEBYTECODE
is dropped for the children); when ctriton's package directory is not
writable, the package is copied into the temporary directory first, so that
its byte code can be cached without a pycache prefix (a prefix would also
move torch's byte code and make the first torch import compile all of it).

cache hit: one process compiles the kernels (of bench/compile_time.py) into
an empty cache; then, reps times, a new process per kernel imports ctriton
and the kernel's module and times its first ctriton.compile() for a CUDA
target (sm_90): a disk-cache hit (cache key, file read + checksums,
metadata, CompiledKernel). With --gpu (a GPU) or --fake (the fake libcuda
of tests/python/fake_libcuda.c) the module load (Binary: cuModuleLoadData)
is timed too; the driver is active and the device's primary context (the
one torch uses) current before the clock starts, as in a program that
already uses the GPU. The kernels of KERNELS below by default; with --gpu
add, matmul and lib.attn_fwd (each of those processes makes a CUDA
context, which costs more than the hit itself); --kernels picks others.

first launch (--gpu): the same in the way programs meet it, for ctriton and
Triton side by side: a new process with torch's context up and the disk
caches filled by an earlier process runs bench/kernels_src.py's vector add
once with ctriton and once with Triton (which of the two goes first
alternates between processes); the time of each first `add[grid](...)`
(until the launch returns, then synchronized) is the warm start of each.

Each table is printed as soon as it is measured. Figures: median over reps,
milliseconds.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = ("add", "softmax", "matmul", "layernorm", "lib.softmax", "lib.matmul", "lib.layernorm",
           "lib.attn_fwd")
GPU_KERNELS = ("add", "matmul", "lib.attn_fwd")


def package_path(tmp):
    """The directory to put first on the children's path for ctriton: the
    tree's python/, or a copy of its package when that is not writable."""
    src = os.path.join(ROOT, "python")
    if not os.path.isdir(os.path.join(src, "ctriton")):
        # an installed ctriton (a wheel), not the tree's: the package itself
        import ctriton
        src = os.path.dirname(os.path.dirname(os.path.abspath(ctriton.__file__)))
    if os.access(os.path.join(src, "ctriton"), os.W_OK):
        return src
    dst = os.path.join(tmp, "pkg")
    shutil.copytree(os.path.join(src, "ctriton"), os.path.join(dst, "ctriton"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def child_env(pkg, extra=None):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([pkg, ROOT, env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


IMPORT = "import time; t = time.perf_counter(); import {0}; print((time.perf_counter() - t) * 1e3)"


def import_ms(mod, reps, env):
    """The import time of mod in reps fresh interpreters (after one more that
    fills the byte-code cache), or None when it does not import."""
    cmd = [sys.executable, "-c", IMPORT.format(mod)]
    if subprocess.run(cmd, env=env, capture_output=True).returncode:
        return None
    return [float(subprocess.run(cmd, env=env, capture_output=True, text=True,
                                 check=True).stdout) for _ in range(reps)]


HIT_CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
import ctriton
t_import = time.perf_counter() - t0
sys.path.insert(0, sys.argv[1])
import compile_time as ct
from ctriton.backends.compiler import GPUTarget
names, load = sys.argv[2].split(","), sys.argv[3] != "0"
if load:
    ctriton.runtime.driver.active.set_current_device(0)  # cuInit, primary context
cases = ct.cases()
out = []
for name in names:
    case = cases[name]
    src = ct.source(case)
    t = time.perf_counter()
    k = ctriton.compile(src, target=GPUTarget("cuda", 90, 32), options=case[4])
    t1 = time.perf_counter()
    if load:
        k._binary  # cuModuleLoadData
    t2 = time.perf_counter()
    out.append({"hit": "cache_read" in k.times and "ptxas" not in k.times,
                "compile_ms": (t1 - t) * 1e3, "load_ms": (t2 - t1) * 1e3,
                "times": k.times, "import_ms": t_import * 1e3})
print(json.dumps(out))
"""


FIRST_LAUNCH = r"""
import importlib, importlib.util, sys, time, json
t0 = time.perf_counter()
import torch
t_torch = (time.perf_counter() - t0) * 1e3
x = torch.rand(1 << 20, device="cuda"); y = torch.rand(1 << 20, device="cuda")
torch.cuda.synchronize()
adds = {}
for impl in sys.argv[2].split(","):
    lib = importlib.import_module(impl)
    spec = importlib.util.spec_from_file_location("kernels_src_" + impl, sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    m.triton, m.tl = lib, importlib.import_module(impl + ".language")
    spec.loader.exec_module(m)
    adds[impl] = m.add
res = {"import_torch_ms": t_torch}
for impl, add in adds.items():
    out = torch.empty_like(x)
    t = time.perf_counter()
    add[(1024,)](x, y, out, 1 << 20, BLOCK_SIZE=1024)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    assert torch.allclose(out, x + y), impl
    res[impl] = (t1 - t) * 1e3
print(json.dumps(res))
"""


def start(cmd, env):
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(p):
    """The JSON of the last line a child started by start() printed."""
    out, err = p.communicate()
    if p.returncode:
        sys.exit(f"{' '.join(p.args)}:\n{err}")
    return json.loads(out.strip().splitlines()[-1])


def run_json(cmd, env):
    return finish(start(cmd, env))


class FirstLaunch:
    """The first launch in a new process, disk caches warm; ctriton and
    Triton in each process, in turns first. fill() starts the process that
    fills the caches; measure() waits for it, then runs reps processes."""

    def __init__(self, tmp, pkg):
        self.script = os.path.join(tmp, "first_launch.py")
        with open(self.script, "w") as f:
            f.write(FIRST_LAUNCH)
        self.env = child_env(pkg, {"CTRITON_CACHE_DIR": os.path.join(tmp, "fl-cache-ctriton"),
                                   "TRITON_CACHE_DIR": os.path.join(tmp, "fl-cache-triton")})
        has_triton = subprocess.run([sys.executable, "-c", "import triton"], env=self.env,
                                    capture_output=True).returncode == 0
        self.impls = ["ctriton", "triton"] if has_triton else ["ctriton"]
        self.cmd = [sys.executable, self.script, os.path.join(HERE, "kernels_src.py")]
        self.filling = None

    def fill(self):
        self.filling = start(self.cmd + [",".join(self.impls)], self.env)

    def wait(self):
        if self.filling is not None:
            finish(self.filling)
            self.filling = None

    def measure(self, reps):
        """({impl: [ms]}, [import torch ms])."""
        if self.filling is None:
            self.fill()
        self.wait()
        return first_launches(self.cmd, self.env, self.impls, reps)


def first_launches(cmd, env, impls, reps):
    out, torch_ms = {i: [] for i in impls}, []
    for r in range(reps):
        order = impls if r % 2 == 0 else impls[::-1]
        res = run_json(cmd + [",".join(order)], env)
        torch_ms.append(res["import_torch_ms"])
        for i in impls:
            out[i].append(res[i])
    return out, torch_ms


def hit_setup(load, names, extra_env, tmp, pkg):
    """(command, env, the process filling the cache) for cache_hits."""
    script = os.path.join(tmp, "hit_child.py")
    with open(script, "w") as f:
        f.write(HIT_CHILD)
    env = child_env(pkg, dict(extra_env, CTRITON_CACHE_DIR=os.path.join(tmp, "hit-cache")))
    cmd = [sys.executable, script, HERE]
    return cmd, env, start(cmd + [",".join(names), load or "0"], env)


def cache_hits(reps, load, names, setup):
    """kernel -> {compile(), key, cache_read, load[, module load, total]}:
    medians over reps new processes."""
    cmd, env, filling = setup
    if filling is not None:
        finish(filling)
    flag = load or "0"
    rs = {n: [] for n in names}
    for _ in range(reps):
        for name in names:
            r = run_json(cmd + [name, flag], env)[0]
            assert r["hit"], f"{name}: not a cache hit"
            rs[name].append(r)
    out = {}
    for name in names:
        med = lambda f: statistics.median(f(r) for r in rs[name])  # noqa: E731
        out[name] = {"compile()": med(lambda r: r["compile_ms"]),
                     "key": med(lambda r: r["times"].get("key", 0)),
                     "cache_read": med(lambda r: r["times"].get("cache_read", 0)),
                     "load": med(lambda r: r["times"].get("load", 0))}
        if load:
            out[name]["module load"] = med(lambda r: r["load_ms"])
            out[name]["total"] = med(lambda r: r["compile_ms"] + r["load_ms"])
    return out


def print_imports(imports, reps, note=""):
    print(f"import time, ms (median and min of {reps} fresh interpreters){note}")
    for mod, ms in imports.items():
        ratio = ""
        if mod != "ctriton" and "ctriton" in imports:
            ratio = (f"   ctriton/{mod} = "
                     f"{statistics.median(imports['ctriton']) / statistics.median(ms):.3f}")
        print(f"  import {mod:8s} {statistics.median(ms):9.1f} {min(ms):9.1f}{ratio}")
    print(flush=True)


def print_hits(hits, reps, load):
    cols = list(next(iter(hits.values())))
    what = "" if load else " (no module load: --fake or --gpu times it)"
    print(f"disk-cache hit in a new process, ms (median of {reps}; cuda sm_90){what}")
    print(f"  {'kernel':16s}" + "".join(f"{c:>14s}" for c in cols))
    for name, r in hits.items():
        print(f"  {name:16s}" + "".join(f"{r[c]:14.3f}" for c in cols))
    print(flush=True)


def print_first(fl, reps):
    print(f"first launch of vector add in a new process, disk cache warm, ms "
          f"(median and min of {reps})")
    c = statistics.median(fl["ctriton"])
    for impl, ms in fl.items():
        ratio = f"   ctriton/{impl} = {c / statistics.median(ms):.3f}" if impl != "ctriton" else ""
        print(f"  {impl:8s} {statistics.median(ms):9.3f} {min(ms):9.3f}{ratio}")
    print(flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--fake", action="store_true", help="module load on the fake libcuda")
    ap.add_argument("--gpu", action="store_true", help="module load and first launch on the GPU")
    ap.add_argument("--kernels", default=None,
                    help="comma-separated kernels of compile_time.py for the cache hit "
                         "(default: " + ",".join(KERNELS) + "; "
                         "with --gpu: " + ",".join(GPU_KERNELS) + ")")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    sys.path.insert(0, HERE)
    import compile_time as ct
    every = list(ct.cases())
    names = (args.kernels.split(",") if args.kernels else
             list(GPU_KERNELS) if args.gpu else list(KERNELS))
    unknown = [n for n in names if n not in every]
    if unknown:
        ap.error(f"unknown kernels {unknown}; known: {', '.join(every)}")
    show = not args.json
    t_start = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="ctriton-warm-")
    try:
        pkg = package_path(tmp)
        extra = {}
        if args.fake:
            cc = shutil.which("cc") or shutil.which("gcc")
            lib = os.path.join(tmp, "libfakecuda.so")
            subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib,
                            os.path.join(ROOT, "tests", "python", "fake_libcuda.c")], check=True)
            extra = {"CTRITON_LIBCUDA_PATH": lib, "CTRITON_BACKEND": "cuda"}
        env = child_env(pkg, extra)
        load = "gpu" if args.gpu else "1" if args.fake else None
        # The processes that fill the caches run beside the import timings
        # where there are cores to spare (they are not timed).
        spare = (os.cpu_count() or 1) >= 8
        hit = hit_setup(load, names, extra, tmp, pkg)
        if not spare:
            finish(hit[2])
            hit = hit[:2] + (None,)
        fl = FirstLaunch(tmp, pkg) if args.gpu else None
        if fl and spare:
            fl.fill()
        res = {"import": {}}
        mods = ("ctriton", "triton", "numpy") if args.gpu else ("ctriton", "triton", "numpy",
                                                                "torch")
        for mod in mods:
            ms = import_ms(mod, args.reps, env)
            if ms:
                res["import"][mod] = ms
        if show:
            print_imports(res["import"], args.reps,
                          " (torch: with the first launches below)" if args.gpu else "")
        if fl:
            fl.wait()  # nothing runs beside the timings below
        res["hit"] = cache_hits(args.reps, load, names, hit)
        if show:
            print_hits(res["hit"], args.reps, load)
        if args.gpu:
            res["first_launch"], torch_ms = fl.measure(args.reps)
            res["import"]["torch"] = torch_ms
            if show:
                print_first(res["first_launch"], args.reps)
                print_imports({m: res["import"][m] for m in ("ctriton", "torch")
                               if m in res["import"]}, args.reps,
                              " (torch: in the first-launch processes)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        res["import"] = {m: {"median": statistics.median(ms), "min": min(ms), "ms": ms}
                         for m, ms in res["import"].items()}
        if "first_launch" in res:
            res["first_launch"] = {i: {"median": statistics.median(ms), "min": min(ms), "ms": ms}
                                   for i, ms in res["first_launch"].items()}
        print(json.dumps(res))
    else:
        print(f"(measured in {time.perf_counter() - t_start:.1f} s)")


if __name__ == "__main__":
    main()
