"""ctriton.knobs (``triton.knobs``): the settings of the compiler and
runtime, grouped as in Triton (``knobs.cache.dir``,
``knobs.compilation.always_compile``, ``knobs.runtime.jit_cache_hook`` ...).

A knob is a descriptor on its group's class. Reading it gives the value set
from Python if there is one, else the environment (``CTRITON_<NAME>`` first,
then Triton's ``TRITON_<NAME>``), else its default. Setting it from Python
also writes the value to both environment variables while
``knobs.propagate_env`` is true, so that child processes and ctriton's C
code (which reads ``CTRITON_*``) see it. Assigning ``knobs.env`` forgets a
Python value; ``del`` does the same. Each group has ``scope()`` (a context
manager restoring its values and environment), ``copy()``, ``reset()``,
``knob_descriptors`` and ``knobs``.
"""
import contextlib
import os

from . import _C

# importlib, re, shutil and subprocess are imported where a knob needs them:
# `import ctriton` reads no knob that does.

propagate_env = True


class Env:
    """The type of ``knobs.env``: assigning it to a knob reverts the knob to
    its environment/default value."""


env = Env()

_UNSET = object()
_FALSE = ("0", "false", "off", "no", "n", "")


def _ctriton_key(key):
    if key.startswith("TRITON_"):
        return "C" + key
    return None


# CTRITON_X variables setenv wrote as mirrors of TRITON_X, with their values
_mirrored = {}


def getenv(key, default=None):
    """The value of a knob's environment variable: CTRITON_X before TRITON_X.
    A CTRITON_X that only mirrors a knob's assignment is dropped once
    TRITON_X is gone (removed by whoever restores the environment, as
    monkeypatch or Triton's test fixtures do, which know only TRITON_X)."""
    ck = "C" + key if key.startswith("TRITON_") else None  # _ctriton_key, inline
    if ck is not None:
        v = _environ(ck)
        if v is not None:
            if ck in _mirrored and v == _mirrored[ck] and _environ(key) is None:
                os.environ.pop(ck, None)
                _mirrored.pop(ck, None)
            else:
                return v
    v = _environ(key)
    return default if v is None else v


# os.environ.get(name) without os.environ's Python-level encoding and
# KeyError, from the C library's environment that os.environ keeps in step
# (a new process's first compile reads a dozen variables)
_environ = _C.getenv


def setenv(key, value):
    """Writes (None: removes) a knob's environment variables, when
    ``propagate_env`` is true."""
    if not propagate_env:
        return
    ck = _ctriton_key(key)
    for k in (key, ck):
        if k is None:
            continue
        if value is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = value
    if ck is not None:
        if value is None:
            _mirrored.pop(ck, None)
        else:
            _mirrored[ck] = value


def _to_env(value):
    if value is None:
        return True, None
    if isinstance(value, bool):
        return True, "1" if value else "0"
    if isinstance(value, (int, str)):
        return True, str(value)
    return False, None


class env_base:
    """A knob backed by the environment variable ``key``."""

    def __init__(self, key, default=None):
        self.key = key
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        v = obj.__dict__.get(self.name, _UNSET)
        if v is _UNSET:
            return self.get()
        return self.transform(v)

    def __set__(self, obj, value):
        if isinstance(value, Env):
            obj.__dict__.pop(self.name, None)
            return
        obj.__dict__[self.name] = value
        ok, s = _to_env(value)
        if ok:
            setenv(self.key, s)

    def __delete__(self, obj):
        obj.__dict__.pop(self.name, None)

    def get(self):
        raw = getenv(self.key)
        if raw is None:
            return self.default() if callable(self.default) else self.default
        return self.parse(raw)

    def parse(self, raw):
        return raw

    def transform(self, value):
        return value


class env_str(env_base):
    pass


class env_opt_str(env_base):
    def __init__(self, key):
        super().__init__(key, None)


class env_bool(env_base):
    def __init__(self, key, default=False):
        super().__init__(key, default)

    def parse(self, raw):
        # "", "0", "false", "off", "no" are false; anything else is true
        return raw.strip().lower() not in _FALSE


