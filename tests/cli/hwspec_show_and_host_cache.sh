#!/usr/bin/env bash
# hwspec_show_and_host_cache.sh LOOM: `loom hwspecs show` prints YAML that
# loads back to the same spec, for every bundled spec and the host; the
# measured host spec is cached, and a truncated, garbled or unwritable cache
# is survived with a warning.
set -uo pipefail
loom=$1
dir=$(mktemp -d)
trap 'chmod -R u+w "$dir"; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
body() { grep -v '^#' "$1"; }  # the YAML without its source comment

for name in $("$loom" hwspecs); do
  "$loom" hwspecs show "$name" >"$dir/$name.yaml" 2>"$dir/err" || fail "show $name: $(cat "$dir/err")"
  "$loom" hwspecs show "$dir/$name.yaml" >"$dir/$name.again.yaml" || fail "show $dir/$name.yaml"
  diff <(body "$dir/$name.yaml") <(body "$dir/$name.again.yaml") || fail "$name does not load back the same"
done
echo "ok: every spec loads back"

export LOOM_CACHE_DIR=$dir/cache
"$loom" hwspecs show host >"$dir/first" 2>"$dir/err" || fail "first host: $(cat "$dir/err")"
head -1 "$dir/first" | grep -q "measured in" || fail "first run did not measure: $(head -1 "$dir/first")"
"$loom" hwspecs show host >"$dir/second" 2>"$dir/err" || fail "second host"
head -1 "$dir/second" | grep -q "cached in" || fail "second run did not use the cache: $(head -1 "$dir/second")"
diff <(body "$dir/first") <(body "$dir/second") || fail "the cached spec differs from the measured one"
"$loom" run matmul M=19 N=7 K=33 --threads=1 --json --hwspec="$dir/first" | grep -q '"ok":true' ||
  fail "the printed host spec does not compile a kernel"
echo "ok: measured once, then cached"

cached=$(ls "$LOOM_CACHE_DIR"/host-*.yaml)
[ "$(echo "$cached" | wc -l)" -eq 1 ] || fail "expected one cache entry, got: $cached"
for damage in truncate garble; do
  if [ $damage = truncate ]; then head -c 200 "$dir/first" >"$cached"; else printf 'name: [\n\x01\x02' >"$cached"; fi
  "$loom" hwspecs show host >"$dir/out" 2>"$dir/err" || fail "$damage: exit $?: $(cat "$dir/err")"
  grep -q "ignoring the cached host spec" "$dir/err" || fail "$damage: no warning: $(cat "$dir/err")"
  head -1 "$dir/out" | grep -q "measured in" || fail "$damage: not measured again"
  "$loom" hwspecs show host 2>/dev/null | head -1 | grep -q "cached in" || fail "$damage: the cache was not rebuilt"
done
echo "ok: damaged entries are detected and rebuilt"

mkdir -p "$dir/readonly" && chmod a-w "$dir/readonly"
if [ "$(id -u)" -ne 0 ]; then
  LOOM_CACHE_DIR=$dir/readonly "$loom" hwspecs show host >"$dir/out" 2>"$dir/err" || fail "read-only cache dir: exit $?"
  grep -q "not cached" "$dir/err" || fail "read-only cache dir: no warning: $(cat "$dir/err")"
fi
LOOM_CACHE_DIR=/proc/loom-cache "$loom" hwspecs show host >"$dir/out" 2>"$dir/err" || fail "uncreatable cache dir: exit $?"
grep -q "cannot be created" "$dir/err" || fail "uncreatable cache dir: no warning: $(cat "$dir/err")"
echo "ok: an unusable cache directory is a warning"
