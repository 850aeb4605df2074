"""One kernel of an upstream tutorial (03 matmul as bench/kernels_src.py
has it, 08 grouped GEMM, 09 persistent matmul), or kernels_src.py's
mm_operand_ops (`operands`: a dot reading its operands through other ops,
--form as bench/tc_gpu.py's --only operands numbers them), compiled by ctriton or Triton, launched inside a profiler range so
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
                    choices=("03", "operands", "09-persistent", "09-naive", "09-descriptor", "09-tma-persistent", "08-grouped"))
    ap.add_argument("--pin", default="128,256,64,8,3", help="03 and 09: BLOCK_M,N,K,warps,stages")
    ap.add_argument("--S", type=int, default=2048, help="03 and operands: M = N = K")
    ap.add_argument("--form", type=int, default=1, help="operands: 0 int8 B dequantized, 1 fp32 A cast, "
                    "3 the cast with other 1.0 / 2.0, 4 tf32x3")
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--pin08", type=int, help="08: the configuration number of the tutorial's list (default: autotuned)")
    ap.add_argument("--n08", type=int, help="08: four N x N x N problems (default: the tutorial's 1024, 512, 256, 128)")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.case == "03":
        from tc_gpu import load_file
        m = load_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels_src.py"), a.impl, "ks")
        bm, bn, bk, nw, ns = (int(x) for x in a.pin.split(","))
        S = a.S
        A = torch.randn((S, S), device="cuda", dtype=torch.float16)
        B = torch.randn((S, S), device="cuda", dtype=torch.float16)
        C = torch.empty((S, S), device="cuda", dtype=torch.float16)
        grid = (((S + bm - 1) // bm) * ((S + bn - 1) // bn),)
        fn = lambda: (m.matmul[grid](A, B, C, S, S, S, A.stride(0), A.stride(1), B.stride(0), B.stride(1),  # noqa: E731
                                     C.stride(0), C.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                     num_warps=nw, num_stages=ns), C)[1]
        ref = A @ B
    elif a.case == "operands":
        from tc_gpu import load_file
        m = load_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels_src.py"), a.impl, "ks")
        bm, bn, bk, nw, ns = (int(x) for x in a.pin.split(","))
        S, f = a.S, a.form
        A = torch.randn((S, S), device="cuda", dtype=torch.float32)
        B = torch.randn((S, S), device="cuda", dtype=torch.float32)
        if f == 0:
            A, B = A.half(), (B * 40).round().clamp(-127, 127).to(torch.int8)
            ref = A.float() @ (B.float() * 0.01).half().float()
        elif f in (1, 3):
            B = B.half()
            ref = A.half().float() @ B.float()
        else:
            ref = A @ B
        C = torch.empty((S, S), device="cuda", dtype=torch.float16)
        grid = ((S + bm - 1) // bm, (S + bn - 1) // bn)
        fn = lambda: (m.mm_operand_ops[grid](A, B, C, S, S, S, S, S, S, 0.01, BM=bm, BN=bn, BK=bk, FORM=f,  # noqa: E731
                                             num_warps=nw, num_stages=ns), C)[1]
    elif a.case.startswith("09"):
        m = load(os.path.join(a.tutorials, "09-persistent-matmul.py"), a.impl)
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
        m = load(os.path.join(a.tutorials, "08-grouped-gemm.py"), a.impl)
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
