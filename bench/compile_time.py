"""Compile time per stage, without a GPU: ctriton.compile() of the kernels of
bench/kernels_src.py (bound to ctriton) and kernels/ for a CUDA target (every
stage up to ptxas runs here), with an empty cache and with a disk-cache hit.

    PYTHONPATH=python python3 bench/compile_time.py [--reps N] [--arch 90] [--cpu]

Per kernel, the minimum over reps of each stage, in milliseconds:
  cold:  key (options, cache key), frontend (AST -> TTIR), parse, verify,
         ttir (CSE, DCE, TTIR text), ttgir (analysis), llir (LLVM IR build
         + libdevice), opt (LLVM pipeline), emit (LLVM IR text + PTX), ptxas,
         cache_write, total
  hit:   key, cache_read (files + checksums), load (JSON, CompiledKernel;
         module load is not included: it needs a GPU), total
Each cold compile runs in a warm process (the first one of the process is
excluded), like the first call of a kernel in a long-running program. The
same numbers come from any program with CTRITON_TIMING=1 (one stderr line
per compile()).
"""
import argparse
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import ctriton  # noqa: E402
import ctriton.language as ctl  # noqa: E402
from ctriton.backends.compiler import GPUTarget  # noqa: E402
from ctriton.compiler import ASTSource  # noqa: E402

D16 = {"divisibility": 16}


def load_bench_kernels():
    spec = importlib.util.spec_from_file_location("kernels_src_ctriton",
                                                  os.path.join(HERE, "kernels_src.py"))
    m = importlib.util.module_from_spec(spec)
    m.triton, m.tl = ctriton, ctl
    spec.loader.exec_module(m)
    return m


def attn_fwd_sig():
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32",
           "Out": "*fp16", "Z": "i32", "H": "i32"}
    for t in "qkvo":
        for s in "zh":
            sig[f"stride_{t}{s}"] = "i32"
    sig.update(stride_qm="i32", stride_kn="i32", stride_vk="i32", stride_om="i32")
    cx = {"N_CTX": 1024, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "STAGE": 3,
          "stride_qk": 1, "stride_kk": 1, "stride_vn": 1, "stride_on": 1}
    return sig, cx


def cases():
    """name -> (function, signature, constexprs, attrs, options)."""
    b = load_bench_kernels()
    out = {
        "add": (b.add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                {"BLOCK_SIZE": 1024}, {"x_ptr": D16, "y_ptr": D16, "out_ptr": D16, "n": D16},
                {"num_warps": 4}),
        "softmax": (b.softmax, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                                "out_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                    {"BLOCK_SIZE": 1024}, {"out_ptr": D16, "in_ptr": D16, "in_stride": D16,
                                           "out_stride": D16, "n_rows": D16, "n_cols": D16},
                    {"num_warps": 4}),
        "matmul": (b.matmul, dict({k: "*fp16" for k in ("a_ptr", "b_ptr", "c_ptr")},
                                  **{k: "i32" for k in ("M", "N", "K", "stride_am", "stride_ak",
                                                        "stride_bk", "stride_bn", "stride_cm",
                                                        "stride_cn")}),
                   {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8},
                   {"a_ptr": D16, "b_ptr": D16, "c_ptr": D16, "M": D16, "N": D16, "K": D16,
                    "stride_am": D16, "stride_bk": D16, "stride_cm": D16},
                   {"num_warps": 8, "num_stages": 3}),
        "layernorm": (b.layernorm, {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16",
                                    "stride": "i32", "N": "i32", "eps": "fp32"},
                      {"BLOCK_SIZE": 4096}, {"X": D16, "Y": D16, "W": D16, "B": D16,
                                             "stride": D16, "N": D16}, {"num_warps": 4}),
    }
    sm = importlib.import_module("kernels.softmax")
    out["lib.softmax"] = (sm.softmax_kernel,
                          {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                           "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                          {"BLOCK_SIZE": 1024, "num_stages": 4},
                          {"output_ptr": D16, "input_ptr": D16}, {"num_warps": 8})
    mm = importlib.import_module("kernels.matmul")
    out["lib.matmul"] = (mm.matmul_kernel,
                         dict({k: "*fp16" for k in ("a_ptr", "b_ptr", "c_ptr")},
                              **{k: "i32" for k in ("M", "N", "K", "stride_am", "stride_bk",
                                                    "stride_cm")}),
                         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": 128,
                          "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                          "ACTIVATION": "leaky_relu"},
                         {k: D16 for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                           "stride_bk", "stride_cm")},
                         {"num_warps": 4, "num_stages": 4})
    ln = importlib.import_module("kernels.layernorm")
    out["lib.layernorm"] = (ln.layer_norm_fwd,
                            {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16",
                             "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32",
                             "eps": "fp32"},
                            {"BLOCK_SIZE": 1024}, {"X": D16, "Y": D16, "W": D16, "B": D16},
                            {"num_warps": 8})
    at = importlib.import_module("kernels.attention")
    sig, cx = attn_fwd_sig()
    out["lib.attn_fwd"] = (at.attn_fwd, sig, cx, {}, {"num_warps": 8, "num_stages": 3})
    return out


