#!/bin/sh
# db_stress_test.sh DB_STRESS PLUGIN SOURCE_DIR TABLE CONFIG WORK_DIR
#
# One cell of the db_stress matrix: RocksDB's stress tool (threads writing,
# reading and checking every answer against its own record of what was
# written) on a DB whose table format is TABLE (uihtable, or blockbased as the
# control), with libuih_rocksdb.so preloaded by scripts/uih-rocksdb either way.
#
# CONFIG
#   plain            reads, prefix scans, writes, deletes, iterators; flushes,
#                    CompactRange, CompactFiles, two reopens
#   multiget_faults  batched MultiGet with merges, 1 read in 1000 failing
#                    (FaultInjectionTestFS): every injected fault must surface
#                    as an error on some key, every other answer be right
#   ingest           MultiGet with merges, IngestExternalFile of SstFileWriter
#                    files (the table format's own) one op in 100
#   ingest_faults    both of the above (the shape that crashed RocksDB before
#                    UihTable's MultiGet kept duplicate keys alike)
#   mmap             the plain workload with allow_mmap_reads
#   direct_io        the plain workload with O_DIRECT reads, flushes and compactions
#   crash            blackbox crash test, as db_crashtest.py's: run, kill -9 at a
#                    random moment, restart on the same DB (db_stress verifies
#                    every key against its record at start), repeat; then one
#                    run to the end
#
# UIH_DB_STRESS_MODE=quick (default: ~10-20 s per cell) or long (10x the
# operations, three seeds per cell, 15 crash rounds). UIH_DB_STRESS_SEED
# fixes the first seed (else random; every command is printed to repeat it).
#
# Every cell verifies checksums on reads (--verify_checksum=1; db_stress's
# default is off, and then BlockBasedTable cannot see the "corrupt last
# byte" faults db_stress injects into MultiRead and fails its own check).
# Read faults are off outside the *_faults cells (db_stress's default is 1
# in 1000). db_stress wraps its Env, so UihTable reads through RocksDB's file
# layer here, never around it; its own io_uring and pread batches are
# covered by MultiGetFaults and the differential tests.
#
# Flags every cell needs for a table other than BlockBasedTable:
# --compaction_ttl=0 --periodic_compaction_seconds=0 (TTL compaction is
# block-based only), --get_property_one_in=0 (block-cache properties),
# --delrangepercent=0 (UihTable refuses range deletions), and
# --user_timestamp_size=0 (bytewise keys only). Kept the same for the control.
# IngestExternalFile and CompactRange(change_level) stay in different cells:
# 7.8.3 races them for every format (RocksDB #10988, fixed in 7.10).
set -u
stress=$1 lib=$2 src=$3 table=$4 config=$5 work=$6
mode=${UIH_DB_STRESS_MODE:-quick}
say() { printf 'db_stress_test: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

case $table in
  uihtable) factory=UihTable ;;
  blockbased) factory=BlockBasedTable ;;
  *) fail "unknown table $table" ;;
esac
# Operations per thread: the plain workload flushes, compacts and reopens
# often; the MultiGet ones count every key of a batch as an operation.
case $mode in
  quick) scale=1 seeds=1 rounds=2 kill_min=3 kill_span=4 ;;
  long) scale=10 seeds=3 rounds=15 kill_min=5 kill_span=20 ;;
  *) fail "UIH_DB_STRESS_MODE is quick or long, not $mode" ;;
esac
ops=$((20000 * scale))

db_options=""
workload="--readpercent=30 --prefixpercent=10 --writepercent=40 --delpercent=10 --iterpercent=10
  --flush_one_in=1000 --compact_range_one_in=1000 --compact_files_one_in=1000 --reopen=2"
multiget="--use_multiget=1 --use_merge=1 --readpercent=30 --prefixpercent=0 --writepercent=55
  --delpercent=5 --iterpercent=10 --reopen=0"
case $config in
  plain) ;;
  multiget_faults) workload="$multiget --read_fault_one_in=1000" ops=$((200000 * scale)) ;;
  ingest) workload="$multiget --ingest_external_file_one_in=100" ops=$((100000 * scale)) ;;
  ingest_faults) workload="$multiget --ingest_external_file_one_in=100 --read_fault_one_in=1000" ops=$((100000 * scale)) ;;
  mmap) db_options="allow_mmap_reads=true" ;;
  direct_io) db_options="use_direct_reads=true
  use_direct_io_for_flush_and_compaction=true" ;;
  crash) workload="$multiget --flush_one_in=1000 --compact_files_one_in=1000" ;;
  *) fail "unknown config $config" ;;
esac

rm -rf "$work"
mkdir -p "$work"
# db_stress takes every DB and column-family option from this file (flags
# for them are ignored when it is given): small memtables and files, so
# that every run spreads its data over several levels.
cat >"$work/OPTIONS" <<EOF
[Version]
  rocksdb_version=7.8.3
  options_file_version=1.1
