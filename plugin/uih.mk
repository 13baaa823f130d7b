# RocksDB ROCKSDB_PLUGINS fragment (Makefile build). To compile uihstore into
# a RocksDB source tree instead of preloading libuih_rocksdb.so:
#   1. install uihstore's engine (cmake --install; it ships uihstore.pc),
#   2. ln -s /path/to/uihstore/plugin /path/to/rocksdb/plugin/uih
#   3. make ROCKSDB_PLUGINS=uih   (or cmake -DROCKSDB_PLUGINS=uih)
# RocksDB then calls uih_rocksdb_register() at startup, and UihTable,
# UihAppend and UihRetention can be named in options strings. Requires the
# same RocksDB release as ROCKSDB_VERSION.
#
# RocksDB's CMake build reads this file too, with regular expressions that
# take the first match up to the end of its line: keep every variable on
# one line, and never write a variable's name followed by " = " in a
# comment. The plugin calls XXH3 directly, hence libxxhash.
uih_SOURCES = append_operator.cc generation_files.cc mutable_store.cc registry.cc retention_filter.cc status.cc store.cc store_generations.cc store_pins.cc store_read.cc store_snapshot.cc materialize.cc materialize_output.cc materializer.cc table_builder.cc table_factory.cc table_iterator.cc table_reader.cc table_tail.cc value_cache.cc
uih_HEADERS = c_api.h generation_files.h logger.h registry.h status.h store_internal.h store_layout.h store_pins.h table_reader.h table_tail.h thread_events.h uih_mutable.h uih_table.h value_cache.h
uih_FUNC = uih_rocksdb_register
uih_PKGCONFIG_REQUIRES = uihstore libxxhash
uih_CXXFLAGS = $(shell pkg-config --cflags uihstore libxxhash) -Iplugin/uih/include
