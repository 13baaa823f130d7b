// The mutable tier's reads (uih_mutable_read, and the newest events a
// snapshot wants): a chunked history read back from its newest chunk, or
// the one list of a store made before chunks.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "store_internal.h"
#include "uih/events.h"
#include "uih_plugin/c_api.h"
#include "uih_store/window.h"

using namespace rocksdb;
using uih::MutableCache;
using uih::StatusError;

namespace {

// Decodes the newest `newest` events in [min_ts, max_ts] of the list
// `data` into *b (of the group, its columns kept), growing it as needed.
int DecodeList(const uint8_t* data, size_t len, int64_t min_ts, int64_t max_ts, uint32_t newest, uih_batch** b,
               uih_error* err) {
  int rc = uih_events_decode_newest(data, len, min_ts, max_ts, newest, *b, err);
  if (rc != UIH_ERR_OUT_OF_RANGE) return rc;
  uih_events_info info{};
  rc = uih_events_read_info(data, len, &info, err);
  if (rc != UIH_OK) return rc;
  uint32_t want = std::min<uint32_t>(std::max<uint32_t>(std::min(info.count, newest), 1), UIH_BATCH_EVENTS_MAX);
  if ((*b)->capacity < want) {
    rc = uih_batch_reserve(b, want, err);
    if (rc != UIH_OK) return rc;
  }
  return uih_events_decode_newest(data, len, min_ts, max_ts, newest, *b, err);
}

// The chunk key `k`, checked to be one of (user, group)'s chunks.
int ChunkOf(const uih_mutable* m, const Slice& k, uint64_t user, uint16_t group, int64_t* start, uih_error* err) {
  uih_key key;
  if (k.size() != UIH_KEY_SIZE || uih_key_decode(uih::U8(k), k.size(), &key, nullptr) != UIH_OK ||
      key.user_id != user || key.group != group || key.ts != uih_key_chunk_start(key.ts, m->span))
    return uih_corruption(err,
                          "key of %zu bytes %s among user %" PRIu64 " group %u's chunks (span %" PRId64
                          "): expected 18 bytes naming a chunk start",
                          k.size(), k.ToString(true).c_str(), user, group, m->span);
  *start = key.ts;
  return UIH_OK;
}

using Chunks = std::vector<std::pair<int64_t, std::string>>;  // (start, value)

// The events gathered (newest first) into *out, oldest first; more than a
// batch holds is UIH_ERR_OUT_OF_RANGE: the window is to be narrowed.
int HandOut(const uih::Gather& gather, int64_t min_ts, int64_t max_ts, uih_batch** out, uih_error* err) {
  if (gather.count() > UIH_BATCH_EVENTS_MAX)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "%u events in [%" PRId64 ", %" PRId64 "], at most %u",
                         gather.count(), min_ts, max_ts, UIH_BATCH_EVENTS_MAX);
  uih_batch_clear(*out);
  int rc = uih_batch_reserve(out, std::max<uint32_t>(gather.count(), 1), err);
  return rc == UIH_OK ? gather.AppendNewest(gather.count(), *out, err) : rc;
}

// The chunks of (user, group) starting in [start, end], read forwards: one
// seek, then next entries, as cheap as a step gets in a memtable, where a
// step back is a seek of its own. Into (*chunks)[0, *n).
int ReadWindow(uih_mutable* m, Iterator* it, uint64_t user, uint16_t group, int64_t start, int64_t end,
               Chunks* chunks, size_t* n, uih_error* err) {
  uint8_t lo[UIH_KEY_SIZE], hi[UIH_KEY_SIZE];
  uih::MutableKey(m->span, user, group, start, lo);
  uih::MutableKey(m->span, user, group, end, hi);
  const Slice last = uih::S(hi, UIH_KEY_SIZE);
  *n = 0;
  for (it->Seek(uih::S(lo, UIH_KEY_SIZE)); it->Valid() && it->key().compare(last) <= 0; it->Next()) {
    if (*n == chunks->size()) chunks->emplace_back();
    int rc = ChunkOf(m, it->key(), user, group, &(*chunks)[*n].first, err);
    if (rc != UIH_OK) return rc;
    (*chunks)[(*n)++].second.assign(it->value().data(), it->value().size());
  }
  return it->status().ok() ? UIH_OK : StatusError(err, "", it->status(), "reading");
}

