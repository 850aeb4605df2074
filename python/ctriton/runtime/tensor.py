"""``reinterpret(tensor, dtype)``: the same memory seen by a kernel as
another element type (e.g. uint8 storage as fp8). The kernel launch reads
``.dtype`` and ``data_ptr()`` of a ``TensorWrapper`` like any tensor."""


def _address(t):
    if hasattr(t, "data_ptr"):
        return t.data_ptr()
    iface = getattr(t, "__array_interface__", None)  # numpy arrays
    if iface is not None:
        return iface["data"][0]
    raise TypeError(f"cannot take the address of {type(t).__name__}")


class TensorWrapper:
    """``base`` with ``dtype`` replaced; everything else comes from base."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = getattr(base, "data", None)
        self.shape = getattr(base, "shape", None)
        self.device = getattr(base, "device", "cpu")

    def data_ptr(self):
        return _address(self.base)

    @property
    def is_cuda(self):
        return bool(getattr(self.base, "is_cuda", False))

    def get_device(self):
        """The base's device index (-1: the CPU), as torch's get_device();
        None when the base cannot tell (the driver is asked then)."""
        g = getattr(self.base, "get_device", None)
        return g() if callable(g) else None

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self):
        n = getattr(self.base, "numel", None)
        if callable(n):
            return n()
        return self.base.size  # numpy

    def element_size(self):
        bits = getattr(self.dtype, "primitive_bitwidth", None)
        if bits is None:
            return self.base.element_size() if hasattr(self.base, "element_size") \
                else self.base.itemsize
        return max(bits // 8, 1)

    def __len__(self):
        return len(self.base)

    def clone(self):
        b = self.base.clone() if hasattr(self.base, "clone") else self.base.copy()
        return TensorWrapper(b, self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"

    __repr__ = __str__


def reinterpret(tensor, dtype):
    """A view of tensor whose elements the kernel reads as dtype. Wrapping a
    wrapper rewraps its base; asking for the base's own dtype unwraps."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr") or hasattr(tensor, "__array_interface__"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor).__name__}")
