#!/bin/sh
# Real logs as they are. A raw review log with string ids and RFC 3339 times,
# loaded in one command under a schema that says so ("user_ids":
# "string", "input": "string", "unit"/"input" on the timestamp): read
# back by the user's string (the same ids `uih hash` gives), snapshotted
# by the string, an erasure listed by strings, and every logged record
# rebuilt exactly (flagged only where an erasure took its events). A time the
# unit cannot hold exactly is refused with its line. A log of bursts (1,500
# events of one user at one timestamp, stripes of 256): loaded, read back
# whole, snapshotted at the burst's timestamp and after it with windows
# that end inside it, and rebuilt exactly. Raw layouts, each loaded in one
# command and read back exactly: a rating log with its own header, string
# ids, seconds (a map, a fixed group, its tab found); a headerless "::"
# log (MovieLens' ratings.dat); a JSON Lines dump with nested fields and
# RFC 3339 times, gzipped; the same appended to the mutable tier.
#   real_logs.sh UIH WORKDIR
set -eu
uih=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "real_logs: $*"; exit 1; }
cat >s.json <<'J'
{"name": "reviews", "version": 1, "user_ids": "string",
 "groups": [{"name": "ratings", "id": 1, "traits": [
   {"name": "ts", "id": 1, "type": "timestamp", "unit": "ms", "input": "rfc3339"},
   {"name": "item_id", "id": 2, "type": "id", "input": "string"},
   {"name": "rating", "id": 3, "type": "uint32"}]}]}
J
cat >day1.csv <<'C'
user_id,group,ts,item_id,rating
A2SUAM1J3GNN3B,ratings,2024-01-05T10:00:00Z,B00005N7P0,5
A2SUAM1J3GNN3B,ratings,2024-01-05T10:00:00.25+01:00,B00005N7P1,4
alice,ratings,2024-02-29T23:59:59.999Z,"B00,X",3
bob,ratings,2024-03-01T08:00:00-05:00,B00005N7P0,2
C
"$uih" init --store st --schema s.json --shards 2 >/dev/null
"$uih" load --store st day1.csv >/dev/null 2>&1 || fail "the load failed: $("$uih" load --store st day1.csv 2>&1)"
h() { "$uih" hash "$@"; }
a2=$(h A2SUAM1J3GNN3B) alice=$(h alice) b0=$(h B00005N7P0) b1=$(h B00005N7P1) bx=$(h 'B00,X')
"$uih" read --store st --user A2SUAM1J3GNN3B --group ratings >got.csv
printf 'user_id,group,ts,item_id,rating\n%s,ratings,1704445200250,%s,4\n%s,ratings,1704448800000,%s,5\n' \
  "$a2" "$b1" "$a2" "$b0" >want.csv
cmp -s want.csv got.csv || { diff want.csv got.csv; fail "the user read by its string differs"; }
[ "$("$uih" read --store st --user "$alice" --group ratings | wc -l)" = 1 ] \
  || fail "a user named by its hash's digits is another string, with no events"
"$uih" read --store st --user alice --group ratings | grep -q "^$alice,ratings,1709251199999,$bx,3$" \
  || fail "alice's event (a leap day, an item with a comma)"
