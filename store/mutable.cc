// The C API of uih/mutable.h over a RocksDB database: opening one (or
// adopting a store's shard), its metadata (format, chunk span, the durable
// watermark), and appends as Merges. Reads are in mutable_read.cc.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/write_batch_internal.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih/events.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"

using namespace rocksdb;
using uih::OpenError;
using uih::StatusError;

static void CloseDatabase(uih_mutable* m);

uih_mutable::~uih_mutable() {
  if (db == nullptr || !owns_db) return;
  if (writable) uih::FlushOut(db, {events, meta}).PermitUncheckedError();  // the WAL holds nothing needed after
  CloseDatabase(this);
}

// The database closed, its handles first (no flush: a reader's, or a
// writer's after it flushed).
static void CloseDatabase(uih_mutable* m) {
  for (ColumnFamilyHandle* h : m->handles) m->db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  m->handles.clear();
  m->events = m->meta = nullptr;
  m->db->Close().PermitUncheckedError();
  delete m->db;
  m->db = nullptr;
}

namespace uih {

uint64_t LastSequence(const rocksdb::WriteBatch& wb) {
  const uint32_t n = WriteBatchInternal::Count(&wb);
  return n ? WriteBatchInternal::Sequence(&wb) + n - 1 : 0;
}

const std::string& MutableRecovered(const uih_mutable* m) { return m->recovered; }

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

ColumnFamilyOptions MutableCfOptions(const uih_mutable_opts& o) {
  ColumnFamilyOptions cf;
  uih_events_limits limits{o.max_events, o.max_age};
  cf.merge_operator = std::make_shared<UihAppendOperator>(limits);
  cf.compaction_filter_factory = std::make_shared<UihRetentionFactory>();
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

int ReadWatermark(uih_mutable* m, int64_t* wm, int* has, uih_error* err) {
  bool found = false;
  int rc = ReadMetaI64(m->db, m->meta, m->path, m->format, kWatermarkKey, wm, &found, err);
  *has = found;
  return rc;
}

}  // namespace uih

namespace {

// The format of the metadata values (format.h): uih.format, or 1 when it is
// absent; a newer one than this build reads is refused.
int ReadFormat(uih_mutable* m, uih_error* err) {
  bool found;
  m->format = 1;
  int rc = uih::ReadMetaU32(m->db, m->meta, m->path, uih::kFormatKey, &m->format, &found, err);
  if (rc != UIH_OK || !found) return rc;
  if (m->format < 2 || m->format > uih::kMutableFormat)
    rc = uih_error_set(err, UIH_ERR_NOT_SUPPORTED, "store %s: its format is %u; this build reads formats 1 to %u",
                       m->path.c_str(), m->format, uih::kMutableFormat);
  return rc;
}

// The chunk span: absent in stores made before chunks (span 0).
int ReadChunkSpan(uih_mutable* m, uih_error* err) {
  bool found;
  int64_t span = 0;
  m->span = 0;
  int rc = uih::ReadMetaI64(m->db, m->meta, m->path, m->format, uih::kChunkSpanKey, &span, &found, err);
  if (rc != UIH_OK || !found) return rc;
  if (span <= 0)
    return uih_corruption(err, "store %s: metadata key '%s' holds span %" PRId64 ", expected > 0", m->path.c_str(),
                          uih::kChunkSpanKey, span);
  m->span = span;
  return UIH_OK;
}

// A format-1 store's values rewritten in the current format, with
// uih.format, in one synced write.
int Upgrade(uih_mutable* m, uih_error* err) {
  int64_t wm = 0;
  int has = 0;
  int rc = uih::ReadWatermark(m, &wm, &has, err);
  if (rc == UIH_OK) rc = ReadChunkSpan(m, err);
  if (rc != UIH_OK) return rc;
  WriteBatch wb;
  Status s = wb.Put(m->meta, uih::kFormatKey, uih::U32Value(uih::kMutableFormat));
  if (s.ok() && has) s = wb.Put(m->meta, uih::kWatermarkKey, uih::I64Value(wm));
  if (s.ok() && m->span > 0) s = wb.Put(m->meta, uih::kChunkSpanKey, uih::I64Value(m->span));
  WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = m->db->Write(wo, &wb);
  if (!s.ok()) return StatusError(err, m->path, s, "writing its metadata in format %u", uih::kMutableFormat);
  m->format = uih::kMutableFormat;
  return UIH_OK;
}

// Reads the metadata (a writable store's upgraded first) and binds the
// durable watermark to the retention filter.
int LoadMeta(uih_mutable* m, bool read_only, uih_error* err) {
  int rc = ReadFormat(m, err);
  if (rc == UIH_OK && m->format < uih::kMutableFormat && !read_only) rc = Upgrade(m, err);
  int64_t wm;
  int has;
  uint32_t applied = 0;
  bool found;
  if (rc == UIH_OK) rc = uih::ReadWatermark(m, &wm, &has, err);
  if (rc == UIH_OK) rc = ReadChunkSpan(m, err);
  if (rc == UIH_OK) rc = uih::ReadMetaU32(m->db, m->meta, m->path, uih::kAppliedKey, &applied, &found, err);
  if (rc != UIH_OK) return rc;
  if (has) {
    m->wm.store(wm, std::memory_order_release);
    m->has_wm.store(true, std::memory_order_release);
    if (m->retention) m->retention->SetWatermark(wm);
  }
  m->applied.store(applied, std::memory_order_release);
  return UIH_OK;
}

// The database options and uih.mutable's, from the defaults and the
// caller's option strings.
int ParseOptions(uih_mutable* m, const uih_mutable_opts& o, DBOptions* dbo, ColumnFamilyOptions* cfo,
                 uih_error* err) {
  ConfigOptions config;
  config.ignore_unknown_options = false;
  config.invoke_prepare_options = true;
  dbo->create_if_missing = o.create_if_missing != 0 && !o.read_only;
  dbo->create_missing_column_families = !o.read_only;
  // A write-ahead log replays whole, or the open fails: RocksDB's default
  // (point in time) would stop at damage in the middle and open on what
  // came before it, events silently gone.
  uih::StrictRecovery(dbo);
  if (o.read_only) {
    dbo->info_log = std::make_shared<uih::SilentLogger>();
  } else {
    uih::BoundPreallocation(dbo);  // a read-only open writes nothing: the default Env
    std::error_code ec;  // RocksDB creates the directory too; the LOG goes in it
    if (dbo->create_if_missing) std::filesystem::create_directories(m->path, ec);
    dbo->info_log = std::make_shared<uih::LogFile>(m->path);
  }
  Status s;
  if (o.db_options && *o.db_options) {
    DBOptions base = *dbo;
    s = GetDBOptionsFromString(config, base, o.db_options, dbo);
    if (!s.ok()) return StatusError(err, m->path, s, "db_options");
  }
  *cfo = uih::MutableCfOptions(o);
  if (o.cf_options && *o.cf_options) {
    ColumnFamilyOptions base = *cfo;
    s = GetColumnFamilyOptionsFromString(config, base, o.cf_options, cfo);
    if (!s.ok()) return StatusError(err, m->path, s, "cf_options");
  }
  if (cfo->merge_operator == nullptr ||
      strcmp(cfo->merge_operator->Name(), uih::UihAppendOperator::kClassName()) != 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable store %s: column family %s needs merge_operator=UihAppend",
                         m->path.c_str(), UIH_MUTABLE_CF);
  m->retention = std::dynamic_pointer_cast<uih::UihRetentionFactory>(cfo->compaction_filter_factory);
  m->limits = static_cast<const uih::UihAppendOperator*>(cfo->merge_operator.get())->limits();
  return UIH_OK;
}

// What is at `path`: a store (a database with uih.mutable: its column
// families in *names), nothing (a new store, when creating: *created), or
// something else, which is left untouched (UIH_ERR_NOT_FOUND saying what).
int Probe(const char* path, const DBOptions& dbo, std::vector<std::string>* names, bool* created, uih_error* err) {
  *created = false;
  Status s = DB::ListColumnFamilies(dbo, path, names);
  if (s.ok()) {
    if (std::find(names->begin(), names->end(), UIH_MUTABLE_CF) == names->end())
      return uih::NotAStore(err, path, "a RocksDB database without column family " UIH_MUTABLE_CF);
    return UIH_OK;
  }
  struct stat st;
  const bool exists = stat(path, &st) == 0;
  struct stat current;
  const bool no_database = exists && S_ISDIR(st.st_mode) &&
                           stat((std::string(path) + "/CURRENT").c_str(), &current) != 0 && errno == ENOENT;
  if (exists && !S_ISDIR(st.st_mode)) return uih::NotAStore(err, path, "it is not a directory");
  if (!dbo.create_if_missing) {
    if (!exists) return uih::NotAStore(err, path, "it does not exist");
    if (no_database) return uih::NotAStore(err, path, "no RocksDB database in it (no CURRENT file)");
  }
  if (exists && !no_database)  // e.g. permissions: say what RocksDB says
    return StatusError(err, path, s, "reading its column families");
  *names = {kDefaultColumnFamilyName};  // a new database
  *created = true;
  return UIH_OK;
}

// Opens the mutable store at `path`; `schema` may be null for a store's
// own mutable tier, whose schema is set once the store has read it.
int OpenStore(const char* path, const uih_schema* schema, const uih_mutable_opts* opts, uih_mutable** out,
              uih_error* err) {
  if (path == nullptr || out == nullptr)
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
  DBOptions dbo;
  ColumnFamilyOptions cfo;
  std::vector<std::string> names;
  bool created = false;
  int rc = ParseOptions(m.get(), o, &dbo, &cfo, err);
  if (rc == UIH_OK) rc = Probe(path, dbo, &names, &created, err);
  if (rc != UIH_OK) return rc;
  std::vector<ColumnFamilyDescriptor> cfs;
  // A store's shard (uih/store.h) also holds generations: UihTable files.
  for (const std::string& name : names)
    cfs.emplace_back(name, name == UIH_MUTABLE_CF        ? cfo
                           : uih::IsGenerationCf(name)   ? uih::GenerationCfOptions()
                                                          : ColumnFamilyOptions());
  if (created) cfs.emplace_back(UIH_MUTABLE_CF, cfo);
  // A reader racing its owner's flush can read the MANIFEST from before
  // it and the logs from after (the flushed one deleted): what the
  // acknowledged mark says is then missing from its view. It looks again.
  for (int attempt = 0;; attempt++) {
    rc = uih::CheckTableProperties(path, err);
    if (rc == UIH_OK) rc = uih::CheckWriteAheadLogs(path, dbo, &m->recovered, err);
    if (rc == UIH_OK) rc = m->acked.Read(path, err);
    if (rc != UIH_OK) return rc;
    Status s = o.read_only ? DB::OpenForReadOnly(dbo, path, cfs, &m->handles, &m->db)
                           : DB::Open(dbo, path, cfs, &m->handles, &m->db);
    if (!s.ok()) return OpenError(err, path, s, dbo, "opening its database");
    m->writable = !o.read_only;
    for (ColumnFamilyHandle* h : m->handles) {
      if (h->GetName() == UIH_MUTABLE_CF) m->events = h;
      if (h->GetName() == kDefaultColumnFamilyName) m->meta = h;
    }
    if (created) {  // a new store is chunked: its span and format are written once, durably
      WriteBatch wb;
      s = wb.Put(m->meta, uih::kChunkSpanKey, uih::I64Value(o.chunk_span));
      if (s.ok()) s = wb.Put(m->meta, uih::kFormatKey, uih::U32Value(uih::kMutableFormat));
      WriteOptions wo;
      wo.sync = true;
      if (s.ok()) s = m->db->Write(wo, &wb);
      if (!s.ok()) return StatusError(err, path, s, "writing the chunk span");
    }
    rc = LoadMeta(m.get(), o.read_only != 0, err);
    bool lost = false;
    if (rc == UIH_OK) rc = m->acked.Check(m->db, !o.read_only, &m->recovered, &lost, err);
    if (rc == UIH_OK || !lost || !o.read_only || attempt == 20) break;
    CloseDatabase(m.get());
    m->recovered.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + attempt));
  }
  if (rc != UIH_OK) return rc;  // m's destructor closes the database
  *out = m.release();
  return UIH_OK;
}

