#!/bin/sh
# rocksdb_plugin_test.sh SOURCE_DIR BUILD_DIR LIB WORK_DIR ROCKSDB_SRC ROCKSDB_LIB DEFINES
# Checks the ROCKSDB_PLUGINS fragments (plugin/uih.mk, plugin/CMakeLists.txt)
# with RocksDB 7.8.3's own plugin logic, read from its source tree at run
# time (nothing of it is kept here):
#   - CMake: the `if ( ROCKSDB_PLUGINS )` block (add_subdirectory, then
#     ${plugin}_SOURCES/_INCLUDE_PATHS/_LIBS) and the block that parses
#     plugin/<name>/<name>.mk with regular expressions;
#   - Make: the ROCKSDB_PLUGIN_* variables and the pkg-config flags;
# then compiles what the CMake logic lists, with RocksDB's generated
# util/build_version.cc (which declares the registrar), and links it as a
# shared library with -Wl,--no-undefined against the fragments' libraries
# and Debian's librocksdb, once with the CMake logic's libraries and once
# with the Makefile's LDFLAGS. A fragment that lists a bogus file, misses a
# library or declares the registrar differently fails here.
# DEFINES: RocksDB's compile defines, separated by ',' (cmake/RocksDBInternal.cmake).
set -eu
src=$1 build=$2 lib=$3 work=$4 rocksdb=$5 rocksdb_lib=$6 defines=$7
rm -rf "$work"
mkdir -p "$work"
fail() { echo "rocksdb_plugin_test: $*"; exit 1; }
[ -f "$rocksdb/CMakeLists.txt" ] && [ -f "$rocksdb/Makefile" ] || fail "no RocksDB source tree at $rocksdb"

# The registrar has C linkage: RocksDB declares it inside extern "C".
nm -D "$lib" | grep -qE " T uih_rocksdb_register(@@[A-Z0-9_]+)?$" \
  || fail "uih_rocksdb_register is not exported with C linkage (RocksDB declares it extern \"C\")"

# The installed engine, whose uihstore.pc both fragments read.
cmake --install "$build" --prefix "$work/prefix" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$work/prefix" -name uihstore.pc | head -n 1)")
export PKG_CONFIG_PATH
# A RocksDB tree as a user sets it up: plugin/uih is our plugin/ folder.
tree="$work/rocksdb"
mkdir -p "$tree/plugin"
ln -s "$src/plugin" "$tree/plugin/uih"

# ---- RocksDB's CMake logic -------------------------------------------------
# The two blocks, cut out of RocksDB's CMakeLists.txt by their first lines.
awk '/^if \( ROCKSDB_PLUGINS \)/ {on = 1} on {print} on && /^endif\(\)/ {exit}' \
  "$rocksdb/CMakeLists.txt" >"$work/plugins_subdir.cmake"
awk '/^set\(ROCKSDB_PLUGIN_EXTERNS ""\)/ {on = 1} on {print} on && /^endforeach\(\)/ {exit}' \
  "$rocksdb/CMakeLists.txt" >"$work/plugins_mk.cmake"
grep -q "add_subdirectory" "$work/plugins_subdir.cmake" || fail "RocksDB's plugin block not found in CMakeLists.txt"
grep -q "PLUGINMK" "$work/plugins_mk.cmake" || fail "RocksDB's .mk parsing block not found in CMakeLists.txt"
cp "$rocksdb/util/build_version.cc.in" "$work/build_version.cc.in"

cat >"$tree/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(rocksdb CXX)
set(CMAKE_CXX_STANDARD 17)
set(ROCKSDB_PLUGINS uih)
set(SOURCES "")
set(THIRDPARTY_LIBS "")
include("$work/plugins_subdir.cmake")
include("$work/plugins_mk.cmake")
foreach(s \${SOURCES})
  get_filename_component(full "\${s}" ABSOLUTE)
  if(NOT EXISTS "\${full}")
    message(FATAL_ERROR "RocksDB's plugin logic lists \${s}, which does not exist")
  endif()
  string(REGEX REPLACE ".*plugin/uih/" "" name "\${s}")
  list(APPEND names "\${name}")
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
message(STATUS "uih sources: \${names}")
message(STATUS "uih libs: \${THIRDPARTY_LIBS}")
set(GIT_SHA 0)
set(GIT_TAG "")
set(GIT_MOD 1)
set(GIT_DATE "")
set(BUILD_DATE "")
configure_file("$work/build_version.cc.in" "\${CMAKE_BINARY_DIR}/build_version.cc" @ONLY)
add_library(rocksdb_uih SHARED \${SOURCES} "\${CMAKE_BINARY_DIR}/build_version.cc")
target_include_directories(rocksdb_uih PRIVATE "$rocksdb/include" "$rocksdb")
target_compile_definitions(rocksdb_uih PRIVATE $(echo "$defines" | tr ',' ' '))
target_compile_options(rocksdb_uih PRIVATE -UNDEBUG -O0 -g0)
target_link_libraries(rocksdb_uih PRIVATE \${THIRDPARTY_LIBS} "$rocksdb_lib")
target_link_options(rocksdb_uih PRIVATE -Wl,--no-undefined)
CM
cmake -S "$tree" -B "$work/cmake-build" >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log"; fail "RocksDB's CMake plugin logic rejects the fragments"; }
cmake_sources=$(sed -n 's/^-- uih sources: //p' "$work/cmake.log" | tr ';' ' ')
grep -q "uih libs: .*uihstore" "$work/cmake.log" || fail "the CMake fragment does not link the engine"

