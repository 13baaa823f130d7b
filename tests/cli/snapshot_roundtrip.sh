#!/bin/sh
# uih snapshot / log show / materialize as a user runs them: day 1 loaded,
# day 2 in the mutable tier with late events (timestamps inside day 1) that
# no snapshot may see; inference snapshots for a few hundred requests; day 2
# and its late events loaded; every logged record rebuilt, whole and
# projected, equal to what `uih snapshot --print` showed the model; a user
# erased since: mismatches named (fail) or flagged; a cut log named.
#   snapshot_roundtrip.sh UIH SCHEMA WORKDIR
set -eu
uih=$1
schema=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "snapshot_roundtrip: $*"; exit 1; }
"$uih" gen --schema "$schema" --group engagement --users 80 --days 2 --seed 5 --out "$work/d1.csv" 2>/dev/null
through=$(($(tail -n +2 "$work/d1.csv" | cut -d, -f3 | sort -n | tail -1) + 1))
"$uih" gen --schema "$schema" --group engagement --users 80 --days 1 --seed 6 --start-ts "$through" \
  --out "$work/d2.csv" 2>/dev/null
# Late: day 1's events of ten users again with their item ids changed and
# timestamps moved by a millisecond (new events, inside day 1's windows).
head -1 "$work/d1.csv" >"$work/late.csv"
tail -n +2 "$work/d1.csv" | awk -F, 'BEGIN{OFS=","} $1 < 10 && NR % 3 == 0 {$3 = sprintf("%.0f", $3 + 1); $4 = sprintf("%.0f", $4 + 7); print}' \
  >>"$work/late.csv"
[ "$(wc -l <"$work/late.csv")" -gt 10 ] || fail "too few late events"
"$uih" init --store "$work/st" --schema "$schema" --shards 2 >/dev/null
"$uih" load --store "$work/st" --through "$through" "$work/d1.csv" >/dev/null 2>&1 || fail "load day 1"
"$uih" append --store "$work/st" "$work/d2.csv" "$work/late.csv" >/dev/null 2>&1 || fail "append day 2"
last=$(tail -n +2 "$work/d2.csv" | cut -d, -f3 | sort -n | tail -1)
echo "user_id,request_ts" >"$work/req.csv"
i=0
while [ $i -lt 300 ]; do
  echo "$((i * 7 % 80)),$((through + (last - through) * (i % 50) / 49))" >>"$work/req.csv"
  i=$((i + 1))
done
"$uih" snapshot --store "$work/st" --spec engagement:48 --log "$work/snap.log" --print "$work/req.csv" \
  >"$work/seen.csv" 2>"$work/snap.err" || { cat "$work/snap.err"; fail "snapshot"; }
grep -q "300 records appended" "$work/snap.err" || { cat "$work/snap.err"; fail "snapshot summary"; }
[ "$("$uih" log show "$work/snap.log" | wc -l)" -eq 300 ] || fail "log show: 300 records"
"$uih" load --store "$work/st" "$work/d2.csv" "$work/late.csv" >/dev/null 2>&1 || fail "load day 2 with the late events"

# Every record rebuilt as the model saw it.
"$uih" materialize --store "$work/st" --log "$work/snap.log" --project engagement:48 >"$work/rebuilt.csv" \
  2>"$work/mat.err" || { cat "$work/mat.err"; fail "materialize"; }
tail -n +2 "$work/seen.csv" | cut -d, -f2- >"$work/want"
tail -n +2 "$work/rebuilt.csv" | cut -d, -f2- >"$work/got"
[ -s "$work/want" ] || fail "no events seen"
cmp -s "$work/want" "$work/got" || { diff "$work/want" "$work/got" | head; fail "rebuilt sequences differ"; }
grep -q "0 mismatched" "$work/mat.err" || { cat "$work/mat.err"; fail "mismatches"; }
# Projected: the newest 5 events, ts and item_id.
"$uih" materialize --store "$work/st" --log "$work/snap.log" --project engagement:5:ts+item_id \
  >"$work/short.csv" 2>/dev/null || fail "projected materialize"
awk -F, 'NR > 1 {print $2 "," $3}' "$work/seen.csv" >/dev/null
tail -n +2 "$work/seen.csv" | awk -F, '{k = $1 "," $2; n[k]++; row[k, n[k]] = $2 "," $3 "," $4 "," $5}
  END {for (k in n) for (j = (n[k] > 5 ? n[k] - 4 : 1); j <= n[k]; j++) print row[k, j]}' | sort >"$work/want5"
tail -n +2 "$work/short.csv" | cut -d, -f2- | sort >"$work/got5"
cmp -s "$work/want5" "$work/got5" || { diff "$work/want5" "$work/got5" | head; fail "projected sequences differ"; }

# A user erased since the snapshots: named under fail, flagged under flag.
printf 'user_id\n7\n' >"$work/forget.csv"
"$uih" load --store "$work/st" --delete "$work/forget.csv" >/dev/null 2>&1 || fail "erase user 7"
if "$uih" materialize --store "$work/st" --log "$work/snap.log" --project engagement:48 --quiet 2>"$work/err"; then
  fail "a mismatch must fail by default"
fi
grep -q "user 7" "$work/err" || { cat "$work/err"; fail "the mismatch names the user"; }
"$uih" materialize --store "$work/st" --log "$work/snap.log" --project engagement:48 --on-mismatch flag --quiet \
  2>"$work/err" || fail "flag"
grep -q "does not match the store (flagged)" "$work/err" || { cat "$work/err"; fail "flagged records"; }
# A log cut mid-record.
size=$(wc -c <"$work/snap.log")
head -c $((size - 3)) "$work/snap.log" >"$work/cut.log"
if "$uih" log show "$work/cut.log" >/dev/null 2>"$work/err"; then fail "a cut log must fail"; fi
grep -q "record 299 at byte" "$work/err" || { cat "$work/err"; fail "the cut record is named"; }
echo "snapshot_roundtrip: ok"
