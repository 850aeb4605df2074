"""@autotune and @heuristics: kernels whose meta-parameters are chosen at
launch time.

An ``Autotuner`` wraps a kernel (a JITFunction, or another Autotuner or
Heuristics) and a list of ``Config``s. The first launch for a new tuning key
(the values of the ``key`` arguments plus the dtype of every tensor
argument) times every candidate config with the driver's benchmarker and
keeps the fastest; later launches with that key reuse it. A ``Heuristics``
computes constexpr arguments from the other arguments before launching.
"""
import builtins
import os
import time

from .. import _C
from .interface import KernelInterface
from .errors import OutOfResources


def _knobs():
    from .. import knobs
    return knobs


def _env_flag(*names):
    return any(os.environ.get(n, "0") not in ("", "0") for n in names)


_AMD_TUNING_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")


class Config:
    """One candidate: constexpr values (``kwargs``) and launch options.

    ``pre_hook(nargs)``, when set, runs before each launch with this config
    (``nargs``: every argument by name, the config's values included)."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None, ir_override=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override

    def _options(self):
        return {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                "num_stages": self.num_stages, "maxnreg": self.maxnreg,
                "ir_override": self.ir_override}

    def all_kwargs(self):
        """The config's constexprs and its launch options that are set."""
        out = dict(self.kwargs)
        out.update((k, v) for k, v in self._options().items() if v is not None)
        return out

    def run_kwargs(self):
        """all_kwargs() as a launch takes them: on the CPU backend without the
        tuning options of AMD's backend (waves_per_eu, matrix_instr_nonkdim,
        kpack), which programs written for both kinds of GPU put in the
        configs they use when the target is not CUDA; the CPU has nothing to
        tune with them."""
        out = self.all_kwargs()
        if any(k in out for k in _AMD_TUNING_OPTIONS):
            from .driver import driver
            if driver.active.get_current_target().backend == "cpu":
                for k in _AMD_TUNING_OPTIONS:
                    out.pop(k, None)
        return out

    def __setstate__(self, state):
        self.__init__(**dict({"kwargs": {}}, **state))

    def _ident(self):
        return (tuple(sorted((k, repr(v)) for k, v in self.kwargs.items())),
                tuple(sorted((k, repr(v)) for k, v in self._options().items())),
                id(self.pre_hook) if self.pre_hook is not None else None)

    def __eq__(self, other):
        return isinstance(other, Config) and self._ident() == other._ident()

    def __hash__(self):
        return hash(self._ident())

    def __str__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"{k}: {v}" for k, v in self._options().items()
                  if k != "ir_override" or v is not None]
        return ", ".join(parts)

    def __repr__(self):
        return f"Config({self})"


def _innermost(fn):
    """The JITFunction under any stack of Autotuner/Heuristics."""
    while not getattr(fn, "_ctriton_jit", False) and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


# --- tensor helpers (torch tensors and numpy arrays) --------------------------

def _zero(t):
    if hasattr(t, "zero_"):
        t.zero_()
    elif hasattr(t, "fill"):
        t.fill(0)
    else:
        t[...] = 0


def _snapshot(t):
    if hasattr(t, "clone"):
        return t.clone()
    return t.copy()


def _copy_into(dst, src):
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


