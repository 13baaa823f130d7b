// The C API of uih/store.h: publishing a writer's generation and retiring
// old ones. A publish ingests the generation's files into a column family of
// their own (a layered one's base, shared, below them), then makes it current in one synced write (its record, its
// dictionaries, the current pointer, a new schema version, the erasures),
// then writes the .published hint serving processes poll, applies the
// generation to the mutable tier when this store owns it (follow.h), and
// retires the generations beyond `keep` that no other store pins.
// Killed at any point, the shard opens on the previous generation or on
// the new one, complete.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih/key.h"
#include "uih_plugin/c_api.h"

using namespace rocksdb;
using uih::Generation;
using uih::Shard;
using uih::StatusError;

namespace {

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
    const uint32_t g = old->number();
    bool pinned = false;
    int rc = s->pins.Pinned(sh->index, g, &pinned, err);
    if (rc != UIH_OK) return rc;
    if (pinned) continue;
    Status st = uih::DeleteGenerationRecord(sh->im.get(), g);
    if (st.ok()) st = sh->im->db->DropColumnFamily(old->cf());
    if (!st.ok()) return StatusError(err, sh->path, st, "retiring generation %u", g);
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens.erase(g);  // its handle goes with the last reader
    live--;
  }
  return UIH_OK;
}

// The schema version the generation is written with: one the store knows
// (uih_store_schema_add), not older than the shard's.
int VersionOf(uih_store_writer* w, const uih_generation* g, const uih::SchemaVersion** out, uih_error* err) {
  const uih::SchemaVersion* version = nullptr;
  {
    std::lock_guard<std::mutex> lock(w->s->schemas_mu);
    auto it = w->s->schemas.find(g->schema_version);
    if (it != w->s->schemas.end()) version = &it->second;  // entries stay until close
  }
  if (version == nullptr || g->schema_version < w->sh->schema_version)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "schema version %u is %s (the shard has version %u; uih_store_schema_add adds one)",
                         g->schema_version, version ? "older than the shard's" : "not one the store knows",
                         w->sh->schema_version);
  *out = version;
  return UIH_OK;
}

// Files ingested as one layer of `cf`: moved (linked, then the link given
// unlinked) when `move`, copied otherwise. The global seqno RocksDB gives
// them stays in its MANIFEST, never written into a file, which another
// generation may share.
Status IngestLayer(DB* db, ColumnFamilyHandle* cf, const std::vector<std::string>& files, bool move) {
  IngestExternalFileOptions io;
  io.move_files = move;
  io.write_global_seqno = false;
  return db->IngestExternalFile(cf, files, io);
}

// A layered generation's share of its base: each layer of the base's
// files, oldest first, linked into the writer's folder and ingested as a
// layer of its own, so that RocksDB orders them as they were (a layer that
// meets keys already ingested gets a newer seqno). Where the file system
// has no hard links, RocksDB copies the layer.
int ShareBase(uih_store_writer* w, ColumnFamilyHandle* cf, uih_error* err) {
  Shard* sh = w->sh;
  DB* db = sh->im->db;
  size_t n = 0;
  for (const uih::GenerationLayer& layer : w->base->Layers()) {
    std::vector<std::string> sources, links;
    for (const SstFileMetaData& f : layer.files) {
      sources.push_back(f.directory + "/" + f.relative_filename);
      char name[32];
      snprintf(name, sizeof name, "/shared-%06zu.sst", ++n);
      links.push_back(w->dir + name);
      if (link(sources.back().c_str(), links.back().c_str()) != 0) {
        const int e = errno;
        links.pop_back();
        if (e != EXDEV && e != EPERM && e != ENOTSUP && e != EMLINK)
          return uih_error_set(err, UIH_ERR_IO, "store %s: linking %s to %s: %s", sh->path.c_str(),
                               sources.back().c_str(), (w->dir + name).c_str(), strerror(e));
      }
    }
    const bool linked = links.size() == sources.size();
    Status st = IngestLayer(db, cf, linked ? links : sources, linked);
    if (!st.ok())
      return StatusError(err, sh->path, st, "ingesting the files of generation %u it shares", w->base->number());
  }
  return UIH_OK;
}

// The generation's column family, with its files ingested (moved): a
// layered one's base first.
int Ingest(uih_store_writer* w, ColumnFamilyHandle** out, uih_error* err) {
  Shard* sh = w->sh;
  ColumnFamilyHandle* cf = nullptr;
  DB* db = sh->im->db;
  Status st = db->CreateColumnFamily(uih::GenerationCfOptions(), uih::GenerationCfName(w->generation), &cf);
  if (!st.ok()) return StatusError(err, sh->path, st, "creating its column family");
  int rc = w->base ? ShareBase(w, cf, err) : UIH_OK;
  if (rc == UIH_OK && !w->files.empty()) {
    st = IngestLayer(db, cf, w->files, /*move=*/true);
    if (!st.ok()) rc = StatusError(err, sh->path, st, "ingesting its files");
  }
  if (rc != UIH_OK) {
    db->DropColumnFamily(cf).PermitUncheckedError();
    db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    return rc;
  }
  *out = cf;
  return UIH_OK;
}