def source(case):
    fn, sig, cx, attrs, _ = case
    sig = dict(sig)
    for k in cx:
        sig[k] = "constexpr"
    return ASTSource(fn, sig, cx, attrs)


COLD = ("key", "frontend", "parse", "verify", "ttir", "ttgir", "llir", "opt", "emit", "ptxas", "cpu",
        "cache_write", "total")
HIT = ("key", "cache_read", "load", "total")


def measure(case, target, reps):
    """(cold times, hit times, n_regs): per stage, the minimum over reps."""
    opts = case[4]
    cold, hit = {}, {}
    regs = None
    for _ in range(reps):
        os.environ["CTRITON_ALWAYS_COMPILE"] = "1"
        k = ctriton.compile(source(case), target=target, options=opts)
        regs = k.n_regs
        for s, v in k.times.items():
            cold[s] = min(cold.get(s, v), v)
    os.environ["CTRITON_ALWAYS_COMPILE"] = "0"
    ctriton.compile(source(case), target=target, options=opts)  # fill the cache
    for _ in range(reps):
        k = ctriton.compile(source(case), target=target, options=opts)
        for s, v in k.times.items():
            hit[s] = min(hit.get(s, v), v)
    return cold, hit, regs


def table(title, cols, rows):
    w = max(len(n) for n in rows) + 2
    print(title)
    print(f"{'kernel':{w}s}" + "".join(f"{c:>12s}" for c in cols))
    for name, t in rows.items():
        print(f"{name:{w}s}" + "".join(f"{t[c]:12.2f}" if c in t else f"{'-':>12s}"
                                       for c in cols))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--cpu", action="store_true", help="the CPU backend instead of CUDA")
    ap.add_argument("-k", default="", help="only kernels whose name contains this")
    args = ap.parse_args()
    target = GPUTarget("cpu", 0, 1) if args.cpu else GPUTarget("cuda", args.arch, 32)
    tmp = tempfile.mkdtemp(prefix="ctriton-bench-cache-")
    os.environ["CTRITON_CACHE_DIR"] = tmp
    try:
        cs = {n: c for n, c in cases().items() if args.k in n}
        # Warm the process: LLVM initialisation, first-use allocations.
        first = next(iter(cs.values()))
        os.environ["CTRITON_ALWAYS_COMPILE"] = "1"
        ctriton.compile(source(first), target=target, options=first[4])
        cold, hit, regs = {}, {}, {}
        for name, case in cs.items():
            cold[name], hit[name], regs[name] = measure(case, target, args.reps)
        cols = [c for c in COLD if any(c in t for t in cold.values())]
        table(f"cold compile, ms (min of {args.reps}), target {target.backend} {target.arch}",
              cols, cold)
        table(f"disk-cache hit, ms (min of {args.reps})", HIT, hit)
        if not args.cpu:
            print("registers (ptxas -v): " + ", ".join(f"{n} {r}" for n, r in regs.items()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
