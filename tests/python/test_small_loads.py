"""Loads of fewer elements than the block has threads (CTRITON_SMALL_LOADS=1,
opt-in): done in the layout their users want. Checked on kernels/attention.py's backward pass compiled
for sm_90a (no GPU or torch needed); its GPU test (test_attention_bwd.py)
runs it on and off."""
import os
import sys

import pytest

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))


def _compile_bwd_sm90(D, warps, stages):
    import ctriton
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    from kernels.attention import attn_bwd
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
           "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32", "stride_h": "i32",
           "stride_tok": "i32", "stride_d": "constexpr", "H": "i32", "N_CTX": "i32"}
    cx = dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=D)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32")}
    return ctriton.compile(ASTSource(attn_bwd, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": warps, "num_stages": stages})


def _have_ptxas():
    import shutil
    return bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
                shutil.which("ptxas"))


def test_attn_bwd_sm90_small_loads(monkeypatch):
    """CTRITON_SMALL_LOADS=1 (opt-in): the rows' m and delta (16 and 32
    floats, fewer than the threads) are loaded in the layout of the dot
    result they meet (a slice of the accumulator's), not in the coalesced
    one and then converted through shared memory behind a barrier each
    iteration. D64 with 4 warps and D128 with 8: no spills, 8 and 14 fewer
    bar.sync, no more registers."""
    import re
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    def shape(k):
        t = k.asm["ct.ttgir"]
        return (len(re.findall(r"convert_layout [^\n]*: block<\d+xf32, #slice", t)),
                len(re.findall(r"= load [^\n]*: block<\d+xf32, #slice", t)), k.asm["ptx"].count("bar.sync"))
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "0")  # m and delta loads, not read from slots
    for D, warps, stages in ((64, 4, 5), (128, 8, 3)):
        monkeypatch.setenv("CTRITON_SMALL_LOADS", "0")
        k0 = _compile_bwd_sm90(D, warps, stages)
        conv0, sl0, bar0 = shape(k0)
        monkeypatch.setenv("CTRITON_SMALL_LOADS", "1")
        k = _compile_bwd_sm90(D, warps, stages)
        conv1, sl1, bar1 = shape(k)
        assert sl0 == 0 and sl1 >= 4, (D, sl0, sl1)
        assert conv1 <= conv0 - 4, (D, conv0, conv1)
        assert bar1 <= bar0 - 8, (D, bar0, bar1)
        assert k.n_spills == 0 and k.n_regs <= k0.n_regs, (D, k.n_spills, k.n_regs, k0.n_regs)
