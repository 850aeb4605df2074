"""``TensorDescriptor``: a host-side description of a global tensor for a
kernel that loads and stores blocks of it (``desc.load([i, j])``): its base
tensor, shape, strides and the block shape. The checks are Triton's (rank
1-5, 16-byte alignment of the base and of every stride but the last, unit
last stride, power-of-two block dims, ``padding`` "zero" or "nan")."""
from dataclasses import dataclass
from typing import Any, List


def _elem_bytes(base):
    dt = base.dtype
    n = getattr(dt, "itemsize", None)
    if n is None:
        bits = getattr(dt, "primitive_bitwidth", None)
        n = max(bits // 8, 1) if bits else base.element_size()
    return n


def _is_float(base):
    dt = base.dtype
    v = getattr(dt, "is_floating_point", None)
    if v is not None:
        return bool(v)
    f = getattr(dt, "is_floating", None)
    return bool(f()) if callable(f) else False


def validate_block_shape(block_shape):
    numel = 1
    for i, d in enumerate(block_shape):
        if not isinstance(d, int):
            raise TypeError(f"block_shape[{i}] must be an int, got {type(d).__name__}")
        if d <= 0 or d & (d - 1):
            raise ValueError(f"block_shape[{i}] must be a positive power of 2, got {d}")
        numel *= d
    from ..language.core import TRITON_MAX_TENSOR_NUMEL
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel "
                         f"({TRITON_MAX_TENSOR_NUMEL})")
    return numel


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"
    round_f32_to_tf32: bool = False

    def __post_init__(self):
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"rank mismatch: {self}")
        if not 0 < rank <= 5:
            raise ValueError(f"a tensor descriptor has rank 1 to 5, got {rank}")
        if type(self.base).__name__ not in ("FakeTensor", "FunctionalTensor"):
            if self.base.data_ptr() % 16:
                raise ValueError("base must be 16-byte aligned")
        validate_block_shape(list(self.block_shape))
        nbytes = _elem_bytes(self.base)
        for s in list(self.strides)[:-1]:
            if (s * nbytes) % 16:
                raise ValueError("strides must be 16-byte aligned")
        for d in self.shape:
            if d <= 0:
                raise ValueError("shape must be positive")
        if self.strides[-1] != 1:
            raise ValueError("Last dimension must be contiguous")
        if self.padding not in ("zero", "nan"):
            raise ValueError("Illegal value for padding")
        if self.padding == "nan" and not _is_float(self.base):
            raise ValueError("Padding option `nan` is only supported for floating point tensors")
        if self.round_f32_to_tf32 and str(self.base.dtype).split(".")[-1] not in ("float32", "fp32"):
            raise ValueError("round_f32_to_tf32 is only supported for float32 tensors")

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero", round_f32_to_tf32=False):
        return TensorDescriptor(tensor, list(tensor.shape), list(tensor.stride()), list(block_shape),
                                padding, round_f32_to_tf32)
