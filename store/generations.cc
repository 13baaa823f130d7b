// The C API of uih/store.h: scans of a generation, the writer that builds
// the next one, schema versions for loads, publishing (ingest, one synced
// write, the watermark) and retiring.
#include "uih/store.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "uih_plugin/c_api.h"
#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "format.h"
#include "uih/key.h"
#include "uih/stripe.h"
#include "uih_plugin/table.h"

using namespace rocksdb;
using uih::CatchUpWatermark;
using uih::Fail;
using uih::Generation;
using uih::S;
using uih::SchemaVersion;
using uih::Shard;
using uih::ShardAt;
using uih::U8;
namespace fs = std::filesystem;

namespace {

int ScanOpen(uih_store* s, uint32_t shard, uint32_t generation, uih_store_scan** out, uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_open: NULL argument");
  auto sc = std::make_unique<uih_store_scan>();
  sc->gen = sh->Get(generation);
  if (generation != 0 && !sc->gen)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: shard %u has no live generation %u", s->dir.c_str(), shard,
                         generation);
  if (sc->gen) {
    ReadOptions ro;
    ro.fill_cache = false;
    ro.readahead_size = 4 << 20;  // a sequential pass
    sc->it.reset(sh->db->NewIterator(ro, sc->gen->cf));
  }
  *out = sc.release();
  return UIH_OK;
}

int ScanNext(uih_store_scan* sc, const uint8_t** key, size_t* klen, const uint8_t** value, size_t* vlen, uih_error* err) {
  if (sc == nullptr || key == nullptr || klen == nullptr || value == nullptr || vlen == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_next: NULL argument");
  *key = nullptr;
  if (!sc->it) return UIH_OK;
  if (!sc->started) sc->it->SeekToFirst();
  else sc->it->Next();
  sc->started = true;
  if (!sc->it->Valid()) {
    Status st = sc->it->status();
    if (st.ok()) return UIH_OK;
    return Fail(err, "generation " + std::to_string(sc->gen->record.generation), st, "scanning");
  }
  *key = U8(sc->it->key());
  *klen = sc->it->key().size();
  *value = U8(sc->it->value());
  *vlen = sc->it->value().size();
  return UIH_OK;
}

int SchemaAdd(uih_store* s, const char* json, size_t len, const char* origin, const uih_schema** out,
              uih_error* err) {
  if (s == nullptr || json == nullptr || out == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_schema_add: NULL argument");
  uih_schema* parsed = nullptr;
  int rc = uih_schema_parse(json, len, origin ? origin : "schema", &parsed, err);
  if (rc != UIH_OK) return rc;
  std::unique_ptr<uih_schema, void (*)(uih_schema*)> own(parsed, uih_schema_free);
  uint32_t v = uih_schema_version(parsed);
  std::lock_guard<std::mutex> lock(s->schemas_mu);
  if (v < uih_schema_version(s->schema))
    return uih_error_set(err, UIH_ERR_INCOMPATIBLE,
                         "%s: schema version %u is older than the store's, version %u (a load writes with the "
                         "newest)",
                         origin ? origin : "schema", v, uih_schema_version(s->schema));
  auto it = s->schemas.find(v);
  if (it != s->schemas.end()) {
    if (it->second.json != std::string(json, len))
      return uih_error_set(err, UIH_ERR_INCOMPATIBLE,
                           "%s: the store already has a schema version %u, and it is not this text (a change "
                           "needs a new version)",
                           origin ? origin : "schema", v);
    *out = it->second.schema;
    return UIH_OK;
  }
  const SchemaVersion& newest = s->schemas.rbegin()->second;
  rc = uih_schema_check_evolution(newest.schema, parsed, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "%s is no successor of the store's schema version %u: ", origin ? origin : "schema",
                     uih_schema_version(newest.schema));
    return rc;
  }
  SchemaVersion& added = s->schemas[v];
  added.json.assign(json, len);
  added.schema = own.release();
  *out = added.schema;
  return UIH_OK;
}

int WriterOpen(uih_store* s, uint32_t shard, uih_store_writer** out, uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_open: NULL argument");
  if (s->opts.read_only)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED, "store %s: opened read-only, it takes no new generation",
                         s->dir.c_str());
  {
    std::lock_guard<std::mutex> lock(sh->writer_mu);
    if (sh->writing)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store %s: a load of shard %u is already running",
                           s->dir.c_str(), shard);
    sh->writing = true;
  }
  auto w = std::make_unique<uih_store_writer>();
  w->s = s;
  w->sh = sh;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    w->generation = std::max(sh->current, sh->gens.empty() ? 0u : sh->gens.rbegin()->first) + 1;
  }
  char name[64];
  snprintf(name, sizeof name, "/shard-%04u.gen-%08u", shard, w->generation);
  w->dir = s->tmp + name;
  std::error_code ec;
  fs::remove_all(w->dir, ec);
  if (!fs::create_directories(w->dir, ec))
    return uih_error_set(err, UIH_ERR_IO, "store %s: creating %s: %s", s->dir.c_str(), w->dir.c_str(),
                         ec.message().c_str());
  w->options = Options(DBOptions(), uih::GenerationCfOptions());
  *out = w.release();
  return UIH_OK;
}

