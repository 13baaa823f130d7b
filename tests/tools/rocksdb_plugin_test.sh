#!/bin/sh
# rocksdb_plugin_test.sh SOURCE_DIR BUILD_DIR LIB WORK_DIR
# Checks the ROCKSDB_PLUGINS fragments the way RocksDB 7.8.3 reads them:
# the Makefile includes plugin/uih.mk, the CMake build add_subdirectory()s
# plugin/ and reads uih_SOURCES; both call uih_FUNC, which RocksDB declares
# as int f(ROCKSDB_NAMESPACE::ObjectLibrary&, const std::string&).
set -eu
src=$1 build=$2 lib=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "rocksdb_plugin_test: $*"; exit 1; }

# Makefile fragment: every source exists, the registrar is exported with
# the C++ signature RocksDB's generated code declares.
cat >"$work/Makefile" <<MK
include $src/plugin/uih.mk
show:
	@echo "\$(uih_SOURCES)"
	@echo "\$(uih_FUNC)"
MK
out=$(make -s -C "$work" show)
sources=$(echo "$out" | sed -n 1p)
func=$(echo "$out" | sed -n 2p)
[ -n "$sources" ] || fail "uih.mk defines no uih_SOURCES"
for f in $sources; do [ -f "$src/plugin/$f" ] || fail "uih.mk lists $f, which does not exist"; done
# ...and every library source of plugin/ is listed, but two:
for f in "$src"/plugin/*.cc; do
  f=$(basename "$f")
  # sst_tool.cc is the uih-sst tool; sst_dump_hook.cc replaces a member an
  # in-tree RocksDB defines itself (only the preloaded library has it).
  case "$f" in sst_tool.cc|sst_dump_hook.cc) continue ;; esac
  case " $sources " in *" $f "*) ;; *) fail "uih.mk does not list plugin/$f" ;; esac
done
nm -DC "$lib" | grep -q " T $func(rocksdb::ObjectLibrary&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)" \
  || fail "$func is not exported with RocksDB's registrar signature"

# CMake fragment, from a project that does what RocksDB's CMakeLists.txt
# does with ROCKSDB_PLUGINS=uih (needs the installed engine's uihstore.pc).
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name uihstore.pc | head -n 1)")
mkdir -p "$work/fake-rocksdb"
cat >"$work/fake-rocksdb/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.10)
project(rocksdb CXX)
add_subdirectory("$src/plugin" plugin/uih)
foreach(s \${uih_SOURCES})
  if(NOT EXISTS "$src/plugin/\${s}")
    message(FATAL_ERROR "uih_SOURCES lists \${s}, which does not exist")
  endif()
endforeach()
message(STATUS "uih sources: \${uih_SOURCES}")
message(STATUS "uih libs: \${uih_LIBS}")
CM
PKG_CONFIG_PATH=$pc cmake -S "$work/fake-rocksdb" -B "$work/fake-build" >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log"; fail "configuring the plugin the way RocksDB does failed"; }
cmake_sources=$(sed -n 's/^-- uih sources: //p' "$work/cmake.log" | tr ';' ' ')
[ "$(echo $cmake_sources)" = "$(echo $sources)" ] \
  || fail "the CMake fragment lists '$cmake_sources', uih.mk '$sources'"
grep -q "uih libs: .*uihstore" "$work/cmake.log" || fail "the CMake fragment does not link the engine"
echo "rocksdb_plugin_test: ok"
