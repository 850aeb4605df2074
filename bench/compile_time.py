"""Compile time per stage, without a GPU, beside Triton: ctriton.compile() of
the kernels of bench/kernels_src.py and kernels/ for a CUDA target (every
stage up to ptxas runs here), with an empty cache and with a disk-cache hit;
the same kernel sources compiled by Triton for the same target; and, for
the big kernels, where each compiler's time goes.

    PYTHONPATH=python python3 bench/compile_time.py [--reps N] [--arch 90] [--cpu] [-k NAME]
        [--triton-python PY | --no-triton] [--breakdown K1,K2] [--keep-ptx DIR]

ctriton, per kernel, the minimum over reps of each stage, in milliseconds:
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

Triton: a child process of the python given by --triton-python (default:
this python, when it imports a real Triton; --no-triton skips it) runs this
file with --triton-child: it loads the same kernel sources with `triton`
and `tl` (and `ctriton`, for kernels/) bound to Triton, compiles each for
the same target with TRITON_ALWAYS_COMPILE and a fresh cache directory, the
first compile of the process excluded, and reports the minimum over reps
of the wall time of triton.compile() and of each of its stages (Triton's
compilation listener: make_ir = AST -> TTIR, ttir, ttgir, llir = TTGIR ->
LLVM IR + LLVM optimisation, ptx = LLVM codegen, cubin = ptxas, store).
The two run as separate processes: each has its own LLVM.

The side-by-side table gives, per kernel, the wall time of ctriton.compile()
and of triton.compile() (minimum over reps), their ratio, the CPU time of
each (the process's and its ptxas child's: less moved by other jobs on a
shared machine than the wall time) and the ratio of the ptxas stages. The
breakdown (--breakdown, default the tutorial matmul 128x256x64 and the
causal fused attention) takes both PTX texts and runs ptxas on each, with
each compiler's ptxas and flags (ctriton: -v -arch sm_XX[a]; Triton: its
own ptxas, -lineinfo -v --gpu-name=sm_XX[a]), interleaved, and counts PTX
size, instructions by kind, registers and SASS instructions (with the
cuobjdump Triton ships); where ctriton's PTX divides with div.rn.f32 (IEEE)
and Triton's does not (Triton lowers an fp32 `/` to div.full.f32), it also
runs ctriton's PTX with div.full.f32 in its place. --keep-ptx DIR keeps
both PTX texts of every kernel.
"""
import argparse
import collections
import importlib
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

D16 = {"divisibility": 16}
BIG = ("lib.matmul-128x256x64", "lib.attn_fwd")


def load_bench_kernels(impl="ctriton"):
    """bench/kernels_src.py with triton/tl bound to the package impl."""
    spec = importlib.util.spec_from_file_location("kernels_src_" + impl,
                                                  os.path.join(HERE, "kernels_src.py"))
    m = importlib.util.module_from_spec(spec)
    m.triton, m.tl = importlib.import_module(impl), importlib.import_module(impl + ".language")
    spec.loader.exec_module(m)
    return m


def kernels_module(name, impl="ctriton"):
    """kernels/<name>.py; for impl "triton", with `import ctriton` bound to
    Triton (the process must not use ctriton itself)."""
    if impl != "ctriton":
        lib = importlib.import_module(impl)
        sys.modules.setdefault("ctriton", lib)
        sys.modules.setdefault("ctriton.language", importlib.import_module(impl + ".language"))
        if sys.modules["ctriton"] is not lib:
            raise RuntimeError("kernels/ bound to both ctriton and " + impl)
    return importlib.import_module("kernels." + name)


def sig(spec):
    """"x_ptr:*fp32 n:i32 ..." -> {"x_ptr": "*fp32", "n": "i32", ...}."""
    return dict(p.split(":") for p in spec.split())


def d16(*names):
    return {n: D16 for n in names}


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