// What comes before a window: no chunk of (user, group), the chunk at
// *before, or a key that is no chunk's (left to the forward read that meets
// it, which says so).
enum class Before { kNone, kChunk, kMalformed };

// The newest chunk of (user, group) starting before `start`, found by one
// seek.
int ChunkBefore(uih_mutable* m, Iterator* it, uint64_t user, uint16_t group, int64_t start, int64_t* before,
                Before* what, uih_error* err) {
  uint8_t lo[UIH_KEY_SIZE];
  uih::MutableKey(m->span, user, group, start, lo);
  *what = Before::kNone;
  it->SeekForPrev(uih::S(lo, UIH_KEY_SIZE));
  if (!it->status().ok()) return StatusError(err, "", it->status(), "reading");
  if (!it->Valid() || it->key().size() < UIH_KEY_GROUP_PREFIX_SIZE ||
      memcmp(it->key().data(), lo, UIH_KEY_GROUP_PREFIX_SIZE) != 0)
    return UIH_OK;
  *what = ChunkOf(m, it->key(), user, group, before, nullptr) == UIH_OK ? Before::kChunk : Before::kMalformed;
  return UIH_OK;
}

// A chunked history, newest first: windows of chunks back from the one
// holding max_ts (2 spans, then as many as the events still wanted take at
// the rate seen so far; never before the chunk holding min_ts), each read
// forwards and its chunks decoded newest first, each (only what is still
// wanted of it) gathered, until `newest` events are there or the chunks run
// out; then those copied into *out oldest first (it grows as far as
// UIH_BATCH_EVENTS_MAX). A read of a user's newest events reads about as
// many chunks as hold them.
int ReadChunks(uih_mutable* m, uint64_t user_id, const uih_group* g, int64_t min_ts, int64_t max_ts, uint32_t newest,
               uih_batch** out, uih::Gather& gather, uih_error* err) {
  thread_local Chunks chunks;  // bytes only: nothing in it outlives what it names
  gather.Clear();
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  std::unique_ptr<Iterator> it(m->db->NewIterator(ro, m->events));
  const std::vector<uint16_t> ids = uih::ColumnIds(*out);
  const int64_t first = uih_key_chunk_start(min_ts, m->span), top = uih_key_chunk_start(max_ts, m->span);
  int64_t end = top;  // the newest chunk not read yet
  // No more than one past what a batch holds: that many is refused anyway.
  const uint32_t want = std::min<uint32_t>(newest, UIH_BATCH_EVENTS_MAX + 1);
  // A read of every event in the range is one forward pass; a read of the
  // newest ones starts with the newest two spans.
  __int128 window = newest == UINT32_MAX ? (static_cast<__int128>(top) - first) / m->span + 1 : 2;
  while (gather.count() < want) {
    const __int128 from = static_cast<__int128>(end) - (window - 1) * m->span;
    const int64_t start = from <= first ? first : static_cast<int64_t>(from);
    size_t n = 0;
    int rc = ReadWindow(m, it.get(), user_id, g->id, start, end, &chunks, &n, err);
    for (size_t c = n; rc == UIH_OK && c-- > 0 && gather.count() < want;) {
      uih_batch** b = gather.Next();
      rc = uih_batch_prepare(b, (*out)->group, ids.data(), static_cast<uint32_t>(ids.size()), 64, err);
      if (rc == UIH_OK) rc = DecodeList(uih::U8(chunks[c].second), chunks[c].second.size(), min_ts, max_ts,
                                        want - gather.count(), b, err);
      if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "chunk at %" PRId64 ": ", chunks[c].first);
      gather.Take(0, (*b)->count);
    }
    if (rc != UIH_OK) return rc;
    if (start == first) break;
    end = uih_key_chunk_start(start - 1, m->span);  // the chunk before (start > first: no overflow)
    if (n == 0) {
      // Nothing in this window: the newest chunk before it ends the next
      // window, not a guess twice as far back.
      int64_t before = 0;
      Before what;
      rc = ChunkBefore(m, it.get(), user_id, g->id, start, &before, &what, err);
      if (rc != UIH_OK) return rc;
      if (what == Before::kNone || (what == Before::kChunk && before < first)) break;  // none in the range
      if (what == Before::kChunk) {
        end = before;
        if (gather.count() == 0) continue;  // the window stays as it was
      }
    }
    // The next window: as many spans as the events still wanted take at
    // the rate seen so far, and a fifth more; twice this one's when none
    // were seen.
    const uint32_t total = gather.count();
    const __int128 covered = (static_cast<__int128>(top) - start) / m->span + 1;
    window = total == 0 ? window * 2
                        : (static_cast<__int128>(want - total) * covered * 6 / 5 + total - 1) / total + 1;
    if (window > (static_cast<__int128>(1) << 62)) window = static_cast<__int128>(1) << 62;
  }
  return HandOut(gather, min_ts, max_ts, out, err);
}

