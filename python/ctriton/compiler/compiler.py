"""compile(): a kernel source to a CompiledKernel, through the caches.

Stages (the C driver, jit/compile.c and the pass table of jit/pipeline.c,
runs 2-3 in one call):
  1. frontend   ASTSource -> TTIR text (_C.ast_to_ttir); a .ttir file is read
  2. parse
  3. passes     verify, unroll-loops, combine-mul-reduce, combine-dot-add, cse-scalars, dce (ttir);
                hoist-addresses, flatten-loops (ttgir); cuda: prefetch
                ... allocate-shared (ttgir), nvptx-lower, llvm-opt (llir),
                ptx-emit (ptx), ptxas (cubin); cpu: reduce-lanes (ttgir),
                cpu-codegen (llir, asm, code). The ttir and ttgir texts come
                in Triton's MLIR spelling and in ctriton's form (ct.ttir,
                ct.ttgir).
Disk cache: knobs.cache.dir ($CTRITON_CACHE_DIR or $TRITON_CACHE_DIR,
default ~/.cache/ctriton), one entry per key: _C.key_digest (SHA-256 of
the parts, dicts in key order) of the compiler build, the kernel's
ASTSource.hash (its cache_key: source, callees, constexpr and number
globals; the signature, constexprs and attrs), the options, the target, the
backend's environment settings (KEY_ENV) and, for CUDA, the contents of the
extern_libs bitcode files. The compiler build is named by the extension's
link-time build id and the path, size and mtime of the compiler's .py files
(_C.build_key: nothing is read). Entries are checksummed; a corrupt one is
recompiled with a warning. An entry's metadata is a marshal'ed dict (as in
.pyc files: no JSON to import or parse on a hit), first in the entry with
the cubin, which a hit reads with the header. A new process finds the
kernel's source through the source index (runtime/jit.py): each source
file is read and hashed once, its lines are not split.

CTRITON_DUMP=ttir,llir,... prints stages to stderr, also on a hit; an entry
after:PASS (after:all for every pass) prints the form after that pass of
the pipeline (the pass table: _C.pass_table(), jit/pipeline.c) and makes
compile() bypass the cache read, since only stage texts are cached.
CTRITON_TIMING=1 prints one line per compile() to stderr with the wall time
of each stage in milliseconds (also in CompiledKernel.times).
"""
import marshal
import os
import sys
import time
from _collections_abc import MutableMapping

from .. import _C, knobs
from ..backends.compiler import GPUTarget
from ..runtime.driver import driver

CACHE_FORMAT = 5
# CompiledKernel.asm's texts. "ttir" and "ttgir" are in Triton's MLIR
# spelling (tt.load, arith.addf, scf.for, #ttg.blocked layouts), as Triton's
# asm holds them; "ct.ttir" and "ct.ttgir" are the same IR in ctriton's
# textual form, which parses back (a .ttir file) and which the CPU's cache
# hits recompile from.
STAGES = ("ttir", "ct.ttir", "ttgir", "ct.ttgir", "llir", "ptx", "asm")
_ASM_NAMES = frozenset(STAGES + ("cubin",))  # a cache entry's blobs that CompiledKernel.asm holds

# Launch/compile options and their defaults (a subset of Triton's CUDAOptions;
# the others are accepted and recorded). extern_libs ({name: bitcode path}):
# NVPTX links them when the kernel calls into libdevice, a "libdevice" entry
# replacing the libdevice ctriton finds; the CPU backend accepts and ignores
# them.
DEFAULT_OPTIONS = {
    "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None,
    "enable_fp_fusion": True, "debug": False,
    # CPU backend: bounds-check every load, store and atomic against the
    # extent of its tensor argument, and integer arithmetic for overflow
    # (CTRITON_SANITIZE=1 turns it on; sanitize_overflow=False: no overflow
    # checks, here or with debug)
    "sanitize": False,
}
OTHER_OPTIONS = ("enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl",
                 "default_dot_input_precision", "max_num_imprecise_acc_default",
                 "sanitize_overflow", "instrumentation_mode", "extern_libs", "ptx_version",
                 "arch", "supported_fp8_dtypes")


