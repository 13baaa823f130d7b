# Libraries from Debian's -dev packages, found through pkg-config and exposed
# as uih::<name> imported targets. scripts/setup installs them.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

function(_uih_pkg target module debian_package)
  pkg_check_modules(${target} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: install ${debian_package} "
      "(scripts/setup installs every dependency)")
  endif()
  add_library(uih::${target} ALIAS PkgConfig::${target})
endfunction()

_uih_pkg(lz4    liblz4     liblz4-dev)
_uih_pkg(zstd   libzstd    libzstd-dev)
_uih_pkg(uring  liburing   liburing-dev)
_uih_pkg(xxhash libxxhash  libxxhash-dev)
_uih_pkg(jsonc  json-c     libjson-c-dev)
_uih_pkg(zlib   zlib       zlib1g-dev)

# libcsv ships no pkg-config file: find it directly.
find_path(UIH_CSV_INCLUDE_DIR csv.h)
find_library(UIH_CSV_LIBRARY csv)
if(NOT UIH_CSV_INCLUDE_DIR OR NOT UIH_CSV_LIBRARY)
  message(FATAL_ERROR "libcsv not found: install libcsv-dev "
    "(scripts/setup installs every dependency)")
endif()
if(NOT TARGET UihCsv::csv)
  add_library(UihCsv::csv UNKNOWN IMPORTED GLOBAL)
  set_target_properties(UihCsv::csv PROPERTIES
    IMPORTED_LOCATION "${UIH_CSV_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${UIH_CSV_INCLUDE_DIR}")
endif()
add_library(uih::csv ALIAS UihCsv::csv)
