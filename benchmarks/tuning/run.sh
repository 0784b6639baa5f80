#!/usr/bin/env bash
# The comparative tuning benchmark, one command:
#   benchmarks/tuning/run.sh [OUT_DIR] [--with-tvm] [loom_bench_tune flags...]
# Creates a virtual environment (benchmarks/.venv) with matplotlib (and
# apache-tvm with --with-tvm), runs loom_bench_tune pinned to CPU 0, TVM
# MetaSchedule pinned to CPU 1 at the same time when asked, then plots.
# Expects a configured build in ./build (the README's commands).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/bench_tune_out}; shift || true
with_tvm=0
args=()
for a in "$@"; do
  if [ "$a" = "--with-tvm" ]; then with_tvm=1; else args+=("$a"); fi
done
venv=$root/benchmarks/.venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q matplotlib numpy
if [ "$with_tvm" = 1 ]; then
  # apache-tvm-ffi 0.1.15 makes tvm.ir.save_json segfault (kills tune_tir): pin 0.1.14.post0.
  "$venv/bin/pip" install -q apache-tvm==0.27.0.post1 "apache-tvm-ffi==0.1.14.post0" xgboost psutil cloudpickle
fi
cmake --build "$root/build" --target loom_bench_tune
mkdir -p "$out"
tvm_pid=
if [ "$with_tvm" = 1 ]; then
  TVM_NUM_THREADS=1 taskset -c 1 "$venv/bin/python" "$root/benchmarks/tuning/tvm_metaschedule.py" --out "$out" \
    >"$out/tvm_log.txt" 2>&1 &
  tvm_pid=$!
fi
taskset -c 0 "$root/build/benchmarks/loom_bench_tune" --out="$out" "${args[@]}" 2>"$out/loom_log.txt" | tee "$out/table.txt"
[ -n "$tvm_pid" ] && wait "$tvm_pid"
"$venv/bin/python" "$root/benchmarks/tuning/plot_tuning.py" "$out"