int FinishFile(uih_store_writer* w, uih_error* err) {
  if (!w->file) return UIH_OK;
  Status st = w->file->Finish();
  w->file.reset();
  w->file_bytes = 0;
  return st.ok() ? UIH_OK : Fail(err, w->files.back(), st, "finishing the table file");
}

int WriterAdd(uih_store_writer* w, const uint8_t* key, size_t klen, const uint8_t* value, size_t vlen, uih_error* err) {
  if (w == nullptr || key == nullptr || (value == nullptr && vlen))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_add: NULL argument");
  if (!w->file) {
    char name[32];
    snprintf(name, sizeof name, "/%06zu.sst", w->files.size() + 1);
    w->files.push_back(w->dir + name);
    // The page cache keeps what is written (SstFileWriter drops it by
    // default): the generation is served as soon as it is published, and
    // its first snapshots would otherwise read the device.
    w->file = std::make_unique<SstFileWriter>(EnvOptions(), w->options, /*column_family=*/nullptr,
                                              /*invalidate_page_cache=*/false);
    Status st = w->file->Open(w->files.back());
    if (!st.ok()) return Fail(err, w->files.back(), st, "creating a table file");
  }
  Status st = w->file->Put(S(key, klen), S(value, vlen));
  if (!st.ok()) return Fail(err, w->files.back(), st, "adding a stripe");
  w->file_bytes += klen + vlen;
  if (w->file_bytes >= w->s->opts.file_bytes) return FinishFile(w, err);
  return UIH_OK;
}

// Retires the oldest generations beyond `keep` that no read-only store
// holds (pins.h; a pinned one is retired by a later publish, once let
// go): the record first, then the column family (a crash between leaves a
// column family without a record, which the next open drops).
int Retire(uih_store* s, Shard* sh, uih_error* err) {
  uih::PinGate gate(&s->pins, true, err);
  if (gate.rc() != UIH_OK) return gate.rc();
  std::vector<std::shared_ptr<Generation>> older;  // oldest first, the current one not among them
  size_t live;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    live = sh->gens.size();
    for (auto& [g, gen] : sh->gens)
      if (g != sh->current) older.push_back(gen);
  }
  for (const std::shared_ptr<Generation>& old : older) {
    if (live <= s->opts.keep) break;
    const uint32_t g = old->record.generation;
    bool pinned = false;
    int rc = s->pins.Pinned(sh->index, g, &pinned, err);
    if (rc != UIH_OK) return rc;
    if (pinned) continue;
    WriteOptions wo;
    wo.sync = true;
    WriteBatch wb;  // the record and its dictionaries go together
    Status st = wb.Delete(sh->meta, uih::GenerationKey(g));
    if (st.ok()) st = wb.Delete(sh->meta, uih::DictsKey(g));
    if (st.ok()) st = sh->db->Write(wo, &wb);
    if (st.ok()) st = sh->db->DropColumnFamily(old->cf);
    if (!st.ok()) return Fail(err, sh->path, st, "retiring generation " + std::to_string(g));
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens.erase(g);  // its handle goes with the last reader
    live--;
  }
  return UIH_OK;
}

