// A TableFactory that forwards to another one (BlockBasedTable by default)
// and counts what RocksDB asks of it. It subclasses RocksDB's internal
// TableFactory / TableBuilder / TableReader exactly the way UihTable does, so
// if our build of RocksDB's internal headers disagrees with Debian's library
// (defines, layouts, vtables), the ABI smoke test that drives it fails.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "rocksdb/table.h"

namespace uih_test {

struct TableCounters {
  std::atomic<int> builders{0}, adds{0}, finishes{0}, abandons{0};
  std::atomic<int> readers{0}, readers_closed{0}, gets{0}, multigets{0}, iterators{0};
};

class CountingTableFactory : public rocksdb::TableFactory {
 public:
  static const char* kClassName() { return "CountingTable"; }
  CountingTableFactory();

  const char* Name() const override { return kClassName(); }
  rocksdb::Status NewTableReader(const rocksdb::ReadOptions& ro,
                                 const rocksdb::TableReaderOptions& options,
                                 std::unique_ptr<rocksdb::RandomAccessFileReader>&& file,
                                 uint64_t file_size, std::unique_ptr<rocksdb::TableReader>* reader,
                                 bool prefetch_index_and_filter_in_cache) const override;
  rocksdb::TableBuilder* NewTableBuilder(const rocksdb::TableBuilderOptions& options,
                                         rocksdb::WritableFileWriter* file) const override;
  bool IsDeleteRangeSupported() const override { return inner_->IsDeleteRangeSupported(); }

  const std::shared_ptr<rocksdb::TableFactory>& inner() const { return inner_; }
  TableCounters& counters() const { return *counters_; }

 private:
  std::shared_ptr<rocksdb::TableFactory> inner_;
  std::shared_ptr<TableCounters> counters_;
};

// Adds "CountingTable" to RocksDB's default ObjectLibrary (idempotent).
void RegisterCountingTable();

}  // namespace uih_test
