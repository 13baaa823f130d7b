#!/bin/sh
# `uih COMMAND --help` (or -h, anywhere on the line) prints that command's
# usage to stdout and exits 0, for every command the usage screen lists;
# stderr stays empty. An unknown command with --help is still an error.
#   help_everywhere.sh UIH
set -u
uih=$1
fail() { echo "help_everywhere: $*"; exit 1; }
commands=$("$uih" --help | sed -n 's/^  \([a-z]*\) .*/\1/p' | sort -u)
[ -n "$commands" ] || fail "no commands in the usage screen"
n=0
for c in $commands; do
  for flag in --help -h; do
    out=$("$uih" "$c" "$flag" 2>"${TMPDIR:-/tmp}/help_err.$$"); rc=$?
    [ $rc -eq 0 ] || fail "uih $c $flag exited $rc"
    [ ! -s "${TMPDIR:-/tmp}/help_err.$$" ] || fail "uih $c $flag wrote to stderr: $(cat "${TMPDIR:-/tmp}/help_err.$$")"
    printf '%s\n' "$out" | head -1 | grep -q "^usage: uih $c\b" || fail "uih $c $flag: $(printf '%s\n' "$out" | head -1)"
  done
  n=$((n + 1))
done
rm -f "${TMPDIR:-/tmp}/help_err.$$"
# Anywhere on the line, after other options (e.g. a half-typed command).
"$uih" load --store /nonexistent --help | grep -q "^usage: uih load" || fail "load --store X --help"
"$uih" log dump --help | grep -q "^usage: uih log dump" || fail "log dump --help"
"$uih" nosuch --help >/dev/null 2>&1 && fail "an unknown command with --help succeeded"
[ $n -ge 14 ] || fail "only $n commands listed"
echo "help_everywhere: ok ($n commands)"