int Publish(uih_store_writer* w, uih_generation* g, uih_error* err) {
  Shard* sh = w->sh;
  uint32_t previous;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    previous = sh->current;
  }
  auto failed = [&](int rc) {
    uih_error_prefix(err, "shard %u: generation %u not published (%s): ", sh->index, w->generation,
                     previous ? ("generation " + std::to_string(previous) + " is still current").c_str()
                              : "the shard still has no generation");
    return rc;
  };
  const SchemaVersion* version = nullptr;
  {
    std::lock_guard<std::mutex> lock(w->s->schemas_mu);
    auto it = w->s->schemas.find(g->schema_version);
    if (it != w->s->schemas.end()) version = &it->second;  // entries stay until close
  }
  if (version == nullptr || g->schema_version < sh->schema_version)
    return failed(uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                                "schema version %u is %s (the shard has version %u; uih_store_schema_add adds one)",
                                g->schema_version, version ? "older than the shard's" : "not one the store knows",
                                sh->schema_version));
  int rc = FinishFile(w, err);
  if (rc != UIH_OK) return failed(rc);
  g->generation = w->generation;
  g->parent = previous;
  g->shard = sh->index;
  uint8_t rec[UIH_GENERATION_SIZE];
  uih_generation_encode(g, rec);
  uih_generation check;
  rc = uih_generation_decode(rec, sizeof rec, &check, err);  // what a reader would refuse is not written
  if (rc != UIH_OK) return failed(rc);

  ColumnFamilyHandle* cf = nullptr;
  Status st = sh->db->CreateColumnFamily(uih::GenerationCfOptions(), uih::GenerationCfName(w->generation), &cf);
  if (!st.ok()) return failed(Fail(err, sh->path, st, "creating its column family"));
  auto drop = [&] {
    sh->db->DropColumnFamily(cf).PermitUncheckedError();
    sh->db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  };
  if (!w->files.empty()) {
    IngestExternalFileOptions io;
    io.move_files = true;
    st = sh->db->IngestExternalFile(cf, w->files, io);
    if (!st.ok()) {
      drop();
      return failed(Fail(err, sh->path, st, "ingesting its files"));
    }
  }
  auto gen = std::make_shared<Generation>();  // its dictionaries parsed before anything is written
  gen->record = *g;
  gen->db = sh->db;
  rc = gen->SetDicts(w->dicts, "shard " + std::to_string(sh->index), err);
  if (rc != UIH_OK) {
    drop();
    return failed(rc);
  }
  WriteBatch wb;
  std::string cur;
  uih::AppendBE32(&cur, w->generation);
  st = wb.Put(sh->meta, uih::GenerationKey(w->generation), S(rec, sizeof rec));
  if (st.ok() && !w->dicts.empty()) st = wb.Put(sh->meta, uih::DictsKey(w->generation), w->dicts);
  if (st.ok()) st = wb.Put(sh->meta, uih::kCurrentKey, cur);
  if (st.ok() && g->schema_version > sh->schema_version)  // a schema change comes with its first generation
    st = wb.Put(sh->meta, uih::SchemaKey(g->schema_version), version->json);
  const uih_schema* schema = version->schema;
  const std::string erasure = uih::ErasedValue(w->generation, g->through);
  for (size_t i = 0; st.ok() && i < w->erased_users.size(); i++) {
    st = wb.Put(sh->meta, uih::ErasedKey(w->erased_users[i]), erasure);  // records logged before it: never rebuilt
    for (uint32_t k = 0; st.ok() && k < uih_schema_group_count(schema); k++) {
      uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE], end[UIH_KEY_SIZE];  // every chunk of the history
      uih::MutableKeyRange(w->erased_users[i], uih_schema_group_at(schema, k)->id, begin, end);
      st = wb.DeleteRange(sh->events, S(begin, sizeof begin), S(end, sizeof end));
    }
  }
  WriteOptions wo;
  wo.sync = true;
  if (st.ok()) st = sh->db->Write(wo, &wb);  // the switch
  if (!st.ok()) {
    drop();
    return failed(Fail(err, sh->path, st, "writing its record"));
  }
  gen->cf = cf;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens[w->generation] = gen;
    sh->current = w->generation;
    for (uint64_t user : w->erased_users) sh->erased[user] = {w->generation, g->through};
    if (!w->erased_users.empty()) sh->any_erased.store(true, std::memory_order_release);
  }
  sh->schema_version = g->schema_version;
  {
    std::lock_guard<std::mutex> lock(w->s->schemas_mu);
    if (g->schema_version > uih_schema_version(w->s->schema)) {  // the tiers first, then the store's
      for (auto& other : w->s->shards)
        if (other) uih::SetMutableSchema(other->mut, schema);
      w->s->schema = schema;
    }
  }
  rc = CatchUpWatermark(sh, err);
  if (rc == UIH_OK) rc = Retire(w->s, sh, err);
  if (rc != UIH_OK)
    uih_error_prefix(err, "shard %u: generation %u is published and current, but: ", sh->index, w->generation);
  return rc;
}

}  // namespace

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

