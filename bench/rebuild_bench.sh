#!/bin/sh
# rebuild_bench.sh: what `uih load --rebuild-dictionaries` buys and costs,
# next to the day's plain load it follows, in one run.
#
#   bench/rebuild_bench.sh [BUILD_DIR] [USERS] [WORKDIR]
#
# Data: `uih gen` on the real shape (bench/stripe_bench.real.schema.json:
# short histories, day-granular timestamps, Zipf item ids hashed to 40 bits,
# 5 traits), USERS (default 20000) users on day 1, as many on day 2 of whom
# half are day 1's. Two cases: day 2's items from the same catalog, and from
# a new one (every id of day 2 mapped to another by a bijection of 40 bits:
# the same popularity, ids the day-1 dictionaries have never seen, as when
# a catalog turns over). For each: a fresh store of 2 shards, day 1 loaded,
# day 2 loaded (its dictionaries carried from day 1: the baseline), then a
# rebuild with no inputs. Prints bytes per event (stripes + dictionaries) and
# merge+publish seconds of the day-2 load and of the rebuild.
set -eu
build=${1:-build/release}
users=${2:-20000}
work=${3:-/tmp/uih-rebuild-bench}
here=$(cd "$(dirname "$0")" && pwd)
uih=$build/cli/uih
schema=$here/stripe_bench.real.schema.json
rm -rf "$work"
mkdir -p "$work"
"$uih" gen --schema "$schema" --group ratings --users "$users" --seed 1 --days 10 --out "$work/d1.csv" 2>/dev/null
"$uih" gen --schema "$schema" --group ratings --users "$users" --seed 2 --days 10 --first-user $((users / 2)) \
  --out "$work/d2.csv" 2>/dev/null
python3 - "$work/d2.csv" "$work/d2new.csv" <<'PY'
import csv, sys
mask = (1 << 40) - 1
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as g:
    r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
    header = next(r)
    w.writerow(header)
    col = header.index("item_id")
    for row in r:
        if row[col]:
            row[col] = str((int(row[col]) * 0x9E3779B1 + 12345) & mask)
        w.writerow(row)
PY
for day2 in d2 d2new; do
  st=$work/st-$day2
  "$uih" init --store "$st" --schema "$schema" --shards 2 >/dev/null
  "$uih" load --store "$st" --json "$work/d1.csv" >/dev/null 2>&1
  "$uih" load --store "$st" --json "$work/$day2.csv" >"$work/$day2.load.json" 2>/dev/null
  "$uih" load --store "$st" --json --rebuild-dictionaries >"$work/$day2.rebuild.json" 2>/dev/null
  python3 - "$day2" "$work/$day2.load.json" "$work/$day2.rebuild.json" <<'PY'
import json, sys
case = "same catalog" if sys.argv[1] == "d2" else "new catalog"
runs = [("day-2 load", json.load(open(sys.argv[2]))), ("rebuild", json.load(open(sys.argv[3])))]
base = None
for name, s in runs:
    e = s["events"]
    total = (s["bytes"] + s["dictionaries"]["bytes"]) / e
    base = base or total
    print("%-12s %-10s %9d events: stripes %5.2f + dictionaries %4.2f = %5.2f bytes/event (%.3fx the load's); "
          "merge+publish %5.2f s; %d stripes copied, %d written"
          % (case, name, e, s["bytes"] / e, s["dictionaries"]["bytes"] / e, total, base / total,
             s["seconds"]["merge"], s["stripes_copied"], s["stripes_written"]))
PY
done
