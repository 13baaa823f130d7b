// UihTable, RocksDB's side: the table factory and its options. The file
// layout, the index and the checksums live in the engine (uih/table.h);
// these classes adapt them to RocksDB's TableFactory / TableBuilder /
// TableReader / InternalIterator, mirroring table/cuckoo's split.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "rocksdb/cache.h"
#include "rocksdb/table.h"
#include "uih/table.h"

namespace uih {

// Options of table_factory={id=UihTable;...}; all round-trip through the
// OPTIONS file.
struct UihTableOptions {
  // How the index stores keys (uih/table.h): kAuto takes the numeric layout
  // when every key of a file is 18 bytes (UIH keys) and that is smaller,
  // kPrefix always prefix-compresses, kNumeric fails a build whose keys are
  // not all 18 bytes. OPTIONS spelling: auto, prefix, numeric.
  enum class IndexLayout : int { kAuto = UIH_TABLE_LAYOUT_AUTO, kPrefix = UIH_TABLE_LAYOUT_PREFIX,
                                 kNumeric = UIH_TABLE_LAYOUT_NUMERIC };
  IndexLayout index_layout = IndexLayout::kAuto;
  // Prefix layout: entries between restart points; smaller is faster to
  // seek, larger is smaller in memory. 1..1024.
  uint32_t restart_interval = 16;
  // Numeric layout: entries per block (each carries ~30 bytes of frames;
  // entries inside are reached directly, so seeks stay logarithmic). 1..1024.
  uint32_t index_block_entries = 64;
  // Bytes an iterator reads ahead when it moves to a value not yet in its
  // buffer, so scans and range reads are one read, not one per value.
  size_t readahead_size = 256 * 1024;
  // Capacity of an LRU cache of values shared by the factory's tables
  // (0: none). Reads with ReadOptions::fill_cache add what they read.
  size_t cache_size = 0;
  // MultiGet submits the reads of a batch's values together: through one
  // io_uring submission (true), or pread one after another (false; also
  // what happens where the kernel refuses io_uring). Either way the batch
  // shows in the rocksdb.multiget.io.batch.size histogram. Files read with
  // direct I/O, mmap or through a non-default FileSystem are read by
  // RocksDB's file layer instead, one key at a time.
  bool use_io_uring = true;
  // Files carry nothing that differs from run to run: no DB or session
  // id, host, file number or creation time in their properties, so the
  // same keys and values give the same bytes (the store's bulk loads are
  // reproducible). RocksDB then derives no unique id for them, which only
  // its own block cache keys use.
  bool reproducible = false;
  // Or a cache of the caller's (takes precedence; not kept in OPTIONS files).
  std::shared_ptr<rocksdb::Cache> cache;
};

// A user-collected table property every UihTable file carries: the index
// layout its builder chose ("numeric" or "prefix").
inline constexpr const char* kIndexLayoutProperty = "uih.index.layout";

class UihTableFactory : public rocksdb::TableFactory {
 public:
  static const char* kClassName() { return "UihTable"; }
  static const char* kOptionsName() { return "UihTableOptions"; }

  explicit UihTableFactory(const UihTableOptions& options = UihTableOptions());

  const char* Name() const override { return kClassName(); }

  using rocksdb::TableFactory::NewTableReader;
  rocksdb::Status NewTableReader(const rocksdb::ReadOptions& ro,
                                 const rocksdb::TableReaderOptions& options,
                                 std::unique_ptr<rocksdb::RandomAccessFileReader>&& file,
                                 uint64_t file_size, std::unique_ptr<rocksdb::TableReader>* reader,
                                 bool prefetch_index_and_filter_in_cache) const override;
  rocksdb::TableBuilder* NewTableBuilder(const rocksdb::TableBuilderOptions& options,
                                         rocksdb::WritableFileWriter* file) const override;

  // Fails at DB open for what UihTable cannot store correctly.
  rocksdb::Status ValidateOptions(const rocksdb::DBOptions& db_opts,
                                  const rocksdb::ColumnFamilyOptions& cf_opts) const override;

  // Range deletions are not stored; RocksDB then refuses DeleteRange on
  // column families using this table with NotSupported.
  bool IsDeleteRangeSupported() const override { return false; }

  const UihTableOptions& options() const { return options_; }

 private:
  // options_.cache, made from cache_size on first use (options are set
  // after construction when they come from a string).
  const UihTableOptions& Resolved() const;

  UihTableOptions options_;
  mutable std::mutex cache_mu_;
};

// Creates the TableBuilder / TableReader (table/builder.cc, table/reader.cc).
rocksdb::TableBuilder* NewUihTableBuilder(const UihTableOptions& options,
                                          const rocksdb::TableBuilderOptions& tbo,
                                          rocksdb::WritableFileWriter* file);
rocksdb::Status OpenUihTable(const UihTableOptions& options, const rocksdb::ReadOptions& ro,
                             const rocksdb::TableReaderOptions& tro,
                             std::unique_ptr<rocksdb::RandomAccessFileReader>&& file,
                             uint64_t file_size, std::unique_ptr<rocksdb::TableReader>* reader);

}  // namespace uih
