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
import ast
import inspect
import os
import textwrap

from .. import _C
from .interface import KernelInterface


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


class MockTensor:
    """Stands for a tensor in warmup() when a dtype is passed instead."""

    def __init__(self, dtype):
        self.dtype = dtype

    def data_ptr(self):
        return 0


class JITFunction(_C.KernelRuntime, KernelInterface):
    _ctriton_jit = True

    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None,
                 debug=None, noinline=None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__globals__ = fn.__globals__
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        lines, first = inspect.getsourcelines(fn)
        src = textwrap.dedent("".join(lines))
        # strip decorators: keep from the `def` line on
        tree = ast.parse(src)
        fdef = tree.body[0]
        def_line = fdef.lineno  # 1-based within src, after the decorators
        self.src = "\n".join(src.splitlines()[def_line - 1:]) + "\n"
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
        self._ct_setup(self.__name__, table)
        self._cache_key = None

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
        opts = dict(options)
        if opts.get("debug") is None:
            dbg = self.debug
            if dbg is None:
                dbg = os.environ.get("CTRITON_DEBUG", "0") not in ("", "0")
            opts["debug"] = bool(dbg)
        src = ASTSource(self, signature, constexprs, attrs)
        return compile(src, target=driver.active.get_current_target(), options=opts)

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
            seen = set()
            for chain in finder.names:
                if chain in seen:
                    continue
                seen.add(chain)
                obj = self.__globals__.get(chain[0], None)
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
        do_not_specialize_on_alignment=None, debug=None, noinline=None):
    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata)
    if fn is not None:
        return decorator(fn)
    return decorator
