#!/usr/bin/env bash
# UihTable against BlockBasedTable (defaults, and tuned with a 10-bit bloom
# filter; the index stays pinned in table readers either way) and
# PlainTable, through Debian's db_bench on the same bulk-loaded data in the
# same run. Prints ops/s per benchmark and UihTable's ratio to each.
#   bench/db_bench_compare.sh [NUM_KEYS] [VALUE_SIZE]     (defaults 1000000 400)
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
    plain) echo "--use_plain_table=true --mmap_read=true --prefix_size=8 --keys_per_prefix=0" ;;
  esac
}

declare -A ops
for v in uih bbt bbt_tuned plain; do
  db="$work/$v"
  run=("$root/scripts/uih-rocksdb" db_bench "${common[@]}" --db="$db")
  # shellcheck disable=SC2207
  flags=($(variant_flags "$v"))
  "${run[@]}" "${flags[@]}" --benchmarks="${loads[*]}" >"$work/$v.load.log" 2>&1 || { echo "$v: load failed (see $work/$v.load.log)"; continue; }
  for b in "${runs[@]}"; do
    extra=()
    [ "$b" = seekrandom ] && extra=(--seek_nexts=10)
    [ "$b" = multireadrandom ] && extra=(--multiread_batched=true --batch_size=16)
    if "${run[@]}" "${flags[@]}" "${extra[@]}" --use_existing_db=true --benchmarks="$b" >"$work/$v.$b.log" 2>&1; then
      ops[$v,$b]=$(awk -v b="$b" '$1 == b {for (i = 1; i <= NF; i++) if ($i == "ops/sec") print $(i-1)}' "$work/$v.$b.log" | tail -n 1)
    fi
    : "${ops[$v,$b]:=n/a}"
  done
  du -sb "$db"/*.sst 2>/dev/null | awk -v v="$v" '{s += $1} END {printf "%-10s files: %.1f MB\n", v, s / 1e6}'
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else printf "n/a" }'; }
printf '\n%-16s %12s %12s %12s %12s   %10s %10s %10s\n' benchmark UihTable BBT BBT-tuned Plain "vs BBT" "vs tuned" "vs Plain"
for b in "${runs[@]}"; do
  printf '%-16s %12s %12s %12s %12s   %10s %10s %10s\n' "$b" "${ops[uih,$b]}" "${ops[bbt,$b]}" \
    "${ops[bbt_tuned,$b]}" "${ops[plain,$b]}" "$(ratio "${ops[uih,$b]}" "${ops[bbt,$b]}")" \
    "$(ratio "${ops[uih,$b]}" "${ops[bbt_tuned,$b]}")" "$(ratio "${ops[uih,$b]}" "${ops[plain,$b]}")"
done