class env_opt_bool(env_bool):
    def __init__(self, key):
        super().__init__(key, None)


class env_int(env_base):
    def __init__(self, key, default=0):
        super().__init__(key, default)

    def parse(self, raw):
        try:
            return int(raw)
        except ValueError:
            raise RuntimeError(f"Unable to use {self.key}={raw!r}: expected int") from None


class env_class(env_base):
    """A ``module:Class`` name, resolved to the class; it must derive from a
    class named ``base_name``."""

    def __init__(self, key, base_name):
        super().__init__(key, None)
        self.base_name = base_name

    def parse(self, raw):
        mod, sep, cls = raw.partition(":")
        if not sep or not mod or not cls:
            raise RuntimeError(f"Unable to read {self.key}: {raw!r} isn't of the form MODULE:CLASS")
        import importlib
        c = getattr(importlib.import_module(mod), cls)
        if not any(b.__name__ == self.base_name for b in getattr(c, "__mro__", ())):
            raise RuntimeError(f"Unable to use {raw!r} from {self.key}: not of type {self.base_name!r}")
        return c


class NvidiaTool:
    """A CUDA tool (ptxas, nvdisasm, cuobjdump) and its release (``"12.8"``):
    ``path`` and ``version``, compared by value (Triton's dataclass)."""
    __slots__ = ("path", "version")

    def __init__(self, path, version):
        self.path = path
        self.version = version

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return (self.path, self.version) == (other.path, other.version)

    __hash__ = None  # as a dataclass with eq

    def __repr__(self):
        return f"NvidiaTool(path={self.path!r}, version={self.version!r})"

    @staticmethod
    def from_path(path):
        import re
        import subprocess
        if not path:
            return None
        try:
            out = subprocess.check_output([path, "--version"], stderr=subprocess.STDOUT).decode()
        except (OSError, subprocess.CalledProcessError):
            return None
        m = re.search(r"release (\d+\.\d+)", out)
        return NvidiaTool(path, m.group(1)) if m else None


_tool_cache = {}


class env_nvidia_tool(env_base):
    """A CUDA tool found from ``TRITON_<TOOL>_PATH`` (or CTRITON_...), then
    $PATH, then /usr/local/cuda/bin."""

    def __init__(self, binary):
        super().__init__(f"TRITON_{binary.upper().replace('-', '_')}_PATH", None)
        self.binary = binary

    def get(self):
        return self.transform(getenv(self.key))

    def transform(self, path):
        import shutil
        cands = [path, shutil.which(self.binary), os.path.join("/usr/local/cuda/bin", self.binary)]
        for p in cands:
            if not p:
                continue
            if p not in _tool_cache:
                _tool_cache[p] = NvidiaTool.from_path(p)
            if _tool_cache[p] is not None:
                return _tool_cache[p]
        raise RuntimeError(f"Cannot find {self.binary}")


class HookChain:
    """Hooks of one kind, called in order (reversed for exit hooks)."""

    def __init__(self, reversed=False):
        self.calls = []
        self.reversed = reversed

    def add(self, fn):
        if fn not in self.calls:
            self.calls.append(fn)
        _launch_hooks_changed()

    def remove(self, fn):
        if fn in self.calls:
            self.calls.remove(fn)
        _launch_hooks_changed()

    def __bool__(self):
        return bool(self.calls)

    def __call__(self, *args, **kwargs):
        for fn in (self.calls[::-1] if self.reversed else list(self.calls)):
            fn(*args, **kwargs)


