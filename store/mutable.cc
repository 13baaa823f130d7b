// The C API of uih/mutable.h over a RocksDB database: options, the
// durable watermark, and the mapping of appends and reads to Merge and Get.
#include "uih/mutable.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "uih_plugin/logger.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/object_registry.h"
#include "rocksdb/write_batch.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/status.h"
#include "uih_plugin/events.h"
#include "uih/events.h"
#include "uih/key.h"
#include "format.h"
#include "mutable_internal.h"

using namespace rocksdb;

struct uih_mutable {
  std::string path;
  std::atomic<const uih_schema*> schema{nullptr};  // a store's load may publish a newer one
  DB* db = nullptr;
  std::vector<ColumnFamilyHandle*> handles;
  ColumnFamilyHandle* events = nullptr;  // uih.mutable
  ColumnFamilyHandle* meta = nullptr;    // default: the watermark
  std::shared_ptr<uih::UihRetentionFactory> retention;  // null: not bound
  std::mutex watermark_mu;
  int64_t span = 0;     // the chunk span; 0: one key per (user, group) (a store made before chunks)
  bool owns_db = true;  // false: a store's shard database (uih/store.h) lent to it
  // Closes the database, so a store given up half-open (an error or an
  // exception after DB::Open) does not keep its LOCK.
  ~uih_mutable() {
    if (db == nullptr || !owns_db) return;
    for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h);
    db->Close().PermitUncheckedError();
    delete db;
  }
};

namespace uih {

size_t MutableKey(int64_t span, uint64_t user, uint16_t group, int64_t ts, uint8_t key[UIH_KEY_SIZE]) {
  if (span == 0) {
    uih_key_group_prefix(user, group, key);
    return UIH_KEY_GROUP_PREFIX_SIZE;
  }
  uih_key k{user, group, uih_key_chunk_start(ts, span)};
  uih_key_encode(&k, key);
  return UIH_KEY_SIZE;
}

void MutableKeyRange(uint64_t user, uint16_t group, uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE],
                     uint8_t end[UIH_KEY_SIZE]) {
  uih_key_group_prefix(user, group, begin);
  // No chunk starts at INT64_MAX (a multiple of a span > 1 is below it; a
  // span of 1 puts ts = INT64_MAX there, so the bound is past that key).
  uih_key k{user, group, INT64_MAX};
  uih_key_encode(&k, end);
}

DB* MutableDB(uih_mutable* m) { return m->db; }
ColumnFamilyHandle* MutableColumnFamily(uih_mutable* m) { return m->events; }

}  // namespace uih

namespace {

int Fail(uih_error* err, const uih_mutable* m, const Status& s, const char* what) {
  return uih_error_set(err, uih::FromStatus(s), "mutable store %s: %s: %s", m ? m->path.c_str() : "", what,
                       s.ToString().c_str());
}

int ReadWatermark(uih_mutable* m, int64_t* wm, int* has, uih_error* err);
int ReadChunkSpan(uih_mutable* m, uih_error* err);

}  // namespace

