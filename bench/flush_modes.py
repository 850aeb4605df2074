"""Tutorial 03's kernel (bench/kernels_src.py's `matmul`, one pinned
configuration) timed by ctriton and by Triton with five ways of preparing
the GPU before each timed launch, to see which part of a do_bench ratio
belongs to the kernel and which to what runs before it:

  zero   a 256 MB buffer zeroed, as do_bench clears the L2 (the L2 is left
         full of dirty lines)
  read   the same buffer summed (the L2 is cleared and left clean)
  none   nothing (A and B stay in the L2 from the previous launch)
  sleep  zeroed, then a 0.1 ms spin kernel (the L2 writes back meanwhile)
  sync   zeroed, then the host waits for the GPU, so that the time between
         the two events includes the host's launch of the kernel

Each mode: --launches timed launches per side (CUDA events around the
launch alone), the sides alternated over --rounds rounds; medians. Then the
host time of a launch per side (1000 launches back to back).

    python3 bench/flush_modes.py [--size 2048] [--config 128,256,64,8,3]
        [--modes zero,read,none,sleep,sync]
"""
import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tc_gpu  # noqa: E402  (load_file: one kernel source, each side's module)

MODES = ("zero", "read", "none", "sleep", "sync")


def launches(S, cfg):
    """Each side's launch of A @ B (fp16, S^3) with cfg, checked once."""
    bm, bn, bk, nw, ns = cfg
    A = torch.randn(S, S, device="cuda", dtype=torch.float16)
    B = torch.randn(S, S, device="cuda", dtype=torch.float16)
    ref = A.float() @ B.float()
    fns = {}
    for k in ("ctriton", "triton"):
        m = tc_gpu.load_file(os.path.join(HERE, "kernels_src.py"), k, "ks")
        C = torch.empty(S, S, device="cuda", dtype=torch.float16)
        grid = (tc_gpu.triton_cdiv(S, bm) * tc_gpu.triton_cdiv(S, bn),)

        def f(m=m, C=C, grid=grid):
            m.matmul[grid](A, B, C, S, S, S, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                           C.stride(0), C.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                           num_warps=nw, num_stages=ns)
        f()
        torch.cuda.synchronize()
        err = ((C.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"{k}: wrong result (relative error {err:.2e})")
        fns[k] = f
    return fns


def time_mode(f, mode, cache, n):
    """Median microseconds between the events around f over n launches,
    each after mode's preparation."""
    ev = []
    for _ in range(n):
        if mode == "zero":
            cache.zero_()
        elif mode == "read":
            cache.sum()
        elif mode == "sleep":
            cache.zero_()
            torch.cuda._sleep(200000)
        elif mode == "sync":
            cache.zero_()
            torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        ev.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--config", default="128,256,64,8,3", help="BM,BN,BK,warps,stages")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--launches", type=int, default=100)
    a = ap.parse_args()
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (one of {', '.join(MODES)})")
    cfg = tuple(int(x) for x in a.config.split(","))
    print("device:", torch.cuda.get_device_name(), "size", a.size, "config", a.config, flush=True)
    fns = launches(a.size, cfg)
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
    for mode in modes:
        got = {k: [] for k in fns}
        for r in range(a.rounds):
            for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
                got[k].append(time_mode(fns[k], mode, cache, a.launches))
        c, t = statistics.median(got["ctriton"]), statistics.median(got["triton"])
        per = " ".join(f"{x / y:.3f}" for x, y in zip(got["triton"], got["ctriton"]))
        print(f"{mode:6s} ctriton {c:9.2f} us  triton {t:9.2f} us  ctriton/triton speed {t / c:.3f}  "
              f"rounds {per}", flush=True)
    for k, f in fns.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(1000):
            f()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        print(f"host time of a launch, {k}: {(t1 - t0) * 1e3:.2f} us (1000 back to back)", flush=True)


if __name__ == "__main__":
    main()
