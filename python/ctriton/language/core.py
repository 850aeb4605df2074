"""The core of ctriton.language: dtypes, type classes, constexpr, and the
builtin functions.

Builtins are plain Python stubs carrying ``__ctriton_builtin__ = "<name>"``;
the C frontend recognizes them by that attribute (so aliases and ``from ...
import`` work) and lowers each call to IR. Called outside a kernel they raise.
"""

import builtins as _builtins
import enum as _enum

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


# name -> (IR type name, bits, mantissa bits, exponent bias); ints have no
# mantissa.
_DTYPES = {
    "int1": ("i1", 1), "int8": ("i8", 8), "int16": ("i16", 16), "int32": ("i32", 32),
    "int64": ("i64", 64), "uint8": ("u8", 8), "uint16": ("u16", 16), "uint32": ("u32", 32),
    "uint64": ("u64", 64),
    "fp8e4b15": ("f8e4b15", 8, 3, 15), "fp8e4nv": ("f8e4m3", 8, 3, 7),
    "fp8e4b8": ("f8e4b8", 8, 3, 8), "fp8e5": ("f8e5m2", 8, 2, 15), "fp8e5b16": ("f8e5b16", 8, 2, 16), "fp16": ("f16", 16, 10, 15),
    "bf16": ("bf16", 16, 7, 127), "fp32": ("f32", 32, 23, 127), "fp64": ("f64", 64, 52, 1023),
    "void": (None, 0),
}


_SCALARS = {}


class dtype:
    """A scalar element type. ``name`` is Triton's spelling (``fp32``);
    ``dtype("fp32")`` is ``float32``."""

    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32",
                "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    class SIGNEDNESS(_enum.Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(_enum.Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    def __new__(cls, *args, **kwargs):
        # dtype("fp32") is float32: scalar dtypes are one object per name
        if cls is dtype and args:
            hit = _SCALARS.get(_unwrap(args[0]))
            if hit is not None:
                return hit
        return super().__new__(cls)

    def __init__(self, name):
        name = _unwrap(name)
        if name not in _DTYPES:
            raise ValueError(f"unknown dtype name {name!r}; expected one of "
                             f"{', '.join(_DTYPES)}")
        self.name = name
        info = _DTYPES[name]
        self._ir = info[0]
        self.primitive_bitwidth = info[1]
        self.itemsize = self.primitive_bitwidth // 8
        if name in self.SINT_TYPES or name in self.UINT_TYPES:
            self.int_signedness = (dtype.SIGNEDNESS.SIGNED if name in self.SINT_TYPES
                                   else dtype.SIGNEDNESS.UNSIGNED)
            self.int_bitwidth = self.primitive_bitwidth
        elif name in self.FP_TYPES:
            self.fp_mantissa_width = info[2]
            self.exponent_bias = info[3]

    def _is(self, n):
        return self.name == n

    def is_fp8(self):
        return "fp8" in self.name

    def is_fp8e4nv(self):
        return self._is("fp8e4nv")

    def is_fp8e4b8(self):
        return self._is("fp8e4b8")

    def is_fp8e4b15(self):
        return self._is("fp8e4b15")

    def is_fp8e5(self):
        return self._is("fp8e5")

    def is_fp8e5b16(self):
        return self._is("fp8e5b16")

    def is_fp16(self):
        return self._is("fp16")

    def is_bf16(self):
        return self._is("bf16")

    def is_fp32(self):
        return self._is("fp32")

    def is_fp64(self):
        return self._is("fp64")

    def is_int1(self):
        return self._is("int1")

    def is_int8(self):
        return self._is("int8")

    def is_int16(self):
        return self._is("int16")

    def is_int32(self):
        return self._is("int32")

    def is_int64(self):
        return self._is("int64")

    def is_uint8(self):
        return self._is("uint8")

    def is_uint16(self):
        return self._is("uint16")

    def is_uint32(self):
        return self._is("uint32")

    def is_uint64(self):
        return self._is("uint64")

    def is_floating(self):
        return self.name in self.FP_TYPES

    def is_standard_floating(self):
        return self.name in self.STANDARD_FP_TYPES

    def is_int(self):
        return self.name in self.SINT_TYPES or self.name in self.UINT_TYPES

    def is_int_signed(self):
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self):
        return self.name in self.UINT_TYPES

    def is_bool(self):
        return self.name == "int1"

    def is_void(self):
        return self.name == "void"

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_const(self):
        return False

    @staticmethod
    def is_dtype(type_str):
        return type_str in dtype.SINT_TYPES + dtype.UINT_TYPES + dtype.FP_TYPES + dtype.OTHER_TYPES

    def kind(self):
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():
            return dtype.KIND.INTEGRAL
        if self.is_floating():
            return dtype.KIND.FLOATING
        raise TypeError(f"{self} has no kind")

    def get_int_max_value(self):
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.is_int_unsigned():
            return 2 ** self.int_bitwidth - 1
        raise TypeError(f"{self} is not an integer type")

    def get_int_min_value(self):
        if self.is_int_signed():
            return -2 ** (self.int_bitwidth - 1)
        if self.is_int_unsigned():
            return 0
        raise TypeError(f"{self} is not an integer type")

    @property
    def scalar(self):
        return self

    def with_element_ty(self, element_ty):
        return element_ty

    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, dtype) and type(other) is type(self) and self._key() == other._key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.name,)

    def __str__(self):
        return self.name

    def codegen_name(self):
        if self.name.startswith("fp"):
            return "float" + self.name[2:]
        if self.name.startswith("bf"):
            return "bfloat" + self.name[2:]
        return self.name

    @property
    def cache_key_part(self):
        return self.name

    def mangle(self):
        if self.is_int():
            return ("i" if self.is_int_signed() else "u") + str(self.int_bitwidth)
        if self.is_floating():
            return self.name
        return "V"

    def __repr__(self):
        return f"triton.language.{self.codegen_name()}"

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
        self.name = f"pointer<{element_ty}>" if not const else f"const_pointer<{element_ty}>"
        self._ir = None
        self.primitive_bitwidth = 64
        self.itemsize = 8

    def is_ptr(self):
        return True

    def is_const(self):
        return self.const

    def _key(self):
        return ("ptr", self.element_ty._key(), self.address_space, bool(self.const))

    def __repr__(self):
        return self.name

    def mangle(self):
        return f"P{self.element_ty.mangle()}"


