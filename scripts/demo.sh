#!/usr/bin/env bash
# Sets up the machine, builds ctriton and runs tutorial 01 (vector add) when
# the frontend and a backend are built in; the IR demo otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if python3 -c "import ctriton, sys; C = ctriton._C; sys.exit(0 if C.has_stage('frontend') and (C.has_stage('cpu') or C.has_stage('cuda')) else 1)" 2>/dev/null; then
  CTRITON_BENCH_DIR="${TMPDIR:-/tmp}" python3 tutorials/01-vector-add.py
else
  bazel run --color=no --noshow_progress --show_result=0 --ui_event_filters=-info //ir:ir_demo
fi
