"""The kernel library on the GPU, side by side: the fused LLTM cell
(kernels/lltm.py: forward + backward) and the Mamba-2 chunked scan
(kernels/mamba2_ssd.py), each kernel source compiled by ctriton and by
Triton (the same file, its `import ctriton as triton` rebound), against
torch: autograd through the same LLTM cell, and a chunked einsum form of
the scan. Every result is checked against torch first; medians of
do_bench; ratios are ctriton's speed over the other's.

    python3 bench/lib_gpu.py [--no-triton]
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ctriton  # noqa: E402
from tc_gpu import load_file  # noqa: E402

try:
    import triton  # noqa: F401
except ImportError:
    triton = None

KERNELS = os.path.join(HERE, "..", "kernels")


def impls(name):
    """{impl: module} of kernels/<name>.py for ctriton and, where it is
    installed (and not --no-triton), Triton."""
    out = {"ctriton": load_file(os.path.join(KERNELS, name + ".py"), "ctriton", name)}
    if triton is not None and "--no-triton" not in sys.argv:
        out["triton"] = load_file(os.path.join(KERNELS, name + ".py"), "triton", name)
    return out


def line(name, times, ok):
    cells = " | ".join(f"{k} {t * 1e3:9.1f} us" for k, t in times.items())
    r = [f"vs {k} {t / times['ctriton']:.2f}x" for k, t in times.items() if k != "ctriton"]
    bad = [k for k, v in ok.items() if not v]
    print(f"{name:40s} {cells} | {' | '.join(r)}{'  WRONG: ' + ','.join(bad) if bad else ''}",
          flush=True)


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
    mods = impls("lltm")
    for (B, S, I) in ((256, 512, 256), (4096, 1024, 1024)):
        x = torch.randn(B, I, device="cuda")
        W = torch.randn(3 * S, S + I, device="cuda") / (S + I) ** 0.5
        b = torch.randn(3 * S, device="cuda")
        h = torch.randn(B, S, device="cuda")
        c = torch.randn(B, S, device="cuda")
        gh, gc = torch.randn(B, S, device="cuda"), torch.randn(B, S, device="cuda")
        for prec in ("ieee", "tf32"):
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
            leaves = [t.clone().requires_grad_() for t in (x, W, b, h, c)]

            def ref():
                nh, nc = lltm_torch(*leaves)
                return torch.autograd.grad([nh, nc], leaves, [gh, gc])

            want = ref()
            fns, ok = {}, {}
            for impl, m in mods.items():
                def ours(m=m):
                    out = m.lltm_forward(x, W, b, h, c, input_precision=prec)
                    return m.lltm_backward(gh, gc, out[1], out[2], out[3], out[4], x, h, W,
                                           input_precision=prec)
                got = ours()
                # ours: d_old_h, d_input, d_weights, d_bias, d_old_cell; torch: x, W, b, h, c
                pairs = [(got[0], want[3]), (got[1], want[0]), (got[2], want[1]),
                         (got[3], want[2]), (got[4], want[4])]
                err = max(((g - w).norm() / w.norm()).item() for g, w in pairs)
                ok[impl] = err < (1e-4 if prec == "ieee" else 2e-2)
                fns[impl] = ours
            fns["torch"] = ref
            times = {k: bench(f) for k, f in fns.items()}
            line(f"LLTM fwd+bwd B{B} S{S} I{I} {prec}", times, ok)
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
    mods = impls("mamba2_ssd")
    for (batch, L, H, P, G, N, chunk) in ((4, 2048, 16, 64, 1, 64, 64), (2, 4096, 32, 64, 1, 128, 64)):
        x = torch.randn(batch, L, H, P, device="cuda")
        dt = torch.nn.functional.softplus(torch.randn(batch, L, H, device="cuda") - 2.0)
        A = -torch.rand(H, device="cuda") * 2.0 - 0.5
        B = torch.randn(batch, L, G, N, device="cuda") / N ** 0.5
        C = torch.randn(batch, L, G, N, device="cuda") / N ** 0.5
        ref = lambda: ssd_torch_chunked(x, dt, A, B, C, chunk)  # noqa: E731
        yr = ref()
        fns, ok = {}, {}
        for impl, m in mods.items():
            fns[impl] = lambda m=m: m.mamba2_ssd_forward(x, dt, A, B, C, chunk_size=chunk)
            ok[impl] = ((fns[impl]() - yr).norm() / yr.norm()).item() < 1e-3
        fns["torch"] = ref
        times = {k: bench(f) for k, f in fns.items()}
        line(f"Mamba-2 SSD b{batch} L{L} H{H} P{P} N{N}", times, ok)


if __name__ == "__main__":
    print("device", torch.cuda.get_device_name(), flush=True)
    lltm_cases()
    ssd_cases()