int uih_store_scan_open(uih_store* s, uint32_t shard, uint32_t generation, uih_store_scan** out, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_open", [&] { return ScanOpen(s, shard, generation, out, err); });
}

int uih_store_scan_next(uih_store_scan* sc, const uint8_t** key, size_t* key_len, const uint8_t** value,
                        size_t* value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_next", [&] { return ScanNext(sc, key, key_len, value, value_len, err); });
}

int uih_store_scan_dicts(uih_store_scan* sc, const uint8_t** bytes, size_t* len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_dicts", [&]() -> int {
    if (sc == nullptr || bytes == nullptr || len == nullptr)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_dicts: NULL argument");
    if (!sc->dicts_made && sc->gen && sc->gen->ctx) {  // derived from the parsed set: kept once
      uint8_t* p = nullptr;
      size_t n = 0;
      int rc = uih_stripe_context_serialize(sc->gen->ctx, &p, &n, err);
      if (rc != UIH_OK) return rc;
      sc->dicts.assign(reinterpret_cast<const char*>(p), n);
      free(p);
    }
    sc->dicts_made = true;
    *bytes = reinterpret_cast<const uint8_t*>(sc->dicts.data());
    *len = sc->dicts.size();
    return UIH_OK;
  });
}

void uih_store_scan_close(uih_store_scan* sc) {
  uih::CallCVoid([&] { delete sc; });
}

int uih_store_writer_open(uih_store* s, uint32_t shard, uih_store_writer** out, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_open", [&] { return WriterOpen(s, shard, out, err); });
}

uint32_t uih_store_writer_generation(const uih_store_writer* w) { return w ? w->generation : 0; }

int uih_store_writer_add(uih_store_writer* w, const uint8_t* key, size_t key_len, const uint8_t* value,
                         size_t value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_add", [&] { return WriterAdd(w, key, key_len, value, value_len, err); });
}

int uih_store_writer_finish(uih_store_writer* w, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_finish", [&] {
    if (w == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_finish: NULL argument");
    return FinishFile(w, err);
  });
}

int uih_store_writer_publish(uih_store_writer* w, uih_generation* g, uih_error* err) {
  int rc = uih::CallC(err, "uih_store_writer_publish", [&] {
    if (w == nullptr || g == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_publish: NULL argument");
    return Publish(w, g, err);
  });
  uih::CallCVoid([&] { delete w; });
  return rc;
}

int uih_store_schema_add(uih_store* s, const char* json, size_t len, const char* origin, const uih_schema** out,
                         uih_error* err) {
  return uih::CallC(err, "uih_store_schema_add", [&] { return SchemaAdd(s, json, len, origin, out, err); });
}

int uih_store_writer_set_dicts(uih_store_writer* w, const uint8_t* bytes, size_t len, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_set_dicts", [&]() -> int {
    if (w == nullptr || (bytes == nullptr && len))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_set_dicts: NULL argument");
    w->dicts.assign(reinterpret_cast<const char*>(bytes), len);  // parsed by the publish, before it writes
    return UIH_OK;
  });
}

int uih_store_writer_erase_user(uih_store_writer* w, uint64_t user_id, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_erase_user", [&] {
    if (w == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_erase_user: NULL writer");
    w->erased_users.push_back(user_id);
    return static_cast<int>(UIH_OK);
  });
}

void uih_store_writer_abort(uih_store_writer* w) {
  uih::CallCVoid([&] { delete w; });
}

}  // extern "C"
