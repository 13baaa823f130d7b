// Registers uihstore's RocksDB objects by name. Loading libuih_rocksdb.so
// (linked or LD_PRELOADed) runs the static initializer below, so unmodified
// RocksDB programs can name them in options strings and OPTIONS files. The
// same function is the entry point of RocksDB's ROCKSDB_PLUGINS convention.
#include <string>

#include "registry.h"
#include "rocksdb/utilities/object_registry.h"
#include "uih_table.h"

namespace uih {

using namespace rocksdb;

const std::vector<std::string>& RegisteredNames() {
  static const std::vector<std::string> names = {UihTableFactory::kClassName()};
  return names;
}

}  // namespace uih

int uih_rocksdb_register(rocksdb::ObjectLibrary& library, const std::string& /*arg*/) {
  library.AddFactory<rocksdb::TableFactory>(
      uih::UihTableFactory::kClassName(),
      [](const std::string&, std::unique_ptr<rocksdb::TableFactory>* guard, std::string*) {
        guard->reset(new uih::UihTableFactory());
        return guard->get();
      });
  return static_cast<int>(uih::RegisteredNames().size());
}

namespace {
// Runs when the library is loaded.
struct AutoRegister {
  AutoRegister() { uih_rocksdb_register(*rocksdb::ObjectLibrary::Default(), ""); }
} auto_register;
}  // namespace
