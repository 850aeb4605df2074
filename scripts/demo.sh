#!/usr/bin/env bash
# Sets up the machine, builds ctriton and runs tutorial 01 (vector add): on
# the GPU when a CUDA driver and device are present, else on the CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CTRITON_BENCH_DIR="${TMPDIR:-/tmp}" python3 tutorials/01-vector-add.py
