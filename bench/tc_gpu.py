"""Tensor-core kernels side by side on the GPU: ctriton vs Triton (the same
kernel source compiled by both, in one process) vs torch.

  - matmul: bench/kernels_src.py's `matmul` (Triton tutorial 03's kernel,
    masked K loads) at 2048^3, 4096^3, 8192^3 for several tile configs, fp16
    (and bf16 at 4096^3); every result checked against torch first;
  - tutorial 03's fp8 path (e5m2, B transposed), 128x256x128 and 128x128x128;
    with --only fp8, also B row-major ([K][N]);
  - the same kernel on int8 (B transposed, then row-major; int32 out; --only int8), beside
    torch._int_mm;
  - fused attention backward (causal): kernels/attention.py's
    attention_backward, checked against torch autograd of SDPA;
  - attention forward with K^T by tl.trans (--only trans: kernels_src.py's
    `attn_trans`), 128-, 64- and 32-row tiles;
  - dots that read their operands through other ops (--only operands:
    kernels_src.py's `mm_operand_ops`: int8 B dequantized, fp32 A cast,
    other != 0, tf32x3, int8 A cast; and a matmul written as sum(a[:, :, None] *
    b[None, :, :], 1), mm_mul_sum, also alone with --only mulsum);
  - fused attention forward: kernels/attention.py's `attn_fwd` (pointers)
    and `attn_fwd_tma` (descriptors made in the kernel; warp-specialized
    where the row says ws), Z4 H32 N4096 (--quick: Z2 H16 N2048), HEAD_DIM
    64 and 128, causal and not, a few configurations each (and each side's
    best); checked against torch SDPA.

Prints one row per case (TFLOP/s, ratios) and, with --out FILE, writes the
table as markdown. Medians of do_bench.

    python3 bench/tc_gpu.py [--quick] [--out bench/results/tc-h200.md]
"""
import argparse
import importlib.util
import os
import statistics
import sys

import torch

import ctriton
import ctriton.language as ctl

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROWS = []


def load_file(path, impl, tag):
    """A fresh module of path with `triton`/`tl` bound to impl (the file's own
    `import ctriton as triton` lines are rebound)."""
    src = open(path).read()
    if impl == "triton":
        src = src.replace("import ctriton.language as tl", "import triton.language as tl")
        src = src.replace("import ctriton as triton", "import triton")
    mod = type(sys)(f"{tag}_{impl}")
    mod.__file__ = path
    if impl == "ctriton":
        mod.triton, mod.tl = ctriton, ctl
    else:
        mod.triton, mod.tl = triton, tl
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def bench(fn):
    return ctriton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


ROUNDS = 1     # --rounds
SPREAD = []    # the last bench_rounds' per-round ratios (Triton time / ctriton time)


def bench_rounds(fns):
    """Medians over ROUNDS rounds of do_bench for each side, the sides taken
    in turn (A B, B A, A B, ...), so that the clocks' drift over a call
    (power, heat) falls on both alike; SPREAD gets each round's ratio."""
    got = {k: [] for k in fns}
    for r in range(ROUNDS):
        for k, f in (list(fns.items()) if r % 2 == 0 else list(fns.items())[::-1]):
            got[k].append(bench(f))
    SPREAD[:] = [t / c for t, c in zip(got.get("triton", []), got.get("ctriton", []))]
    return {k: statistics.median(v) for k, v in got.items()}


def report(name, times, flops, extra=""):
    tf = {k: flops / (t * 1e-3) / 1e12 for k, t in times.items()}
    cells = " | ".join(f"{k} {v:7.1f}" for k, v in tf.items())
    r = []
    if "triton" in times and "ctriton" in times:
        r.append(f"vs triton {times['triton'] / times['ctriton']:.2f}x")
    if "torch" in times and "ctriton" in times:
        r.append(f"vs torch {times['torch'] / times['ctriton']:.2f}x")
    if len(SPREAD) > 1 and "triton" in times and "ctriton" in times:
        r.append(f"rounds {min(SPREAD):.2f}-{max(SPREAD):.2f}x")
    SPREAD[:] = []
    line = f"{name:44s} {cells} TFLOP/s | {' | '.join(r)} {extra}"
    print(line, flush=True)
    ROWS.append((name, tf, r, extra))


