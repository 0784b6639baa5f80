#!/usr/bin/env bash
# expect_exit.sh CODE REGEX CMD...: runs CMD, passes when it exits with CODE
# and its output (stdout + stderr) matches the extended regex REGEX.
code=$1; regex=$2; shift 2
out=$("$@" 2>&1); got=$?
if [ "$got" -ne "$code" ]; then echo "exit code $got, expected $code; output:"; echo "$out"; exit 1; fi
if ! grep -Eq -- "$regex" <<<"$out"; then echo "output does not match /$regex/:"; echo "$out"; exit 1; fi
echo "ok: exit $got, output matches /$regex/"