class base_knobs:
    """A group of knobs."""

    @property
    def knob_descriptors(self):
        return {k: v for k, v in type(self).__dict__.items() if isinstance(v, env_base)}

    @property
    def knobs(self):
        return {k: getattr(self, k) for k in self.knob_descriptors}

    def copy(self):
        c = type(self)()
        c.__dict__.update(self.__dict__)
        return c

    def reset(self):
        for k in self.knob_descriptors:
            self.__dict__.pop(k, None)
        return self

    @contextlib.contextmanager
    def scope(self):
        keys = []
        for d in self.knob_descriptors.values():
            keys += [k for k in (d.key, _ctriton_key(d.key)) if k]
        saved_env = {k: os.environ.get(k) for k in keys}
        saved = dict(self.__dict__)
        try:
            yield self
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _default_cache_dir():
    return _C.cache_root()


class build_knobs(base_knobs):
    """How host compilers are invoked (ctriton compiles in-process: kept for
    programs that read or set them)."""
    cc = env_opt_str("CC")
    cudacrt_path = env_opt_str("TRITON_CUDACRT_PATH")
    cudart_path = env_opt_str("TRITON_CUDART_PATH")
    impl = None

    @property
    def backend_dirs(self):
        return {p for p in (self.cudacrt_path, self.cudart_path) if p is not None}


class redis_knobs(base_knobs):
    key_format = env_str("TRITON_REDIS_KEY_FORMAT", "triton:{key}:{filename}")
    host = env_str("TRITON_REDIS_HOST", "localhost")
    port = env_int("TRITON_REDIS_PORT", 6379)


class cache_knobs(base_knobs):
    """Where compiled kernels are kept. ``dir`` is ctriton's kernel cache
    (default ``~/.cache/ctriton``)."""
    home_dir = env_str("TRITON_HOME", lambda: os.path.expanduser("~/"))
    dump_dir = env_str("TRITON_DUMP_DIR", lambda: cache.get_triton_dir("dump"))
    override_dir = env_str("TRITON_OVERRIDE_DIR", lambda: cache.get_triton_dir("override"))
    dir = env_str("TRITON_CACHE_DIR", _default_cache_dir)
    manager_class = env_class("TRITON_CACHE_MANAGER", "CacheManager")
    remote_manager_class = env_class("TRITON_REMOTE_CACHE_BACKEND", "RemoteCacheBackend")

    def get_triton_dir(self, dirname):
        return os.path.join(self.home_dir, ".triton", dirname)


class compilation_knobs(base_knobs):
    override = env_bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = env_bool("TRITON_KERNEL_DUMP")
    dump_ir_extract_di_local_variables = env_bool("LLVM_EXTRACT_DI_LOCAL_VARIABLES")
    store_binary_only = env_bool("TRITON_STORE_BINARY_ONLY")
    always_compile = env_bool("TRITON_ALWAYS_COMPILE")
    use_ir_loc = env_opt_str("USE_IR_LOC")
    enable_asan = env_bool("TRITON_ENABLE_ASAN")
    disable_line_info = env_bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = env_bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    instrumentation_mode = os.environ.get("TRITON_INSTRUMENTATION_MODE", "")
    listener = None


class autotuning_knobs(base_knobs):
    cache = env_bool("TRITON_CACHE_AUTOTUNING")
    print = env_bool("TRITON_PRINT_AUTOTUNING")


class runtime_knobs(base_knobs):
    """Launch-time settings and hooks. ``jit_cache_hook(key=..., repr=...,
    fn=..., compile=..., is_manual_warmup=..., already_compiled=...)`` runs
    before a kernel is compiled and ``jit_post_compile_hook`` after (their
    results are not used: ctriton always compiles).
    ``launch_enter_hook(metadata)`` and ``launch_exit_hook(metadata)`` run
    around every ``kernel[grid](...)`` launch once one is registered (a
    HookChain's ``add``, or a callable assigned): ``metadata`` is a
    ``LazyDict`` whose ``get()`` gives ``name``, ``function`` (None),
    ``stream`` and what the kernel's ``@jit(launch_metadata=fn)`` returns
    for ``fn(grid, compiled.metadata, args)``. The kernel-load hook chains
    are kept for programs that register hooks; ctriton does not call them."""
    interpret = env_bool("TRITON_INTERPRET")
    debug = env_bool("TRITON_DEBUG")
    override_arch = env_opt_str("TRITON_OVERRIDE_ARCH")
    launch_enter_hook = HookChain()
    launch_exit_hook = HookChain(reversed=True)
    kernel_load_start_hook = HookChain()
    kernel_load_end_hook = HookChain(reversed=True)
    kernel_unload_hook = HookChain()
    jit_cache_hook = None
    jit_post_compile_hook = None
    add_stages_inspection_hook = None

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in ("launch_enter_hook", "launch_exit_hook"):
            _launch_hooks_changed()


