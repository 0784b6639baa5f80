#!/usr/bin/env bash
# tune_kill_resume.sh LOOM: a tuning run killed with SIGKILL mid-way keeps
# every completed round in its records (no torn or lost line), and a rerun
# with the same file resumes from all of them.
set -u
loom=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
records=$dir/records.jsonl
"$loom" tune matmul M=48 N=40 K=32 --threads=1 --trials=400 --batch=4 --records="$records" 2>"$dir/err1" &
pid=$!
for _ in $(seq 1 600); do
  [ -f "$records" ] && [ "$(wc -l <"$records")" -ge 12 ] && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
lines=$(wc -l <"$records")
[ "$lines" -ge 12 ] || { echo "only $lines records before the kill"; cat "$dir/err1"; exit 1; }
[ $((lines % 4)) -eq 0 ] || { echo "$lines records: a round was cut in the middle"; exit 1; }
out=$("$loom" tune matmul M=48 N=40 K=32 --threads=1 --trials=$((lines + 4)) --batch=4 --records="$records" --json 2>"$dir/err2")
grep -q "warning" "$dir/err2" && { echo "records had bad lines:"; cat "$dir/err2"; exit 1; }
grep -q "\"resumed\":$lines," <<<"$out" || { echo "expected resumed $lines: $out"; exit 1; }
grep -q '"measured":4,' <<<"$out" || { echo "expected 4 new measurements: $out"; exit 1; }
grep -q '"ok":true' <<<"$out" || { echo "no correct kernel: $out"; exit 1; }
echo "ok: killed after $lines records, resumed them all"
