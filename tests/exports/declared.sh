#!/bin/sh
# declared.sh INCLUDE_DIR [INCLUDE_DIR...] -- HEADER...
# Prints, one per line and sorted, the functions the headers declare: names
# at file scope followed by "(", outside function bodies, in declarations
# that are neither static (inline helpers) nor typedefs. The headers are
# preprocessed as C first, so comments and macros cannot fool it.
set -eu
incs=""
while [ "$1" != "--" ]; do incs="$incs -I$1"; shift; done
shift
for h in "$@"; do
  # shellcheck disable=SC2086
  printf '#include "%s"\n' "$h" | ${CC:-cc} -std=c11 -E -P $incs -x c - | awk -v src="$h" '
    { text = text " " $0 }
    END {
      depth = 0; stmt = ""
      n = length(text)
      for (i = 1; i <= n; i++) {
        ch = substr(text, i, 1)
        if (ch == "{") { if (depth == 0 && stmt ~ /\)[ \t]*$/) body = 1; depth++; if (depth == 1 && !body) stmt = stmt ch; continue }
        if (ch == "}") { depth--; if (depth == 0) { if (body) { stmt = ""; body = 0 } else stmt = stmt ch } continue }
        if (depth > 0 && body) continue
        if (depth == 0 && ch == ";") { emit(stmt); stmt = ""; continue }
        stmt = stmt ch
      }
    }
    function emit(s,   name, before) {
      if (s ~ /(^|[^a-z_])(static|typedef)[^a-z_]/) return
      if (s ~ /[{}]/) return
      while (match(s, /uih_[a-z0-9_]+[ \t]*\(/)) {
        name = substr(s, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
        # a function declarator: the name directly before its parameter list,
        # not a function pointer "(*name)(...)"
        before = substr(s, 1, RSTART - 1); sub(/[ \t]+$/, "", before)
        if (before !~ /\([ \t]*\*$/) print name
        break
      }
    }'
done | sort -u
