"""ctriton.language: the names of triton.language (owned by the frontend).

Builtins are recognized by the C frontend through their
``__ctriton_builtin__`` attribute; dtypes by their class; the standard
library (``standard.py``) and the random number generator (``random.py``)
are written in the language itself.
"""
from . import core
from .core import *  # noqa: F401,F403
from .core import (TRITON_MAX_TENSOR_NUMEL, PropagateNan, _BUILTINS, block_type, constexpr,  # noqa: F401
                   dtype, pointer_type, tensor, tuple_type, pi32_t, void, str_to_ty, tuple,
                   constexpr_type, const, condition)
from .core import (tensor_descriptor, tensor_descriptor_base, tensor_descriptor_type,  # noqa: F401
                   tensor_descriptor_base_type, make_tensor_descriptor, load_tensor_descriptor,
                   store_tensor_descriptor, make_block_ptr, advance)
from .core import (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,  # noqa: F401
                   bfloat16, float32, float64, float8e4nv, float8e5, float8e4b15, float8e4b8,
                   float8e5b16)
from .standard import (cdiv, sigmoid, softmax, swizzle2d, interleave, flip, sort, topk,  # noqa: F401
                       bitonic_merge)
from . import math  # noqa: F401
from . import extra  # noqa: F401
from .random import (philox, philox_impl, randint, randint4x, rand, rand4x, randn, randn4x,  # noqa: F401
                     uint_to_uniform_float, pair_uniform_to_normal)

__all__ = sorted(set(_BUILTINS) | {
    "TRITON_MAX_TENSOR_NUMEL", "PropagateNan", "block_type", "constexpr", "dtype", "pointer_type",
    "tensor", "pi32_t", "void", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5",
    "float8e4b15", "float8e4b8", "float8e5b16", "cdiv", "sigmoid", "softmax", "swizzle2d",
    "interleave", "flip", "sort", "topk", "bitonic_merge", "math", "extra", "philox", "philox_impl", "randint", "randint4x", "rand",
    "rand4x", "randn", "randn4x", "uint_to_uniform_float", "pair_uniform_to_normal",
    "str_to_ty", "tuple", "tuple_type", "constexpr_type", "const", "condition",
    "tensor_descriptor", "tensor_descriptor_base", "tensor_descriptor_type",
    "tensor_descriptor_base_type", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "make_block_ptr", "advance",
} - set(core._UNSUPPORTED))
