#!/bin/sh
# stock_tools_test.sh LIB UIH_SST SOURCE_DIR WORK_DIR
# Debian's own db_bench and ldb, with libuih_rocksdb.so preloaded, write and
# read UihTable data; uih-sst inspects the files they wrote.
set -eu
lib=$1 uih_sst=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
export LD_PRELOAD="$lib"
db_bench --benchmarks=fillrandom,compact,readrandom --num=5000 --progress_reports=0 \
  --options_file="$src/examples/uihtable.options" --db="$work/db" >"$work/db_bench.log" 2>&1 \
  || { cat "$work/db_bench.log"; echo "stock_tools_test: db_bench failed"; exit 1; }
grep -q "readrandom" "$work/db_bench.log" || { echo "stock_tools_test: db_bench did not read"; exit 1; }
sst=$(ls "$work"/db/*.sst | head -n 1)
[ -n "$sst" ] || { echo "stock_tools_test: no table file written"; exit 1; }
unset LD_PRELOAD
"$uih_sst" props "$sst" | grep -q "^# entries: [1-9]" || { echo "stock_tools_test: $sst is not a readable UihTable"; exit 1; }
"$uih_sst" verify "$sst"
export LD_PRELOAD="$lib"
keys=$(ldb --db="$work/db" scan --max_keys=3 --key_hex 2>&1 | grep -c "^0x") || true
[ "$keys" = 3 ] || { echo "stock_tools_test: ldb scan returned $keys keys, expected 3"; exit 1; }
first=$(ldb --db="$work/db" scan --max_keys=1 --key_hex | cut -d' ' -f1)
ldb --db="$work/db" get --key_hex "$first" >/dev/null || { echo "stock_tools_test: ldb get $first failed"; exit 1; }
ldb --db="$work/db" checkconsistency >/dev/null
echo "stock_tools_test: ok"
