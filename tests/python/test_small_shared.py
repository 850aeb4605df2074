"""Pipelining on the parts with 99 KiB of shared memory a block (sm_86,
sm_89): the stage budget (analysis/prefetch.c stage_budget) keeps no 16 KiB
floor there, only its estimate of the loop's own scratch and 1 KiB for
alignment. With the floor, tutorial 03's 128x256x64 fp16 tiles (48 KiB a
stage) got no stage at all (loads, no cp.async) where Triton keeps two
buffers, and 128x128x64 got two slots where Triton keeps three. Checked on
kernels compiled for sm_86 and sm_89 (no GPU needed), assembled by ptxas."""
import os
import re
import subprocess
import tempfile

import pytest

import ctriton as triton
import ctriton.language as tl

PTXAS = "/usr/local/cuda/bin/ptxas"


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # tutorial 03's loop: masked K loads, pointers advanced
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _compile(arch, cfg):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    BM, BN, BK, warps, stages = cfg
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                                                "stride_cm")}
    return triton.compile(ASTSource(matmul, sig, dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})


# (config, slots the loop gets: Triton's buffer count for these, 2 and 3)
CASES = [((128, 256, 64, 8, 3), 2), ((128, 128, 64, 4, 4), 3)]


@pytest.mark.parametrize("arch", [86, 89])
@pytest.mark.parametrize("cfg,slots", CASES)
def test_slots_fit(arch, cfg, slots):
    k = _compile(arch, cfg)
    ttgir = k.asm["ct.ttgir"]
    stages = {int(x) for x in re.findall(r"\bstages = (\d+)", ttgir)}
    assert re.search(r"\basync_copy\b", ttgir) and stages == {slots}, stages
    BM, BN, BK = cfg[:3]
    assert slots * (BM + BN) * BK * 2 <= k.metadata.shared <= 101376
    ptx = k.asm["ptx"]
    assert "cp.async" in ptx
    if os.path.exists(PTXAS):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            open(p, "w").write(ptx)
            r = subprocess.run([PTXAS, "-v", f"-arch=sm_{arch}", p, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "0 bytes spill stores" in r.stderr, r.stderr


def test_sm80_keeps_its_floor():
    # the larger parts keep the 16 KiB floor: nothing changes there
    k = _compile(80, (128, 256, 64, 8, 3))
    stages = {int(x) for x in re.findall(r"\bstages = (\d+)", k.asm["ct.ttgir"])}
    assert stages == {2}, stages
