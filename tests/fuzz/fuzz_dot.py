"""A fuzzer for ctriton's tensor-core kernels: tiled matmuls and
attention-like chains of two dots, in the forms people write them.

Each seed gives one kernel with its inputs and numpy reference:
  - a *matmul* (most seeds): C = epilogue(A @ B) over a K loop, with
    operand dtypes fp16 / bf16 / fp32 (input_precision tf32, tf32x3, ieee)
    / fp8 e4m3 and e5m2 / int8, an fp32, fp16 (out_dtype) or int32
    accumulator; tiles 16..256; A and B row- or column-major, with padded
    leading dimensions (sometimes breaking 16-byte alignment), or B read as
    an N x K matrix and transposed in the kernel (tl.trans, .T, permute);
    K loops that advance pointers, rebuild them from the index, step by
    BK, or go through tl.range(num_stages=); masks on the K tail as a
    prefix (`rk < K - k * BK`), as a full 2-D mask, or none where K divides;
    rows wrapped (`% M`, tl.where) or masked; `acc = tl.dot(a, b, acc)` or
    `acc += tl.dot(a, b)`; grouped tile orders and persistent tile loops
    (tl.range(pid, tiles, NPROG), with flatten=True sometimes); epilogues
    that scale, add a bias row, apply relu, and store fp16 / bf16 / fp32.
  - a *chain* (attention's shape): for each block of N keys,
    S = Q K^T (plus, for some seeds, a per-key bias vector loaded in the
    loop), P = S (scaled, causally masked) or an online softmax of S,
    acc += P V, with Q loaded once and P converted to the operand dtype.

Inputs are small integers for most seeds, so that every product and sum
is exact in fp32 and the result must match bit for bit; the rest use
random values, compared with a bound that scales with sum |a| |b|.

Every kernel is compiled for sm_80 and sm_90 with its num_warps and
num_stages (the PTX assembled by ptxas when it is installed) and run on the
CPU backend against numpy; with `--device cuda` it also runs on the GPU
(torch tensors) against the same reference. Failures as in fuzz.py: a
crash, a hang, a refused GPU compile, a mismatch, an exception, an
"internal error". Each failing kernel is saved as
`<out>/<status>-<seed>/kernel.py` with `info.json`.

    python3 tests/fuzz/fuzz_dot.py --seeds 0:300 --jobs 2
    python3 tests/fuzz/fuzz_dot.py --seed 17 --show
    python3 tests/fuzz/fuzz_dot.py --seeds 0:300 --device cuda   # on a GPU
"""
import json
import os
import random
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzz as F  # noqa: E402  the child-process driver and the kernel loader
from fuzz import U  # noqa: E402

FP8 = {"float8e4nv": "e4m3", "float8e5": "e5m2"}
TORCH_FP8 = {"float8e4nv": "float8_e4m3fn", "float8e5": "float8_e5m2"}
SIG = dict(F.SIG)
SIG["int32"] = "i32"

# operand dtype, input_precision, accumulator, weight
DOTS = [
    ("float16", None, "float32", 6),
    ("float16", None, "float16", 1),
    ("bfloat16", None, "float32", 3),
    ("float32", None, "float32", 1),
    ("float32", "tf32", "float32", 1),
    ("float32", "tf32x3", "float32", 1),
    ("float32", "ieee", "float32", 2),
    ("float8e4nv", None, "float32", 2),
    ("float8e5", None, "float32", 1),
    ("int8", None, "int32", 2),
]
MANT = {"float16": 11, "bfloat16": 8, "float32": 24}


def esize(dt):
    return 1 if dt in FP8 or dt == "int8" else 4 if dt == "float32" else 2


def values(rng, dt, shape, exact, ints=False):
    """(host storage, float64 or int64 values) of an operand: small integers
    (or quarters, unless ints) when exact, else random ones."""
    if dt == "int8":
        v = rng.integers(-128, 128, size=shape) if not exact else rng.integers(-8, 9, size=shape)
        return v.astype(np.int8), v.astype(np.int64)
    if dt in FP8:
        table = U.fp8_table(FP8[dt])
        ok = np.where(np.isfinite(table) & (np.abs(table) <= (4 if exact else 8)))[0]
        if exact:
            ok = np.array([c for c in ok if table[c] == int(table[c])])
        codes = rng.choice(ok, size=shape).astype(np.uint8)
        return codes, table[codes]
    if exact:
        v = rng.integers(-4, 5, size=shape).astype(np.float64)
        if not ints and rng.random() < 0.5:
            v = v / 4  # quarters: still exact products and sums
    else:
        v = rng.uniform(-1, 1, size=shape)
    host = U.to_storage(v, dt)
    return host, U.to_f64(host, dt)


