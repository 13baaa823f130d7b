#!/bin/sh
# uih snapshot / log dump / materialize as a user runs them: day 1 loaded,
# day 2 in the mutable tier with late events (timestamps inside day 1) that
# no snapshot may see; inference snapshots for a few hundred requests; day 2
# and its late events loaded; every logged record rebuilt, whole and
# projected, equal (diff) to the CSV `uih snapshot` printed; a user erased
# since: mismatches named (fail), flagged or skipped; a cut log named by the
# reader and cut back by the next writer; a damaged log loses only the
# damaged record, named, and no other record changes its number; a sealed
# log is closed.
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
"$uih" snapshot --store "$work/st" --group engagement:48 --log "$work/snap.log" --requests "$work/req.csv" \
  --out "$work/seen.csv" 2>"$work/snap.err" || { cat "$work/snap.err"; fail "snapshot"; }
grep -q "300 snapshots" "$work/snap.err" || { cat "$work/snap.err"; fail "snapshot summary"; }
# One more, as a single request: record 300, printed to stdout.
"$uih" snapshot --store "$work/st" --user 3 --ts "$last" --group engagement:48 --log "$work/snap.log" \
  >"$work/one.csv" 2>/dev/null || fail "a single snapshot"
tail -n +2 "$work/one.csv" | cut -d, -f1 | sort -u | grep -qx 300 || { head -3 "$work/one.csv"; fail "record 300"; }
tail -n +2 "$work/one.csv" >>"$work/seen.csv"
[ "$("$uih" log dump "$work/snap.log" | wc -l)" -eq 301 ] || fail "log dump: 301 records"
"$uih" load --store "$work/st" "$work/d2.csv" "$work/late.csv" >/dev/null 2>&1 || fail "load day 2 with the late events"

# Every record rebuilt as the model saw it: the two CSVs are the same file.
"$uih" materialize --store "$work/st" --log "$work/snap.log" --group engagement:48 --out "$work/rebuilt.csv" \
  2>"$work/mat.err" || { cat "$work/mat.err"; fail "materialize"; }
[ "$(wc -l <"$work/seen.csv")" -gt 301 ] || fail "no events seen"
diff "$work/seen.csv" "$work/rebuilt.csv" >"$work/diff" || { head "$work/diff"; fail "rebuilt sequences differ"; }
grep -q "0 mismatched" "$work/mat.err" || { cat "$work/mat.err"; fail "mismatches"; }
# Small batches rebuilt by two workers: the same file.
"$uih" materialize --store "$work/st" --log "$work/snap.log" --group engagement:48 --batch 7 --threads 2 \
  --out "$work/rebuilt2.csv" 2>/dev/null || fail "materialize --threads 2"
cmp -s "$work/seen.csv" "$work/rebuilt2.csv" || fail "rebuilt by two workers in batches of 7 differs"
# Without --group: every group (the others' headers are comments), whole.
"$uih" materialize --store "$work/st" --log "$work/snap.log" >"$work/all.csv" 2>/dev/null || fail "materialize all"
grep -v '^#' "$work/all.csv" | cmp -s "$work/seen.csv" - || fail "materialize without --group differs"
# Projected: the newest 5 events, ts and item_id.
"$uih" materialize --store "$work/st" --log "$work/snap.log" --group engagement:5 --traits item_id \
  >"$work/short.csv" 2>/dev/null || fail "projected materialize"
[ "$(head -1 "$work/short.csv")" = "record,user_id,group,ts,item_id" ] || { head -1 "$work/short.csv"; fail "projected header"; }
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "item_id") c = i; next}
  {n[$1]++; row[$1, n[$1]] = $1 "," $2 "," $3 "," $4 "," $c}
  END {for (k in n) for (j = (n[k] > 5 ? n[k] - 4 : 1); j <= n[k]; j++) print row[k, j]}' "$work/seen.csv" | sort >"$work/want5"
tail -n +2 "$work/short.csv" | sort >"$work/got5"
cmp -s "$work/want5" "$work/got5" || { diff "$work/want5" "$work/got5" | head; fail "projected sequences differ"; }

# A user erased since the snapshots: named under fail, flagged or skipped.
printf 'user_id\n7\n' >"$work/forget.csv"
"$uih" load --store "$work/st" --delete "$work/forget.csv" >/dev/null 2>&1 || fail "erase user 7"
if "$uih" materialize --store "$work/st" --log "$work/snap.log" --group engagement:48 --quiet 2>"$work/err"; then
  fail "a mismatch must fail by default"
