"""ctriton.tools.mxfp (``triton.tools.mxfp``): host-side microscaling
formats of the OCP MX specification, as torch tensors, for building and
checking block-scaled matmul inputs (Triton's tutorial 10 imports them).

- ``MXFP4Tensor``: E2M1 elements, one per uint8 (the code in the low four
  bits: sign bit 3, exponent bits 2-1, mantissa bit 0). The values are
  0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no Inf or NaN.
  From float: round to nearest, ties to the even code; magnitudes past 6,
  Inf and NaN clamp to 6 (the sign kept). Two elements pack into one byte
  along a dim (element 2i in the low nibble, 2i + 1 in the high one).
- ``MXScaleTensor``: E8M0 scale factors, one per uint8: 2^(e - 127) for
  e in 0..254, 255 is NaN. From float: the floor of log2, clamped to
  0..254; values <= 0, Inf and NaN become 255.
"""
import torch

_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# the midpoints between consecutive magnitudes: a value on one rounds to
# the neighbour with the even code
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def _size_of(size):
    if size is None:
        return None
    return tuple(size) if isinstance(size, (tuple, list, torch.Size)) else (int(size),)


class _MXData:
    """Codes in a uint8 torch tensor: made from float data (``data=``, the
    subclass's _from_float) or left to fill (``size=``, ``device=``)."""

    def __init__(self, data=None, size=None, device=None):
        name = type(self).__name__
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"{name}: data must be a torch tensor")
            self.device = data.device
            self.size = tuple(data.shape)
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _size_of(size)
        else:
            raise ValueError(f"{name}: give data or size")


class MXFP4Tensor(_MXData):
    """E2M1 data: ``MXFP4Tensor(data=float_tensor)`` converts, ``MXFP4Tensor(size=..., device=...)``
    makes an empty one to fill with ``random()``."""

    def random(self):
        """Every E2M1 code with equal probability (both zeros included)."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        """The values as float32."""
        if dtype != torch.float32:
            raise ValueError("MXFP4Tensor.to: only torch.float32 is supported")
        table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=self.data.device)
        mag = table[(self.data & 0x7).long()]
        return torch.where((self.data & 0x8) != 0, -mag, mag)

    def _from_float(self, values):
        x = values.to(torch.float32)
        sign = torch.signbit(x).to(torch.uint8) << 3
        a = torch.nan_to_num(x.abs(), nan=6.0, posinf=6.0).clamp(max=6.0)
        mids = torch.tensor(_E2M1_MIDPOINTS, dtype=torch.float32, device=x.device)
        lo = torch.bucketize(a, mids, right=False)  # on a midpoint: the lower neighbour
        hi = torch.bucketize(a, mids, right=True)   # on a midpoint: the upper one
        code = torch.where((lo != hi) & (hi % 2 == 0), hi, lo)
        return sign | code.to(torch.uint8)

    def to_packed_tensor(self, dim):
        """Two elements per byte along dim (an odd size is padded with a zero)."""
        d = self.data
        if not 0 <= dim < d.ndim:
            raise ValueError(f"to_packed_tensor: dim {dim} is not a dimension of a {d.ndim}-D tensor")
        if d.shape[dim] % 2:
            pad = list(d.shape)
            pad[dim] = 1
            d = torch.cat([d, torch.zeros(pad, dtype=d.dtype, device=d.device)], dim=dim)
        even = d.narrow(dim, 0, d.shape[dim]).unflatten(dim, (d.shape[dim] // 2, 2))
        low, high = even.select(dim + 1, 0), even.select(dim + 1, 1)
        return ((high & 0xF) << 4) | (low & 0xF)

    def unpack_packed_tensor(self, packed_tensor, dim, original_shape):
        """The inverse of to_packed_tensor: one code per byte, the padding dropped."""
        p = packed_tensor
        pair = torch.stack((p & 0xF, (p >> 4) & 0xF), dim=dim + 1)
        d = pair.flatten(dim, dim + 1)
        return d.narrow(dim, 0, original_shape[dim]).to(torch.uint8)


class MXScaleTensor(_MXData):
    """E8M0 scales: ``MXScaleTensor(data=float_tensor)`` converts, ``MXScaleTensor(size=..., device=...)``
    makes an empty one to fill with ``random(low, high)``."""

    def random(self, low=None, high=None):
        """Exponents uniformly from those of low..high (default: all but NaN)."""
        import math
        lo = 0 if low is None else max(0, int(math.floor(math.log2(low))) + 127)
        hi = 254 if high is None else min(254, max(0, int(math.floor(math.log2(high))) + 127))
        if lo > hi:
            raise ValueError("MXScaleTensor.random: low must not exceed high")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        """The scales as float32 (255: NaN)."""
        if dtype != torch.float32:
            raise ValueError("MXScaleTensor.to: only torch.float32 is supported")
        e = self.data.to(torch.int32)
        v = torch.ldexp(torch.ones_like(e, dtype=torch.float32), (e - 127).clamp(min=-127))
        # 2^-127 is a float32 subnormal: exact through ldexp
        return torch.where(e == 255, torch.full_like(v, float("nan")), v)

    def _from_float(self, values):
        x = values.to(torch.float32)
        bad = torch.isnan(x) | torch.isinf(x) | (x <= 0)
        safe = torch.where(bad, torch.ones_like(x), x)
        e = torch.floor(torch.log2(safe)).to(torch.int32) + 127
        code = e.clamp(0, 254).to(torch.uint8)
        return torch.where(bad, torch.full_like(code, 255), code)