class DotGen:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.rng = np.random.default_rng(seed)
        self.lines = []
        self.inputs = []  # (param, dtype, host array)
        self.outs = []    # (param, dtype, reference, exact, error scale, host shape)
        self.scalars = []  # (name, value)
        self.cx = {}
        self.desc = {}  # param -> (shape, strides, block shape) of a descriptor
        self.host_desc = False  # descriptors passed as TensorDescriptor arguments

    def emit(self, s, ind=1):
        self.lines.append("    " * ind + s)

    def tl_dt(self, dt):
        return f"tl.{dt}"

    # -- the matmul family -------------------------------------------------
    def matmul(self):
        r = self.r
        dt, prec, acc_dt, _ = r.choices(DOTS, [d[3] for d in DOTS])[0]
        self.dt, self.prec, self.acc_dt = dt, prec, acc_dt
        es = esize(dt)
        nw = r.choice([4, 4, 4, 8, 8, 2, 1])
        ns = r.choice([1, 2, 3, 3, 4])
        kmin = 32 if es == 1 else 16
        while True:
            BM = r.choice([16, 32, 64, 64, 128, 128])
            BN = r.choice([16, 32, 64, 64, 128, 128, 256])
            BK = r.choice([k for k in (16, 32, 64, 128) if k >= kmin and k * es <= 256])
            if BM * BN <= 4096 * nw * 2 and max(ns, 1) * (BM + BN) * BK * es <= 160 * 1024 and \
                    BM * BN * (4 if acc_dt != "float16" else 2) <= 128 * 1024:
                break
        self.cx.update(BM=BM, BN=BN, BK=BK)
        self.nw, self.ns = nw, ns
        exact = r.random() < 0.7
        self.exact = exact and acc_dt != "float16"

        def dim(B):
            x = r.random()
            return B * r.randint(1, 3) if x < 0.35 else r.randint(1, 3 * B)
        M, N = dim(BM), dim(BN)
        kx = r.random()
        K = BK * r.randint(1, 4) if kx < 0.4 else 0 if kx < 0.43 else r.randint(1, 4 * BK)
        self.M, self.N, self.K = M, N, K
        even_k = K % BK == 0

        # operands: A [M, K] row- or column-major; B [K, N] either way, or
        # B^T as an N x K matrix transposed in the kernel
        a_host, a_val = values(self.rng, dt, (M, K), exact)
        b_host, b_val = values(self.rng, dt, (K, N), exact)
        self.a_val, self.b_val = a_val, b_val

        def layout(host, rows, cols, col_major):
            pad = r.choice([0, 0, 0, 8, 16 // es if es < 16 else 0, 3])
            if col_major:
                ld = rows + pad
                buf = np.zeros((max(cols, 1), ld), host.dtype)
                buf[:cols, :rows] = host.T
                return buf, 1, ld
            ld = max(cols + pad, 1)
            buf = np.zeros((rows, ld), host.dtype)
            buf[:, :cols] = host
            return buf, ld, 1
        a_buf, s_am, s_ak = layout(a_host, M, K, r.random() < 0.25)
        b_trans = r.random() < 0.3
        if b_trans:  # BT [N, K]
            bt_buf, s_bn, s_bk = layout(b_host.T.copy(), N, K, r.random() < 0.25)
            b_buf = bt_buf
        else:
            b_buf, s_bk, s_bn = layout(b_host, K, N, r.random() < 0.25)
        self.inputs += [("A", dt, a_buf), ("B", dt, b_buf)]
        self.scalars += [("M", M), ("N", N), ("K", K), ("stride_am", s_am), ("stride_ak", s_ak),
                         ("stride_bk", s_bk), ("stride_bn", s_bn)]

        # the epilogue and the output
        if acc_dt == "int32":
            out_dt = "int32"
        else:
            out_dt = r.choice(["float16", "float16", "float32", "bfloat16"])
            if dt == "float32" and r.random() < 0.5:
                out_dt = "float32"
        bias = r.random() < 0.3
        if bias:
            bdt = "int32" if acc_dt == "int32" else "float32"
            bh, bv = values(self.rng, "float32" if bdt == "float32" else "int8", (N,), True)
            self.inputs.append(("Bias", bdt, bh.astype(np.int32) if bdt == "int32" else bh))
        ldc = N + r.choice([0, 0, 5, 8])
        self.scalars += [("stride_cm", ldc)]

        persistent = r.random() < 0.25
        grouped = not persistent and r.random() < 0.3
        tiles_m, tiles_n = -(-M // BM), -(-N // BN)
        ind = 1
        self.emit("pid = tl.program_id(0)")
        self.emit("num_pid_m = tl.cdiv(M, BM)")
        self.emit("num_pid_n = tl.cdiv(N, BN)")
        if persistent:
            nprog = r.choice([1, 2, 3, 5, tiles_m * tiles_n, tiles_m * tiles_n + 2])
            self.cx["NPROG"] = nprog
            self.grid = (nprog,)
            flat = ", flatten=True" if r.random() < 0.4 else ""
            self.emit(f"for tile in tl.range(pid, num_pid_m * num_pid_n, NPROG{flat}):")
            ind = 2
            tid = "tile"
        else:
            self.grid = (tiles_m * tiles_n,)
            tid = "pid"
        if grouped or (persistent and r.random() < 0.5):
            G = r.choice([1, 2, 4, 8])
            self.cx["GROUP_M"] = G
            self.emit("num_pid_in_group = GROUP_M * num_pid_n", ind)
            self.emit(f"group_id = {tid} // num_pid_in_group", ind)
            self.emit("first_pid_m = group_id * GROUP_M", ind)
            self.emit("group_size_m = min(num_pid_m - first_pid_m, GROUP_M)", ind)
            self.emit(f"pid_m = first_pid_m + (({tid} % num_pid_in_group) % group_size_m)", ind)
            self.emit(f"pid_n = ({tid} % num_pid_in_group) // group_size_m", ind)
        else:
            self.emit(f"pid_m = {tid} // num_pid_n", ind)
            self.emit(f"pid_n = {tid} % num_pid_n", ind)
        self.emit("rm = pid_m * BM + tl.arange(0, BM)", ind)
        self.emit("rn = pid_n * BN + tl.arange(0, BN)", ind)
        self.emit("rk = tl.arange(0, BK)", ind)
        rows = r.choice(["wrap", "where", "mask"])
        if rows == "wrap":
            self.emit("ram = rm % M", ind)
            self.emit("rbn = rn % N", ind)
        elif rows == "where":
            self.emit("ram = tl.where(rm < M, rm, 0)", ind)
            self.emit("rbn = tl.where(rn < N, rn, 0)", ind)
            if r.random() < 0.5:
                self.emit("ram = tl.max_contiguous(tl.multiple_of(ram, BM), BM)", ind)
                self.emit("rbn = tl.max_contiguous(tl.multiple_of(rbn, BN), BN)", ind)
        else:
            self.emit("ram = rm", ind)
            self.emit("rbn = rn", ind)
        loop = r.choice(["advance", "rebuild", "step", "range"])
        kmask = r.choice(["prefix", "full"]) if not even_k or r.random() < 0.5 else "none"
        if rows == "mask":
            kmask = "full"
        acc_init = f"tl.zeros((BM, BN), dtype=tl.{acc_dt})"
        self.emit(f"acc = {acc_init}", ind)

        def a_ptrs(k_expr):
            return f"A + ram[:, None] * stride_am + ({k_expr})[None, :] * stride_ak"

        def b_ptrs(k_expr):
            if b_trans:
                return f"B + rbn[:, None] * stride_bn + ({k_expr})[None, :] * stride_bk"
            return f"B + ({k_expr})[:, None] * stride_bk + rbn[None, :] * stride_bn"

        def masks(kk, rem):
            """(A mask, B mask) for K offsets kk (a tensor expr) or `rk < rem`."""
            if kmask == "none":
                return None, None
            ka = f"rk[None, :] < {rem}" if kmask == "prefix" else f"({kk})[None, :] < K"
            kb = (f"rk[None, :] < {rem}" if kmask == "prefix" else f"({kk})[None, :] < K") if b_trans else \
                (f"rk[:, None] < {rem}" if kmask == "prefix" else f"({kk})[:, None] < K")
            if rows == "mask":
                ka = f"(rm[:, None] < M) & ({ka})"
                kb = f"(rn[:, None] < N) & ({kb})" if b_trans else f"({kb}) & (rn[None, :] < N)"
            return ka, kb
        if loop == "advance":
            self.emit(f"a_ptrs = {a_ptrs('rk')}", ind)
            self.emit(f"b_ptrs = {b_ptrs('rk')}", ind)
            self.emit("for k in range(0, tl.cdiv(K, BK)):", ind)
            ma, mb = masks("k * BK + rk", "K - k * BK")
            pa, pb = "a_ptrs", "b_ptrs"
        elif loop == "rebuild":
            self.emit("for k in range(0, tl.cdiv(K, BK)):", ind)
            self.emit("offs_k = k * BK + rk", ind + 1)
            ma, mb = masks("offs_k", "K - k * BK")
            pa, pb = a_ptrs("offs_k"), b_ptrs("offs_k")
        elif loop == "step":
            self.emit("for k0 in range(0, K, BK):", ind)
            ma, mb = masks("k0 + rk", "K - k0")
            pa, pb = a_ptrs("k0 + rk"), b_ptrs("k0 + rk")
        else:
            st = r.choice([1, 2, 3, 4])
            self.emit(f"for k in tl.range(0, tl.cdiv(K, BK), num_stages={st}):", ind)
            self.emit("offs_k = k * BK + rk", ind + 1)
            ma, mb = masks("offs_k", "K - k * BK")
            pa, pb = a_ptrs("offs_k"), b_ptrs("offs_k")
        # the K tail reads `other`: zero mostly, one sometimes (a copy that
        # zero-fills the tail would then be wrong)
        one = ma is not None and r.random() < 0.15
        zero = ("1" if one else "0") + ("" if dt == "int8" else ".0")
        la = f"tl.load({pa}" + (f", mask={ma}, other={zero})" if ma else ")")
        lb = f"tl.load({pb}" + (f", mask={mb}, other={zero})" if mb else ")")
        self.emit(f"a = {la}", ind + 1)
        self.emit(f"b = {lb}", ind + 1)
        if b_trans:
            self.emit("b = " + r.choice(["tl.trans(b)", "b.T", "tl.permute(b, (1, 0))"]), ind + 1)
        kw = ""
        if prec:
            kw += f", input_precision=\"{prec}\""
        if acc_dt in ("float16", "int32"):  # Triton wants it said for an int32 accumulator
            kw += f", out_dtype=tl.{acc_dt}"
        form = r.choice(["acc", "acc", "plus"]) if acc_dt != "float16" else "acc"
        if form == "acc":
            self.emit(f"acc = tl.dot(a, b, acc{kw})", ind + 1)
        else:
            self.emit(f"acc += tl.dot(a, b{kw})", ind + 1)
        if loop == "advance":
            self.emit("a_ptrs += BK * stride_ak", ind + 1)
            self.emit("b_ptrs += BK * stride_bk", ind + 1)

        # epilogue
        if one and K % BK:  # past K, both tiles read ones: BK - K % BK more terms of 1 * 1
            kp = -(-K // BK) * BK
            a_val = np.concatenate([a_val, np.ones((M, kp - K), a_val.dtype)], axis=1)
            b_val = np.concatenate([b_val, np.ones((kp - K, N), b_val.dtype)], axis=0)
            K2 = kp
        else:
            K2 = K
        ref = a_val @ b_val if K2 else np.zeros((M, N), a_val.dtype)
        ref = np.asarray(ref, np.int64 if acc_dt == "int32" else np.float64)
        scale = np.abs(a_val) @ np.abs(b_val) if K2 else np.zeros((M, N))
        if acc_dt == "int32":
            ref = ref.astype(np.int32).astype(np.int64)  # wraps as int32 arithmetic does
        self.emit("c = acc", ind)
        if acc_dt == "float16" and r.random() < 0.5:
            self.emit("c = c.to(tl.float32)", ind)
        if r.random() < 0.3:
            f = r.choice(["2", "0.5"]) if acc_dt != "int32" else "2"
            self.emit(f"c = c * {f}", ind)
            ref = ref * (int(f) if acc_dt == "int32" else float(f))
            scale = scale * float(f)
        if bias:
            self.emit("bias = tl.load(Bias + rn, mask=rn < N, other=0)", ind)
            self.emit("c = c + bias[None, :]", ind)
            bvals = self.inputs[-1][2].astype(np.float64 if acc_dt != "int32" else np.int64)
            ref = ref + bvals[None, :]
        if r.random() < 0.3:
            self.emit("c = tl.maximum(c, 0)", ind)
            ref = np.maximum(ref, 0)
        self.emit("c_ptrs = C + rm[:, None] * stride_cm + rn[None, :]", ind)
        self.emit(f"tl.store(c_ptrs, c.to(tl.{out_dt}), mask=(rm[:, None] < M) & (rn[None, :] < N))", ind)
        if acc_dt == "int32":
            ref = ref.astype(np.int32)
        tol = 0.0
        if not self.exact:
            eps = {"float16": 2.0 ** -10, "float32": 2.0 ** -23}[acc_dt if acc_dt == "float16" else "float32"]
            if dt == "float32" and prec in (None, "tf32"):
                eps_in = 2.0 ** -10
            elif dt == "float32" and prec == "tf32x3":
                eps_in = 2.0 ** -20
            elif dt in FP8:
                # Hopper's fp8 MMA adds its products with fewer mantissa bits:
                # on an H100, seeds 558 and 565 (random values) came to 1.2x
                # and 1.1x of 2^-11 sum |a| |b|, and Triton 3.6's kernels of
                # the same source to 1.3x and 1.1x (565 bit for bit the same)
                eps_in = 2.0 ** -10
            else:
                eps_in = 0.0
            tol = eps_in + (K + 2) * eps
        self.outs.append(("C", out_dt, ref, self.exact, scale * tol, (M, ldc)))
        params = ["A", "B"] + (["Bias"] if bias else []) + ["C"]
        return params

    # -- the descriptor family (tutorials 08 and 09) ----------------------------
    def descs(self):
        """C = A @ B through tensor descriptors: TensorDescriptor arguments
        or tl.make_tensor_descriptor in the kernel, B as [K, N] or as
        [N, K] loaded and transposed, C stored through a descriptor or by
        pointers; tiles past the bounds read as zeros, stores clipped."""
        r = self.r
        dt, prec = r.choice([("float16", None), ("float16", None), ("bfloat16", None),
                             ("float32", "tf32"), ("float32", "ieee"), ("float8e4nv", None)])
        self.dt, self.prec, self.acc_dt = dt, prec, "float32"
        es = esize(dt)
        nw = r.choice([4, 4, 8])
        ns = r.choice([1, 2, 3, 4])
        kmin = 32 if es == 1 else 16
        while True:
            BM = r.choice([64, 64, 128, 128, 16, 32])
            BN = r.choice([16, 32, 64, 64, 128, 128, 256])
            BK = r.choice([k for k in (16, 32, 64, 128) if k >= kmin and k * es <= 256])
            if BM * BN <= 4096 * nw * 2 and ns * (BM + BN) * BK * es <= 160 * 1024:
                break
        self.cx.update(BM=BM, BN=BN, BK=BK)
        self.nw, self.ns = nw, ns
        exact = r.random() < 0.7
        self.exact = exact
        M = BM * r.randint(1, 3) if r.random() < 0.35 else r.randint(1, 3 * BM)
        N = BN * r.randint(1, 3) if r.random() < 0.35 else r.randint(1, 3 * BN)
        K = BK * r.randint(1, 4) if r.random() < 0.4 else r.randint(1, 4 * BK)
        self.M, self.N, self.K = M, N, K
        a_host, a_val = values(self.rng, dt, (M, K), exact)
        b_host, b_val = values(self.rng, dt, (K, N), exact)
        align = 16 // es

        def buf(host):
            rows, cols = host.shape
            ld = -(-cols // align) * align + align * r.choice([0, 0, 1])
            b = np.zeros((rows, ld), host.dtype)
            b[:, :cols] = host
            return b, ld
        b_nk = r.random() < 0.5
        a_buf, lda = buf(a_host)
        b_buf, ldb = buf(b_host.T.copy() if b_nk else b_host)
        out_dt = r.choice(["float16", "float32"] + (["bfloat16"] if dt == "bfloat16" else []))
        c_shape = (M, -(-N // (16 // esize(out_dt))) * (16 // esize(out_dt)))
        ldc = c_shape[1]
        host = r.random() < 0.5
        c_desc = r.random() < 0.75
        self.inputs += [("A", dt, a_buf), ("B", dt, b_buf)]
        self.desc = {"A": ([M, K], [lda, 1], [BM, BK]),
                     "B": (([N, K] if b_nk else [K, N]), [ldb, 1], ([BN, BK] if b_nk else [BK, BN]))}
        if c_desc:
            self.desc["C"] = ([M, N], [ldc, 1], [BM, BN])
        self.host_desc = host
        if host:
            self.scalars += [("M", M), ("N", N), ("K", K)]
        else:
            self.scalars += [("M", M), ("N", N), ("K", K), ("lda", lda), ("ldb", ldb), ("ldc", ldc)]
        e = self.emit
        if not host:
            e("a_d = tl.make_tensor_descriptor(A, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK])")
            if b_nk:
                e("b_d = tl.make_tensor_descriptor(B, shape=[N, K], strides=[ldb, 1], block_shape=[BN, BK])")
            else:
                e("b_d = tl.make_tensor_descriptor(B, [K, N], [ldb, 1], [BK, BN])")
            if c_desc:
                e("c_d = tl.make_tensor_descriptor(C, [M, N], [ldc, 1], [BM, BN])")
        else:
            e("a_d = A")
            e("b_d = B")
            if c_desc:
                e("c_d = C")
        e("num_pid_m = tl.cdiv(M, BM)")
        e("num_pid_n = tl.cdiv(N, BN)")
        tiles = -(-M // BM) * -(-N // BN)
        persistent = r.random() < 0.35
        ind = 1
        if persistent:
            nprog = r.choice([1, 2, 3, tiles, tiles + 1])
            self.cx["NPROG"] = nprog
            self.grid = (nprog,)
            flat = ", flatten=True" if r.random() < 0.4 else ""
            e(f"for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NPROG{flat}):")
            ind = 2
            tid = "tile"
        else:
            self.grid = (tiles,)
            tid = "tl.program_id(0)"
        e(f"om = ({tid} // num_pid_n) * BM", ind)
        e(f"on = ({tid} % num_pid_n) * BN", ind)
        e("acc = tl.zeros((BM, BN), dtype=tl.float32)", ind)
        if r.random() < 0.5:
            e("for k in range(0, tl.cdiv(K, BK)):", ind)
            kk = "k * BK"
        else:
            e(f"for k in tl.range(0, K, BK, num_stages={ns}):", ind)
            kk = "k"
        e(f"a = a_d.load([om, {kk}])", ind + 1)
        if b_nk:
            e(f"b = b_d.load([on, {kk}])", ind + 1)
            e("b = " + r.choice(["b.T", "tl.trans(b)"]), ind + 1)
        else:
            e(f"b = b_d.load([{kk}, on])", ind + 1)
        kw = f", input_precision=\"{prec}\"" if prec else ""
        e(f"acc = tl.dot(a, b, acc{kw})", ind + 1)
        if c_desc:
            e(f"c_d.store([om, on], acc.to(tl.{out_dt}))", ind)
        else:
            e("rm = om + tl.arange(0, BM)", ind)
            e("rn = on + tl.arange(0, BN)", ind)
            e(f"tl.store(C + rm[:, None] * {ldc} + rn[None, :], acc.to(tl.{out_dt}), "
              "mask=(rm[:, None] < M) & (rn[None, :] < N))", ind)
        ref = a_val @ b_val
        scale = np.abs(a_val) @ np.abs(b_val)
        tol = 0.0
        if not exact:
            eps_in = 2.0 ** -10 if dt == "float32" and prec == "tf32" else 2.0 ** -10 if dt in FP8 else 0.0
            tol = eps_in + (K + 2) * 2.0 ** -23
        self.outs.append(("C", out_dt, ref, exact, scale * tol, c_shape))
        return ["A", "B", "C"]

    # -- the misc family: dots in other places -------------------------------
    def misc(self):
        """A K loop of dots with one twist: a batched 3-D dot, a dot under
        an `if` or in a `while` loop, A read as [K, M] and transposed, an
        operand computed from the loaded tile, the accumulator started from
        C, or row sums and column maxima of the result."""
        r = self.r
        dt, prec, acc_dt, _ = r.choice([d for d in DOTS if d[2] != "float16" and d[0] not in FP8])
        self.dt, self.prec, self.acc_dt = dt, prec, acc_dt
        es = esize(dt)
        kind = r.choice(["batched", "ifdot", "whiledot", "transA", "computed", "cacc", "reduce"])
        self.kind = kind
        nw = r.choice([4, 4, 8, 2])
        ns = r.choice([1, 2, 3])
        kmin = 32 if es == 1 else 16
        BM = r.choice([16, 32, 64, 128] if kind != "batched" else [16, 32])
        BN = r.choice([16, 32, 64, 128] if kind != "batched" else [16, 32])
        BK = r.choice([k for k in (16, 32, 64) if k >= kmin])
        BB = r.choice([1, 2, 4]) if kind == "batched" else 1
        self.cx.update(BM=BM, BN=BN, BK=BK)
        if kind == "batched":
            self.cx["BB"] = BB
        self.nw, self.ns = nw, ns
        self.exact = True
        M, N = r.randint(1, 2 * BM), r.randint(1, 2 * BN)
        if kind == "reduce":
            N = r.randint(1, BN)
        K = r.randint(1, 3 * BK) if kind != "batched" else r.randint(1, BK)
        nb = r.randint(1, 2 * BB) if kind == "batched" else 1
        self.M, self.N, self.K = M, N, K
        int_ = dt == "int8"
        zero = "0" if int_ else "0.0"
        kw = (f", input_precision=\"{prec}\"" if prec else "") + (", out_dtype=tl.int32" if int_ else "")
        e = self.emit
        out_dt = "int32" if int_ else "float32"
        if kind == "batched":
            a_h, a_v = values(self.rng, dt, (nb, M, K), True)
            b_h, b_v = values(self.rng, dt, (nb, K, N), True)
            self.inputs += [("A", dt, a_h), ("B", dt, b_h)]
            self.scalars += [("NB", nb), ("M", M), ("N", N), ("K", K)]
            self.grid = (-(-nb // BB) * -(-M // BM) * -(-N // BN),)
            e("pid = tl.program_id(0)")
            e("tiles_m = tl.cdiv(M, BM)")
            e("tiles_n = tl.cdiv(N, BN)")
            e("pb = pid // (tiles_m * tiles_n)")
            e("pm = (pid // tiles_n) % tiles_m")
            e("pn = pid % tiles_n")
            e("rb = pb * BB + tl.arange(0, BB)")
            e("rm = pm * BM + tl.arange(0, BM)")
            e("rn = pn * BN + tl.arange(0, BN)")
            e("rk = tl.arange(0, BK)")
            e("a = tl.load(A + rb[:, None, None] * (M * K) + rm[None, :, None] * K + rk[None, None, :], "
              f"mask=(rb[:, None, None] < NB) & (rm[None, :, None] < M) & (rk[None, None, :] < K), other={zero})")
            e("b = tl.load(B + rb[:, None, None] * (K * N) + rk[None, :, None] * N + rn[None, None, :], "
              f"mask=(rb[:, None, None] < NB) & (rk[None, :, None] < K) & (rn[None, None, :] < N), other={zero})")
            e(f"c = tl.dot(a, b{kw})")
            e("tl.store(C + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], c, "
              "mask=(rb[:, None, None] < NB) & (rm[None, :, None] < M) & (rn[None, None, :] < N))")
            ref = np.matmul(a_v, b_v)
            if int_:
                ref = ref.astype(np.int32)
            self.outs.append(("C", out_dt, ref.reshape(nb * M, N), True, None, (nb * M, N)))
            return ["A", "B", "C"]
        a_shape = (K, M) if kind == "transA" else (M, K)
        a_h, a_v = values(self.rng, dt, a_shape, True)
        b_h, b_v = values(self.rng, dt, (K, N), True)
        if kind == "transA":
            a_v = a_v.T
        self.inputs += [("A", dt, a_h), ("B", dt, b_h)]
        params = ["A", "B"]
        if kind == "cacc":
            c0_h, c0_v = values(self.rng, "float32" if not int_ else "int8", (M, N), True)
            c0_h = c0_h.astype(np.int32) if int_ else c0_h
            self.inputs.append(("C0", out_dt, c0_h))
            params.append("C0")
        self.scalars += [("M", M), ("N", N), ("K", K)]
        tm, tn = -(-M // BM), -(-N // BN)
        self.grid = (tm * tn,)
        e("pid = tl.program_id(0)")
        e("pm = pid // tl.cdiv(N, BN)")
        e("pn = pid % tl.cdiv(N, BN)")
        e("rm = pm * BM + tl.arange(0, BM)")
        e("rn = pn * BN + tl.arange(0, BN)")
        e("rk = tl.arange(0, BK)")
        if kind == "cacc":
            e("acc = tl.load(C0 + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0)")
        else:
            e(f"acc = tl.zeros((BM, BN), dtype=tl.{out_dt})")
        if kind == "whiledot":
            e("k0 = 0")
            e("while k0 < K:")
        else:
            e(f"for k0 in tl.range(0, K, BK, num_stages={ns}):")
        e("kk = k0 + rk", 2)
        if kind == "transA":
            e(f"a = tl.trans(tl.load(A + kk[:, None] * M + rm[None, :], mask=(kk[:, None] < K) & (rm[None, :] < M), other={zero}))", 2)
        else:
            e(f"a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other={zero})", 2)
        e(f"b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other={zero})", 2)
        even = None
        if kind == "computed":
            e(f"a = tl.where(a > 0, a, a * 2).to(tl.{dt})" if not int_ else "a = tl.where(a > 0, a, a * 2).to(tl.int8)", 2)
            a_v = np.where(a_v > 0, a_v, a_v * 2)
        if kind == "ifdot":
            e("if (k0 // BK) % 2 == 0:", 2)
            e(f"acc = tl.dot(a, b, acc{kw})", 3)
            e("else:", 2)
            e(f"acc = acc - tl.dot(a, b{kw})", 3)
            even = np.where((np.arange(K) // BK) % 2 == 0, 1, -1)
        else:
            e(f"acc = tl.dot(a, b, acc{kw})", 2)
        if kind == "whiledot":
            e("k0 += BK", 2)
        a_use = a_v * even[None, :] if even is not None else a_v
        ref = a_use @ b_v
        if kind == "cacc":
            ref = ref + c0_v
        if int_:
            ref = ref.astype(np.int32)
        params.append("C")
        e("tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))")
        self.outs.append(("C", out_dt, ref, True, None, (M, N)))
        if kind == "reduce":
            e("s = tl.sum(tl.where(rn[None, :] < N, acc, 0), 1)")
            e("tl.store(R + rm, s, mask=rm < M)")
            params.append("R")
            rs = ref.sum(axis=1)
            rs = rs.astype(np.int32) if int_ else rs
            self.outs.append(("R", out_dt, rs.reshape(M, 1), True, None, (M, 1)))
        return params

    # -- the chain family (attention's shape) --------------------------------
    def chain(self):
        r = self.r
        dt = r.choice(["float16", "float16", "bfloat16", "float32"])
        prec = r.choice([None, "tf32", "ieee"]) if dt == "float32" else None
        self.dt, self.prec = dt, prec
        nw = r.choice([4, 4, 8])
        ns = r.choice([1, 2, 3])
        BD = r.choice([16, 32, 64, 64, 128])
        BM = r.choice([16, 32, 64, 128])
        BN = r.choice([16, 32, 64, 128])
        while BM * BN > 2048 * nw * 2 or BM * BD > 2048 * nw * 2 or \
                (dt == "float32" and BD * max(BN, BM) > 64 * 64):
            BN = max(16, BN // 2)
            BM = max(16, BM // 2)
            BD = max(16, BD // 2) if BM == 16 and BN == 16 else BD
        self.cx.update(BM=BM, BN=BN, BD=BD)
        self.nw, self.ns = nw, ns
        softmax = r.random() < 0.4
        causal = r.random() < 0.4
        exact = not softmax and r.random() < 0.7
        self.exact = exact
        M = r.randint(1, 3 * BM) if r.random() < 0.6 else BM * r.randint(1, 3)
        N = r.randint(1, 3 * BN) if r.random() < 0.6 else BN * r.randint(1, 3)
        self.M, self.N = M, N
        # integers only: S / 8 then has at most 11 significant bits, so P
        # is exact in the operand dtype (bf16 rounds it, as numpy does)
        qh, qv = values(self.rng, dt, (M, BD), exact, ints=True)
        kh, kv = values(self.rng, dt, (N, BD), exact, ints=True)
        vh, vv = values(self.rng, dt, (N, BD), exact, ints=True)
        self.inputs += [("Q", dt, qh), ("Kp", dt, kh), ("V", dt, vh)]
        # a per-key bias loaded in the loop (a padding mask's or ALiBi's
        # vector), drawn from its own stream so that the kernels of the
        # other seeds stay as they were
        kbias = random.Random(f"kbias{self.seed}").random() < 0.4
        if kbias:
            kbv = np.random.default_rng(self.seed + 7919).integers(-4, 5, size=(N,)).astype(np.float64)
            self.inputs.append(("KB", "float32", kbv.astype(np.float32)))
        self.scalars += [("M", M), ("N", N)]
        self.grid = (-(-M // BM),)
        kw = f", input_precision=\"{prec}\"" if prec else ""
        e = self.emit
        e("rm = tl.program_id(0) * BM + tl.arange(0, BM)")
        e("rd = tl.arange(0, BD)")
        e("q = tl.load(Q + rm[:, None] * BD + rd[None, :], mask=rm[:, None] < M, other=0.0)")
        e("acc = tl.zeros((BM, BD), dtype=tl.float32)")
        if softmax:
            e("m_i = tl.full((BM,), float(\"-inf\"), tl.float32)")
            e("l_i = tl.zeros((BM,), dtype=tl.float32)")
        hi = "N"
        if causal:
            hi = "tl.minimum(N, (tl.program_id(0) + 1) * BM)" if r.random() < 0.5 else "N"
        e(f"for n0 in range(0, {hi}, BN):")
        e("rn = n0 + tl.arange(0, BN)", 2)
        e("k = tl.load(Kp + rn[:, None] * BD + rd[None, :], mask=rn[:, None] < N, other=0.0)", 2)
        e(f"s = tl.dot(q, tl.trans(k){kw})", 2)
        sc = 0.125 if exact else 0.5
        e(f"s = s * {sc}", 2)
        s_ref = (qv @ kv.T) * sc
        if kbias:
            e("kb = tl.load(KB + rn, mask=rn < N, other=0.0)", 2)
            e("s = s + kb[None, :]", 2)
            s_ref = s_ref + kbv[None, :]
        keep = np.ones((M, N), bool)
        if causal:
            keep = np.arange(M)[:, None] >= np.arange(N)[None, :]
        extra = 0.0
        if softmax:
            cond = "rn[None, :] < N"
            if causal:
                cond = "(rm[:, None] >= rn[None, :]) & (rn[None, :] < N)"
            e(f"s = tl.where({cond}, s, float(\"-inf\"))", 2)
            e("m_new = tl.maximum(m_i, tl.max(s, 1))", 2)
            e("m_new = tl.where(m_new == float(\"-inf\"), 0.0, m_new)", 2)
            e("p = tl.exp(s - m_new[:, None])", 2)
            e("alpha = tl.exp(m_i - m_new)", 2)
            e("l_i = l_i * alpha + tl.sum(p, 1)", 2)
            e("acc = acc * alpha[:, None]", 2)
            e("v = tl.load(V + rn[:, None] * BD + rd[None, :], mask=rn[:, None] < N, other=0.0)", 2)
            e(f"acc = tl.dot(p.to(tl.{dt}), v, acc{kw})", 2)
            e("m_i = m_new", 2)
            e("acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]")
            sm = np.where(keep, s_ref, -np.inf)
            mx = np.max(sm, axis=1, keepdims=True)
            mx = np.where(np.isfinite(mx), mx, 0.0)
            p = np.exp(sm - mx)
            lsum = p.sum(axis=1, keepdims=True)
            ref = (p @ vv) / np.where(lsum == 0, 1.0, lsum)
            scale = np.max(np.abs(vv)) * np.ones_like(ref) if N else np.zeros_like(ref)
            tol = {"float16": 2.0 ** -9, "bfloat16": 2.0 ** -6}.get(dt, 2.0 ** -18 if prec == "ieee" else 2.0 ** -9)
        else:
            if causal:
                e("s = tl.where(rm[:, None] >= rn[None, :], s, 0.0)", 2)
            e("v = tl.load(V + rn[:, None] * BD + rd[None, :], mask=rn[:, None] < N, other=0.0)", 2)
            e(f"acc = tl.dot(s.to(tl.{dt}), v, acc{kw})", 2)
            pr = np.where(keep, s_ref, 0.0)
            p_r = U.round_to(pr, dt) if dt != "float32" else pr
            ref = p_r @ vv
            scale = np.abs(p_r) @ np.abs(vv)
            eps_in = 2.0 ** -10 if dt == "float32" and prec in (None, "tf32") else 0.0
            pround = 0.0 if exact else 2.0 ** -(MANT[dt] - 1) if dt != "float32" else 0.0
            tol = eps_in * 3 + pround + (N + 2) * 2.0 ** -23 + 2.0 ** -22
            scale = scale + (np.abs(pr) @ np.abs(vv)) * (0 if exact else 1)
            # S's own rounding, a sum of BD products (and the bias added),
            # carried through P V: up to (BD + 2) units of the last place
            # of |Q| |K|^T sc an element of S
            s_err = np.where(keep, (np.abs(qv) @ np.abs(kv).T) * sc, 0.0) * (BD + 2) * 2.0 ** -23
            if not exact:
                extra = s_err @ np.abs(vv)
        out_dt = r.choice(["float32", dt if dt != "float32" else "float32"])
        e(f"tl.store(O + rm[:, None] * BD + rd[None, :], acc.to(tl.{out_dt}), mask=rm[:, None] < M)")
        self.outs.append(("O", out_dt, ref, exact, scale * tol + extra, (M, BD)))
        return ["Q", "Kp", "V"] + (["KB"] if kbias else []) + ["O"]

    def kernel(self):
        x = self.r.random()
        family = "chain" if x < 0.18 else "desc" if x < 0.32 else "misc" if x < 0.47 else "matmul"
        self.family = family
        params = {"chain": self.chain, "desc": self.descs, "matmul": self.matmul, "misc": self.misc}[family]()
        cxp = [f"{k}: tl.constexpr" for k in self.cx]
        head = ["import ctriton as triton", "import ctriton.language as tl", "", "",
                "@triton.jit", f"def kernel({', '.join(params + [s for s, _ in self.scalars] + cxp)}):"]
        self.src = "\n".join(head + self.lines) + "\n"
        return self


def make(seed):
    g = DotGen(seed).kernel()
    return {"seed": seed, "kind": "valid", "src": g.src, "g": g, "constexprs": dict(g.cx)}


def signature(g):
    sig = F.pointer_signature(g, SIG)
    sig.update((s, "i32") for s, _ in g.scalars)
    return sig


# ---------------------------------------------------------------------------
# Running one kernel
# ---------------------------------------------------------------------------

def host_out(dt, shape):
    store = np.uint8 if dt in FP8 else U.storage(dt)
    return np.zeros(shape, store)


def compare(o, host):
    """None when the output host array matches o's reference, else a message."""
    p, dt, ref, exact, tol, _ = o
    M, N = ref.shape
    got = host[:, :N]
    if dt in ("float16", "bfloat16", "float32"):
        got = U.to_f64(got, dt)
        want = U.round_to(ref, dt) if dt != "float32" else np.asarray(ref, np.float32).astype(np.float64)
        if exact:
            bad = got != want
        else:
            ulp = 2.0 ** -(MANT[dt] - 1) * np.abs(ref)
            bad = ~(np.abs(got - ref) <= tol + ulp + 1e-30)
    else:
        want = ref
        bad = got != want
    if bad.any():
        i, j = np.argwhere(bad)[0]
        return (f"{p} ({dt}): {int(bad.sum())} of {bad.size} elements differ; first at ({i}, {j}): "
                f"got {got[i, j]!r}, want {want[i, j]!r}")
    return None


def with_descriptors(g, names, arrays):
    """The arguments: arrays, the ones of host descriptors as TensorDescriptors."""
    if not g.host_desc:
        return list(arrays)
    from ctriton.tools.tensor_descriptor import TensorDescriptor
    out = []
    for n, a in zip(names, arrays):
        if n in g.desc:
            shape, strides, block = g.desc[n]
            a = TensorDescriptor(a, shape, strides, block)
        out.append(a)
    return out


def gpu_compile(fn, args, cx, opts):
    """What a launch with these arguments compiles (pointer alignment,
    divisibility and unit strides specialized as the launcher does), for
    sm_80 and sm_90: {arch: CompiledKernel}."""
    import ctriton as triton
    from ctriton.backends.compiler import GPUTarget
    _, sigs, specs = fn.specialization(*args, **cx)
    bound = dict(zip(fn.arg_names, list(args) + [cx[n] for n in fn.arg_names[len(args):]]))
    src = fn._ct_source(bound, sigs, specs)
    ks = {}
    for arch in (80, 90):
        try:
            ks[arch] = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(opts))
        except triton.OutOfResources as e:  # its constructor takes the resource's figures
            raise RuntimeError(f"sm_{arch}: OutOfResources: {e}") from e
        except Exception as e:
            raise type(e)(f"sm_{arch}: {e}") from e
    return ks


def run_one(seed, tmpdir, gpu=True, device="cpu", show=False):
    import ctriton as triton
    import ctriton.language as tl

    k = make(seed)
    g = k["g"]
    fn = F.load_kernel(k["src"], seed, tmpdir)
    cx = k["constexprs"]
    opts = {"num_warps": g.nw, "num_stages": g.ns}
    outs = [host_out(o[1], o[5]) for o in g.outs]
    scal = [v for _, v in g.scalars]
    args = [F.as_arg(host, dt) for _, dt, host in g.inputs] + [F.as_arg(h, o[1]) for o, h in zip(g.outs, outs)]
    names = [p for p, _, _ in g.inputs] + [o[0] for o in g.outs]
    args = with_descriptors(g, names, args)
    if gpu:
        try:
            ks = gpu_compile(fn, args + scal, cx, opts)
        except Exception as e:
            msg = f"{type(e).__name__}: {e}"
            if any(w in msg for w in F.BAD_WORDS):
                return "internal", msg
            return "gpu", msg
        adv = ks[90].metadata.wgmma_advisory
        if show:
            for arch, kk in ks.items():
                ptx = kk.asm["ptx"]
                print(f"sm_{arch}: {kk.n_regs} registers, {kk.n_spills} bytes spilled, "
                      f"{kk.metadata.shared} bytes shared; wgmma {ptx.count('wgmma.mma_async')}, "
                      f"mma.sync {ptx.count('mma.sync')}, cp.async {ptx.count('cp.async.c')}, "
                      f"bulk tensor {ptx.count('cp.async.bulk.tensor')}"
                      + (f"; ptxas advisory {kk.metadata.wgmma_advisory}" if kk.metadata.wgmma_advisory else ""))
    try:
        if device == "cuda":
            import torch
            tens = []
            for p, dt, host in g.inputs:
                h16 = np.ascontiguousarray(host)
                t = torch.from_numpy(h16.view(np.int16) if h16.dtype == np.uint16 else h16).cuda()
                if dt == "bfloat16":
                    t = t.view(torch.bfloat16)
                elif dt in FP8:
                    t = t.view(getattr(torch, TORCH_FP8[dt]))
                tens.append(t)
            touts = []
            for o, h in zip(g.outs, outs):
                t = torch.from_numpy(h.view(np.int16) if h.dtype == np.uint16 else h).cuda()
                touts.append(t.view(torch.bfloat16) if o[1] == "bfloat16" else t)
            if g.desc and not g.host_desc:
                triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                             device="cuda"))
            fn[g.grid](*with_descriptors(g, names, tens + touts), *scal, **cx, **opts)
            torch.cuda.synchronize()
            for h, t in zip(outs, touts):
                h[...] = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).cpu().numpy().view(h.dtype)
        else:
            fn[g.grid](*args, *scal, **cx, **opts)
    except Exception as e:
        msg = f"{device}: {type(e).__name__}: {e}"
        if any(w in msg for w in F.BAD_WORDS):
            return "internal", msg
        return ("unsupported" if "not supported" in msg else "error"), msg
    for o, h in zip(g.outs, outs):
        bad = compare(o, h)
        if bad:
            return "mismatch", bad
    # an accumulator of at least 256 elements a thread (128x256 on one
    # warpgroup) cannot stay in registers: ptxas spills it and waits or
    # fences around the MMAs to do so (C7511, or C7517 / C7519 where it
    # injects them), in Triton's build as in ctriton's
    starved = acc_elems(cx) >= 256 * 32 * g.nw and ks[90].n_spills > 0 if gpu else False
    if gpu and adv and adv != "C7511" and not starved:
        # right results, but ptxas serialized the warpgroup MMAs (or put a
        # wait or fence among them) where the backend issued them to
        # overlap. C7511 (serialized for want of registers) is the tile's
        return "advisory", f"sm_90: ptxas advisory {adv} on the warpgroup MMAs"
    return "ok", ""


def acc_elems(cx):
    """Elements of the accumulator tile (0 where the kernel names no BM, BN)."""
    return cx.get("BM", 0) * cx.get("BN", 0)


def child_main(seeds, gpu, device):
    F.child_loop(seeds, lambda s, tmpdir: run_one(s, tmpdir, gpu, device), cpu=device == "cpu")


def save(out, seed, status, msg):
    k = make(seed)
    g = k["g"]
    d = os.path.join(out, f"{status}-{seed}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.py"), "w") as f:
        f.write(k["src"])
    with open(os.path.join(d, "info.json"), "w") as f:
        json.dump({"seed": seed, "status": status, "message": msg, "constexprs": k["constexprs"],
                   "num_warps": g.nw, "num_stages": g.ns, "grid": g.grid,
                   "scalars": dict(g.scalars), "signature": signature(g),
                   "reproduce": f"python3 tests/fuzz/fuzz_dot.py --seed {seed} --show"}, f, indent=1)


def main():
    ap = F.arg_parser(__doc__, 120.0, "fuzz-dot-out")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the kernels run")
    a = ap.parse_args()
    if a.child is not None:
        child_main([int(s) for s in a.child.split(",") if s], not a.no_gpu, a.device)
        return 0
    if a.seed is not None and a.show:
        k = make(a.seed)
        g = k["g"]
        print(f"# seed {a.seed}: {g.family} {g.dt}, constexprs {k['constexprs']}, num_warps {g.nw}, "
              f"num_stages {g.ns}, grid {g.grid}, {dict(g.scalars)}\n{k['src']}")
        if a.device == "cpu":
            from ctriton.runtime.driver import driver
            driver.set_active("cpu")
        print(run_one(a.seed, tempfile.mkdtemp(), not a.no_gpu, a.device, show=True))
        return 0
    lo, hi = (a.seed, a.seed + 1) if a.seed is not None else map(int, a.seeds.split(":"))
    t0 = time.time()
    res = F.fuzz(range(lo, hi), a.jobs, a.timeout, a.out, not a.no_gpu, batch=10, log=print,
                 script=os.path.abspath(__file__), saver=save, extra=("--device", a.device))
    summary = ", ".join(f"{k} {len(v)}" for k, v in sorted(res.items()))
    print(f"{hi - lo} kernels in {time.time() - t0:.0f} s: {summary}")
    return 1 if any(k in F.FAILURES for k in res) else 0


if __name__ == "__main__":
    sys.exit(main())
