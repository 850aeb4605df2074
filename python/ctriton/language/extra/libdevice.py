"""tl.extra.libdevice: elementwise device-library functions.

Each stub carries ``__ctriton_builtin__ = "extern"`` and the library
function's base name in ``__ctriton_extern__``; the frontend emits an
``extern`` op whose symbol is the libdevice name for the operand type
(``__nv_<name>f`` for fp32, ``__nv_<name>`` for fp64).
"""

_NAMES = """
abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh cospi erf erfc erfcinv
erfcx erfinv exp exp10 exp2 expm1 fabs fdim floor fma fmax fmin fmod hypot ilogb isinf isnan
j0 j1 lgamma llrint log log10 log1p log2 logb nearbyint nextafter pow rcbrt remainder rint
round rsqrt saturate signbit sin sinh sinpi sqrt tan tanh tgamma trunc y0 y1 div_rn div_rz
mul_rn mul_rz add_rn add_rz sqrt_rn sqrt_rz rcp_rn
""".split()


def _extern(name):
    def stub(*args, **kwargs):
        raise RuntimeError(f"libdevice.{name}() can only be called inside a @jit function")
    stub.__name__ = name
    stub.__qualname__ = name
    stub.__ctriton_builtin__ = "extern"
    stub.__ctriton_extern__ = name
    return stub


for _n in _NAMES:
    globals()[_n] = _extern(_n)
del _n
