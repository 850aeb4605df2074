"""The kernel library (kernels/) on the GPU, against torch.

Each test launches a kernel exactly as a Triton user would and compares with
torch's own result. Marked `gpu`: skipped where no CUDA device is active.
"""
import math
import os
import sys

import pytest

import ctriton as triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch as t
    t.manual_seed(0)
    return t


@pytest.mark.parametrize("n", [1, 1000, 98432, 1 << 20])
def test_vector_add(torch, n):
    from vector_add import add_kernel
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    add_kernel[lambda m: (triton.cdiv(n, m["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1823, 781), (4, 4096), (128, 64), (7, 1)])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_softmax(torch, shape, num_warps):
    from softmax import softmax_kernel
    x = torch.randn(*shape, device="cuda")
    y = torch.empty_like(x)
    rows, cols = shape
    block = triton.next_power_of_2(cols)
    softmax_kernel[(min(rows, 264),)](y, x, x.stride(0), y.stride(0), rows, cols,
                                      BLOCK_SIZE=block, num_stages=2, num_warps=num_warps)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (256, 192, 160), (100, 70, 50)])
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_matmul(torch, m, n, k, activation):
    from matmul import matmul_kernel
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    bm, bn, bk = 64, 64, 32
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION=activation)
    ref = a.float() @ b.float()
    if activation:
        ref = torch.where(ref >= 0, ref, 0.01 * ref)
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=2e-2)


def test_dropout(torch):
    from dropout import seeded_dropout_kernel
    n, p = 100_000, 0.3
    x = torch.randn(n, device="cuda")
    out1 = torch.empty_like(x)
    out2 = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    seeded_dropout_kernel[grid](x, out1, n, p, 123, BLOCK_SIZE=1024)
    seeded_dropout_kernel[grid](x, out2, n, p, 123, BLOCK_SIZE=1024)
    torch.testing.assert_close(out1, out2, rtol=0, atol=0)  # same seed, same mask
    kept = out1 != 0
    frac = kept.float().mean().item()
    assert abs(frac - (1 - p)) < 0.01, frac
    torch.testing.assert_close(out1[kept], x[kept] / (1 - p))


def test_layernorm_fwd_bwd(torch):
    from layernorm import layer_norm_bwd_dwdb, layer_norm_bwd_dx_fused, layer_norm_fwd
    M, N, eps = 512, 1000, 1e-5
    x = torch.randn(M, N, device="cuda", requires_grad=True)
    w = torch.rand(N, device="cuda", requires_grad=True)
    b = torch.rand(N, device="cuda", requires_grad=True)
    dy = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    mean = torch.empty(M, device="cuda")
    rstd = torch.empty(M, device="cuda")
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=1024)
    ref = torch.nn.functional.layer_norm(x, (N,), w, b, eps)
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)

    ref.backward(dy)
    group = 64
    locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
    pdw = torch.zeros(group, N, device="cuda")
    pdb = torch.zeros(group, N, device="cuda")
    dx = torch.empty_like(x)
    layer_norm_bwd_dx_fused[(M,)](dx, dy, pdw, pdb, x, w, mean, rstd, locks, x.stride(0), N,
                                  GROUP_SIZE_M=group, BLOCK_SIZE_N=1024)
    dw = torch.empty(N, device="cuda")
    db = torch.empty(N, device="cuda")
    layer_norm_bwd_dwdb[(triton.cdiv(N, 128),)](pdw, pdb, dw, db, group, N,
                                                BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
    torch.testing.assert_close(dx, x.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(dw, w.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(db, b.grad, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_fwd(torch, causal):
    from attention import attn_fwd
    Z, H, N_CTX, D = 1, 2, 128, 64
    q = torch.randn(Z, H, N_CTX, D, device="cuda", dtype=torch.float16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    sm_scale = 1 / math.sqrt(D)
    o = torch.empty_like(q)
    M = torch.empty(Z, H, N_CTX, device="cuda")
    BM, BN = 64, 32
    attn_fwd[(N_CTX // BM, Z * H, 1)](q, k, v, sm_scale, M, o,
                                      *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                                      Z, H, N_CTX=N_CTX, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                                      STAGE=3 if causal else 1)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=causal, scale=sm_scale)
    torch.testing.assert_close(o.float(), ref, rtol=2e-2, atol=2e-2)


def test_first_launch_activates_gpu_driver(tmp_path):
    # A fresh process whose very first ctriton call is a launch with CUDA
    # tensors: the default driver (the GPU) must be active by then.
    import subprocess
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels")
    code = (f"import sys; sys.path.insert(0, {kernels!r}); import torch; "
            "from vector_add import add_kernel; "
            "x = torch.ones(100, device='cuda'); y = torch.empty_like(x); "
            "add_kernel[(1,)](x, x, y, 100, BLOCK_SIZE=128); "
            "assert (y == 2).all().item(); print('ok')")
    env = dict(os.environ, CTRITON_CACHE_DIR=str(tmp_path))
    env.pop("CTRITON_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
