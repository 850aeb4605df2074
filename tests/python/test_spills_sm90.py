"""Zero spills and no serialized warpgroup MMAs (ptxas, sm_90a) for every configuration of
bench/spills_sm90.py: the tutorial matmul at the four tile shapes of the
Hopper work, kernels/attention.py's forward at D64 / D128, full and causal,
and the kernel library's GEMM-shaped kernels at the tiles their wrappers
pick on an H200. The table in bench/results/tc-h200.md is that script's
output. Where a disassembler is found, also that ptxas kept every
warpgroup MMA: no `HGMMA ... gdesc[URZ]` placeholder, which is what ptxas
left where it dropped an unrolled iteration's MMAs
(tests/python/test_dot_f16_out_loop.py)."""
import os
import sys

import pytest

from test_ptxas import PTXAS

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_no_spills_sm90():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import spills_sm90
    rows = list(spills_sm90.rows())
    assert len(rows) >= 18
    spilled = [(name, cfg, k.n_spills, k.n_regs) for name, cfg, k in rows if k.n_spills]
    assert not spilled, spilled
    serialized = [(name, cfg) for name, cfg, k in rows if k.metadata.wgmma_advisory]
    assert not serialized, serialized
    assert all(k.n_regs > 0 for _, _, k in rows)
    from ctriton import _toolkit
    if _toolkit.disassembler_path() is not None:
        dropped = [(name, cfg) for name, cfg, k in rows if "gdesc[URZ]" in k.asm["sass"]]
        assert not dropped, dropped