int CheckBatch(uih_mutable* m, const uih_batch* b, uih_error* err) {
  if (b == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_append: NULL batch");
  const uih_group* g = uih_schema_group_by_id(m->schema, b->group->id);
  if (g == nullptr || strcmp(g->name, b->group->name) != 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "mutable_append: group '%s' (%u) is not a group of the store's schema", b->group->name,
                         b->group->id);
  return UIH_OK;
}

// An append's operands, kept for the write-through cache until the write
// is done.
struct Operand {
  uint64_t user;
  uint16_t group;
  int64_t start;
  std::string bytes;
};

// Merges the events of `b` into the key of the chunk holding `ts` (and
// keeps the operand in `ops`, when the tier has a cache).
int MergeEvents(uih_mutable* m, WriteBatch* wb, uint64_t user, const uih_batch* b, int64_t ts,
                std::vector<Operand>* ops, uih_error* err) {
  uih_events* ev = uih::ThreadEvents<uih::Workspace::kStore>();
  if (ev == nullptr) return uih_error_set(err, UIH_ERR_NO_MEMORY, "mutable_append: out of memory");
  const uint8_t* p;
  size_t len;
  int rc = uih_events_encode(ev, b, &p, &len, err);
  if (rc != UIH_OK)
    return UIH_PREFIXED(rc, err, "mutable_append: user %" PRIu64 " group '%s': ", user, b->group->name);
  uint8_t key[UIH_KEY_SIZE];
  size_t klen = uih::MutableKey(m->span, user, b->group->id, ts, key);
  Status s = wb->Merge(m->events, uih::S(key, klen), uih::S(p, len));
  if (s.ok() && m->cache) ops->push_back({user, b->group->id, ts, std::string(reinterpret_cast<const char*>(p), len)});
  return s.ok() ? UIH_OK : StatusError(err, m->path, s, "appending");
}

// Merges the events of `b` chunk by chunk: one Merge when they share a
// chunk (the common case), else one per chunk, the rows split in order.
int MergeChunks(uih_mutable* m, WriteBatch* wb, uint64_t user, const uih_batch* b, std::vector<Operand>* ops,
                uih_error* err) {
  const int64_t* ts = uih_batch_timestamps(b);
  if (ts == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "mutable_append: user %" PRIu64 " group '%s': the batch has no timestamp column", user,
                         b->group->name);
  if (m->span == 0) return MergeEvents(m, wb, user, b, 0, ops, err);  // a store without chunks: one key
  auto chunk_of = [&](uint32_t r) { return uih_key_chunk_start(ts[r], m->span); };
  const int64_t first = chunk_of(0);
  uint32_t r = 1;
  while (r < b->count && chunk_of(r) == first) r++;
  if (r == b->count) return MergeEvents(m, wb, user, b, first, ops, err);
  thread_local std::vector<std::pair<int64_t, uint32_t>> rows;  // (chunk, row)
  rows.clear();
  for (uint32_t i = 0; i < b->count; i++) rows.push_back({chunk_of(i), i});
  std::sort(rows.begin(), rows.end());
  const std::vector<uint16_t> ids = uih::ColumnIds(b);
  uih::BatchPtr part;
  int rc = uih_batch_create(b->group, b->count, ids.data(), b->ncolumns, &part.b, err);
  for (size_t i = 0; rc == UIH_OK && i < rows.size();) {
    uih_batch_clear(part.b);
    size_t j = i;
    for (; rc == UIH_OK && j < rows.size() && rows[j].first == rows[i].first; j++)
      rc = uih_batch_copy_row(part.b, b, rows[j].second, err);
    if (rc == UIH_OK) rc = MergeEvents(m, wb, user, part.b, rows[i].first, ops, err);
    i = j;
  }
  return rc;
}

int AppendMany(uih_mutable* m, const uint64_t* user_ids, const uih_batch* const* events, size_t n, unsigned flags,
               uih_error* err) {
  if (m == nullptr || (n && (user_ids == nullptr || events == nullptr)))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_append: NULL argument");
  WriteBatch wb;
  thread_local std::vector<Operand> ops;
  ops.clear();
  for (size_t i = 0; i < n; i++) {
    int rc = CheckBatch(m, events[i], err);
    if (rc != UIH_OK) return rc;
    if (events[i]->count == 0) continue;
    rc = MergeChunks(m, &wb, user_ids[i], events[i], &ops, err);
    if (rc != UIH_OK) return rc;
  }
  if (wb.Count() == 0) return UIH_OK;
  WriteOptions wo;
  wo.sync = (flags & UIH_APPEND_SYNC) != 0;
  Status s = m->db->Write(wo, &wb);
  if (!s.ok()) return StatusError(err, m->path, s, "appending");
  m->acked.Advance(m->db->GetLatestSequenceNumber(), wo.sync ? uih::LastSequence(wb) : 0);
  for (Operand& op : ops)  // written: through to the cache
    m->cache->Merge(op.user, op.group, op.start, std::move(op.bytes));
  return UIH_OK;
}

int SetWatermark(uih_mutable* m, int64_t watermark, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_set_watermark: NULL");
  std::lock_guard<std::mutex> lock(m->watermark_mu);
  int64_t cur;
  int has;
  int rc = uih::ReadWatermark(m, &cur, &has, err);
  if (rc != UIH_OK) return rc;
  if (has && watermark < cur)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "mutable store %s: watermark %" PRId64 " is below the current %" PRId64 "; it may only advance",
                         m->path.c_str(), watermark, cur);
  WriteOptions wo;
  wo.sync = true;
  WriteBatch wb;
  Status s = wb.Put(m->meta, uih::kWatermarkKey, uih::I64Value(watermark));
  if (s.ok()) s = m->db->Write(wo, &wb);
  if (!s.ok()) return StatusError(err, m->path, s, "writing the watermark");
  m->acked.Advance(m->db->GetLatestSequenceNumber(), uih::LastSequence(wb));
  m->wm.store(watermark, std::memory_order_release);
  m->has_wm.store(true, std::memory_order_release);
  if (m->retention) m->retention->SetWatermark(watermark);
  return UIH_OK;
}