# Every library source of plugin/ is listed, but two: table/sst_tool.cc is
# the uih-sst tool; table/sst_dump_hook.cc replaces a member an in-tree
# RocksDB defines itself (only the preloaded library has it).
for f in $(cd "$src/plugin" && find . -name '*.cc' | sed 's|^\./||'); do
  case "$f" in table/sst_tool.cc|table/sst_dump_hook.cc) continue ;; esac
  case " $cmake_sources " in *" $f "*) ;; *) fail "RocksDB's CMake logic does not pick up plugin/$f" ;; esac
done

cmake --build "$work/cmake-build" -j 2 >"$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log"; fail "the plugin does not compile and link as RocksDB's CMake build would"; }

# ---- RocksDB's Makefile logic ------------------------------------------------
# From ROCKSDB_PLUGIN_MKS to PLATFORM_LDFLAGS, then the pkg-config block.
awk '/^ROCKSDB_PLUGIN_MKS =/ {on = 1} on {print} on && /^PLATFORM_LDFLAGS \+= \$\(ROCKSDB_PLUGIN_LDFLAGS\)/ {exit}' \
  "$rocksdb/Makefile" >"$work/plugins.mk"
awk '/^ifneq \(\$\(strip \$\(ROCKSDB_PLUGIN_PKGCONFIG_REQUIRES\)\),\)/ {on = 1}
     on {print; if ($0 ~ /^if/) depth++; if ($0 ~ /^endif/ && --depth == 0) exit}' \
  "$rocksdb/Makefile" >>"$work/plugins.mk"
grep -q "ROCKSDB_PLUGIN_SOURCES" "$work/plugins.mk" && grep -q "pkg-config --libs" "$work/plugins.mk" \
  || fail "RocksDB's plugin variables not found in its Makefile"
cat >"$tree/Makefile" <<MK
ROCKSDB_PLUGINS = uih
include $work/plugins.mk
show:
	@echo "\$(ROCKSDB_PLUGIN_SOURCES)"
	@echo "\$(LDFLAGS) \$(PLATFORM_LDFLAGS)"
	@echo "\$(ROCKSDB_PLUGIN_EXTERNS)"
MK
out=$(make -s -C "$tree" show) || fail "RocksDB's Makefile logic rejects uih.mk"
make_sources=$(echo "$out" | sed -n 1p)
make_ldflags=$(echo "$out" | sed -n 2p)
echo "$out" | sed -n 3p | grep -q "int uih_rocksdb_register(" || fail "the Makefile logic declares no registrar"
names=""
for f in $make_sources; do
  [ -f "$tree/$f" ] || fail "the Makefile logic lists $f, which does not exist"
  names="$names ${f#plugin/uih/}"
done
[ "$(echo $names | tr ' ' '\n' | sort | tr '\n' ' ')" = "$(echo $cmake_sources | tr ' ' '\n' | sort | tr '\n' ' ')" ] \
  || fail "the Makefile logic lists '$names', the CMake logic '$cmake_sources'"
# Link the same objects with the Makefile's flags.
objects=$(find "$work/cmake-build" -name '*.o')
# shellcheck disable=SC2086
c++ -shared -o "$work/librocksdb_uih_make.so" $objects $make_ldflags "$rocksdb_lib" -Wl,--no-undefined \
  >"$work/make-link.log" 2>&1 || { cat "$work/make-link.log"; fail "the Makefile's LDFLAGS do not link the plugin"; }
echo "rocksdb_plugin_test: ok"
