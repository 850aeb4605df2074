"""One kernel of an upstream tutorial (08 grouped GEMM, 09 persistent
matmul), compiled by ctriton or Triton, launched inside a profiler range so
that Nsight Compute can read it:

    ncu --profile-from-start off --clock-control none --set full -o REP \\
        python3 bench/profile_tutorial.py --tutorials DIR --impl ctriton --case 09-persistent

The kernel is compiled and run (autotuned at the pinned configuration, so no
autotuning launches reach the range) before the range opens; the range holds
exactly one launch. scripts/gpu_round.sh's `profile` part runs it for both
compilers and prints the source-level stall table.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream_tutorials_gpu import load, pin08, pin09  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tutorials", required=True)
    ap.add_argument("--impl", choices=("ctriton", "triton"), required=True)
    ap.add_argument("--case", default="09-persistent",
                    choices=("09-persistent", "09-naive", "09-descriptor", "09-tma-persistent", "08-grouped"))
    ap.add_argument("--pin", default="128,256,64,8,3", help="09: BLOCK_M,N,K,warps,stages")
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--pin08", type=int, help="08: the configuration number of the tutorial's list (default: autotuned)")
    ap.add_argument("--n08", type=int, help="08: four N x N x N problems (default: the tutorial's 1024, 512, 256, 128)")
    a = ap.parse_args()
    tut = "09-persistent-matmul.py" if a.case.startswith("09") else "08-grouped-gemm.py"
    m = load(os.path.join(a.tutorials, tut), a.impl)
    torch.manual_seed(0)
    if a.case.startswith("09"):
        pin09({a.impl: m}, tuple(int(x) for x in a.pin.split(",")))
        M = N = 8192
        x = torch.randn((M, a.K), device="cuda", dtype=torch.float16)
        w = torch.randn((N, a.K), device="cuda", dtype=torch.float16)
        fn = {"09-persistent": lambda: m.matmul_persistent(x, w.T),
              "09-naive": lambda: m.matmul(x, w.T),
              "09-descriptor": lambda: m.matmul_descriptor_persistent(x, w, False),
              "09-tma-persistent": lambda: m.matmul_tma_persistent(x, w, False)}[a.case]
        ref = x @ w.T
    else:
        if a.pin08 is not None:
            pin08({a.impl: m}, "grouped_matmul_kernel", a.pin08)
        group_m = [a.n08] * 4 if a.n08 else [1024, 512, 256, 128]
        As = [torch.rand((g, g), device="cuda", dtype=torch.float16) for g in group_m]
        Bs = [torch.rand((g, g), device="cuda", dtype=torch.float16) for g in group_m]
        fn = lambda: m.group_gemm_fn(As, Bs)  # noqa: E731
        ref = [x @ y for x, y in zip(As, Bs)]
    for _ in range(3):
        out = fn()
    torch.cuda.synchronize()
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    err = max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, refs))
    print(f"{a.impl} {a.case}: max abs error {err:.3g}", flush=True)
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
