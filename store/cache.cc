// cache.h: the serving process's write-through cache of the mutable tier.
#include "cache.h"

#include <algorithm>

#include "uih/key.h"
#include "uih_plugin/events.h"

namespace uih {

MutableCache::MutableCache(size_t capacity_bytes, int64_t span, const uih_events_limits& limits)
    : stripe_capacity_(capacity_bytes / kStripes), span_(span), limits_(limits) {}

std::list<MutableCache::Entry>::iterator MutableCache::Find(Stripe& st, uint64_t user, uint16_t group) {
  auto it = st.map.find({user, group});
  return it == st.map.end() ? st.lru.end() : it->second;
}

size_t MutableCache::Cost(const Entry& e) {
  size_t n = sizeof(Entry) + 64;  // the entry, its list node and map slot
  for (auto& [start, value] : e.chunks) n += sizeof(std::pair<int64_t, std::string>) + value.capacity();
  for (auto& ops : e.pending) {
    n += sizeof ops;
    for (auto& op : ops) n += sizeof op + op.capacity();
  }
  return n;
}

void MutableCache::Drop(Stripe& st, std::list<Entry>::iterator it) {
  st.bytes -= it->bytes;
  st.map.erase({it->user, it->group});
  st.lru.erase(it);
}

bool MutableCache::MergePending(Stripe& st, std::list<Entry>::iterator it) {
  Entry& e = *it;
  bool merged = false;
  for (size_t c = 0; c < e.chunks.size(); c++) {
    std::vector<std::string>& ops = e.pending[c];
    if (ops.empty()) continue;
    uint8_t key[UIH_KEY_SIZE];
    uih_key k{e.user, e.group, e.chunks[c].first};
    uih_key_encode(&k, key);
    std::string& value = e.chunks[c].second;
    const bool exists = !value.empty();  // a chunk the database had (a value is never empty)
    const uih_slice existing{reinterpret_cast<const uint8_t*>(value.data()), value.size()};
    std::vector<uih_slice> in;
    for (const std::string& op : ops) in.push_back({reinterpret_cast<const uint8_t*>(op.data()), op.size()});
    const uint8_t* out = nullptr;
    size_t out_len = 0;
    int quarantined = 0;
    uih_error why{};
    uih_events* ev = ThreadEvents<Workspace::kCache>();
    if (ev == nullptr || uih_events_merge_value(ev, key, sizeof key, exists ? &existing : nullptr, in.data(), in.size(),
                                                &limits_, &out, &out_len, &quarantined, &why) != UIH_OK) {
      Drop(st, it);  // what the database holds cannot be told here: the next read fills it again
      return false;
    }
    value.assign(reinterpret_cast<const char*>(out), out_len);
    ops.clear();
    ops.shrink_to_fit();
    merged = true;
  }
  if (merged) {
    st.bytes -= e.bytes;
    e.bytes = Cost(e);
    st.bytes += e.bytes;
  }
  return true;
}

void MutableCache::Evict(Stripe& st) {
  while (st.bytes > stripe_capacity_ && !st.lru.empty()) Drop(st, std::prev(st.lru.end()));
}

void MutableCache::Prune(Stripe& st, Entry& e, int64_t retention) {
  if (retention == INT64_MIN) return;
  // A chunk wholly below: its last timestamp, start + span - 1, is below
  // `retention` (no overflow: retention >= INT64_MIN + span).
  auto below = [&](const std::pair<int64_t, std::string>& c) { return c.first <= retention - span_; };
  if (retention < INT64_MIN + span_ || e.chunks.empty() || !below(e.chunks.front())) return;
  auto keep = std::find_if_not(e.chunks.begin(), e.chunks.end(), below);
  e.pending.erase(e.pending.begin(), e.pending.begin() + (keep - e.chunks.begin()));
  e.chunks.erase(e.chunks.begin(), keep);
  st.bytes -= e.bytes;
  e.bytes = Cost(e);
  st.bytes += e.bytes;
}

void MutableCache::Fill(uint64_t user, uint16_t group, uint64_t seq, Chunks chunks) {
  if (stripe_capacity_ == 0) return;
  Stripe& st = StripeOf(user, group);
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.seq != seq || Find(st, user, group) != st.lru.end()) return;  // an append came in between
  st.lru.push_front(Entry{user, group, std::move(chunks), {}, 0});
  Entry& e = st.lru.front();
  e.pending.resize(e.chunks.size());
  e.bytes = Cost(e);
  st.bytes += e.bytes;
  st.map[{user, group}] = st.lru.begin();
  Evict(st);
}

void MutableCache::Merge(uint64_t user, uint16_t group, int64_t start, std::string operand) {
  Stripe& st = StripeOf(user, group);
  std::lock_guard<std::mutex> lock(st.mu);
  st.seq++;
  auto it = Find(st, user, group);
  if (it == st.lru.end()) return;
  Entry& e = *it;
  auto c = std::lower_bound(e.chunks.begin(), e.chunks.end(), start,
                            [](const std::pair<int64_t, std::string>& x, int64_t s) { return x.first < s; });
  const size_t at = static_cast<size_t>(c - e.chunks.begin());
  if (c == e.chunks.end() || c->first != start) {  // a new chunk: no value yet, its operands pending
    e.chunks.insert(c, {start, std::string()});
    e.pending.insert(e.pending.begin() + static_cast<std::ptrdiff_t>(at), std::vector<std::string>());
  }
  e.pending[at].push_back(std::move(operand));
  const size_t added = sizeof(std::string) + e.pending[at].back().capacity();
  e.bytes += added;
  st.bytes += added;
  st.lru.splice(st.lru.begin(), st.lru, it);
  Evict(st);
}

void MutableCache::Erase(uint64_t user, const std::vector<uint16_t>& groups) {
  for (uint16_t group : groups) {
    Stripe& st = StripeOf(user, group);
    std::lock_guard<std::mutex> lock(st.mu);
    st.seq++;
    auto it = Find(st, user, group);
    if (it != st.lru.end()) Drop(st, it);
  }
}

MutableCache::Stats MutableCache::stats() const {
  Stats s{hits_.load(std::memory_order_relaxed), misses_.load(std::memory_order_relaxed), 0, 0,
          stripe_capacity_ * kStripes};
  for (const Stripe& st : stripes_) {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(st.mu));
    s.entries += st.lru.size();
    s.bytes += st.bytes;
  }
  return s;
}

}  // namespace uih