class block_type(dtype):
    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = _builtins.tuple(shape)
        numel = 1
        for s in self.shape:
            numel *= s
        self.numel = numel
        self.name = f"<{self.shape}, {element_ty}>"
        self._ir = None
        self.primitive_bitwidth = element_ty.primitive_bitwidth
        self.itemsize = element_ty.itemsize

    def is_block(self):
        return True

    @property
    def scalar(self):
        return self.element_ty

    def get_block_shapes(self):
        return self.shape

    def with_element_ty(self, element_ty):
        return block_type(element_ty, self.shape)

    def _key(self):
        return ("block", self.element_ty._key(), self.shape)

    def __repr__(self):
        return self.name


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
void = dtype("void")
for _d in (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
           float32, float64, float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16, void):
    _SCALARS[_d.name] = _d
del _d
pi32_t = pointer_type(int32)

# IR type name -> dtype (read by the C frontend for `x.dtype`).
_IR_TO_DTYPE = {d._ir: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                                    uint64, float16, bfloat16, float32, float64,
                                    float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16)}


class tensor:
    """The type of block and scalar values inside kernels (for isinstance)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("tl.tensor values exist only inside @jit functions")


class tuple_type:
    """The type of a tuple value: element types and, for a namedtuple, its
    field names."""

    def __init__(self, types=(), fields=None):
        self.types = list(types)
        self.fields = list(fields) if fields else [""] * len(self.types)

    def __iter__(self):
        return iter(self.types)

    def __len__(self):
        return len(self.types)

    def __getitem__(self, i):
        return self.types[i]

    def __eq__(self, other):
        return isinstance(other, tuple_type) and self.types == other.types and \
            self.fields == other.fields

    def __hash__(self):
        return hash(_builtins.tuple(self.types))

    def __str__(self):
        return f"[{','.join(str(t) for t in self.types)}]"

    def is_ptr(self):
        return False

    def is_block(self):
        return False


class constexpr_type:
    """The type of a constexpr value."""

    def __init__(self, value):
        self.value = _unwrap(value)

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self):
        return hash(("constexpr", repr(self.value)))

    def __repr__(self):
        return f"constexpr_type[{self.value!r}]"

    def is_ptr(self):
        return False

    def is_block(self):
        return False


class tuple(_builtins.tuple):  # noqa: A001
    """tl.tuple: a tuple of kernel values (outside kernels, a Python tuple)."""

    def __new__(cls, args=(), type=None):  # noqa: A002
        return super().__new__(cls, args)


class const:
    """The annotation of a read-only pointer argument (``x: tl.const``)."""


class condition:
    """``while tl.condition(c, disable_licm=True):``: the condition of a
    while loop with attributes for the compiler (disable_licm: keep loop
    invariant code inside the loop). Only meaningful as a while's test."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = disable_licm


_STR_TO_DTYPE = {"fp8e4nv": "fp8e4nv", "fp8e4b8": "fp8e4b8", "fp8e5": "fp8e5",
                 "fp8e5b16": "fp8e5b16", "fp8e4b15": "fp8e4b15", "fp16": "fp16",
                 "bf16": "bf16", "fp32": "fp32", "fp64": "fp64", "i1": "int1", "u1": "int1",
                 "B": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                 "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
                 "void": "void"}


