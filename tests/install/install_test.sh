#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Installs the build into a scratch prefix, then checks what a downstream
# user gets: the files, the exported symbols, find_package (shared and
# static) and pkg-config.
set -eu
build=$1 src=$2 work=$3
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$prefix/lib
[ -d "$libdir" ] || libdir=$(dirname "$(find "$prefix" -name libuihstore.so | head -n 1)")
for f in "$prefix/bin/uih" "$prefix/include/uih/uih.h" "$libdir/libuihstore.so" \
         "$libdir/libuihstore.a" "$libdir/libuih_rocksdb.so" "$libdir/pkgconfig/uihstore.pc" \
         "$libdir/cmake/uihstore/uihstoreConfig.cmake"; do
  [ -e "$f" ] || { echo "install_test: missing $f"; exit 1; }
done

# The shared engine exports exactly the functions its public headers declare.
nm -D --defined-only "$libdir/libuihstore.so" | awk '{print $3}' | sed 's/@.*//' | grep -v '^UIHSTORE_0$' | sort -u >"$work/exported"
cat "$prefix"/include/uih/*.h | grep -oE '\buih_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u >"$work/declared"
leaked=$(comm -23 "$work/exported" "$work/declared")
[ -z "$leaked" ] || { echo "install_test: libuihstore.so exports symbols no public header declares:"; echo "$leaked"; exit 1; }
nm -D --defined-only "$libdir/libuihstore.so" | grep -q ' uih_schema_load' || { echo "install_test: uih_schema_load not exported"; exit 1; }

schema=$src/examples/feed.schema.json
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/consumer/consumer_shared" "$schema"
"$work/consumer/consumer_static" "$schema"

PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -o "$work/consumer_pc" "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs uihstore)
LD_LIBRARY_PATH=$libdir "$work/consumer_pc" "$schema"
"$prefix/bin/uih" key decode 000000000000002a00017fffffffffffffff
echo "install_test: ok"
