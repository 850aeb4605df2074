"""Registers and spills, as ptxas reports them for sm_90a, of the
tensor-core configurations the Hopper work is held to (the tutorial
matmul's masked-K kernel and kernels/attention.py's forward kernels) and of
the kernel library's GEMM-shaped kernels at the tiles their wrappers pick
on an H200. Needs no GPU (ptxas only):

    PYTHONPATH=python python3 bench/spills_sm90.py

Prints a markdown table: kernel, configuration, registers, spilled bytes,
shared memory, and whether ptxas serialized the warpgroup MMAs (a wait
after each one, its C7514-C7520 advisories).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "kernels"))

import compile_time as ct  # noqa: E402
import ctriton  # noqa: E402
from ctriton.backends.compiler import GPUTarget  # noqa: E402
from ctriton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
# kernels/attention.py's attn_fwd_tma: (HEAD_DIM, causal, BLOCK_M, BLOCK_N,
# warps, stages, warp-specialized), bench/tc_gpu.py's configurations
TMA_CONFIGS = [(64, False, 128, 64, 4, 2, True), (64, False, 128, 64, 4, 3, True),
               (128, False, 128, 128, 4, 2, True), (128, False, 128, 64, 4, 2, True),
               (64, True, 128, 64, 4, 3, False), (128, True, 128, 64, 8, 2, False),
               (128, True, 128, 64, 8, 3, False)]


def build(case, cx=None, **opts):
    fn, sig, cx0, attrs, opts0 = case
    o = dict(opts0, **opts)
    return ctriton.compile(ct.source((fn, sig, dict(cx0, **(cx or {})), attrs, o)), target=TARGET,
                           options=o)


def rows():
    cs = ct.cases()
    # the tutorial matmul (masked K loads): fp16, the four configurations
    for bm, bn, bk, nw, ns in ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
                               (64, 128, 64, 4, 4)):
        # contiguous A, B, C: their unit strides are specialized to 1, as at a launch
        k = build(cs["matmul"], dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, stride_ak=1, stride_bn=1,
                                     stride_cn=1), num_warps=nw, num_stages=ns)
        yield "matmul fp16 (tutorial 03)", f"{bm}x{bn}x{bk} / {nw} / {ns}", k
    # attention forward: 128x64 tiles, D64 with 4 warps, D128 with 8; STAGE 1 full, 3 causal
    for D, nw in ((64, 4), (128, 8)):
        for stage, mode in ((1, "full"), (3, "causal")):
            k = build(cs["lib.attn_fwd"], dict(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, STAGE=stage),
                      num_warps=nw, num_stages=2)
            yield f"attention fwd D{D} (kernels/attention.py)", f"128x64 / {nw} / 2, {mode}", k
    # its descriptor kernel at bench/tc_gpu.py's configurations (ws: warp-specialized)
    import attention
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16",
           "Z": "i32", "H": "i32"}
    for D, causal, bm, bn, nw, ns, ws in TMA_CONFIGS:
        cx = dict(N_CTX=4096, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1,
                  WARP_SPECIALIZE=ws)
        src = ASTSource(attention.attn_fwd_tma, dict(sig, **{n: "constexpr" for n in cx}), cx,
                        {(i,): {"divisibility": 16} for i in (0, 1, 2, 4, 5)})
        k = ctriton.compile(src, target=TARGET, options=dict(num_warps=nw, num_stages=ns))
        yield (f"attention fwd tma D{D} (kernels/attention.py)",
               f"{bm}x{bn} / {nw} / {ns}, {'causal' if causal else 'full'}{', ws' if ws else ''}", k)
    from lltm import _fwd_config, _mm_config
    for prec in ("tf32", "ieee"):
        bb, bs, bk, nw, ns = _fwd_config(132, prec, 4096, 1024)
        k = build(cs["lib.lltm_fwd"], dict(BLOCK_B=bb, BLOCK_S=bs, BLOCK_K=bk, PREC=prec),
                  num_warps=nw, num_stages=ns)
        yield f"LLTM forward {prec}", f"{bb}x{bs}x{bk} / {nw} / {ns}", k
        for M, N in ((4096, 1024), (3072, 2048)):
            bm, bn, bk, nw, ns = _mm_config(132, prec, M, N)
            k = build(cs["lib.matmul_f32"], dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PREC=prec),
                      num_warps=nw, num_stages=ns)
            yield f"LLTM backward GEMM {prec}", f"{bm}x{bn}x{bk} / {nw} / {ns} ({M}x{N})", k
    ssd = ct.kernels_module("mamba2_ssd")
    for prec in ("ieee", "tf32"):
        (sp, sn, sw), (cp, cn, cw) = ssd._config(64, 64, 128, prec)
        k = build(cs["lib.ssd_chunk_state"], dict(CHUNK=64, BLOCK_P=sp, BLOCK_N=sn, PREC=prec),
                  num_warps=sw)
        yield f"Mamba-2 chunk state {prec}", f"chunk 64, {sp}x{sn} / {sw}", k
        k = build(cs["lib.ssd_chunk_cb"], dict(CHUNK=64, BLOCK_N=cn, PREC=prec), num_warps=cw)
        yield f"Mamba-2 chunk C B^T {prec}", f"chunk 64, slices of {cn} / {cw}", k
        for shared in (True, False):
            k = build(cs["lib.ssd_chunk_scan"], dict(CHUNK=64, BLOCK_P=cp, BLOCK_N=cn, PREC=prec,
                                                     SHARED_CB=shared), num_warps=cw)
            yield (f"Mamba-2 chunk scan {prec}", f"chunk 64, {cp}x{cn} / {cw}, C B^T "
                   + ("read" if shared else "made here"), k)


def main():
    print("| kernel | config (tile / warps / stages) | registers | spills (bytes) | shared (bytes) "
          "| MMAs serialized |")
    print("|---|---|---|---|---|---|")
    for name, cfg, k in rows():
        print(f"| {name} | {cfg} | {k.n_regs} | {k.n_spills} | {k.metadata.shared} "
              f"| {'yes' if k.metadata.wgmma_advisory else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