def str_to_ty(name, c=None):
    """A signature string ("*fp32", "*kfp16", "i64", "constexpr", a tuple of
    strings) -> its type object."""
    name = _unwrap(name)
    if isinstance(name, _builtins.tuple):
        return tuple_type([str_to_ty(x, c) for x in name], getattr(type(name), "_fields", None))
    if not isinstance(name, str) or not name:
        raise TypeError(f"str_to_ty: expected a type string, got {name!r}")
    if name[0] == "*":
        rest, const_ = name[1:], False
        if rest.startswith("k"):
            rest, const_ = rest[1:], True
        return pointer_type(str_to_ty(rest, c), const=const_)
    if name.startswith("constexpr"):
        return constexpr_type(c)
    if name not in _STR_TO_DTYPE:
        raise TypeError(f"str_to_ty: unknown type string {name!r}")
    return dtype(_STR_TO_DTYPE[name])


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


# The builtins: every function of the frontend's table (python/frontend/fe_builtins.c,
# read through _C.builtin_table) but its internal rows ("to" is a tensor
# method only, "extern" backs libdevice, "__print__" Python's print, the gdc_*
# rows are tl.extra.cuda's), the
# loops the for statement lowers, and names of triton.language that ctriton
# has no lowering for (a kernel calling one gets "tl.<name>() is not
# supported by ctriton"; none at present).
_INTERNAL = ("to", "extern", "__print__", "gdc_wait", "gdc_launch_dependents")
_LOOPS = ["range", "static_range"]
_UNSUPPORTED = []


def _builtin_names():
    from .. import _C
    table = [name for name, _params, _method in _C.builtin_table() if name not in _INTERNAL]
    return table + _LOOPS + _UNSUPPORTED


_BUILTINS = _builtin_names()

for _n in _BUILTINS:
    globals()[_n] = _builtin(_n)
del _n


# -- tensor descriptors ---------------------------------------------------------
# Inside a kernel a descriptor is the value of `tl.make_tensor_descriptor(...)`
# or of a TensorDescriptor argument; the frontend holds it as (base, shape,
# strides, block_shape, padding) and lowers `desc.load/store/atomic_*` to
# masked pointer-block accesses. These classes exist for isinstance() and
# annotations; their instances live only inside @jit functions.

class tensor_descriptor_base:
    """A descriptor of a global tensor inside a kernel: loads and stores of
    blocks of `block_shape` at element offsets (out-of-bounds reads give the
    padding value, out-of-bounds writes are dropped)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("tl.tensor_descriptor values exist only inside @jit functions "
                           "(make one with tl.make_tensor_descriptor, or pass a "
                           "triton.tools.tensor_descriptor.TensorDescriptor)")


class tensor_descriptor(tensor_descriptor_base):
    """tl.tensor_descriptor: a descriptor with known shape and strides."""
    _fields = ("base", "shape", "strides")


class tensor_descriptor_base_type:
    """The type of a descriptor: its block type (for annotations)."""

    def __init__(self, block_type):
        self.block_type = block_type

    def __eq__(self, other):
        return type(other) is type(self) and self.block_type == other.block_type

    def __hash__(self):
        return hash(("tensor_descriptor", str(self.block_type)))

    def __str__(self):
        return f"tensor_descriptor<{self.block_type}>"


class tensor_descriptor_type(tensor_descriptor_base_type):
    pass


_DESCRIPTOR_BUILTINS = ["make_tensor_descriptor", "load_tensor_descriptor",
                        "store_tensor_descriptor"]
for _n in _DESCRIPTOR_BUILTINS:
    globals()[_n] = _builtin(_n)
del _n


# -- block pointers ---------------------------------------------------------------
# `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)` and
# `tl.advance(ptr, offsets)`: as in Triton, a block pointer exists only while
# a kernel is compiled (the frontend holds it as base, shape, strides,
# offsets, block_shape and order) and `tl.load` / `tl.store` through it
# become masked pointer-block accesses (`boundary_check` picks the dims that
# are checked, `padding_option` the value of out-of-bounds reads). The class
# exists for isinstance().

class _block_ptr:
    """A block pointer inside a kernel: the block of `block_shape` at
    `offsets` of a tensor of `shape` and `strides` that starts at `base`."""
    _fields = ("base", "shape", "strides", "offsets", "block_shape", "order")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("block pointers exist only inside @jit functions (make one with "
                           "tl.make_block_ptr)")


_BLOCK_PTR_BUILTINS = ["make_block_ptr", "advance"]
for _n in _BLOCK_PTR_BUILTINS:
    globals()[_n] = _builtin(_n)
del _n
