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

// Adds every uihstore factory to `library`; returns how many names it added.
// RocksDB's ROCKSDB_PLUGINS build calls it as the plugin's registrar (uih.mk
// names it), declaring it itself with exactly this C++ signature.
int uih_rocksdb_register(rocksdb::ObjectLibrary& library, const std::string& arg);
