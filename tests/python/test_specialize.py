"""The specialization key: Triton's rules (ints equal to 1, divisibility by
16, i32/i64/u64 ranges, bool, float, None, tuples, tensors, controls)."""
import numpy as np
import pytest

from ctriton import _C
import kernels_for_tests as K


@pytest.mark.parametrize("v,want", [
    (None, ("constexpr", None)),
    (True, ("u1", None)),
    (1, ("constexpr", 1)),
    (2, ("i32", "")),
    (32, ("i32", "D")),
    (-16, ("i32", "D")),
    (2**31 - 1, ("i32", "")),
    (2**31, ("i64", "D")),
    (-2**31 - 1, ("i64", "")),
    (2**63 - 1, ("i64", "")),
    (2**63, ("u64", "D")),
    (2**64 - 1, ("u64", "")),
    (1.5, ("fp32", None)),
    ((1, 16), (("constexpr", "i32"), (1, "D"))),
])
def test_scalar_keys(v, want):
    assert _C.specialize(v) == want


def test_overflow():
    with pytest.raises(OverflowError):
        _C.specialize(2**64)
    with pytest.raises(OverflowError):
        _C.specialize(-2**63 - 1)


def test_controls():
    assert _C.specialize(1, False) == ("i32", "")
    assert _C.specialize(16, False) == ("i32", "")
    assert _C.specialize(16, True, False) == ("i32", "")
    assert _C.specialize(1, True, False) == ("constexpr", 1)


def test_numpy_pointers():
    a = np.zeros(64, np.float32)
    assert _C.specialize(a) == ("*fp32", "D")
    assert _C.specialize(a[1:]) == ("*fp32", "")  # 4-byte offset: not 16-aligned
    assert _C.specialize(a[4:]) == ("*fp32", "D")
    assert _C.specialize(np.zeros(8, np.float16))[0] == "*fp16"
    assert _C.specialize(np.zeros(8, np.int64))[0] == "*i64"
    assert _C.specialize(np.zeros(8, np.uint8))[0] == "*u8"
    assert _C.specialize(np.zeros(8, np.bool_))[0] == "*u1"
    assert _C.specialize(a, True, False) == ("*fp32", "")


class FakeDtype:
    def __init__(self, s):
        self.s = s

    def __str__(self):
        return self.s


class FakeTensor:
    """Duck-typed tensor: data_ptr() and dtype."""

    def __init__(self, ptr, dtype):
        self.ptr, self.dtype = ptr, FakeDtype(dtype)

    def data_ptr(self):
        return self.ptr


@pytest.mark.parametrize("dt,want", [("torch.float16", "fp16"), ("torch.bfloat16", "bf16"),
                                     ("torch.float32", "fp32"), ("torch.int64", "i64"),
                                     ("torch.bool", "u1"), ("torch.float8_e4m3fn", "fp8e4nv"),
                                     ("torch.float8_e5m2", "fp8e5")])
def test_duck_tensor_dtypes(dt, want):
    assert _C.specialize(FakeTensor(4096, dt)) == ("*" + want, "D")
    assert _C.specialize(FakeTensor(4100, dt)) == ("*" + want, "")


def test_unsupported_type():
    with pytest.raises(TypeError, match="unsupported type"):
        _C.specialize(object())


def _variants(kernel, values):
    buf = K.np_f32()
    return {kernel.specialization(buf, i)[0] for i in values}


def test_variant_counts_from_keys():
    vals = [1, 2, 4, 8, 16, 32]
    assert len(_variants(K.take_int, vals)) == 3
    assert len(_variants(K.take_int_nospec, vals)) == 1
    assert len(_variants(K.take_int_noalign, vals)) == 2


def test_variant_counts_compiled(fake_compile):
    buf = K.np_f32()
    for kern, want in ((K.take_int, 3), (K.take_int_nospec, 1), (K.take_int_noalign, 2)):
        kern.clear_cache()
        for i in [1, 2, 4, 8, 16, 32]:
            kern.warmup(buf, i, grid=(1,))
        assert len(kern.cache) == want, kern
    # the same call again is an in-memory hit: nothing compiles
    n = len(fake_compile)
    K.take_int.warmup(buf, 16, grid=(1,))
    assert len(fake_compile) == n


def test_signature_and_constexprs(fake_compile):
    a = K.np_f32()
    k = K.add_kernel.warmup(a, a, a, 1024, BLOCK=64, grid=(1,))
    src_sig = k.launch_sig
    assert src_sig == ["*fp32", "*fp32", "*fp32", "i32", "constexpr"]
    key, sig, spec = K.add_kernel.specialization(a, a, a[1:], 1, BLOCK=64)
    assert sig == ["*fp32", "*fp32", "*fp32", "constexpr", "constexpr"]
    assert spec[:4] == ["D", "D", "", 1] and spec[4] == 64
    # options are part of the key
    assert K.add_kernel.specialization(a, a, a, 7, BLOCK=64)[0] != \
        K.add_kernel.specialization(a, a, a, 7, BLOCK=64, num_warps=8)[0]
    # constexpr values are part of the key
    assert K.add_kernel.specialization(a, a, a, 7, BLOCK=64)[0] != \
        K.add_kernel.specialization(a, a, a, 7, BLOCK=128)[0]


def test_warmup_with_dtypes(fake_compile):
    k = K.add_kernel.warmup(np.dtype("float16"), np.dtype("float16"), np.dtype("float16"), 4096,
                            BLOCK=64, grid=(1,))
    assert k.launch_sig[:3] == ["*fp16"] * 3
