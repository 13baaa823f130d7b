#!/bin/sh
# exports_test.sh SOURCE_DIR ENGINE_SO PLUGIN_SO
# Each shared library exports exactly what its public headers declare (the
# plugin also its ROCKSDB_PLUGINS registrar and the sst_dump hook), and each
# version script lists exactly that: a helper cannot leak, a public function
# cannot go missing.
set -eu
src=$1 engine=$2 plugin=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "exports_test: $*"; exit 1; }

exported() { nm -D --defined-only "$1" | awk '$2 ~ /^[TWDBRVi]$/ {print $3}' | sed 's/@.*//' | sort -u; }
mapped() { sed -n '/global:/,/local:/p' "$1" | grep -oE '^ +[a-z_][a-z0-9_]* *;' | tr -d ' ;' | sort -u; }
headers() { (cd "$1" && ls uih/*.h); }
declared() { sh "$src/tests/exports/declared.sh" "$@"; }

# ---- libuihstore.so --------------------------------------------------------
declared "$src/engine/include" -- $(headers "$src/engine/include") >"$work/engine.declared"
exported "$engine" >"$work/engine.exported"
mapped "$src/engine/uihstore.map" >"$work/engine.mapped"
cmp -s "$work/engine.declared" "$work/engine.exported" || {
  echo "exported but not declared:"; comm -13 "$work/engine.declared" "$work/engine.exported"
  echo "declared but not exported:"; comm -23 "$work/engine.declared" "$work/engine.exported"
  fail "libuihstore.so exports differ from engine/include/uih/"
}
cmp -s "$work/engine.declared" "$work/engine.mapped" || {
  diff "$work/engine.declared" "$work/engine.mapped"
  fail "engine/uihstore.map differs from the functions engine/include/uih/ declares"
}

# ---- libuih_rocksdb.so -----------------------------------------------------
declared "$src/store/include" "$src/materialize/include" "$src/loader/include" "$src/engine/include" -- \
  $(headers "$src/store/include") $(headers "$src/materialize/include") $(headers "$src/loader/include") |
  comm -23 - "$work/engine.declared" >"$work/plugin.declared"
{ cat "$work/plugin.declared"; echo uih_rocksdb_register; } | sort -u >"$work/plugin.want"
# The one C++ symbol: RocksDB's own, replaced.
hook=_ZN7rocksdb13SstFileDumper28SetTableOptionsByMagicNumberEm
exported "$plugin" >"$work/plugin.exported"
grep -qx "$hook" "$work/plugin.exported" || fail "libuih_rocksdb.so does not export the sst_dump hook $hook"
grep -vx "$hook" "$work/plugin.exported" >"$work/plugin.c" || true
cmp -s "$work/plugin.want" "$work/plugin.c" || {
  echo "exported but not declared:"; comm -13 "$work/plugin.want" "$work/plugin.c"
  echo "declared but not exported:"; comm -23 "$work/plugin.want" "$work/plugin.c"
  fail "libuih_rocksdb.so exports differ from {store,materialize,loader}/include/uih/ + uih_rocksdb_register"
}
mapped "$src/cmake/uih_rocksdb.map" >"$work/plugin.mapped"
cmp -s "$work/plugin.want" "$work/plugin.mapped" || {
  diff "$work/plugin.want" "$work/plugin.mapped"
  fail "cmake/uih_rocksdb.map differs from {store,materialize,loader}/include/uih/ + uih_rocksdb_register"
}
echo "exports_test: ok ($(wc -l <"$work/engine.declared") engine functions, $(wc -l <"$work/plugin.want") plugin)"