# Environment variables that change what the backend emits: part of the key.
KEY_ENV = ("CTRITON_LLVM_PIPELINE", "CTRITON_LLVM_CODEGEN",  # compile() reads them
           "CTRITON_FLATTEN_DOT_NESTS", "CTRITON_VERSION_STORES", "CTRITON_STMATRIX_CONVERT",
           "CTRITON_TMA_STORE_MADE", "CTRITON_SMALL_LOADS", "CTRITON_HOIST_CONVERTS", "CTRITON_WGMMA_SPLIT",
           "CTRITON_SINK_CONVERTS", "CTRITON_SHFL_CONVERT", "CTRITON_ASYNC_INVARIANTS",
           "CTRITON_ASYNC_VECTORS", "CTRITON_ASYNC_REGS", "CTRITON_RS_SLICES", "CTRITON_SMALL_COPIES", "CTRITON_FMA_SLOTS", "CTRITON_MMA_SYNC_TRANS", "CTRITON_CHAIN_ROWS",
           "CTRITON_BRANCH_STORES", "CTRITON_LAG_SLOT", "CTRITON_REGS_SWIZZLE", "CTRITON_ELEMENT_COPIES",
           "CTRITON_TF32_LDMATRIX", "CTRITON_RS_READS_FIRST", "CTRITON_INIT_LOADS",
           "CTRITON_SLOT_BASES", "CTRITON_DOT_KW4", "CTRITON_MMA_SYNC_LATE_COPIES", "CTRITON_FP8_MMA_SYNC",
           "CTRITON_SHORT_PTR", "CTRITON_KN_READS")


class CompileError(RuntimeError):
    """A failure after the frontend (IR parse/verify, backend, ptxas)."""


class OptionError(ValueError, AssertionError):
    """A compile option out of range. A ValueError, and an AssertionError as
    Triton's option checks raise."""


def _compilation_error(msg):
    import re
    m = re.search(r"out of resources?: ([^,]+), Required: (\d+), Hardware limit: (\d+)", msg)
    if m:
        from ..runtime.errors import OutOfResources
        return OutOfResources(int(m.group(2)), int(m.group(3)), m.group(1))
    try:
        from .errors import CompilationError  # the frontend's
        try:
            return CompilationError(msg)
        except TypeError:
            pass
    except ImportError:
        pass
    return CompileError(msg)


def extern_libs_option(v):
    """The extern_libs option ({library name: path of its LLVM bitcode}, or
    (name, path) pairs) as a tuple of (name, path str) pairs, None when
    empty. A libdevice entry whose path is empty or None is dropped (the
    libdevice ctriton finds is linked), as in Triton. TypeError for
    anything else."""
    if v is None:
        return None
    bad = TypeError(f"extern_libs must map library names to bitcode paths "
                    f"({{'libdevice': '/path/libdevice.10.bc'}}), got {v!r}")
    try:
        pairs = [tuple(kv) for kv in (v.items() if isinstance(v, dict) else v)]
    except TypeError:
        raise bad from None
    out = []
    for kv in pairs:
        if len(kv) != 2 or not isinstance(kv[0], str):
            raise bad
        name, path = kv
        if path is None or path == "":
            if name == "libdevice":
                continue
            raise bad
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise bad
        out.append((name, path))
    return tuple(out) or None


_lib_digests = {}  # (path, size, mtime) -> sha256 of the file


def _extern_libs_key(libs):
    """(name, sha256 of the file) of each extern library: the cache key
    follows their contents. OSError (naming the entry) for one that cannot
    be read."""
    out = []
    for name, path in libs or ():
        try:
            st = os.stat(path)
            stamp = (path, st.st_size, st.st_mtime_ns)
            d = _lib_digests.get(stamp)
            if d is None:
                with open(path, "rb") as f:
                    d = _C.sha256(f.read())
                _lib_digests[stamp] = d
        except OSError as e:
            raise type(e)(e.errno, f"extern_libs[{name!r}]: cannot read the bitcode file: "
                                   f"{e.strerror}", path) from None
        out.append((name, d))
    return out


