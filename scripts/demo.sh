#!/usr/bin/env bash
# Sets up the machine, builds ctriton and runs the IR demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bazel run --color=no --noshow_progress --show_result=0 --ui_event_filters=-info //ir:ir_demo
