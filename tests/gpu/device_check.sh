#!/bin/bash
# The checks that need a CUDA device, in one run: the gpu tier (sharded over
# the cores), the same under compute-sanitizer's memcheck where it exists,
# then the GPU benchmark. Logs and the benchmark's JSON go to OUT_DIR; the
# last lines printed are the summary.
#
#   tests/gpu/device_check.sh [BUILD_DIR=build] [OUT_DIR=gpu-check]
set -u
BUILD=${1:-build}
OUT=${2:-gpu-check}
SHARDS=${SHARDS:-8}
mkdir -p "$OUT"
run_sharded() {  # NAME, then the command that runs one shard
  local name=$1
  shift
  for i in $(seq 0 $((SHARDS - 1))); do
    GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout 300 "$@" > "$OUT/$name.$i.log" 2>&1 &
  done
  wait
  cat "$OUT/$name".*.log > "$OUT/$name.log" && rm "$OUT/$name".*.log
}
run_sharded gpu_tests "$BUILD/tests/loom_gpu_tests"
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$SANITIZER" ] && run_sharded memcheck "$SANITIZER" --tool memcheck --print-limit 5 "$BUILD/tests/loom_gpu_tests"
"$BUILD/benchmarks/loom_bench_gpu" --json="$OUT/bench_gpu.json" > "$OUT/bench_gpu.log" 2>&1
echo "gpu tier:"
grep -h -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$OUT/gpu_tests.log" | sort | uniq -c
[ -f "$OUT/memcheck.log" ] && echo "memcheck:" && grep -h "ERROR SUMMARY" "$OUT/memcheck.log" | sort | uniq -c
tail -1 "$OUT/bench_gpu.log"
! grep -q -E "^\[  FAILED|ERROR SUMMARY: [1-9]" "$OUT/gpu_tests.log" "$OUT/memcheck.log" 2>/dev/null