def run_sides(mods, make, want, label):
    """Each side's launch, make(mod) -> (launch, output it writes), run
    once and its output checked against want (relative error < 1e-2), then
    timed (bench_rounds). Returns (times, notes on wrong results)."""
    bad, fns = [], {}
    for k, m in mods.items():
        try:
            f, out = make(m)
            f()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            print(f"  {k} {label}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        err = ((out.double() - want.double()).norm() / want.double().norm()).item()
        if not err < 1e-2:
            bad.append(f"{k} rel.err {err:.2e}")
        fns[k] = f
    return bench_rounds(fns), bad


def _matmul_case(mods, A, B, ref, cfg, label, out_dtype=None, with_torch=True):
    """Tutorial 03's kernel on A @ B (square, S) with one configuration on
    each side, checked against ref, timed beside torch.matmul."""
    S = A.shape[0]
    bm, bn, bk, nw, ns = cfg

    def make(m):
        C = torch.full((S, S), float("nan"), device="cuda", dtype=out_dtype or A.dtype)
        grid = (triton_cdiv(S, bm) * triton_cdiv(S, bn),)
        return (lambda: m.matmul[grid](
            A, B, C, S, S, S, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
            C.stride(0), C.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
            num_warps=nw, num_stages=ns)), C
    times, bad = run_sides(mods, make, ref, f"{label} {S} {bm}x{bn}x{bk}")
    if with_torch:
        Ct = torch.empty(S, S, device="cuda", dtype=A.dtype)
        times["torch"] = bench(lambda: torch.matmul(A, B, out=Ct))
    report(f"matmul {label} {S}^3 {bm}x{bn}x{bk} w{nw} s{ns}", times, 2 * S ** 3,
           ("WRONG: " + ", ".join(bad)) if bad else "")


def matmul_cases(mods, quick, sizes=None, cfgs=None):
    cfgs = cfgs or [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
                    (64, 128, 64, 4, 4)]
    sizes = sizes or ([4096] if quick else [2048, 4096, 8192])
    for S in sizes:
        for dt in ([torch.float16] if S != 4096 or quick else [torch.float16, torch.bfloat16]):
            A = torch.randn(S, S, device="cuda", dtype=dt)
            B = torch.randn(S, S, device="cuda", dtype=dt)
            ref = (A.float() @ B.float())
            for cfg in cfgs:
                _matmul_case(mods, A, B, ref, cfg, str(dt)[6:])


def matmul_tf32_cases(mods, quick):
    """The same tutorial kernel on fp32 inputs: tl.dot's default precision
    is tf32 on both sides; A and B row-major (B's rows N-contiguous, which
    wgmma cannot read as 32-bit MN-major: both compilers copy it element by
    element into a K-major slot). torch with allow_tf32."""
    cfgs = [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4)]
    torch.backends.cuda.matmul.allow_tf32 = True
    for S in ([4096] if quick else [4096, 8192]):
        A = torch.randn(S, S, device="cuda")
        B = torch.randn(S, S, device="cuda")
        ref = A.double() @ B.double()
        for cfg in cfgs:
            _matmul_case(mods, A, B, ref, cfg, "tf32")
    torch.backends.cuda.matmul.allow_tf32 = False


