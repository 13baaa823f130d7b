#!/bin/sh
# How format2_store.tar.gz was made: by `uih` built at commit 11c4bc0 (store
# format 2, the mutable tier inside each shard's database), so that every
# later build is tested on a store it did not write. Run it with that
# build's uih as $UIH in an empty directory; the tarball holds the store
# (LOG files removed), a snapshot log and, in expected/, what that build
# read and rebuilt from them.
set -eu
S=${SCHEMA:-examples/feed.schema.json}
A=1700150000000
B=1700300000000
$UIH gen --schema $S --group engagement --users 40 --days 3 --seed 1 --out e.csv
$UIH gen --schema $S --group search --users 40 --days 3 --seed 2 --out s.csv
for f in e s; do
  for i in 1 2 3; do head -1 $f.csv > $f.$i.csv; done
  tail -n +2 $f.csv | awk -F, -v a=$A -v b=$B -v o=$f \
    '{ if ($3<=a) print >> o".1.csv"; else if ($3<=b) print >> o".2.csv"; else print >> o".3.csv" }'
done
$UIH init --store st --schema $S --shards 2
$UIH load --store st --through $A e.1.csv s.1.csv
$UIH append --store st e.2.csv s.2.csv
printf 'user_id\n7\n' > del.txt
$UIH load --store st --through $B --delete del.txt e.2.csv s.2.csv
$UIH append --store st e.3.csv s.3.csv
printf 'user_id,group,ts,query_id,results\n7,search,1700400000000,5,6\n' > late7.csv
$UIH append --store st late7.csv
mkdir -p expected
for u in 1 2 3 7 8 13 21 40; do
  for g in engagement search; do
    for t in all mutable immutable; do
      $UIH read --store st --user $u --group $g --tier $t --arrival > expected/$u.$g.$t.csv
    done
  done
  $UIH snapshot --store st --user $u --ts 1700450000000 --log snap.log --quiet > /dev/null
done
$UIH materialize --store st --log snap.log --out expected/materialized.csv
rm -f st/shard-*/LOG*
tar czf format2_store.tar.gz st snap.log expected
