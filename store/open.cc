// The C API of uih/store.h: opening a store. The descriptor, then each
// shard's database (its column families, its metadata, its generations
// paired with their records), then the schema; a writable open also
// finishes what a killed load left. Read-only opens pin what they open
// (pins.h).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"
#include "uih_plugin/table.h"

using namespace rocksdb;
namespace fs = std::filesystem;

namespace uih {

ColumnFamilyOptions GenerationCfOptions() {
  // One factory for every generation of the process: no value cache, so
  // nothing in it belongs to a store. Reproducible: the same load gives the
  // same files.
  static const std::shared_ptr<TableFactory> factory = [] {
    UihTableOptions o;
    o.reproducible = true;
    return std::make_shared<UihTableFactory>(o);
  }();
  ColumnFamilyOptions o;
  o.table_factory = factory;
  o.disable_auto_compactions = true;  // ingested as one level, never compacted
  return o;
}

}  // namespace uih

namespace {

using uih::Generation;
using uih::SchemaVersion;
using uih::Shard;
using uih::StatusError;

// ---- a shard --------------------------------------------------------------------

int ReadCurrent(Shard* sh, uih_error* err) {
  bool found;
  sh->current = 0;
  return uih::ReadMetaU32(sh->db, sh->meta, sh->path, uih::kCurrentKey, &sh->current, &found, err);
}

int ReadRecords(Shard* sh, std::map<uint32_t, uih_generation>* records, uih_error* err) {
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ReadOptions(), sh->meta));
  const std::string prefix = uih::kGenerationKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uih_generation g;
    uint32_t key = 0;
    int rc = uih::ParseKeyU32(it->key(), uih::kGenerationKeyPrefix, &key, err);
    if (rc == UIH_OK) rc = uih_generation_decode(uih::U8(it->value()), it->value().size(), &g, err);
    if (rc == UIH_OK && (key != g.generation || g.shard != sh->index))
      rc = uih_corruption(err, "generation record %u of shard %u is stored under key %s", g.generation, g.shard,
                          it->key().ToString(true).c_str());
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", sh->path.c_str());
    (*records)[g.generation] = g;
  }
  if (!it->status().ok()) return StatusError(err, sh->path, it->status(), "reading the generation records");
  return UIH_OK;
}

int ReadErased(Shard* sh, uih_error* err) {
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ReadOptions(), sh->meta));
  const std::string prefix = uih::kErasedKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uint64_t user = 0;
    uih::Erasure e;
    int rc = uih::ParseKeyU64(it->key(), uih::kErasedKeyPrefix, &user, err);
    if (rc == UIH_OK) rc = uih::ParseErasedValue(it->value(), it->key(), &e, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", sh->path.c_str());
    sh->erased[user] = e;
    sh->any_erased.store(true, std::memory_order_release);
  }
  if (!it->status().ok()) return StatusError(err, sh->path, it->status(), "reading the erased users");
  return UIH_OK;
}

// Opens the shard's database with every column family it has, each with
// its options; the generations' handles are returned by number.
int OpenDatabase(uih_store* s, Shard* sh, std::map<uint32_t, ColumnFamilyHandle*>* gen_cfs, uih_error* err) {
  const bool ro = s->opts.read_only != 0;
  DBOptions dbo;
  if (ro) dbo.info_log = std::make_shared<uih::SilentLogger>();
  else dbo.info_log = std::make_shared<uih::LogFile>(sh->path);
  std::vector<std::string> names;
  Status st = DB::ListColumnFamilies(dbo, sh->path, &names);
  if (!st.ok()) return StatusError(err, sh->path, st, "opening shard %u", sh->index);
  if (std::find(names.begin(), names.end(), UIH_MUTABLE_CF) == names.end())
    return uih_corruption(err, "store %s: the shard has no column family %s", sh->path.c_str(), UIH_MUTABLE_CF);
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  mo.block_cache_bytes = s->opts.block_cache_bytes;
  std::vector<ColumnFamilyDescriptor> cfs;
  for (const std::string& name : names)
    cfs.emplace_back(name, name == UIH_MUTABLE_CF        ? uih::MutableCfOptions(mo)
                           : uih::IsGenerationCf(name)   ? uih::GenerationCfOptions()
                                                          : ColumnFamilyOptions());
  std::vector<ColumnFamilyHandle*> handles;
  st = ro ? DB::OpenForReadOnly(dbo, sh->path, cfs, &handles, &sh->db)
          : DB::Open(dbo, sh->path, cfs, &handles, &sh->db);
  if (!st.ok()) return StatusError(err, sh->path, st, "opening shard %u", sh->index);
  // Generations' handles wait in `others` (closed with the shard) until
  // they are paired with their records.
  for (ColumnFamilyHandle* h : handles) {
    uint32_t g;
    if (h->GetName() == kDefaultColumnFamilyName) sh->meta = h;
    else if (h->GetName() == UIH_MUTABLE_CF) sh->events = h;
    else sh->others.push_back(h);
    if (uih::ParseGenerationCfName(h->GetName(), &g)) (*gen_cfs)[g] = h;
  }
  return UIH_OK;
}