def parse_options(options, backend="cuda"):
    opts = dict(DEFAULT_OPTIONS)
    for k, v in (options or {}).items():
        if k not in DEFAULT_OPTIONS and k not in OTHER_OPTIONS:
            raise KeyError(f"option '{k}' was specified but is not a known compile option "
                           f"({', '.join(DEFAULT_OPTIONS)}, ...)")
        if v is not None or k in DEFAULT_OPTIONS:
            opts[k] = v if v is not None else DEFAULT_OPTIONS.get(k)
    if knobs.runtime.debug:
        opts["debug"] = True
    if _C.getenv("CTRITON_SANITIZE") not in (None, "", "0"):
        opts["sanitize"] = True
    opts["sanitize"] = bool(opts["sanitize"])
    if "extern_libs" in opts:
        opts["extern_libs"] = extern_libs_option(opts["extern_libs"])
        if opts["extern_libs"] is None:
            del opts["extern_libs"]
    nw = opts["num_warps"]
    if not isinstance(nw, int) or nw <= 0 or nw & (nw - 1):
        raise OptionError(f"num_warps must be a power of 2, got {nw!r}")
    return opts


_build_hash = None
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def extension_id(path):
    """The GNU build ID of the extension at path (the linker's hash of its
    contents), else the sha256 of the file. The wheel's extension, LLVM
    inside, is ~50 MB: hashing it would cost each process 0.1-0.3 s. (The
    cache key uses _C.build_key, which reads the same ID from the loaded
    image without opening the file.)"""
    import struct
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        if head[:4] == b"\x7fELF" and head[4:6] == b"\x02\x01":  # ELF64, little-endian
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            for i in range(phnum):
                o = phoff + i * phentsize
                if o + 56 > len(head):
                    break
                if struct.unpack_from("<I", head, o)[0] != 4:  # PT_NOTE
                    continue
                off, size = struct.unpack_from("<Q", head, o + 8)[0], struct.unpack_from(
                    "<Q", head, o + 32)[0]
                notes, j = head[off:off + size], 0
                while j + 12 <= len(notes):
                    namesz, descsz, kind = struct.unpack_from("<III", notes, j)
                    desc = j + 12 + ((namesz + 3) & ~3)
                    if kind == 3 and notes[j + 12:j + 12 + namesz] == b"GNU\0" and descsz:
                        return "build-id:" + notes[desc:desc + descsz].hex()  # NT_GNU_BUILD_ID
                    j = desc + ((descsz + 3) & ~3)
        f.seek(0)
        return _C.sha256(f.read())


def compiler_build_hash():
    """Names this build of the compiler: the extension's build id and the
    path, size and mtime of the .py files of the language and compiler
    packages (what the frontend compiles and what drives it)."""
    global _build_hash
    if _build_hash is None:
        _build_hash = _C.build_key((_PKG + "/language", _PKG + "/compiler"))
    return _build_hash


