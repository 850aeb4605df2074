#!/usr/bin/env bash
# One measured round on a GPU machine, in parts that each end well inside
# ten minutes; run each through gpu_run.sh exec (from the repository root
# there: bash scripts/gpu_run.sh exec bash "$PWD/scripts/gpu_round.sh" PART).
#
#   tests              pytest -m gpu (8 workers), tutorials 01 and 02
#   tc [ARGS]          bench/tc_gpu.py --quick --rounds 3 [ARGS]
#   tutorials DIR [ARGS]  bench/upstream_tutorials_gpu.py over DIR (Triton's
#                      python/tutorials) --quick --warm 2 --rounds 3 [ARGS]
#   launch             bench/warm_start.py --gpu and bench/launch_overhead_gpu.py
#   lib                bench/lib_gpu.py (LLTM, Mamba-2 SSD: ctriton, Triton, torch)
#   diag09 DIR         tutorial 09's naive and persistent pointer kernels at
#                      one pinned configuration (128x256x64 w8 s3), K 512 and
#                      4096 (a per-tile cost shows eight times more at 512),
#                      with CTRITON_FLATTEN_DOT_NESTS=0 (the nest kept)
#   fused09 DIR        the same with dot nests fused (the default; the
#                      variable set to 1): the GPU tests of fused nests,
#                      then tutorial 09 autotuned and pinned next to Triton
#                      (compare with diag09)
#   tma09 DIR          tutorial 09's TMA persistent and descriptor persistent
#                      kernels pinned (128x256x64 w8 s3 and s4, 128x128x64
#                      w4 s4) at K 512 and 4096, then its kernels on fp8
#                      inputs autotuned (--dtype09 fp8: C stored in fp8)
#   profile DIR [CASE...]  Nsight Compute (--set full, clocks left alone) on
#                      one launch of each CASE (bench/profile_tutorial.py:
#                      03 (tutorial 03 at 2048^3), 09-persistent, 09-naive, 09-descriptor,
#                      09-tma-persistent, 08-grouped, operands (kernels_src.py's
#                      mm_operand_ops: PROF_ARGS "--form F --pin ... --S N"));
#                      default 09-persistent) for ctriton and for Triton
#                      (PROF_IMPLS: also ctriton-nest, dot nests kept;
#                      PROF_ARGS: more arguments, e.g. "--pin08 4 --n08 4096"):
#                      reports, detail pages and SASS stall tables in $O/prof
#   stores08 DIR [V...]  the GPU tests of versioned stores and of the opt-in
#                      stmatrix conversions and made-map tensor stores, then
#                      tutorial 08 at N 256, 1024 and 4096 for each variant V
#                      (default "default vs0"): default as is, vs0 with
#                      CTRITON_VERSION_STORES=0 (element stores, as before),
#                      stm1 with CTRITON_STMATRIX_CONVERT=1, made1 with
#                      CTRITON_TMA_STORE_MADE=1, both with the two; about a
#                      minute a variant
#   carveout           tutorial 03's kernel at 2048^3 (bench/tc_gpu.py --sizes
#                      2048) with CTRITON_PREFER_SHARED=0 and =1 in turn,
#                      twice: the driver's shared-memory carveout against
#                      Triton's (the largest)
#   occupancy DIR      tutorial 03's own source at 2048^3, 128x256x64 and
#                      128x128x32 (bench/kernel_trace.py: events and kernel
#                      durations), as compiled and with CTRITON_MAX_CTAS_PER_SM=2
#   donewhen DIR [PART...]  the tensor-core issue's side-by-side rows
#                      (PARTs: 03 06 08 09 attn, default all; all of them
#                      take about 10 minutes, so two calls: "03 08 attn",
#                      then "06 09"): tutorial 03 autotuned (fp16 with
#                      cuBLAS at 2048/4096/8192, fp8 at 4096/8192), tutorial
#                      06 forward, 08 and 09 (--quick), kernels/attention.py
#   split              the GPU tests of warpgroups split along N
#                      (test_wgmma_split.py), then tutorial 03's kernel at
#                      4096^3 with 64-row tiles and 8 warps (bench/tc_gpu.py
#                      --configs) with CTRITON_WGMMA_SPLIT=1 (the default)
#                      and =0 (mma.sync, as before)
#   shfl DIR           the GPU tests of attention backward (with the
#                      opt-in CTRITON_SHFL_CONVERT=1 variant), then
#                      kernels/attention.py (bench/tc_gpu.py --only
#                      attention --quick) and tutorial 06's backward with
#                      the variable at 0 and 1
#   ab DIR VAR [TEST...]  an A/B of the variable VAR on attention: the GPU
#                      tests of attention and the TEST files, then
#                      kernels/attention.py (bench/tc_gpu.py --only attention
#                      --quick) and tutorial 06's backward (pointers) with
#                      VAR at 1 and 0 (e.g. CTRITON_ASYNC_INVARIANTS
#                      tests/python/test_async_invariants.py)
#   lag DIR            the lag slot (CTRITON_LAG_SLOT, on by default): its GPU
#                      tests and the stmatrix ones, then tutorial 03's kernel
#                      at 128x256x64 w8 s3 at 2048^3, 4096^3 and 8192^3
#                      (bench/flush_modes.py: after do_bench's L2 clearing
#                      and after a spin) with the variable at 1, 0, 1, 0,
#                      then the done-when rows of tutorial 03 (about 6
#                      minutes)
#   fuzz [A:B]         tests/fuzz/fuzz_dot.py --device cuda over seeds A:B
#                      (default 0:600): tensor-core kernels run on the GPU
#                      against numpy; failing kernels saved under $O/fuzz-dot
#
# tutorials takes --bwd for tutorial 06's backward pass as well.
#
# Logs and tables go to $OUT (default /tmp/ctriton-round); each part prints
# a short summary last.
set -u
O=${OUT:-/tmp/ctriton-round}
mkdir -p "$O"
export PYTHONUNBUFFERED=1