def cases(impl="ctriton"):
    """name -> (function, signature, constexprs, attrs, options); the
    functions of the package impl ("ctriton" or "triton")."""
    b = load_bench_kernels(impl)
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
    va = kernels_module("vector_add", impl)
    out["lib.add"] = (va.add_kernel, sig("x_ptr:*fp32 y_ptr:*fp32 output_ptr:*fp32 n_elements:i32"),
                      {"BLOCK_SIZE": 1024}, d16("x_ptr", "y_ptr", "output_ptr", "n_elements"),
                      {"num_warps": 4})
    sm = kernels_module("softmax", impl)
    out["lib.softmax"] = (sm.softmax_kernel,
                          {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                           "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                          {"BLOCK_SIZE": 1024, "num_stages": 4},
                          {"output_ptr": D16, "input_ptr": D16}, {"num_warps": 8})
    dr = kernels_module("dropout", impl)
    out["lib.dropout"] = (dr.seeded_dropout_kernel,
                          sig("x_ptr:*fp32 output_ptr:*fp32 n_elements:i32 p:fp32 seed:i32"),
                          {"BLOCK_SIZE": 1024}, d16("x_ptr", "output_ptr", "n_elements"),
                          {"num_warps": 4})
    mm = kernels_module("matmul", impl)
    mm_sig = dict({k: "*fp16" for k in ("a_ptr", "b_ptr", "c_ptr")},
                  **{k: "i32" for k in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")})
    mm_attrs = d16("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                   "stride_cm")
    out["lib.matmul"] = (mm.matmul_kernel, mm_sig,
                         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": 128,
                          "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                          "ACTIVATION": "leaky_relu"},
                         mm_attrs, {"num_warps": 4, "num_stages": 4})
    # the tutorial's fp16 configuration for Hopper
    out["lib.matmul-128x256x64"] = (mm.matmul_kernel, mm_sig,
                                    {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1,
                                     "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256,
                                     "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "ACTIVATION": ""},
                                    mm_attrs, {"num_warps": 8, "num_stages": 3})
    ln = kernels_module("layernorm", impl)
    out["lib.layernorm"] = (ln.layer_norm_fwd,
                            {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16",
                             "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32",
                             "eps": "fp32"},
                            {"BLOCK_SIZE": 1024}, {"X": D16, "Y": D16, "W": D16, "B": D16},
                            {"num_warps": 8})
    out["lib.layernorm_bwd_dx"] = (
        ln.layer_norm_bwd_dx_fused,
        sig("DX:*fp16 DY:*fp16 DW:*fp16 DB:*fp16 X:*fp16 W:*fp16 Mean:*fp32 Rstd:*fp32 "
            "Lock:*i32 stride:i32 N:i32"),
        {"GROUP_SIZE_M": 64, "BLOCK_SIZE_N": 1024},
        d16("DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd", "Lock", "stride", "N"),
        {"num_warps": 8})
    out["lib.layernorm_bwd_dwdb"] = (
        ln.layer_norm_bwd_dwdb, sig("DW:*fp16 DB:*fp16 FINAL_DW:*fp16 FINAL_DB:*fp16 M:i32 N:i32"),
        {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128},
        d16("DW", "DB", "FINAL_DW", "FINAL_DB", "M", "N"), {"num_warps": 4})
    at = kernels_module("attention", impl)
    s, cx = attn_fwd_sig()
    out["lib.attn_fwd"] = (at.attn_fwd, s, cx,
                           {n: D16 for n, t in s.items() if n != "sm_scale"},
                           {"num_warps": 8, "num_stages": 3})
    # no divisibility known (a launch whose strides are not multiples of 16)
    out["lib.attn_fwd-nodiv"] = (at.attn_fwd, s, cx, {}, {"num_warps": 8, "num_stages": 3})
    out["lib.attn_bwd_pre"] = (at.attn_bwd_preprocess,
                               sig("O:*fp16 DO:*fp16 Delta:*fp32 Z:i32 H:i32 N_CTX:i32"),
                               {"BLOCK_M": 128, "HEAD_DIM": 64},
                               d16("O", "DO", "Delta", "Z", "H", "N_CTX"), {"num_warps": 4})
    bwd = sig("Q:*fp16 K:*fp16 V:*fp16 sm_scale:fp32 DO:*fp16 DQ:*fp16 DK:*fp16 DV:*fp16 "
              "M:*fp32 D:*fp32 stride_z:i32 stride_h:i32 stride_tok:i32 H:i32 N_CTX:i32")
    out["lib.attn_bwd"] = (at.attn_bwd, bwd,
                           {"stride_d": 1, "BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128,
                            "BLOCK_N2": 32, "BLK_SLICE_FACTOR": 2, "HEAD_DIM": 64},
                           {n: D16 for n in bwd if n != "sm_scale"},
                           {"num_warps": 4, "num_stages": 5})
    # the LLTM kernels as bench/lib_gpu.py's large case launches them on Hopper
    # (B 4096, S 1024, I 1024, tf32): contiguous rows, sizes multiples of 16
    lt = kernels_module("lltm", impl)
    f32 = " ".join(f"{n}:*fp32" for n in ("input_ptr", "w_ptr", "bias_ptr", "old_h_ptr",
                                          "old_cell_ptr", "new_h_ptr", "new_cell_ptr",
                                          "in_gate_ptr", "out_gate_ptr", "cand_ptr"))
    s = sig(f32 + " B:i32 S:i32 I:i32 stride_in:i32 stride_w0:i32 stride_h:i32 stride_c:i32")
    out["lib.lltm_fwd"] = (lt.lltm_fwd_kernel, s,
                           {"stride_w1": 1, "BLOCK_B": 128, "BLOCK_S": 64, "BLOCK_K": 32,
                            "PREC": "tf32"},
                           {n: D16 for n in s}, {"num_warps": 8, "num_stages": 3})
    f32 = " ".join(f"{n}:*fp32" for n in ("grad_h_ptr", "grad_cell_ptr", "new_cell_ptr",
                                          "in_gate_ptr", "out_gate_ptr", "cand_ptr",
                                          "d_gates_ptr", "d_gates_t_ptr", "d_old_cell_ptr",
                                          "d_bias_part_ptr"))
    s = sig(f32 + " B:i32 S:i32 stride_gh:i32 stride_gc:i32")
    out["lib.lltm_bwd"] = (lt.lltm_bwd_gates_kernel, s, {"BLOCK_B": 32, "BLOCK_S": 64},
                           {n: D16 for n in s}, {"num_warps": 4})
    s = sig("part_ptr:*fp32 out_ptr:*fp32 rows:i32 n:i32")
    out["lib.lltm_bias_reduce"] = (lt.lltm_bias_reduce_kernel, s,
                                   {"BLOCK_R": 16, "BLOCK_N": 128}, {n: D16 for n in s},
                                   {"num_warps": 4})
    s = sig("src_ptr:*fp32 dst_ptr:*fp32 R:i32 C:i32 stride_sr:i32 stride_dst:i32")
    out["lib.transpose"] = (lt.transpose_kernel, s,
                            {"stride_sc": 1, "BLOCK_R": 64, "BLOCK_C": 64}, {n: D16 for n in s},
                            {"num_warps": 4})
    s = sig("a_ptr:*fp32 b_ptr:*fp32 c_ptr:*fp32 M:i32 N:i32 K:i32 stride_am:i32 "
            "stride_bn:i32 stride_cm:i32")
    out["lib.matmul_f32"] = (lt.matmul_f32_kernel, s,
                             {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1, "BLOCK_M": 128,
                              "BLOCK_N": 256, "BLOCK_K": 32, "GROUP_M": 8, "PREC": "tf32"},
                             {n: D16 for n in s}, {"num_warps": 8, "num_stages": 3})
    ssd = kernels_module("mamba2_ssd", impl)
    ints = ("seqlen nheads heads_per_group headdim dstate nchunks").split()
    strides = lambda *ts: [f"s{t}_{d}" for t, ds in ts for d in ds]  # noqa: E731
    # as a launch with contiguous torch tensors specializes it: unit strides
    # are constants, the other strides, headdim and dstate multiples of 16
    unit = {"sx_p": 1, "sdt_h": 1, "sb_n": 1, "sc_n": 1, "sy_p": 1}
    ssd_d16 = lambda s: {n: D16 for n in s  # noqa: E731
                         if n.endswith("_ptr") or n in ("headdim", "dstate", "dim")
                         or (n[0] == "s" and "_" in n and n not in unit)}
    ssd_sig = lambda ptrs, ts: sig(  # noqa: E731
        " ".join(f"{n}:*fp32" for n in ptrs)
        + "".join(f" {n}:i32" for n in ints + strides(*ts)))
    ssd_cx = {"CHUNK": 64, "BLOCK_P": 64, "BLOCK_N": 64, "PREC": "ieee"}
    s = ssd_sig(("x_ptr", "dt_ptr", "a_ptr", "b_ptr", "states_ptr", "cum_ptr"),
                (("x", "blhp"), ("dt", "blh"), ("b", "blgn")))
    out["lib.ssd_chunk_state"] = (ssd.ssd_chunk_state_kernel, s,
                                  dict(ssd_cx, **{n: 1 for n in unit if n in s}), ssd_d16(s),
                                  {"num_warps": 4})
    s = sig("states_ptr:*fp32 cum_ptr:*fp32 final_ptr:*fp32 dim:i32 nchunks:i32")
    out["lib.ssd_state_pass"] = (ssd.ssd_state_pass_kernel, s, {"CHUNK": 64, "BLOCK": 1024},
                                 ssd_d16(s), {"num_warps": 4})
    # the benchmark's case: one group for all heads, so C B^T is made once
    # per (chunk, group) and the scan reads it
    s = sig("b_ptr:*fp32 c_ptr:*fp32 cb_ptr:*fp32 seqlen:i32 ngroups:i32 dstate:i32 nchunks:i32 "
            + " ".join(f"{n}:i32" for n in strides(("b", "blgn"), ("c", "blgn"))))
    out["lib.ssd_chunk_cb"] = (ssd.ssd_chunk_cb_kernel, s,
                               {"CHUNK": 64, "BLOCK_N": 32, "PREC": "ieee", "sb_n": 1, "sc_n": 1},
                               ssd_d16(s), {"num_warps": 8})
    s = ssd_sig(("x_ptr", "dt_ptr", "b_ptr", "c_ptr", "y_ptr", "states_ptr", "cum_ptr", "cb_ptr"),
                (("x", "blhp"), ("dt", "blh"), ("b", "blgn"), ("c", "blgn"), ("y", "blhp")))
    out["lib.ssd_chunk_scan"] = (ssd.ssd_chunk_scan_kernel, s,
                                 dict(ssd_cx, BLOCK_N=32, SHARED_CB=True, **unit),
                                 ssd_d16(s), {"num_warps": 8})
    return out


def source(case, impl="ctriton"):
    fn, sig, cx, attrs, _ = case
    sig = dict(sig)
    for k in cx:
        sig[k] = "constexpr"
    if impl == "ctriton":
        from ctriton.compiler import ASTSource
        return ASTSource(fn, sig, cx, attrs)
    # Triton: attributes keyed by the argument's index path
    from triton.compiler import ASTSource
    tattrs = {(fn.arg_names.index(n),): [["tt." + a, v] for a, v in d.items()]
              for n, d in attrs.items()}
    return ASTSource(fn, sig, cx, tattrs)


COLD = ("key", "frontend", "parse", "verify", "ttir", "ttgir", "llir", "opt", "emit", "ptxas", "cpu",
        "cache_write", "total")  # "cpu": the CPU backend's stage
HIT = ("key", "cache_read", "load", "total")
TRITON_STAGES = ("make_ir", "ttir", "ttgir", "llir", "ptx", "cubin", "store", "total",
                 "cpu time")


def cpu_now():
    """CPU seconds of this process (all threads) and its finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + r.ru_utime + r.ru_stime


def cold_once(case, target):
    """(stage times, n_regs, ptx) of one ctriton compile with an empty
    cache; "wall" is the wall time of ctriton.compile(), "cpu time" its CPU
    time (ptxas included)."""
    import ctriton
    os.environ["CTRITON_ALWAYS_COMPILE"] = "1"
    src = source(case)
    c, t = cpu_now(), time.perf_counter()
    k = ctriton.compile(src, target=target, options=case[4])
    wall, cpu = (time.perf_counter() - t) * 1e3, (cpu_now() - c) * 1e3
    return dict(k.times, wall=wall, **{"cpu time": cpu}), k.n_regs, k.asm.get("ptx")


def hits(case, target, reps):
    """Per stage, the minimum over reps of a disk-cache hit."""
    import ctriton
    os.environ["CTRITON_ALWAYS_COMPILE"] = "0"
    ctriton.compile(source(case), target=target, options=case[4])  # fill the cache
    hit = {}
    for _ in range(reps):
        k = ctriton.compile(source(case), target=target, options=case[4])
        for s, v in k.times.items():
            hit[s] = min(hit.get(s, v), v)
    return hit


def keep_min(best, times):
    for s, v in times.items():
        best[s] = min(best.get(s, v), v)


def table(title, cols, rows, fmt="12.2f"):
    w = max(len(n) for n in rows) + 2
    width = int(fmt.split(".")[0])
    print(title)
    print(f"{'kernel':{w}s}" + "".join(f"{c:>{width}s}" for c in cols))
    for name, t in rows.items():
        print(f"{name:{w}s}" + "".join(f"{t[c]:{fmt}}" if isinstance(t.get(c), (int, float))
                                       else f"{t.get(c, '-'):>{width}}" for c in cols))
    print(flush=True)


# -- Triton, in a child process -----------------------------------------------

def triton_child(args):
    """Compiles kernels with Triton, one compile per request: reads lines
    {"name": kernel, "dump": PTX file or null} from stdin and answers each
    with one JSON line {stage: ms, "total": wall ms, "cpu time": ms} or
    {"error": text}. The first line it prints names Triton's version and
    tools."""
    tmp = tempfile.mkdtemp(prefix="ctriton-bench-triton-")
    os.environ["TRITON_CACHE_DIR"] = tmp
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    import triton
    from triton.backends.compiler import GPUTarget
    triton.knobs.compilation.always_compile = True
    stages = {}

    def listener(src, metadata, metadata_group, times, cache_hit):
        stages["make_ir"] = times.ir_initialization / 1e3
        for name, us in times.lowering_stages:
            stages[name] = us / 1e3
        stages["store"] = times.store_results / 1e3

    triton.knobs.compilation.listener = listener
    target = GPUTarget("cuda", args.arch, 32)
    try:
        cs = cases("triton")
        print(json.dumps({"version": triton.__version__, "ptxas": triton.knobs.nvidia.ptxas.path,
                          "cuobjdump": triton.knobs.nvidia.cuobjdump.path}), flush=True)
        for line in sys.stdin:
            req = json.loads(line)
            case = cs[req["name"]]
            try:
                src = source(case, "triton")
                stages.clear()
                c, t = cpu_now(), time.perf_counter()
                k = triton.compile(src, target=target, options=case[4])
                wall, cpu = (time.perf_counter() - t) * 1e3, (cpu_now() - c) * 1e3
                out = dict(stages, total=wall, **{"cpu time": cpu})
                if req.get("dump"):
                    with open(req["dump"], "w") as f:
                        f.write(k.asm["ptx"])
            except Exception as e:  # noqa: BLE001 - reported per kernel
                first = (str(e).strip().splitlines() or [""])[0][:200]
                out = {"error": f"{type(e).__name__}: {first}"}
            print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class TritonChild:
    """The Triton child process of triton_child()."""

    def __init__(self, py, arch, tmp):
        self.log = open(os.path.join(tmp, "triton-child.log"), "w+")
        self.p = subprocess.Popen([py, os.path.abspath(__file__), "--triton-child", "--arch",
                                   str(arch)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, text=True, env=triton_env())
        self.info = self._read()

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            self.log.seek(0)
            sys.exit(f"the Triton child stopped:\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def compile(self, name, dump=None):
        self.p.stdin.write(json.dumps({"name": name, "dump": dump}) + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait()
        self.log.close()


def find_triton_python(args):
    """The python to run Triton with, or None."""
    if args.no_triton:
        return None
    py = args.triton_python or sys.executable
    p = subprocess.run([py, "-c", "import triton.backends.nvidia.compiler, triton.knobs"],
                       capture_output=True, env=triton_env())
    if p.returncode:
        if args.triton_python:
            sys.exit(f"{py}: cannot import Triton:\n{p.stderr.decode()}")
        return None
    return py


def triton_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    return env



# -- the breakdown: ptxas on both PTX texts -----------------------------------

def arch_name(arch):
    return f"sm_{arch}{'a' if arch == 90 else ''}"


def run_ptxas(ptxas, flags, src, out):
    """(wall ms, CPU ms, ptxas -v log) of one ptxas run on the file src, or
    (None, None, error)."""
    c, t = cpu_now(), time.perf_counter()
    p = subprocess.run([ptxas, *flags, src, "-o", out], capture_output=True, text=True)
    ms, cpu = (time.perf_counter() - t) * 1e3, (cpu_now() - c) * 1e3
    if p.returncode:
        return None, None, (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return ms, cpu, p.stderr + p.stdout


def ptxas_info(log):
    m = re.search(r"Used (\d+) registers", log)
    s = re.search(r"(\d+) bytes spill stores", log)
    return (int(m.group(1)) if m else None), (int(s.group(1)) if s else None)


def ptx_stats(ptx):
    """Size, instruction count and the opcode histogram of a PTX text."""
    ops = collections.Counter()
    n = 0
    body = False
    for ln in ptx.splitlines():
        s = ln.strip()
        if s.startswith(".entry") or s.startswith(".visible .entry"):
            body = True
        if not body or not s or s.startswith(("//", ".", "{", "}", "$", ")", "(")) \
                or s.endswith(":"):
            continue
        if s.startswith("@"):
            s = s.split(None, 1)[1] if " " in s else s
        op = s.split()[0].rstrip(";")
        ops[op] += 1
        n += 1
    return {"bytes": len(ptx), "lines": ptx.count("\n"), "instructions": n, "ops": ops}


def sass_count(cubin, cuobjdump):
    """The number of SASS instructions in a cubin, or None."""
    cuobjdump = cuobjdump or shutil.which("cuobjdump")
    if not cuobjdump:
        return None
    try:
        p = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
    except OSError:
        return None
    if p.returncode:
        return None
    return sum(1 for ln in p.stdout.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln))


def op_family(op):
    """ld.global.v4.b32 -> ld.global; mma.sync... -> mma; wgmma.x -> wgmma."""
    parts = op.split(".")
    if parts[0] in ("ld", "st", "cp", "atom", "red") and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def breakdown(names, arch, reps, ct_ptx, tr_ptx, ct_cold, tr_times, tools):
    import ctriton
    ours = ctriton._C.ptxas_path()
    a = arch_name(arch)
    flags = {"ctriton": ["-v", "-arch", a], "Triton": ["-lineinfo", "-v", f"--gpu-name={a}"]}
    ptxas = {"ctriton": ours, "Triton": tools.get("ptxas")}
    for name in names:
        ptxs = {"ctriton": ct_ptx.get(name), "Triton": tr_ptx.get(name)}
        if not all(ptxs.values()):
            print(f"breakdown {name}: no PTX from both\n")
            continue
        print(f"breakdown: {name} ({arch_name(arch)})")
        c = ct_cold[name]
        print("  ctriton stages, ms: " + ", ".join(f"{s} {c[s]:.1f}" for s in COLD if s in c)
              + f"; compile() {c['wall']:.1f}")
        t = tr_times[name]
        print("  Triton stages, ms:  " + ", ".join(f"{s} {t[s]:.1f}" for s in TRITON_STAGES
                                                     if s in t))
        stats = {k: ptx_stats(v) for k, v in ptxs.items()}
        for k, s in stats.items():
            ver = re.search(r"^\.version (\S+)", ptxs[k], re.M)
            print(f"  {k} PTX: {s['bytes']} bytes, {s['lines']} lines, {s['instructions']} "
                  f"instructions (.version {ver.group(1) if ver else '?'})")
        byfam = {k: collections.Counter() for k in stats}
        for k, s in stats.items():
            for op, n in s["ops"].items():
                byfam[k][op_family(op)] += n
        fams = set(byfam["ctriton"]) | set(byfam["Triton"])
        top = sorted(fams, key=lambda f: -max(byfam[k][f] for k in byfam))[:16]
        print("  PTX instructions by kind (ctriton / Triton): "
              + ", ".join(f"{f} {byfam['ctriton'][f]}/{byfam['Triton'][f]}" for f in top))
        if "div.rn.f32" in ptxs["ctriton"] and "div.rn.f32" not in ptxs["Triton"]:
            # Triton lowers an fp32 `/` to div.full.f32 (approximate), ctriton
            # to div.rn.f32 (IEEE: a slow path per division in the SASS)
            ptxs["ctriton, div.full"] = ptxs["ctriton"].replace("div.rn.f32", "div.full.f32")
        with tempfile.TemporaryDirectory(prefix="ctriton-bench-ptxas-") as tmp:
            runs = {}  # (PTX, ptxas) -> [src, cubin, [wall], [cpu], log or error]
            for i, (pk, ptx) in enumerate(ptxs.items()):
                src = os.path.join(tmp, f"k{i}.ptx")
                with open(src, "w") as f:
                    f.write(ptx)
                for tk, tool in ptxas.items():
                    if tool:
                        runs[pk, tk] = [src, os.path.join(tmp, f"k{i}-{tk}.cubin"), [], [], ""]
            for _ in range(reps):  # interleaved: the machine's load moves
                for (pk, tk), r in runs.items():
                    if r[4] is None or (r[4] and not r[2]):
                        continue  # failed before
                    ms, cpu, log = run_ptxas(ptxas[tk], flags[tk], r[0], r[1])
                    if ms is None:
                        r[4] = log
                        continue
                    r[2].append(ms)
                    r[3].append(cpu)
                    r[4] = log
            print(f"  ptxas, ms (min of {reps}): the PTX of each, the ptxas (and flags) of each")
            for (pk, tk), (src, cubin, walls, cpus, log) in runs.items():
                if not walls:
                    print(f"    {pk} PTX, {tk} ptxas: failed: {log}")
                    continue
                regs, spill = ptxas_info(log)
                sass = sass_count(cubin, tools.get("cuobjdump"))
                print(f"    {pk + ' PTX,':24s} {tk:8s} ptxas: {min(walls):7.1f} wall "
                      f"{min(cpus):7.1f} cpu; registers {regs}, spill stores {spill}, "
                      f"SASS instructions {sass}")
        print(flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--cpu", action="store_true", help="the CPU backend instead of CUDA")
    ap.add_argument("-k", default="", help="only kernels whose name contains this")
    ap.add_argument("--triton-python", help="a python that imports Triton (default: this one)")
    ap.add_argument("--no-triton", action="store_true", help="ctriton alone")
    ap.add_argument("--breakdown", default=",".join(BIG),
                    help="kernels to break down (ptxas on both PTX texts); '' for none")
    ap.add_argument("--keep-ptx", metavar="DIR",
                    help="write each kernel's PTX (NAME.ctriton.ptx, NAME.triton.ptx) to DIR")
    ap.add_argument("--triton-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    if args.triton_child:
        return triton_child(args)
    from ctriton.backends.compiler import GPUTarget
    target = GPUTarget("cpu", 0, 1) if args.cpu else GPUTarget("cuda", args.arch, 32)
    tmp = tempfile.mkdtemp(prefix="ctriton-bench-cache-")
    os.environ["CTRITON_CACHE_DIR"] = tmp
    tr = None
    try:
        cs = {n: c for n, c in cases().items() if args.k in n}
        if not cs:
            ap.error(f"no kernel name contains {args.k!r}")
        py = None if args.cpu else find_triton_python(args)
        tr = TritonChild(py, args.arch, tmp) if py else None
        # Warm the processes: LLVM initialisation, first-use allocations.
        first = next(iter(cs))
        cold_once(cs[first], target)
        if tr:
            tr.compile(first)
        # ctriton and Triton in turns, compile by compile: the machine's load
        # moves
        cold, hit, regs, ptx, tk = {}, {}, {}, {}, {}
        dump = os.path.join(tmp, "triton-ptx")
        os.makedirs(dump)
        for name, case in cs.items():
            cold[name], tk[name] = {}, {}
            for r in range(args.reps):
                times, regs[name], ptx[name] = cold_once(case, target)
                keep_min(cold[name], times)
                if tr and "error" not in tk[name]:
                    t = tr.compile(name, os.path.join(dump, name + ".ptx") if r == 0 else None)
                    if "error" in t:
                        tk[name] = t
                    else:
                        keep_min(tk[name], t)
            hit[name] = hits(case, target, args.reps)
        cols = [c for c in COLD if any(c in t for t in cold.values())] + ["cpu time"]
        table(f"ctriton cold compile, ms (min of {args.reps}), target {target.backend} "
              f"{target.arch}", cols, cold)
        table(f"ctriton disk-cache hit, ms (min of {args.reps})", HIT, hit)
        if args.cpu:
            return
        print("registers (ptxas -v): " + ", ".join(f"{n} {r}" for n, r in regs.items()),
              end="\n\n", flush=True)
        if tr is None:
            if not args.no_triton:
                print("Triton: not importable here (--triton-python PY names a python with it)")
            return
        version = tr.info["version"]
        rows = {}
        for name in cs:
            t = tk.get(name, {})
            c = cold[name]
            r = {"ctriton": c["wall"], "ctriton cpu": c["cpu time"]}
            if "total" in t:
                r["Triton"] = t["total"]
                r["Triton cpu"] = t["cpu time"]
                r["ctriton/Triton"] = c["wall"] / t["total"]
                r["cpu c/T"] = c["cpu time"] / t["cpu time"]
                r["ptxas c/T"] = c.get("ptxas", 0) / t["cubin"] if t.get("cubin") else "-"
            else:
                r["Triton"] = "error"
            rows[name] = r
        table(f"compile time, ms (min of {args.reps}, fresh cache, warm process, interleaved), "
              f"ctriton vs Triton {version}, target cuda {args.arch}; "
              "cpu: CPU time, ptxas included",
              ("ctriton", "Triton", "ctriton/Triton", "ctriton cpu", "Triton cpu", "cpu c/T",
               "ptxas c/T"), rows, fmt="15.2f")
        for name, t in tk.items():
            if "error" in t:
                print(f"  Triton cannot compile {name}: {t['error']}")
        table(f"Triton {version} stages, ms (min of {args.reps})", TRITON_STAGES,
              {n: t for n, t in tk.items() if "error" not in t})
        tr_ptx = {}
        for name in cs:
            p = os.path.join(dump, name + ".ptx")
            if os.path.exists(p):
                with open(p) as f:
                    tr_ptx[name] = f.read()
        if args.keep_ptx:
            os.makedirs(args.keep_ptx, exist_ok=True)
            texts = [(n + ".ctriton", t) for n, t in ptx.items()]
            texts += [(n + ".triton", t) for n, t in tr_ptx.items()]
            for name, text in texts:
                if text:
                    with open(os.path.join(args.keep_ptx, name + ".ptx"), "w") as f:
                        f.write(text)
        names = [n for n in args.breakdown.split(",") if n in cs]
        breakdown(names, args.arch, args.reps, ptx, tr_ptx, cold, tk, tr.info)
    finally:
        if tr:
            tr.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
