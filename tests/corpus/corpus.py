"""The op x backend corpus: one small kernel per op of ir/ops.def (and per
dtype, shape or variant where the lowering differs), each with numpy inputs
and a numpy reference.

A case runs on four backends:
  cpu   the CPU backend, against the reference (exact for integers, a
        tolerance for float math);
  sm80  compiled for sm_80 without a GPU, the PTX assembled by ptxas;
  sm90  the same for sm_90;
  gpu   run on the GPU (the `gpu` pytest marker: skipped without one)
        against the same reference.
Every case names the ops it exercises; the test requires each of them in
the case's TTIR (or, for ops the GPU passes create, in its TTGIR), so the
coverage table (`python3 tests/corpus/corpus.py`) is read from the IR, not
from the case list. Cases are registered by the cases_*.py modules."""
import contextlib
import os
import re
import sys
import zlib

import numpy as np

BACKENDS = ("cpu", "sm80", "sm90", "gpu")
ARCH = {"sm80": 80, "sm90": 90}
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")

# ops a user kernel cannot contain: the GPU passes create them (TTGIR), so
# they are covered through the TTGIR of the sm80 / sm90 compiles and the GPU
# run, and have no CPU column
TTGIR_ONLY = {
    "convert_layout": "a layout change, inserted by assign-layouts / remove-converts",
    "async_copy": "cp.async of a pipelined load, created by the prefetch pass",
    "async_commit": "closes a group of async copies, created by the prefetch pass",
    "async_wait": "waits for async copies, created by the prefetch pass",
    "local_read": "reads a pipelined tile from shared memory, created by the prefetch pass",
}
# ops the GPU passes create on sm_90 only (the tensor memory access unit):
# no CPU or sm80 column; their cases' TTGIR on sm80 need not have them
SM90_ONLY = {
    "tma_copy": "a descriptor tile copied by the tensor memory access unit (prefetch pass, sm_90)",
    "tma_wait": "waits on a slot's mbarrier (prefetch pass, sm_90)",
    "tma_init": "initialises a buffer's mbarriers (prefetch pass, sm_90)",
    "tma_inval": "invalidates a buffer's mbarriers (prefetch pass, sm_90)",
    "tma_release": "a consumer warp hands a slot back to the producer (warp specialization, sm_90)",
    "warp_specialize": "the producer warpgroup's code (warp specialization, sm_90)",
    "tensormap_create": "a tensor map the kernel writes (frontend, sm_90: a descriptor over values it computes)",
    "tma_store": "a descriptor store written by the tensor memory access unit (tma-stores pass, sm_90)",
}
TTGIR_ONLY.update(SM90_ONLY)
# GPU-only ops (no CPU column either): the CPU backend rejects them with a
# CompilationError (tests/python/test_inline_asm.py checks it)
GPU_ONLY = {
    "elementwise_inline_asm": "inline PTX (tl.inline_asm_elementwise)",
}
# ops only a TensorDescriptor argument leads to, which the cases' arguments
# (arrays and scalars) cannot be: covered by tests/python/test_tensor_descriptor.py
# (test_sm90_tensor_store_forms and the host-descriptor GPU tests) instead
HOST_DESCRIPTOR_ONLY = {
    "tma_store": "a store through a TensorDescriptor argument's map",
}

CASES = {}


def ops_def():
    """The op names of ir/ops.def, in table order."""
    with open(os.path.join(ROOT, "ir", "ops.def")) as f:
        return [m.group(1) for m in re.finditer(r'^OP\(\s*\w+,\s*"(\w+)"', f.read(), re.M)]


_OP_LINE = re.compile(r"^\s*(?:%\w+(?:\s*,\s*%\w+)*\s*=\s*)?([a-z_][a-z_0-9]*)\b")


def ir_ops(text):
    """The op names used in an IR text (TTIR or TTGIR)."""
    names = set(ops_def())
    found = set()
    for line in text.splitlines():
        m = _OP_LINE.match(line)
        if m and m.group(1) in names:
            found.add(m.group(1))
    return found