class ASTSource:
    """A @jit function with a signature {name: "*fp32" | "i32" | "constexpr" | ...},
    constexprs {name: value} and attrs {name: [["tt.divisibility", 16]]} or
    {name: {"divisibility": 16}}."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        self.signature = dict(signature)
        self.constexprs = dict(constexprs or {})
        self.attrs = {}
        for k, v in (attrs or {}).items():
            if isinstance(v, dict):
                self.attrs[k] = dict(v)
            else:  # Triton's [["tt.divisibility", 16]]
                self.attrs[k] = {name.split(".")[-1]: val for name, val in v}
        for name in fn.arg_names:
            if name in self.constexprs and name not in self.signature:
                self.signature[name] = "constexpr"
        self.name = fn.__name__

    def hash(self):
        """sha256 of the function's cache_key and of the signature,
        constexprs and attrs (_C.key_digest: by value, dicts in key order,
        a @jit function, the constexpr of a higher-order kernel, by its
        cache_key)."""
        return _C.key_digest((self.fn.cache_key, self.signature, self.constexprs, self.attrs))

    def launch_signature(self):
        """Per parameter in order: its type string ("constexpr" when dropped)."""
        sig, cx = self.signature, self.constexprs
        return ["constexpr" if name in cx else sig.get(name, "constexpr")
                for name in self.fn.arg_names]

    def kernel_name(self):
        """The name the kernel gets: the jit's repr= of this specialization
        (Triton's SpecializationProxy: constants by argument name, the
        signature), else the function's name."""
        rep = getattr(self.fn, "_repr", None)
        if rep is None:
            return self.fn.__name__
        import collections
        proxy = collections.namedtuple("SpecializationProxy", ["constants", "signature"])(
            {k: v for k, v in self.constexprs.items() if isinstance(k, str)}, self.signature)
        name = self.fn.repr(proxy)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"the repr of {self.fn.__name__} gave {name!r}, which is not a "
                             "valid kernel name")
        return name

    def make_ttir(self, options):
        name = self.kernel_name()
        if name != self.fn.__name__:
            options = dict(options, kernel_name=name)
        return _C.ast_to_ttir(self.fn, self.signature, self.constexprs, self.attrs, options)


_IR_TO_SIG = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "bf16": "bf16", "i1": "u1"}


def _ir_sig(s):
    out = []
    for t in (s.split(",") if s else []):
        ptr = t.startswith("*")
        b = t.lstrip("*")
        out.append(("*" if ptr else "") + _IR_TO_SIG.get(b, b))
    return out


class IRSource:
    """A .ttir file: compilation starts at the parser."""

    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.text = f.read()
        self.name = os.path.splitext(os.path.basename(path))[0]

    def hash(self):
        return _C.sha256(self.text)

    def make_ttir(self, options):
        return self.text


class KernelMetadata:
    """Metadata of a compiled kernel (attributes, like Triton's namedtuple)."""

    def __init__(self, d):
        self.__dict__.update(d)

    def _asdict(self):
        return dict(self.__dict__)

    def __getitem__(self, k):
        return self.__dict__[k]

    def __repr__(self):
        return f"KernelMetadata({self.__dict__!r})"


class LazyDict:
    """What the launch hooks receive (Triton's LazyDict): ``data``, and
    ``get()``, which first merges in the results of the functions
    ``add``ed (the kernel's launch_metadata, called only when asked)."""

    def __init__(self, data):
        self.data = data
        self.extras = []

    def get(self):
        for func, args in self.extras:
            self.data = self.data | func(*args)
        self.extras.clear()
        return self.data

    def add(self, func, args):
        self.extras.append((func, args))


def _sass(asm):
    """asm["sass"], made from asm["cubin"] when first asked for."""
    if asm.get("cubin") is None:
        if "ptx" in asm:
            raise RuntimeError("ctriton: asm['sass'] needs the kernel's cubin, and there is none: ptxas "
                               "was not found when it was compiled")
        raise KeyError("sass")
    from .. import _toolkit
    return _toolkit.sass(asm["cubin"])


class AsmDict(dict):
    """CompiledKernel.asm of a fresh compile: {stage: text, "cubin": bytes};
    "sass" (CUDA) is disassembled from the cubin when first asked for."""

    def __missing__(self, name):
        if name != "sass":
            raise KeyError(name)
        self["sass"] = text = _sass(self)
        return text


