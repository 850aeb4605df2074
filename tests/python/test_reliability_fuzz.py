"""The kernel fuzzer (tests/fuzz/fuzz.py) over a fixed seed range: every
generated kernel compiles for sm_80/sm_90 and matches numpy on the CPU
backend, every mutated one fails with a Python exception at worst; no
crash, no hang, no internal error. The long run is documented in
tests/fuzz/README.md."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuzz"))

import fuzz  # noqa: E402

SEEDS = range(0, 200)


def test_fuzz_seed_range(tmp_path):
    lines = []
    res = fuzz.fuzz(SEEDS, jobs=1, timeout=120, out=str(tmp_path), log=lines.append)
    summary = {k: len(v) for k, v in sorted(res.items())}
    print("fuzz:", summary)
    failed = {k: v for k, v in res.items() if k in fuzz.FAILURES}
    assert not failed, "\n".join(lines) + f"\nkernels saved under {tmp_path}"
    assert sum(summary.values()) == len(SEEDS)
    assert summary.get("ok", 0) >= len(SEEDS) // 2  # most kernels run and match


# -- tensor-core kernels (tests/fuzz/fuzz_dot.py) ---------------------------------

import fuzz_dot  # noqa: E402

DOT_SEEDS = range(0, 40)


def _dot_fuzz(tmp_path, seeds, device, gpu_compile, jobs=2):
    lines = []
    res = fuzz.fuzz(seeds, jobs=jobs, timeout=240, out=str(tmp_path), gpu=gpu_compile, batch=10,
                    log=lines.append, script=fuzz_dot.__file__, saver=fuzz_dot.save,
                    extra=("--device", device))
    summary = {k: len(v) for k, v in sorted(res.items())}
    print("fuzz_dot:", summary)
    failed = {k: v for k, v in res.items() if k in fuzz.FAILURES}
    assert not failed, "\n".join(lines) + f"\nkernels saved under {tmp_path}"
    assert summary.get("ok", 0) == len(seeds)


def test_fuzz_dot_seed_range(tmp_path):
    """Matmuls, attention-like chains and descriptor matmuls of random
    dtypes, tiles, layouts, masks, loop forms and warps/stages: each
    compiles for sm_80 and sm_90 as its launch would specialize it (PTX
    through ptxas) and matches numpy, bit for bit where the inputs make
    the result exact, on the CPU backend."""
    _dot_fuzz(tmp_path, DOT_SEEDS, "cpu", True)


@pytest.mark.gpu
def test_fuzz_dot_gpu(tmp_path):
    """The same kernels run on the GPU against numpy (60 of them here, in
    about a minute; `scripts/gpu_round.sh fuzz` runs 600)."""
    _dot_fuzz(tmp_path, range(0, 60), "cuda", False, jobs=4)
