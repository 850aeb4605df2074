"""The kernel library on the GPU against torch: the fused LLTM cell
(kernels/lltm.py: forward + backward) against torch autograd of the same
cell, and the Mamba-2 chunked scan (kernels/mamba2_ssd.py) against torch's
sequential recurrence and a chunked einsum form. Results checked first;
medians of do_bench; ratios are ctriton's speed over torch's.

    python3 bench/lib_gpu.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kernels"))

import ctriton  # noqa: E402
from lltm import lltm_backward, lltm_forward  # noqa: E402
from mamba2_ssd import mamba2_ssd_forward  # noqa: E402


def bench(fn):
    return ctriton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def lltm_torch(x, W, b, h, c):
    gates = torch.nn.functional.linear(torch.cat([h, x], 1), W, b)
    ig, og, cand = gates.chunk(3, 1)
    ig, og = torch.sigmoid(ig), torch.sigmoid(og)
    cand = torch.nn.functional.elu(cand)
    new_cell = c + cand * ig
    return torch.tanh(new_cell) * og, new_cell


def lltm_cases():
    for (B, S, I) in ((256, 512, 256), (4096, 1024, 1024)):
        x = torch.randn(B, I, device="cuda")
        W = torch.randn(3 * S, S + I, device="cuda") / (S + I) ** 0.5
        b = torch.randn(3 * S, device="cuda")
        h = torch.randn(B, S, device="cuda")
        c = torch.randn(B, S, device="cuda")
        gh, gc = torch.randn(B, S, device="cuda"), torch.randn(B, S, device="cuda")
        for prec in ("ieee", "tf32"):
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"

            def ours():
                out = lltm_forward(x, W, b, h, c, input_precision=prec)
                return lltm_backward(gh, gc, out[1], out[2], out[3], out[4], x, h, W, input_precision=prec)

            leaves = [t.clone().requires_grad_() for t in (x, W, b, h, c)]

            def ref():
                nh, nc = lltm_torch(*leaves)
                return torch.autograd.grad([nh, nc], leaves, [gh, gc])

            got, want = ours(), ref()
            # ours: d_old_h, d_input, d_weights, d_bias, d_old_cell; torch: x, W, b, h, c
            pairs = [(got[0], want[3]), (got[1], want[0]), (got[2], want[1]), (got[3], want[2]), (got[4], want[4])]
            err = max(((g - w).norm() / w.norm()).item() for g, w in pairs)
            ok = err < (1e-4 if prec == "ieee" else 2e-2)
            t_ours, t_ref = bench(ours), bench(ref)
            print(f"LLTM fwd+bwd B{B} S{S} I{I} {prec:4s}  ctriton {t_ours * 1e3:8.1f} us | torch autograd "
                  f"{t_ref * 1e3:8.1f} us | vs torch {t_ref / t_ours:.2f}x {'' if ok else f'WRONG {err:.1e}'}",
                  flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False


def ssd_torch_chunked(x, dt, A, B, C, chunk):
    """The same chunked algorithm in torch (einsum/cumsum), as model code
    writes it without a fused kernel."""
    batch, L, H, P = x.shape
    G = B.shape[2]
    grp = torch.arange(H, device=x.device) // (H // G)
    Bh, Ch = B[:, :, grp], C[:, :, grp]
    nc = L // chunk
    xc = (x * dt[..., None]).reshape(batch, nc, chunk, H, P)
    a = (dt * A).reshape(batch, nc, chunk, H)
    Bc, Cc = Bh.reshape(batch, nc, chunk, H, -1), Ch.reshape(batch, nc, chunk, H, -1)
    acum = torch.cumsum(a, 2)
    seg = acum[:, :, :, None, :] - acum[:, :, None, :, :]
    mask = torch.tril(torch.ones(chunk, chunk, device=x.device, dtype=torch.bool))
    Lmat = torch.exp(seg.masked_fill(~mask[None, None, :, :, None], float("-inf")))
    y_diag = torch.einsum("bclhn,bcshn,bclsh,bcshp->bclhp", Cc, Bc, Lmat, xc)
    decay_states = torch.exp(acum[:, :, -1:, :] - acum)
    states = torch.einsum("bclhn,bclh,bclhp->bchpn", Bc, decay_states, xc)
    out, state = [], torch.zeros_like(states[:, 0])
    for ci in range(nc):
        out.append(state)
        state = state * torch.exp(acum[:, ci, -1, :])[..., None, None] + states[:, ci]
    prev = torch.stack(out, 1)
    y_off = torch.einsum("bclhn,bchpn,bclh->bclhp", Cc, prev, torch.exp(acum))
    return (y_diag + y_off).reshape(batch, L, H, P)


def ssd_cases():
    for (batch, L, H, P, G, N, chunk) in ((4, 2048, 16, 64, 1, 64, 64), (2, 4096, 32, 64, 1, 128, 64)):
        x = torch.randn(batch, L, H, P, device="cuda")
        dt = torch.nn.functional.softplus(torch.randn(batch, L, H, device="cuda") - 2.0)
        A = -torch.rand(H, device="cuda") * 2.0 - 0.5
        B = torch.randn(batch, L, G, N, device="cuda") / N ** 0.5
        C = torch.randn(batch, L, G, N, device="cuda") / N ** 0.5
        ours = lambda: mamba2_ssd_forward(x, dt, A, B, C, chunk_size=chunk)  # noqa: E731
        ref = lambda: ssd_torch_chunked(x, dt, A, B, C, chunk)  # noqa: E731
        y, yr = ours(), ref()
        err = ((y - yr).norm() / yr.norm()).item()
        t_ours, t_ref = bench(ours), bench(ref)
        print(f"Mamba-2 SSD b{batch} L{L} H{H} P{P} N{N}  ctriton {t_ours * 1e3:8.1f} us | torch chunked "
              f"{t_ref * 1e3:8.1f} us | vs torch {t_ref / t_ours:.2f}x {'' if err < 1e-3 else f'WRONG {err:.1e}'}",
              flush=True)


if __name__ == "__main__":
    print("device", torch.cuda.get_device_name(), flush=True)
    lltm_cases()
    ssd_cases()
