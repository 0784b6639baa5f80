#!/usr/bin/env bash
# dynamic_cache.sh LOOM: `loom dynamic` across processes sharing one kernel
# cache directory: the second process runs no LLVM compile and serves every
# call from the disk cache; damaged entries are detected, warned about and
# rebuilt; two processes filling one cache at once leave no bad entry.
set -uo pipefail
loom=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run CACHE VALUES -> JSON line in $dir/out
  "$loom" dynamic matmul N=24 K=17 --dim=M --values="$2" --threads=1 --repeats=1 --json --cache-dir="$1" \
    >"$dir/out" 2>"$dir/err" || fail "exit $?: $(cat "$dir/err") $(cat "$dir/out")"
  grep -q '"ok":true' "$dir/out" || fail "a result was wrong: $(cat "$dir/out")"
}
has() { grep -q "$1" "$dir/out" || fail "expected $1 in: $(cat "$dir/out")"; }
lacks() { ! grep -q "$1" "$dir/out" || fail "did not expect $1 in: $(cat "$dir/out")"; }

run "$dir/c1" 5,33,5,70
lacks '"llvm_compiles":0,'
has '"compiles_on_critical_path":1,'
has '"served_by":"generic"'
run "$dir/c1" 5,33,5,70
has '"llvm_compiles":0,'
has '"compiles_on_critical_path":0,'
lacks '"served_by":"generic"'
lacks '"served_by":"specialized"'
has '"warnings":\[\]'
echo "ok: a second process compiles nothing and serves every call from disk"

n=0
for f in "$dir"/c1/kernels/*.bin; do
  case $((n % 3)) in
    0) head -c $(($(stat -c %s "$f") / 2)) "$f" >"$f.cut" && mv "$f.cut" "$f" ;;
    1) printf '\x01\x02garbage' | dd of="$f" bs=1 seek=40 conv=notrunc 2>/dev/null ;;
    2) printf 'not a cache entry' >"$f" ;;
  esac
  n=$((n + 1))
done
run "$dir/c1" 5,33,5,70
has 'truncated or corrupt'
lacks '"llvm_compiles":0,'
run "$dir/c1" 5,33,5,70
has '"llvm_compiles":0,'
has '"warnings":\[\]'
echo "ok: damaged entries are detected, rebuilt, and serve again"

"$loom" dynamic matmul N=24 K=17 --dim=M --values=9,40,9,3 --threads=1 --repeats=1 --json --cache-dir="$dir/c2" \
  >"$dir/a" 2>&1 &
a=$!
"$loom" dynamic matmul N=24 K=17 --dim=M --values=40,3,9,17 --threads=1 --repeats=1 --json --cache-dir="$dir/c2" \
  >"$dir/b" 2>&1 &
b=$!
wait $a || fail "concurrent process A: $(cat "$dir/a")"
wait $b || fail "concurrent process B: $(cat "$dir/b")"
grep -q '"ok":true' "$dir/a" && grep -q '"ok":true' "$dir/b" || fail "concurrent results: $(cat "$dir/a" "$dir/b")"
ls "$dir"/c2/kernels | grep -q tmp && fail "temporary files left behind: $(ls "$dir"/c2/kernels)"
run "$dir/c2" 9,40,3,17
has '"llvm_compiles":0,'
has '"warnings":\[\]'
echo "ok: two processes filling one cache at once leave only whole entries"
