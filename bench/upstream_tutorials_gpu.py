"""Upstream Triton tutorials 03 (matrix multiplication), 06 (fused
attention), 08 (grouped GEMM) and 09 (persistent matmul) side by side on the GPU: each tutorial's own source,
unmodified, loaded twice into one process, once with `triton` bound to
ctriton and once to Triton, every result checked against torch, then timed
(medians of do_bench). The tutorials are not part of this project: point
--tutorials at the `python/tutorials` folder of a snapshot of Triton's
repository (see bench/upstream/README.md).

    python3 bench/upstream_tutorials_gpu.py --tutorials SNAPSHOT/python/tutorials [--quick] [--out FILE]

Loading a tutorial runs its module-level code (tutorials 03 and 08 check
their kernels against torch there); the `__main__` parts (plots, proton
reports) are not run, nor tutorial 03's module-level `benchmark.run(...)`
(its sweep of 31 sizes).
"""
import argparse
import os
import re
import statistics
import sys

import torch

import ctriton

try:
    import triton
except ImportError:
    triton = None

ROWS = []
CASE_FILTER = None  # --case: a regular expression the case names must match
ROUNDS = 1  # --rounds


def load(path, impl):
    """A fresh module of the tutorial at path, its `triton` imports bound to
    impl ("ctriton" or "triton")."""
    src = open(path).read()
    # tutorial 03 runs its whole benchmark sweep at module level
    src = re.sub(r"^benchmark\.run\(.*$", "pass", src, flags=re.M)
    if impl == "ctriton":
        src = re.sub(r"^import triton\.language as tl$", "import ctriton.language as tl", src, flags=re.M)
        src = re.sub(r"^import triton$", "import ctriton as triton", src, flags=re.M)
        src = re.sub(r"^import triton\.(\S+) as (\w+)$", r"import ctriton.\1 as \2", src, flags=re.M)
        src = re.sub(r"^from triton(\.\S+)? import", lambda m: f"from ctriton{m.group(1) or ''} import", src,
                     flags=re.M)
    name = f"tut_{os.path.basename(path)[:2]}_{impl}"
    mod = type(sys)(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def bench(fn):
    return ctriton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def check(name, got, want, tol=1e-2):
    got = [got] if torch.is_tensor(got) else list(got)
    want = [want] if torch.is_tensor(want) else list(want)
    for g, w in zip(got, want):
        err = ((g.float() - w.float()).norm() / w.float().norm().clamp_min(1e-30)).item()
        if not err < tol:
            return f"{name} rel.err {err:.2e}"
    return None


def row(case, times, flops, bad):
    tf = {k: flops / (t * 1e-3) / 1e12 for k, t in times.items()}
    ratio = times["triton"] / times["ctriton"] if "triton" in times and "ctriton" in times else None
    if "torch" in times and "ctriton" in times:
        bad = list(bad) + [f"vs torch {times['torch'] / times['ctriton']:.2f}x"]
    cells = " | ".join(f"{k} {v:7.1f}" for k, v in tf.items())
    info = ("rounds ", "vs torch ")
    wrong = [b for b in bad if not b.startswith(info)]
    note = " ".join(x for x in ["WRONG: " + ", ".join(wrong) if wrong else ""] +
                    [b for b in bad if b.startswith(info)] if x)
    print(f"{case:52s} {cells} TFLOP/s | " + (f"vs triton {ratio:.2f}x " if ratio else "") + note, flush=True)
    ROWS.append((case, tf, ratio, note))


def run_case(case, mods, make, ref, flops, tol=1e-2):
    """make(mod) -> a no-argument launch returning the result."""
    if CASE_FILTER and not re.search(CASE_FILTER, case):
        return False
    bad, fns = [], {}
    for impl, m in mods.items():
        try:
            f = make(m)
            out = f()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            print(f"  {impl} {case}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            bad.append(f"{impl} failed")
            continue
        b = check(impl, out, ref, tol)
        if b:
            bad.append(b)
        fns[impl] = f
    # ROUNDS rounds, the sides in turn (A B, B A, ...): the clocks' drift
    # over a call (power, heat) falls on both alike; medians
    got = {k: [] for k in fns}
    for r in range(ROUNDS):
        for k, f in (list(fns.items()) if r % 2 == 0 else list(fns.items())[::-1]):
            got[k].append(bench(f))
    times = {k: statistics.median(v) for k, v in got.items()}
    spread = [t / c for t, c in zip(got.get("triton", []), got.get("ctriton", []))]
    if len(spread) > 1:
        bad.append(f"rounds {min(spread):.2f}-{max(spread):.2f}x")
    row(case, times, flops, bad)
    return True


class _Torch:
    """torch.matmul (cuBLAS) as a third side of tutorial 03's cases."""
    matmul = staticmethod(torch.matmul)


SIZES03 = None  # --n03: the square sizes of tutorial 03's cases


def tutorial03(mods, quick):
    """The tutorial's autotuned `matmul` (its own configuration list, each
    side choosing its best), fp16 next to cuBLAS, then its fp8 path (A and
    B e5m2, B stored transposed, as the tutorial's benchmark builds them)."""
    for fp8 in (False, True):
        if fp8 and not hasattr(torch, "float8_e5m2"):
            continue
        for n in SIZES03 or ((4096,) if quick else (2048, 4096, 8192)):
            torch.manual_seed(0)
            a = torch.randn((n, n), device="cuda", dtype=torch.float16)
            b = torch.randn((n, n), device="cuda", dtype=torch.float16)
            sides = dict(mods)
            if fp8:
                a = a.to(torch.float8_e5m2)
                b = b.T.to(torch.float8_e5m2)
                ref = torch.matmul(a.to(torch.float16), b.to(torch.float16))
            else:
                ref = torch.matmul(a, b)
                sides["torch"] = _Torch
            if run_case(f"03 matmul {'fp8e5' if fp8 else 'fp16'} {n}^3", sides,
                        lambda m, a=a, b=b: (lambda: m.matmul(a, b)), ref, 2.0 * n ** 3):
                picked(mods, "matmul_kernel")


def pin06(mods, pin):
    """Both sides' autotuner reduced to one configuration (BM, BN, warps,
    stages), its earlier choices forgotten; None: the tutorial's own list."""
    for m in mods.values():
        at = m._attn_fwd
        if not hasattr(at, "_all_configs"):
            at._all_configs = list(at.configs)
        if pin is None:
            at.configs = list(at._all_configs)
        else:
            bm, bn, w, st = pin
            at.configs = [m.triton.Config(dict(BLOCK_M=bm, BLOCK_N=bn), num_stages=st, num_warps=w,
                                          pre_hook=m._host_descriptor_pre_hook)]
        at.cache = {}


def tutorial06(mods, quick, pins=(None,), heads=(64, 128), modes=(False, True), ws="tutorial", bwd=False):
    Z, H = 4, 32
    for pin in pins:
        pin06(mods, pin)
        tag = "" if pin is None else " [%dx%d w%d s%d]" % pin
        for D in heads:
            for causal in modes:
                if pin is not None and (pin[1] > D or (causal and pin[1] > pin[0])):
                    continue  # the tutorial's own rules (static_assert, prune)
                _tut06_case(mods, quick, D, causal, Z, H, tag, ws)
    if bwd:
        for D in heads:
            for causal in modes:
                _tut06_bwd_case(mods, quick, D, causal, Z, H)


def _tut06_bwd_case(mods, quick, D, causal, Z, H):
    """The tutorial's backward pass (its _attn_bwd_preprocess and _attn_bwd
    kernels, fixed configuration), timed as the tutorial does: the backward
    of one forward, gradients checked against torch SDPA's."""
    for N in (4096,) if quick else (1024, 4096):
        q, k, v = (torch.empty(Z, H, N, D, device="cuda", dtype=torch.float16).normal_(0.0, 0.5).requires_grad_()
                   for _ in range(3))
        do = torch.randn_like(q)
        sm = 0.5
        ref_o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm)
        ref = torch.autograd.grad(ref_o, (q, k, v), do)
        flops = 2.5 * 4.0 * Z * H * N * N * D * (0.5 if causal else 1.0)

        def make(m, c=causal):
            o = m.attention(q, k, v, c, sm, False)
            return lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
        run_case(f"06 attention bwd D{D} {'causal' if causal else 'full'} N{N}", mods, make, ref, flops)


def _tut06_case(mods, quick, D, causal, Z, H, tag, wsmode):
    for N in (4096,) if quick else (1024, 4096, 16384):
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        sm = 1.3
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm)
        flops = 4.0 * Z * H * N * N * D * (0.5 if causal else 1.0)
        ws = not causal if wsmode == "tutorial" else wsmode == "on"  # the tutorial's choice on Hopper
        run_case(f"06 attention fwd D{D} {'causal' if causal else 'full'} N{N}{tag}{' ws' if ws else ''}", mods,
                 lambda m, q=q, k=k, v=v, c=causal, w=ws: (lambda: m.attention(q, k, v, c, sm, w)), ref, flops)