# pinned09 NAME SECONDS DIR: tutorial 09's naive and persistent kernels at
# 128x256x64 w8 s3, K 512 and 4096, into $O/NAME.md and $O/NAME.txt
pinned09() {
  timeout "$2" python3 bench/upstream_tutorials_gpu.py --tutorials "$3" --only 09 --quick --warm 1 \
    --rounds 3 --k09 512,4096 --pin09 128,256,64,8,3 --case '(naive|matmul persistent)' \
    --out "$O/$1.md" > "$O/$1.txt" 2>&1
  echo "$1 rc=$?"
  grep -E "^09|ctriton matmul|triton matmul|Error" "$O/$1.txt" | cut -c1-190
}

part=${1:-}
shift || true
case "$part" in
  tests)
    python3 -m ctriton info > "$O/info.txt" 2>&1
    timeout 330 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python > "$O/pytest-gpu.txt" 2>&1
    echo "pytest rc=$?"
    grep -E "passed|failed" "$O/pytest-gpu.txt" | tail -2
    grep -E "^FAILED|^ERROR" "$O/pytest-gpu.txt" | cut -c1-200 | head -20
    for t in tutorials/01-vector-add.py tutorials/02-fused-softmax.py; do
      timeout 60 python3 "$t" > "$O/$(basename "$t" .py).txt" 2>&1
      echo "$t rc=$?"
    done
    ;;
  stores08)
    dir=$1
    shift
    variants=("$@")
    [ ${#variants[@]} -gt 0 ] || variants=(default vs0)
    timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python/test_version_stores.py \
      tests/python/test_stmatrix_convert.py tests/python/test_tensor_descriptor.py \
      -k "versioned or dot_epilogue or stmatrix or made_map_store or halves or unaligned_extent or store_forms" > "$O/stores08-tests.txt" 2>&1
    echo "stores08 tests rc=$?"
    grep -E "passed|failed|^FAILED|^E  .*(wrong|past)" "$O/stores08-tests.txt" | cut -c1-220 | tail -12
    CTRITON_TMA_STORE_MADE=1 timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider \
      tests/python/test_grouped_gemm_tma.py > "$O/stores08-made.txt" 2>&1
    echo "grouped TMA tests with made-map stores rc=$?"
    grep -E "passed|failed|^FAILED" "$O/stores08-made.txt" | cut -c1-220 | tail -6
    for v in "${variants[@]}"; do
      case $v in
        default) env=() ;;
        vs0) env=(CTRITON_VERSION_STORES=0) ;;
        stm1) env=(CTRITON_STMATRIX_CONVERT=1) ;;
        made1) env=(CTRITON_TMA_STORE_MADE=1) ;;
        both) env=(CTRITON_TMA_STORE_MADE=1 CTRITON_STMATRIX_CONVERT=1) ;;
      esac
      timeout 200 env ${env[@]+"${env[@]}"} python3 bench/upstream_tutorials_gpu.py --tutorials "$dir" --only 08 --warm 1 \
        --rounds 3 --n08 256,1024,4096 --out "$O/08-$v.md" > "$O/08-$v.txt" 2>&1
      echo "08 $v rc=$?"
      grep -E "^08|Error" "$O/08-$v.txt" | cut -c1-190
    done
    ;;
  tc)
    timeout 540 python3 bench/tc_gpu.py --quick --rounds 3 --out "$O/tc.md" "$@" > "$O/tc.txt" 2>&1
    echo "tc rc=$?"
    grep -E "TFLOP|Error" "$O/tc.txt" | cut -c1-190 | tail -40
    ;;
  tutorials)
    dir=$1
    shift
    timeout 540 python3 bench/upstream_tutorials_gpu.py --tutorials "$dir" --quick --warm 2 --rounds 3 \
      --out "$O/upstream.md" "$@" > "$O/upstream.txt" 2>&1
    echo "tutorials rc=$?"
    grep -E "^0[689] |failed|Error| w[48] s[0-9]" "$O/upstream.txt" | cut -c1-190 | tail -40
    ;;
  diag09)
    CTRITON_FLATTEN_DOT_NESTS=0 pinned09 diag09 300 "$1"
    ;;
  tma09)
    # the descriptor kernels pinned (K 512 shows a per-tile cost eight
    # times more than K 4096), then the tutorial's fp8 rows autotuned
    timeout 150 python3 bench/upstream_tutorials_gpu.py --tutorials "$1" --only 09 --quick --warm 1 --rounds 3 \
      --k09 512,4096 --pin09 128,256,64,8,3 --pin09 128,256,64,8,4 --pin09 128,128,64,4,4 \
      --case '(tma persistent|descriptor)' --out "$O/tma09.md" > "$O/tma09.txt" 2>&1
    echo "tma09 pinned rc=$?"
    grep -E "^09|Error" "$O/tma09.txt" | cut -c1-190
    timeout 300 python3 bench/upstream_tutorials_gpu.py --tutorials "$1" --only 09 --quick --warm 1 --rounds 3 \
      --dtype09 fp8 --out "$O/fp8-09.md" > "$O/fp8-09.txt" 2>&1
    echo "tma09 fp8 rc=$?"
    grep -E "^09|Error" "$O/fp8-09.txt" | cut -c1-190
    ;;
  fused09)
    export CTRITON_FLATTEN_DOT_NESTS=1
    timeout 200 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python/test_flatten_dots.py \
      tests/python/test_loops.py > "$O/fused09-tests.txt" 2>&1
    echo "fused09 tests rc=$?"
    tail -3 "$O/fused09-tests.txt"
    timeout 240 python3 bench/upstream_tutorials_gpu.py --tutorials "$1" --only 09 --quick --warm 2 --rounds 3 \
      --out "$O/fused09.md" > "$O/fused09.txt" 2>&1
    echo "fused09 autotuned rc=$?"
    grep -E "^09|persistent|failed|Error" "$O/fused09.txt" | cut -c1-190 | tail -12
    pinned09 fused09-pinned 150 "$1"
    ;;
  launch)
    timeout 90 python3 bench/warm_start.py --gpu --reps 5 > "$O/warm.txt" 2>&1
    echo "warm rc=$?"
    tail -8 "$O/warm.txt"
    timeout 90 python3 bench/launch_overhead_gpu.py --rounds 5 --calls 3000 > "$O/launch.txt" 2>&1
    echo "launch rc=$?"
    tail -6 "$O/launch.txt"
    ;;
  lib)
    timeout 540 python3 bench/lib_gpu.py > "$O/lib.txt" 2>&1
    echo "lib rc=$?"
    tail -12 "$O/lib.txt" | cut -c1-190
    ;;
  profile)
    dir=$1
    shift
    mkdir -p "$O/prof"
    for case in "${@:-09-persistent}"; do
      for impl in ${PROF_IMPLS:-ctriton triton}; do
        r="$O/prof/$case-$impl"
        # ctriton-nest: ctriton with dot nests kept (CTRITON_FLATTEN_DOT_NESTS=0)
        nest=1; [ "$impl" = ctriton-nest ] && nest=0
        CTRITON_FLATTEN_DOT_NESTS=$nest timeout 200 ncu --profile-from-start off --clock-control none --set full --import-source no \
          -f -o "$r" python3 bench/profile_tutorial.py --tutorials "$dir" --impl "${impl%-nest}" --case "$case" ${PROF_ARGS:-} \
          > "$r.log" 2>&1
        echo "$case $impl rc=$?"
        ncu --import "$r.ncu-rep" --page details > "$r.txt" 2>&1
        ncu --import "$r.ncu-rep" --page source --print-source sass --csv > "$r-sass.csv" 2>&1
        grep -E "max abs|ERR" "$r.log" | head -3
        grep -E "^ +(Duration|SM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible) " "$r.txt" \
          | head -8
      done
    done
    ;;
  carveout)
    for v in 0 1 0 1; do
      CTRITON_PREFER_SHARED=$v timeout 60 python3 bench/tc_gpu.py --only matmul --sizes 2048 --rounds 3 \
        > "$O/carveout-$v.txt" 2>&1
      echo "prefer_shared=$v rc=$?"
      grep -E "float16 2048|Error" "$O/carveout-$v.txt" | cut -c1-190
    done
    ;;
  occupancy)
    dir=$1
    for cap in "" 2; do
      CTRITON_MAX_CTAS_PER_SM=$cap timeout 90 python3 bench/kernel_trace.py --tutorials "$dir" --n 2048 \
        --config 0 --config 2 > "$O/occupancy-$cap.txt" 2>&1
      echo "max_ctas_per_sm=${cap:-unset} rc=$?"
      grep -E "tutorial 03|events|x  " "$O/occupancy-$cap.txt" | cut -c1-150
    done
    ;;
  donewhen)
    dir=$1
    # tut NAME SECONDS PATTERN ARGS...: one upstream_tutorials_gpu.py run over DIR
    tut() {
      local name=$1 secs=$2 pat=$3
      shift 3
      timeout "$secs" python3 bench/upstream_tutorials_gpu.py --tutorials "$dir" --warm 1 --rounds 3 "$@" \
        --out "$O/dw-$name.md" > "$O/dw-$name.txt" 2>&1
      echo "$name rc=$?"
      grep -E "$pat|Error" "$O/dw-$name.txt" | cut -c1-190
    }
    shift
    parts=" ${*:-03 06 08 09 attn} "
    case $parts in *" 03 "*) tut 03 200 "^03|picked" --only 03 --case 'fp16|fp8e5 (4096|8192)' ;; esac
    case $parts in *" 06 "*) tut 06 150 "^06" --only 06 --quick ;; esac
    case $parts in *" 08 "*) tut 08 60 "^08" --only 08 --n08 1024,4096 ;; esac
    case $parts in *" 09 "*) tut 09 150 "^09" --only 09 --quick ;; esac
    case $parts in *" attn "*)
      timeout 60 python3 bench/tc_gpu.py --only attention --quick --rounds 2 > "$O/dw-attn.txt" 2>&1
      echo "attention rc=$?"
      grep -E "TFLOP|Error" "$O/dw-attn.txt" | cut -c1-190 ;;
    esac
    ;;
  lag)
    dir=$1
    timeout 120 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python/test_lag_slot.py \
      tests/python/test_stmatrix_convert.py > "$O/lag-tests.txt" 2>&1
    echo "lag tests rc=$?"
    grep -E "passed|failed" "$O/lag-tests.txt" | tail -1
    grep -E "^FAILED|^ERROR" "$O/lag-tests.txt" | cut -c1-190 | head -10
    # each size with the slot on and off, twice, alternated (the clocks drift
    # over a call); flush_modes.py times each side after do_bench's L2
    # clearing (zero) and after a spin kernel that lets the L2 drain (sleep)
    for S in 2048 4096 8192; do
      for v in 1 0 1 0; do
        CTRITON_LAG_SLOT=$v timeout 60 python3 bench/flush_modes.py --size "$S" --modes zero,sleep \
          --launches 60 >> "$O/lag-flush-$S-$v.txt" 2>&1
        echo "$S lag_slot=$v rc=$?"
        grep -E "^(zero|sleep)|Error|wrong" "$O/lag-flush-$S-$v.txt" | tail -2 | cut -c1-190
      done
    done
    OUT="$O" bash "$0" donewhen "$dir" 03
    ;;
  split)
    timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python/test_wgmma_split.py \
      > "$O/split-tests.txt" 2>&1
    echo "split tests rc=$?"
    grep -E "passed|failed" "$O/split-tests.txt" | tail -1
    grep -E "^FAILED|^ERROR" "$O/split-tests.txt" | cut -c1-190 | head -10
    for v in 1 0; do
      CTRITON_WGMMA_SPLIT=$v timeout 150 python3 bench/tc_gpu.py --only matmul --sizes 4096 --rounds 3 \
        --configs "64,128,64,8,3;64,256,64,8,3;64,256,32,8,4;64,128,64,4,4;64,64,64,8,3;64,64,32,8,4" > "$O/split-$v.txt" 2>&1
      echo "wgmma_split=$v rc=$?"
      grep -E "TFLOP|Error" "$O/split-$v.txt" | cut -c1-190
    done
    ;;
  shfl)
    dir=$1
    timeout 120 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/python/test_attention_bwd.py \
      tests/python/test_hoist_converts.py > "$O/shfl-tests.txt" 2>&1
    echo "shfl tests rc=$?"
    grep -E "passed|failed" "$O/shfl-tests.txt" | tail -1
    grep -E "^FAILED|^ERROR" "$O/shfl-tests.txt" | cut -c1-190 | head -10
    for v in 0 1; do
      CTRITON_SHFL_CONVERT=$v timeout 90 python3 bench/tc_gpu.py --only attention --quick --rounds 3 \
        > "$O/shfl-attn-$v.txt" 2>&1
      echo "shfl_convert=$v attention rc=$?"
      grep -E "bwd|Error" "$O/shfl-attn-$v.txt" | cut -c1-190
      CTRITON_SHFL_CONVERT=$v timeout 120 python3 bench/upstream_tutorials_gpu.py --tutorials "$dir" --only 06 \
        --quick --warm 1 --rounds 3 --bwd --case bwd > "$O/shfl-06-$v.txt" 2>&1
      echo "shfl_convert=$v tutorial 06 rc=$?"
      grep -E "^06.*bwd|Error" "$O/shfl-06-$v.txt" | cut -c1-190
    done
    ;;
  ab)
    dir=$1
    var=$2
    shift 2
    timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider "$@" tests/python/test_attention_fwd.py \
      tests/python/test_attention_bwd.py > "$O/ab-tests.txt" 2>&1
    echo "$var tests rc=$?"
    grep -E "passed|failed" "$O/ab-tests.txt" | tail -1
    grep -E "^FAILED|^ERROR" "$O/ab-tests.txt" | cut -c1-190 | head -10
    for v in 1 0; do
      env "$var=$v" timeout 90 python3 bench/tc_gpu.py --only attention --quick --rounds 3 > "$O/ab-attn-$v.txt" 2>&1
      echo "$var=$v attention rc=$?"
      grep -E "TFLOP|Error" "$O/ab-attn-$v.txt" | grep -v "tma" | cut -c1-190
      grep -E "best of each" "$O/ab-attn-$v.txt" | cut -c1-190
      env "$var=$v" timeout 150 python3 bench/upstream_tutorials_gpu.py --tutorials "$dir" --only 06 \
        --quick --warm 1 --rounds 3 --bwd --case bwd > "$O/ab-06-$v.txt" 2>&1
      echo "$var=$v tutorial 06 rc=$?"
      grep -E "^06|Error" "$O/ab-06-$v.txt" | cut -c1-190
    done
    ;;
  fuzz)
    timeout 540 python3 tests/fuzz/fuzz_dot.py --device cuda --no-gpu --jobs 8 --timeout 60 \
      --seeds "${1:-0:600}" --out "$O/fuzz-dot" > "$O/fuzz-dot.txt" 2>&1
    echo "fuzz rc=$?"
    tail -25 "$O/fuzz-dot.txt" | cut -c1-190
    ;;
  *)
    sed -n '2,/^set -u/p' "$0" | grep '^#'
    exit 2
    ;;
esac