class Case:
    """One kernel launch and its reference.

    kernel   a @jit function
    args     rng -> the positional arguments (numpy arrays, ints, floats) of
             the kernel's non-constexpr parameters, in order
    ref      args (a copy taken before the launch) -> {argument index:
             expected array after the launch}
    ops      ops.def names that must appear in the TTIR
    cx       constexpr arguments; options: launch / compile options
    grid     the launch grid
    tol      None: exact; (rtol, atol): float comparison
    ttgir    ops that must appear in the sm80 / sm90 TTGIR
    ptx      {backend: substrings the PTX must contain}
    xfail    {backend: reason}: known failures (strict on cpu / sm80 / sm90)
    skip     {backend: reason}: backends the case does not apply to
    raises   (args, message): a second CPU launch with these args must raise
             an exception matching message (device_assert)
    stdout   substrings the launch prints (device_print)
    sort     argument indices compared after sorting (orders the scheduler decides)
    ttir_re  regular expressions the TTIR must match (result types, attributes)
    gaps     {backend: ([substrings], reason)}: PTX forms Triton emits for this
             kernel and ctriton does not yet (the results are right: a
             missed fast path); tested apart from the case, as strict xfails
    """

    def __init__(self, name, kernel, args, ref, ops, cx=None, grid=(1,), tol=None, options=None,
                 ttgir=(), ptx=None, xfail=None, skip=None, raises=None, stdout=(), sort=(), gaps=None,
                 ttir_re=()):
        assert name not in CASES, name
        unknown = (set(ops) | set(ttgir)) - set(ops_def())
        assert not unknown, f"{name}: not ops of ops.def: {unknown}"
        self.name, self.kernel, self.args, self.ref = name, kernel, args, ref
        self.ops, self.cx, self.grid, self.tol = tuple(ops), dict(cx or {}), grid, tol
        self.options, self.ttgir, self.ptx = dict(options or {}), tuple(ttgir), dict(ptx or {})
        self.xfail, self.skip = dict(xfail or {}), dict(skip or {})
        self.raises, self.stdout, self.sort = raises, tuple(stdout), tuple(sort)
        self.gaps, self.ttir_re = dict(gaps or {}), tuple(ttir_re)
        CASES[name] = self

    def make_args(self):
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return list(self.args(rng))

    def expected(self, args):
        return self.ref([a.copy() if isinstance(a, np.ndarray) else a for a in args])

    def launch_options(self):
        return dict(self.options)


def add(*args, **kwargs):
    return Case(*args, **kwargs)


# -- signatures -----------------------------------------------------------------

_SIG = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
        "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "fp16",
        "float32": "fp32", "float64": "fp64", "bool": "i1"}


def signature(case, args):
    """The ASTSource signature, constexprs and attributes of a launch with
    these arguments, specialized as the launch path does (pointers and ints
    divisible by 16 get the divisibility attribute)."""
    sig, attrs = {}, {}
    it = iter(args)
    for i, name in enumerate(case.kernel.arg_names):
        if name in case.cx:
            sig[name] = "constexpr"
            continue
        a = next(it)
        if isinstance(a, np.ndarray):
            sig[name] = "*" + _SIG[a.dtype.name]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(a, bool):
            sig[name] = "i1"
        elif isinstance(a, int):
            sig[name] = "i32" if -2**31 <= a < 2**31 else "i64"
            if a % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(a, float):
            sig[name] = "fp32"
        else:
            raise TypeError(f"{case.name}: argument {name} of type {type(a).__name__}")
    return sig, attrs


# -- running ---------------------------------------------------------------------

@contextlib.contextmanager
def active_backend(name):
    from ctriton.runtime.driver import driver
    prev = driver._active
    if prev is not None and prev.backend == name:
        yield
        return
    driver.set_active(name)
    try:
        yield
    finally:
        if prev is None:
            driver.reset_active()
        else:
            driver.set_active(prev)


def check(case, args, want):
    for i, w in want.items():
        got, w = np.asarray(args[i]), np.asarray(w)
        if i in case.sort:
            got, w = np.sort(got, axis=None), np.sort(w, axis=None)
        assert got.shape == w.shape, f"argument {i}: shape {got.shape}, want {w.shape}"
        if case.tol is None:
            np.testing.assert_array_equal(got, w, err_msg=f"{case.name}: argument {i}")
        else:
            rtol, atol = case.tol
            np.testing.assert_allclose(got.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True, err_msg=f"{case.name}: argument {i}")


def check_ir(case, ttir, ttgir=None, arch=90):
    """The case's ops are in the TTIR (and its TTGIR ops in the TTGIR; the
    sm_90-only ones from sm_90 on), its ttir_re patterns match the TTIR."""
    miss = set(case.ops) - ir_ops(ttir)
    if ttgir is not None:
        miss |= set(op for op in case.ttgir if arch >= 90 or op not in SM90_ONLY) - ir_ops(ttgir)
    assert not miss, f"ops not in the TTIR / TTGIR: {sorted(miss)}"
    for pat in case.ttir_re:
        assert re.search(pat, ttir), f"the TTIR does not match {pat!r}"


