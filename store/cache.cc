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
  return n;
}

void MutableCache::Evict(Stripe& st) {
  while (st.bytes > stripe_capacity_ && !st.lru.empty()) {
    Entry& old = st.lru.back();
    st.bytes -= old.bytes;
    st.map.erase({old.user, old.group});
    st.lru.pop_back();
  }
}

void MutableCache::Prune(Stripe& st, Entry& e, int64_t retention) {
  if (retention == INT64_MIN) return;
  // A chunk wholly below: its last timestamp, start + span - 1, is below
  // `retention` (no overflow: retention >= INT64_MIN + span).
  auto below = [&](const std::pair<int64_t, std::string>& c) { return c.first <= retention - span_; };
  if (retention < INT64_MIN + span_ || e.chunks.empty() || !below(e.chunks.front())) return;
  auto keep = std::find_if_not(e.chunks.begin(), e.chunks.end(), below);
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
  st.lru.push_front(Entry{user, group, std::move(chunks), 0});
  Entry& e = st.lru.front();
  e.bytes = Cost(e);
  st.bytes += e.bytes;
  st.map[{user, group}] = st.lru.begin();
  Evict(st);
}

void MutableCache::Merge(uint64_t user, uint16_t group, int64_t start, const uint8_t* operand, size_t len) {
  Stripe& st = StripeOf(user, group);
  std::lock_guard<std::mutex> lock(st.mu);
  st.seq++;
  auto it = Find(st, user, group);
  if (it == st.lru.end()) return;
  Entry& e = *it;
  auto c = std::lower_bound(e.chunks.begin(), e.chunks.end(), start,
                            [](const std::pair<int64_t, std::string>& x, int64_t s) { return x.first < s; });
  const bool exists = c != e.chunks.end() && c->first == start;
  uint8_t key[UIH_KEY_SIZE];
  uih_key k{user, group, start};
  uih_key_encode(&k, key);
  uih_slice existing{};
  if (exists) existing = {reinterpret_cast<const uint8_t*>(c->second.data()), c->second.size()};
  const uih_slice op{operand, len};
  const uint8_t* out = nullptr;
  size_t out_len = 0;
  int quarantined = 0;
  uih_error why{};
  uih_events* ev = ThreadEvents<Workspace::kCache>();
  if (ev == nullptr || uih_events_merge_value(ev, key, sizeof key, exists ? &existing : nullptr, &op, 1, &limits_,
                                              &out, &out_len, &quarantined, &why) != UIH_OK) {
    // What the database holds cannot be told here: the entry goes, and the
    // next read fills it again.
    st.bytes -= e.bytes;
    st.map.erase({user, group});
    st.lru.erase(it);
    return;
  }
  std::string value(reinterpret_cast<const char*>(out), out_len);
  if (exists) c->second = std::move(value);
  else e.chunks.insert(c, {start, std::move(value)});
  st.bytes -= e.bytes;
  e.bytes = Cost(e);
  st.bytes += e.bytes;
  st.lru.splice(st.lru.begin(), st.lru, it);
  Evict(st);
}

void MutableCache::Erase(uint64_t user, const std::vector<uint16_t>& groups) {
  for (uint16_t group : groups) {
    Stripe& st = StripeOf(user, group);
    std::lock_guard<std::mutex> lock(st.mu);
    st.seq++;
    auto it = Find(st, user, group);
    if (it == st.lru.end()) continue;
    st.bytes -= it->bytes;
    st.map.erase({user, group});
    st.lru.erase(it);
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