def matmul_ieee_cases(mods, sizes=None):
    """f32 with input_precision="ieee" (the FMA path on both sides), beside
    torch.matmul in f32 (tf32 off)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    for S in sizes or [2048]:
        A = torch.randn(S, S, device="cuda")
        B = torch.randn(S, S, device="cuda")
        ref = A.double() @ B.double()
        for bm, bn, bk, nw, ns in [(64, 64, 32, 4, 3), (128, 64, 32, 8, 3), (128, 128, 16, 8, 3), (32, 64, 32, 4, 4)]:
            def make(m):
                C = torch.full((S, S), float("nan"), device="cuda")
                grid = (triton_cdiv(S, bm), triton_cdiv(S, bn))
                return (lambda: m.matmul_ieee[grid](A, B, C, S, S, S, A.stride(0), B.stride(0), C.stride(0),
                                                     BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=nw,
                                                     num_stages=ns)), C
            times, bad = run_sides(mods, make, ref.float(), f"ieee {S} {bm}x{bn}x{bk}")
            Ct = torch.empty(S, S, device="cuda")
            times["torch"] = bench(lambda: torch.matmul(A, B, out=Ct))
            report(f"matmul ieee f32 {S}^3 {bm}x{bn}x{bk} w{nw} s{ns}", times, 2 * S ** 3,
                   ("WRONG: " + ", ".join(bad)) if bad else "")


def matmul_fp8_cases(mods, quick, row_major_b=False):
    """Tutorial 03's fp8 path: A e5m2 row-major, B = b.T (K contiguous), fp16 out.
    row_major_b (--only fp8): also B as it comes ([K][N], N contiguous)."""
    if not hasattr(torch, "float8_e5m2"):
        return
    for S in ([4096] if quick else [4096, 8192]):
        a = torch.randn(S, S, device="cuda").to(torch.float8_e5m2)
        for bt in (True, False) if row_major_b else (True,):
            b = torch.randn(S, S, device="cuda").to(torch.float8_e5m2)
            b = b.T if bt else b
            ref = a.float() @ b.float()
            for cfg in [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4)] + ([] if bt else [(64, 128, 128, 4, 4)]):
                _matmul_case(mods, a, b, ref, cfg, "fp8e5" if bt else "fp8e5 B [K][N]", out_dtype=torch.float16,
                             with_torch=False)


def matmul_int8_cases(mods, quick):
    """kernels_src.py's matmul_i8 (tutorial 03's kernel, int32 accumulator)
    on int8 A row-major and B = b.T (K contiguous), then B row-major
    ([K][N]), 4096^3 (--quick) or also 8192^3, beside torch._int_mm."""
    for S in ([4096] if quick else [4096, 8192]):
        A = torch.randint(-128, 128, (S, S), device="cuda", dtype=torch.int8)
        for bt in (True, False):
            B = torch.randint(-128, 128, (S, S), device="cuda", dtype=torch.int8)
            B = B.T if bt else B
            ref = (A.double() @ B.double())
            for bm, bn, bk, nw, ns in [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (64, 128, 128, 4, 4)]:
                def make(m, bm=bm, bn=bn, bk=bk, nw=nw, ns=ns, B=B):
                    C = torch.zeros(S, S, device="cuda", dtype=torch.int32)
                    grid = (triton_cdiv(S, bm) * triton_cdiv(S, bn),)
                    return (lambda: m.matmul_i8[grid](
                        A, B, C, S, S, S, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                        C.stride(0), C.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                        num_warps=nw, num_stages=ns)), C
                label = "int8" if bt else "int8 B [K][N]"
                times, bad = run_sides(mods, make, ref, f"{label} {S} {bm}x{bn}x{bk}")
                try:
                    times["torch"] = bench(lambda B=B: torch._int_mm(A, B))
                except Exception:  # noqa: BLE001
                    pass
                report(f"matmul {label} {S}^3 {bm}x{bn}x{bk} w{nw} s{ns}", times, 2 * S ** 3,
                       ("WRONG: " + ", ".join(bad)) if bad else "")


def attention_trans_cases(mods, quick):
    """kernels_src.py's attn_trans (K^T by tl.trans of a row-major tile),
    Z4 H32 N4096 (--quick: Z2 H16 N2048), not causal, beside SDPA."""
    Z, H, N = (2, 16, 2048) if quick else (4, 32, 4096)
    for D, cfgs in ((64, [(128, 64, 4, 2), (128, 64, 4, 3), (64, 64, 4, 3), (32, 64, 4, 3)]),
                    (128, [(128, 64, 8, 2), (64, 64, 4, 2), (32, 64, 4, 2)])):
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        sm = D ** -0.5
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=sm)
        for BM, BN, nw, ns in cfgs:
            def make(m):
                o = torch.full_like(q, float("nan"))
                grid = (triton_cdiv(N, BM), Z * H)
                return (lambda: m.attn_trans[grid](q, k, v, o, sm, N, BLOCK_M=BM, BLOCK_N=BN, HEAD_DIM=D,
                                                   num_warps=nw, num_stages=ns)), o
            times, bad = run_sides(mods, make, ref, f"attn_trans D{D} {BM}x{BN}")
            times["torch"] = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=sm))
            report(f"attention trans(k) D{D} Z{Z}H{H}N{N} {BM}x{BN} w{nw} s{ns}", times, 4 * Z * H * N * N * D,
                   ("WRONG: " + ", ".join(bad)) if bad else "")


def operand_ops_cases(mods, quick):
    """kernels_src.py's mm_operand_ops: dots that read their operands through
    other ops (int8 B dequantized, fp32 A cast to fp16, other != 0, tf32x3,
    an int8 A cast to fp16, an fp16 A times a scale),
    S^3 (S 4096, --quick 2048), two tile configurations each."""
    S = 2048 if quick else 4096
    g = torch.Generator(device="cuda").manual_seed(0)
    for form, name in ((0, "int8 B dequantized"), (1, "fp32 A cast"), (3, "A cast, other 1.0 / 2.0"),
                       (4, "tf32x3"), (5, "int8 A cast"), (6, "fp16 A scaled")):
        a = torch.randn(S, S, device="cuda", generator=g, dtype=torch.float32)
        b = torch.randn(S, S, device="cuda", generator=g, dtype=torch.float32)
        scale = 0.01
        if form == 0:
            a = a.half()
            b = (b * 40).round().clamp(-127, 127).to(torch.int8)
            ref = a.float() @ (b.float() * scale).half().float()
        elif form == 1:
            b = b.half()
            ref = a.half().float() @ b.float()
        elif form == 5:
            a = (a * 40).round().clamp(-127, 127).to(torch.int8)
            b = b.half()
            ref = a.float() @ b.float()
        elif form == 6:
            a, b = a.half(), b.half()
            ref = (a.float() * scale).half().float() @ b.float()
        elif form == 3:
            b = b.half()
            ref = a.half().float() @ b.float()  # K a multiple of BK: other never read
        else:
            ref = a.double() @ b.double()
        cfgs = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3)] if form != 4 else [(64, 64, 32, 4, 3), (128, 128, 32, 8, 2)]
        for BM, BN, BK, nw, ns in cfgs:
            def make(m):
                c = torch.full((S, S), float("nan"), device="cuda", dtype=torch.float16)
                grid = (triton_cdiv(S, BM), triton_cdiv(S, BN))
                return (lambda: m.mm_operand_ops[grid](a, b, c, S, S, S, S, S, S, scale, BM=BM, BN=BN, BK=BK,
                                                       FORM=form, num_warps=nw, num_stages=ns)), c
            times, bad = run_sides(mods, make, ref.to(torch.float32), f"operand ops {form}")
            report(f"matmul {name} {S}^3 {BM}x{BN}x{BK} w{nw} s{ns}", times, 2 * S ** 3,
                   ("WRONG: " + ", ".join(bad)) if bad else "")


def attention_problems(quick):
    """(Z, H, N, D, causal, q, k, v, sm_scale, SDPA's output) of the forward rows."""
    Z, H, N = (2, 16, 2048) if quick else (4, 32, 4096)
    for D in (64, 128):
        for causal in (False, True):
            q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
            sm = 0.5
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm)
            yield Z, H, N, D, causal, q, k, v, sm, ref


