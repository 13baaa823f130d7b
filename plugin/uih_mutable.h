// The mutable tier, RocksDB's side: the UihAppend merge operator, the
// UihRetention compaction filter factory, and the store behind the C API of
// uih/mutable.h. The merge and retention rules live in the engine
// (uih/events.h); these classes adapt them to RocksDB.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/compaction_filter.h"
#include "rocksdb/db.h"
#include "rocksdb/merge_operator.h"
#include "uih/events.h"
#include "uih/key.h"
#include "uih/mutable.h"

struct uih_mutable;

namespace uih {

// merge_operator=UihAppend, or {id=UihAppend;max_events=N;max_age=T}:
// operands and values are event lists; a full merge is their union (sorted,
// duplicates once), cut to the newest max_events and to max_age before the
// newest event (0: no cut). Malformed inputs are quarantined in the value,
// never dropped; the message naming the key goes to the info log.
class UihAppendOperator : public rocksdb::MergeOperator {
 public:
  static const char* kClassName() { return "UihAppend"; }
  static const char* kOptionsName() { return "UihAppendOptions"; }

  explicit UihAppendOperator(const uih_events_limits& limits = uih_events_limits{});

  const char* Name() const override { return kClassName(); }
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override;
  bool PartialMergeMulti(const rocksdb::Slice& key, const std::deque<rocksdb::Slice>& operands,
                         std::string* new_value, rocksdb::Logger* logger) const override;

  const uih_events_limits& limits() const { return limits_; }

 private:
  uih_events_limits limits_;
};

// compaction_filter_factory=UihRetention: drops events below the watermark
// from values and operands during compactions, and values left empty. The
// watermark is set by whoever owns the store (uih_mutable_open() reads the
// durable one and binds it); until it is set, nothing is dropped. It is a
// factory, not a compaction_filter, because RocksDB makes a compaction_filter
// named in a string one static object for the whole process, which cannot
// hold one store's watermark.
class UihRetentionFactory : public rocksdb::CompactionFilterFactory {
 public:
  static const char* kClassName() { return "UihRetention"; }
  const char* Name() const override { return kClassName(); }

  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override;

  void SetWatermark(int64_t watermark) {
    watermark_.store(watermark, std::memory_order_relaxed);
    has_.store(true, std::memory_order_release);
  }
  bool Watermark(int64_t* watermark) const {
    if (!has_.load(std::memory_order_acquire)) return false;
    *watermark = watermark_.load(std::memory_order_relaxed);
    return true;
  }

 private:
  std::atomic<int64_t> watermark_{0};
  std::atomic<bool> has_{false};
};

// For C++ embedders and tests: the database and column family of a store.
rocksdb::DB* MutableDB(uih_mutable* m);
rocksdb::ColumnFamilyHandle* MutableColumnFamily(uih_mutable* m);

// The keys under which the durable watermark and the chunk span live in the
// default column family.
extern const char kWatermarkKey[];
extern const char kChunkSpanKey[];

// The key of the chunk holding `ts` in (user, group)'s history, for a store
// of chunk span `span` (0: the 10-byte key of a store without chunks); its
// length.
size_t MutableKey(int64_t span, uint64_t user, uint16_t group, int64_t ts, uint8_t key[UIH_KEY_SIZE]);
// [begin, end): every key of (user, group)'s history, chunked or not.
void MutableKeyRange(uint64_t user, uint16_t group, uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE],
                     uint8_t end[UIH_KEY_SIZE]);

// The options of column family uih.mutable (merge operator, retention,
// bloom filter, compression) for the settings `o`.
rocksdb::ColumnFamilyOptions MutableCfOptions(const uih_mutable_opts& o);

// A mutable tier over a database someone else owns (a store's shard): the
// handles stay theirs and must outlive it; free it with FreeMutable.
int AdoptMutable(const std::string& path, const uih_schema* schema, rocksdb::DB* db,
                 rocksdb::ColumnFamilyHandle* events, rocksdb::ColumnFamilyHandle* meta, uih_mutable** out,
                 uih_error* err);
void FreeMutable(uih_mutable* m);
// Sets the schema appends and reads use (an adopted store's, once read).
void SetMutableSchema(uih_mutable* m, const uih_schema* schema);
// uih_mutable_read of only the newest `newest` events in [min_ts, max_ts]
// (the older ones are not decoded): what a snapshot of max_length needs.
// Not behind the exception firewall: for callers already behind it.
int ReadMutableNewest(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                      uint32_t newest, uih_batch** batch, uih_error* err);

}  // namespace uih