// A live generation: its record and column family paired, its dictionaries
// read.
int AddGeneration(Shard* sh, const uih_generation& record, ColumnFamilyHandle* h, uih_error* err) {
  auto gen = std::make_shared<Generation>(record, sh->db);
  gen->set_cf(h);
  sh->others.erase(std::find(sh->others.begin(), sh->others.end(), h));
  sh->gens[record.generation] = gen;
  std::string dicts;
  bool found;
  char what[64];
  snprintf(what, sizeof what, "generation %u's value dictionaries", record.generation);
  int rc = uih::GetMeta(sh->db, sh->meta, sh->path, uih::DictsKey(record.generation), what, &dicts, &found, err);
  if (rc != UIH_OK) return rc;
  rc = gen->SetDicts(dicts, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "store %s: ", sh->path.c_str());
}

// Pairs records with column families. A column family without a record (a
// load killed before it published, or a retirement half done) is dropped; a
// record without one is removed, unless it is the current generation's,
// which cannot be. A read-only open leaves both as they are.
int PairGenerations(Shard* sh, bool ro, const std::map<uint32_t, ColumnFamilyHandle*>& gen_cfs,
                    const std::map<uint32_t, uih_generation>& records, uih_error* err) {
  for (auto& [g, h] : gen_cfs) {
    auto rec = records.find(g);
    if (rec != records.end()) {
      int rc = AddGeneration(sh, rec->second, h, err);
      if (rc != UIH_OK) return rc;
      continue;
    }
    sh->others.erase(std::find(sh->others.begin(), sh->others.end(), h));
    Status st;
    if (!ro) st = sh->db->DropColumnFamily(h);
    sh->db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (!st.ok()) return StatusError(err, sh->path, st, "dropping the unpublished generation %u", g);
  }
  for (auto& [g, rec] : records) {
    if (sh->gens.count(g)) continue;
    if (g == sh->current)
      return uih_corruption(err, "store %s: the current generation %u has no column family %s", sh->path.c_str(), g,
                            uih::GenerationCfName(g).c_str());
    if (ro) continue;
    Status st = uih::DeleteGenerationRecord(sh, g);
    if (!st.ok()) return StatusError(err, sh->path, st, "removing the record of retired generation %u", g);
  }
  if (sh->current != 0 && !sh->gens.count(sh->current))
    return uih_corruption(err, "store %s: the current generation %u has no record", sh->path.c_str(), sh->current);
  return UIH_OK;
}

int OpenShard(uih_store* s, uint32_t index, uih_error* err) {
  auto owned = std::make_unique<Shard>();
  Shard* sh = owned.get();
  sh->index = index;
  sh->path = s->dir + "/" + uih::ShardName(index);
  s->shards[index] = std::move(owned);  // closed with the store from here on
  std::map<uint32_t, ColumnFamilyHandle*> gen_cfs;
  std::map<uint32_t, uih_generation> records;
  int rc = OpenDatabase(s, sh, &gen_cfs, err);
  if (rc == UIH_OK) rc = ReadCurrent(sh, err);
  if (rc == UIH_OK) rc = ReadRecords(sh, &records, err);
  if (rc == UIH_OK) rc = ReadErased(sh, err);
  if (rc == UIH_OK) rc = PairGenerations(sh, s->opts.read_only != 0, gen_cfs, records, err);
  if (rc == UIH_OK)
    rc = uih::AdoptMutable(sh->path, nullptr, sh->db, sh->events, sh->meta, s->opts.read_only != 0, &sh->mut, err);
  return rc;
}

// ---- the store ----------------------------------------------------------------