class CachedAsm(MutableMapping):
    """CompiledKernel.asm of a disk-cache hit: {stage: text, "cubin": bytes}
    whose texts are read from the cache entry when first asked for (a
    launch needs none of them)."""

    def __init__(self, root, key, entry):
        self._root, self._key = root, key
        self._names = [n for n in entry if n in _ASM_NAMES]
        self._d = {}
        for n in self._names:
            v = entry[n]
            if v is not None:
                self._d[n] = v if n == "cubin" else v.decode()

    @staticmethod
    def _value(name, blob):
        return blob if name == "cubin" else blob.decode()

    def __getitem__(self, name):
        if name not in self._d:
            if name == "sass" and name not in self._names:
                self["sass"] = _sass(self)
                return self._d["sass"]
            if name not in self._names:
                raise KeyError(name)
            entry = _C.cache_get(self._root, self._key, (name,))
            if not entry or entry.get(name) is None:
                raise KeyError(f"{name}: the cache entry {self._key[:16]}... is gone or corrupt")
            self._d[name] = self._value(name, entry[name])
        return self._d[name]

    def __contains__(self, name):
        return name in self._names

    def get(self, name, default=None):
        if name in self._d:
            return self._d[name]
        try:
            return self[name]
        except KeyError:
            return default

    def __setitem__(self, name, value):
        self._d[name] = value
        if name not in self._names:
            self._names.append(name)

    def __delitem__(self, name):
        self._names.remove(name)
        self._d.pop(name, None)

    def __iter__(self):
        return iter(list(self._names))

    def __len__(self):
        return len(self._names)

    def __repr__(self):
        return f"CachedAsm({self._names!r}, read: {sorted(self._d)!r})"


class _LaunchShell:
    __slots__ = ("k", "grid")

    def __init__(self, k, grid):
        self.k, self.grid = k, grid

    def __call__(self, *args, stream=None):
        return self.k._binary.launch(self.grid, args, stream)


class CompiledKernel:
    """One compiled variant: ``asm`` (stage texts, ``cubin`` bytes),
    ``metadata``, ``n_regs``/``n_spills``; ``compiled[(g0, g1, g2)](*args)``
    launches it with every argument, constexprs included."""

    def __init__(self, asm, metadata, launch_sig, cpu_kernel=None):
        self.asm = asm
        self.metadata = KernelMetadata(metadata)
        self.name = metadata["name"]
        self.hash = metadata["hash"]
        self.launch_sig = launch_sig
        self.kernel = asm.get("cubin")
        self.n_regs = metadata.get("n_regs", -1)
        self.n_spills = metadata.get("n_spills", -1)
        self.n_max_threads = 32 * metadata["num_warps"]
        self.packed_metadata = (metadata["num_warps"], metadata["num_ctas"], metadata["shared"])
        self._cpu_kernel = cpu_kernel
        self._bin = None
        self.times = {}  # stage -> wall ms of the compile() that made this object
        self.dumps = []  # (pass, text) asked for by compile(dump_after=...) / CTRITON_DUMP

    def _init_handles(self):
        if self._bin is not None:
            return
        md = self.metadata
        if md.backend == "cuda":
            # The image is loaded on each device at the first launch there
            # (shared memory and threads checked against that device: an
            # OutOfResources), and unloaded when the Binary dies.
            active = driver.active
            if active.backend != "cuda":
                raise RuntimeError(f"kernel {self.name} was compiled for CUDA but the active "
                                   "driver is the CPU")
            image = self.asm.get("cubin")
            if image is None:  # no ptxas: the driver compiles the PTX
                from .. import _toolkit
                _toolkit.warn_no_ptxas()
                image = self.asm["ptx"].encode() + b"\0"
            # launch_pdl / launch_cooperative_grid: launched through
            # cuLaunchKernelEx with those attributes
            flags = (_C.LAUNCH_PDL if getattr(md, "launch_pdl", False) else 0) | \
                (_C.LAUNCH_COOPERATIVE if getattr(md, "launch_cooperative_grid", False) else 0)
            # tensor-map parameters (TensorDescriptor arguments copied by the
            # tensor memory access unit): encoded at each launch
            tma = tuple(tuple(t) for t in (getattr(md, "tma", None) or ()))
            # global scratch: the allocator is called at each launch
            scratch = (getattr(md, "global_scratch_size", 0), getattr(md, "global_scratch_align", 1))
            self._bin = _C.Binary(_C.BACKEND_CUDA, self.launch_sig, md.num_warps, md.num_ctas,
                                  md.shared, None, image, self.name, flags, tma, *scratch)
        else:
            if self._cpu_kernel is None:
                raise RuntimeError(f"kernel {self.name} has no CPU code")
            self._bin = _C.Binary(_C.BACKEND_CPU, self.launch_sig, md.num_warps, md.num_ctas,
                                  md.shared, self._cpu_kernel, None, self.name)

    @property
    def _binary(self):
        if self._bin is None:
            self._init_handles()
        return self._bin

    def __getitem__(self, grid):
        if not isinstance(grid, tuple) or len(grid) != 3:
            raise ValueError("a CompiledKernel's grid must be a tuple of 3 ints")
        return _LaunchShell(self, grid)

    def run(self, g0, g1, g2, stream, *args):
        return self._binary.launch((g0, g1, g2), args, stream)

    def __repr__(self):
        return f"CompiledKernel({self.name}, {self.metadata.backend})"