def attention_cases(mods, quick):
    for Z, H, N, D, causal, q, k, v, sm, ref in attention_problems(quick):
        BM, BN = 128, 64
        nw = 4 if D == 64 else 8

        def make(m):
            o = torch.full_like(q, float("nan"))
            M = torch.empty((Z, H, N), device="cuda", dtype=torch.float32)
            grid = (triton_cdiv(N, BM), Z * H)
            return (lambda: m.attn_fwd[grid](
                q, k, v, sm, M, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H,
                N_CTX=N, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, STAGE=3 if causal else 1,
                num_warps=nw, num_stages=2)), o
        times, bad = run_sides(mods, make, ref, f"attn D{D}")
        times["torch"] = bench(lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=sm))
        flops = 4 * Z * H * N * N * D * (0.5 if causal else 1.0)
        report(f"attention fwd D{D} {'causal' if causal else 'full'} Z{Z}H{H}N{N}", times, flops,
               ("WRONG: " + ", ".join(bad)) if bad else "")


# (BLOCK_M, BLOCK_N, warps, stages, warp_specialize) per (HEAD_DIM, causal);
# causal with warp specialization is left out: Triton 3.6's warp
# specialization fails to compile a kernel with a second loop after the
# specialized one
TMA_CONFIGS = {
    (64, False): [(128, 64, 4, 2, True), (128, 64, 4, 3, True), (128, 64, 4, 2, False)],
    (128, False): [(128, 128, 4, 2, True), (128, 64, 4, 2, True), (128, 64, 8, 2, False)],
    (64, True): [(128, 64, 4, 2, False), (128, 64, 4, 3, False), (128, 64, 8, 2, False)],
    (128, True): [(128, 64, 8, 2, False), (128, 64, 8, 3, False), (128, 64, 4, 2, False)],
}