class language_knobs(base_knobs):
    fp32_default = env_opt_str("TRITON_F32_DEFAULT")
    default_fp_fusion = env_bool("TRITON_DEFAULT_FP_FUSION", True)


class nvidia_knobs(base_knobs):
    cuobjdump = env_nvidia_tool("cuobjdump")
    nvdisasm = env_nvidia_tool("nvdisasm")
    ptxas = env_nvidia_tool("ptxas")
    ptxas_blackwell = env_nvidia_tool("ptxas-blackwell")
    dump_nvptx = env_bool("NVPTX_ENABLE_DUMP")
    disable_ptxas_opt = env_bool("DISABLE_PTXAS_OPT")
    ptxas_options = env_opt_str("PTXAS_OPTIONS")
    mock_ptx_version = env_opt_str("TRITON_MOCK_PTX_VERSION")
    dump_ptxas_log = env_bool("TRITON_DUMP_PTXAS_LOG")
    libdevice_path = env_opt_str("TRITON_LIBDEVICE_PATH")
    libcuda_path = env_opt_str("TRITON_LIBCUDA_PATH")


class amd_knobs(base_knobs):
    """Accepted for programs that set them; ctriton has no AMD backend."""
    use_buffer_ops = env_bool("AMDGCN_USE_BUFFER_OPS", True)
    use_buffer_atomics = env_bool("AMDGCN_USE_BUFFER_ATOMICS", True)
    buffer_ops_analyze_small_tensor_range = env_bool("AMDGCN_ANALYZE_SMALL_TENSOR_RANGE")
    dump_amdgcn = env_bool("AMDGCN_ENABLE_DUMP")
    libhip_path = env_opt_str("TRITON_LIBHIP_PATH")
    use_block_pingpong = env_opt_bool("TRITON_HIP_USE_BLOCK_PINGPONG")
    use_in_thread_transpose = env_opt_bool("TRITON_HIP_USE_IN_THREAD_TRANSPOSE")
    use_async_copy = env_opt_bool("TRITON_HIP_USE_ASYNC_COPY")
    scalarize_packed_fops = env_bool("AMDGCN_SCALARIZE_PACKED_FOPS")


class proton_knobs(base_knobs):
    disable = env_bool("TRITON_PROTON_DISABLE")
    profile_buffer_size = env_int("TRITON_PROFILE_BUFFER_SIZE", 64 * 1024 * 1024)
    enable_nvtx = env_bool("TRITON_ENABLE_NVTX", True)
    enable_hw_trace = env_bool("TRITON_ENABLE_HW_TRACE")


def _hook_set(h):
    return h is not None and (bool(h.calls) if isinstance(h, HookChain) else True)


def _launch_hooks_changed():
    """Tells the C launch path whether to call the launch hooks: it calls
    them (ctriton.runtime.jit's _launch_enter/_launch_exit) only while
    one is registered, and launches without a Python call otherwise."""
    rt = globals().get("runtime")
    if rt is None:  # the module is being set up
        return
    if _hook_set(rt.launch_enter_hook) or _hook_set(rt.launch_exit_hook):
        from .runtime.jit import _launch_enter, _launch_exit
        _C.set_launch_hooks(_launch_enter, _launch_exit)
    else:
        _C.set_launch_hooks(None, None)


build = build_knobs()
redis = redis_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
proton = proton_knobs()


def refresh_knobs():
    """Re-reads the knobs that are read once at import."""
    compilation.instrumentation_mode = os.environ.get("TRITON_INSTRUMENTATION_MODE", "")
