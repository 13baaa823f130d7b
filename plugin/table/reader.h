// UihTable's reader, RocksDB's side: the TableReader over one file (open,
// point lookups, checks, dump: reader.cc) and what its iterator
// (iterator.cc) shares with it. The index, the spans of bytes that
// hold entries, value checks and read windows are the engine's
// (uih/table.h); the value cache is value_cache.h.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "db/dbformat.h"
#include "file/random_access_file_reader.h"
#include "rocksdb/statistics.h"
#include "table/format.h"
#include "table/get_context.h"
#include "table/multiget_context.h"
#include "table/table_reader.h"
#include "uih/table.h"
#include "uih_plugin/table.h"
#include "value_cache.h"

namespace uih {

// A cursor for one call or iterator: its key buffer inline unless keys are
// long (UIH keys are 18 bytes).
class CallCursor {
 public:
  explicit CallCursor(const uih_table_index* idx) {
    size_t need = uih_table_index_max_key(idx) + 1;
    uint8_t* buf = inline_;
    if (need > sizeof inline_) {
      heap_.reset(new uint8_t[need]);
      buf = heap_.get();
    }
    uih_table_cursor_init_buf(&c, idx, buf, std::max(need, sizeof inline_), nullptr);
  }
  CallCursor(const CallCursor&) = delete;  // c.key points into this object
  CallCursor& operator=(const CallCursor&) = delete;
  uih_table_cursor c;

 private:
  uint8_t inline_[256];
  std::unique_ptr<uint8_t[]> heap_;
};

// Reads [offset, offset + n) of the file; the result may point into
// `scratch` or (mmap) into the file mapping. Fewer bytes than asked is
// Corruption naming them.
rocksdb::IOStatus ReadExact(rocksdb::RandomAccessFileReader* file, uint64_t offset, size_t n, char* scratch,
                            rocksdb::Slice* out);

// Where a UihTable file's blocks lie, from its footer: the metaindex, the
// properties and the index, and the checksum tail and footer's offsets.
struct TableMeta {
  rocksdb::BlockHandle metaindex, properties, index;
  uint64_t tail_at, footer_at;
};

// A UihTable file's footer, checksum tail, metaindex and properties blocks
// read and each verified before any RocksDB parser sees it, the blocks'
// handles checked to tile the file: a corruption names the file and what
// failed. The index and the data are not read.
rocksdb::Status CheckUihTableMeta(rocksdb::RandomAccessFileReader* file, uint64_t file_size,
                                  const rocksdb::ImmutableOptions& ioptions, TableMeta* out);

class UihTableReader : public rocksdb::TableReader {
 public:
  UihTableReader(const UihTableOptions& options, std::unique_ptr<rocksdb::RandomAccessFileReader>&& file)
      : options_(options), file_(std::move(file)), values_(options_.cache.get()) {}
  ~UihTableReader() override;

  rocksdb::Status Open(const rocksdb::TableReaderOptions& tro, uint64_t file_size);

  rocksdb::InternalIterator* NewIterator(const rocksdb::ReadOptions& ro,
                                         const rocksdb::SliceTransform* prefix_extractor, rocksdb::Arena* arena,
                                         bool skip_filters, rocksdb::TableReaderCaller caller,
                                         size_t compaction_readahead_size, bool allow_unprepared_value) override;
  uint64_t ApproximateOffsetOf(const rocksdb::Slice& key, rocksdb::TableReaderCaller caller) override;
  uint64_t ApproximateSize(const rocksdb::Slice& start, const rocksdb::Slice& end,
                           rocksdb::TableReaderCaller caller) override {
    uint64_t a = ApproximateOffsetOf(start, caller), b = ApproximateOffsetOf(end, caller);
    return b > a ? b - a : 0;
  }
  void SetupForCompaction() override {}
  std::shared_ptr<const rocksdb::TableProperties> GetTableProperties() const override { return props_; }
  size_t ApproximateMemoryUsage() const override { return uih_table_index_memory(index_); }
  rocksdb::Status Get(const rocksdb::ReadOptions& ro, const rocksdb::Slice& key, rocksdb::GetContext* get_context,
                      const rocksdb::SliceTransform* prefix_extractor, bool skip_filters) override;
  // Every key's value bytes read together (io_uring where available); the
  // duplicates of a key are one lookup (see reader.cc).
  void MultiGet(const rocksdb::ReadOptions& ro, const rocksdb::MultiGetContext::Range* range,
                const rocksdb::SliceTransform* prefix_extractor, bool skip_filters) override;
  rocksdb::Status VerifyChecksum(const rocksdb::ReadOptions& ro, rocksdb::TableReaderCaller caller) override;
  // Warms the entries with internal keys in [begin, end] (null: open):
  // into the value cache when there is one (checksums verified), else the
  // file system reads their bytes ahead.
  rocksdb::Status Prefetch(const rocksdb::Slice* begin, const rocksdb::Slice* end) override;
  // A text dump for sst_dump --command=raw: the file's sections, the index,
  // then every entry with its value (checksums verified).
  rocksdb::Status DumpTable(rocksdb::WritableFile* out) override;

