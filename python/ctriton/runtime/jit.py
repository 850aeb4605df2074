"""@jit: the decorator and the JITFunction it returns.

A JITFunction carries what the C frontend reads (the protocol the frontend
relies on): ``fn`` (the Python function), ``src`` (its source, decorators
stripped, dedented), ``starting_line`` (1-based line of ``def`` in the file),
``file`` (path), ``noinline``, ``debug``, ``do_not_specialize``,
``do_not_specialize_on_alignment``, ``arg_names``, ``__name__``,
``__globals__`` and the marker ``_ctriton_jit = True``.

Launching (``kernel[grid](*args, **kw)``, ``kernel.run(...)``) is done in C:
JITFunction's base class is the extension's KernelRuntime
(python/src/launch.c, specialize.c), whose ``[grid]`` and ``run`` do the
binding, specialization key, variant cache lookup, packing and launch
without a Python frame. It calls back ``_ct_compile`` only on a cache miss.
"""
import marshal
import os

from .. import _C, knobs
from .interface import KernelInterface
from .tensor import TensorWrapper, reinterpret  # noqa: F401  (Triton's names live here)
from .constexpr_function import constexpr_function  # noqa: F401

# Every spelling of a scalar type (Triton's, numpy's and torch's names, C
# names, signature strings) -> its signature string: "float32" -> "fp32",
# "int1"/"bool" -> "u1", "uint16" -> "u16".
type_canonicalisation_dict = {"bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
                              "half": "fp16", "float16": "fp16", "bfloat16": "bf16",
                              "float": "fp32", "float32": "fp32",
                              "double": "fp64", "float64": "fp64",
                              "float8e4nv": "fp8e4nv", "float8_e4m3fn": "fp8e4nv",
                              "float8e5": "fp8e5", "float8_e5m2": "fp8e5",
                              "float8e4b15": "fp8e4b15",
                              "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8",
                              "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
                              "int": "i32", "void": "void"}
for _b in (8, 16, 32, 64):
    type_canonicalisation_dict[f"int{_b}"] = f"i{_b}"
    type_canonicalisation_dict[f"uint{_b}"] = f"u{_b}"
for _v in list(type_canonicalisation_dict.values()):
    type_canonicalisation_dict[_v] = _v
del _b, _v

# Sources are read when first needed, not at decoration, and without
# inspect/tokenize (whose first use costs milliseconds): see
# _function_source. inspect is the fallback. A new process finds them in the
# source index (_indexed_source) without splitting the file into lines.

_EMPTY = object()  # no annotation / no default


def _is_constexpr_annotation(ann):
    if ann is _EMPTY:
        return False
    if isinstance(ann, str):
        return ann.split(".")[-1] == "constexpr"
    return getattr(ann, "__name__", None) == "constexpr"


def _is_const_annotation(ann):
    """``x: tl.const``: a read-only pointer argument."""
    if isinstance(ann, str):
        return ann.split(".")[-1] == "const"
    return isinstance(ann, type) and ann.__name__ == "const" and \
        ann.__module__.startswith(("ctriton.language", "triton.language"))


def _annotation_type(ann):
    """A type annotation (tl.int64, "i32", "*fp16") as a type string, or None."""
    if ann is _EMPTY or _is_constexpr_annotation(ann) or _is_const_annotation(ann):
        return None
    if isinstance(ann, str):
        s = ann.split(".")[-1]
        return s or None
    name = getattr(ann, "name", None)  # ctriton.language dtypes
    if isinstance(name, str):
        return name
    s = str(ann).split(".")[-1]
    return s if s and s[0].isalpha() or s.startswith("*") else None