// The chunks[0, n) of (user, group) (ascending, as the database holds
// them), newest first from the one holding max_ts back to the one holding
// min_ts, decoded as ReadChunks decodes them until `newest` events are
// there; those copied into *out oldest first. What a read through the
// write-through cache does, on the chunks it holds or has just filled.
int DecodeChunks(const uih_mutable* m, const MutableCache::Chunks& chunks, int64_t min_ts, int64_t max_ts,
                 uint32_t newest, uih_batch** out, uih::Gather& gather, uih_error* err) {
  gather.Clear();
  const std::vector<uint16_t> ids = uih::ColumnIds(*out);
  const int64_t first = uih_key_chunk_start(min_ts, m->span), top = uih_key_chunk_start(max_ts, m->span);
  const uint32_t want = std::min<uint32_t>(newest, UIH_BATCH_EVENTS_MAX + 1);
  auto c = std::upper_bound(chunks.begin(), chunks.end(), top,
                            [](int64_t t, const std::pair<int64_t, std::string>& x) { return t < x.first; });
  while (c != chunks.begin() && gather.count() < want) {
    --c;
    if (c->first < first) break;
    uih_batch** b = gather.Next();
    int rc = uih_batch_prepare(b, (*out)->group, ids.data(), static_cast<uint32_t>(ids.size()), 64, err);
    if (rc == UIH_OK)
      rc = DecodeList(uih::U8(c->second), c->second.size(), min_ts, max_ts, want - gather.count(), b, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "chunk at %" PRId64 ": ", c->first);
    gather.Take(0, (*b)->count);
  }
  return HandOut(gather, min_ts, max_ts, out, err);
}

// Every chunk of (user, group), as the database holds it now.
int ReadAllChunks(uih_mutable* m, uint64_t user, uint16_t group, MutableCache::Chunks* out, uih_error* err) {
  uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE], end[UIH_KEY_SIZE];
  uih::MutableKeyRange(user, group, begin, end);
  ReadOptions ro;
  const Slice upper = uih::S(end, sizeof end);
  ro.iterate_upper_bound = &upper;
  ro.prefix_same_as_start = true;
  std::unique_ptr<Iterator> it(m->db->NewIterator(ro, m->events));
  for (it->Seek(uih::S(begin, sizeof begin)); it->Valid(); it->Next()) {
    int64_t start = 0;
    int rc = ChunkOf(m, it->key(), user, group, &start, err);
    if (rc != UIH_OK) return rc;
    out->emplace_back(start, it->value().ToString());
  }
  return it->status().ok() ? UIH_OK : StatusError(err, "", it->status(), "reading");
}