class Autotuner(KernelInterface):
    """See ``autotune``."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None, cache_results=False):
        self.fn = fn
        self.base_fn = _innermost(fn)
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({})]
        self.keys = list(key)
        for name, what in ((key, "key"), (reset_to_zero, "reset_to_zero"),
                           (restore_value, "restore_value")):
            for n in name or []:
                if n not in self.arg_names:
                    raise ValueError(f"autotune {what}: {n!r} is not an argument of "
                                     f"{self.base_fn.__name__} ({', '.join(self.arg_names)})")
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune_configs_by = prune_configs_by or {}
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")
        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self.user_do_bench = do_bench
        self.cache_results = cache_results or _env_flag("TRITON_CACHE_AUTOTUNING",
                                                         "CTRITON_CACHE_AUTOTUNING")
        self.cache = {}            # tuning key -> best Config
        self.best_config = None
        self.configs_timings = None
        self.bench_time = 0.0
        self.nargs = None
        self._restore_copies = {}
        self.__name__ = getattr(self.base_fn, "__name__", "kernel")
        self.__doc__ = getattr(self.base_fn, "__doc__", None)

    # -- hooks around each benchmarked launch -----------------------------------
    def pre_hook(self, nargs, reset_only=False):
        """Zeroes the reset_to_zero tensors; unless reset_only, also saves
        the restore_value tensors and calls the user's pre_hook."""
        for name in self.reset_to_zero:
            _zero(nargs[name])
        if reset_only:
            return
        self._restore_copies = {n: _snapshot(nargs[n]) for n in self.restore_value}
        if self.user_pre_hook is not None:
            self.user_pre_hook(nargs)

    def post_hook(self, nargs, exception=None):
        """Puts back the restore_value tensors and calls the user's post_hook."""
        for name, saved in self._restore_copies.items():
            _copy_into(nargs[name], saved)
        self._restore_copies = {}
        if self.user_post_hook is not None:
            self.user_post_hook(nargs, exception)

    # -- benchmarking ------------------------------------------------------------
    def _benchmarker(self):
        if self.user_do_bench is not None:
            return self.user_do_bench
        from .driver import driver
        bench = driver.active.get_benchmarker()
        if self.num_warmups is not None or self.num_reps is not None:
            warm = 25 if self.num_warmups is None else self.num_warmups
            rep = 100 if self.num_reps is None else self.num_reps
            return lambda fn, quantiles: bench(fn, warmup=warm, rep=rep, quantiles=quantiles)
        return bench

    @staticmethod
    def _check_conflicts(meta, config):
        clash = [k for k in config.kwargs if k in meta]
        if clash:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(clash)}."
                             " Make sure that you don't re-define auto-tuned symbols.")

    def _bench(self, *args, config, **meta):
        """The time of one config (a list: median, 20th and 80th percentile
        in ms), inf when it cannot be compiled or run on this device."""
        from ..compiler.compiler import CompileError
        from ..compiler.errors import CompilationError
        self._check_conflicts(meta, config)
        current = dict(meta, **config.run_kwargs())
        full_nargs = {**self.nargs, **current}

        def kernel_call():
            if config.pre_hook is not None:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            return self._benchmarker()(kernel_call, quantiles=(0.5, 0.2, 0.8))
        except (OutOfResources, CompilationError, CompileError):
            return [float("inf")] * 3

    def _precompile(self, args, kwargs, configs):
        """Compiles the configs to be benchmarked on a thread pool first (the
        compiler releases the GIL; ptxas runs as a child process), so that
        tuning waits for the slowest compile rather than for their sum; the
        benchmark then finds each kernel compiled. A config that fails to
        compile is left to the benchmark, which times it as inf and says
        nothing. CTRITON_AUTOTUNE_THREADS=1 compiles one at a time."""
        try:
            n = int(os.environ.get("CTRITON_AUTOTUNE_THREADS", "0"))
        except ValueError:
            n = 0
        if n <= 0:
            n = min(len(configs), os.cpu_count() or 1, 16)
        if n < 2 or len(configs) < 2:
            return
        from concurrent.futures import ThreadPoolExecutor
        kw = {k: v for k, v in kwargs.items() if k != "warmup"}

        def one(c):
            try:
                self.fn.warmup(*args, **dict(kw, **c.run_kwargs()))
            except Exception:  # noqa: BLE001  (reported by the benchmark)
                pass

        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="ctriton-autotune") as ex:
            list(ex.map(one, configs))

    @staticmethod
    def _time_of(t):
        if isinstance(t, (list, tuple)):
            return t[0] if t else float("inf")
        return t

    # -- on-disk results ---------------------------------------------------------
    def _disk_path(self, tuning_key):
        if not self.cache_results or any(c.pre_hook is not None for c in self.configs):
            return None
        from ..compiler.compiler import compiler_build_hash
        from .driver import driver
        try:
            target = driver.active.get_current_target().key()
        except Exception:
            target = "?"
        import json
        digest = _C.sha256(json.dumps([
            "autotune-1", compiler_build_hash(), target, self.base_fn.cache_key,
            [repr(k) for k in tuning_key], [str(c) for c in self.configs]]))
        return os.path.join(_knobs().cache.dir, "autotune", digest[:2], digest,
                            f"{self.__name__}.autotune.json")

    @staticmethod
    def _config_to_json(c):
        return {"kwargs": c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages,
                "num_ctas": c.num_ctas, "maxnreg": c.maxnreg}

    def _load(self, path):
        try:
            with open(path) as f:
                import json
                data = json.load(f)
            by_str = {str(c): c for c in self.configs}

            def cfg(d):
                c = Config(**d)
                return by_str.get(str(c), c)

            def num(t):
                if isinstance(t, list):
                    return [num(x) for x in t]
                return float(t)
            timings = {cfg(d): num(t) for d, t in data["configs_timings"]}
            return cfg(data["best_config"]), timings
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _store(self, path, best, timings):
        def num(t):  # JSON has no inf
            if isinstance(t, (list, tuple)):
                return [num(x) for x in t]
            return t if t != float("inf") else "inf"
        data = {"best_config": self._config_to_json(best),
                "configs_timings": [[self._config_to_json(c), num(t)] for c, t in timings.items()]}
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp.{os.getpid()}"
            with open(tmp, "w") as f:
                import json
                json.dump(data, f)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            pass  # results that cannot be stored are simply re-tuned later

    # -- tuning ------------------------------------------------------------------
    def _tuning_key(self, args, kwargs):
        named = dict(zip(self.arg_names, args))
        named.update((k, v) for k, v in kwargs.items() if k in self.arg_names)
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def prune_configs(self, kwargs):
        """The configs worth timing: after early_config_prune, then the
        top_k by perf_model's estimate."""
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(self.configs, self.nargs, **kwargs))
            if not configs:
                raise RuntimeError(f"early_config_prune of {self.__name__} returned no config")
        if self.perf_model is not None:
            k = self.configs_top_k
            if isinstance(k, float) and k <= 1.0:
                k = int(len(configs) * k)
            k = max(int(k), 1)
            if k < len(configs):
                est = [(self.perf_model(**self.nargs, **kwargs, **c.all_kwargs()), i)
                       for i, c in enumerate(configs)]
                est.sort(key=lambda e: (e[0], e[1]))
                configs = [configs[i] for _, i in est[:k]]
        return configs

    def _tune(self, key, args, kwargs):
        path = self._disk_path(key)
        if path is not None and os.path.exists(path):
            hit = self._load(path)
            if hit is not None:
                best, self.configs_timings = hit
                self.bench_time = 0.0
                return best, True
        t0 = time.time()
        candidates = self.prune_configs(kwargs)
        self._precompile(args, kwargs, candidates)
        timings = {c: self._bench(*args, config=c, **kwargs) for c in candidates}
        self.bench_time = time.time() - t0
        best = builtins.min(timings, key=lambda c: self._time_of(timings[c]))
        self.configs_timings = timings
        if path is not None:
            self._store(path, best, timings)
        return best, False

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        try:
            config = self._choose(args, kwargs) if len(self.configs) > 1 else self.configs[0]
            self.best_config = config
            self._check_conflicts(kwargs, config)
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            return self.fn.run(*args, **kwargs, **config.run_kwargs())
        finally:
            self.nargs = None

    def _choose(self, args, kwargs):
        key = self._tuning_key(args, kwargs)
        if key in self.cache:
            return self.cache[key]
        best, from_disk = self._tune(key, args, kwargs)
        self.cache[key] = best
        if not from_disk:  # the trials left the reset_to_zero tensors dirty
            self.pre_hook({**self.nargs, **kwargs}, reset_only=True)
        if _env_flag("TRITON_PRINT_AUTOTUNING", "CTRITON_PRINT_AUTOTUNING"):
            t = self._time_of(self.configs_timings.get(best, float("nan")))
            how = "loaded from the cache" if from_disk else f"tuned in {self.bench_time:.2f}s"
            print(f"ctriton autotuning of {self.__name__} for key {key}: {how}, "
                  f"best config {best} ({t:.4f} ms)", flush=True)
        return best

    def warmup(self, *args, **kwargs):
        """Compiles the kernel for every (pruned) config; returns the list of
        what the inner kernel's warmup returned."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            out = []
            for c in self.prune_configs(kwargs):
                self._check_conflicts(kwargs, c)
                out.append(self.fn.warmup(*args, **kwargs, **c.run_kwargs()))
            return out
        finally:
            self.nargs = None

    def __repr__(self):
        return f"Autotuner({self.base_fn!r}, {len(self.configs)} configs)"


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """Decorator: tunes a @jit kernel over ``configs``.

    key: argument names whose values select a tuning (with the dtypes of the
    tensor arguments); a new combination is tuned once.
    prune_configs_by: {'early_config_prune': f(configs, named_args, **kw) ->
    configs, 'perf_model': f(**args, **config) -> estimate, 'top_k': how
    many (int) or what fraction (float <= 1) of the estimates to time}.
    reset_to_zero / restore_value: argument names of tensors zeroed before
    each trial / saved and put back around each trial.
    pre_hook(nargs) / post_hook(nargs, exception): around each trial.
    do_bench(fn, quantiles): the benchmarker (default: the driver's).
    cache_results: keep the results on disk across processes (also
    CTRITON_CACHE_AUTOTUNING=1 / TRITON_CACHE_AUTOTUNING=1)."""
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results)
    return decorator


class Heuristics(KernelInterface):
    """See ``heuristics``."""

    def __init__(self, fn, arg_names, values):
        self.fn = fn
        self.base_fn = _innermost(fn)
        self.arg_names = list(arg_names)
        self.values = dict(values)
        self.__name__ = getattr(self.base_fn, "__name__", "kernel")
        self.__doc__ = getattr(self.base_fn, "__doc__", None)

    def _apply(self, args, kwargs):
        for name, f in self.values.items():
            kwargs[name] = f({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, *args, **kwargs):
        return self.fn.run(*args, **self._apply(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self._apply(args, kwargs))

    def __repr__(self):
        return f"Heuristics({self.fn!r}, {list(self.values)})"


def heuristics(values):
    """Decorator: ``values`` maps a constexpr argument name to a function of
    the launch's arguments (a dict by name) that computes it, e.g.
    ``@heuristics({'BLOCK': lambda a: triton.next_power_of_2(a['n'])})``."""
    def decorator(fn):
        return Heuristics(fn, fn.arg_names, values)
    return decorator