// The switch: one synced write of everything the new generation brings.
Status WriteSwitch(uih_store_writer* w, const uih_generation& g, const uint8_t* rec,
                   const uih::SchemaVersion& version) {
  Shard* sh = w->sh;
  ColumnFamilyHandle* meta = sh->im->meta;
  WriteBatch wb;
  Status st = wb.Put(meta, uih::GenerationKey(w->generation), uih::S(rec, UIH_GENERATION_SIZE));
  if (st.ok() && !w->dicts.empty()) st = wb.Put(meta, uih::DictsKey(w->generation), w->dicts);
  if (st.ok()) st = wb.Put(meta, uih::kCurrentKey, uih::U32Value(w->generation));
  if (st.ok() && g.schema_version > sh->schema_version)  // a schema change comes with its first generation
    st = wb.Put(meta, uih::SchemaKey(g.schema_version), version.json);
  if (st.ok() && w->base && sh->im->format < uih::kFormatLayered)  // the first layered generation
    st = wb.Put(meta, uih::kFormatKey, uih::U32Value(uih::kFormatLayered));
  // Records logged before it are never rebuilt; the mutable tier's owner
  // deletes the user's events when it applies the generation.
  const std::string erasure = uih::ErasedValue({w->generation, g.through});
  for (size_t i = 0; st.ok() && i < w->erased_users.size(); i++)
    st = wb.Put(meta, uih::ErasedKey(w->erased_users[i]), erasure);
  WriteOptions wo;
  wo.sync = true;
  if (st.ok()) st = sh->im->db->Write(wo, &wb);
  return st;
}

// The new generation in memory: the shard's current one, its erasures, and
// a newer schema version the store's (its mutable tiers' first).
void Install(uih_store_writer* w, const uih_generation& g, std::shared_ptr<Generation> gen,
             const uih::SchemaVersion& version) {
  Shard* sh = w->sh;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens[w->generation] = std::move(gen);
    sh->current = w->generation;
    for (uint64_t user : w->erased_users) sh->erased[user] = {w->generation, g.through};
    if (!w->erased_users.empty()) sh->any_erased.store(true, std::memory_order_release);
  }
  sh->schema_version = g.schema_version;
  std::lock_guard<std::mutex> lock(w->s->schemas_mu);
  if (g.schema_version > uih_schema_version(w->s->schema)) {
    for (auto& shard : w->s->shards)
      if (shard && shard->mut) uih::SetMutableSchema(shard->mut, version.schema);
    w->s->schema = version.schema;
  }
}

int Publish(uih_store_writer* w, uih_generation* g, uih_error* err) {
  Shard* sh = w->sh;
  uint32_t previous;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    previous = sh->current;
  }
  auto failed = [&](int rc) {
    return UIH_PREFIXED(rc, err, "shard %u: generation %u not published (%s): ", sh->index, w->generation,
                        previous ? ("generation " + std::to_string(previous) + " is still current").c_str()
                                 : "the shard still has no generation");
  };
  if (w->base && w->base->number() != previous)
    return failed(uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                                "it is a layer above generation %u, which is no longer current",
                                w->base->number()));
  const uih::SchemaVersion* version = nullptr;
  int rc = VersionOf(w, g, &version, err);
  if (rc == UIH_OK) rc = uih::FinishFile(w, err);
  if (rc != UIH_OK) return failed(rc);
  g->generation = w->generation;
  g->parent = previous;
  g->shard = sh->index;
  uint8_t rec[UIH_GENERATION_SIZE];
  uih_generation_encode(g, rec);
  uih_generation check;
  rc = uih_generation_decode(rec, sizeof rec, &check, err);  // what a reader would refuse is not written
  if (rc != UIH_OK) return failed(rc);
  auto gen = std::make_shared<Generation>(*g, sh->im);  // its dictionaries parsed before anything is written
  rc = gen->SetDicts(w->dicts, err);
  if (rc != UIH_OK) return failed(rc);
  ColumnFamilyHandle* cf = nullptr;
  rc = Ingest(w, &cf, err);
  if (rc != UIH_OK) return failed(rc);
  Status st = WriteSwitch(w, *g, rec, *version);
  if (!st.ok()) {
    sh->im->db->DropColumnFamily(cf).PermitUncheckedError();
    sh->im->db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    return failed(StatusError(err, sh->path, st, "writing its record"));
  }
  if (w->base && sh->im->format < uih::kFormatLayered) sh->im->format = uih::kFormatLayered;
  gen->set_cf(cf);
  std::weak_ptr<Generation> before = sh->Get(0);  // what readers in flight hold
  Install(w, *g, std::move(gen), *version);
  rc = uih::WritePublished(w->s, sh, err);  // a hint: what follows is done whatever became of it
  uih_error later{};
  int rc2 = sh->mut ? uih::ApplySwitch(sh, before, rc == UIH_OK ? err : &later) : UIH_OK;
  if (rc == UIH_OK) rc = rc2;
  rc2 = Retire(w->s, sh, rc == UIH_OK ? err : &later);
  if (rc == UIH_OK) rc = rc2;
  // The switch and the retirement out of the write-ahead log: a log damaged
  // later cannot take the publish back.
  st = uih::FlushOut(sh->im->db, {sh->im->meta});
  if (!st.ok() && rc == UIH_OK) rc = StatusError(err, sh->path, st, "flushing its metadata");
  if (rc != UIH_OK)
    return UIH_PREFIXED(rc, err, "shard %u: generation %u is published and current, but: ", sh->index, w->generation);
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_writer_publish(uih_store_writer* w, uih_generation* g, uih_error* err) {
  int rc = uih::CallC(err, "uih_store_writer_publish", [&] {
    if (w == nullptr || g == nullptr)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_publish: NULL argument");
    return Publish(w, g, err);
  });
  uih::CallCVoid([&] { delete w; });
  return rc;
}

}  // extern "C"
