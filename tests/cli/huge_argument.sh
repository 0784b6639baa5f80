#!/usr/bin/env bash
# huge_argument.sh LOOM: a 100,000-character argument is refused with its
# length, and the error does not echo it whole.
set -uo pipefail
arg="M=$(head -c 100000 /dev/zero | tr '\0' 7)"
out=$("$1" run matmul "$arg" N=2 K=2 2>&1); code=$?
[ $code -eq 2 ] || { echo "exit $code, expected 2"; exit 1; }
grep -q "is 100002 characters long (at most 4096)" <<<"$out" || { echo "unexpected: ${out:0:300}"; exit 1; }
[ ${#out} -lt 1000 ] || { echo "the error echoes ${#out} characters"; exit 1; }
echo "ok: refused in ${#out} characters"
