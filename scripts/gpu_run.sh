#!/usr/bin/env bash
# Building here and running on a GPU machine (one with an NVIDIA driver,
# torch and Triton, but no LLVM 22 or Bazel), in two halves.
#
#   bash scripts/gpu_run.sh stage     (here) builds the ctriton wheel (LLVM
#                                     inside) into gpu_carry/ (git-ignored),
#                                     then prints the command to run there.
#   bash scripts/gpu_run.sh stage debs  the older way: the development
#                                     extension plus the libllvm22 and
#                                     libz3-4 .deb files.
#   bash scripts/gpu_run.sh remote    (there, from the repository root)
#                                     with a wheel in gpu_carry/: pip installs
#                                     it into /tmp/ct (--target, no network)
#                                     and runs, from a copy of tests/,
#                                     tutorials/, bench/ and kernels/ without
#                                     python/ (so only the wheel is used),
#                                     pytest -m gpu, the tutorials and
#                                     bench/run_gpu.py; without a wheel it
#                                     unpacks the debs, sets LD_LIBRARY_PATH
#                                     and runs the same from the tree.
#                                     `remote tests` runs only pytest -m gpu;
#                                     `exec CMD ARGS...` runs one command in
#                                     that set-up, from that folder.
#
# Copy the working tree with gpu_carry/ to the GPU machine and run
# `bash scripts/gpu_run.sh remote` there; result files (test log, tutorial
# tables, bench output) land in $CTRITON_GPU_OUT (default /tmp/ctriton-out).
set -euo pipefail
cd "$(dirname "$0")/.."
CARRY=gpu_carry

exclude_carry() {
  grep -qx "/$CARRY/" .gitignore 2>/dev/null || grep -qx "$CARRY/" .git/info/exclude 2>/dev/null \
    || echo "$CARRY/" >> "$(git rev-parse --git-path info/exclude)"
}

stage() {
  mkdir -p "$CARRY"
  rm -rf "$CARRY/python" "$CARRY"/ctriton-*.whl
  python3 -c 'import sys; sys.path.insert(0, "build_backend"); import ctriton_build
print(ctriton_build.build_wheel(sys.argv[1]))' "$CARRY" >/dev/null
  exclude_carry
  du -sh "$CARRY" | awk '{print "gpu_run: staged " $1 " in '"$CARRY"'/ (limit 64M)"}'
  echo "gpu_run: on the GPU machine run: bash scripts/gpu_run.sh remote"
}

stage_debs() {
  bash scripts/setup.sh
  rm -rf "$CARRY/python" "$CARRY"/ctriton-*.whl
  mkdir -p "$CARRY/debs"
  cp python/ctriton/_C.abi3.so "$CARRY/"
  (cd "$CARRY/debs" && for p in libllvm22 libz3-4; do
     ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null
   done)
  exclude_carry
  du -sh "$CARRY" | awk '{print "gpu_run: staged " $1 " in '"$CARRY"'/ (limit 64M)"}'
  echo "gpu_run: on the GPU machine run: bash scripts/gpu_run.sh remote"
}

# Runs pytest -m gpu, the tutorials and the benchmark from the current folder.
run_all() {
  local out=$1 mode=$2 rc=0
  python3 -m ctriton info 2>&1 | tee "$out/info.txt" || rc=1
  python3 -m pytest -q -m gpu tests/python 2>&1 | tee "$out/pytest-gpu.txt" || rc=1
  [ "$mode" = tests ] && return $rc
  for t in tutorials/01-vector-add.py tutorials/02-fused-softmax.py; do
    echo "== $t"
    python3 "$t" 2>&1 | tee "$out/$(basename "$t" .py).txt" || rc=1
  done
  echo "== bench/run_gpu.py"
  python3 bench/run_gpu.py 2>&1 | tee "$out/bench.txt" || rc=1
  return $rc
}

# Sets up ctriton there and prints the folder to run from: with a wheel in
# gpu_carry/, pip installs it into /tmp/ct (--target, no network) and the
# folder is a copy of tests/, tutorials/, bench/ and kernels/ without python/
# (so only the wheel is used); without one, it unpacks the debs, sets
# LD_LIBRARY_PATH and the folder is the tree.
remote_env() {
  export CTRITON_CACHE_DIR=/tmp/ctriton-cache
  local whl
  whl=$(ls "$CARRY"/ctriton-*.whl 2>/dev/null | tail -n 1 || true)
  if [ -n "$whl" ]; then
    local ct=/tmp/ct run=/tmp/ctriton-run
    python3 -m pip install -q --no-index --no-deps --upgrade --target "$ct" "$whl" >&2 \
      || { rm -rf "$ct"; python3 -m zipfile -e "$whl" "$ct"; }  # no pip: a wheel is a zip
    rm -rf "$run" && mkdir -p "$run"
    cp -r tests tutorials bench kernels ir "$run/"  # ir/: ops.def, read by tests/corpus
    export PYTHONPATH="$ct:$run/tests/python:$run${PYTHONPATH:+:$PYTHONPATH}"
    RUN_DIR=$run
    return
  fi
  local l22=/tmp/ctriton-l22
  mkdir -p "$l22"
  for d in "$CARRY"/debs/*.deb; do dpkg -x "$d" "$l22"; done
  export LD_LIBRARY_PATH="$l22/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cp "$CARRY/_C.abi3.so" python/ctriton/
  export PYTHONPATH="$PWD/python:$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}"
  RUN_DIR=$PWD
}

remote() {
  local out=${CTRITON_GPU_OUT:-/tmp/ctriton-out}
  mkdir -p "$out"
  export CTRITON_BENCH_DIR="$out"
  remote_env
  (cd "$RUN_DIR" && run_all "$out" "${1:-}")
}

case "${1:-stage}" in
  stage) if [ "${2:-}" = debs ]; then stage_debs; else stage; fi ;;
  remote) remote "${2:-}" ;;
  exec) shift; remote_env; cd "$RUN_DIR" && "$@" ;;
  *) echo "usage: $0 stage|remote" >&2; exit 2 ;;
esac
