"""A kernel fuzzer for ctriton.

Each seed gives one kernel, reproducibly:
  - a *valid* kernel (most seeds): loads of 1 to 3 inputs of random dtypes
    (ints, f16, bf16, f32, f64, fp8) over a 1-D or 2-D block with masks, a
    random expression DAG (arithmetic with Triton's promotion and weak
    scalars, C integer division, bitwise ops and shifts, comparisons, where,
    min/max, casts, exp/sqrt/div, sum/max/min reductions, cumsum), stores of
    the results. The generator evaluates the same DAG in numpy as it goes,
    so every kernel comes with its reference.
  - a *mutated* kernel: a valid one with its masks dropped, a name
    undefined, a type or shape made wrong, or a block size made odd.

Every kernel is compiled for sm_80 and sm_90, every 4th also as a debug
build for sm_90 (integer overflow asserts; the PTX assembled by ptxas when
it is installed) and run on the CPU backend (mutated ones with the
sanitizer on, so that an access out of bounds is an exception and not the
kernel's own memory corruption). A valid kernel must compile everywhere and
match its reference; a mutated one may fail, but only with a Python
exception. Failures: a crash (the process dies), a hang (over the time
limit), PTX that ptxas rejects or a failed GPU compile of a valid kernel, a
CPU result that differs from numpy, an exception from a valid kernel, and
an "internal error" message from any kernel. Each failing kernel is saved
(source, arguments, message) under the output directory.

Kernels run in child processes, a batch per child; the parent watches each
kernel's progress, and a child that dies or stalls is replaced, the kernel
it was on recorded as a crash or hang.

    python3 tests/fuzz/fuzz.py --seeds 0:200                 # a range
    python3 tests/fuzz/fuzz.py --seeds 0:10000 --jobs 2 --out fuzz-out
    python3 tests/fuzz/fuzz.py --seed 1234 --show            # one kernel
"""
import argparse
import importlib.util
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
sys.path.insert(0, os.path.join(REPO, "python"))

import cpu_util as U  # noqa: E402  dtype models shared with the CPU tests

INTS = U.INTS
FLOATS = ["float16", "bfloat16", "float32", "float64"]
FP8 = {"float8e5": "e5m2", "float8e4nv": "e4m3"}
SIG = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
       "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16",
       "float32": "fp32", "float64": "fp64", "float8e5": "fp8e5", "float8e4nv": "fp8e4nv",
       "bool": "i1"}
RTOL = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 2e-5, "float64": 1e-12}


# ---------------------------------------------------------------------------
# Generation: a kernel's source and its numpy reference, built together
# ---------------------------------------------------------------------------

class Val:
    """A value of the kernel: its expression (a variable name), dtype, the
    reference (numpy, float64 for floats, the dtype itself for ints, bool),
    and whether it is computed exactly (no approximate op on its path)."""

    def __init__(self, name, dtype, ref, exact=True, scale=None):
        self.name, self.dtype, self.ref, self.exact = name, dtype, ref, exact
        self.scale = scale  # for approximate values: the magnitude errors scale with


def round_float(x, dtype):
    x = np.asarray(x, np.float64)
    return U.round_to(x, dtype) if dtype != "float64" else x


