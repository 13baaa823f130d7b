# RocksDB, as Debian bookworm ships it, plus the internal headers of the same
# release for code that implements RocksDB extension points (table formats).
#
#   uih::rocksdb           public headers + Debian's librocksdb.so
#   uih::rocksdb_internal  the above + the source tree's internal headers,
#                          compiled with the defines Debian compiled the
#                          library with (UIH_ROCKSDB_DEFINES below)
#
# UIH_ROCKSDB_SOURCE_DIR points at the source tree; scripts/setup fetches
# Debian's source package into .deps/ by default.

file(STRINGS "${PROJECT_SOURCE_DIR}/ROCKSDB_VERSION" UIH_ROCKSDB_VERSION LIMIT_COUNT 1)
string(STRIP "${UIH_ROCKSDB_VERSION}" UIH_ROCKSDB_VERSION)

set(UIH_ROCKSDB_SOURCE_DIR "${PROJECT_SOURCE_DIR}/.deps/rocksdb-${UIH_ROCKSDB_VERSION}"
    CACHE PATH "RocksDB ${UIH_ROCKSDB_VERSION} source tree providing internal headers")

function(_uih_rocksdb_version header out)
  if(NOT EXISTS "${header}")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${header}" _lines REGEX "^#define ROCKSDB_(MAJOR|MINOR|PATCH) ")
  foreach(_l IN LISTS _lines)
    string(REGEX MATCH "ROCKSDB_(MAJOR|MINOR|PATCH) +([0-9]+)" _m "${_l}")
    set(_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  endforeach()
  set(${out} "${_MAJOR}.${_MINOR}.${_PATCH}" PARENT_SCOPE)
endfunction()

# ---- the installed library (librocksdb-dev) --------------------------------
find_path(UIH_ROCKSDB_INCLUDE_DIR rocksdb/db.h)
find_library(UIH_ROCKSDB_LIBRARY NAMES rocksdb)
if(NOT UIH_ROCKSDB_INCLUDE_DIR OR NOT UIH_ROCKSDB_LIBRARY)
  message(FATAL_ERROR "RocksDB not found: install librocksdb-dev ${UIH_ROCKSDB_VERSION} (run scripts/setup)")
endif()
_uih_rocksdb_version("${UIH_ROCKSDB_INCLUDE_DIR}/rocksdb/version.h" _installed)
if(NOT _installed STREQUAL UIH_ROCKSDB_VERSION)
  message(FATAL_ERROR "Installed RocksDB is ${_installed} (${UIH_ROCKSDB_INCLUDE_DIR}) "
    "but ROCKSDB_VERSION says ${UIH_ROCKSDB_VERSION}: object layouts would not match")
endif()

# ---- the source tree --------------------------------------------------------
_uih_rocksdb_version("${UIH_ROCKSDB_SOURCE_DIR}/include/rocksdb/version.h" _src)
if(NOT EXISTS "${UIH_ROCKSDB_SOURCE_DIR}/table/block_based/block_based_table_reader.h")
  message(FATAL_ERROR "RocksDB internal headers not found in UIH_ROCKSDB_SOURCE_DIR="
    "${UIH_ROCKSDB_SOURCE_DIR}. Run scripts/setup to fetch Debian's rocksdb "
    "${UIH_ROCKSDB_VERSION} source package there, or point UIH_ROCKSDB_SOURCE_DIR "
    "at a RocksDB ${UIH_ROCKSDB_VERSION} source tree.")
endif()
if(NOT _src STREQUAL UIH_ROCKSDB_VERSION)
  message(FATAL_ERROR "RocksDB source tree ${UIH_ROCKSDB_SOURCE_DIR} is ${_src}, "
    "ROCKSDB_VERSION says ${UIH_ROCKSDB_VERSION}")
endif()

# ---- the defines Debian built librocksdb.so with ---------------------------
# Derived from debian/rules (CMake build, CMAKE_BUILD_TYPE=None, PORTABLE=ON,
# WITH_{SNAPPY,ZLIB,BZ2,LZ4,ZSTD}=ON, gflags) and rocksdb's CMakeLists.txt as
# it configures on bookworm/amd64:
#   - build type None: neither the Debug nor the Release flag sets apply, so
#     NDEBUG is NOT defined (asserts and debug-only members such as
#     port::Mutex::locked_ are compiled in) and RTTI stays on (no -fno-rtti,
#     no ROCKSDB_USE_RTTI);
#   - not ROCKSDB_LITE; WITH_DYNAMIC_EXTENSION=OFF gives ROCKSDB_NO_DYNAMIC_EXTENSION;
#   - liburing is not a build dependency: no ROCKSDB_IOURING_PRESENT;
#   - PORTABLE=ON without FORCE_SSE42: no HAVE_SSE42 / HAVE_PCLMUL;
#   - the platform probes that succeed on glibc: fallocate, sync_file_range,
#     adaptive pthread mutex, malloc_usable_size, sched_getcpu (the getauxval
#     probe includes a misspelled header and always fails upstream).
# tests/abi/defines_test.cc checks these against the library at run time.
set(UIH_ROCKSDB_DEFINES
  OS_LINUX
  ROCKSDB_PLATFORM_POSIX
  ROCKSDB_LIB_IO_POSIX
  ROCKSDB_FALLOCATE_PRESENT
  ROCKSDB_RANGESYNC_PRESENT
  ROCKSDB_PTHREAD_ADAPTIVE_MUTEX
  ROCKSDB_MALLOC_USABLE_SIZE
  ROCKSDB_SCHED_GETCPU_PRESENT
  ROCKSDB_NO_DYNAMIC_EXTENSION
  SNAPPY ZLIB BZIP2 LZ4 ZSTD GFLAGS=1)

add_library(uih_rocksdb_public INTERFACE)
target_include_directories(uih_rocksdb_public SYSTEM INTERFACE "${UIH_ROCKSDB_INCLUDE_DIR}")
target_link_libraries(uih_rocksdb_public INTERFACE "${UIH_ROCKSDB_LIBRARY}" Threads::Threads)
add_library(uih::rocksdb ALIAS uih_rocksdb_public)

add_library(uih_rocksdb_internal INTERFACE)
# The source tree's include/ is identical to the installed one (same release),
# listed first so internal and public headers come from one tree.
target_include_directories(uih_rocksdb_internal SYSTEM INTERFACE
  "${UIH_ROCKSDB_SOURCE_DIR}/include" "${UIH_ROCKSDB_SOURCE_DIR}")
target_compile_definitions(uih_rocksdb_internal INTERFACE ${UIH_ROCKSDB_DEFINES})
# NDEBUG must stay undefined in every file that includes RocksDB internals,
# whatever CMAKE_BUILD_TYPE adds (-DNDEBUG in Release/RelWithDebInfo).
target_compile_options(uih_rocksdb_internal INTERFACE -UNDEBUG)
# Internal headers call compression libraries inline (util/compression.h):
# link the ones librocksdb-dev depends on.
target_link_libraries(uih_rocksdb_internal INTERFACE "${UIH_ROCKSDB_LIBRARY}"
  snappy z bz2 lz4 zstd Threads::Threads)
add_library(uih::rocksdb_internal ALIAS uih_rocksdb_internal)

message(STATUS "RocksDB ${UIH_ROCKSDB_VERSION}: ${UIH_ROCKSDB_LIBRARY}, internal headers from ${UIH_ROCKSDB_SOURCE_DIR}")
