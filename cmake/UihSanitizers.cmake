# UIH_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every target
# (RocksDB itself is Debian's uninstrumented library, which ASan tolerates).
# UIH_FUZZ: fuzz targets link libFuzzer; needs clang. Without it, the same
# targets are linked with tests/fuzz/replay_main.c and replay their corpus.
if(UIH_SANITIZE)
  set(_uih_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
               -fno-omit-frame-pointer)
  add_compile_options(${_uih_san})
  add_link_options(-fsanitize=address,undefined)
endif()

if(UIH_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "UIH_FUZZ=ON needs clang: configure with "
      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage instrumentation everywhere; only the fuzz executables link the
  # libFuzzer driver (see tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# Shared libraries must resolve every symbol at link time, except in
# instrumented builds, whose runtime symbols come from the executable.
if(UIH_SANITIZE OR UIH_FUZZ)
  set(UIH_NO_UNDEFINED "")
else()
  set(UIH_NO_UNDEFINED -Wl,--no-undefined)
endif()
