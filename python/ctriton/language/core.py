"""The core of ctriton.language: dtypes, type classes, constexpr, and the
builtin functions.

Builtins are plain Python stubs carrying ``__ctriton_builtin__ = "<name>"``;
the C frontend recognizes them by that attribute (so aliases and ``from ...
import`` work) and lowers each call to IR. Called outside a kernel they raise.
"""

TRITON_MAX_TENSOR_NUMEL = 1048576


class constexpr:
    """A compile-time value; also the annotation marking constexpr arguments."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return self.value.__index__()

    def __eq__(self, other):
        return self.value == _unwrap(other)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


class dtype:
    """A scalar element type. ``name`` is Triton's spelling (``fp32``)."""

    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")

    def __init__(self, name, ir, bits):
        self.name = name
        self._ir = ir
        self.primitive_bitwidth = bits

    def is_floating(self):
        return self.name in self.FP_TYPES

    def is_int(self):
        return self.name in self.SINT_TYPES or self.name in self.UINT_TYPES

    def is_int_signed(self):
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self):
        return self.name in self.UINT_TYPES

    def is_bool(self):
        return self.name == "int1"

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_fp8(self):
        return self.name.startswith("fp8")

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    @property
    def scalar(self):
        return self

    def __eq__(self, other):
        return isinstance(other, dtype) and type(other) is type(self) and self._key() == other._key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.name,)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{self.name}"

    def to_ir(self, builder=None):
        return self._ir


class pointer_type(dtype):
    def __init__(self, element_ty, address_space=1, const=False):
        element_ty = _unwrap(element_ty)
        if not isinstance(element_ty, dtype):
            raise TypeError(f"pointer_type: element_ty must be a dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        super().__init__(f"pointer<{element_ty}>", None, 64)

    def is_ptr(self):
        return True

    def _key(self):
        return ("ptr", self.element_ty._key(), self.address_space)


class block_type(dtype):
    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = tuple(shape)
        numel = 1
        for s in self.shape:
            numel *= s
        self.numel = numel
        super().__init__(f"<{self.shape}, {element_ty}>", None, element_ty.primitive_bitwidth)

    def is_block(self):
        return True

    @property
    def scalar(self):
        return self.element_ty

    def _key(self):
        return ("block", self.element_ty._key(), self.shape)


int1 = dtype("int1", "i1", 1)
int8 = dtype("int8", "i8", 8)
int16 = dtype("int16", "i16", 16)
int32 = dtype("int32", "i32", 32)
int64 = dtype("int64", "i64", 64)
uint8 = dtype("uint8", "u8", 8)
uint16 = dtype("uint16", "u16", 16)
uint32 = dtype("uint32", "u32", 32)
uint64 = dtype("uint64", "u64", 64)
float16 = dtype("fp16", "f16", 16)
bfloat16 = dtype("bf16", "bf16", 16)
float32 = dtype("fp32", "f32", 32)
float64 = dtype("fp64", "f64", 64)
float8e4nv = dtype("fp8e4nv", "f8e4m3", 8)
float8e5 = dtype("fp8e5", "f8e5m2", 8)
float8e4b15 = dtype("fp8e4b15", None, 8)
float8e4b8 = dtype("fp8e4b8", None, 8)
float8e5b16 = dtype("fp8e5b16", None, 8)
void = dtype("void", None, 0)
pi32_t = pointer_type(int32)

# IR type name -> dtype (read by the C frontend for `x.dtype`).
_IR_TO_DTYPE = {d._ir: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                                    uint64, float16, bfloat16, float32, float64,
                                    float8e4nv, float8e5)}


class tensor:
    """The type of block and scalar values inside kernels (for isinstance)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("tl.tensor values exist only inside @jit functions")


class tuple_type:
    pass


class PropagateNan:
    NONE = 0
    ALL = 0xFFFF


class slice:  # noqa: A001 - Triton's name
    pass


def _builtin(name):
    def stub(*args, **kwargs):
        raise RuntimeError(f"tl.{name}() can only be called inside a @jit function")
    stub.__name__ = name
    stub.__qualname__ = name
    stub.__ctriton_builtin__ = name
    return stub


# The builtins: every function of the frontend's table (python/src/fe_builtins.c,
# read through _C.builtin_table) but its internal rows ("to" is a tensor
# method only, "extern" backs libdevice, "__print__" Python's print), the
# loops the for statement lowers, and names of triton.language that ctriton
# has no lowering for (a kernel calling one gets "tl.<name>() is not
# supported by ctriton").
_INTERNAL = ("to", "extern", "__print__")
_LOOPS = ["range", "static_range"]
_UNSUPPORTED = ["add", "sub", "mul", "make_block_ptr", "advance", "inline_asm_elementwise"]


def _builtin_names():
    from .. import _C
    table = [name for name, _params, _method in _C.builtin_table() if name not in _INTERNAL]
    return table + _LOOPS + _UNSUPPORTED


_BUILTINS = _builtin_names()

for _n in _BUILTINS:
    globals()[_n] = _builtin(_n)
del _n
