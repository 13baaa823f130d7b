#!/usr/bin/env bash
# UihTable against BlockBasedTable (defaults; tuned with a 10-bit bloom
# filter; and tuned with a block cache of the larger of db_bench's 8 MiB
# and UihTable's reader memory, so that it has at least UihTable's memory
# budget) and PlainTable, through Debian's db_bench on the same
# bulk-loaded data in the same run. Prints, per table, file size and
# reader memory; per benchmark,
# ops/s (best of UIH_BENCH_TURNS interleaved turns, default 3) with
# UihTable's ratio to each, and bytes read from storage per op.
#   bench/db_bench_compare.sh [NUM_KEYS] [VALUE_SIZE]     (defaults 1000000 400)
#
# Bytes per op come from separate runs with --statistics (its counters would
# slow the timed runs, and not equally for every table): the file system
# reads RocksDB counts (rocksdb.{last,non.last}.level.read.bytes) of a run of
# M operations minus those of a run of one, over M - 1, so opening the DB
# (footers, indexes) is not charged to the operations.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
num=${1:-1000000}
value=${2:-400}
work=${UIH_BENCH_DIR:-/tmp/uih_db_bench}
rm -rf "$work"
mkdir -p "$work"
reads=$((num / 5))
common=(--num="$num" --value_size="$value" --compression_type=none --progress_reports=0
        --reads="$reads" --seed=7 --threads=1)
loads=(fillrandom,compact)
runs=(readrandom seekrandom readseq readreverse multireadrandom)

variant_flags() {
  case "$1" in
    uih) echo "--options_file=$root/examples/uihtable.options" ;;
    bbt) echo "" ;;
    bbt_tuned) echo "--bloom_bits=10" ;;
    # db_bench's default block cache is 8 MiB; this one is at least
    # UihTable's reader memory (measured after loading it).
    bbt_budget) echo "--bloom_bits=10 --cache_size=$budget" ;;
    plain) echo "--use_plain_table=true --mmap_read=true --prefix_size=8 --keys_per_prefix=0" ;;
  esac
}

# File system bytes read by one db_bench run with statistics on.
bytes_read() {
  "$@" --statistics=1 2>&1 | awk '$1 ~ /^rocksdb\.(non\.)?last\.level\.read\.bytes$/ {s += $4} END {print s + 0}'
}
measured=$((reads < 20000 ? reads : 20000))

variants=(uih bbt bbt_tuned bbt_budget plain)
budget=$((8 << 20))
turns=${UIH_BENCH_TURNS:-3}
bench_flags() {
  case "$1" in
    seekrandom) echo "--seek_nexts=10" ;;
    multireadrandom) echo "--multiread_batched=true --batch_size=16" ;;
  esac
}
# db_bench for variant $1, benchmark $2, then any further flags.
run() {
  local v=$1 b=$2
  shift 2
  # shellcheck disable=SC2046
  "$root/scripts/uih-rocksdb" db_bench "${common[@]}" --db="$work/$v" $(variant_flags "$v") $(bench_flags "$b") \
    --use_existing_db=true --benchmarks="$b" "$@"
}

