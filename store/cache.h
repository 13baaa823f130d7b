// The serving process's write-through cache of the mutable tier (the
// paper's cache co-located with the ranking service): for the users it
// holds, every chunk of a (user, group)'s mutable history as the database
// would give it — the merged value bytes — so that a snapshot of a cached
// user reads its mutable part without RocksDB.
//
// What it holds equals what RocksDB would return, by construction: an
// entry is filled from a read of the database, and every append after it
// is merged into it with the merge operator's own rule
// (uih_events_merge_value), under the entry's stripe lock — lazily, as
// RocksDB merges: an append keeps its operand with its chunk, and the next
// read of the entry merges what is pending, so an append costs a copy of
// its operand whatever the size of its chunk. A fill that a
// concurrent append may have missed is not kept: appends bump their
// stripe's sequence number after their write, and a fill is kept only if
// the number it saw before its read is unchanged (or the append, finding
// the entry, merged into it). Erasures drop the users' entries; chunks
// wholly below the retention watermark are dropped as entries are read. Bounded by bytes, least recently used out, in stripes by (user,
// group).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "uih/events.h"

namespace uih {

class MutableCache {
 public:
  using Chunks = std::vector<std::pair<int64_t, std::string>>;  // (start, merged value), ascending

  MutableCache(size_t capacity_bytes, int64_t span, const uih_events_limits& limits);
  MutableCache(const MutableCache&) = delete;
  MutableCache& operator=(const MutableCache&) = delete;

  // Calls f(chunks) under the entry's lock when (user, group) is cached
  // (true: a hit), after dropping its chunks wholly below `retention`
  // (INT64_MIN: none), which no read needs (the retention filter's
  // watermark: every read splits at or above it). Else false, and *seq the stripe's
  // sequence number to hand to Fill.
  template <class F>
  bool Read(uint64_t user, uint16_t group, int64_t retention, uint64_t* seq, F&& f);
  // Keeps `chunks`, read from the database after Read said *seq, unless an
  // append came in between.
  void Fill(uint64_t user, uint16_t group, uint64_t seq, Chunks chunks);
  // An append's operand for the chunk at `start`, written to the database:
  // kept with the entry's chunk when cached, to be merged by the next read;
  // the stripe's sequence bumped.
  void Merge(uint64_t user, uint16_t group, int64_t start, std::string operand);
  // The user's entries of `groups` dropped: an erasure.
  void Erase(uint64_t user, const std::vector<uint16_t>& groups);

  struct Stats {
    uint64_t hits, misses, entries, bytes, capacity;
  };
  Stats stats() const;

 private:
  struct Entry {
    uint64_t user;
    uint16_t group;
    Chunks chunks;
    std::vector<std::vector<std::string>> pending;  // per chunk, operands not merged yet
    size_t bytes = 0;
  };
  using Key = std::pair<uint64_t, uint16_t>;  // (user, group)
  struct KeyHash {
    size_t operator()(const Key& k) const { return Hash(k.first, k.second); }
  };
  struct Stripe {
    std::mutex mu;
    uint64_t seq = 0;
    size_t bytes = 0;
    std::list<Entry> lru;  // most recently used first
    std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> map;
  };
  static constexpr size_t kStripes = 64;
  static uint64_t Hash(uint64_t user, uint16_t group) { return (user ^ (uint64_t{group} << 48)) * 0x9e3779b97f4a7c15ull; }
  Stripe& StripeOf(uint64_t user, uint16_t group) { return stripes_[(Hash(user, group) >> 40) % kStripes]; }
  std::list<Entry>::iterator Find(Stripe& st, uint64_t user, uint16_t group);
  static size_t Cost(const Entry& e);
  void Evict(Stripe& st);
  void Prune(Stripe& st, Entry& e, int64_t retention);
  void Drop(Stripe& st, std::list<Entry>::iterator it);
  // Merges every chunk's pending operands into it; false (the entry
  // dropped) when a merge fails, which only running out of memory does.
  bool MergePending(Stripe& st, std::list<Entry>::iterator it);

  const size_t stripe_capacity_;
  const int64_t span_;
  const uih_events_limits limits_;
  Stripe stripes_[kStripes];
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

template <class F>
bool MutableCache::Read(uint64_t user, uint16_t group, int64_t retention, uint64_t* seq, F&& f) {
  Stripe& st = StripeOf(user, group);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = Find(st, user, group);
  if (it == st.lru.end()) {
    *seq = st.seq;
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (!MergePending(st, it)) {
    *seq = st.seq;
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  st.lru.splice(st.lru.begin(), st.lru, it);
  Prune(st, *it, retention);
  hits_.fetch_add(1, std::memory_order_relaxed);
  f(static_cast<const Chunks&>(it->chunks));
  return true;
}

}  // namespace uih