def _tuple_arg_info(path, v, t, k, constexprs, attrs):
    """A tuple argument's leaves, keyed by their path (argument index, then
    element indices): constexpr leaves' values, divisibility of "D" leaves,
    and the class of every namedtuple in it (key path + ("namedtuple",)).
    A TensorDescriptor travels as (base, shape, strides), its block shape and
    padding at key path + ("tensordesc",)."""
    if type(v).__name__ == "TensorDescriptor":
        constexprs[path + ("tensordesc",)] = (tuple(v.block_shape), v.padding)
        v = (v.base, tuple(v.shape), tuple(v.strides))
    elif type(v) is not tuple:
        constexprs[path + ("namedtuple",)] = type(v)
    for j, (vj, tj, kj) in enumerate(zip(v, t, k)):
        p = path + (j,)
        if isinstance(tj, tuple):
            _tuple_arg_info(p, vj, tj, kj, constexprs, attrs)
        elif tj == "constexpr":
            constexprs[p] = vj
        elif kj == "D":
            attrs[p] = {"divisibility": 16}


def _spec_encode(v):
    """A specialization value (signature entry, constexpr, option) as JSON
    data that _spec_decode reads back: tagged lists."""
    import importlib
    if v is None or isinstance(v, (bool, str)):
        return ["v", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        return ["float", repr(v)]
    if isinstance(v, tuple):
        return ["tuple", [_spec_encode(x) for x in v],
                None if type(v) is tuple else _spec_encode(type(v))]
    if isinstance(v, list):
        return ["list", [_spec_encode(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", [[_spec_encode(k), _spec_encode(x)] for k, x in v.items()]]
    from .. import language as tl
    if isinstance(v, tl.constexpr):
        return ["constexpr", _spec_encode(v.value)]
    if isinstance(v, tl.dtype) and not isinstance(v, tl.pointer_type):
        return ["dtype", v.name]
    if isinstance(v, type) or isinstance(v, JITFunction) or callable(v):
        obj = v.fn if isinstance(v, JITFunction) else v
        mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
        try:
            found = importlib.import_module(mod)
            for part in qual.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, TypeError):
            found = None
        if found is v:
            return ["global", mod, qual]
    raise TypeError(f"cannot serialize the specialization value {v!r}")


def _spec_decode(x):
    import importlib
    tag = x[0]
    if tag == "v":
        return x[1]
    if tag == "int":
        return int(x[1])
    if tag == "float":
        return float(x[1])
    if tag == "tuple":
        items = tuple(_spec_decode(i) for i in x[1])
        cls = _spec_decode(x[2]) if x[2] is not None else None
        return cls(*items) if cls is not None else items
    if tag == "list":
        return [_spec_decode(i) for i in x[1]]
    if tag == "dict":
        return {_spec_decode(k): _spec_decode(v) for k, v in x[1]}
    from .. import language as tl
    if tag == "constexpr":
        return tl.constexpr(_spec_decode(x[1]))
    if tag == "dtype":
        return tl.dtype(x[1])
    if tag == "global":
        obj = importlib.import_module(x[1])
        for part in x[2].split("."):
            obj = getattr(obj, part)
        return obj
    raise ValueError(f"bad specialization data item {x!r}")


_file_lines = {}  # file name -> ((size, mtime), its lines, content key): read once while unchanged


def _code_lines(code):
    """The source lines holding a code object's instructions and those of
    the code nested in it."""
    lines = {line for _, _, line in code.co_lines() if line}
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            lines |= _code_lines(c)
    return lines


def _lines_fingerprint(code):
    """What, besides the file's bytes, decides the source _function_source
    reads: the function's name, and the first line and line table (which
    co_lines() decodes) of its code object and of the code nested in it,
    as a key (_C.code_fingerprint)."""
    return _C.code_fingerprint(code)


def _def_line(block, name):
    """The index in block (dedented lines from the first decorator on) of
    the line `def name(`."""
    for i, ln in enumerate(block):
        if ln.startswith(("def ", "async def ")):
            rest = ln.split("def ", 1)[1].lstrip()
            if rest.startswith(name) and rest[len(name):].lstrip().startswith("("):
                return i
    raise ValueError(f"no 'def {name}(' line")


def _function_source(fn):
    """(file, src, starting_line, index key) of fn: src is its text from the
    `def` line through its body, dedented; starting_line the file line of
    `def`; index key (the content key of the file's bytes the text came
    from, _lines_fingerprint) names it in the source index, None when the
    text came from inspect. The lines come from the file itself, from the
    code object's first line (the first decorator) through its last one and
    the lines indented under the `def` that follow, less the def's
    indentation (no parse, no tokenize); inspect reads the ones this cannot
    (no file, other encodings)."""
    code = fn.__code__
    try:
        file = code.co_filename
        st = os.stat(file)
        stamp = (st.st_size, st.st_mtime_ns)
        stamp_lines = _file_lines.get(file)
        if stamp_lines is None or stamp_lines[0] != stamp:  # as linecache.checkcache
            with open(file, "rb") as f:
                data = f.read()
            stamp_lines = (stamp, data.decode("utf-8").splitlines(), _C.content_key(data))
            _file_lines[file] = stamp_lines
        lines = stamp_lines[1]
        first = code.co_firstlineno
        head = lines[first - 1]
        indent = head[:len(head) - len(head.lstrip())]
        code_lines = _code_lines(code)
        end = max(code_lines)  # 1-based, inclusive
        while end < len(lines):
            nxt = lines[end]
            body = nxt.strip()
            if body and not body.startswith("#") and not (nxt.startswith(indent) and
                                                          nxt[len(indent)] in " \t"):
                break
            end += 1
        # lines inside strings or brackets may sit left of the def: kept as they are
        block = [ln[len(indent):] if ln.startswith(indent) else ln if ln.strip() else ""
                 for ln in lines[first - 1:end]]
        d = _def_line(block, code.co_name)
        # trailing comments belong to the body when indented as much as its
        # first statement (as inspect has it)
        later = [n for n in code_lines if n > first + d]
        body_line = block[min(later) - first] if later else ""
        col = len(body_line) - len(body_line.lstrip())
        index_key = (stamp_lines[2], _lines_fingerprint(code))
    except (OSError, UnicodeDecodeError, IndexError, ValueError):
        import inspect
        import textwrap
        file = inspect.getsourcefile(fn) or "<unknown>"
        lines, first = inspect.getsourcelines(fn)
        block = textwrap.dedent("".join(lines)).splitlines()
        d = _def_line(block, code.co_name)
        col = 1
        index_key = None
    while block and (not block[-1].strip() or block[-1].lstrip().startswith("#") and
                     len(block[-1]) - len(block[-1].lstrip()) < col):
        block.pop()
    return file, "\n".join(block[d:]) + "\n", first + d, index_key


# -- the source index -----------------------------------------------------
# A new process would split each kernel's file into lines to find its
# source (tens of microseconds per function). The index, an entry of the
# kernel cache's format under <cache dir>/source-index named by the content
# key of a source file's bytes, holds what _function_source read from those
# bytes: {_lines_fingerprint: (sha256 of src, starting_line, src)}. A
# lookup reads the file once (the content key, in C) and the entry; what
# it finds is what _function_source would read, since both follow from the
# same bytes and the same line tables. A changed file has another key; an
# entry that fails its checksums is removed by cache_get; one that does not
# hold that shape is not used.

_INDEX_VERSION = 2


def _index_root():
    return knobs.cache.dir + "/source-index"


def _index_fns(blob, ckey):
    """The functions of an index entry's blob for content key ckey ({}
    when there is none or it is not a valid entry)."""
    if blob is not None:
        try:
            d = marshal.loads(blob)
        except (ValueError, EOFError, TypeError):
            return {}
        if type(d) is dict and d.get("version") == _INDEX_VERSION and \
                d.get("content") == ckey and type(d.get("fns")) is dict:
            return d["fns"]
    return {}


def _index_read(root, ckey):
    try:
        entry = _C.cache_get(root, ckey, ("index",))
    except (OSError, ValueError):
        return {}
    return _index_fns(entry.get("index") if entry else None, ckey)


def _index_hit(fns, fp):
    """fns[fp] as (sha256 of src, starting_line, src), None unless it is one."""
    v = fns.get(fp)
    if type(v) is tuple and len(v) == 3 and type(v[0]) is str and len(v[0]) == 64 and \
            type(v[1]) is int and type(v[2]) is str:
        return v
    return None


def _indexed_source(fn, files):
    """(file, src, starting_line, sha256 of src) of fn from the source
    index, or None. files memoizes each file's (index root, content key,
    index functions) for the callees of one cache_key."""
    code = fn.__code__
    file = code.co_filename
    memo = files.get(file)
    if memo is None:
        try:
            root = _index_root()
            ckey, blob = _C.source_index(root, file)
        except (OSError, TypeError, ValueError):  # no such file (<stdin>, a zip)
            files[file] = False
            return None
        memo = files[file] = (root, ckey, _index_fns(blob, ckey))
    if memo is False:
        return None
    hit = _index_hit(memo[2], _lines_fingerprint(code))
    return (file, hit[2], hit[1], hit[0]) if hit is not None else None


def _index_add(index_key, digest, starting_line, src, files, file):
    """Records a source _function_source read in the index entry of its
    file's bytes (errors ignored: the index only saves time)."""
    ckey, fp = index_key
    memo = files.get(file)
    try:
        if memo and memo[1] == ckey:
            root, fns = memo[0], memo[2]
        else:
            root = _index_root()
            fns = _index_read(root, ckey)
            files[file] = (root, ckey, fns)
        fns[fp] = (digest, starting_line, src)
        _C.cache_put(root, ckey, {"index": marshal.dumps(
            {"version": _INDEX_VERSION, "content": ckey, "fns": fns})})
    except (OSError, ValueError, TypeError):
        pass


def _parameters(fn):
    """(name, annotation, default) of each parameter of fn, from its code
    object (inspect.signature for anything but a plain function)."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__") or code.co_flags & 0x0C:  # *args, **kw
        import inspect
        return [(p.name, _EMPTY if p.annotation is p.empty else p.annotation,
                 _EMPTY if p.default is p.empty else p.default)
                for p in inspect.signature(fn).parameters.values()]
    n = code.co_argcount + code.co_kwonlyargcount
    names = code.co_varnames[:n]
    ann = getattr(fn, "__annotations__", None) or {}
    dflt = dict(zip(names[code.co_argcount - len(fn.__defaults__ or ()):code.co_argcount],
                    fn.__defaults__ or ()))
    dflt.update(fn.__kwdefaults__ or {})
    return [(a, ann.get(a, _EMPTY), dflt.get(a, _EMPTY)) for a in names]



def _override_target(target, arch):
    """The CUDA target for an `arch=` launch option or TRITON_OVERRIDE_ARCH:
    "sm80", "sm_90a", "90" (the compute capability x 10)."""
    from ..backends.compiler import GPUTarget
    from ..compiler.compiler import _arch_number
    return GPUTarget(target.backend, _arch_number(arch), target.warp_size)


class JitFunctionInfo:
    """What a jit hook is told about the function: module, name, JITFunction."""

    def __init__(self, module, name, jit_function):
        self.module = module
        self.name = name
        self.jit_function = jit_function


class MockTensor:
    """Stands for a tensor in warmup() when a dtype is passed instead."""

    def __init__(self, dtype):
        self.dtype = dtype

    def data_ptr(self):
        return 0


class JITFunction(_C.KernelRuntime, KernelInterface):
    _ctriton_jit = True

    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None,
                 debug=None, noinline=None, repr=None, launch_metadata=None, sanitize=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self._source = None  # (file, src, starting_line), read on first use
        params = _parameters(fn)
        self.arg_names = [name for name, _, _ in params]

        def names(xs):
            return [self.arg_names[x] if isinstance(x, int) else x for x in (xs or [])]

        self.do_not_specialize = names(do_not_specialize)
        self.do_not_specialize_on_alignment = names(do_not_specialize_on_alignment)
        self.debug = debug
        self.sanitize = sanitize
        self.noinline = bool(noinline)
        self._repr = repr
        self.launch_metadata = launch_metadata
        self.constexpr_params = [name for name, ann, _ in params
                                 if _is_constexpr_annotation(ann)]
        self.const_params = {name for name, ann, _ in params if _is_const_annotation(ann)}
        table = []
        for name, ann, default in params:
            spec = name not in self.do_not_specialize
            align = spec and name not in self.do_not_specialize_on_alignment
            has_default = default is not _EMPTY
            table.append((name, _is_constexpr_annotation(ann), spec, align,
                          _annotation_type(ann), has_default, default if has_default else None))
        self._ct_setup(self.__name__, table)
        self._cache_key = None

    def repr(self, specialization):
        """The compiled kernel's name: the function's, or what the jit's
        ``repr=`` callable makes of the specialization (an object with
        ``signature`` {name: type string} and ``constants`` {name: value})."""
        if self._repr is None:
            return self.__name__
        return self._repr(specialization)

    # -- source (what the frontend compiles), read on first use ----------
    def _load_source(self):
        if self._source is None:
            self._source = _function_source(self.fn)[:3]
        return self._source

    @property
    def file(self):
        return self._load_source()[0]

    @property
    def src(self):
        """The function's source from its ``def`` line (what is compiled)."""
        return self._load_source()[1]

    @src.setter
    def src(self, value):
        raise AttributeError("Cannot set attribute 'src' directly. Use '_unsafe_update_src()' "
                             "and manually clear `.hash` of all callers instead.")

    @property
    def starting_line(self):
        return self._load_source()[2]

    @property
    def signature(self):
        import inspect
        return inspect.signature(self.fn)

    @property
    def params(self):
        return list(self.signature.parameters.values())

    # -- launching ------------------------------------------------------
    # self[grid](*args, **kwargs) and self.run(*args, grid=, warmup=, **kwargs)
    # come from _C.KernelRuntime.

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles (without launching) for these arguments; returns the
        CompiledKernel. dtypes may stand in for tensors."""
        args = tuple(self._mock(a) for a in args)
        kwargs = {k: self._mock(v) for k, v in kwargs.items()}
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    @staticmethod
    def _mock(a):
        if hasattr(a, "data_ptr") or isinstance(a, (int, float, bool, str, tuple, type(None))):
            return a
        mod, name = type(a).__module__ or "", type(a).__name__
        if mod.startswith(("torch", "ctriton.language", "numpy")) and \
                (name == "dtype" or name.endswith("DType")) or mod.startswith("ctriton.language"):
            return MockTensor(a)
        return a

    def specialization(self, *args, **kwargs):
        """(key bytes, signature list, spec list) of a call: what the
        in-memory cache is keyed by."""
        return self._ct_key(args, kwargs)

    @property
    def cache(self):
        """The compiled variants held in memory."""
        return self._ct_variants()

    def clear_cache(self):
        self._ct_clear()

    def _ct_source(self, bound, sigs, specs):
        """The ASTSource of a specialization: (sigs, specs) as specialization()
        gives them for the arguments bound (name -> value)."""
        from ..compiler.compiler import ASTSource
        signature, constexprs, attrs = {}, {}, {}
        for i, (name, t, k) in enumerate(zip(self.arg_names, sigs, specs)):
            if name in self.const_params and isinstance(t, str) and t.startswith("*"):
                t = "*k" + t[1:]  # Triton's spelling of a read-only pointer
            signature[name] = t
            if isinstance(t, tuple):
                _tuple_arg_info((i,), bound[name], t, k, constexprs, attrs)
            elif t == "constexpr":
                constexprs[name] = bound[name] if name in self.constexpr_params else k
            elif k == "D":
                attrs[name] = {"divisibility": 16}
        return ASTSource(self, signature, constexprs, attrs)

    def _ct_compile(self, bound, sigs, specs, options, device=None):
        """Called by the C runtime on a cache miss: builds the ASTSource of
        this specialization and compiles it for the active driver, on the GPU
        for the architecture of device (the launch's device)."""
        from ..compiler.compiler import compile
        from .driver import driver
        src = self._ct_source(bound, sigs, specs)
        opts = dict(options)
        if opts.get("debug") is None:
            dbg = self.debug
            if dbg is None:
                dbg = knobs.runtime.debug
            opts["debug"] = bool(dbg)
        if opts.get("sanitize") is None and self.sanitize is not None:
            opts["sanitize"] = bool(self.sanitize)
        if opts.get("enable_fp_fusion") is None:
            opts["enable_fp_fusion"] = knobs.language.default_fp_fusion
        active = driver.active
        if device is None:
            device = active.get_current_device()
        hook_args = None
        if knobs.runtime.jit_cache_hook or knobs.runtime.jit_post_compile_hook:
            hook_args = self._hook_args(src, opts, device)
            if knobs.runtime.jit_cache_hook is not None:
                knobs.runtime.jit_cache_hook(**hook_args, already_compiled=False)
        target = active.get_current_target(device)
        arch = opts.pop("arch", None) or knobs.runtime.override_arch
        if arch and target.backend == "cuda":
            opts["arch"] = arch  # the code's arch; the PTX is assembled for the device's
        k = compile(src, target=target, options=opts)
        if hook_args is not None and knobs.runtime.jit_post_compile_hook is not None:
            knobs.runtime.jit_post_compile_hook(**hook_args, already_compiled=True)
        return k

    def _specialization_data(self, src, opts):
        """JSON text of this compilation's specialization (signature,
        constexprs, attrs, options) that preload() compiles again; None when
        a value in it cannot be named (a local class, say)."""
        import json
        try:
            return json.dumps({
                "name": self.__name__, "key": src.hash(),
                "signature": _spec_encode(dict(src.signature)),
                "constexprs": _spec_encode(dict(src.constexprs)),
                "attrs": _spec_encode(dict(src.attrs)),
                "options": _spec_encode(dict(opts))})
        except TypeError:
            return None

    def preload(self, specialization_data):
        """Compiles (or reads from the disk cache) the variant that a
        jit_cache_hook saw as compile["specialization_data"]; returns its
        CompiledKernel."""
        import json
        from ..compiler.compiler import ASTSource, compile
        from .driver import driver
        if specialization_data is None:
            raise ValueError("no specialization data (a value in the specialization could not "
                             "be serialized)")
        d = json.loads(specialization_data)
        if d.get("name") != self.__name__:
            raise ValueError(f"the specialization data is for {d.get('name')!r}, not "
                             f"{self.__name__!r}")
        src = ASTSource(self, _spec_decode(d["signature"]), _spec_decode(d["constexprs"]),
                        _spec_decode(d["attrs"]))
        if src.hash() != d["key"]:
            raise ValueError(f"{self.__name__} has changed since the specialization data was made")
        return compile(src, target=driver.active.get_current_target(),
                       options=_spec_decode(d["options"]))

    @property
    def device_caches(self):
        """Triton's per-device caches: device_caches[device][0] is the
        in-memory variant cache (clear() empties it). ctriton keeps one
        cache for the active device."""
        fn = self

        class _Variants:
            def clear(self):
                fn._ct_clear()

            def __len__(self):
                return len(fn._ct_variants())

        class _Devices:
            def __getitem__(self, device):
                return (_Variants(),)

        return _Devices()

    def _hook_args(self, src, opts, device):
        """The keyword arguments of knobs.runtime.jit_cache_hook and
        jit_post_compile_hook for this compilation (Triton's shape)."""
        import json
        import sys
        from ..compiler.compiler import extern_libs_option
        compile_info = {
            "key": src.hash(), "signature": dict(src.signature),
            "device": device, "constants": dict(src.constexprs),
            "num_warps": opts.get("num_warps"), "num_ctas": opts.get("num_ctas"),
            "num_stages": opts.get("num_stages"), "enable_fp_fusion": opts.get("enable_fp_fusion"),
            "launch_cooperative_grid": bool(opts.get("launch_cooperative_grid")),
            "extern_libs": extern_libs_option(opts.get("extern_libs")) or (),
            "configs": [dict(src.attrs)],
            "specialization_data": self._specialization_data(src, opts),
            "is_warmup": False,
        }
        info = JitFunctionInfo(sys.modules.get(self.__module__), self.__name__, self)
        return {"key": src.hash(), "repr": repr(self), "fn": info, "compile": compile_info,
                "is_manual_warmup": False}

    @property
    def __globals__(self):
        """The names the kernel can read besides its locals: the function's
        globals, and the free variables of an enclosing function (closure
        cells, current values) on top, as Triton's capture scope."""
        fn = self.fn
        if not fn.__closure__:
            return fn.__globals__
        scope = dict(fn.__globals__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell: not yet bound
                pass
        return scope

    def _unsafe_update_src(self, new_src):
        """Replaces the source that is compiled (the Python function stays);
        drops the compiled variants and the cache key. Callers' keys are not
        recomputed: that is the caller's business, as in Triton."""
        if not isinstance(new_src, str):
            raise TypeError(f"_unsafe_update_src: expected a str, got {type(new_src).__name__}")
        file, _, starting_line = self._load_source()
        self._source = (file, new_src, starting_line)
        self._cache_key = None
        self._ct_clear()

    @property
    def hash(self):
        return self._cache_key

    @hash.setter
    def hash(self, value):
        self._cache_key = value

    # -- identity -------------------------------------------------------
    @property
    def cache_key(self):
        """sha256 of the source's sha256 and its starting line, the noinline
        flag, and of what the code reads from its globals (by the names of
        its code object, also one and two attributes deep into modules and
        classes): every @jit callee's cache_key and every constexpr or
        number."""
        if self._cache_key is None:
            self._make_cache_key({})
        return self._cache_key

    def _source_digest(self, files):
        """(sha256 of src, starting_line). The source is what the frontend
        compiles: loaded here when not yet (from the source index when it
        holds it), so that a later edit of the file cannot put other text
        under this key."""
        if self._source is None:
            found = _indexed_source(self.fn, files)
            if found is not None:
                self._source = found[:3]
                return found[3], found[2]
            file, src, starting_line, index_key = _function_source(self.fn)
            self._source = (file, src, starting_line)
            digest = _C.sha256(src)
            if index_key is not None:
                _index_add(index_key, digest, starting_line, src, files, file)
            return digest, starting_line
        return _C.sha256(self._source[1]), self._source[2]

    def _make_cache_key(self, files):
        self._cache_key = "pending"  # recursion guard
        try:
            self._cache_key = self._compute_cache_key(files)
        except BaseException:
            self._cache_key = None  # not "pending" for good
            raise

    def _compute_cache_key(self, files):
        """sha256 of the lines: the source's sha256, its starting line, the
        noinline flag, then for each name the code object (and the code
        nested in it) reads that the globals hold, in name order:
        "name:jit:<cache_key>" for a @jit callee (its key made first, with
        the same memo of files), "name:=<repr>" for a constexpr, bool, int,
        float or str, and the same for those names in a module or class the
        globals hold, two levels deep ("mod.name", "mod.cls.name"; vars(),
        no properties run). In C: _C.global_key."""
        digest, starting_line = self._source_digest(files)
        return _C.global_key(self.fn.__code__, self.__globals__, self, JITFunction, files,
                             (digest, str(starting_line), str(self.noinline)))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Cannot call @jit'd function outside of the scope of a kernel")

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__name__})"


def _launch_enter(kernel, compiled, grid, args, stream):
    """Called by the C launch path before a launch while launch hooks are
    registered (knobs._launch_hooks_changed): the LazyDict of the launch
    (its kernel's launch_metadata(grid, metadata, args) added), given to
    knobs.runtime.launch_enter_hook; returned for _launch_exit."""
    from ..compiler.compiler import LazyDict
    if stream is None:
        from .driver import driver
        stream = driver.active.get_current_stream()
    md = LazyDict({"name": compiled.name, "function": None, "stream": stream})
    if getattr(kernel, "launch_metadata", None) is not None:
        md.add(kernel.launch_metadata, (grid, compiled.metadata, args))
    hook = knobs.runtime.launch_enter_hook
    if hook is not None:
        hook(md)
    return md


def _launch_exit(md):
    """Called by the C launch path after a launch that _launch_enter saw."""
    hook = knobs.runtime.launch_exit_hook
    if hook is not None:
        hook(md)


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None,
        do_not_specialize_on_alignment=None, debug=None, noinline=None, sanitize=None):
    """sanitize=True (CPU backend): every load, store and atomic is checked
    against the extent of the tensor argument its pointer derives from; the
    first out-of-bounds access raises before it happens; integer + - *
    narrower than 64 bits are checked for overflow (as debug=True does on
    both backends, Triton's sanitize_overflow). Also a launch option
    (``k[grid](..., sanitize=True)``) and CTRITON_SANITIZE=1."""
    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata, sanitize=sanitize)
    if fn is not None:
        return decorator(fn)
    return decorator
