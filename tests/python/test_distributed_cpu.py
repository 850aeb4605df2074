"""tests/distributed/allreduce_check.py (one process per GPU under
torch.distributed, NCCL) in its --cpu form: two ranks over gloo on the CPU
backend, each running a ctriton kernel whose outputs are all-reduced and
checked. The NCCL form needs GPUs (tests/README.md)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "distributed", "allreduce_check.py")


def test_allreduce_check_on_cpu(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    env = dict(os.environ, CTRITON_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "..", "python"),
                                         env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node=2", SCRIPT, "--cpu", "--numel", "70001"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "allreduce_check: OK (world 2, gloo, CPU backend, 70001 elements)" in p.stdout