  // ---- shared with the iterator ----
  const uih_table_index* index() const { return index_; }
  rocksdb::RandomAccessFileReader* file() const { return file_.get(); }
  uint64_t data_size() const { return data_size_; }
  const ValueCache& values() const { return values_; }
  // Data offset of the first entry of `user_key` or after it.
  uint64_t OffsetOfUserKey(const std::string& user_key) const;

  // The trailer an entry shows: its own, or with the global seqno applied.
  uint64_t Trailer(const uih_table_cursor& c) const {
    return global_seqno_ == rocksdb::kDisableGlobalSequenceNumber
               ? c.trailer
               : rocksdb::PackSequenceAndType(global_seqno_, ExtractType(c));
  }
  static rocksdb::ValueType ExtractType(const uih_table_cursor& c) {
    return static_cast<rocksdb::ValueType>(c.trailer & 0xff);
  }
  // First entry >= the internal key `target`, seqno rule applied.
  void Seek(uih_table_cursor* c, const rocksdb::Slice& target) const;
  // Last entry <= `target`.
  void SeekForPrev(uih_table_cursor* c, const rocksdb::Slice& target) const;
  static bool SameKey(const uih_table_cursor& c, const rocksdb::Slice& uk) {
    return c.klen == uk.size() && (uk.empty() || memcmp(c.key, uk.data(), c.klen) == 0);
  }
  static const uint8_t* U8(const rocksdb::Slice& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

  // Checks the value of `vlen` bytes at `bytes` (its checksum follows it)
  // that the index places at `voff`: Corruption naming the file otherwise.
  rocksdb::Status CheckValue(const char* bytes, uint32_t vlen, uint64_t voff) const;
  // With `verify`, CheckValue, then (with `fill`) the value goes into the
  // value cache: only verified values are cached.
  rocksdb::Status CheckAndFill(const char* bytes, uint32_t vlen, uint64_t voff, bool verify, bool fill) const;

 private:
  // A lookup group: the GetContexts of one key's lookups in a MultiGet
  // batch (its duplicates), or of one Get. They are served together, each
  // value fetched once and offered to each, and end with one status.
  struct Lookups {
    rocksdb::GetContext* const* ctx;
    size_t n;  // 1..MultiGetContext::MAX_BATCH_SIZE
  };
  // Serves the entries of `uk` from the cursor on, each from the value
  // cache or one read of its own.
  rocksdb::Status ServeKey(const rocksdb::ReadOptions& ro, uih_table_cursor* c, const rocksdb::Slice& uk,
                           const Lookups& l) const;
  // Serves the entries of span `s`, all read into `bytes`.
  rocksdb::Status ServeSpan(const rocksdb::ReadOptions& ro, const uih_table_span& s, const rocksdb::Slice& uk,
                            const char* bytes, const Lookups& l) const;
  // Offers one entry to the lookups still collecting (a bit each in
  // `active`); returns those that still are. A cached value is pinned by
  // the first of them that keeps it (the handle moves to its result); the
  // others copy.
  static uint64_t Offer(const Lookups& l, uint64_t active, const rocksdb::ParsedInternalKey& pk,
                        const rocksdb::Slice& value, rocksdb::Cleanable* pinner);
  static uint64_t All(const Lookups& l) { return l.n >= 64 ? ~uint64_t{0} : (uint64_t{1} << l.n) - 1; }
  // Calls visit(cursor, value) -> Status for entries [first, end) in order,
  // after checking each value's checksum; stops at the first error.
  template <class F>
  rocksdb::Status ForEachValue(uint64_t first, uint64_t end, F&& visit) const;

  UihTableOptions options_;
  std::unique_ptr<rocksdb::RandomAccessFileReader> file_;
  ValueCache values_;
  uih_table_index* index_ = nullptr;
  std::shared_ptr<const rocksdb::TableProperties> props_;
  rocksdb::SequenceNumber global_seqno_ = rocksdb::kDisableGlobalSequenceNumber;
  uint64_t data_size_ = 0;
  int fd_ = -1;  // the file opened again for batched reads; -1: RocksDB's file layer reads

  // The file's sections, for DumpTable.
  rocksdb::BlockHandle meta_handle_, props_handle_;
  uint64_t tail_at_ = 0, footer_at_ = 0;
  // Where batched reads record the tickers RandomAccessFileReader would.
  rocksdb::Statistics* stats_ = nullptr;
  bool last_level_ = false;
};

}  // namespace uih