int GetWatermark(uih_mutable* m, int64_t* watermark, int* has, uih_error* err) {
  if (m == nullptr || watermark == nullptr || has == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_watermark: NULL argument");
  return uih::ReadWatermark(m, watermark, has, err);
}

int Flush(uih_mutable* m, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_flush: NULL");
  Status s = m->db->Flush(FlushOptions(), m->events);
  return s.ok() ? UIH_OK : StatusError(err, m->path, s, "flushing");
}

int Compact(uih_mutable* m, uih_error* err) {
  if (m == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_compact: NULL");
  CompactRangeOptions o;
  o.bottommost_level_compaction = BottommostLevelCompaction::kForce;
  Status s = m->db->CompactRange(o, m->events, nullptr, nullptr);
  return s.ok() ? UIH_OK : StatusError(err, m->path, s, "compacting");
}

}  // namespace

namespace uih {

int ApplyToMutable(uih_mutable* m, const std::vector<uint64_t>& erased, int64_t through, uint32_t generation,
                   bool retention, uih_error* err) {
  std::lock_guard<std::mutex> lock(m->watermark_mu);
  const uih_schema* schema = m->schema.load();
  WriteBatch wb;
  Status s;
  for (size_t i = 0; s.ok() && i < erased.size(); i++)
    for (uint32_t k = 0; s.ok() && k < uih_schema_group_count(schema); k++) {
      uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE], end[UIH_KEY_SIZE];  // every chunk of the history
      MutableKeyRange(erased[i], uih_schema_group_at(schema, k)->id, begin, end);
      s = wb.DeleteRange(m->events, S(begin, sizeof begin), S(end, sizeof end));
    }
  const bool advance = !m->has_wm.load() || through > m->wm.load();
  if (s.ok() && advance) s = wb.Put(m->meta, kWatermarkKey, I64Value(through));
  if (s.ok()) s = wb.Put(m->meta, kAppliedKey, U32Value(generation));
  WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = m->db->Write(wo, &wb);
  if (!s.ok()) return StatusError(err, m->path, s, "applying generation %u (%zu erased users, through %" PRId64 ")",
                                  generation, erased.size(), through);
  m->acked.Advance(m->db->GetLatestSequenceNumber(), LastSequence(wb));
  if (m->cache) {
    std::vector<uint16_t> groups;
    for (uint32_t k = 0; k < uih_schema_group_count(schema); k++) groups.push_back(uih_schema_group_at(schema, k)->id);
    for (uint64_t user : erased) m->cache->Erase(user, groups);
  }
  if (advance) {
    m->wm.store(through, std::memory_order_release);
    m->has_wm.store(true, std::memory_order_release);
    if (retention) SetRetention(m, through);
  }
  m->applied.store(generation, std::memory_order_release);
  return UIH_OK;
}

void EnableCache(uih_mutable* m, size_t bytes) {
  if (bytes > 0 && m->span > 0) m->cache = std::make_unique<MutableCache>(bytes, m->span, m->limits);
}

void SetRetention(uih_mutable* m, int64_t watermark) {
  if (m->retention) m->retention->SetWatermark(watermark);
}

int CreateStoreMutable(const std::string& path, int64_t span, uih_error* err) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.create_if_missing = 1;
  o.chunk_span = span;
  uih_mutable* m = nullptr;
  int rc = OpenStore(path.c_str(), nullptr, &o, &m, err);
  delete m;
  return rc;
}

