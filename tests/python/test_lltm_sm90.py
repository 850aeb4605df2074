"""The LLTM kernels of kernels/lltm.py compiled for sm_90a without a GPU, at
the tiles the wrappers pick on Hopper: the fused forward runs its three
gate GEMMs on warpgroup MMA with both operands copied asynchronously (the
row block of X staged once for the three), the three MMAs issued before
one wait; the backward GEMMs read K-contiguous operands through cp.async;
ptxas spills nothing in the loops."""
import os
import re
import sys

import pytest

from ptx_util import ptx_loops
from test_ptxas import PTXAS, _ptxas_serializes

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels"))

pytestmark = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


def _compile(name, **upd):
    """Case `name` of bench/compile_time.py for sm_90a, constexprs and
    num_warps / num_stages updated (bench/spills_sm90.py's build)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compile_time as ct
    import spills_sm90
    opts = {k: upd.pop(k) for k in ("num_warps", "num_stages") if k in upd}
    return spills_sm90.build(ct.cases()[name], upd, **opts)


def _wgmma_loops(ptx):
    return [lp for lp in ptx_loops(ptx) if "wgmma.mma_async" in lp]


def test_lltm_forward_tf32_three_mmas_in_flight():
    from lltm import _fwd_config
    bb, bs, bk, nw, ns = _fwd_config(132, "tf32", 4096, 1024)
    k = _compile("lib.lltm_fwd", BLOCK_B=bb, BLOCK_S=bs, BLOCK_K=bk, num_warps=nw, num_stages=ns)
    ptx = k.asm["ptx"]
    loops = _wgmma_loops(ptx)
    assert len(loops) == 2, "one K loop over old_h, one over input"
    for lp in loops:
        assert "ld.global" not in lp, "every tile through cp.async"
        assert lp.count("cp.async.cg.shared.global") > 0
        # the three gates' MMAs go out back to back: one wait in the loop,
        # leaving the newest group running
        assert lp.count("wgmma.commit_group") == 3
        assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+);", lp) == ["1"]
    assert not _ptxas_serializes(ptx)
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


def test_lltm_forward_ieee_no_spills():
    from lltm import _fwd_config
    bb, bs, bk, nw, ns = _fwd_config(132, "ieee", 4096, 1024)
    k = _compile("lib.lltm_fwd", BLOCK_B=bb, BLOCK_S=bs, BLOCK_K=bk, PREC="ieee", num_warps=nw,
                 num_stages=ns)
    assert "fma.rn.f32" in k.asm["ptx"] and k.n_spills == 0


@pytest.mark.parametrize("prec,M,N", [("tf32", 4096, 1024), ("tf32", 3072, 2048),
                                      ("ieee", 4096, 1024)])
def test_lltm_backward_gemm(prec, M, N):
    from lltm import _mm_config
    bm, bn, bk, nw, ns = _mm_config(132, prec, M, N)
    k = _compile("lib.matmul_f32", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PREC=prec, num_warps=nw,
                 num_stages=ns)
    ptx = k.asm["ptx"]
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    if prec == "tf32":
        (lp,) = _wgmma_loops(ptx)
        assert "ld.global" not in lp and "cp.async.cg.shared.global" in lp
        assert not _ptxas_serializes(ptx)
    else:
        # the FMA dot: its K unrolled in the tile loop (an accumulator of
        # up to 64 registers) or a loop of four K steps a trip; each row of
        # A one vector load (it was one scalar load per row and step), B's
        # row segments vectors too
        loops = [lp for lp in ptx_loops(ptx) if "fma.rn.f32" in lp]
        assert loops
        fma = [min(loops, key=len)]
        for lp in fma:
            lds = len(re.findall(r"ld\.shared", lp))
            assert "ld.shared.v4" in lp and lp.count("fma.rn.f32") >= 6 * lds, (lds, lp.count("fma.rn.f32"))


@pytest.mark.parametrize("name", ["lib.lltm_bwd", "lib.lltm_bias_reduce", "lib.transpose"])
def test_lltm_elementwise_kernels(name):
    k = _compile(name)
    assert k.n_spills == 0
    assert "st.global.v4" in k.asm["ptx"] or name == "lib.lltm_bias_reduce"
