// The mutable tier's extension points: the UihAppend merge operator and the
// UihRetention compaction filter factory. The merge and retention rules live
// in the engine (uih/events.h); these classes adapt them to RocksDB. And one
// uih_events workspace per thread and per user of it, so that RocksDB's
// threads merge and filter, and the store appends, without allocating per
// call.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "rocksdb/compaction_filter.h"
#include "rocksdb/merge_operator.h"
#include "uih/events.h"

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
// watermark is set by whoever owns the database (the store binds the
// durable one when it opens); until it is set, nothing is dropped. It is a
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

// Who uses a thread's workspace. Distinct users never share one: a merge
// can run inside an append's Merge() on the same thread
// (max_successive_merges), while the append's operand still lives in the
// append's workspace.
enum class Workspace { kMergeOperator, kRetention, kStore, kCache };

template <Workspace W>
uih_events* ThreadEvents() {
  struct Holder {
    uih_events* ev = nullptr;
    Holder() { uih_events_create(&ev, nullptr); }
    ~Holder() { uih_events_free(ev); }
  };
  thread_local Holder holder;
  return holder.ev;  // NULL only when out of memory
}

}  // namespace uih