namespace uih {

ColumnFamilyOptions MutableCfOptions(const uih_mutable_opts& o) {
  ColumnFamilyOptions cf;
  uih_events_limits limits{o.max_events, o.max_age};
  cf.merge_operator = std::make_shared<uih::UihAppendOperator>(limits);
  cf.compaction_filter_factory = std::make_shared<uih::UihRetentionFactory>();
  cf.prefix_extractor.reset(NewFixedPrefixTransform(UIH_KEY_GROUP_PREFIX_SIZE));
  cf.memtable_prefix_bloom_size_ratio = 0.05;
  cf.max_successive_merges = o.max_successive_merges;
  cf.compression = kLZ4Compression;
  cf.bottommost_compression = kZSTD;
  BlockBasedTableOptions t;
  t.filter_policy.reset(NewBloomFilterPolicy(10));
  t.whole_key_filtering = true;
  t.block_cache = NewLRUCache(o.block_cache_bytes);
  cf.table_factory.reset(NewBlockBasedTableFactory(t));
  return cf;
}

int AdoptMutable(const std::string& path, const uih_schema* schema, DB* db, ColumnFamilyHandle* events,
                 ColumnFamilyHandle* meta, uih_mutable** out, uih_error* err) {
  auto m = std::make_unique<uih_mutable>();
  m->path = path;
  m->schema = schema;
  m->db = db;
  m->owns_db = false;
  m->events = events;
  m->meta = meta;
  ColumnFamilyDescriptor d;
  Status s = events->GetDescriptor(&d);
  if (!s.ok()) return Fail(err, m.get(), s, "reading its options");
  m->retention = std::dynamic_pointer_cast<UihRetentionFactory>(d.options.compaction_filter_factory);
  int64_t wm;
  int has;
  int rc = ReadWatermark(m.get(), &wm, &has, err);
  if (rc == UIH_OK) rc = ReadChunkSpan(m.get(), err);
  if (rc != UIH_OK) return rc;
  if (has && m->retention) m->retention->SetWatermark(wm);
  *out = m.release();
  return UIH_OK;
}

void FreeMutable(uih_mutable* m) { delete m; }

void SetMutableSchema(uih_mutable* m, const uih_schema* schema) { m->schema = schema; }

}  // namespace uih

