#!/usr/bin/env bash
# The sanitizer tier, part of the README's test command (so CI runs it): the
# test suite built with AddressSanitizer and UndefinedBehaviorSanitizer
# (clang-16, -O1), then each libFuzzer target over its seed corpus and a
# bounded number of generated inputs. The randomized campaign runs a reduced
# number of cases here (LOOM_CAMPAIGN_CASES, default 8; 40 in the plain
# build): instrumented, each case costs about 20 s.
# Usage: tests/sanitize.sh [BUILD_DIR]; LOOM_FUZZ_RUNS=N sets the fuzz inputs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build-sanitize}
CC=clang-16 CXX=clang++-16 cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" \
  -DLOOM_BUILD_FUZZERS=ON -DLOOM_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$dir"
export ASAN_OPTIONS=abort_on_error=0:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LOOM_CAMPAIGN_CASES=${LOOM_CAMPAIGN_CASES:-8}
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900
runs=${LOOM_FUZZ_RUNS:-3000}
for target in hwspec cli_args operator; do
  corpus=$(mktemp -d)
  cp "$root/tests/fuzz/corpus/$target"/* "$corpus"/
  echo "fuzz_$target: $runs runs from $(ls "$corpus" | wc -l) seeds"
  "$dir/fuzz_$target" -runs="$runs" -seed=1 -max_len=2048 -timeout=20 "$corpus" 2>"$corpus.log" ||
    { tail -40 "$corpus.log"; exit 1; }
  grep -E "^#[0-9]+ *DONE" "$corpus.log" || true
  rm -rf "$corpus" "$corpus.log"
done
echo "sanitizer tier: tests and fuzz targets passed"
