#!/usr/bin/env bash
# Building here and running on a GPU machine (one with an NVIDIA driver,
# torch and Triton, but no LLVM 22 or Bazel), in two halves.
#
#   bash scripts/gpu_run.sh stage     (here) builds ctriton and fills
#                                     gpu_carry/ (git-ignored): the built
#                                     extension and the libllvm22 and
#                                     libz3-4 .deb files; then prints the
#                                     command to run there.
#   bash scripts/gpu_run.sh remote    (there, from the repository root)
#                                     puts the extension into the package,
#                                     unpacks the debs, sets LD_LIBRARY_PATH
#                                     and PYTHONPATH, and runs pytest -m gpu,
#                                     the tutorials and bench/run_gpu.py.
#                                     `remote tests` runs only pytest -m gpu;
#                                     `exec CMD ARGS...` runs one command in
#                                     that environment.
#
# Copy the working tree with gpu_carry/ to the GPU machine and run
# `bash scripts/gpu_run.sh remote` there; result files (test log, tutorial
# tables, bench output) land in $CTRITON_GPU_OUT (default /tmp/ctriton-out).
set -euo pipefail
cd "$(dirname "$0")/.."
CARRY=gpu_carry

stage() {
  bash scripts/setup.sh
  rm -rf "$CARRY/python"
  mkdir -p "$CARRY/debs"
  cp python/ctriton/_C.abi3.so "$CARRY/"
  (cd "$CARRY/debs" && for p in libllvm22 libz3-4; do
     ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null
   done)
  grep -qx "/$CARRY/" .gitignore 2>/dev/null || grep -qx "$CARRY/" .git/info/exclude 2>/dev/null \
    || echo "$CARRY/" >> "$(git rev-parse --git-path info/exclude)"
  du -sh "$CARRY" | awk '{print "gpu_run: staged " $1 " in '"$CARRY"'/ (limit 64M)"}'
  echo "gpu_run: on the GPU machine run: bash scripts/gpu_run.sh remote"
}

remote_env() {
  local l22=/tmp/ctriton-l22
  mkdir -p "$l22"
  for d in "$CARRY"/debs/*.deb; do dpkg -x "$d" "$l22"; done
  export LD_LIBRARY_PATH="$l22/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cp "$CARRY/_C.abi3.so" python/ctriton/
  export PYTHONPATH="$PWD/python:$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}"
  export CTRITON_CACHE_DIR=/tmp/ctriton-cache
}

remote() {
  remote_env
  local out=${CTRITON_GPU_OUT:-/tmp/ctriton-out}
  mkdir -p "$out"
  export CTRITON_BENCH_DIR="$out"
  local rc=0
  python3 -c "import ctriton; print('ctriton driver:', ctriton.runtime.driver.active)" || rc=1
  python3 -m pytest -q -m gpu tests/python 2>&1 | tee "$out/pytest-gpu.txt" || rc=1
  [ "${1:-}" = tests ] && return $rc
  for t in tutorials/01-vector-add.py tutorials/02-fused-softmax.py; do
    echo "== $t"
    python3 "$t" 2>&1 | tee "$out/$(basename "$t" .py).txt" || rc=1
  done
  echo "== bench/run_gpu.py"
  python3 bench/run_gpu.py 2>&1 | tee "$out/bench.txt" || rc=1
  return $rc
}

case "${1:-stage}" in
  stage) stage ;;
  remote) remote "${2:-}" ;;
  exec) shift; remote_env; "$@" ;;
  *) echo "usage: $0 stage|remote" >&2; exit 2 ;;
esac