fi
grep -q "user 7" "$work/err" || { cat "$work/err"; fail "the mismatch names the user"; }
grep -q "of the log)" "$work/err" || { cat "$work/err"; fail "the failing batch's records are named"; }
"$uih" materialize --store "$work/st" --log "$work/snap.log" --on-mismatch flag --quiet 2>"$work/err" || fail "flag"
grep -q "its user was erased since (empty)" "$work/err" || { cat "$work/err"; fail "flagged records"; }
"$uih" materialize --store "$work/st" --log "$work/snap.log" --on-mismatch skip --out "$work/skip.csv" 2>"$work/err" ||
  fail "skip"
grep -q "its user was erased since (empty)" "$work/err" || { cat "$work/err"; fail "skipped records"; }
awk -F, 'NR > 1 && $2 == 7' "$work/skip.csv" | grep -q . && fail "a skipped record's events are printed"
# A log cut mid-record: named by the reader; cut back by the next writer.
size=$(wc -c <"$work/snap.log")
head -c $((size - 3)) "$work/snap.log" >"$work/cut.log"
if "$uih" log dump "$work/cut.log" >/dev/null 2>"$work/err"; then fail "a cut log must fail"; fi
grep -q "record 300 at byte" "$work/err" || { cat "$work/err"; fail "the cut record is named"; }
"$uih" snapshot --store "$work/st" --user 5 --ts "$last" --group engagement:48 --log "$work/cut.log" --quiet \
  2>"$work/err" || { cat "$work/err"; fail "append after a torn tail"; }
grep -q "cut a torn last record" "$work/err" || { cat "$work/err"; fail "the torn tail is reported"; }
[ "$("$uih" log dump "$work/cut.log" | wc -l)" -eq 301 ] || fail "after the repair: 300 records and the new one"
# A damaged frame header (record 89's length and number): the reader says
# which record it lost and finds the next; later records keep their numbers.
off=$("$uih" log dump "$work/snap.log" | awk '$1 == 89 {print substr($2, 2)}')
[ -n "$off" ] || fail "record 89's offset"
cp "$work/snap.log" "$work/dmg.log"
printf '\377\377\377\377\377\377\377\377' | dd of="$work/dmg.log" bs=1 seek=$((off + 4)) conv=notrunc 2>/dev/null
if "$uih" log check "$work/dmg.log" >"$work/check.out" 2>"$work/err"; then fail "log check of a damaged log"; fi
grep -q "record 89 is lost" "$work/err" || { cat "$work/err"; fail "log check names the lost record"; }
grep -q ": snapshot log format 2: 300 records (numbers 0..300)" "$work/check.out" || { cat "$work/check.out"; fail "log check's summary"; }
if "$uih" materialize --store "$work/st" --log "$work/dmg.log" --group engagement:48 --quiet 2>"$work/err"; then
  fail "a damaged log must fail under --on-mismatch fail"
fi
grep -q "record 89 is lost" "$work/err" || { cat "$work/err"; fail "materialize names the lost record"; }
"$uih" materialize --store "$work/st" --log "$work/dmg.log" --group engagement:48 --on-mismatch flag \
  --out "$work/dmg.csv" 2>"$work/err" || { cat "$work/err"; fail "materialize --on-mismatch flag of a damaged log"; }
grep -q "lost: .*record 89 is lost" "$work/err" || { cat "$work/err"; fail "the lost record is reported"; }
grep -q "1 damaged spans of the log" "$work/err" || { cat "$work/err"; fail "the damaged span is counted"; }
# records of user 7 were erased since; every other record keeps its number and its sequence
awk -F, 'NR > 1 && $2 != 7 && $1 != 89' "$work/seen.csv" >"$work/want.csv"
awk -F, 'NR > 1 && $2 != 7' "$work/dmg.csv" >"$work/got.csv"
cmp -s "$work/want.csv" "$work/got.csv" || { diff "$work/want.csv" "$work/got.csv" | head; fail "records renumbered or changed"; }
awk -F, 'NR > 1 && $1 == 89' "$work/dmg.csv" | grep -q . && fail "the lost record is printed"

# A sealed (rotated) log: said so, refuses records; cut at its last frame's
# end, it reads as not sealed.
cp "$work/snap.log" "$work/sealed.log"
"$uih" log seal "$work/sealed.log" | grep -q "sealed after 301 records" || fail "log seal"
"$uih" log check "$work/sealed.log" | grep -q "301 records (numbers 0..300), sealed" || fail "log check of a sealed log"
if "$uih" snapshot --store "$work/st" --user 5 --ts "$last" --group engagement:48 --log "$work/sealed.log" --quiet \
  2>"$work/err"; then fail "a sealed log must take no record"; fi
grep -q "sealed (closed) after 301 records; start a new log" "$work/err" || { cat "$work/err"; fail "sealed: named"; }
head -c $(($(wc -c <"$work/sealed.log") - 24)) "$work/sealed.log" >"$work/unsealed.log"
"$uih" log check "$work/unsealed.log" | grep -q "301 records (numbers 0..300), not sealed" || fail "the cut seal"
echo "snapshot_roundtrip: ok"