def as_dtype(ref, frm, to):
    """Conversion of a reference value between dtypes (ints wrap, floats round)."""
    if to == "bool":
        return ref != 0
    if frm == "bool":
        ref = ref.astype(np.int64)
        frm = "int64"
    if to in FLOATS:
        if frm in INTS:
            if to in ("float16", "bfloat16"):
                v = ref.astype(np.float32).astype(np.float64)  # via f32, as the backends do
            else:
                v = ref.astype(to).astype(np.float64)
            return round_float(v, to)
        return round_float(ref, to)
    # int target: from ints only (float -> int is not generated)
    return ref.astype(to)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.lines = []
        self.n = 0
        self.vals = []

    def var(self):
        self.n += 1
        return f"v{self.n}"

    def emit(self, s):
        self.lines.append("    " + s)

    # -- the frame: inputs, offsets, masks ---------------------------------
    def frame(self):
        r = self.r
        self.two_d = r.random() < 0.35
        if self.two_d:
            self.BM = r.choice([1, 2, 4, 8, 16, 32])
            self.BN = r.choice([1, 2, 4, 8, 16, 32, 64])
            self.M = r.randint(1, self.BM * 3)
            self.N = r.randint(1, self.BN)
            self.grid = -(-self.M // self.BM)
            self.shape = (self.grid * self.BM, self.BN)
            self.valid = np.zeros(self.shape, bool)
            self.valid[:self.M, :self.N] = True
            self.emit("rm = tl.program_id(0) * BM + tl.arange(0, BM)")
            self.emit("rn = tl.arange(0, BN)")
            self.emit("offs = rm[:, None] * N + rn[None, :]")
            self.emit("mask = (rm[:, None] < M) & (rn[None, :] < N)")
        else:
            self.B = r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024])
            self.M = r.randint(1, self.B * 4)
            self.grid = -(-self.M // self.B)
            self.shape = (self.grid * self.B,)
            self.valid = np.arange(self.shape[0]) < self.M
            self.emit("offs = tl.program_id(0) * B + tl.arange(0, B)")
            self.emit("mask = offs < M")
        self.inputs = []
        for i in range(r.randint(1, 3)):
            dt = r.choice(INTS * 1 + FLOATS * 2 + list(FP8))
            self.load(f"X{i}", dt)

    def host_shape(self):
        return (self.M, self.N) if self.two_d else (self.M,)

    def load(self, pname, dt):
        r = self.r
        hs = self.host_shape()
        if dt in FP8:
            codes = self.np.integers(0, 256, size=hs, dtype=np.uint8)
            table = U.fp8_table(FP8[dt])
            codes = np.where(np.isnan(table[codes]) | np.isinf(table[codes]), 0x38, codes).astype(np.uint8)
            host, vals = codes, table[codes]
        elif dt in FLOATS:
            v = self.np.uniform(-2, 2, size=hs)
            if r.random() < 0.5:
                v = np.round(v * 4) / 4  # small exact values: cancellations are exact too
            host = U.to_storage(v, dt)
            vals = U.to_f64(host, dt)
        else:
            info = np.iinfo(dt)
            lo, hi = (info.min, info.max) if r.random() < 0.3 else (max(info.min, -50), min(info.max, 50))
            host = self.np.integers(lo, hi, size=hs, dtype=dt, endpoint=True)
            vals = host
        self.inputs.append((pname, dt, host))
        other = r.choice(["0", "1"]) if dt not in FP8 else "0"
        name = self.var()
        self.emit(f"{name} = tl.load({pname} + offs, mask=mask, other={other})")
        full = np.full(self.shape, float(other) if (dt in FLOATS or dt in FP8) else int(other),
                       np.float64 if (dt in FLOATS or dt in FP8) else dt)
        full[self.valid] = vals.reshape(-1)
        if dt in FP8:  # fp8 is only converted, never computed with
            tgt = r.choice(["float32", "float16"])
            name2 = self.var()
            self.emit(f"{name2} = {name}.to(tl.{tgt})")
            self.vals.append(Val(name2, tgt, full))
            self.fp8_src = (name2, dt)
        else:
            self.vals.append(Val(name, dt, full))

    # -- ops -------------------------------------------------------------
    def pick(self, pred=lambda v: True, exact=True):
        c = [v for v in self.vals if pred(v) and (v.exact or not exact)]
        return self.r.choice(c) if c else None

    def add(self, code, dtype, ref, exact=True, scale=None):
        if dtype in FLOATS:
            ref = np.asarray(ref, np.float64)
            if np.isnan(ref[self.valid]).any():
                return None  # keeps NaN out of the values that min/max/where see
        name = self.var()
        self.emit(f"{name} = {code}")
        v = Val(name, dtype, ref, exact, scale)
        self.vals.append(v)
        return v

    def binop(self):
        r = self.r
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return
        op = r.choice(["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "max", "min"])
        intonly = op in ("//", "%", "&", "|", "^", "<<", ">>")
        if intonly and a.dtype not in INTS:
            return
        scalar = r.random() < 0.3
        if scalar:
            lit = r.choice([1, 2, 3, 5]) if a.dtype in INTS or intonly else r.choice([0.5, 1.5, 2.0, 3.0])
            if a.dtype in INTS and isinstance(lit, float):
                dt = "float32"
            else:
                dt = a.dtype
            b = Val(repr(lit), dt, np.full(self.shape, lit, np.float64 if dt in FLOATS else dt))
        else:
            b = self.pick(lambda v: v.dtype != "bool" and (v.dtype in INTS or not intonly))
            if b is None:
                return
            if op in ("/", "//", "%") and a.dtype in INTS and b.dtype in INTS and \
                    U.is_signed(a.dtype) != U.is_signed(b.dtype):
                return  # Triton refuses integer division of mixed signedness
            dt = U.promote(a.dtype, b.dtype, div_or_mod=op in ("/", "%"))
        if op == "/":
            dt = "float32" if dt in INTS else dt
            if dt in ("float16", "bfloat16"):
                dt = "float32"
        ar, br = as_dtype(a.ref, a.dtype, dt), as_dtype(b.ref, b.dtype, dt)
        an, bn = a.name, b.name
        with np.errstate(all="ignore"):
            if op in ("+", "-", "*"):
                f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
                ref = round_float(f(ar, br), dt) if dt in FLOATS else f(ar, br)
                if dt == "float32":
                    ref = f(ar.astype(np.float32), br.astype(np.float32)).astype(np.float64)
                code = f"{an} {op} {bn}"
                return self.add(code, dt, ref)
            if op == "/":
                ref = (ar.astype(np.float64) / br.astype(np.float64)) if dt == "float64" else \
                    (ar.astype(np.float32) / br.astype(np.float32)).astype(np.float64)
                if not np.isfinite(ref[self.valid]).all():
                    return
                return self.add(f"{an} / {bn}", dt, ref, exact=False, scale=np.abs(ref))
            if op in ("max", "min"):
                f = np.maximum if op == "max" else np.minimum
                return self.add(f"tl.{op}imum({an}, {bn})", dt, f(ar, br))
            # integer ops
            if op in ("//", "%"):
                bn = f"(({bn} & 7) + 1)"
                br = ((br & 7) + 1).astype(dt)
                ref = U.c_div(ar, br) if op == "//" else U.c_mod(ar, br)
                return self.add(f"{an} {op} {bn}", dt, ref)
            if op in ("<<", ">>"):
                bn = f"({bn} & 3)"
                br = (br & 3).astype(dt)
                if op == "<<":
                    ref = ar << br
                elif U.is_signed(a.dtype) != U.is_signed(dt):
                    # as Triton: the left operand's own signedness picks an
                    # arithmetic or a logical shift of the promoted bits
                    sd = np.dtype(dt).str.replace("u", "i") if U.is_signed(a.dtype) else np.dtype(dt).str.replace("i", "u")
                    ref = (ar.view(sd) >> br.astype(sd)).view(dt)
                else:
                    ref = ar >> br
                return self.add(f"{an} {op} {bn}", dt, ref.astype(dt))
            f = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op]
            return self.add(f"{an} {op} {bn}", dt, f(ar, br).astype(dt))

    def unop(self):
        r = self.r
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return
        op = r.choice(["neg", "abs", "cast", "cast", "exp", "sqrt"])
        with np.errstate(all="ignore"):
            if op == "neg":
                ref = -a.ref if a.dtype in FLOATS else (-a.ref).astype(a.dtype)
                if a.dtype in INTS and a.dtype.startswith("u"):
                    return
                return self.add(f"-{a.name}", a.dtype, ref)
            if op == "abs":
                if a.dtype.startswith("u"):
                    return
                return self.add(f"tl.abs({a.name})", a.dtype,
                                np.abs(a.ref) if a.dtype in FLOATS else np.abs(a.ref).astype(a.dtype))
            if op == "cast":
                to = r.choice(INTS + FLOATS) if a.dtype in INTS else r.choice(FLOATS)
                return self.add(f"{a.name}.to(tl.{to})", to, as_dtype(a.ref, a.dtype, to))
            if a.dtype not in ("float32", "float64"):
                return
            if op == "exp":
                x = np.clip(a.ref, -80, 80)
                if not np.array_equal(x[self.valid], a.ref[self.valid]):
                    return
                ref = np.exp(a.ref)
                ref = ref if a.dtype == "float64" else ref.astype(np.float32).astype(np.float64)
                return self.add(f"tl.exp({a.name})", a.dtype, ref, exact=False, scale=np.abs(ref))
            ref = np.sqrt(np.abs(a.ref))
            return self.add(f"tl.sqrt(tl.abs({a.name}))", a.dtype, ref, exact=False, scale=ref)

    def compare(self):
        a = self.pick(lambda v: v.dtype != "bool")
        b = self.pick(lambda v: v.dtype != "bool")
        x = self.pick(lambda v: v.dtype != "bool")
        y = self.pick(lambda v: v.dtype == (x.dtype if x else None))
        if not (a and b and x and y):
            return
        op = self.r.choice(["<", "<=", ">", ">=", "==", "!="])
        dt = U.promote(a.dtype, b.dtype)
        ar, br = as_dtype(a.ref, a.dtype, dt), as_dtype(b.ref, b.dtype, dt)
        f = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
             "==": np.equal, "!=": np.not_equal}[op]
        c = self.add(f"{a.name} {op} {b.name}", "bool", f(ar, br))
        if c is not None:
            self.add(f"tl.where({c.name}, {x.name}, {y.name})", x.dtype, np.where(c.ref, x.ref, y.ref))

    def loop(self):
        """for i in range(K): acc = acc * c + x (K a runtime argument), or
        tl.static_range: the same, unrolled."""
        r = self.r
        x = self.pick(lambda v: v.dtype in INTS or v.dtype in ("float32", "float64"))
        if x is None:
            return
        c = r.choice([1, 2, 3]) if x.dtype in INTS else r.choice([0.5, 1.0, 2.0])
        k = r.randint(0, 4)
        rng = f"range({k} + M * 0)" if r.random() < 0.5 else f"tl.static_range({k})"
        acc = self.var()
        self.emit(f"{acc} = {x.name}")
        self.emit(f"for _ in {rng}:")
        self.emit(f"    {acc} = {acc} * {c!r} + {x.name}")
        ref = x.ref.copy()
        with np.errstate(all="ignore"):
            for _ in range(k):
                if x.dtype in INTS:
                    ref = (ref * np.array(c, x.dtype) + x.ref).astype(x.dtype)
                elif x.dtype == "float32":
                    ref = (ref.astype(np.float32) * np.float32(c) + x.ref.astype(np.float32)).astype(np.float64)
                else:
                    ref = ref * c + x.ref
        if x.dtype in FLOATS and np.isnan(ref[self.valid]).any():
            self.emit(f"{acc} = {x.name}")
            ref = x.ref
        self.vals.append(Val(acc, x.dtype, ref))

    def branch(self):
        """if M > t: (runtime scalar condition) one value, else another."""
        a = self.pick(lambda v: v.dtype != "bool")
        b = self.pick(lambda v: a is not None and v.dtype == a.dtype)
        if a is None or b is None:
            return
        t = self.r.randint(0, 2 * self.M)
        name = self.var()
        self.emit(f"if M > {t}:")
        self.emit(f"    {name} = {a.name}")
        self.emit("else:")
        self.emit(f"    {name} = {b.name}")
        self.vals.append(Val(name, a.dtype, a.ref if self.M > t else b.ref, a.exact and b.exact,
                             a.scale if self.M > t else b.scale))

    def reduce(self):
        r = self.r
        a = self.pick(lambda v: v.dtype in ("int32", "int64", "float32", "float64"))
        if a is None:
            return
        kind = r.choice(["sum", "max", "min", "cumsum"])
        axis = r.choice([0, 1]) if self.two_d else 0
        if self.two_d:
            ref = a.ref.reshape(self.grid, self.BM, self.BN)
        else:
            ref = a.ref.reshape(self.grid, self.B)
        ax = axis + 1
        with np.errstate(all="ignore"):
            if kind == "cumsum":
                out = np.cumsum(ref, axis=ax)
                if a.dtype in INTS:
                    out = np.cumsum(ref.astype(a.dtype), axis=ax).astype(a.dtype)
                exact = a.dtype in INTS
                scale = np.cumsum(np.abs(ref), axis=ax).reshape(self.shape) if not exact else None
                v = self.add(f"tl.cumsum({a.name}, {axis})", a.dtype, out.reshape(self.shape), exact, scale)
                return v
            f = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
            out = f(ref, axis=ax)
            if a.dtype in INTS:
                out = f(ref.astype(a.dtype), axis=ax).astype(a.dtype)
            exact = kind != "sum" or a.dtype in INTS
            scale = np.sum(np.abs(ref), axis=ax) if not exact else None
        name = self.var()
        self.emit(f"{name} = tl.{kind}({a.name}, {axis})")
        self.reductions.append((name, a.dtype, axis, out, exact, scale))

    # -- the whole kernel ------------------------------------------------
    def kernel(self):
        self.reductions = []
        self.fp8_src = None
        self.frame()
        for _ in range(self.r.randint(1, 8)):
            g = self.r.random()
            if g < 0.45:
                self.binop()
            elif g < 0.65:
                self.unop()
            elif g < 0.8:
                self.compare()
            elif g < 0.87:
                self.reduce()
            elif g < 0.94:
                self.loop()
            else:
                self.branch()
        # outputs: (param, dtype, reference in the host array's layout, the
        # elements to compare, exact, error scale, host shape)
        outs = []

        def frame_out(p, v, dt):
            sc = None if v.scale is None else np.asarray(v.scale)[self.valid]
            ref = v.ref[self.valid]  # row-major: the host array's order
            outs.append((p, dt, ref, np.ones(ref.size, bool), v.exact, sc, self.host_shape()))

        cands = [v for v in self.vals[len(self.inputs):] if v.dtype != "bool"] or \
            [v for v in self.vals if v.dtype != "bool"]
        for j, v in enumerate(self.r.sample(cands, min(len(cands), self.r.randint(1, 2)))):
            p = f"Y{j}"
            self.emit(f"tl.store({p} + offs, {v.name}, mask=mask)")
            frame_out(p, v, v.dtype)
        if self.fp8_src and self.r.random() < 0.5:  # an exact fp8 round trip
            name, dt = self.fp8_src
            v = next(x for x in self.vals if x.name == name)
            p = f"Y{len(outs)}"
            self.emit(f"tl.store({p} + offs, {name}.to(tl.{dt}), mask=mask)")
            frame_out(p, v, dt)
        for j, (name, dt, axis, out, exact, scale) in enumerate(self.reductions):
            p = f"R{j}"
            ref = out.reshape(-1)
            sc = None if scale is None else scale.reshape(-1)
            if not self.two_d:
                self.emit(f"tl.store({p} + tl.program_id(0), {name})")
                vm = np.ones(self.grid, bool)
            elif axis == 1:
                self.emit(f"tl.store({p} + rm, {name}, mask=rm < M)")
                vm = np.arange(ref.size) < self.M
            else:
                self.emit(f"tl.store({p} + tl.program_id(0) * BN + rn, {name}, mask=rn < N)")
                vm = np.tile(np.arange(self.BN) < self.N, self.grid)
            outs.append((p, dt, ref, vm, exact, sc, (ref.size,)))
        self.outs = outs
        params = [p for p, _, _ in self.inputs] + [o[0] for o in outs]
        scal = ["M", "N", "BM: tl.constexpr", "BN: tl.constexpr"] if self.two_d else ["M", "B: tl.constexpr"]
        head = ["import ctriton as triton", "import ctriton.language as tl", "", "",
                "@triton.jit", f"def kernel({', '.join(params + scal)}):"]
        self.src = "\n".join(head + self.lines) + "\n"
        return self

    def mutate(self):
        """A broken variant of the kernel: (kind, source, constexpr changes)."""
        r = self.r
        kinds = ["nomask", "undefined", "badtype", "badshape", "oddblock", "swap"]
        kind = r.choice(kinds)
        src = self.src
        cx = {}
        if kind == "nomask":
            src = src.replace(", mask=mask, other=0)", ")").replace(", mask=mask, other=1)", ")") \
                     .replace(", mask=mask)", ")").replace(", mask=rm < M)", ")").replace(", mask=rn < N)", ")")
        elif kind == "undefined":
            names = [v.name for v in self.vals]
            victim = r.choice(names)
            src = src.replace(f"= {victim}", "= undefined_name", 1) if f"= {victim}" in src else \
                src.replace(f"({victim}", "(undefined_name", 1)
        elif kind == "badtype":
            lines = src.splitlines()
            body = [i for i, s in enumerate(lines) if s.startswith("    v")]
            i = r.choice(body)
            name = lines[i].split("=")[0].strip()
            lines.insert(i + 1, f"    {name} = {name}.to(tl.float32) << 1")
            src = "\n".join(lines) + "\n"
        elif kind == "badshape":
            src = src.replace("tl.arange(0, B)", "tl.arange(0, B)[:, None]", 1) if not self.two_d else \
                src.replace("rn[None, :]", "rn[:, None]", 1)
        elif kind == "oddblock":
            cx = {"B": 3} if not self.two_d else {"BN": 3}
        elif kind == "swap":
            src = src.replace("tl.load(X0 + offs", "tl.load(offs + offs", 1)
        return kind, src, cx


def make(seed):
    """The kernel of seed: a dict with source, arguments and references."""
    g = Gen(seed).kernel()
    mutated = seed % 5 == 4
    kind, src, cx = ("valid", g.src, {}) if not mutated else g.mutate()
    constexprs = {"BM": g.BM, "BN": g.BN} if g.two_d else {"B": g.B}
    constexprs.update(cx)
    return {"seed": seed, "kind": kind, "src": src, "g": g, "constexprs": constexprs}


# ---------------------------------------------------------------------------
# Running one kernel (in a child process)
# ---------------------------------------------------------------------------

BAD_WORDS = ("internal error", "invalid LLVM IR", "LLVM fatal", "LLVM ERROR", "frontend produced invalid")
# Failures already known and tracked, counted apart until fixed (substring
# of the message -> what it is). None at present.
KNOWN = {}


def as_arg(host, dt):
    """A host array as a kernel argument of dtype dt (bf16 and fp8 travel
    as their bits, reinterpreted)."""
    import ctriton as triton
    import ctriton.language as tl
    a = np.ascontiguousarray(host)
    if dt == "bfloat16":
        return triton.reinterpret(a, tl.bfloat16)
    if dt in FP8:
        return triton.reinterpret(a, getattr(tl, dt))
    return a


def load_kernel(src, seed, tmpdir):
    path = os.path.join(tmpdir, f"fuzz_kernel_{seed}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"fuzz_kernel_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel


def pointer_signature(g, table=SIG):
    """The signature of a generated kernel's pointer parameters: its inputs,
    then its outputs (dtype names through table)."""
    sig = {p: "*" + table[dt] for p, dt, _ in g.inputs}
    sig.update((o[0], "*" + table[o[1]]) for o in g.outs)
    return sig


def signature(g):
    sig = pointer_signature(g)
    sig["M"] = "i32"
    if g.two_d:
        sig["N"] = "i32"
    return sig


def run_one(seed, tmpdir, gpu=True):
    """Compiles and runs the kernel of seed. Returns (status, message):
    status "ok", "rejected" (a mutated kernel refused with an exception),
    "unsupported" (a valid kernel refused as "not supported": a known gap,
    counted apart), or a failure: "gpu", "mismatch", "error", "internal"."""
    import ctriton as triton
    import ctriton.language as tl
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler.compiler import ASTSource

    k = make(seed)
    g, valid = k["g"], k["kind"] == "valid"
    try:
        fn = load_kernel(k["src"], seed, tmpdir)
    except Exception as e:  # a mutation Python itself rejects
        return ("rejected", f"{type(e).__name__}: {e}") if not valid else ("error", traceback.format_exc())
    cx = k["constexprs"]
    gaps = ""  # a GPU compile refused as "not supported": reported if all else is fine
    # 1. GPU compiles (sm_80, sm_90; every 4th seed also a debug build for
    # sm_90, with its overflow asserts), PTX through ptxas when present
    if gpu:
        for arch, debug in ((80, False), (90, False), (90, True)):
            if debug and seed % 4:
                continue
            try:
                triton.compile(ASTSource(fn, signature=signature(g), constexprs=cx),
                               target=GPUTarget("cuda", arch, 32), options={"debug": debug})
            except Exception as e:
                msg = f"sm_{arch}{' debug' if debug else ''}: {type(e).__name__}: {e}"
                if any(w in msg for w in BAD_WORDS):
                    return "internal", msg
                if valid and "not supported" in msg:
                    gaps = msg
                    break
                if valid:
                    return "gpu", msg
                return "rejected", msg
    # 2. the CPU run
    args = [as_arg(host, dt) for _, dt, host in g.inputs]
    outs = []
    for o in g.outs:
        p, dt, shape = o[0], o[1], o[6]
        store = np.uint8 if dt in FP8 else U.storage(dt)
        a = np.zeros(shape, store)
        outs.append(a)
        args.append(triton.reinterpret(a, tl.bfloat16) if dt == "bfloat16" else
                    triton.reinterpret(a, getattr(tl, dt)) if dt in FP8 else a)
    scal = [g.M, g.N] if g.two_d else [g.M]
    grid = (g.grid,)
    try:
        fn[grid](*args, *scal, **cx, sanitize=not valid, enable_fp_fusion=False)
    except Exception as e:
        msg = f"cpu: {type(e).__name__}: {e}"
        if any(w in msg for w in BAD_WORDS):
            return "internal", msg
        if valid:
            return ("unsupported" if "not supported" in msg else "error"), msg
        return "rejected", msg
    if not valid:
        return "ok", ""
    # 3. the comparison (also when a GPU compile was refused)
    for o, a in zip(g.outs, outs):
        p, dt, ref, vm, exact, scale = o[:6]
        got = a.reshape(-1)
        if dt in FP8:
            got = U.fp8_table(FP8[dt])[got]
        elif dt in FLOATS:
            got = U.to_f64(got, dt)
        got, want = got[vm], np.asarray(ref).reshape(-1)[vm]
        if dt in FLOATS or dt in FP8:
            if exact:
                bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
            else:
                sc = np.asarray(scale).reshape(-1)[vm]
                r = RTOL.get(dt, 2e-3) * 4
                bad = ~np.isclose(got, want, rtol=r, atol=r * sc + 1e-300, equal_nan=True)
        else:
            bad = got != want.astype(got.dtype)
        if bad.any():
            i = int(np.argmax(bad))
            return "mismatch", (f"{p} ({dt}): {int(bad.sum())} of {bad.size} elements differ; "
                                f"first at {i}: got {got[i]!r}, want {want[i]!r}")
    return ("unsupported", gaps) if gaps else ("ok", "")


def child_loop(seeds, run, cpu=True):
    """Runs run(seed, tmpdir) -> (status, message) for each seed in order,
    one JSON line before and after each kernel (what fuzz() reads)."""
    if cpu:
        from ctriton.runtime.driver import driver
        driver.set_active("cpu")
    import warnings
    warnings.simplefilter("ignore")
    tmpdir = tempfile.mkdtemp(prefix="ctriton-fuzz-")
    for s in seeds:
        print(json.dumps({"start": s}), flush=True)
        try:
            st, msg = run(s, tmpdir)
        except Exception:
            st, msg = "error", traceback.format_exc()
        print(json.dumps({"done": s, "status": st, "msg": msg[-4000:]}), flush=True)


def child_main(seeds, gpu):
    child_loop(seeds, lambda s, tmpdir: run_one(s, tmpdir, gpu))


def arg_parser(doc, timeout, out):
    """The options every fuzzer here takes."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:100", help="A:B, the seeds A .. B-1")
    ap.add_argument("--seed", type=int, help="one seed")
    ap.add_argument("--show", action="store_true", help="print the kernel of --seed and run it here")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=timeout, help="seconds per kernel")
    ap.add_argument("--out", default=out, help="where failing kernels are saved")
    ap.add_argument("--no-gpu", action="store_true", help="skip the sm_80/sm_90 compiles")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    return ap


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------

FAILURES = ("crash", "hang", "gpu", "mismatch", "error", "internal", "advisory")


class Child:
    def __init__(self, seeds, env, gpu, script=None, extra=()):
        cmd = [sys.executable, script or os.path.abspath(__file__), "--child", ",".join(map(str, seeds))]
        if not gpu:
            cmd.append("--no-gpu")
        cmd += list(extra)
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.seeds = list(seeds)
        self.cur = None
        self.last = time.time()
        self.buf = ""


def save(out, seed, status, msg):
    k = make(seed)
    d = os.path.join(out, f"{status}-{seed}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.py"), "w") as f:
        f.write(k["src"])
    g = k["g"]
    with open(os.path.join(d, "info.json"), "w") as f:
        json.dump({"seed": seed, "status": status, "kind": k["kind"], "message": msg,
                   "constexprs": k["constexprs"], "signature": signature(g),
                   "grid": g.grid, "M": g.M, "N": getattr(g, "N", None),
                   "reproduce": f"python3 tests/fuzz/fuzz.py --seeds {seed}:{seed + 1}"}, f, indent=1)


def fuzz(seeds, jobs=1, timeout=60.0, out=None, gpu=True, batch=25, log=None,
         script=None, saver=None, extra=()):
    """Runs the kernels of seeds; returns {status: [seeds]}. script: the
    generator whose `--child` runs them (this file's by default), saver its
    save(out, seed, status, msg), extra more arguments for its children."""
    saver = saver or save
    paths = [os.path.join(REPO, "python"), os.path.join(REPO, "tests", "python")]
    if os.environ.get("PYTHONPATH"):  # an installed wheel's folder, say
        paths.append(os.environ["PYTHONPATH"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    env.setdefault("CTRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ctriton-fuzz-cache-"))
    todo = list(seeds)
    results = {}
    running = []

    def finish(seed, status, msg):
        if status in FAILURES and any(k in msg for k in KNOWN):
            status = "known"
        results.setdefault(status, []).append(seed)
        if status in FAILURES:
            if log:
                log(f"seed {seed}: {status}: {msg.strip().splitlines()[-1] if msg.strip() else ''}")
            if out:
                saver(out, seed, status, msg)

    while todo or running:
        while todo and len(running) < jobs:
            running.append(Child(todo[:batch], env, gpu, script, extra))
            todo = todo[batch:]
        fds = {c.p.stdout.fileno(): c for c in running}
        ready, _, _ = select.select(list(fds), [], [], 1.0)
        for fd in ready:
            c = fds[fd]
            line = c.p.stdout.readline()
            if not line:  # exited
                c.p.wait()
                if c.cur is not None:
                    err = c.p.stderr.read()[-4000:]
                    finish(c.cur, "crash", f"exit status {c.p.returncode}\n{err}")
                    rest = c.seeds[c.seeds.index(c.cur) + 1:]
                    todo = rest + todo
                running.remove(c)
                continue
            c.last = time.time()
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if "start" in m:
                c.cur = m["start"]
            elif "done" in m:
                c.cur = None
                finish(m["done"], m["status"], m["msg"])
        now = time.time()
        for c in list(running):
            if c.cur is not None and now - c.last > timeout:
                c.p.kill()
                c.p.wait()
                finish(c.cur, "hang", f"no result within {timeout:.0f} s")
                rest = c.seeds[c.seeds.index(c.cur) + 1:]
                todo = rest + todo
                running.remove(c)
    return results


def main():
    a = arg_parser(__doc__, 60.0, "fuzz-out").parse_args()
    if a.child is not None:
        child_main([int(s) for s in a.child.split(",") if s], not a.no_gpu)
        return 0
    if a.seed is not None and a.show:
        k = make(a.seed)
        print(f"# seed {a.seed}: {k['kind']}, constexprs {k['constexprs']}\n{k['src']}")
        from ctriton.runtime.driver import driver
        driver.set_active("cpu")
        print(run_one(a.seed, tempfile.mkdtemp(), not a.no_gpu))
        return 0
    lo, hi = (a.seed, a.seed + 1) if a.seed is not None else map(int, a.seeds.split(":"))
    t0 = time.time()
    res = fuzz(range(lo, hi), a.jobs, a.timeout, a.out, not a.no_gpu, log=print)
    n = hi - lo
    summary = ", ".join(f"{k} {len(v)}" for k, v in sorted(res.items()))
    print(f"{n} kernels in {time.time() - t0:.0f} s: {summary}")
    return 1 if any(k in FAILURES for k in res) else 0


if __name__ == "__main__":
    sys.exit(main())
