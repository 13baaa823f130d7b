#!/bin/sh
# Reading never writes: `uih read` pointed at a missing path, a directory
# that is not a store, another RocksDB database or a real store leaves each
# exactly as it was (no directory, LOCK, LOG, column family or MANIFEST
# change), failing with "not a uihstore store: PATH: why" where there is no
# store; and `uih append` checks its inputs before it creates a store.
#   read_never_writes.sh UIH SCHEMA LDB WORKDIR
set -eu
uih=$1 schema=$2 ldb=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "read_never_writes: $*"; exit 1; }
# Every file under DIR with its size, mode and modification time.
state() { find "$1" -printf '%P %s %m %T@\n' | sort; }
# read_fails DIR REGEX: `uih read` exits 1 with a message matching REGEX.
read_fails() {
  if "$uih" read --schema "$schema" --db "$1" --user 1 --group engagement >"$work/out" 2>"$work/err"; then
    fail "read of $1 succeeded"
  fi
  grep -qE "$2" "$work/err" || { cat "$work/err"; fail "read of $1: no message matching '$2'"; }
}

# A typo'd path: nothing is created.
read_fails "$work/typo" "^uih: not a uihstore store: $work/typo: it does not exist$"
[ ! -e "$work/typo" ] || fail "reading a missing path created it"

# A directory that is not a store: left as it was.
mkdir "$work/plain"
echo data >"$work/plain/notes.txt"
before=$(state "$work/plain")
read_fails "$work/plain" "^uih: not a uihstore store: $work/plain: no RocksDB database in it"
[ "$before" = "$(state "$work/plain")" ] || fail "reading a plain directory changed it"

# A regular file.
read_fails "$work/plain/notes.txt" "not a uihstore store: $work/plain/notes.txt: it is not a directory"

# Another RocksDB database: no column family added, no MANIFEST rewritten.
"$ldb" --db="$work/other" --create_if_missing put somekey somevalue >/dev/null
before=$(state "$work/other")
read_fails "$work/other" "not a uihstore store: $work/other: a RocksDB database without column family uih.mutable"
[ "$before" = "$(state "$work/other")" ] || { state "$work/other"; fail "reading another RocksDB database changed it"; }
"$ldb" --db="$work/other" list_column_families | grep -q "uih.mutable" && fail "a column family was added"

# A real store: read, and nothing in it changes (not even LOG).
printf 'user_id,group,ts,item_id\n7,engagement,1700000000000,42\n' >"$work/day.csv"
"$uih" append --schema "$schema" --db "$work/store" "$work/day.csv" 2>/dev/null
before=$(state "$work/store")
"$uih" read --schema "$schema" --db "$work/store" --user 7 --group engagement >"$work/out"
grep -q '^7,engagement,1700000000000,42,' "$work/out" || { cat "$work/out"; fail "the store did not read back"; }
[ "$before" = "$(state "$work/store")" ] || fail "reading a store wrote to it"

# `uih append` checks its inputs first: a missing file or a bad header
# creates no store.
if "$uih" append --schema "$schema" --db "$work/new1" "$work/day.csv" "$work/missing.csv" 2>"$work/err"; then
  fail "append of a missing file succeeded"
fi
grep -q "missing.csv" "$work/err" || { cat "$work/err"; fail "no message naming the missing file"; }
[ ! -e "$work/new1" ] || fail "append with a missing input created the store"
printf 'user,group,ts\n1,engagement,5\n' >"$work/badhead.csv"
if "$uih" append --schema "$schema" --db "$work/new2" "$work/badhead.csv" 2>"$work/err"; then
  fail "append of a bad header succeeded"
fi
grep -q "badhead.csv:1: " "$work/err" || { cat "$work/err"; fail "no message naming the bad header"; }
[ ! -e "$work/new2" ] || fail "append with a bad header created the store"
echo "read_never_writes: ok"
