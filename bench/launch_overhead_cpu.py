"""Host time per launch on the CPU backend (a hit in the variant cache:
bind, key, lookup, pack, launch of a no-op kernel over grid (1,)), beside
calls of the same size into numpy and torch.

    PYTHONPATH=python python3 bench/launch_overhead_cpu.py [--rounds N] [--json]

Each figure is the median over rounds of the mean of one round's calls, in
microseconds; the loop runs inside a function (fast locals), and its own
cost is measured and reported beside (an empty loop, a Python function call).
"""
import argparse
import json
import statistics
import time

import numpy as np

import ctriton as triton
import ctriton.language as tl


@triton.jit
def noop4(x_ptr, n, f, flag, BLOCK: tl.constexpr):
    pass


@triton.jit
def noop8(a_ptr, b_ptr, c_ptr, n, m, stride, scale, flag, BLOCK: tl.constexpr):
    pass


def timeit(fn, calls, rounds):
    """Median over rounds of the per-call time of fn(calls) (it runs the
    loop itself), in microseconds."""
    fn(calls // 10 + 1)
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn(calls)
        per.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(per)


def cases():
    x = np.zeros(64, np.float32)
    a, b, c = (np.zeros(64, np.float32) for _ in range(3))
    launch4 = noop4[(1,)]
    grid = (1,)

    def empty(k):
        for _ in range(k):
            pass

    def pycall(k):
        def f(x, n, f, flag, BLOCK):
            return None
        for _ in range(k):
            f(x, 16, 1.0, True, BLOCK=16)

    def launcher4(k):
        for _ in range(k):
            launch4(x, 16, 1.0, True, BLOCK=16)

    def full4(k):
        for _ in range(k):
            noop4[grid](x, 16, 1.0, True, BLOCK=16)

    def full8(k):
        for _ in range(k):
            noop8[grid](a, b, c, 1024, 512, 64, 0.5, True, BLOCK=16)

    def run4(k):
        for _ in range(k):
            noop4.run(x, 16, 1.0, True, BLOCK=16, grid=grid, warmup=False)

    def np_add(k):
        for _ in range(k):
            np.add(a, b, out=c)

    out = {
        "empty loop": empty,
        "Python function call, 5 args": pycall,
        "launcher(x, n, f, flag, BLOCK=16)": launcher4,
        "kernel[(1,)](4 args + constexpr)": full4,
        "kernel[(1,)](8 args + constexpr)": full8,
        "kernel.run(4 args, grid=, warmup=)": run4,
        "numpy: np.add(a, b, out=c), 64 floats": np_add,
    }
    try:
        import torch
        t = torch.zeros(64)

        def torch_add(k):
            for _ in range(k):
                t.add_(1.0)
        out["torch: t.add_(1.0), 64 floats (CPU)"] = torch_add
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    triton.runtime.driver.set_active("cpu")  # the CPU backend on a GPU machine too
    res = {name: timeit(fn, args.calls, args.rounds) for name, fn in cases().items()}
    if args.json:
        print(json.dumps(res))
        return
    w = max(map(len, res))
    print(f"host time per call, us (median of {args.rounds} rounds of {args.calls})")
    for name, us in res.items():
        print(f"  {name:{w}s} {us:8.3f}")


if __name__ == "__main__":
    main()