# Snapshots by the string, one request file naming users by strings.
"$uih" snapshot --store st --user alice --ts 1709251200000 --log snap.log --quiet 2>/dev/null
printf 'user_id,request_ts\nalice,1709251200000\nbob,1709298000000\nA2SUAM1J3GNN3B,1704448800001\n' >req.csv
"$uih" snapshot --store st --requests req.csv --log snap.log --out snaps.csv 2>/dev/null
[ "$(grep -c ',ratings,' snaps.csv)" = 4 ] || { cat snaps.csv; fail "the requests' events"; }
# An erasure by strings: alice's whole history, and one item of everybody's.
printf 'user_id\nalice\n' >users.del
printf 'item_id\nB00005N7P1\n' >items.del
"$uih" load --store st --delete users.del >/dev/null 2>&1 || fail "erasing alice"
"$uih" load --store st --delete items.del >/dev/null 2>&1 || fail "erasing an item"
[ "$("$uih" read --store st --user alice --group ratings | wc -l)" = 1 ] || fail "alice was not erased"
"$uih" read --store st --user A2SUAM1J3GNN3B --group ratings | grep -q ",$b1," && fail "item B00005N7P1 was not erased"
# Every record rebuilds: alice's two flagged (her user was erased), the
# first user's (an item of its window was erased), bob's exactly.
"$uih" materialize --store st --log snap.log --on-mismatch flag --quiet 2>summary || { cat summary; fail "materialize"; }
grep -q "4 records of 2 user batches, 2 events, 3 mismatched" summary || { cat summary; fail "the rebuild's summary"; }
[ "$(grep -c "(user $alice): its user was erased since" summary)" = 2 ] || { cat summary; fail "alice's records"; }
grep -q "record 3 (user $a2): does not match the store (flagged)" summary || { cat summary; fail "the erased item"; }
# A time finer than the unit, and two rejects at once with --rejects.
printf 'user_id,group,ts,item_id,rating\ncarol,ratings,2024-01-01T00:00:00.0005Z,B1,1\ncarol,ratings,2024-01-01T00:00:00,B1,1\ncarol,ratings,2024-01-01T00:00:01Z,B1,1\n' >bad.csv
"$uih" load --store st bad.csv 2>err && fail "a time the unit cannot hold was loaded"
grep -q "bad.csv:2: column 'ts': expected a time in whole milliseconds (the trait's unit), got '2024-01-01T00:00:00.0005Z'" err \
  || { cat err; fail "the message of a time finer than the unit"; }
"$uih" load --store st --rejects rejects.csv bad.csv >/dev/null 2>&1 || fail "--rejects goes on"
grep -q "ending in Z or an offset" rejects.csv || { cat rejects.csv; fail "the offset-less time's reason"; }
[ "$("$uih" read --store st --user carol --group ratings | wc -l)" = 2 ] || fail "carol's one good event"
# Bursts: 1,500 events at one millisecond (a batch import), then 300 more
# at the next, and a few before; stripes hold 256.
awk 'BEGIN { print "user_id,group,ts,item_id,rating";
             for (i = 0; i < 40; i++) printf "dave,ratings,2024-03-01T00:00:%02dZ,I%d,%d\n", i % 60, i, i % 5;
             for (i = 0; i < 1500; i++) printf "dave,ratings,2024-03-02T00:00:00Z,B%d,%d\n", i, i % 5;
             for (i = 0; i < 300; i++) printf "dave,ratings,2024-03-02T00:00:00.001Z,C%d,%d\n", i, i % 5 }' >burst.csv
"$uih" load --store st burst.csv >/dev/null 2>err || { cat err; fail "the burst log did not load"; }
[ "$("$uih" read --store st --user dave --group ratings | tail -n +2 | wc -l)" = 1840 ] || fail "dave's 1,840 events"
[ "$("$uih" read --store st --user dave --group ratings --from 1709337600000 --to 1709337600000 | tail -n +2 | wc -l)" = 1500 ] \
  || fail "the burst read by its timestamp"
# Requests at the burst's millisecond, and just after each burst, with windows ending inside the burst.
printf 'user_id,request_ts\ndave,1709337600000\ndave,1709337600001\ndave,1709337600002\n' >breq.csv
for g in ratings:1000 ratings:1600 ratings:2000; do
  "$uih" snapshot --store st --requests breq.csv --group $g --log burst.log --out b_seen.csv 2>/dev/null || fail "snapshot $g"
  "$uih" materialize --store st --log burst.log --group $g --out b_rebuilt.csv 2>/dev/null || fail "materialize $g"
  cmp -s b_seen.csv b_rebuilt.csv || { diff b_seen.csv b_rebuilt.csv | head; fail "a window inside a burst ($g) rebuilt differently"; }
  rm burst.log