// A chunked history's newest events through the write-through cache: the
// chunks it holds, or those read from the database and kept.
int ReadCached(uih_mutable* m, uint64_t user, const uih_group* g, int64_t min_ts, int64_t max_ts, uint32_t newest,
               uih_batch** out, uih::Gather& gather, uih_error* err) {
  int64_t retention = INT64_MIN;
  if (m->retention && !m->retention->Watermark(&retention)) retention = INT64_MIN;
  uint64_t seq = 0;
  int rc = UIH_OK;
  if (m->cache->Read(user, g->id, retention, &seq, [&](const MutableCache::Chunks& chunks) {
        rc = DecodeChunks(m, chunks, min_ts, max_ts, newest, out, gather, err);
      }))
    return rc;
  MutableCache::Chunks chunks;
  rc = ReadAllChunks(m, user, g->id, &chunks, err);
  if (rc == UIH_OK) rc = DecodeChunks(m, chunks, min_ts, max_ts, newest, out, gather, err);
  if (rc == UIH_OK) m->cache->Fill(user, g->id, seq, std::move(chunks));
  return rc;
}

// The one list of a store made before chunks.
int ReadList(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts, uint32_t newest,
             uih_batch** batch, uih_error* err) {
  uint8_t key[UIH_KEY_SIZE];
  const size_t klen = uih::MutableKey(0, user_id, group, 0, key);
  PinnableSlice value;
  Status s = m->db->Get(ReadOptions(), m->events, uih::S(key, klen), &value);
  if (s.IsNotFound()) {
    uih_batch_clear(*batch);
    return UIH_OK;
  }
  if (!s.ok()) return StatusError(err, "", s, "reading");
  return DecodeList(uih::U8(value), value.size(), min_ts, max_ts, newest, batch, err);
}

}  // namespace

namespace uih {

namespace {

int Read(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts, uint32_t newest,
         bool cached, uih_batch** batch, Gather* scratch, uih_error* err) {
  if (m == nullptr || batch == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_read: NULL argument");
  const uih_group* g = uih_schema_group_by_id(m->schema, group);
  if (g == nullptr) return uih_error_set(err, UIH_ERR_NOT_FOUND, "mutable_read: the schema has no group with id %u", group);
  // A batch of the group (of any schema version) keeps its trait selection,
  // the projection; any other is replaced by one of all active traits.
  int rc = UIH_OK;
  if (*batch == nullptr || (*batch)->group->id != g->id) rc = uih_batch_prepare(batch, g, nullptr, 0, 64, err);
  if (rc != UIH_OK) return rc;
  if (min_ts > max_ts) {
    uih_batch_clear(*batch);
    return UIH_OK;
  }
  rc = m->span == 0 ? ReadList(m, user_id, group, min_ts, max_ts, newest, batch, err)
       : cached && m->cache ? ReadCached(m, user_id, g, min_ts, max_ts, newest, batch, *scratch, err)
                            : ReadChunks(m, user_id, g, min_ts, max_ts, newest, batch, *scratch, err);
  if (rc != UIH_OK)
    return UIH_PREFIXED(rc, err, "mutable store %s: user %" PRIu64 " group %u: ", m->path.c_str(), user_id, group);
  return UIH_OK;
}

}  // namespace

int ReadEvents(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts, uint32_t newest,
               uih_batch** batch, Gather* scratch, uih_error* err) {
  return Read(m, user_id, group, min_ts, max_ts, newest, false, batch, scratch, err);
}

// Snapshots read through the write-through cache, when the tier has one:
// their windows begin at the split, at or above the retention watermark,
// below which the cache keeps nothing.
int ReadMutableNewest(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                      uint32_t newest, uih_batch** batch, Gather* scratch, uih_error* err) {
  return Read(m, user_id, group, min_ts, max_ts, newest, true, batch, scratch, err);
}

}  // namespace uih

extern "C" {

int uih_mutable_read(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                     uih_batch** batch, uih_error* err) {
  return uih::CallC(err, "uih_mutable_read", [&] {
    // The caller's batch may be of a schema it frees after the call: no
    // batch of this read outlives it.
    uih::Gather scratch;
    return uih::ReadEvents(m, user_id, group, min_ts, max_ts, UINT32_MAX, batch, &scratch, err);
  });
}

}  // extern "C"
