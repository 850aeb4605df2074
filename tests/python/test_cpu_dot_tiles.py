"""CPU: f32 dot register tiles (8 rows by 16 or 32 columns)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.load(c_ptr + rm * N + rn)
    tl.store(d_ptr + rm * N + rn, tl.dot(a, b, acc=c))


# 8-row tiles (several per block), 16 or 32 columns per tile; fewer rows
# than 8 only come from the IR (tests/backend/cpu_test.c)
@pytest.mark.parametrize("M,K,N", [(16, 16, 16), (64, 32, 64), (32, 64, 16), (128, 16, 32)])
def test_dot_tile_rows(M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c, d, M, K, N)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)
