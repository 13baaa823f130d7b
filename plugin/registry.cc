// Registers uihstore's RocksDB objects by name. Loading libuih_rocksdb.so
// (linked or LD_PRELOADed) runs the static initializer below, so unmodified
// RocksDB programs can name them in options strings and OPTIONS files. The
// same function is the entry point of RocksDB's ROCKSDB_PLUGINS convention.
#include <string>

#include "uih_plugin/registry.h"
#include "rocksdb/utilities/object_registry.h"
#include "uih_plugin/events.h"
#include "uih_plugin/table.h"

namespace uih {

using namespace rocksdb;

const std::vector<RegisteredName>& RegisteredNames() {
  static const std::vector<RegisteredName> names = {
      {"table_factory", UihTableFactory::kClassName()},
      {"merge_operator", UihAppendOperator::kClassName()},
      {"compaction_filter_factory", UihRetentionFactory::kClassName()},
  };
  return names;
}

namespace {

// Returns how many factories it added: one per name of RegisteredNames(),
// and a second for UihRetention as a compaction_filter, which explains.
int RegisterAll(rocksdb::ObjectLibrary& library) {
  using namespace rocksdb;
  int added = 0;
  library.AddFactory<TableFactory>(
      UihTableFactory::kClassName(),
      [](const std::string&, std::unique_ptr<TableFactory>* guard, std::string*) {
        guard->reset(new UihTableFactory());
        return guard->get();
      }),
      added++;
  library.AddFactory<MergeOperator>(
      UihAppendOperator::kClassName(),
      [](const std::string&, std::unique_ptr<MergeOperator>* guard, std::string*) {
        guard->reset(new UihAppendOperator());
        return guard->get();
      }),
      added++;
  library.AddFactory<CompactionFilterFactory>(
      UihRetentionFactory::kClassName(),
      [](const std::string&, std::unique_ptr<CompactionFilterFactory>* guard, std::string*) {
        guard->reset(new UihRetentionFactory());
        return guard->get();
      }),
      added++;
  // compaction_filter=UihRetention would be one object for the whole
  // process; say what to write instead of failing with "Could not load".
  library.AddFactory<CompactionFilter>(
      UihRetentionFactory::kClassName(),
      [](const std::string&, std::unique_ptr<CompactionFilter>*, std::string* errmsg) {
        *errmsg =
            "UihRetention keeps one store's watermark, so it is a compaction filter factory: "
            "write compaction_filter_factory=UihRetention instead of compaction_filter=";
        return static_cast<CompactionFilter*>(nullptr);
      }),
      added++;
  return added;
}

}  // namespace
}  // namespace uih

// C linkage (RocksDB declares registrars extern "C"), so nothing may escape:
// were an allocation to fail, fewer names are registered and -1 says so.
int uih_rocksdb_register(rocksdb::ObjectLibrary& library, const std::string& /*arg*/) {
  try {
    return uih::RegisterAll(library);
  } catch (...) {
    return -1;
  }
}

namespace {
// Runs when the library is loaded.
struct AutoRegister {
  AutoRegister() { uih_rocksdb_register(*rocksdb::ObjectLibrary::Default(), ""); }
} auto_register;
}  // namespace
