"""Running unmodified Triton programs on ctriton.

``use_as_triton()`` makes ``import triton`` and every ``triton.<submodule>``
resolve to ctriton's modules: a finder at the front of ``sys.meta_path``
maps ``triton.X.Y`` to ``ctriton.X.Y`` and hands back the very same module
object, so ``triton.language is ctriton.language``. Only the top-level
``triton`` is a module of its own: it forwards every attribute to
``ctriton`` (and writes through to it) but reports the Triton release
ctriton is compatible with as ``__version__``; ``ctriton.__version__``
stays ctriton's own. ``triton._C`` is a package of its own too: it forwards
to ctriton's extension ``ctriton._C`` and holds ``libtriton``
(``ctriton._libtriton``: the few names of Triton's C++ extension that
programs call, ``nvidia.cublas.CublasLt``); ``ctriton._C`` is unchanged.

``run_main(argv)`` is ``python SCRIPT args`` / ``python -m MODULE args`` /
``python -c CODE args`` with ``triton`` resolved to ctriton first
(``python -m ctriton.run ...``).
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types

_ALIAS = "triton"
_TARGET = "ctriton"
_C_ALIAS = _ALIAS + "._C"
_LIBTRITON = _C_ALIAS + ".libtriton"


def _target_name(fullname):
    if fullname == _ALIAS:
        return _TARGET
    if fullname == _LIBTRITON or fullname.startswith(_LIBTRITON + "."):
        return _TARGET + "._libtriton" + fullname[len(_LIBTRITON):]
    if fullname.startswith(_ALIAS + "."):
        return _TARGET + fullname[len(_ALIAS):]
    return None


class _TritonModule(types.ModuleType):
    """The ``triton`` module: ctriton's attributes under Triton's version."""

    def __init__(self, real):
        super().__init__(_ALIAS, real.__doc__)
        object.__setattr__(self, "_ctriton", real)
        object.__setattr__(self, "__version__", real.__triton_version__)
        object.__setattr__(self, "__ctriton_version__", real.__version__)
        object.__setattr__(self, "__path__", list(real.__path__))
        object.__setattr__(self, "__file__", real.__file__)
        # a spec of its own: importlib.util.find_spec("triton") (torch asks
        # it when CUDA starts) raises on a module whose __spec__ is None
        spec = importlib.machinery.ModuleSpec(_ALIAS, _AliasLoader(_TARGET), origin=real.__file__,
                                              is_package=True)
        spec.submodule_search_locations = list(real.__path__)
        object.__setattr__(self, "__spec__", spec)

    def __getattr__(self, name):
        if name == "_C":  # triton._C is the alias package, not the extension
            mod = _c_module()
            object.__setattr__(self, "_C", mod)
            return mod
        try:
            return getattr(object.__getattribute__(self, "_ctriton"), name)
        except AttributeError:
            raise AttributeError(f"module 'triton' has no attribute {name!r}") from None

    def __setattr__(self, name, value):
        if name.startswith("__") and name.endswith("__") or name == "_C":
            object.__setattr__(self, name, value)
            return
        setattr(object.__getattribute__(self, "_ctriton"), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, "_ctriton"), name)

    def __dir__(self):
        return sorted(set(dir(object.__getattribute__(self, "_ctriton"))) | {"__version__"})


class _CModule(types.ModuleType):
    """``triton._C``: a package whose attributes are those of ctriton's
    extension, plus ``libtriton`` (imported when first asked for)."""

    def __init__(self, real):
        super().__init__(_C_ALIAS, real.__doc__)
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "__file__", getattr(real, "__file__", None))
        object.__setattr__(self, "__path__", [])
        spec = importlib.machinery.ModuleSpec(_C_ALIAS, _CLoader(), is_package=True)
        spec.submodule_search_locations = []
        object.__setattr__(self, "__spec__", spec)

    def __getattr__(self, name):
        if name == "libtriton":
            mod = importlib.import_module(_LIBTRITON)
            object.__setattr__(self, "libtriton", mod)
            return mod
        try:
            return getattr(object.__getattribute__(self, "_real"), name)
        except AttributeError:
            raise AttributeError(f"module 'triton._C' has no attribute {name!r}") from None

    def __dir__(self):
        return sorted(set(dir(object.__getattribute__(self, "_real"))) | {"libtriton"})


class _CLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _c_module()

    def exec_module(self, module):
        pass


class _AliasLoader(importlib.abc.Loader):
    """Loads ``triton.X`` as the already imported (or now imported) ``ctriton.X``."""

    def __init__(self, target):
        self.target = target
        self._spec = None

    def create_module(self, spec):
        if self.target == _TARGET:
            return _triton_module()
        mod = importlib.import_module(self.target)
        self._spec = getattr(mod, "__spec__", None)
        return mod

    def exec_module(self, module):
        # The import system set the alias spec on the shared module: give it
        # back its own, so ctriton.X keeps reporting itself as ctriton.X.
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == _C_ALIAS:
            return importlib.machinery.ModuleSpec(fullname, _CLoader(), is_package=True)
        real = _target_name(fullname)
        if real is None:
            return None
        if real in sys.modules:
            mod = sys.modules[real]
            is_pkg = hasattr(mod, "__path__")
        else:
            try:
                spec = importlib.util.find_spec(real)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                return None
            is_pkg = spec.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_pkg)


_finder = _AliasFinder()
_module = None
_c_mod = None


def _c_module():
    global _c_mod
    if _c_mod is None:
        from . import _C
        _c_mod = _CModule(_C)
    return _c_mod


def _triton_module():
    global _module
    if _module is None:
        import ctriton
        _module = _TritonModule(ctriton)
    return _module


def is_standing_in():
    """True when ``import triton`` gives ctriton."""
    return _finder in sys.meta_path and isinstance(sys.modules.get(_ALIAS), _TritonModule)


def use_as_triton():
    """Makes ``import triton`` (and every ``triton.<submodule>``) give
    ctriton's modules from now on in this process. Raises RuntimeError when
    another ``triton`` has already been imported."""
    cur = sys.modules.get(_ALIAS)
    if cur is not None and not isinstance(cur, _TritonModule):
        raise RuntimeError("use_as_triton(): a 'triton' package was already imported "
                           f"({getattr(cur, '__file__', cur)!r}); call it before importing triton")
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    mod = _triton_module()
    sys.modules[_ALIAS] = mod
    # Alias what is already imported, so sys.modules lookups agree.
    sys.modules.setdefault(_C_ALIAS, _c_module())
    for name, m in list(sys.modules.items()):
        if m is not None and name.startswith(_TARGET + ".") and name != _TARGET + "._C":
            if name == _TARGET + "._libtriton" or name.startswith(_TARGET + "._libtriton."):
                alias = _LIBTRITON + name[len(_TARGET + "._libtriton"):]
            else:
                alias = _ALIAS + name[len(_TARGET):]
            sys.modules.setdefault(alias, m)
    for sub in ("language", "runtime", "compiler", "knobs", "testing", "tools"):
        importlib.import_module(f"{_ALIAS}.{sub}")
    return mod


_USAGE = ("usage: python -m ctriton.run SCRIPT [args...]\n"
          "       python -m ctriton.run -m MODULE [args...]\n"
          "       python -m ctriton.run -c CODE [args...]\n"
          "Runs a Triton program with 'import triton' resolved to ctriton.")


def _exit_code(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _set_path0(entry):
    cwd = os.getcwd()
    if sys.path and sys.path[0] in ("", cwd):
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)


def run_main(argv):
    """Runs ``argv`` like the python command line does (``SCRIPT args``,
    ``-m MODULE args`` or ``-c CODE args``) with triton resolved to ctriton;
    returns the exit status."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    mode, what = None, None
    if argv[0] in ("-m", "-c"):
        if len(argv) < 2:
            print(f"Argument expected for the {argv[0]} option\n{_USAGE}", file=sys.stderr)
            return 2
        mode, what, rest = argv[0], argv[1], argv[2:]
    elif argv[0].startswith("-m") or argv[0].startswith("-c"):
        mode, what, rest = argv[0][:2], argv[0][2:], argv[1:]
    elif argv[0].startswith("-"):
        print(f"unknown option {argv[0]!r}\n{_USAGE}", file=sys.stderr)
        return 2
    else:
        mode, what, rest = "script", argv[0], argv[1:]
    if mode == "script" and not os.path.exists(what):
        print(f"can't open file {os.path.abspath(what)!r}: No such file or directory",
              file=sys.stderr)
        return 2
    use_as_triton()
    saved_argv = sys.argv
    try:
        if mode == "script":
            sys.argv = [what] + rest
            _set_path0(os.path.dirname(os.path.abspath(what)))
            runpy.run_path(what, run_name="__main__")
        elif mode == "-m":
            sys.argv = [what] + rest  # run_module puts the module's path in argv[0]
            _set_path0(os.getcwd())
            runpy.run_module(what, run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c"] + rest
            _set_path0("")
            main = types.ModuleType("__main__")
            saved_main = sys.modules.get("__main__")
            sys.modules["__main__"] = main
            try:
                exec(compile(what, "<string>", "exec"), main.__dict__)
            finally:
                if saved_main is not None:
                    sys.modules["__main__"] = saved_main
    except SystemExit as e:
        return _exit_code(e)
    finally:
        sys.argv = saved_argv
    return 0
