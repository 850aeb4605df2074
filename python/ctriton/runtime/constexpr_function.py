"""@constexpr_function: plain Python helpers that @jit code may call at
compile time.

The frontend calls a function carrying ``__ctriton_constexpr_function__``
with the compile-time values of its arguments (ints, floats, strings, dtypes,
shape tuples) and uses the result as a constexpr. Calling it with a tensor is
a compilation error. Outside kernels it stays an ordinary function.
"""
import functools


def constexpr_function(fn):
    """Marks fn as callable from @jit functions at compile time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*(_unwrap(a) for a in args), **{k: _unwrap(v) for k, v in kwargs.items()})

    wrapper.__ctriton_constexpr_function__ = True
    return wrapper


def _unwrap(x):
    from ..language.core import constexpr
    return x.value if isinstance(x, constexpr) else x
