"""Host time per launch on the CUDA backend: a no-op kernel over grid (1,)
with 4 and with 8 arguments (3 tensors), a hit in the variant cache, beside
Triton (when installed) and torch's `add_` on the same tensors.

    PYTHONPATH=python python3 bench/launch_overhead_gpu.py            # a GPU, torch
    PYTHONPATH=python python3 bench/launch_overhead_gpu.py --fake     # no GPU

--fake builds tests/python/fake_libcuda.c (a libcuda whose cuLaunchKernel
only records its arguments) and launches on it with duck-typed CUDA tensors
(data_ptr(), dtype, is_cuda): the host work of ctriton's launch path alone,
without the driver's own cost (cuLaunchKernel is ~2 us on an H200).
Figures: median over rounds of the mean per call, microseconds.
"""
import argparse
import importlib
import importlib.util
import itertools
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


def timeit(fn, calls, rounds, sync=None):
    fn(calls // 10 + 1)
    if sync:
        sync()
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn(calls)
        per.append((time.perf_counter() - t) / calls * 1e6)
        if sync:
            sync()  # queue drained between rounds, not inside one
    return statistics.median(per)


# The kernels, as one source text: load_kernels() runs it in a module whose
# globals `triton` and `tl` are ctriton's or Triton's, so both compile the
# same source (Triton resolves names in a kernel through its module's
# globals, and reads the source from the module's file).
KERNELS_SRC = """
@triton.jit
def noop4(x_ptr, n, f, flag, BLOCK: tl.constexpr):
    pass


@triton.jit
def noop8(a_ptr, b_ptr, c_ptr, n, m, stride, scale, flag, BLOCK: tl.constexpr):
    pass
"""


def load_kernels(impl, tmp):
    """A module of KERNELS_SRC with triton/tl bound to the package impl."""
    lib = importlib.import_module(impl)
    path = os.path.join(tmp, f"launch_kernels_{impl}.py")
    with open(path, "w") as f:
        f.write(KERNELS_SRC)
    spec = importlib.util.spec_from_file_location(f"launch_kernels_{impl}", path)
    m = importlib.util.module_from_spec(spec)
    m.triton, m.tl = lib, importlib.import_module(impl + ".language")
    spec.loader.exec_module(m)
    return m


def bench(kernels, tensors, rounds, calls, sync=None, prefix=""):
    noop4, noop8 = kernels.noop4, kernels.noop8
    a, b, c = tensors
    grid = (1,)

    def k4(k):
        for _ in range(k):
            noop4[grid](a, 16, 1.0, True, BLOCK=16)

    def k8(k):
        for _ in range(k):
            noop8[grid](a, b, c, 1024, 512, 64, 0.5, True, BLOCK=16)

    return {prefix + "kernel[(1,)](4 args)": timeit(k4, calls, rounds, sync),
            prefix + "kernel[(1,)](8 args, 3 tensors)": timeit(k8, calls, rounds, sync)}


class CudaTensor:
    """A duck-typed CUDA tensor for the fake driver. Its data_ptr is a
    builtin (as torch's is), not a Python method with a frame."""
    is_cuda = True
    dtype = "torch.float32"

    def __init__(self, ptr):
        self.data_ptr = itertools.repeat(ptr).__next__


def run_fake(args):
    cc = shutil.which("cc") or shutil.which("gcc")
    tmp = tempfile.mkdtemp(prefix="ctriton-fakecuda-")
    lib = os.path.join(tmp, "libfakecuda.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib,
                    os.path.join(ROOT, "tests", "python", "fake_libcuda.c")], check=True)
    env = dict(os.environ, CTRITON_LIBCUDA_PATH=lib, CTRITON_BACKEND="cuda",
               CTRITON_CACHE_DIR=os.path.join(tmp, "cache"))
    p = subprocess.run([sys.executable, __file__, "--child-fake", "--rounds", str(args.rounds),
                        "--calls", str(args.calls)], env=env, capture_output=True, text=True)
    shutil.rmtree(tmp, ignore_errors=True)
    if p.returncode:
        sys.exit(p.stderr)
    return json.loads(p.stdout)


def child_fake(args):
    t = [CudaTensor(1 << 20), CudaTensor(2 << 20), CudaTensor(3 << 20)]
    with tempfile.TemporaryDirectory(prefix="ctriton-launch-") as tmp:
        ks = load_kernels("ctriton", tmp)
        print(json.dumps(bench(ks, t, args.rounds, args.calls, prefix="ctriton, fake driver: ")))


def run_gpu(args):
    import torch
    t = [torch.zeros(1024, device="cuda") for _ in range(3)]
    sync = torch.cuda.synchronize
    with tempfile.TemporaryDirectory(prefix="ctriton-launch-") as tmp:
        res = bench(load_kernels("ctriton", tmp), t, args.rounds, args.calls, sync,
                    prefix="ctriton: ")
        try:
            ks = load_kernels("triton", tmp)
        except ImportError:
            ks = None
        if ks is not None:
            res.update(bench(ks, t, args.rounds, args.calls, sync, prefix="Triton: "))
    x = t[0]

    def add(k):
        for _ in range(k):
            x.add_(1.0)
    res["torch: x.add_(1.0), 1024 floats"] = timeit(add, args.calls, args.rounds, sync)
    res.update(driver_floor(args))
    return res


def driver_floor(args):
    """cuLaunchKernel alone, from C (bench/cu_launch_floor.c): the driver's
    part of every figure above. Empty when no C compiler is found."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return {}
    with tempfile.TemporaryDirectory(prefix="ctriton-floor-") as tmp:
        exe = os.path.join(tmp, "floor")
        subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "cu_launch_floor.c"), "-ldl"], check=True)
        out = subprocess.run([exe, str(args.calls), str(args.rounds)], check=True, capture_output=True,
                             text=True).stdout
    res = {}
    for ln in out.splitlines()[1:]:
        name, _, us = ln.rpartition(" ")
        res["driver: " + name.strip()] = float(us)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", action="store_true", help="no GPU: the fake libcuda")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child-fake", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_fake:
        return child_fake(args)
    res = run_fake(args) if args.fake else run_gpu(args)
    if args.json:
        print(json.dumps(res))
        return
    w = max(map(len, res))
    print(f"host time per launch, us (median of {args.rounds} rounds of {args.calls})")
    for name, us in res.items():
        print(f"  {name:{w}s} {us:8.3f}")


if __name__ == "__main__":
    main()
