#!/bin/sh
# uih init / load / status / read / append --store as a user runs them: two
# days loaded (the second as .gz, with the first day repeated: kept once),
# every user's history read back from the store equal to the input rows (and
# again after the dictionaries are rebuilt),
# the mutable tier on top, and refused options with their exit codes.
#   store_roundtrip.sh UIH SCHEMA WORKDIR
set -eu
uih=$1
schema=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "store_roundtrip: $*"; exit 1; }
"$uih" gen --schema "$schema" --group engagement --users 60 --days 2 --seed 3 --out "$work/d1.csv" 2>/dev/null
last=$(tail -n +2 "$work/d1.csv" | cut -d, -f3 | sort -n | tail -1)
"$uih" gen --schema "$schema" --group engagement --users 60 --days 1 --seed 4 --start-ts $((last + 1)) \
  --out "$work/d2.csv" 2>/dev/null
gzip -k "$work/d2.csv"
"$uih" init --store "$work/st" --schema "$schema" --shards 3 >/dev/null
"$uih" load --store "$work/st" "$work/d1.csv" >"$work/sum1" 2>/dev/null || { cat "$work/sum1"; fail "load 1"; }
grep -q "^  stripes: 0 copied byte for byte" "$work/sum1" || { cat "$work/sum1"; fail "summary 1"; }
"$uih" load --store "$work/st" --json "$work/d1.csv" "$work/d2.csv.gz" >"$work/sum2" 2>/dev/null \
  || { cat "$work/sum2"; fail "load 2"; }
n1=$(($(wc -l <"$work/d1.csv") - 1))
grep -q "\"duplicates\":$n1," "$work/sum2" || { cat "$work/sum2"; fail "day 1 again should be $n1 duplicates"; }
"$uih" status --store "$work/st" | grep -q "^shard 2: generation 2 current" || fail "status"
check_reads() {
  for user in $(tail -n +2 "$work/d1.csv" | cut -d, -f1 | sort -u); do
    cat "$work/d1.csv" "$work/d2.csv" | grep "^$user,engagement," | sort -u >"$work/want"
    "$uih" read --store "$work/st" --user "$user" --group engagement --tier immutable | tail -n +2 | sort >"$work/got"
    cmp -s "$work/want" "$work/got" || { echo "user $user differs ($1):"; diff "$work/want" "$work/got" | head; exit 1; }
  done
}
check_reads "after two loads"
# Dictionaries rebuilt from the whole history (no input files): every stripe
# written again, the same events read back.
"$uih" load --store "$work/st" --rebuild-dictionaries --json >"$work/sumr" 2>/dev/null \
  || { cat "$work/sumr"; fail "rebuild"; }
grep -q '"stripes_copied":0,' "$work/sumr" && grep -q '"rebuilt":true' "$work/sumr" \
  && grep -q '"events_new":0,' "$work/sumr" \
  || { cat "$work/sumr"; fail "rebuild summary"; }
check_reads "after a rebuild"
# The mutable tier above the watermark, read with the rest through --tier all.
user=$(tail -n +2 "$work/d1.csv" | head -1 | cut -d, -f1)
printf 'user_id,group,ts,item_id\n%s,engagement,%s,77\n' "$user" $((last + 10 * 86400000)) >"$work/now.csv"
"$uih" append --store "$work/st" "$work/now.csv" 2>/dev/null
"$uih" read --store "$work/st" --user "$user" --group engagement | tail -1 | grep -q "^$user,engagement,$((last + 10 * 86400000)),77," \
  || fail "the mutable event is not last in --tier all"
# Right to delete: the user with the mutable event leaves both tiers (a load
# of deletions alone, no input files).
printf 'user_id\n%s\n' "$user" >"$work/del.csv"
"$uih" load --store "$work/st" --delete "$work/del.csv" --json >"$work/sum3" 2>/dev/null || { cat "$work/sum3"; fail "delete load"; }
grep -q '"deletions":{"users":1,"items":0,"pairs":0}' "$work/sum3" || { cat "$work/sum3"; fail "deletions summary"; }
[ "$("$uih" read --store "$work/st" --user "$user" --group engagement | tail -n +2 | wc -l)" -eq 0 ] \
  || fail "an erased user is still read"
# --rejects: the bad line goes to the rejects file and the good one is loaded;
# strict, the same file fails naming its line; --schema with the store's own
# schema is no change; a schema that is no schema is refused.
last2=$(tail -n +2 "$work/d2.csv" | cut -d, -f3 | sort -n | tail -1)
printf 'user_id,group,ts,item_id\n9,engagement,%s,5\nx,engagement,%s,6\n' $((last2 + 5)) $((last2 + 6)) >"$work/bad.csv"
set +e
"$uih" load --store "$work/st" "$work/bad.csv" >/dev/null 2>"$work/err"; [ $? -eq 1 ] || fail "a bad line should fail the load"
grep -q "$work/bad.csv:3: column 'user_id'" "$work/err" || { cat "$work/err"; fail "strict message"; }
"$uih" load --store "$work/st" --rejects "$work/rej.csv" --schema "$schema" --json "$work/bad.csv" >"$work/sum4" 2>"$work/err"
[ $? -eq 0 ] || { cat "$work/err"; fail "a load with --rejects"; }
grep -q '"rejected":1,' "$work/sum4" || { cat "$work/sum4"; fail "rejected count"; }
[ "$(tail -n +2 "$work/rej.csv")" = "$work/bad.csv,3,\"column 'user_id': expected an unsigned 64-bit integer, got 'x'\",\"x,engagement,$((last2 + 6)),6\"" ] \
  || { cat "$work/rej.csv"; fail "rejects file"; }
