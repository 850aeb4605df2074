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

from test_lag_slot import _compile as _compile_lag

PTXAS = "/usr/local/cuda/bin/ptxas"


def _compile(arch, cfg):
    # tutorial 03's loop (masked K loads, pointers advanced), fp16
    return _compile_lag(arch, *cfg)


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
