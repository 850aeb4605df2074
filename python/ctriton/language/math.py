"""ctriton.language.math: elementwise math builtins (tl.math.*)."""
from .core import (exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin, cos, erf, floor,  # noqa: F401
                   ceil, abs, fma, umulhi, fdiv, div_rn, minimum, maximum, clamp)
from .standard import sigmoid, softmax, cdiv  # noqa: F401
