"""What the GPU runs in one timed launch, per side: upstream tutorial 03's
`matmul` (its autotuner pinned to one configuration of its own list, the
same on both sides) launched as do_bench launches it, each launch behind
the kernel that clears the L2 cache.

For each side it prints the median of do_bench's measure (CUDA events
around the launch), then, from a torch.profiler trace of the same loop,
every GPU activity between two clearing kernels: its name, how many times
it ran and its median duration, and the median gap between the clearing
kernel's end and the next activity's start. A difference between the
sides' event times that their kernels' durations do not explain is a
cost outside the kernel (its launch, or work beside it).

    python3 bench/kernel_trace.py --tutorials DIR [--n 2048] [--config 0] [--reps 100] [--no-assume]

--no-assume drops the tutorial's `tl.assume(...)` lines on both sides.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from upstream_tutorials_gpu import load, pin08  # noqa: E402

CLEAR_BYTES = 256 * 1024 * 1024  # as do_bench


def event_times(fn, reps, cache):
    """do_bench's measure: CUDA events around each launch, after a clear."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]  # us


def trace(fn, reps, cache):
    """[(name, start_us, dur_us)] of every GPU activity, in order."""
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(reps):
            cache.zero_()
            fn()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    os.unlink(path)
    gpu = [(e["name"], float(e["ts"]), float(e.get("dur", 0))) for e in events
           if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    return sorted(gpu, key=lambda x: x[1])


def summarize(side, acts):
    """Group what runs between clearing kernels."""
    clear = [i for i, (n, _, _) in enumerate(acts) if "fill" in n.lower() or "zero" in n.lower()]
    if not clear:
        print(f"  {side}: no clearing kernel found in the trace", flush=True)
        return
    clear_name = acts[clear[0]][0]
    per, gaps, spans = {}, [], []
    for j, i in enumerate(clear):
        end = acts[i][1] + acts[i][2]
        stop = clear[j + 1] if j + 1 < len(clear) else len(acts)
        between = acts[i + 1:stop]
        if not between:
            continue
        gaps.append(between[0][1] - end)
        spans.append(between[-1][1] + between[-1][2] - between[0][1])
        for n, _, d in between:
            per.setdefault(n, []).append(d)
    print(f"  {side}: clearing kernel {clear_name[:60]!r}, median {statistics.median(acts[i][2] for i in clear):.1f} us",
          flush=True)
    for n, ds in per.items():
        print(f"  {side}: {len(ds):4d} x {statistics.median(ds):8.2f} us  {n[:90]}", flush=True)
    if gaps:
        print(f"  {side}: gap after the clear {statistics.median(gaps):.2f} us, first-to-last span "
              f"{statistics.median(spans):.2f} us (medians)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tutorials", required=True, help="python/tutorials of a Triton snapshot")
    ap.add_argument("--n", type=int, default=2048, help="M = N = K")
    ap.add_argument("--config", type=int, action="append",
                    help="index into the tutorial's configuration list (repeatable; default 0)")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--no-assume", action="store_true", help="drop the tutorial's tl.assume lines (both sides)")
    a = ap.parse_args()
    impls = ["ctriton"]
    try:
        import triton  # noqa: F401
        impls.append("triton")
    except ImportError:
        pass
    path = os.path.join(a.tutorials, "03-matrix-multiplication.py")
    if a.no_assume:
        src = "".join(line for line in open(path) if not line.lstrip().startswith("tl.assume("))
        path = os.path.join(tempfile.mkdtemp(), "03-matrix-multiplication.py")
        with open(path, "w") as f:
            f.write(src)
    mods = {impl: load(path, impl) for impl in impls}
    print("device:", torch.cuda.get_device_name(), flush=True)
    torch.manual_seed(0)
    x = torch.randn((a.n, a.n), device="cuda", dtype=torch.float16)
    y = torch.randn((a.n, a.n), device="cuda", dtype=torch.float16)
    ref = x @ y
    cache = torch.empty(CLEAR_BYTES // 4, dtype=torch.int, device="cuda")
    for idx in a.config or [0]:
        label = pin08(mods, "matmul_kernel", idx)
        print(f"tutorial 03 {a.n}^3 [{label}]", flush=True)
        fns = {}
        for impl, m in mods.items():
            fns[impl] = (lambda m=m: m.matmul(x, y))
            out = fns[impl]()
            err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            print(f"  {impl}: rel.err {err:.1e}", flush=True)
        med = {}
        for r in range(3):  # the sides in turn
            for impl in (impls if r % 2 == 0 else impls[::-1]):
                med.setdefault(impl, []).extend(event_times(fns[impl], a.reps, cache))
        for impl in impls:
            print(f"  {impl}: events median {statistics.median(med[impl]):.2f} us", flush=True)
        for impl in impls:
            summarize(impl, trace(fns[impl], a.reps, cache))


if __name__ == "__main__":
    main()