def run_cpu(case, capfd=None):
    args = case.make_args()
    want = case.expected(args)
    with active_backend("cpu"):
        k = case.kernel[case.grid](*args, **case.cx, **case.launch_options())
        if case.stdout and capfd is not None:
            out = capfd.readouterr().out
            for s in case.stdout:
                assert s in out, f"{case.name}: {s!r} not printed"
        check_ir(case, k.asm["ct.ttir"])
        check(case, args, want)
        if case.raises:
            bad, msg = case.raises
            import pytest
            with pytest.raises(Exception, match=msg):
                case.kernel[case.grid](*bad(case.make_args()), **case.cx, **case.launch_options())


_COMPILED = {}


def compile_gpu(case, arch):
    """The case compiled for sm_<arch> (once per process)."""
    if (case.name, arch) in _COMPILED:
        return _COMPILED[case.name, arch]
    import ctriton
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig, attrs = signature(case, case.make_args())
    opts = dict(case.options)
    if getattr(case.kernel, "debug", None):
        opts.setdefault("debug", True)
    k = ctriton.compile(ASTSource(case.kernel, sig, dict(case.cx), attrs),
                        target=GPUTarget("cuda", arch, 32), options=opts)
    _COMPILED[case.name, arch] = k
    return k


def run_ptxas(case, backend):
    arch = ARCH[backend]
    k = compile_gpu(case, arch)
    assert f".target sm_{arch}" in k.asm["ptx"]
    check_ir(case, k.asm["ct.ttir"], k.asm["ct.ttgir"], arch)
    for s in case.ptx.get(backend, ()):
        assert s in k.asm["ptx"], f"{s!r} not in the PTX"
    cubin = k.asm.get("cubin")
    assert cubin and cubin[:4] == b"\x7fELF", "ptxas produced no cubin"
    # ptxas kept the warpgroup MMAs asynchronous as the backend issued them
    assert not k.metadata.wgmma_advisory, f"ptxas advisory {k.metadata.wgmma_advisory} on the MMAs"
    # ... and every one of them: no placeholder where it dropped an unrolled
    # iteration's MMAs (tests/python/test_dot_f16_out_loop.py)
    if "wgmma.mma_async" in k.asm["ptx"] and _have_disassembler():
        assert "gdesc[URZ]" not in k.asm["sass"], "ptxas dropped warpgroup MMAs (an HGMMA placeholder)"


def _have_disassembler():
    from ctriton import _toolkit
    return _toolkit.disassembler_path() is not None


def run_ptx_form(case, backend):
    """The PTX forms of case.gaps[backend] (Triton's) are in the PTX."""
    ptx = compile_gpu(case, ARCH[backend]).asm["ptx"]
    for s in case.gaps[backend][0]:
        assert s in ptx, f"{s!r} not in the PTX"


class DeviceArray:
    """A numpy array's bytes in GPU memory (allocated through torch), seen
    by the launch through __cuda_array_interface__ with the array's own
    dtype, so that every numpy dtype (also the unsigned ones) travels."""

    def __init__(self, a):
        import torch
        a = np.ascontiguousarray(a)
        self.shape, self.dtype = a.shape, a.dtype
        self.buf = torch.from_numpy(a.reshape(-1).view(np.uint8).copy()).cuda()
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                         "data": (self.buf.data_ptr(), False), "version": 3,
                                         "strides": None}

    def numpy(self):
        return self.buf.cpu().numpy().view(self.dtype).reshape(self.shape)


def run_gpu(case, capfd=None):
    import torch
    args = case.make_args()
    want = case.expected(args)
    dev = [DeviceArray(a) if isinstance(a, np.ndarray) else a for a in args]
    import ctriton
    # global scratch (tensor maps made in the kernel) from torch
    ctriton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    try:
        with active_backend("cuda"):
            k = case.kernel[case.grid](*dev, **case.cx, **case.launch_options())
            torch.cuda.synchronize()
    finally:
        ctriton.set_allocator(None)
    if case.stdout:   # device printf reaches the C stdio buffer at the synchronize
        import ctypes
        ctypes.CDLL(None).fflush(None)
    if case.stdout and capfd is not None:
        out = capfd.readouterr().out
        for s in case.stdout:
            assert s in out, f"{case.name}: {s!r} not printed"
    check_ir(case, k.asm["ct.ttir"], k.asm["ct.ttgir"])
    host = [d.numpy() if isinstance(d, DeviceArray) else d for d in dev]
    check(case, host, want)


