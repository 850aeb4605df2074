"""@jit: the decorator and the JITFunction it returns.

A JITFunction carries what the C frontend reads (the protocol the frontend
relies on): ``fn`` (the Python function), ``src`` (its source, decorators
stripped, dedented), ``starting_line`` (1-based line of ``def`` in the file),
``file`` (path), ``noinline``, ``debug``, ``do_not_specialize``,
``do_not_specialize_on_alignment``, ``arg_names``, ``__name__``,
``__globals__`` and the marker ``_ctriton_jit = True``.

Launching (``kernel[grid](*args, **kw)``) is done in C by a KernelRuntime
(python/src/runtime.c): binding, specialization key, variant cache, packing
and launch. It calls back ``_ct_compile`` only on a cache miss.
"""
import ast
import inspect
import os
import textwrap

from .. import _C
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


def _is_constexpr_annotation(ann):
    if ann is inspect.Parameter.empty:
        return False
    if isinstance(ann, str):
        return ann.split(".")[-1] == "constexpr"
    return getattr(ann, "__name__", None) == "constexpr"


def _annotation_type(ann):
    """A type annotation (tl.int64, "i32", "*fp16") as a type string, or None."""
    if ann is inspect.Parameter.empty or _is_constexpr_annotation(ann):
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
    and the class of every namedtuple in it (key path + ("namedtuple",))."""
    if type(v) is not tuple:
        constexprs[path + ("namedtuple",)] = type(v)
    for j, (vj, tj, kj) in enumerate(zip(v, t, k)):
        p = path + (j,)
        if isinstance(tj, tuple):
            _tuple_arg_info(p, vj, tj, kj, constexprs, attrs)
        elif tj == "constexpr":
            constexprs[p] = vj
        elif kj == "D":
            attrs[p] = {"divisibility": 16}

class _GlobalsFinder(ast.NodeVisitor):
    """The names a function reads, and dotted names (a.b.c)."""

    def __init__(self):
        self.names = []

    def visit_Name(self, node):
        self.names.append((node.id,))

    def visit_Attribute(self, node):
        chain = []
        n = node
        while isinstance(n, ast.Attribute):
            chain.append(n.attr)
            n = n.value
        if isinstance(n, ast.Name):
            chain.append(n.id)
            self.names.append(tuple(reversed(chain)))
        else:
            self.generic_visit(node)


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


class JITFunction(KernelInterface):
    _ctriton_jit = True

    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None,
                 debug=None, noinline=None, repr=None, launch_metadata=None, sanitize=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        lines, first = inspect.getsourcelines(fn)
        src = textwrap.dedent("".join(lines))
        # strip decorators: keep from the `def` line on
        tree = ast.parse(src)
        fdef = tree.body[0]
        def_line = fdef.lineno  # 1-based within src, after the decorators
        self._src = "\n".join(src.splitlines()[def_line - 1:]) + "\n"
        self.starting_line = first + def_line - 1
        sig = inspect.signature(fn)
        self.signature = sig
        self.arg_names = list(sig.parameters)
        self.params = list(sig.parameters.values())

        def names(xs):
            return [self.arg_names[x] if isinstance(x, int) else x for x in (xs or [])]

        self.do_not_specialize = names(do_not_specialize)
        self.do_not_specialize_on_alignment = names(do_not_specialize_on_alignment)
        self.debug = debug
        self.sanitize = sanitize
        self.noinline = bool(noinline)
        self.launch_metadata = launch_metadata
        self.constexpr_params = [p.name for p in self.params
                                 if _is_constexpr_annotation(p.annotation)]
        table = []
        for p in self.params:
            spec = p.name not in self.do_not_specialize
            align = spec and p.name not in self.do_not_specialize_on_alignment
            has_default = p.default is not inspect.Parameter.empty
            table.append((p.name, _is_constexpr_annotation(p.annotation), spec, align,
                          _annotation_type(p.annotation), has_default,
                          p.default if has_default else None))
        self._rt = _C.KernelRuntime(self, table)
        self._cache_key = None

    # -- launching ------------------------------------------------------
    def __getitem__(self, grid):
        return self._rt[grid]

    def run(self, *args, grid, warmup=False, **kwargs):
        return self._rt.run(grid, args, kwargs, warmup)

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles (without launching) for these arguments; returns the
        CompiledKernel. dtypes may stand in for tensors."""
        args = tuple(self._mock(a) for a in args)
        kwargs = {k: self._mock(v) for k, v in kwargs.items()}
        return self._rt.run(grid, args, kwargs, True)

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
        return self._rt.key(args, kwargs)

    @property
    def cache(self):
        """The compiled variants held in memory."""
        return self._rt.variants()

    def clear_cache(self):
        self._rt.clear()

    def _ct_compile(self, bound, sigs, specs, options):
        """Called by the C runtime on a cache miss: builds the ASTSource of
        this specialization and compiles it for the active driver."""
        from ..compiler.compiler import ASTSource, compile
        from .driver import driver
        signature, constexprs, attrs = {}, {}, {}
        for i, (name, t, k) in enumerate(zip(self.arg_names, sigs, specs)):
            signature[name] = t
            if isinstance(t, tuple):
                _tuple_arg_info((i,), bound[name], t, k, constexprs, attrs)
            elif t == "constexpr":
                constexprs[name] = bound[name] if name in self.constexpr_params else k
            elif k == "D":
                attrs[name] = {"divisibility": 16}
        from .. import knobs
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
        src = ASTSource(self, signature, constexprs, attrs)
        hook_args = None
        if knobs.runtime.jit_cache_hook or knobs.runtime.jit_post_compile_hook:
            hook_args = self._hook_args(src, opts)
            if knobs.runtime.jit_cache_hook is not None:
                knobs.runtime.jit_cache_hook(**hook_args, already_compiled=False)
        k = compile(src, target=driver.active.get_current_target(), options=opts)
        if hook_args is not None and knobs.runtime.jit_post_compile_hook is not None:
            knobs.runtime.jit_post_compile_hook(**hook_args, already_compiled=True)
        return k

    def _hook_args(self, src, opts):
        """The keyword arguments of knobs.runtime.jit_cache_hook and
        jit_post_compile_hook for this compilation (Triton's shape)."""
        import json
        import sys
        from .driver import driver
        compile_info = {
            "key": src.hash(), "signature": dict(src.signature),
            "device": driver.active.get_current_device(), "constants": dict(src.constexprs),
            "num_warps": opts.get("num_warps"), "num_ctas": opts.get("num_ctas"),
            "num_stages": opts.get("num_stages"), "enable_fp_fusion": opts.get("enable_fp_fusion"),
            "launch_cooperative_grid": bool(opts.get("launch_cooperative_grid")),
            "extern_libs": tuple(opts.get("extern_libs") or ()),
            "configs": [dict(src.attrs)],
            "specialization_data": json.dumps({"name": self.__name__,
                                               "signature": {k: str(v) for k, v in src.signature.items()},
                                               "constexprs": {str(k): repr(v) for k, v in src.constexprs.items()}}),
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

    # -- source ---------------------------------------------------------
    @property
    def src(self):
        """The function's source from its ``def`` line (what is compiled)."""
        return self._src

    @src.setter
    def src(self, value):
        raise AttributeError("Cannot set attribute 'src' directly. Use '_unsafe_update_src()' "
                             "and manually clear `.hash` of all callers instead.")

    def _unsafe_update_src(self, new_src):
        """Replaces the source that is compiled (the Python function stays);
        drops the compiled variants and the cache key. Callers' keys are not
        recomputed: that is the caller's business, as in Triton."""
        if not isinstance(new_src, str):
            raise TypeError(f"_unsafe_update_src: expected a str, got {type(new_src).__name__}")
        self._src = new_src
        self._cache_key = None
        self._rt.clear()

    @property
    def hash(self):
        return self._cache_key

    @hash.setter
    def hash(self, value):
        self._cache_key = value

    # -- identity -------------------------------------------------------
    @property
    def cache_key(self):
        """sha256 of the source, the noinline flag, every @jit callee's
        cache_key and the values of the constexpr/number globals read."""
        if self._cache_key is None:
            self._cache_key = "pending"  # recursion guard
            parts = [self.src, str(self.starting_line), str(self.noinline)]
            finder = _GlobalsFinder()
            finder.visit(ast.parse(self.src))
            scope = self.__globals__
            seen = set()
            for chain in finder.names:
                if chain in seen:
                    continue
                seen.add(chain)
                obj = scope.get(chain[0], None)
                for attr in chain[1:]:
                    if obj is None or inspect.ismodule(obj) is False and \
                            not hasattr(obj, "__dict__"):
                        break
                    obj = getattr(obj, attr, None)
                dotted = ".".join(chain)
                if getattr(obj, "_ctriton_jit", False) and obj is not self:
                    parts.append(f"{dotted}:jit:{obj.cache_key}")
                elif type(obj).__name__ == "constexpr" or isinstance(obj, (bool, int, float, str)):
                    parts.append(f"{dotted}:={obj!r}")
            self._cache_key = _C.sha256("\n".join(parts))
        return self._cache_key

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Cannot call @jit'd function outside of the scope of a kernel")

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__name__})"


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None,
        do_not_specialize_on_alignment=None, debug=None, noinline=None, sanitize=None):
    """sanitize=True (CPU backend): every load, store and atomic is checked
    against the extent of the tensor argument its pointer derives from; the
    first out-of-bounds access raises before it happens. Also a launch
    option (``k[grid](..., sanitize=True)``) and CTRITON_SANITIZE=1."""
    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata, sanitize=sanitize)
    if fn is not None:
        return decorator(fn)
    return decorator