[DBOptions]
  create_if_missing=true
  $db_options
[CFOptions "default"]
  merge_operator=put
  write_buffer_size=16384
  target_file_size_base=16384
  max_bytes_for_level_base=65536
  max_bytes_for_level_multiplier=2
  level0_file_num_compaction_trigger=2
  num_levels=7
  table_factory=$factory
EOF

UIH_ROCKSDB_LIB=$lib
export UIH_ROCKSDB_LIB
common="--options_file=$work/OPTIONS --db=$work/db --expected_values_dir=$work/expected
  --clear_column_family_one_in=0 --column_families=4 --threads=4 --max_key=10000 --value_size_mult=16
  --compaction_ttl=0 --periodic_compaction_seconds=0 --get_property_one_in=0 --delrangepercent=0
  --user_timestamp_size=0 --verify_checksum=1 --read_fault_one_in=0"

seed=${UIH_DB_STRESS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}

# run LOG ARGS...: db_stress with the plugin preloaded; stderr to LOG.err.
run() {
  log=$1
  shift
  say "$src/scripts/uih-rocksdb $stress $*" >"$log.cmd"
  # shellcheck disable=SC2086
  "$src/scripts/uih-rocksdb" "$stress" "$@" >"$log" 2>"$log.err"
}
# Lines of LOG.err other than db_stress's warnings and progress.
errors() { tr '\r' '\n' <"$1.err" | grep -v -e '^WARNING' -e '^\.\.\. finished' -e '^ *$' | head -n 20; }
show() {
  cat "$1.cmd"
  tr '\r' '\n' <"$1" | grep -v '^\.\.\. finished' | tail -n 30
  tr '\r' '\n' <"$1.err" | grep -v '^\.\.\. finished' | tail -n 30
}

if [ "$config" != crash ]; then
  i=0
  while [ $i -lt $seeds ]; do
    s=$((seed + i))
    mkdir -p "$work/expected"
    # shellcheck disable=SC2086
    run "$work/run$i.log" $common $workload --ops_per_thread=$ops --seed=$s --destroy_db_initially=1
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "Verification successful" "$work/run$i.log" || [ -n "$(errors "$work/run$i.log")" ]; then
      show "$work/run$i.log"
      fail "$table $config: db_stress exited $rc (seed $s)"
    fi
    say "$table $config seed $s: $(tr '\r' '\n' <"$work/run$i.log" | grep -m1 'Stress Test')"
    rm -rf "$work/db" "$work/expected"
    i=$((i + 1))
  done
  say ok
  exit 0
fi

# Blackbox crash rounds: operations that never finish, killed at a random
# second; the next start verifies the DB against the expected state, which
# db_stress keeps in a file (writes in flight when killed may land or not).
# One seed for all rounds: db_stress derives from it which keys are never
# overwritten (those it SingleDeletes), and that must not change.
mkdir -p "$work/expected"
s=$seed
i=0
while [ $i -lt $rounds ]; do
  destroy=0
  [ $i -eq 0 ] && destroy=1
  log="$work/round$i.log"
  say "$src/scripts/uih-rocksdb $stress $common $workload --ops_per_thread=100000000 --seed=$s --destroy_db_initially=$destroy" >"$log.cmd"
  # shellcheck disable=SC2086
  "$src/scripts/uih-rocksdb" "$stress" $common $workload --ops_per_thread=100000000 --seed=$s \
    --destroy_db_initially=$destroy >"$log" 2>"$log.err" &
  pid=$!
  wait_s=$((kill_min + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % kill_span))
  sleep "$wait_s"
  if ! kill -0 $pid 2>/dev/null; then
    wait $pid
    rc=$?
    show "$log"
    fail "$table crash round $i: db_stress ended before the kill (exit $rc, seed $s)"
  fi
  kill -9 $pid
  wait $pid 2>/dev/null
  if [ -n "$(errors "$log")" ] || ! grep -q "Crash-recovery verification passed\|Initializing worker threads" "$log"; then
    show "$log"
    fail "$table crash round $i: errors before the kill (seed $s)"
  fi
  say "$table crash round $i: killed after ${wait_s}s"
  i=$((i + 1))
done
# shellcheck disable=SC2086
run "$work/final.log" $common $workload --ops_per_thread=20000 --seed=$s --destroy_db_initially=0
rc=$?
if [ $rc -ne 0 ] || ! grep -q "Crash-recovery verification passed" "$work/final.log" ||
   ! grep -q "Verification successful" "$work/final.log" || [ -n "$(errors "$work/final.log")" ]; then
  show "$work/final.log"
  fail "$table crash: the run after $rounds kills exited $rc"
fi
say "$table crash: $rounds kills, every restart verified"
say ok
