#!/bin/sh
# uih append / uih read as a user runs them: generated CSV appended twice
# (the retry changes nothing), read back per user equal to the input rows,
# and a bad file rejected with its line while what came before stays.
#   append_roundtrip.sh UIH SCHEMA WORKDIR
set -eu
uih=$1
schema=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
"$uih" gen --schema "$schema" --group engagement --users 40 --seed 5 --out "$work/day.csv" 2>/dev/null
"$uih" append --schema "$schema" --db "$work/db" "$work/day.csv" 2>"$work/summary"
grep -qE '^uih append: [0-9]+ events in [0-9]+ operands' "$work/summary" || { cat "$work/summary"; exit 1; }
# The retry: the same events again, from stdin, synced, in small writes.
"$uih" append --schema "$schema" --db "$work/db" --sync --write-events 7 - <"$work/day.csv" 2>"$work/summary2" \
  || { cat "$work/summary2"; exit 1; }
for user in $(tail -n +2 "$work/day.csv" | cut -d, -f1 | sort -u); do
  grep "^$user,engagement," "$work/day.csv" | sort -u >"$work/want"
  "$uih" read --schema "$schema" --db "$work/db" --user "$user" --group engagement | tail -n +2 | sort >"$work/got"
  cmp -s "$work/want" "$work/got" || { echo "user $user differs:"; diff "$work/want" "$work/got" | head; exit 1; }
done
printf 'user_id,group,ts,watch_ms\n900,engagement,5,1\n901,engagement,6,-1\n' >"$work/bad.csv"
if "$uih" append --schema "$schema" --db "$work/db" --write-events 1 "$work/bad.csv" 2>"$work/err"; then
  echo "append_roundtrip: a bad file was accepted"; exit 1
fi
grep -q "bad.csv:3: column 'watch_ms': expected an unsigned 32-bit integer, got '-1'" "$work/err" || { cat "$work/err"; exit 1; }
grep -q "1 events were appended before the error" "$work/err" || { cat "$work/err"; exit 1; }
"$uih" read --schema "$schema" --db "$work/db" --user 900 --group engagement | grep -q '^900,engagement,5,' \
  || { echo "append_roundtrip: the line before the error was not appended"; exit 1; }
echo "append_roundtrip: ok"
