"""Benchmarking and checking helpers (ctriton.testing), shaped like
triton.testing: do_bench, perf_report/Benchmark, assert_close."""
import math
import os
import statistics
import sys
import time


def _on_gpu():
    from .runtime.driver import driver
    return driver.active.backend == "cuda" and "torch" in sys.modules


def _summarize(times, quantiles, return_mode):
    times = sorted(times)
    if quantiles is not None:
        out = []
        for q in quantiles:
            pos = q * (len(times) - 1)
            lo, hi = math.floor(pos), math.ceil(pos)
            out.append(times[lo] + (times[hi] - times[lo]) * (pos - lo))
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.fmean,
            "median": statistics.median}[return_mode](times)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Runs fn repeatedly for about `rep` ms (after `warmup` ms) and returns
    its time in ms: CUDA events on the GPU (with the L2 flushed between runs),
    time.perf_counter on the CPU."""
    assert return_mode in ("min", "max", "mean", "median", "all")
    if _on_gpu():
        import torch
        cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            cache.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        n_warm, n_rep = max(1, int(warmup / est)), max(1, int(rep / est))
        for _ in range(n_warm):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        for i in range(n_rep):
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            cache.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        return _summarize(times, quantiles, return_mode)
    fn()
    t0 = time.perf_counter()
    n = 0
    while n < 5 or (time.perf_counter() - t0) * 1e3 < warmup:
        fn()
        n += 1
    est = max((time.perf_counter() - t0) * 1e3 / n, 1e-4)
    n_rep = max(3, min(int(rep / est), 100000))
    times = []
    for _ in range(n_rep):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Times fn replayed from a CUDA graph (ms), as triton.testing does; on
    the CPU backend there are no graphs and it is do_bench."""
    assert return_mode in ("min", "max", "mean", "median", "all")
    if not _on_gpu():
        return do_bench(fn, warmup=rep / 4, rep=rep, grad_to_none=grad_to_none,
                        quantiles=quantiles, return_mode=return_mode)
    import torch
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()  # compile and warm up outside the graph
        if grad_to_none is not None:
            for x in grad_to_none:
                x.detach_()
                x.requires_grad_(True)
                x.grad = None
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            g.replay()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        n_rep = max(1, int(rep / est))
        # one graph of n_rep calls, replayed several times
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_rep):
                if grad_to_none is not None:
                    for x in grad_to_none:
                        x.grad = None
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / n_rep)
    return _summarize(times, quantiles, return_mode)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Element-wise closeness of two tensors/arrays/scalars (numpy semantics)."""
    import numpy as np

    def to_np(a):
        if hasattr(a, "detach"):
            a = a.detach().cpu()
            if str(a.dtype) == "torch.bfloat16":
                a = a.float()
            return a.numpy()
        return np.asarray(a)
    x, y = to_np(x), to_np(y)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, err_msg=err_msg, equal_nan=True)


class Benchmark:
    """One benchmark table: x values (x_names) against lines (line_vals)."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None,
                 label=None):
        self.x_names, self.x_vals = x_names, x_vals
        self.line_arg, self.line_vals, self.line_names = line_arg, line_vals, line_names
        self.plot_name, self.args = plot_name, args
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles = styles


class Mark:
    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run(self, bench, save_path, show_plots, print_data):
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            xargs = dict(zip(bench.x_names, xs))
            row = list(xs)
            for lv in bench.line_vals:
                r = self.fn(**xargs, **{bench.line_arg: lv}, **bench.args)
                row.append(r[0] if isinstance(r, (tuple, list)) else r)
            rows.append(row)
        header = list(bench.x_names) + [f"{n} ({bench.ylabel})" if bench.ylabel else n
                                        for n in bench.line_names]
        table = [header] + [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in r]
                            for r in rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        text = "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in table)
        if print_data:
            print(f"{bench.plot_name}:\n{text}")
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            with open(os.path.join(save_path, f"{bench.plot_name}.txt"), "w") as f:
                f.write(text + "\n")
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w") as f:
                f.write(",".join(header) + "\n")
                for r in rows:
                    f.write(",".join(str(v) for v in r) + "\n")
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return rows
        fig, ax = plt.subplots()
        xs = [r[0] for r in rows]
        for i, name in enumerate(bench.line_names):
            style = bench.styles[i] if bench.styles else None
            ax.plot(xs, [r[len(bench.x_names) + i] for r in rows], label=name,
                    color=style[0] if style else None, ls=style[1] if style else None)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        if bench.x_log:
            ax.set_xscale("log")
        if bench.y_log:
            ax.set_yscale("log")
        if save_path:
            fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show_plots:
            plt.show()
        plt.close(fig)
        return rows

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False):
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        out = [self._run(b, save_path, show_plots, print_data) for b in benches]
        if return_df:
            return out if len(out) > 1 else out[0]


def perf_report(benchmarks):
    """Decorator: fn(**x, line_arg=..., **args) -> ms or GB/s; .run() prints
    a table (and saves a plot when matplotlib is installed)."""
    return lambda fn: Mark(fn, benchmarks)