def pin08(mods, kernel, idx):
    """The autotuner of one tutorial-08 kernel reduced to its configuration
    number idx (the same on both sides: one source), its earlier choices
    forgotten; None: the whole list. Returns the configuration's label."""
    label = None
    for m in mods.values():
        at = getattr(m, kernel)
        if not hasattr(at, "_all_configs"):
            at._all_configs = list(at.configs)
        at.configs = list(at._all_configs) if idx is None else [at._all_configs[idx]]
        at.cache = {}
        if idx is not None:
            c = at._all_configs[idx]
            label = "%s w%d s%d" % ("x".join(str(v) for v in c.kwargs.values()), c.num_warps, c.num_stages)
    return label


def picked(mods, kernel):
    """Each side's autotuned choice for the last key, as a note."""
    out = []
    for impl, m in mods.items():
        at = getattr(m, kernel, None)
        c = getattr(at, "best_config", None)
        if c is not None:
            out.append("%s picked %s w%d s%d" % (impl, "x".join(str(v) for v in c.kwargs.values()),
                                                 c.num_warps, c.num_stages))
    if out:
        print("   ", "; ".join(out), flush=True)


def tutorial08(mods, quick, pins=None, sizes=None):
    """pins: None (autotuned), or the configuration numbers to time one by
    one (both kernels' lists; numbers past a list's end are skipped).
    sizes: the N of the groups' N x N x N GEMMs (the tutorial's own plot
    goes from 128 to 1024, where the epilogue is a larger part of a tile)."""
    for N in sizes or ((4096,) if quick else (1024, 4096)):
        g = 4
        A = [torch.rand((N, N), device="cuda", dtype=torch.float16) for _ in range(g)]
        B = [torch.rand((N, N), device="cuda", dtype=torch.float16) for _ in range(g)]
        ref = [a @ b for a, b in zip(A, B)]
        BT = [b.T.contiguous() for b in B]
        tma = all(hasattr(m, "group_gemm_tma_fn") and m.supports_tma() for m in mods.values())
        for kernel, name, make in (
                ("grouped_matmul_kernel", "08 grouped gemm", lambda m: (lambda: m.group_gemm_fn(A, B))),
                ("grouped_matmul_tma_kernel", "08 grouped gemm (TMA)", lambda m: (lambda: m.group_gemm_tma_fn(A, BT)))):
            if kernel.endswith("tma_kernel") and not tma:
                continue
            n = len(getattr(next(iter(mods.values())), kernel).configs)
            for idx in [None] if pins is None else [i for i in pins if i < n]:
                label = pin08(mods, kernel, idx)
                run_case(f"{name} {g} x {N}^3 fp16" + (f" [{label}]" if label else ""), mods, make, ref,
                         2.0 * g * N ** 3)
                if idx is None:
                    picked(mods, kernel)
            pin08(mods, kernel, None)


