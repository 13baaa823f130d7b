#!/bin/sh
# stock_tools_test.sh LIB UIH_SST SOURCE_DIR WORK_DIR
# Debian's own db_bench, ldb and sst_dump, with libuih_rocksdb.so preloaded
# by scripts/uih-rocksdb (the one-command wrapper users run), write, read
# and inspect UihTable data; uih-sst agrees with them.
set -eu
lib=$1 uih_sst=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
UIH_ROCKSDB_LIB=$lib
export UIH_ROCKSDB_LIB
with_plugin() { "$src/scripts/uih-rocksdb" "$@"; }
with_plugin db_bench --benchmarks=fillrandom,compact,readrandom --num=5000 --progress_reports=0 \
  --options_file="$src/examples/uihtable.options" --db="$work/db" >"$work/db_bench.log" 2>&1 \
  || { cat "$work/db_bench.log"; echo "stock_tools_test: db_bench failed"; exit 1; }
grep -q "readrandom" "$work/db_bench.log" || { echo "stock_tools_test: db_bench did not read"; exit 1; }
sst=$(ls "$work"/db/*.sst | head -n 1)
[ -n "$sst" ] || { echo "stock_tools_test: no table file written"; exit 1; }
"$uih_sst" props "$sst" | grep -q "^# entries: [1-9]" || { echo "stock_tools_test: $sst is not a readable UihTable"; exit 1; }
"$uih_sst" verify "$sst"
keys=$(with_plugin ldb --db="$work/db" scan --max_keys=3 --key_hex 2>&1 | grep -c "^0x") || true
[ "$keys" = 3 ] || { echo "stock_tools_test: ldb scan returned $keys keys, expected 3"; exit 1; }
first=$(with_plugin ldb --db="$work/db" scan --max_keys=1 --key_hex | cut -d' ' -f1)
with_plugin ldb --db="$work/db" get --key_hex "$first" >/dev/null || { echo "stock_tools_test: ldb get $first failed"; exit 1; }
with_plugin ldb --db="$work/db" checkconsistency >/dev/null

# sst_dump (and ldb dump) open UihTable files through the preloaded hook.
with_plugin sst_dump --file="$sst" --show_properties >"$work/props.txt" 2>&1
grep -q "^Sst file format: UihTable" "$work/props.txt" || { cat "$work/props.txt"; echo "stock_tools_test: sst_dump did not open $sst as a UihTable"; exit 1; }
entries=$(sed -n 's/^  # entries: //p' "$work/props.txt")
[ -n "$entries" ] && [ "$entries" -gt 0 ] || { echo "stock_tools_test: sst_dump --show_properties shows no entries"; exit 1; }
with_plugin sst_dump --file="$sst" --command=verify | grep -q "The file is ok" || { echo "stock_tools_test: sst_dump verify failed"; exit 1; }
# A scan shows every entry, and the same ones uih-sst reads (one version per
# key after the compaction).
with_plugin sst_dump --file="$sst" --command=scan --output_hex --verify_checksum 2>&1 \
  | sed -n "s/^'\([0-9A-F]*\)' seq:[0-9]*, type:1 => /\1 => /p" >"$work/scan.txt"
[ "$(wc -l <"$work/scan.txt")" = "$entries" ] || { echo "stock_tools_test: sst_dump scan shows $(wc -l <"$work/scan.txt") of $entries entries"; exit 1; }
"$uih_sst" dump "$sst" --hex >"$work/uih_scan.txt"
cmp -s "$work/scan.txt" "$work/uih_scan.txt" || { echo "stock_tools_test: sst_dump scan and uih-sst dump disagree"; exit 1; }
with_plugin ldb dump --path="$sst" 2>&1 | grep -c " => " | grep -qx "$entries" || { echo "stock_tools_test: ldb dump --path did not show $entries entries"; exit 1; }
# raw: the file's sections, then one line per entry.
cp "$sst" "$work/raw.sst"
with_plugin sst_dump --file="$work/raw.sst" --command=raw >/dev/null
grep -q "^  index  " "$work/raw_dump.txt" || { echo "stock_tools_test: sst_dump raw dump lacks the section map"; exit 1; }
[ "$(grep -c "^  [0-9][0-9]* [0-9][0-9]*  [0-9A-F]* @ " "$work/raw_dump.txt")" = "$entries" ] || { echo "stock_tools_test: sst_dump raw dump does not list $entries entries"; exit 1; }
# A flipped value byte: verify and a checked scan name the offset.
printf '\377' | dd of="$work/raw.sst" bs=1 seek=10 conv=notrunc 2>/dev/null
with_plugin sst_dump --file="$work/raw.sst" --command=verify 2>&1 | grep -q "Corruption: UihTable: .*raw.sst: value checksum mismatch at data offset 0 (" \
  || { echo "stock_tools_test: sst_dump verify missed a corrupt value"; exit 1; }
with_plugin sst_dump --file="$work/raw.sst" --command=scan --verify_checksum 2>&1 | grep -q "value checksum mismatch at data offset 0" \
  || { echo "stock_tools_test: a checked sst_dump scan missed a corrupt value"; exit 1; }
# Files of other formats still open with RocksDB's own rules.
with_plugin db_bench --benchmarks=fillseq,compact --num=2000 --progress_reports=0 --db="$work/bbt" >/dev/null 2>&1
bbt=$(ls "$work"/bbt/*.sst | head -n 1)
with_plugin sst_dump --file="$bbt" --command=verify 2>&1 | grep -q "^Sst file format: block-based" \
  || { echo "stock_tools_test: sst_dump no longer opens BlockBasedTable files"; exit 1; }
echo "stock_tools_test: ok"
