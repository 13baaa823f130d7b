#!/bin/sh
# expect_run.sh CODE PATTERN CMD [ARGS...]
# Runs CMD; passes only if it exits with status CODE (so a crash never
# passes) and a line of its output (stdout and stderr) matches the extended
# regular expression PATTERN.
code=$1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_run: expected exit status $code, got $rc"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -qE -- "$pattern"; then
  echo "expect_run: no output line matches: $pattern"
  exit 1
fi