def pin09(mods, pin):
    """Every autotuned kernel of tutorial 09 reduced to its configurations
    with BLOCK_SIZE_M, _N, _K, warps and stages = pin (None: all of them)."""
    for m in mods.values():
        for at in vars(m).values():
            if not (hasattr(at, "configs") and hasattr(at, "cache")):
                continue
            if not hasattr(at, "_all_configs"):
                at._all_configs = list(at.configs)
            keep = list(at._all_configs)
            if pin is not None:
                bm, bn, bk, w, st = pin
                keep = [c for c in keep if (c.kwargs.get("BLOCK_SIZE_M"), c.kwargs.get("BLOCK_SIZE_N"),
                                            c.kwargs.get("BLOCK_SIZE_K"), c.num_warps, c.num_stages) == pin]
            at.configs = keep or list(at._all_configs)
            at.cache = {}


def tutorial09(mods, quick, pins=(None,)):
    for pin in pins:
        pin09(mods, pin)
        _tutorial09(mods, quick, "" if pin is None else " [%dx%dx%d w%d s%d]" % pin)
        for impl, m in mods.items():  # what each side's autotuner chose
            for name, at in vars(m).items():
                for key, c in (getattr(at, "cache", None) or {}).items() if hasattr(at, "configs") else ():
                    kw = c.kwargs
                    print(f"  {impl} {name}: {kw.get('BLOCK_SIZE_M')}x{kw.get('BLOCK_SIZE_N')}x"
                          f"{kw.get('BLOCK_SIZE_K')} w{c.num_warps} s{c.num_stages}"
                          f"{' subtile' if kw.get('EPILOGUE_SUBTILE') else ''}", flush=True)