# Load every table, then time every benchmark in interleaved turns (each
# variant once per turn; the best turn counts), so drift in a shared
# machine's speed falls on all tables alike.
declare -A ops bpo loaded
for v in "${variants[@]}"; do
  # shellcheck disable=SC2046
  if "$root/scripts/uih-rocksdb" db_bench "${common[@]}" --db="$work/$v" $(variant_flags "$v") \
       --benchmarks="${loads[*]}" >"$work/$v.load.log" 2>&1; then
    loaded[$v]=1
  else
    echo "$v: load failed (see $work/$v.load.log)"
  fi
  files=$(du -cb "$work/$v"/*.sst 2>/dev/null | awk 'END {printf "%.1f", $1 / 1e6}')
  # Per key stored (fillrandom repeats keys: fewer than NUM_KEYS remain).
  keys=$("$root/scripts/uih-rocksdb" ldb --db="$work/$v" get_property rocksdb.estimate-num-keys 2>/dev/null | awk -F': ' '{print $2}')
  mem=$("$root/scripts/uih-rocksdb" ldb --db="$work/$v" get_property rocksdb.estimate-table-readers-mem 2>/dev/null |
        awk -F': ' -v n="${keys:-0}" '{printf "%.1f MB (%.2f B per key of %d)", $2 / 1e6, n ? $2 / n : 0, n}')
  printf '%-10s files %s MB, reader memory %s\n' "$v" "$files" "${mem:-n/a}"
  if [ "$v" = uih ]; then
    uih_mem=$("$root/scripts/uih-rocksdb" ldb --db="$work/$v" get_property rocksdb.estimate-table-readers-mem 2>/dev/null |
              awk -F': ' '{print $2 + 0}')
    budget=$((budget > ${uih_mem:-0} ? budget : ${uih_mem:-0}))
  fi
done
printf 'bbt_budget: block cache %.1f MB (the larger of 8 MiB and UihTable'"'"'s reader memory)\n' \
  "$(awk -v b="$budget" 'BEGIN {print b / 1e6}')"
for b in "${runs[@]}"; do
  for ((t = 1; t <= turns; t++)); do
    for v in "${variants[@]}"; do
      [ -n "${loaded[$v]:-}" ] || continue
      run "$v" "$b" >"$work/$v.$b.$t.log" 2>&1 || continue
      o=$(awk -v b="$b" '$1 == b {for (i = 1; i <= NF; i++) if ($i == "ops/sec") print $(i-1)}' "$work/$v.$b.$t.log" | tail -n 1)
      if [ -n "$o" ] && awk -v a="$o" -v b="${ops[$v,$b]:-0}" 'BEGIN {exit !(a > b)}'; then ops[$v,$b]=$o; fi
    done
  done
  for v in "${variants[@]}"; do
    [ -n "${ops[$v,$b]:-}" ] || { ops[$v,$b]=n/a; bpo[$v,$b]=n/a; continue; }
    if [ "$v" = plain ]; then bpo[$v,$b]=mmap; continue; fi  # reads of a mapping are not counted
    one=$(bytes_read run "$v" "$b" --reads=1)
    many=$(bytes_read run "$v" "$b" --reads="$measured")
    bpo[$v,$b]=$(awk -v a="$many" -v b="$one" -v n="$measured" 'BEGIN {printf "%.0f", (a - b) / (n - 1)}')
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else printf "n/a" }'; }
printf '\n%-16s %10s %10s %10s %10s %10s   %8s %8s %8s %8s\n' benchmark UihTable BBT BBT-tuned BBT-budget Plain \
  "vs BBT" "vs tuned" "vs budg." "vs Plain"
for b in "${runs[@]}"; do
  printf '%-16s %10s %10s %10s %10s %10s   %8s %8s %8s %8s\n' "$b" "${ops[uih,$b]}" "${ops[bbt,$b]}" \
    "${ops[bbt_tuned,$b]}" "${ops[bbt_budget,$b]}" "${ops[plain,$b]}" "$(ratio "${ops[uih,$b]}" "${ops[bbt,$b]}")" \
    "$(ratio "${ops[uih,$b]}" "${ops[bbt_tuned,$b]}")" "$(ratio "${ops[uih,$b]}" "${ops[bbt_budget,$b]}")" \
    "$(ratio "${ops[uih,$b]}" "${ops[plain,$b]}")"
done
printf '\nbytes read from storage per op (page cache included; block cache hits are not reads)\n'
printf '%-16s %10s %10s %10s %10s %10s   %8s %8s %8s\n' benchmark UihTable BBT BBT-tuned BBT-budget Plain \
  "BBT/Uih" "tuned/Uih" "budg/Uih"
for b in "${runs[@]}"; do
  printf '%-16s %10s %10s %10s %10s %10s   %8s %8s %8s\n' "$b" "${bpo[uih,$b]}" "${bpo[bbt,$b]}" \
    "${bpo[bbt_tuned,$b]}" "${bpo[bbt_budget,$b]}" "${bpo[plain,$b]}" "$(ratio "${bpo[bbt,$b]}" "${bpo[uih,$b]}")" \
    "$(ratio "${bpo[bbt_tuned,$b]}" "${bpo[uih,$b]}")" "$(ratio "${bpo[bbt_budget,$b]}" "${bpo[uih,$b]}")"
done