namespace {

// The durable watermark: 8 bytes, little-endian int64.
int ReadWatermark(uih_mutable* m, int64_t* wm, int* has, uih_error* err) {
  std::string v;
  Status s = m->db->Get(ReadOptions(), m->meta, uih::kWatermarkKey, &v);
  *has = 0;
  if (s.IsNotFound()) return UIH_OK;
  if (!s.ok()) return Fail(err, m, s, "reading the watermark");
  if (v.size() != sizeof *wm)
    return uih_error_set(err, UIH_ERR_CORRUPTION,
                         "mutable store %s: watermark key '%s' holds %zu bytes, expected 8",
                         m->path.c_str(), uih::kWatermarkKey, v.size());
  memcpy(wm, v.data(), sizeof *wm);
  *has = 1;
  return UIH_OK;
}

// The chunk span: 8 bytes, little-endian int64 > 0; absent in stores made
// before chunks (span 0).
int ReadChunkSpan(uih_mutable* m, uih_error* err) {
  std::string v;
  Status s = m->db->Get(ReadOptions(), m->meta, uih::kChunkSpanKey, &v);
  m->span = 0;
  if (s.IsNotFound()) return UIH_OK;
  if (!s.ok()) return Fail(err, m, s, "reading the chunk span");
  int64_t span = 0;
  if (v.size() == sizeof span) memcpy(&span, v.data(), sizeof span);
  if (v.size() != sizeof span || span <= 0)
    return uih_error_set(err, UIH_ERR_CORRUPTION,
                         "mutable store %s: key '%s' holds %zu bytes%s, expected 8 bytes of a span > 0",
                         m->path.c_str(), uih::kChunkSpanKey, v.size(), v.size() == sizeof span ? " (span <= 0)" : "");
  m->span = span;
  return UIH_OK;
}

int CheckBatch(uih_mutable* m, const uih_batch* b, uih_error* err) {
  if (b == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "append: NULL batch");
  const uih_group* g = uih_schema_group_by_id(m->schema, b->group->id);
  if (g == nullptr || strcmp(g->name, b->group->name) != 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "append: group '%s' (%u) is not a group of the store's schema",
                         b->group->name, b->group->id);
  return UIH_OK;
}



int OpenStore(const char* path, const uih_schema* schema, const uih_mutable_opts* opts, uih_mutable** out,
              uih_error* err) {
  if (path == nullptr || schema == nullptr || out == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_open: NULL argument");
  *out = nullptr;
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  if (opts) o = *opts;
  if (o.chunk_span <= 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_open: chunk_span %lld, expected > 0",
                         static_cast<long long>(o.chunk_span));
  auto m = std::make_unique<uih_mutable>();
  m->path = path;
  m->schema = schema;

  ConfigOptions config;
  config.ignore_unknown_options = false;
  config.invoke_prepare_options = true;
  DBOptions dbo;
  dbo.create_if_missing = o.create_if_missing != 0 && !o.read_only;
  dbo.create_missing_column_families = !o.read_only;
  if (o.read_only) {
    dbo.info_log = std::make_shared<uih::SilentLogger>();
  } else {
    std::error_code ec;  // RocksDB creates the directory too; the LOG goes in it
    if (dbo.create_if_missing) std::filesystem::create_directories(m->path, ec);
    dbo.info_log = std::make_shared<uih::LogFile>(m->path);
  }
  Status s;
  if (o.db_options && *o.db_options) {
    DBOptions base = dbo;
    s = GetDBOptionsFromString(config, base, o.db_options, &dbo);
    if (!s.ok()) return Fail(err, m.get(), s, "db_options");
  }
  ColumnFamilyOptions cfo = uih::MutableCfOptions(o);
  if (o.cf_options && *o.cf_options) {
    ColumnFamilyOptions base = cfo;
    s = GetColumnFamilyOptionsFromString(config, base, o.cf_options, &cfo);
    if (!s.ok()) return Fail(err, m.get(), s, "cf_options");
  }
  if (cfo.merge_operator == nullptr ||
      strcmp(cfo.merge_operator->Name(), uih::UihAppendOperator::kClassName()) != 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "mutable store %s: column family %s needs merge_operator=UihAppend",
                         path, UIH_MUTABLE_CF);
  m->retention = std::dynamic_pointer_cast<uih::UihRetentionFactory>(cfo.compaction_filter_factory);

  // What is at `path`: a store (a database with uih.mutable), nothing (a new
  // store, when creating), or something else, which is left untouched.
  std::vector<std::string> names;
  bool created = false;
  s = DB::ListColumnFamilies(dbo, path, &names);
  if (!s.ok()) {
    struct stat st;
    bool exists = stat(path, &st) == 0;
    struct stat current;
    bool no_database = exists && S_ISDIR(st.st_mode) &&
                       stat((std::string(path) + "/CURRENT").c_str(), &current) != 0 && errno == ENOENT;
    if (!dbo.create_if_missing) {
      if (!exists) return uih::NotAStore(err, path, "it does not exist");
      if (!S_ISDIR(st.st_mode)) return uih::NotAStore(err, path, "it is not a directory");
      if (no_database) return uih::NotAStore(err, path, "no RocksDB database in it (no CURRENT file)");
      return Fail(err, m.get(), s, "reading its column families");  // e.g. permissions: say what RocksDB says
    }
    if (exists && !no_database && S_ISDIR(st.st_mode))
      return Fail(err, m.get(), s, "reading its column families");
    if (exists && !S_ISDIR(st.st_mode)) return uih::NotAStore(err, path, "it is not a directory");
    names = {kDefaultColumnFamilyName};  // a new database
    created = true;
  } else if (std::find(names.begin(), names.end(), UIH_MUTABLE_CF) == names.end()) {
    return uih::NotAStore(err, path, "a RocksDB database without column family " UIH_MUTABLE_CF);
  }
  std::vector<ColumnFamilyDescriptor> cfs;
  // A store's shard (uih/store.h) also holds generations: UihTable files.
  for (const std::string& name : names)
    cfs.emplace_back(name, name == UIH_MUTABLE_CF         ? cfo
                           : uih::IsGenerationCf(name)    ? uih::GenerationCfOptions()
                                                           : ColumnFamilyOptions());
  if (std::find(names.begin(), names.end(), UIH_MUTABLE_CF) == names.end()) cfs.emplace_back(UIH_MUTABLE_CF, cfo);
  s = o.read_only ? DB::OpenForReadOnly(dbo, path, cfs, &m->handles, &m->db)
                  : DB::Open(dbo, path, cfs, &m->handles, &m->db);
  if (!s.ok()) return Fail(err, m.get(), s, "open");
  for (ColumnFamilyHandle* h : m->handles) {
    if (h->GetName() == UIH_MUTABLE_CF) m->events = h;
    if (h->GetName() == kDefaultColumnFamilyName) m->meta = h;
  }
  if (created) {  // a new store is chunked: its span is written once, durably
    WriteOptions wo;
    wo.sync = true;
    s = m->db->Put(wo, m->meta, uih::kChunkSpanKey, Slice(reinterpret_cast<const char*>(&o.chunk_span), sizeof o.chunk_span));
    if (!s.ok()) return Fail(err, m.get(), s, "writing the chunk span");
  }
  int64_t wm;
  int has;
  int rc = ReadWatermark(m.get(), &wm, &has, err);
  if (rc == UIH_OK) rc = ReadChunkSpan(m.get(), err);
  if (rc != UIH_OK) return rc;  // m's destructor closes the database
  if (has && m->retention) m->retention->SetWatermark(wm);
  *out = m.release();
  return UIH_OK;
}

void CloseStore(uih_mutable* m) { delete m; }

// Merges the events of `b` into the key of the chunk holding `ts`.
int MergeEvents(uih_mutable* m, WriteBatch* wb, uint64_t user, const uih_batch* b, int64_t ts, uih_error* err) {
  uih_events* ev = uih::ThreadEvents<uih::Workspace::kStore>();
  if (ev == nullptr) return uih_error_set(err, UIH_ERR_NO_MEMORY, "append: out of memory");
  const uint8_t* p;
  size_t len;
  int rc = uih_events_encode(ev, b, &p, &len, err);
  if (rc != UIH_OK)
    return uih_error_prefix(err, "append: user %" PRIu64 " group '%s': ", user, b->group->name);
  uint8_t key[UIH_KEY_SIZE];
  size_t klen = uih::MutableKey(m->span, user, b->group->id, ts, key);
  Status s = wb->Merge(m->events, Slice(reinterpret_cast<char*>(key), klen), Slice(reinterpret_cast<const char*>(p), len));
  return s.ok() ? UIH_OK : Fail(err, m, s, "append");
}

// Merges the events of `b` chunk by chunk: one Merge when they share a
// chunk (the common case), else one per chunk, the rows split in order.
int MergeChunks(uih_mutable* m, WriteBatch* wb, uint64_t user, const uih_batch* b, uih_error* err) {
  const int tsc = uih_batch_column_index(b, b->group->ts->id);
  if (tsc < 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "append: user %" PRIu64 " group '%s': the batch has no timestamp column",
                         user, b->group->name);
  if (m->span == 0) return MergeEvents(m, wb, user, b, 0, err);  // a store without chunks: one key
  auto chunk_of = [&](uint32_t r) {
    return uih_key_chunk_start(static_cast<int64_t>(uih_column_get_bits(&b->columns[tsc], r)), m->span);
  };
  const int64_t first = chunk_of(0);
  uint32_t r = 1;
  while (r < b->count && chunk_of(r) == first) r++;
  if (r == b->count) return MergeEvents(m, wb, user, b, first, err);
  thread_local std::vector<std::pair<int64_t, uint32_t>> rows;  // (chunk, row)
  rows.clear();
  for (uint32_t i = 0; i < b->count; i++) rows.push_back({chunk_of(i), i});
  std::sort(rows.begin(), rows.end());
  std::vector<uint16_t> ids(b->ncolumns);
  for (uint32_t c = 0; c < b->ncolumns; c++) ids[c] = b->columns[c].trait->id;
  uih_batch* part = nullptr;
  int rc = uih_batch_create(b->group, b->count, ids.data(), b->ncolumns, &part, err);
  std::unique_ptr<uih_batch, void (*)(uih_batch*)> own(part, uih_batch_free);
  for (size_t i = 0; rc == UIH_OK && i < rows.size();) {
    uih_batch_clear(part);
    size_t j = i;
    for (; rc == UIH_OK && j < rows.size() && rows[j].first == rows[i].first; j++)
      rc = uih_batch_copy_row(part, b, rows[j].second, err);
    if (rc == UIH_OK) rc = MergeEvents(m, wb, user, part, rows[i].first, err);
    i = j;
  }
  return rc;
}

int AppendMany(uih_mutable* m, const uint64_t* user_ids,
                            const uih_batch* const* events, size_t n, unsigned flags,
                            uih_error* err) {
  if (m == nullptr || (n && (user_ids == nullptr || events == nullptr)))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "append: NULL argument");
  WriteBatch wb;
  for (size_t i = 0; i < n; i++) {
    int rc = CheckBatch(m, events[i], err);
    if (rc != UIH_OK) return rc;
    if (events[i]->count == 0) continue;
    rc = MergeChunks(m, &wb, user_ids[i], events[i], err);
    if (rc != UIH_OK) return rc;
  }
  if (wb.Count() == 0) return UIH_OK;
  WriteOptions wo;
  wo.sync = (flags & UIH_APPEND_SYNC) != 0;
  Status s = m->db->Write(wo, &wb);
  return s.ok() ? UIH_OK : Fail(err, m, s, "append");
}

// Decodes the newest `newest` events in [min_ts, max_ts] of the list
// `data` into *b (of the group, its columns kept), growing it as needed.
int DecodeList(const uint8_t* data, size_t len, int64_t min_ts, int64_t max_ts, uint32_t newest, uih_batch** b,
               uih_error* err) {
  int rc = uih_events_decode_newest(data, len, min_ts, max_ts, newest, *b, err);
  if (rc != UIH_ERR_OUT_OF_RANGE) return rc;
  uih_events_info info{};
  rc = uih_events_read_info(data, len, &info, err);
  if (rc != UIH_OK) return rc;
  uint32_t want = std::min<uint32_t>(std::max<uint32_t>(std::min(info.count, newest), 1), UIH_STRIPE_EVENTS_MAX);
  if ((*b)->capacity < want) {
    rc = uih_batch_reserve(b, want, err);
    if (rc != UIH_OK) return rc;
  }
  return uih_events_decode_newest(data, len, min_ts, max_ts, newest, *b, err);
}

bool SameColumns(const uih_batch* a, const uih_batch* b) {
  if (a->group != b->group || a->ncolumns != b->ncolumns) return false;
  for (uint32_t c = 0; c < a->ncolumns; c++)
    if (a->columns[c].trait->id != b->columns[c].trait->id) return false;
  return true;
}

// A chunked history, newest first: windows of chunks back from the one
// holding max_ts (2 spans, then as many as the events still wanted take at
// the rate seen so far; never before the chunk holding min_ts), each read
// forwards — one seek, then next entries, as cheap as a
// step gets in a memtable, where a step back is a seek of its own — and
// its chunks decoded newest first, each (only what is still wanted of it)
// into a batch of the thread's pool, until `newest` events are there or
// the chunks run out; then those copied into `out` oldest first. A read of
// a user's newest events reads about as many chunks as hold them.
int ReadChunks(uih_mutable* m, uint64_t user_id, const uih_group* g, int64_t min_ts, int64_t max_ts, uint32_t newest,
               uih_batch* out, uih_error* err) {
  struct Pool {
    std::vector<std::pair<int64_t, std::string>> chunks;  // (start, value) of a window
    std::vector<uih_batch*> b;
    ~Pool() {
      for (uih_batch* x : b) uih_batch_free(x);
    }
  };
  thread_local Pool pool;
  const int64_t first = uih_key_chunk_start(min_ts, m->span);
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  std::unique_ptr<Iterator> it(m->db->NewIterator(ro, m->events));
  std::vector<uint16_t> ids;
  size_t used = 0;
  uint32_t total = 0;
  const int64_t top = uih_key_chunk_start(max_ts, m->span);
  int64_t end = top;  // the newest chunk not read yet
  // A read of every event in the range is one forward pass; a read of the
  // newest ones starts with the newest two spans.
  const __int128 whole = (static_cast<__int128>(top) - first) / m->span + 1;
  for (__int128 window = newest == UINT32_MAX ? whole : 2; total < newest;) {
    const __int128 from = static_cast<__int128>(end) - (window - 1) * m->span;
    const int64_t start = from <= first ? first : static_cast<int64_t>(from);
    uint8_t lo[UIH_KEY_SIZE], hi[UIH_KEY_SIZE];
    uih::MutableKey(m->span, user_id, g->id, start, lo);
    uih::MutableKey(m->span, user_id, g->id, end, hi);
    const Slice last(reinterpret_cast<char*>(hi), UIH_KEY_SIZE);
    size_t nchunks = 0;
    for (it->Seek(Slice(reinterpret_cast<char*>(lo), UIH_KEY_SIZE)); it->Valid(); it->Next()) {
      const Slice k = it->key();
      if (k.compare(last) > 0) break;
      uih_key key;
      if (k.size() != UIH_KEY_SIZE ||
          uih_key_decode(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &key, err) != UIH_OK ||
          key.user_id != user_id || key.group != g->id || key.ts != uih_key_chunk_start(key.ts, m->span))
        return uih_error_set(err, UIH_ERR_CORRUPTION,
                             "key of %zu bytes %s among user %" PRIu64 " group %u's chunks (span %" PRId64
                             "): expected 18 bytes naming a chunk start",
                             k.size(), k.ToString(true).c_str(), user_id, g->id, m->span);
      if (nchunks == pool.chunks.size()) pool.chunks.emplace_back();
      pool.chunks[nchunks].first = key.ts;
      pool.chunks[nchunks++].second.assign(it->value().data(), it->value().size());
    }
    if (!it->status().ok()) return Fail(err, m, it->status(), "read");
    for (size_t c = nchunks; c-- > 0 && total < newest;) {
      if (used == pool.b.size()) pool.b.push_back(nullptr);
      uih_batch*& b = pool.b[used];
      if (b == nullptr || !SameColumns(b, out)) {
        if (ids.empty())
          for (uint32_t k = 0; k < out->ncolumns; k++) ids.push_back(out->columns[k].trait->id);
        uih_batch_free(b);
        b = nullptr;
        int rc = uih_batch_create(out->group, 64, ids.data(), out->ncolumns, &b, err);
        if (rc != UIH_OK) return rc;
      }
      const std::string& v = pool.chunks[c].second;
      int rc = DecodeList(reinterpret_cast<const uint8_t*>(v.data()), v.size(), min_ts, max_ts, newest - total, &b, err);
      if (rc != UIH_OK) return uih_error_prefix(err, "chunk at %" PRId64 ": ", pool.chunks[c].first);
      total += b->count;
      used++;
    }
    if (start == first) break;
    end = uih_key_chunk_start(start - 1, m->span);  // the chunk before (start > first: no overflow)
    if (nchunks == 0) {
      // Nothing in this window: the newest chunk before it, found by one
      // seek, ends the next window, not a guess twice as far back.
      it->SeekForPrev(Slice(reinterpret_cast<char*>(lo), UIH_KEY_SIZE));
      if (!it->status().ok()) return Fail(err, m, it->status(), "read");
      if (!it->Valid() || it->key().size() < UIH_KEY_GROUP_PREFIX_SIZE ||
          memcmp(it->key().data(), lo, UIH_KEY_GROUP_PREFIX_SIZE) != 0)
        break;  // no chunk of (user, group) before the window
      uih_key key;
      if (it->key().size() == UIH_KEY_SIZE &&
          uih_key_decode(reinterpret_cast<const uint8_t*>(it->key().data()), UIH_KEY_SIZE, &key, nullptr) == UIH_OK &&
          key.ts == uih_key_chunk_start(key.ts, m->span)) {
        if (key.ts < first) break;  // none in the range
        end = key.ts;
        if (total == 0) continue;  // the window stays as it was
      }
      // A malformed key: the forward read that meets it says so.
    }
    // The next window: as many spans as the events still wanted take at
    // the rate seen so far, and a fifth more; twice this one's when none
    // were seen.
    const __int128 covered = (static_cast<__int128>(top) - start) / m->span + 1;
    window = total == 0 ? window * 2
                        : (static_cast<__int128>(newest - total) * covered * 6 / 5 + total - 1) / total + 1;
    if (window > (static_cast<__int128>(1) << 62)) window = static_cast<__int128>(1) << 62;
  }
  if (total > out->capacity)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "read: %u events in [%lld, %lld], the batch holds %u", total,
                         static_cast<long long>(min_ts), static_cast<long long>(max_ts), out->capacity);
  uih_batch_clear(out);
  for (size_t k = used; k-- > 0;) {
    int rc = uih_batch_copy_rows(out, pool.b[k], 0, pool.b[k]->count, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

int ReadEvents(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts,
                     int64_t max_ts, uint32_t newest, uih_batch** batch, uih_error* err) {
  if (m == nullptr || batch == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "read: NULL argument");
  const uih_group* g = uih_schema_group_by_id(m->schema, group);
  if (g == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "read: the schema has no group with id %u", group);
  auto failed = [&](int rc) -> int {
    uih_error_prefix(err, "mutable store %s: user %" PRIu64 " group %u: ", m->path.c_str(),
                     user_id, group);
    return rc;
  };
  // Makes *batch a batch of this group of at least `capacity` events: a
  // batch of the group grows keeping its trait selection (the projection),
  // any other is replaced by one of all active traits.
  // (A batch of the group from an older schema version is the group too.)
  auto same_group = [&] { return *batch != nullptr && (*batch)->group->id == g->id; };
  auto regrow = [&](uint32_t capacity) -> int {
    if (same_group()) return uih_batch_reserve(batch, capacity, err);
    uih_batch* nb = nullptr;
    int rc = uih_batch_create(g, capacity, nullptr, 0, &nb, err);
    if (rc != UIH_OK) return rc;
    uih_batch_free(*batch);
    *batch = nb;
    return UIH_OK;
  };
  if (!same_group()) {
    int rc = regrow(64);
    if (rc != UIH_OK) return rc;
  }
  if (min_ts > max_ts) {
    uih_batch_clear(*batch);
    return UIH_OK;
  }
  if (m->span > 0) {
    int rc = ReadChunks(m, user_id, g, min_ts, max_ts, newest, *batch, err);
    if (rc == UIH_ERR_OUT_OF_RANGE && (*batch)->capacity < UIH_STRIPE_EVENTS_MAX) {
      rc = regrow(UIH_STRIPE_EVENTS_MAX);
      if (rc == UIH_OK) rc = ReadChunks(m, user_id, g, min_ts, max_ts, newest, *batch, err);
    }
    return rc == UIH_OK ? UIH_OK : failed(rc);
  }
  // A store without chunks: the history is one key.
  uint8_t key[UIH_KEY_SIZE];
  const size_t klen = uih::MutableKey(0, user_id, group, 0, key);
  PinnableSlice value;
  Status s = m->db->Get(ReadOptions(), m->events, Slice(reinterpret_cast<char*>(key), klen), &value);
  if (!s.ok() && !s.IsNotFound()) {
    Fail(err, m, s, "read");
    return uih_error_prefix(err, "user %" PRIu64 " group %u: ", user_id, group);
  }
  if (s.IsNotFound()) {
    uih_batch_clear(*batch);
    return UIH_OK;
  }
  int rc = DecodeList(reinterpret_cast<const uint8_t*>(value.data()), value.size(), min_ts, max_ts, newest, batch, err);
  return rc == UIH_OK ? UIH_OK : failed(rc);
}

int SetWatermark(uih_mutable* m, int64_t watermark, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "set_watermark: NULL");
  std::lock_guard<std::mutex> lock(m->watermark_mu);
  int64_t cur;
  int has;
  int rc = ReadWatermark(m, &cur, &has, err);
  if (rc != UIH_OK) return rc;
  if (has && watermark < cur)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "mutable store %s: watermark %" PRId64 " is below the current %" PRId64
                         "; it may only advance",
                         m->path.c_str(), watermark, cur);
  WriteOptions wo;
  wo.sync = true;
  Status s = m->db->Put(wo, m->meta, uih::kWatermarkKey,
                        Slice(reinterpret_cast<const char*>(&watermark), sizeof watermark));
  if (!s.ok()) return Fail(err, m, s, "writing the watermark");
  if (m->retention) m->retention->SetWatermark(watermark);
  return UIH_OK;
}

int64_t ChunkSpan(const uih_mutable* m) { return m ? m->span : 0; }

int GetWatermark(uih_mutable* m, int64_t* watermark, int* has, uih_error* err) {
  if (m == nullptr || watermark == nullptr || has == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "watermark: NULL argument");
  return ReadWatermark(m, watermark, has, err);
}

int Flush(uih_mutable* m, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "flush: NULL");
  Status s = m->db->Flush(FlushOptions(), m->events);
  return s.ok() ? UIH_OK : Fail(err, m, s, "flush");
}

