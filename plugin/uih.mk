# RocksDB ROCKSDB_PLUGINS fragment (Makefile build), and the one list of the
# plugin's sources: plugin/CMakeLists.txt reads uih_SOURCES from here for
# uihstore's own build too. To compile the extension points into a RocksDB
# source tree instead of preloading libuih_rocksdb.so:
#   1. install uihstore's engine (cmake --install; it ships uihstore.pc),
#   2. ln -s /path/to/uihstore/plugin /path/to/rocksdb/plugin/uih
#   3. make ROCKSDB_PLUGINS=uih   (or cmake -DROCKSDB_PLUGINS=uih)
# RocksDB then calls uih_rocksdb_register() at startup, and UihTable,
# UihAppend and UihRetention can be named in options strings. The store,
# the materializer and the loader are not RocksDB extension points: they
# come with libuih_rocksdb. Requires the same RocksDB release as
# ROCKSDB_VERSION.
#
# RocksDB's CMake build reads this file too, with regular expressions that
# take the first match up to the end of its line: keep every variable on
# one line, and never write a variable's name followed by " = " in a
# comment. The plugin calls XXH3 directly, hence libxxhash.
uih_SOURCES = registry.cc status.cc events/append_operator.cc events/retention_filter.cc table/builder.cc table/factory.cc table/generation_files.cc table/iterator.cc table/reader.cc table/tail.cc table/value_cache.cc
uih_HEADERS = internal/uih_plugin/c_api.h internal/uih_plugin/events.h internal/uih_plugin/generation_files.h internal/uih_plugin/logger.h internal/uih_plugin/registry.h internal/uih_plugin/status.h internal/uih_plugin/table.h table/reader.h table/tail.h table/value_cache.h
uih_FUNC = uih_rocksdb_register
uih_PKGCONFIG_REQUIRES = uihstore libxxhash
uih_CXXFLAGS = $(shell pkg-config --cflags uihstore libxxhash) -Iplugin/uih/internal