// Reads the descriptor: how many shards, and the store's id.
int ReadDescriptor(uih_store* s, const char* dir, uint32_t* nshards, uih_error* err) {
  struct stat st;
  if (stat(dir, &st) != 0)
    return uih::NotAStore(err, dir, errno == ENOENT ? "it does not exist" : strerror(errno));
  if (!S_ISDIR(st.st_mode)) return uih::NotAStore(err, dir, "it is not a directory");
  const std::string path = s->dir + "/" + uih::kDescriptorFile;
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return uih::NotAStore(err, dir, "no UIHSTORE descriptor in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) return uih_error_set(err, UIH_ERR_IO, "store %s: cannot read %s", dir, path.c_str());
  std::stringstream text;
  text << in.rdbuf();
  const std::string desc = text.str();
  int rc = uih_store_descriptor_parse(desc.data(), desc.size(), nshards, &s->id, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "%s: ", path.c_str());
}

// Opens the shards; a read-only store pins the generations it opens, and
// opens them inside the gate: no writer retires them in between (pins.h).
int OpenShards(uih_store* s, uint32_t nshards, uih_error* err) {
  int rc = s->pins.Open(s->dir + "/" + uih::kDescriptorFile, !s->opts.read_only, err);
  if (rc != UIH_OK) return rc;
  std::optional<uih::PinGate> gate;
  if (s->opts.read_only) {
    gate.emplace(&s->pins, false, err);
    if (gate->rc() != UIH_OK) return gate->rc();
  }
  for (uint32_t i = 0; i < nshards; i++) {
    if (s->opts.one_shard && i != s->opts.shard) continue;
    rc = OpenShard(s, i, err);
    if (rc != UIH_OK) return rc;
    if (!s->opts.read_only) continue;
    for (auto& [g, gen] : s->shards[i]->gens) {
      rc = s->pins.Pin(i, g, err);
      if (rc != UIH_OK) return rc;
    }
  }
  return UIH_OK;
}

// The store's schema: the newest version any of its open shards holds,
// given to every mutable tier.
int ReadSchema(uih_store* s, uih_error* err) {
  uint32_t best = 0;
  std::string json;
  for (auto& sh : s->shards) {
    if (!sh) continue;
    std::string j;
    int rc = uih::ReadNewestSchema(sh.get(), &sh->schema_version, &j, err);
    if (rc != UIH_OK) return rc;
    if (sh->schema_version > best) best = sh->schema_version, json = j;
  }
  const std::string origin = s->dir + ": schema version " + std::to_string(best);
  SchemaVersion& newest = s->schemas[best];
  newest.json = json;
  int rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &newest.schema, err);
  if (rc != UIH_OK) return rc;
  s->schema = newest.schema;
  for (auto& sh : s->shards)
    if (sh) uih::SetMutableSchema(sh->mut, s->schema);
  return UIH_OK;
}

// What a killed load left: a watermark behind the current generation
// catches up, temporary files go.
int Recover(uih_store* s, uih_error* err) {
  for (auto& sh : s->shards) {
    if (!sh) continue;
    int rc = uih::CatchUpWatermark(sh.get(), err);
    if (rc != UIH_OK) return rc;
  }
  std::error_code ec;
  fs::remove_all(s->tmp, ec);
  if (s->opts.one_shard) fs::create_directory(s->dir + "/tmp", ec);  // the parent of this shard's
  return UIH_OK;
}

int Open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  if (dir == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: NULL argument");
  *out = nullptr;
  auto s = std::make_unique<uih_store>();
  s->dir = dir;
  while (s->dir.size() > 1 && s->dir.back() == '/') s->dir.pop_back();
  s->opts = UIH_STORE_OPTS_DEFAULT;
  if (opts) s->opts = *opts;
  if (!s->opts.one_shard) s->opts.shard = 0;
  // A store of one shard keeps its temporary files apart: removing them
  // never touches another shard's running load.
  s->tmp = s->dir + "/tmp";
  if (s->opts.one_shard) s->tmp += "/" + uih::ShardName(s->opts.shard);
  if (s->opts.keep == 0) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: keep must be at least 1");
  uint32_t nshards = 0;
  int rc = ReadDescriptor(s.get(), dir, &nshards, err);
  if (rc != UIH_OK) return rc;
  if (s->opts.one_shard && s->opts.shard >= nshards)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_open: %s: shard %u, the store has %u (0..%u)", dir,
                         s->opts.shard, nshards, nshards - 1);
  s->shards.resize(nshards);
  rc = OpenShards(s.get(), nshards, err);
  if (rc == UIH_OK) rc = ReadSchema(s.get(), err);
  if (rc == UIH_OK && !s->opts.read_only) rc = Recover(s.get(), err);
  if (rc != UIH_OK) return rc;
  *out = s.release();
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  return uih::CallC(err, "uih_store_open", [&] { return Open(dir, opts, out, err); });
}

void uih_store_close(uih_store* s) {
  uih::CallCVoid([&] { delete s; });
}

}  // extern "C"
