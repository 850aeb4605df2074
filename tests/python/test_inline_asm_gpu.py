"""Triton's test_inline_asm, test_inline_asm_packed,
test_inline_asm_with_pointers, test_inline_asm_multiple_outputs and
test_inline_asm_packed_multiple_outputs on the GPU (the kernels of
test_inline_asm.py), against numpy. Marked `gpu`: skipped where no CUDA
device is active."""
import numpy as np
import pytest

from test_inline_asm import (multi_kernel, packed_kernel, packed_multi_kernel, pointers_kernel,
                             purity_kernel, scalar_kernel, shf_kernel)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch as t
    return t


def _dev(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _host(t):
    return t.cpu().numpy()


def _rand(rs, shape, dt):
    if dt == "float32":
        return rs.standard_normal(shape).astype(np.float32) * 100
    info = np.iinfo(dt)
    return rs.randint(info.min, info.max, size=shape, dtype=dt)


def test_inline_asm(torch):
    rs = np.random.RandomState(17)
    x, y, z = (_rand(rs, (128,), "uint32") for _ in range(3))
    # torch has no uint32 arithmetic: pass the bits as int32
    xt, yt, zt = (_dev(torch, a.view(np.int32)) for a in (x, y, z))
    n = 17
    shf_kernel[(1,)](xt, yt, zt, n, BLOCK=128)
    np.testing.assert_equal(_host(zt).view(np.uint32), (y << n) | (x >> (32 - n)))


def test_inline_asm_packed(torch):
    rs = np.random.RandomState(17)
    x = _rand(rs, (512,), "uint8")
    xt, yt = _dev(torch, x), _dev(torch, _rand(rs, (512,), "uint8"))
    packed_kernel[(1,)](xt, yt, BLOCK=512)
    np.testing.assert_equal(_host(yt), x << 3)


def test_inline_asm_with_pointers(torch):
    rs = np.random.RandomState(17)
    x = _rand(rs, (512,), "uint8")
    xt, yt = _dev(torch, x), _dev(torch, _rand(rs, (512,), "uint8"))
    pointers_kernel[(1,)](xt, yt, BLOCK=512)
    np.testing.assert_equal(_host(yt), x << 3)


def test_inline_asm_multiple_outputs(torch):
    rs = np.random.RandomState(17)
    a, b, c, d = (_rand(rs, (512,), "uint32") for _ in range(4))
    at, bt, ct, dt = (_dev(torch, v.view(np.int32)) for v in (a, b, c, d))
    multi_kernel[(1,)](at, bt, ct, dt, BLOCK=512)
    np.testing.assert_equal(_host(ct).view(np.uint32), a - b)
    np.testing.assert_equal(_host(dt).view(np.uint32), b - a)


def test_inline_asm_packed_multiple_outputs(torch):
    rs = np.random.RandomState(17)
    a = _rand(rs, (512,), "uint8")
    b = _rand(rs, (512,), "float32")
    at, bt = _dev(torch, a), _dev(torch, b)
    ct, dt = _dev(torch, _rand(rs, (512,), "int32")), _dev(torch, _rand(rs, (512,), "float32"))
    packed_multi_kernel[(1,)](at, bt, ct, dt, BLOCK=512)
    np.testing.assert_equal(_host(ct), a.astype(np.int32))
    np.testing.assert_equal(_host(dt), np.maximum(a.astype(np.float32), b))


def test_inline_asm_scalars(torch):
    x = np.arange(128, dtype=np.int32)
    xt, yt = _dev(torch, x), _dev(torch, np.zeros(129, np.int32))
    scalar_kernel[(3,)](xt, yt, BLOCK=128)   # every program writes x * 5 + pid; the last wins
    got = _host(yt)
    assert set((got[:128] - x * 5).tolist()) <= {0, 1, 2}


@pytest.mark.parametrize("pure", [True, False])
def test_inline_asm_purity(torch, pure):
    x = np.arange(128, dtype=np.int32) * 7919
    xt, yt = _dev(torch, x), _dev(torch, np.zeros(128, np.int32))
    purity_kernel[(1,)](xt, yt, PURE=pure, BLOCK=128)
    rev = np.array([int(f"{v & 0xffffffff:032b}"[::-1], 2) for v in x.tolist()], np.uint64)
    np.testing.assert_equal(_host(yt).view(np.uint32), ((rev * 2) & 0xffffffff).astype(np.uint32))