def attention_tma_cases(mods, quick):
    """kernels/attention.py's attn_fwd_tma: the same configurations on both
    sides (Triton needs an allocator for descriptors made in the kernel),
    then each side's best."""
    for Z, H, N, D, causal, q, k, v, sm, ref in attention_problems(quick):
        flops = 4 * Z * H * N * N * D * (0.5 if causal else 1.0)
        t_torch = bench(lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=sm))
        best = {}
        for (BM, BN, nw, ns, ws) in TMA_CONFIGS[(D, causal)]:
            def make(m):
                o = torch.full_like(q, float("nan"))
                M = torch.empty((Z, H, N), device="cuda", dtype=torch.float32)
                grid = (triton_cdiv(N, BM), Z * H)
                return (lambda: m.attn_fwd_tma[grid](
                    q, k, v, sm, M, o, Z, H, N_CTX=N, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                    STAGE=3 if causal else 1, WARP_SPECIALIZE=ws, num_warps=nw, num_stages=ns)), o
            times, bad = run_sides(mods, make, ref, f"attn tma D{D}")
            for name, t in times.items():
                if not bad and (name not in best or t < best[name]):
                    best[name] = t
            times["torch"] = t_torch
            report(f"attention fwd tma D{D} {'causal' if causal else 'full'} Z{Z}H{H}N{N} "
                   f"{BM}x{BN} w{nw} s{ns}{' ws' if ws else ''}", times, flops,
                   ("WRONG: " + ", ".join(bad)) if bad else "")
        best["torch"] = t_torch
        report(f"attention fwd tma D{D} {'causal' if causal else 'full'} Z{Z}H{H}N{N} best of each", best,
               flops)