int Compact(uih_mutable* m, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "compact: NULL");
  CompactRangeOptions o;
  o.bottommost_level_compaction = BottommostLevelCompaction::kForce;
  Status s = m->db->CompactRange(o, m->events, nullptr, nullptr);
  return s.ok() ? UIH_OK : Fail(err, m, s, "compact");
}

}  // namespace

namespace uih {

int ReadMutableNewest(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                      uint32_t newest, uih_batch** batch, uih_error* err) {
  return ReadEvents(m, user_id, group, min_ts, max_ts, newest, batch, err);
}

}  // namespace uih

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

int uih_mutable_open(const char* path, const uih_schema* schema, const uih_mutable_opts* opts,
                     uih_mutable** out, uih_error* err) {
  return uih::CallC(err, "uih_mutable_open", [&] { return OpenStore(path, schema, opts, out, err); });
}

void uih_mutable_close(uih_mutable* m) {
  uih::CallCVoid([&] { CloseStore(m); });
}

int uih_mutable_append_many(uih_mutable* m, const uint64_t* user_ids, const uih_batch* const* events,
                            size_t n, unsigned flags, uih_error* err) {
  return uih::CallC(err, "uih_mutable_append_many",
                    [&] { return AppendMany(m, user_ids, events, n, flags, err); });
}