def _dump_request():
    """(stages, passes) asked for by CTRITON_DUMP: stage names, and the
    comma-separated pass names of its after:PASS entries (None: none)."""
    want = _C.getenv("CTRITON_DUMP")
    if not want:
        return (), None
    if want in ("1", "all"):
        return STAGES + ("cubin",), None
    stages, passes = [], []
    for s in (s.strip() for s in want.split(",")):
        if s.startswith("after:"):
            passes.append(s[len("after:"):].strip())
        elif s:
            stages.append(s)
    _check_passes(passes)
    return stages, ",".join(passes) if passes else None


def _check_passes(passes):
    known = [p["name"] for p in _C.pass_table()]
    for p in passes:
        if p != "all" and p not in known:
            raise ValueError(f"unknown pass {p!r} to dump after; the passes are "
                             f"{', '.join(known)} (or all)")


def _dump_passes(name, dumps):
    for p, text in dumps:
        sys.stderr.write(f"// ----- ctriton: {name} after {p} -----\n{text}")
        if not text.endswith("\n"):
            sys.stderr.write("\n")
    sys.stderr.flush()


def _dump(name, asm, cached, stages):
    """Prints the stages CTRITON_DUMP named (_dump_request) to stderr."""
    if not stages:
        return
    for s in stages:
        text = asm.get(s)
        if text is None:
            continue
        if isinstance(text, bytes):
            text = f"<{len(text)} bytes>"
        tag = " (cached)" if cached else ""
        sys.stderr.write(f"// ----- ctriton: {name} {s}{tag} -----\n{text}")
        if not text.endswith("\n"):
            sys.stderr.write("\n")
    sys.stderr.flush()


def _report(name, kind, times, t_start):
    times["total"] = (time.perf_counter() - t_start) * 1e3
    if _C.getenv("CTRITON_TIMING") not in (None, "", "0"):
        cells = " ".join(f"{k}={v:.2f}" for k, v in times.items())
        sys.stderr.write(f"ctriton timing: {name} {kind} ms: {cells}\n")
        sys.stderr.flush()


def _arch_number(arch):
    """80 for "sm80", "sm_80", "sm_90a", 80 or "80"."""
    import re
    m = re.fullmatch(r"(?:sm_?)?(\d+)a?", str(arch).strip())
    if not m:
        raise OptionError(f"arch {arch!r}: expected a CUDA architecture such as 'sm90'")
    return int(m.group(1))


def _target_of(target):
    if target is None:
        target = driver.active.get_current_target()
    if target.backend not in ("cuda", "cpu"):
        raise ValueError(f"unsupported target backend {target.backend!r}")
    arch = target.arch
    if isinstance(arch, str):
        arch = int("".join(c for c in arch if c.isdigit()) or 0)
    return target, arch


