#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Installs the build into a scratch prefix, then checks what a downstream
# user gets: the files, and a consumer of each library (the engine, shared
# and static; the RocksDB glue's C API) built through find_package and
# through pkg-config, and examples/inference_service.c through pkg-config. (tests/exports/ checks what each library exports.)
set -eu
build=$1 src=$2 work=$3
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$prefix/lib
[ -d "$libdir" ] || libdir=$(dirname "$(find "$prefix" -name libuihstore.so | head -n 1)")
for f in "$prefix/bin/uih" "$prefix/include/uih/uih.h" "$prefix/include/uih/mutable.h" \
         "$libdir/libuihstore.so" "$libdir/libuihstore.a" "$libdir/libuih_rocksdb.so" \
         "$libdir/pkgconfig/uihstore.pc" "$libdir/pkgconfig/uih_rocksdb.pc" \
         "$libdir/cmake/uihstore/uihstoreConfig.cmake"; do
  [ -e "$f" ] || { echo "install_test: missing $f"; exit 1; }
done

schema=$src/examples/feed.schema.json
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/consumer/consumer_shared" "$schema"
"$work/consumer/consumer_static" "$schema"
LD_LIBRARY_PATH=$libdir "$work/consumer/consumer_mutable" "$schema" "$work/store-cmake"

PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -o "$work/consumer_pc" "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs uihstore)
LD_LIBRARY_PATH=$libdir "$work/consumer_pc" "$schema"
# shellcheck disable=SC2046
cc -std=c11 -o "$work/mutable_pc" "$src/tests/install/consumer/mutable_consumer.c" $(pkg-config --cflags --libs uih_rocksdb)
LD_LIBRARY_PATH=$libdir "$work/mutable_pc" "$schema" "$work/store-pc"
# The embedding example, as a user builds it against the installed package.
# shellcheck disable=SC2046
cc -std=c11 -pthread -o "$work/inference_service_pc" "$src/examples/inference_service.c" \
  $(pkg-config --cflags --libs uih_rocksdb)
LD_LIBRARY_PATH=$libdir "$work/inference_service_pc" --help | grep -q "usage: inference_service"
"$prefix/bin/uih" key decode 000000000000002a00017fffffffffffffff
echo "install_test: ok"
