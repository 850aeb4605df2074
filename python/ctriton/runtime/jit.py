"""@jit: the decorator and the JITFunction it returns.

A JITFunction carries what the C frontend reads (the protocol the frontend
relies on): ``fn`` (the Python function), ``src`` (its source, decorators
stripped, dedented), ``starting_line`` (1-based line of ``def`` in the file),
``file`` (path), ``noinline``, ``debug``, ``do_not_specialize``,
``do_not_specialize_on_alignment``, ``arg_names``, ``__name__`` and the
marker ``_ctriton_jit = True``.
"""
import ast
import inspect
import textwrap


class JITFunction:
    _ctriton_jit = True

    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None,
                 debug=None, noinline=None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
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