def attention_bwd_cases(mods, quick):
    """kernels/attention.py's causal backward (preprocess + dK/dV + dQ) vs
    Triton compiling the same source vs torch SDPA's backward."""
    Z, H, N = (2, 16, 2048) if quick else (4, 32, 4096)
    for D in (64, 128):
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        do = torch.randn_like(q)
        sm = 0.5
        times, bad, fns = {}, [], {}
        qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
        ref = torch.nn.functional.scaled_dot_product_attention(qr, kr, vr, is_causal=True, scale=sm)
        ref.backward(do)
        for name, m in mods.items():
            try:
                o, M = m.attention_forward(q, k, v, True, sm)
                f = lambda m=m, o=o, M=M: m.attention_backward(q, k, v, o, do, M, sm)  # noqa: E731
                dq, dk, dv = f()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(f"  {name} attn bwd D{D}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            for nm, got, want in (("dq", dq, qr.grad), ("dk", dk, kr.grad), ("dv", dv, vr.grad)):
                err = ((got.float() - want.float()).norm() / want.float().norm()).item()
                if not err < 1e-2:
                    bad.append(f"{name} {nm} rel.err {err:.2e}")
            fns[name] = f
        times.update(bench_rounds(fns))
        times["torch"] = bench(lambda: torch.autograd.grad(
            torch.nn.functional.scaled_dot_product_attention(qr, kr, vr, is_causal=True, scale=sm),
            (qr, kr, vr), do))
        flops = 2.5 * 4 * Z * H * N * N * D * 0.5  # backward ~2.5x the forward's matmul work, causal
        report(f"attention bwd D{D} causal Z{Z}H{H}N{N}", times, flops,
               ("WRONG: " + ", ".join(bad)) if bad else "")


def mul_sum_cases(mods, quick):
    """kernels_src.py's mm_mul_sum: sum(a[:, :, None] * b[None, :, :], 1)
    accumulated over K, f32 (both compilers make it an ieee tl.dot), S^3 (S
    2048, --quick 1024), beside torch.matmul. Triton's 3.6.0 wheel makes
    that dot tf32 (tensor cores, relative error ~1e-3; upstream has since
    fixed it to ieee, #9831), so its column is not the same arithmetic.
    (Triton cannot compile the f16 form: its rewrite makes an f16 dot with an
    f32 zero.)"""
    S = 1024 if quick else 2048
    g = torch.Generator(device="cuda").manual_seed(1)
    for dt in (torch.float32,):
        a = torch.randn(S, S, device="cuda", generator=g).to(dt)
        b = torch.randn(S, S, device="cuda", generator=g).to(dt)
        ref = a.float() @ b.float()
        for BM, BN, BK, nw, ns in [(128, 32, 32, 4, 3), (64, 64, 16, 4, 3)]:
            def make(m):
                c = torch.full((S, S), float("nan"), device="cuda", dtype=torch.float32)
                grid = (triton_cdiv(S, BM), triton_cdiv(S, BN))
                return (lambda: m.mm_mul_sum[grid](a, b, c, S, S, S, S, S, S, BM=BM, BN=BN, BK=BK,
                                                   num_warps=nw, num_stages=ns)), c
            times, bad = run_sides(mods, make, ref, f"mul sum {dt}")
            times["torch"] = bench(lambda: a @ b)
            report(f"matmul as mul+sum {str(dt)[6:]} {S}^3 {BM}x{BN}x{BK} w{nw} s{ns}", times, 2 * S ** 3,
                   ("WRONG: " + ", ".join(bad)) if bad else "")


def triton_cdiv(a, b):
    return (a + b - 1) // b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only", choices=["matmul", "attention", "ieee", "trans", "operands", "mulsum", "tf32", "int8",
                                           "fp8"])
    ap.add_argument("--rounds", type=int, default=1,
                    help="time each case this many times, the sides in turn; medians, and the ratio's range")
    ap.add_argument("--sizes", help="matmul: the fp16/bf16 square sizes, comma-separated "
                    "(only those: no tf32 or fp8 rows)")
    ap.add_argument("--configs", help="matmul: the fp16/bf16 tile configurations instead of the default list, "
                    "BM,BN,BK,warps,stages separated by ';' (64,128,64,8,3: warpgroups split along N)")
    a = ap.parse_args()
    global ROUNDS
    ROUNDS = max(1, a.rounds)
    impls = ["ctriton"] + (["triton"] if triton else [])
    print("devices:", torch.cuda.get_device_name(), "triton", getattr(triton, "__version__", None), flush=True)
    if a.only == "ieee":
        mm = {k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}
        matmul_ieee_cases(mm, [int(x) for x in a.sizes.split(",")] if a.sizes else None)
    elif a.only == "trans":
        attention_trans_cases({k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}, a.quick)
    elif a.only == "int8":
        matmul_int8_cases({k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}, a.quick)
    elif a.only == "fp8":
        matmul_fp8_cases({k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}, a.quick, True)
    elif a.only == "tf32":
        matmul_tf32_cases({k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}, a.quick)
    elif a.only == "mulsum":
        mul_sum_cases({k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}, a.quick)
    elif a.only == "operands":
        ks = {k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}
        operand_ops_cases(ks, a.quick)
        mul_sum_cases(ks, a.quick)
    elif a.only != "attention":
        mm = {k: load_file(os.path.join(HERE, "kernels_src.py"), k, "ks") for k in impls}
        cfgs = [tuple(int(x) for x in c.split(",")) for c in a.configs.split(";")] if a.configs else None
        matmul_cases(mm, a.quick, [int(x) for x in a.sizes.split(",")] if a.sizes else None, cfgs)
        if not a.sizes:
            matmul_tf32_cases(mm, a.quick)
            matmul_fp8_cases(mm, a.quick)
    if a.only not in ("matmul", "ieee", "trans", "operands", "mulsum", "tf32", "int8", "fp8"):
        at = {k: load_file(os.path.join(ROOT, "kernels", "attention.py"), k, "attn") for k in impls}
        # descriptors made in the kernel: Triton asks for global scratch
        # (ctriton encodes these maps at launch and needs none)
        for mod in (ctriton, triton) if triton else (ctriton,):
            mod.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
        attention_cases(at, a.quick)
        attention_tma_cases(at, a.quick)
        attention_bwd_cases(at, a.quick)
    if a.out:
        with open(a.out, "w") as f:
            f.write("| case | " + " | ".join(f"{k} TFLOP/s" for k in ROWS[0][1]) + " | ratios | note |\n")
            f.write("|---|" + "---|" * (len(ROWS[0][1]) + 2) + "\n")
            for name, tf, r, extra in ROWS:
                f.write(f"| {name} | " + " | ".join(f"{v:.1f}" for v in tf.values()) +
                        f" | {', '.join(r)} | {extra} |\n")


if __name__ == "__main__":
    main()