done
# The burst moves into another generation under later loads; a load of more at its millisecond grows it.
awk 'BEGIN { print "user_id,group,ts,item_id,rating"; for (i = 0; i < 100; i++) printf "dave,ratings,2024-03-02T00:00:00Z,D%d,1\n", i }' >more.csv
"$uih" load --store st more.csv >/dev/null 2>&1 || fail "growing the burst"
[ "$("$uih" read --store st --user dave --group ratings --from 1709337600000 --to 1709337600000 | tail -n +2 | wc -l)" = 1600 ] \
  || fail "the grown burst"
# Raw layouts. One schema: string users and items, times in seconds stored as ms.
cat >raw.json <<'J'
{"name": "raw", "version": 1, "user_ids": "string",
 "groups": [{"name": "ratings", "id": 1, "traits": [
   {"name": "ts", "id": 1, "type": "timestamp", "unit": "ms", "input": "s"},
   {"name": "item_id", "id": 2, "type": "id", "input": "string"},
   {"name": "rating", "id": 3, "type": "uint32"}]}]}
J
"$uih" init --store raw --schema raw.json >/dev/null
printf 'userId\tmovieId\trating\ttimestamp\ttitle\nA1\tB1\t5\t978300760\tToy Story, 1995\nA1\tB2\t3\t978302109\tJumanji\n' >ratings.tsv
"$uih" load --store raw --group ratings --map 'user_id=userId,item_id=movieId,rating=rating,ts=timestamp' ratings.tsv \
  >/dev/null 2>err || { cat err; fail "a mapped TSV"; }
printf 'user_id,group,ts,item_id,rating\n%s,ratings,978300760000,%s,5\n%s,ratings,978302109000,%s,3\n' \
  "$(h A1)" "$(h B1)" "$(h A1)" "$(h B2)" >want.csv
"$uih" read --store raw --user A1 --group ratings >got.csv
cmp -s want.csv got.csv || { diff want.csv got.csv; fail "the mapped TSV read back"; }
printf 'A2::B1::4::978300761\nA2::B3::2::978300762\n' >ratings.dat
printf '# MovieLens ratings.dat\nuser_id = u\nitem_id = m   # movies\nrating = r\nts = t\n' >ml.map
"$uih" load --store raw --group ratings --delimiter '::' --columns u,m,r,t --map ml.map ratings.dat >/dev/null 2>err \
  || { cat err; fail "a headerless :: log"; }
"$uih" read --store raw --user A2 --group ratings | grep -q "^$(h A2),ratings,978300762000,$(h B3),2$" || fail "the :: log read back"
printf '{"user": {"id": "A3"}, "item": "B1", "stars": 1, "time": 978300763}\n{"user": {"id": "A3"}, "item": "B4", "stars": 2, "time": 978300764, "extra": {"a": [1]}}\n' | gzip >dump.jsonl.gz
"$uih" load --store raw --group ratings --map 'user_id=user.id,item_id=item,rating=stars,ts=time' dump.jsonl.gz \
  >/dev/null 2>err || { cat err; fail "a gzipped JSON Lines dump"; }
[ "$("$uih" read --store raw --user A3 --group ratings | tail -n +2 | wc -l)" = 2 ] || fail "the JSON Lines dump read back"
# JSON Lines named as the schema names its fields: no layout flag at all.
printf '{"user_id": "A5", "group": "ratings", "ts": 978300770, "item_id": "B9", "rating": 3}\n' >plain.ndjson
"$uih" load --store raw plain.ndjson >/dev/null 2>err || { cat err; fail "JSON Lines by its name alone"; }
"$uih" read --store raw --user A5 --group ratings | grep -q ",978300770000,$(h B9),3$" || fail "the .ndjson line"
printf '{"user": {"id": "A3"}, "item": "B5", "stars": 4, "time": 978400000}\n' >late.jsonl
"$uih" append --store raw --group ratings --map 'user_id=user.id,item_id=item,rating=stars,ts=time' late.jsonl \
  2>err || { cat err; fail "appending JSON Lines"; }
"$uih" read --store raw --user A3 --group ratings --tier mutable | grep -q ",978400000000,$(h B5),4$" || fail "the appended line"
echo "real_logs: ok"