int OpenStoreMutable(const std::string& path, const uih_mutable_opts& o, uih_mutable** out, uih_error* err) {
  return OpenStore(path.c_str(), nullptr, &o, out, err);
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
  if (!s.ok()) return StatusError(err, path, s, "reading the mutable tier's options");
  m->retention = std::dynamic_pointer_cast<UihRetentionFactory>(d.options.compaction_filter_factory);
  int rc = LoadMeta(m.get(), true, err);  // read-only: a writable open moves it first (move.cc)
  if (rc != UIH_OK) return rc;
  m->applied.store(UINT32_MAX, std::memory_order_release);  // its publishes erased from it themselves
  *out = m.release();
  return UIH_OK;
}

void FreeMutable(uih_mutable* m) { delete m; }

void SetMutableSchema(uih_mutable* m, const uih_schema* schema) { m->schema = schema; }

}  // namespace uih

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

int uih_mutable_open(const char* path, const uih_schema* schema, const uih_mutable_opts* opts, uih_mutable** out,
                     uih_error* err) {
  return uih::CallC(err, "uih_mutable_open", [&] {
    if (schema == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "mutable_open: NULL schema");
    return OpenStore(path, schema, opts, out, err);
  });
}

void uih_mutable_close(uih_mutable* m) {
  uih::CallCVoid([&] { delete m; });
}

int uih_mutable_append_many(uih_mutable* m, const uint64_t* user_ids, const uih_batch* const* events, size_t n,
                            unsigned flags, uih_error* err) {
  return uih::CallC(err, "uih_mutable_append_many", [&] { return AppendMany(m, user_ids, events, n, flags, err); });
}

int uih_mutable_append(uih_mutable* m, uint64_t user_id, const uih_batch* events, unsigned flags, uih_error* err) {
  return uih::CallC(err, "uih_mutable_append", [&] { return AppendMany(m, &user_id, &events, 1, flags, err); });
}

int64_t uih_mutable_chunk_span(const uih_mutable* m) { return m ? m->span : 0; }

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