int uih_mutable_append(uih_mutable* m, uint64_t user_id, const uih_batch* events, unsigned flags,
                       uih_error* err) {
  return uih::CallC(err, "uih_mutable_append", [&] { return AppendMany(m, &user_id, &events, 1, flags, err); });
}

int uih_mutable_read(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                     uih_batch** batch, uih_error* err) {
  return uih::CallC(err, "uih_mutable_read",
                    [&] { return ReadEvents(m, user_id, group, min_ts, max_ts, UINT32_MAX, batch, err); });
}

int64_t uih_mutable_chunk_span(const uih_mutable* m) { return ChunkSpan(m); }

int uih_mutable_set_watermark(uih_mutable* m, int64_t watermark, uih_error* err) {
  return uih::CallC(err, "uih_mutable_set_watermark", [&] { return SetWatermark(m, watermark, err); });
}

int uih_mutable_watermark(uih_mutable* m, int64_t* watermark, int* has, uih_error* err) {
  return uih::CallC(err, "uih_mutable_watermark", [&] { return GetWatermark(m, watermark, has, err); });
}

int uih_mutable_flush(uih_mutable* m, uih_error* err) {
  return uih::CallC(err, "uih_mutable_flush", [&] { return Flush(m, err); });
}

int uih_mutable_compact(uih_mutable* m, uih_error* err) {
  return uih::CallC(err, "uih_mutable_compact", [&] { return Compact(m, err); });
}

}  // extern "C"
