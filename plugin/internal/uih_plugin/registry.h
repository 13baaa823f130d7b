// The names uihstore registers in RocksDB's ObjectLibrary.
#pragma once

#include <string>
#include <vector>

namespace rocksdb {
class ObjectLibrary;
}

namespace uih {
struct RegisteredName {
  std::string option;  // the ColumnFamilyOptions field that names it
  std::string name;
};
// Every name uih_rocksdb_register() adds; tests create each from a string.
const std::vector<RegisteredName>& RegisteredNames();
}  // namespace uih

// Adds every uihstore factory to `library`; returns how many factories it
// added (4: one per name, and UihRetention's as a compaction_filter, which
// says to write compaction_filter_factory)
// (-1 if that failed part way: it lets no exception out).
// RocksDB's ROCKSDB_PLUGINS build calls it as the plugin's registrar (uih.mk
// names it) and declares it itself, with this signature inside an
// extern "C" block (util/build_version.cc.in): it must have C linkage.
extern "C" int uih_rocksdb_register(rocksdb::ObjectLibrary& library, const std::string& arg);