"$uih" load --store "$work/st" --schema "$work/d1.csv" "$work/bad.csv" >/dev/null 2>"$work/err"; [ $? -eq 1 ] || fail "a bad schema"
grep -q "$work/d1.csv" "$work/err" || { cat "$work/err"; fail "bad schema message"; }
"$uih" load --store "$work/nostore" "$work/d1.csv" 2>"$work/err"; [ $? -eq 1 ] || fail "a missing store should exit 1"
grep -q "not a uihstore store: $work/nostore: it does not exist" "$work/err" || { cat "$work/err"; fail "message"; }
# The mutable tier's chunks: the span shows in status; a store of one-minute
# chunks reads a day of appended events back as they were; a span of 0 is
# a usage error.
"$uih" status --store "$work/st" | grep -q "^shard 0: .* in chunks of 3600000$" || fail "status: the chunk span"
"$uih" init --store "$work/st0" --schema "$schema" --chunk-span 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--chunk-span 0"
"$uih" init --store "$work/st2" --schema "$schema" --chunk-span 60000 >/dev/null || fail "init --chunk-span"
"$uih" status --store "$work/st2" | grep -q "^shard 0: .* in chunks of 60000$" || fail "status of st2"
"$uih" append --store "$work/st2" "$work/d2.csv" 2>/dev/null || fail "append to st2"
for user in $(tail -n +2 "$work/d2.csv" | cut -d, -f1 | sort -u | head -20); do
  grep "^$user,engagement," "$work/d2.csv" | sort -u >"$work/want"
  "$uih" read --store "$work/st2" --user "$user" --group engagement --tier mutable | tail -n +2 | sort >"$work/got"
  cmp -s "$work/want" "$work/got" || { echo "user $user differs in st2:"; diff "$work/want" "$work/got" | head; exit 1; }
done
# Shard by shard in three processes at once (--shard opens that shard
# alone): the generations are those of the whole-store load of the same days.
"$uih" init --store "$work/sh" --schema "$schema" --shards 3 >/dev/null
for day in d1.csv d2.csv.gz; do
  for s in 0 1 2; do "$uih" load --store "$work/sh" --shard $s "$work/$day" >"$work/sh$s" 2>&1 & done
  for s in 0 1 2; do wait %$((s + 1)) || { cat "$work/sh$s"; fail "load --shard $s of $day"; }; done
done
"$uih" init --store "$work/whole" --schema "$schema" --shards 3 >/dev/null
"$uih" load --store "$work/whole" "$work/d1.csv" >/dev/null 2>&1 || fail "whole load 1"
"$uih" load --store "$work/whole" "$work/d2.csv.gz" >/dev/null 2>&1 || fail "whole load 2"
gens() { "$uih" status --store "$1" --json | sed 's/"immutable_bytes":[0-9]*//g; s/^.*"shards"://'; }
[ "$(gens "$work/sh")" = "$(gens "$work/whole")" ] || { gens "$work/sh"; gens "$work/whole"; fail "--shard loads differ"; }
gens "$work/sh" | grep -q '"generation":2,' || fail "no second generation in $(gens "$work/sh")"
# The second day's load wrote a layer above the first day's files (status says how many).
gens "$work/whole" | grep -q '"generation":2,[^}]*"layers":2,"files":2}' || fail "day 2 is no layer: $(gens "$work/whole")"
# The scrub: a whole store verifies (and is left as it was); a changed
# byte in a generation's table file is named with its users; --help.
"$uih" verify --help | grep -q "^usage: uih verify --store DIR" || fail "verify --help"
state() { find "$1" -printf '%P %s %m %T@\n' | sort; }
before=$(state "$work/whole")
"$uih" verify --store "$work/whole" >"$work/out" || { cat "$work/out"; fail "verify of a whole store"; }
grep -q "^uih verify: nothing is damaged$" "$work/out" || fail "verify: $(cat "$work/out")"
[ "$before" = "$(state "$work/whole")" ] || fail "verify wrote to the store"
"$uih" verify --store "$work/whole" --json | grep -q '^{"store":".*","ok":true,"damaged":0,' || fail "verify --json"
table=$(for f in "$work"/whole/shard-0001/*.sst; do
          [ "$(tail -c 8 "$f")" = "1lbaTHIU" ] && echo "$f"; done | head -1)
[ -n "$table" ] || fail "no generation table in shard 1"
printf 'DAMAGED!' | dd of="$table" bs=1 seek=40 conv=notrunc 2>/dev/null
"$uih" verify --store "$work/whole" >"$work/out" 2>"$work/err"; [ $? -eq 1 ] || fail "verify of a damaged store"
grep -q "^DAMAGED  shard-0001/$(basename "$table"): generation table (generation [0-9]*), users [0-9]*\.\.[0-9]*" \
  "$work/out" || { cat "$work/out"; fail "verify names the damaged file"; }
grep -q "^uih: store .*: 1 of [0-9]* checked are damaged" "$work/err" || { cat "$work/err"; fail "verify's error"; }
echo "store_roundtrip: ok"
