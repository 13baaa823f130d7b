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

#include "logger.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/object_registry.h"
#include "rocksdb/write_batch.h"
#include "c_api.h"
#include "status.h"
#include "thread_events.h"
#include "uih/events.h"
#include "uih/key.h"
#include "store_layout.h"
#include "uih_mutable.h"

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

const char kWatermarkKey[] = "uih.watermark";

DB* MutableDB(uih_mutable* m) { return m->db; }
ColumnFamilyHandle* MutableColumnFamily(uih_mutable* m) { return m->events; }

}  // namespace uih

namespace {

int Fail(uih_error* err, const uih_mutable* m, const Status& s, const char* what) {
  return uih_error_set(err, uih::FromStatus(s), "mutable store %s: %s: %s", m ? m->path.c_str() : "", what,
                       s.ToString().c_str());
}

int ReadWatermark(uih_mutable* m, int64_t* wm, int* has, uih_error* err);

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
  int64_t wm;
  int has;
  int rc = ReadWatermark(m.get(), &wm, &has, err);
  if (rc != UIH_OK) return rc;  // m's destructor closes the database
  if (has && m->retention) m->retention->SetWatermark(wm);
  *out = m.release();
  return UIH_OK;
}

void CloseStore(uih_mutable* m) { delete m; }

int AppendMany(uih_mutable* m, const uint64_t* user_ids,
                            const uih_batch* const* events, size_t n, unsigned flags,
                            uih_error* err) {
  if (m == nullptr || (n && (user_ids == nullptr || events == nullptr)))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "append: NULL argument");
  uih_events* ev = uih::ThreadEvents<uih::Workspace::kStore>();
  if (ev == nullptr) return uih_error_set(err, UIH_ERR_NO_MEMORY, "append: out of memory");
  WriteBatch wb;
  for (size_t i = 0; i < n; i++) {
    int rc = CheckBatch(m, events[i], err);
    if (rc != UIH_OK) return rc;
    if (events[i]->count == 0) continue;
    const uint8_t* p;
    size_t len;
    rc = uih_events_encode(ev, events[i], &p, &len, err);
    if (rc != UIH_OK)
      return uih_error_prefix(err, "append: user %" PRIu64 " group '%s': ", user_ids[i],
                              events[i]->group->name);
    uint8_t key[UIH_KEY_GROUP_PREFIX_SIZE];
    uih_key_group_prefix(user_ids[i], events[i]->group->id, key);
    Status s = wb.Merge(m->events, Slice(reinterpret_cast<char*>(key), sizeof key),
                        Slice(reinterpret_cast<const char*>(p), len));
    if (!s.ok()) return Fail(err, m, s, "append");
  }
  if (wb.Count() == 0) return UIH_OK;
  WriteOptions wo;
  wo.sync = (flags & UIH_APPEND_SYNC) != 0;
  Status s = m->db->Write(wo, &wb);
  return s.ok() ? UIH_OK : Fail(err, m, s, "append");
}

int ReadEvents(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts,
                     int64_t max_ts, uint32_t newest, uih_batch** batch, uih_error* err) {
  if (m == nullptr || batch == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "read: NULL argument");
  const uih_group* g = uih_schema_group_by_id(m->schema, group);
  if (g == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "read: the schema has no group with id %u", group);
  uint8_t key[UIH_KEY_GROUP_PREFIX_SIZE];
  uih_key_group_prefix(user_id, group, key);
  PinnableSlice value;
  Status s = m->db->Get(ReadOptions(), m->events,
                        Slice(reinterpret_cast<char*>(key), sizeof key), &value);
  if (!s.ok() && !s.IsNotFound()) {
    Fail(err, m, s, "read");
    return uih_error_prefix(err, "user %" PRIu64 " group %u: ", user_id, group);
  }
  const uint8_t* data = reinterpret_cast<const uint8_t*>(value.data());
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
  bool usable = same_group();
  if (s.IsNotFound()) {
    if (!usable) return regrow(1);
    uih_batch_clear(*batch);
    return UIH_OK;
  }
  // One pass when the caller's batch is large enough (the common case);
  // otherwise size a new one from the list's event count and decode again.
  int rc = usable ? uih_events_decode_newest(data, value.size(), min_ts, max_ts, newest, *batch, err)
                  : UIH_ERR_OUT_OF_RANGE;
  if (rc != UIH_ERR_OUT_OF_RANGE) return rc == UIH_OK ? UIH_OK : failed(rc);
  uih_events_info info{};
  rc = uih_events_read_info(data, value.size(), &info, err);
  if (rc != UIH_OK) return failed(rc);
  uint32_t want = std::min<uint32_t>(std::max<uint32_t>(std::min(info.count, newest), 1), UIH_STRIPE_EVENTS_MAX);
  if (!usable || (*batch)->capacity < want) {
    rc = regrow(want);
    if (rc != UIH_OK) return rc;
  }
  rc = uih_events_decode_newest(data, value.size(), min_ts, max_ts, newest, *batch, err);
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