def run(case, backend, capfd=None):
    if backend == "cpu":
        run_cpu(case, capfd)
    elif backend == "gpu":
        run_gpu(case, capfd)
    else:
        run_ptxas(case, backend)


# -- loading and the table ---------------------------------------------------------

def load():
    """Imports every cases_*.py module of this folder (they register their cases)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import importlib
    for f in sorted(os.listdir(HERE)):
        if f.startswith("cases_") and f.endswith(".py"):
            importlib.import_module(f[:-3])
    return CASES


def coverage():
    """op -> {backend: [(case name, "ok" | "xfail")]} from the cases' declared
    ops (the test checks each passing declaration against the IR); skipped
    backends left out."""
    table = {op: {b: [] for b in BACKENDS} for op in ops_def()}
    for c in CASES.values():
        for b in BACKENDS:
            if b in c.skip:
                continue
            state = "xfail" if b in c.xfail else "ok"
            for op in set(c.ops) | (set(c.ttgir) if b != "cpu" else set()):
                if b == "sm80" and op in SM90_ONLY:
                    continue
                table[op][b].append((c.name, state))
    return table


def _grouped(items):
    """(case, backend, reason) -> one line per case and reason, backends joined."""
    by = {}
    for name, b, reason in items:
        by.setdefault((name, reason), []).append(b)
    return [f"- `{name}` on {', '.join(sorted(bs, key=BACKENDS.index))}: {reason}"
            for (name, reason), bs in by.items()]


def markdown_table():
    """The op x backend table: the number of passing cases per cell, or
    xfail (every case known to fail there), n/a (TTGIR and GPU-only ops on the CPU)."""
    load()
    tab = coverage()
    lines = ["| op | cpu | sm80 | sm90 | gpu | cases (e.g.) |", "|---|---|---|---|---|---|"]
    for op, row in tab.items():
        cells = []
        for b in BACKENDS:
            ok = sum(1 for _, st in row[b] if st == "ok")
            if (b == "cpu" and (op in TTGIR_ONLY or op in GPU_ONLY)) or (b == "sm80" and op in SM90_ONLY) \
                    or (op in HOST_DESCRIPTOR_ONLY and not row[b]):
                cells.append("n/a")
            elif ok:
                cells.append(str(ok))
            else:
                cells.append("xfail" if row[b] else "**none**")
        names = sorted({n for cell in row.values() for n, _ in cell})
        shown = ", ".join(names[:3]) + (f", ... ({len(names)})" if len(names) > 3 else "")
        lines.append(f"| {op} | " + " | ".join(cells) + f" | {shown} |")
    lines += ["", "Known failures (xfails: strict on cpu / sm80 / sm90; on the GPU expected, not yet run):", ""]
    lines += _grouped([(c.name, b, r) for c in CASES.values() for b, r in c.xfail.items()]) or ["- none"]
    lines += ["", "PTX forms Triton emits here and ctriton does not (the results are right; "
              "strict xfails of test_corpus_ptx_form):", ""]
    lines += _grouped([(c.name, b, f"no {', '.join(map(repr, g[0]))}: {g[1]}")
                       for c in CASES.values() for b, g in c.gaps.items()]) or ["- none"]
    return "\n".join(lines)


README = os.path.join(HERE, "README.md")
BEGIN, END = "<!-- coverage table: python3 tests/corpus/corpus.py --update -->", "<!-- end of table -->"


def readme_table():
    """The table section of README.md, as written there."""
    with open(README) as f:
        text = f.read()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def update_readme():
    with open(README) as f:
        text = f.read()
    head, tail = text[:text.index(BEGIN) + len(BEGIN)], text[text.index(END):]
    with open(README, "w") as f:
        f.write(head + "\n\n" + markdown_table() + "\n\n" + tail)


if __name__ == "__main__":
    sys.path[:0] = [HERE, os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "python")]
    import corpus   # the cases register with the module, not with __main__
    if sys.argv[1:] == ["--update"]:
        corpus.update_readme()
    else:
        print(corpus.markdown_table())
