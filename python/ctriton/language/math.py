"""ctriton.language.math (tl.math.*): the elementwise math builtins, and
every device-library function (tl.math.tanh, tl.math.pow, ...) that has no
builtin of its own, as older Triton releases and kernel libraries use them."""
from .core import (exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin, cos, erf, floor,  # noqa: F401
                   ceil, abs, fma, umulhi, fdiv, div_rn, minimum, maximum, clamp)
from .standard import sigmoid, softmax, cdiv  # noqa: F401
from .extra import libdevice as _libdevice


def _export_libdevice():
    g = globals()
    for name in _libdevice._NAMES:
        if name not in g:
            g[name] = getattr(_libdevice, name)


_export_libdevice()