def compile(src, target=None, options=None, dump_after=None):
    """Compiles src (ASTSource or a path to a .ttir file) for target (default:
    the active driver's) with options; returns a CompiledKernel. dump_after
    (ctriton's own): pass names (a list or "a,b"; "all") whose results to keep
    in CompiledKernel.dumps as (pass, text); like CTRITON_DUMP=after:PASS it
    bypasses the cache read."""
    t_start = time.perf_counter()
    times = {}
    if isinstance(src, str):
        src = IRSource(src)
    target, arch = _target_of(target)
    opts = parse_options(options, target.backend)
    # Triton's arch= option (or TRITON_OVERRIDE_ARCH): the code is that
    # arch's (passes, layouts, instructions) and, when older than the
    # target's, assembled for the target, where it runs (sm_80 code on sm_90)
    ptx_arch = 0
    if target.backend == "cuda" and opts.get("arch"):
        code = _arch_number(opts["arch"])
        if code < arch:
            ptx_arch = arch
        if code != arch:
            target, arch = type(target)(target.backend, code, target.warp_size), code
    if target.backend == "cuda" and (opts.get("num_ctas") or 1) > 1 and arch < 90:
        # Triton's check, with its words (tests match them)
        raise OptionError(f"num_ctas > 1 requires NVIDIA SM90+ (Hopper); the target is sm_{arch} "
                          f"(use num_ctas=1, or a target of sm_90 or later)")
    # NVPTX links the extern libraries: their contents are part of the key
    # (the CPU backend has its own math and reads none of them)
    libs = _extern_libs_key(opts.get("extern_libs")) if target.backend == "cuda" else None
    key = _C.key_digest((CACHE_FORMAT, compiler_build_hash(), src.hash(), target.key(), opts,
                         *(_C.getenv(k) or "" for k in KEY_ENV), libs, *((ptx_arch,) if ptx_arch else ())))
    launch_sig = src.launch_signature() if isinstance(src, ASTSource) else None
    root = knobs.cache.dir
    backend = _C.BACKEND_CUDA if target.backend == "cuda" else _C.BACKEND_CPU
    dump_stages, env_after = _dump_request()
    if isinstance(dump_after, (list, tuple)):
        dump_after = ",".join(dump_after)
    if dump_after:
        _check_passes(dump_after.split(","))
    if env_after:
        dump_after = env_after + "," + dump_after if dump_after else env_after
    dump_after = dump_after or None
    use_cache = not knobs.compilation.always_compile and not dump_after
    t = time.perf_counter()
    times["key"] = (t - t_start) * 1e3

    # A hit reads the metadata and what loading needs (the cubin; the TTIR
    # for the CPU, whose host code is rebuilt); the other stage texts are
    # read if and when CompiledKernel.asm is asked for them.
    want = ("meta", "cubin") if target.backend == "cuda" else ("meta", "ct.ttir")
    entry = _C.cache_get(root, key, want) if use_cache else None
    t1 = time.perf_counter()
    times["cache_read"] = (t1 - t) * 1e3
    t = t1
    meta = None
    if entry:
        try:
            meta = marshal.loads(entry["meta"])
            if not isinstance(meta, dict):
                raise ValueError("not a dict")
        except (KeyError, ValueError, EOFError, TypeError):
            entry = False
    if entry is False:
        import warnings
        warnings.warn(f"ctriton: the cache entry {key[:16]}... for {src.name} is corrupt; "
                      "recompiling it", RuntimeWarning, stacklevel=2)
        entry = None
    if entry is not None:
        asm = CachedAsm(root, key, entry)
        cpu_kernel = None
        if target.backend == "cpu":
            # Host code is not cached: rebuild it from the cached TTIR.
            r = _C.compile_ttir(asm["ct.ttir"], src.name, backend, arch, target.warp_size,
                                opts, False)
            if "error" in r:
                raise _compilation_error(r["error"])
            cpu_kernel = r.get("cpu_kernel")
            times.update(r.get("times", {}))
        _dump(meta["name"], asm, True, dump_stages)
        ck = CompiledKernel(asm, meta, launch_sig or _ir_sig(meta.get("sig")), cpu_kernel)
        times["load"] = (time.perf_counter() - t) * 1e3
        ck.times = times
        _report(ck.name, "hit", times, t_start)
        return ck

    # 1. frontend
    ttir = src.make_ttir(dict(opts, target=target.key()))
    t1 = time.perf_counter()
    times["frontend"] = (t1 - t) * 1e3
    # 2-4. parse, verify, backend (+ ptxas)
    extra = (dump_after or None, ptx_arch) if ptx_arch else (dump_after,) if dump_after else ()
    r = _C.compile_ttir(ttir, getattr(src, "path", src.name), backend, arch, target.warp_size,
                        opts, False, *extra)
    t = time.perf_counter()
    times["compile_ttir"] = (t - t1) * 1e3
    times.update(r.get("times", {}))
    if "error" in r:
        raise _compilation_error(r["error"])
    asm = AsmDict((s, r[s]) for s in STAGES if s in r)
    if "cubin" in r:
        asm["cubin"] = r["cubin"]
    name = r.get("name") or src.name
    shared, n_regs = r.get("shared", 0), r.get("n_regs", -1)
    if target.backend == "cpu":
        # one program per core: the whole core's resources (runtime/driver.py)
        from ..runtime.driver import CPU_NUM_REGS, CPU_SHARED_MEM
        shared = CPU_SHARED_MEM
        n_regs = CPU_NUM_REGS // max(1, r.get("num_warps", opts["num_warps"]))
    meta = {"name": name, "hash": key, "backend": target.backend, "arch": arch,
            "warp_size": target.warp_size, "target": target.key(),
            "num_warps": r.get("num_warps", opts["num_warps"]), "num_ctas": opts["num_ctas"],
            "num_stages": opts["num_stages"], "shared": shared,
            "n_regs": n_regs, "n_spills": r.get("n_spills", -1),
            # ptxas's advisory code ("C7514") when it serialized the
            # warpgroup MMAs or injected a wait or fence among them (the
            # kernel is correct, its MMAs overlap less); "" otherwise
            "wgmma_advisory": r.get("wgmma_advisory", ""),
            "debug": opts["debug"], "sig": r.get("sig", ""), "passes": r.get("passes", []),
            "tma": [tuple(t) for t in r.get("tma", ())],
            # global scratch per program (tensor maps made on the device): the
            # launch asks the allocator (triton.set_allocator) for it
            "global_scratch_size": r.get("global_scratch_size", 0),
            "global_scratch_align": r.get("global_scratch_align", 1),
            "launch_pdl": bool(opts.get("launch_pdl")),
            "launch_cooperative_grid": bool(opts.get("launch_cooperative_grid")),
            "options": {k: repr(v) for k, v in opts.items()}}
    # the metadata and the cubin first: a hit reads them with the header
    # in one read when they are small
    blobs = {"meta": marshal.dumps(meta, 4)}
    if "cubin" in asm:
        blobs["cubin"] = asm["cubin"]
    blobs.update(asm)
    t = time.perf_counter()
    try:
        _C.cache_put(root, key, blobs)
    except OSError as e:
        import warnings
        warnings.warn(f"ctriton: could not write the kernel cache: {e}", RuntimeWarning)
    times["cache_write"] = (time.perf_counter() - t) * 1e3
    _dump(name, asm, False, dump_stages)
    dumps = [tuple(d) for d in r.get("dumps", ())]
    if env_after:
        wanted = set(env_after.split(","))
        _dump_passes(name, [d for d in dumps if "all" in wanted or d[0] in wanted])
    ck = CompiledKernel(asm, meta, launch_sig or _ir_sig(meta["sig"]), r.get("cpu_kernel"))
    ck.dumps = dumps
    ck.times = times
    _report(name, "compile", times, t_start)
    return ck
