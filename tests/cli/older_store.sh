#!/bin/sh
# A store written by an older build (format 2: the mutable tier inside each
# shard's database; tests/store/data/make_format2_store.sh) reads as that
# build read it: every user's events of each tier, and every logged record
# rebuilt. A read-only open writes nothing. The first writable open (here
# `uih append`, a serving open) moves each mutable tier into mutable-NNNN/
# (format 3), after which everything reads the same, and a load on top
# moves the mutable events below its through into the immutable tier
# without losing or repeating one.
#   older_store.sh UIH FIXTURE WORKDIR
set -eu
uih=$1 fixture=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
tar xzf "$fixture"
fail() { echo "older_store: $*"; exit 1; }
state() { find "$1" -printf '%P %s %m %T@\n' | sort; }
# same_reads [noarrival]: every expected read, read again.
same_reads() {
  for f in expected/*.*.*.csv; do
    b=$(basename "$f" .csv)
    u=${b%%.*} rest=${b#*.}
    g=${rest%%.*} t=${rest#*.}
    if [ "${1:-}" = noarrival ]; then
      [ "$t" = all ] || continue
      "$uih" read --store st --user "$u" --group "$g" --tier all > got.csv 2>&1 || fail "read $b: $(cat got.csv)"
      sed 's/,[^,]*$//' "$f" > want.csv
    else
      "$uih" read --store st --user "$u" --group "$g" --tier "$t" --arrival > got.csv 2>&1 ||
        fail "read $b: $(cat got.csv)"
      cp "$f" want.csv
    fi
    cmp -s got.csv want.csv || { diff want.csv got.csv | head; fail "read $b differs ${1:-}"; }
  done
  "$uih" materialize --store st --log snap.log --out got.csv 2> mat.err || fail "materialize: $(cat mat.err)"
  cmp -s got.csv expected/materialized.csv || { diff expected/materialized.csv got.csv | head; fail "rebuilt records differ"; }
}

before=$(state st)
same_reads
"$uih" status --store st > status.txt 2>&1 || fail "status: $(cat status.txt)"
[ "$before" = "$(state st)" ] || fail "reading the older store wrote to it"
[ ! -e st/mutable-0000 ] || fail "a read-only open moved the mutable tier"

# A writable open moves the mutable tiers.
printf 'user_id,group,ts,query_id,results\n' > empty.csv
"$uih" append --store st empty.csv > append.out 2>&1 || fail "append: $(cat append.out)"
[ -f st/mutable-0000/CURRENT ] && [ -f st/mutable-0001/CURRENT ] || fail "no mutable-NNNN databases after a writable open"
same_reads
grep -q "watermark 1700300000000" status.txt || fail "status before the move: $(cat status.txt)"
"$uih" status --store st > status2.txt 2>&1 || fail "status: $(cat status2.txt)"
grep -q "watermark 1700300000000" status2.txt || fail "status after the move: $(cat status2.txt)"

# A load on top: the mutable events up to its through become the
# generation's; the reads (arrival aside) stay the same.
tar xzf "$fixture" expected
for g in engagement search; do
  for u in 1 2 3 7 8 13 21 40; do
    "$uih" read --store st --user "$u" --group "$g" --tier mutable | tail -n +2
  done > "mut.$g.body"
done
{ echo "user_id,group,ts,item_id,event_type,watch_ms,liked,commented,shared,item_category"; cat mut.engagement.body; } > day3e.csv
{ echo "user_id,group,ts,query_id,results"; cat mut.search.body; } > day3s.csv
[ "$(cat mut.*.body | wc -l)" -gt 20 ] || fail "too few mutable events to move: $(cat mut.*.body | wc -l)"
"$uih" load --store st --through 1700500000000 day3e.csv day3s.csv > load.out 2>&1 || fail "load: $(cat load.out)"
same_reads noarrival
echo "older_store: ok"
