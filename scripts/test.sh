#!/usr/bin/env bash
# Sets up the machine, then runs every test:
#   1. the C tests (bazel test //...),
#   2. the same C tests under ASan + UBSan (--config=asan),
#   3. the Python tests (pytest tests/python), if any, against the extension
#      that setup.sh has just built and copied into python/ctriton/.
# Ends with one line "N passed, N failed"; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Runs bazel test with the given extra flags and adds its results to the totals.
bazel_tests() {
  local label=$1; shift
  echo "== bazel test $* //..."
  bazel test --keep_going --color=no --curses=no "$@" //... 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local p f
  p=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED( in|$)' "$log")
  f=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)' "$log")
  # rc 4: build fine, no test targets. Any other failure without a failing
  # test line (e.g. a compile error) counts as one failure.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ]; then f=1; fi
  echo "== $label: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
}

bazel_tests "C tests"
bazel_tests "C tests (asan)" --config=asan

if [ -n "$(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null | head -n 1)" ]; then
  echo "== python3 -m pytest -q tests/python"
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m pytest -q tests/python 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)|no tests ran' "$log" | tail -n 1)
  count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
  p=$(count passed)
  f=$(( $(count failed) + $(count 'errors?') ))
  # rc 5: no tests collected. Any other failure not visible in the counts
  # (e.g. a crash or a collection error) counts as one failure.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$f" -eq 0 ]; then f=1; fi
  echo "== Python tests: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