K09 = None  # --k09: the K sizes of tutorial 09's cases
DTYPES09 = ("fp16",)  # --dtype09: fp16 and / or fp8 (the tutorial's --prec)


def _tutorial09(mods, quick, tag):
    for prec in DTYPES09:
        _tutorial09_prec(mods, quick, tag, prec)


def _tutorial09_prec(mods, quick, tag, prec):
    M = N = 8192
    fp8 = prec == "fp8"
    dt = torch.float8_e4m3fn if fp8 else torch.float16
    # fp8 (e4m3, 3 mantissa bits): C itself is fp8 (the kernels' FP8_OUTPUT),
    # one rounding of about 1/32 relative on average
    tol = 8e-2 if fp8 else 1e-2
    tag = tag + (" fp8" if fp8 else "")
    for K in K09 or ((4096,) if quick else (512, 4096)):
        # as the tutorial's bench: drawn in fp16, then converted
        a = torch.randn((M, K), device="cuda", dtype=torch.float16).to(dt)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16).to(dt)
        ref = a.float() @ b.float() if fp8 else a @ b
        bt = b.T.contiguous()  # as the tutorial: B stored N x K
        flops = 2.0 * M * N * K
        m0 = next(iter(mods.values()))
        run_case(f"09 matmul (naive) {M}x{N}x{K}{tag}", mods, lambda m: (lambda: m.matmul(a, bt.T)), ref, flops, tol)
        run_case(f"09 matmul persistent {M}x{N}x{K}{tag}", mods, lambda m: (lambda: m.matmul_persistent(a, bt.T)), ref,
                 flops, tol)
        if m0.HAS_HOST_TENSOR_DESC:
            # as the tutorial's own benchmark: no warp specialization with
            # host descriptors on Hopper (Triton 3.6's pass pipeline fails there)
            hopper = torch.cuda.get_device_capability()[0] == 9
            for ws in (False, True) if m0.HAS_WARP_SPECIALIZE and not hopper else (False,):
                run_case(f"09 matmul tma ws={ws} {M}x{N}x{K}{tag}", mods,
                         lambda m, ws=ws: (lambda: m.matmul_tma(a, bt, ws)), ref, flops, tol)
                run_case(f"09 matmul tma persistent ws={ws} {M}x{N}x{K}{tag}", mods,
                         lambda m, ws=ws: (lambda: m.matmul_tma_persistent(a, bt, ws)), ref, flops, tol)
        if m0.HAS_TENSOR_DESC:
            run_case(f"09 matmul descriptor persistent {M}x{N}x{K}{tag}", mods,
                     lambda m: (lambda: m.matmul_descriptor_persistent(a, bt, False)), ref, flops, tol)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tutorials", required=True, help="python/tutorials of a Triton snapshot")
    ap.add_argument("--only", choices=["03", "06", "08", "09"], action="append")
    ap.add_argument("--n03", help="03: the square sizes, comma-separated (default 2048,4096,8192; --quick 4096)")
    ap.add_argument("--quick", action="store_true", help="one size per case")
    ap.add_argument("--out")
    ap.add_argument("--pin", action="append", default=[],
                    help="06 only: one configuration BM,BN,WARPS,STAGES for both sides (repeatable)")
    ap.add_argument("--pin09", action="append", default=[],
                    help="09 only: BM,BN,BK,WARPS,STAGES, the configurations of the tutorial's lists both sides "
                         "keep (repeatable)")
    ap.add_argument("--pin08", help="08 only: configuration numbers of the tutorial's lists to time one by one "
                    "(comma-separated, or 'all')")
    ap.add_argument("--n08", help="08: the groups' N, comma-separated (default 4096; without --quick 1024,4096)")
    ap.add_argument("--heads", default="64,128", help="06: head dims")
    ap.add_argument("--modes", default="full,causal", help="06: full, causal or both")
    ap.add_argument("--ws", choices=["tutorial", "on", "off"], default="tutorial",
                    help="06: warp_specialize as the tutorial's benchmark sets it (full only), always, never")
    ap.add_argument("--bwd", action="store_true", help="06: also the backward pass")
    ap.add_argument("--warm", type=float, default=0, help="seconds of matmuls first (clocks up)")
    ap.add_argument("--case", help="only the cases whose names match this regular expression")
    ap.add_argument("--k09", help="09: K sizes, comma-separated (default 4096; without --quick 512,4096)")
    ap.add_argument("--dtype09", default="fp16",
                    help="09: fp16, fp8 or fp16,fp8 (the tutorial's --prec; fp8 stores C in fp8)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time each case this many times, the sides in turn; medians, and the ratio's range")
    a = ap.parse_args()
    global CASE_FILTER, ROUNDS, K09, DTYPES09, SIZES03
    CASE_FILTER = a.case
    SIZES03 = tuple(int(n) for n in a.n03.split(",")) if a.n03 else None
    ROUNDS = max(1, a.rounds)
    K09 = tuple(int(k) for k in a.k09.split(",")) if a.k09 else None
    DTYPES09 = tuple(a.dtype09.split(","))
    if any(d not in ("fp16", "fp8") for d in DTYPES09):
        ap.error("--dtype09: fp16, fp8 or fp16,fp8")
    impls = ["ctriton"] + (["triton"] if triton else [])
    print("devices:", torch.cuda.get_device_name(), "triton", getattr(triton, "__version__", None), flush=True)
    if a.warm:
        import time
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
        t0 = time.time()
        while time.time() - t0 < a.warm:
            x @ x
        torch.cuda.synchronize()
    files = {"03": "03-matrix-multiplication.py", "06": "06-fused-attention.py", "08": "08-grouped-gemm.py", "09": "09-persistent-matmul.py"}
    for key, fn in files.items():
        if a.only and key not in a.only:
            continue
        mods = {}
        for impl in impls:
            try:
                mods[impl] = load(os.path.join(a.tutorials, fn), impl)
            except Exception as e:  # noqa: BLE001
                print(f"  {impl} loading {fn}: {type(e).__name__}: {str(e)[:400]}", flush=True)
        if mods and key == "06":
            pins = [tuple(int(x) for x in p.split(",")) for p in a.pin] or [None]
            tutorial06(mods, a.quick, pins, tuple(int(h) for h in a.heads.split(",")),
                       tuple(m == "causal" for m in a.modes.split(",")), a.ws, a.bwd)
        elif mods and key == "08":
            pins = None if not a.pin08 else list(range(16)) if a.pin08 == "all" else \
                [int(x) for x in a.pin08.split(",")]
            tutorial08(mods, a.quick, pins, [int(x) for x in a.n08.split(",")] if a.n08 else None)
        elif mods and key == "09":
            tutorial09(mods, a.quick, [tuple(int(x) for x in p.split(",")) for p in a.pin09] or [None])
        elif mods:
            globals()[f"tutorial{key}"](mods, a.quick)
    if a.out and ROWS:
        with open(a.out, "w") as f:
            f.write("| case | " + " | ".join(f"{k} TFLOP/s" for k in impls) + " | vs Triton | note |\n")
            f.write("|---|" + "---|" * (len(impls) + 2) + "\n")
            for case, tf, ratio, note in ROWS:
                f.write(f"| {case} | " + " | ".join(f"{tf[k]:.1f}" if k in tf else "-" for k in impls) +
                        f" | {f'{ratio:.2f}x' if ratio else '-'} | {note} |\n")


if __name__ == "__main__":
    main()
