"""ctriton.tools.mxfp (triton.tools.mxfp): the E2M1 and E8M0 microscaling
formats on torch tensors, against values worked out by hand."""
import math

import pytest

torch = pytest.importorskip("torch")

from ctriton.tools.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402


def test_e2m1_codes_decode():
    codes = torch.arange(16, dtype=torch.uint8)
    t = MXFP4Tensor(size=(16,))
    t.data = codes
    v = t.to(torch.float32).tolist()
    assert v[:8] == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert v[8:] == [-0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
    assert math.copysign(1.0, v[8]) == -1.0


@pytest.mark.parametrize("x,code", [
    (0.0, 0), (0.2, 0), (0.25, 0), (0.3, 1), (0.75, 2), (1.25, 2), (1.3, 3), (1.75, 4),
    (2.5, 4), (2.6, 5), (3.5, 6), (5.0, 6), (5.1, 7), (7.0, 7), (1e9, 7),
    (float("inf"), 7), (float("nan"), 7), (-0.75, 10), (-5.0, 14), (-0.0, 8)])
def test_e2m1_from_float_rounds_to_nearest_even(x, code):
    assert MXFP4Tensor(data=torch.tensor([x])).data.item() == code


def test_e2m1_round_trip_and_packing():
    t = MXFP4Tensor(size=(6, 7)).random()
    assert t.data.dtype == torch.uint8 and int(t.data.max()) < 16
    back = MXFP4Tensor(data=t.to(torch.float32))
    assert torch.equal(back.data, t.data)
    for dim in (0, 1):
        p = t.to_packed_tensor(dim)
        assert p.shape[dim] == (t.data.shape[dim] + 1) // 2
        u = t.unpack_packed_tensor(p, dim, t.data.shape)
        assert torch.equal(u, t.data)
    p = t.to_packed_tensor(1)
    assert int(p[0, 0]) == int(t.data[0, 0]) | (int(t.data[0, 1]) << 4)


def test_e8m0():
    s = MXScaleTensor(data=torch.tensor([1.0, 2.0, 3.0, 0.5, 0.0, -1.0, float("nan"), 3e38, 2.0 ** -140]))
    assert s.data.tolist() == [127, 128, 128, 126, 255, 255, 255, 254, 0]
    v = s.to(torch.float32)
    assert v[:4].tolist() == [1.0, 2.0, 2.0, 0.5] and math.isnan(v[4])
    assert v[8].item() == 2.0 ** -127
    r = MXScaleTensor(size=(1000,)).random(low=0.25, high=8.0)
    assert int(r.data.min()) >= 125 and int(r.data.max()) <= 130
    with pytest.raises(ValueError):
        MXScaleTensor(size=(2,)).random(low=8.0, high=1.0)
    with pytest.raises(ValueError):
        MXFP4Tensor()


def test_importable_as_triton_tools_mxfp():
    import subprocess
    import sys
    code = ("import ctriton; ctriton.use_as_triton(); from triton.tools.mxfp import MXFP4Tensor, MXScaleTensor; "
            "import ctriton.tools.mxfp as m; assert MXFP4Tensor is m.MXFP4Tensor; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
