// The C API of uih/store.h, first part: the store's layout (keys, column
// families), init, open (with the recovery of what a killed load left) and
// status. Reads are in read.cc, generations in generations.cc;
// the objects in store_internal.h.
#include "uih/store.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "uih_plugin/status.h"
#include "store_internal.h"
#include "format.h"
#include "uih/key.h"
#include "mutable_internal.h"
#include "uih_plugin/table.h"

using namespace rocksdb;
namespace fs = std::filesystem;

// ---- the layout ---------------------------------------------------------------

namespace uih {

static std::string KeyBE32(const char* prefix, uint32_t n) {
  std::string k = prefix;
  AppendBE32(&k, n);
  return k;
}

std::string GenerationKey(uint32_t generation) { return KeyBE32(kGenerationKeyPrefix, generation); }
std::string SchemaKey(uint32_t version) { return KeyBE32(kSchemaKeyPrefix, version); }
std::string DictsKey(uint32_t generation) { return KeyBE32(kDictsKeyPrefix, generation); }

std::string ErasedKey(uint64_t user) {
  std::string k = kErasedKeyPrefix;
  AppendBE64(&k, user);
  return k;
}

std::string ErasedValue(uint32_t generation, int64_t through) {
  std::string v;
  AppendBE32(&v, generation);
  AppendBE64(&v, ToOrdered(through));
  return v;
}

std::string GenerationCfName(uint32_t generation) {
  char name[32];
  snprintf(name, sizeof name, "%s%08u", kGenerationCfPrefix, generation);
  return name;
}

bool ParseGenerationCfName(const std::string& name, uint32_t* generation) {
  const size_t n = strlen(kGenerationCfPrefix);
  if (name.size() != n + 8 || name.compare(0, n, kGenerationCfPrefix) != 0) return false;
  uint32_t g = 0;
  for (size_t i = n; i < name.size(); i++) {
    if (name[i] < '0' || name[i] > '9') return false;
    g = g * 10 + static_cast<uint32_t>(name[i] - '0');
  }
  *generation = g;
  return g != 0;
}

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

int ShardAt(uih_store* s, uint32_t shard, Shard** out, uih_error* err) {
  if (s == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store: NULL store");
  if (shard >= s->shards.size())
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store %s: shard %u, it has %zu (0..%zu)", s->dir.c_str(), shard,
                         s->shards.size(), s->shards.size() - 1);
  if (!s->shards[shard])
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store %s: shard %u is not open (opened for shard %u alone)",
                         s->dir.c_str(), shard, s->opts.shard);
  *out = s->shards[shard].get();
  return UIH_OK;
}

int ShardOfUser(uih_store* s, uint64_t user, Shard** out, uih_error* err) {
  const uint32_t shard = uih_shard_of(user, static_cast<uint32_t>(s->shards.size()));
  *out = s->shards[shard].get();
  if (*out) return UIH_OK;
  return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                       "store %s: user %" PRIu64 " is in shard %u, which is not open (opened for shard %u alone)",
                       s->dir.c_str(), user, shard, s->opts.shard);
}

bool ErasedSince(uih_store* s, uint64_t user, uint32_t generation, bool exact, int64_t request_ts, Erasure* by) {
  Shard* sh = s->shards[uih_shard_of(user, static_cast<uint32_t>(s->shards.size()))].get();
  if (sh == nullptr || !sh->any_erased.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(sh->mu);
  auto it = sh->erased.find(user);
  if (it == sh->erased.end()) return false;
  *by = it->second;
  return exact || generation ? generation < by->generation : request_ts < by->through;
}

int CatchUpWatermark(Shard* sh, uih_error* err) {
  auto gen = sh->Get(0);
  if (!gen) return UIH_OK;
  int64_t wm;
  int has;
  int rc = uih_mutable_watermark(sh->mut, &wm, &has, err);
  if (rc == UIH_OK && (!has || wm < gen->record.through))
    rc = uih_mutable_set_watermark(sh->mut, gen->record.through, err);
  return rc;
}

int SchemaAt(uih_store* s, uint32_t version, const uih_schema** out, uih_error* err) {
  std::lock_guard<std::mutex> lock(s->schemas_mu);
  auto it = s->schemas.find(version);
  if (it != s->schemas.end() && it->second.schema) {
    *out = it->second.schema;
    return UIH_OK;
  }
  for (auto& sh : s->shards) {
    if (!sh) continue;
    std::string json;
    Status st = sh->db->Get(ReadOptions(), sh->meta, SchemaKey(version), &json);
    if (st.IsNotFound()) continue;
    if (!st.ok()) return Fail(err, sh->path, st, "reading schema version " + std::to_string(version));
    std::string origin = sh->path + ": schema version " + std::to_string(version);
    uih_schema* schema = nullptr;
    int rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &schema, err);
    if (rc != UIH_OK) return rc;
    SchemaVersion& v = s->schemas[version];
    v.schema = schema;
    v.json = std::move(json);
    *out = schema;
    return UIH_OK;
  }
  return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: no shard holds schema version %u", s->dir.c_str(), version);
}

}  // namespace uih

using uih::Fail;
using uih::Generation;
using uih::SchemaVersion;
using uih::Shard;
using uih::ShardAt;
using uih::U8;

namespace {

std::string ShardPath(const std::string& dir, uint32_t i) {
  char name[32];
  snprintf(name, sizeof name, "/shard-%04u", i);
  return dir + name;
}

// Writes `text` to `path` durably: a temporary file, fsync, rename, fsync
// of the directory.
int WriteFileDurably(const std::string& dir, const std::string& name, const std::string& text, uih_error* err) {
  std::string tmp = dir + "/" + name + ".tmp", path = dir + "/" + name;
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return uih_error_set(err, UIH_ERR_IO, "store %s: creating %s: %s", dir.c_str(), tmp.c_str(), strerror(errno));
  ssize_t n = write(fd, text.data(), text.size());
  int e = n == static_cast<ssize_t>(text.size()) ? (fsync(fd) == 0 ? 0 : errno) : (n < 0 ? errno : ENOSPC);
  close(fd);
  if (e == 0 && rename(tmp.c_str(), path.c_str()) != 0) e = errno;
  if (e != 0) {
    unlink(tmp.c_str());
    return uih_error_set(err, UIH_ERR_IO, "store %s: writing %s: %s", dir.c_str(), path.c_str(), strerror(e));
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return UIH_OK;
}

// ---- init ------------------------------------------------------------------------

int CreateShard(const std::string& path, const uih_schema* schema, const char* json, size_t len, int64_t span,
                uih_error* err) {
  DBOptions dbo;
  dbo.create_if_missing = true;
  dbo.create_missing_column_families = true;
  dbo.error_if_exists = true;
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  std::vector<ColumnFamilyDescriptor> cfs = {{kDefaultColumnFamilyName, ColumnFamilyOptions()},
                                             {UIH_MUTABLE_CF, uih::MutableCfOptions(mo)}};
  std::vector<ColumnFamilyHandle*> handles;
  DB* db = nullptr;
  Status s = DB::Open(dbo, path, cfs, &handles, &db);
  if (!s.ok()) return Fail(err, path, s, "creating the shard's database");
  WriteOptions wo;
  wo.sync = true;
  WriteBatch wb;
  s = wb.Put(handles[0], uih::SchemaKey(uih_schema_version(schema)), Slice(json, len));
  if (s.ok()) s = wb.Put(handles[0], uih::kChunkSpanKey, Slice(reinterpret_cast<const char*>(&span), sizeof span));
  if (s.ok()) s = db->Write(wo, &wb);
  for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  Status c = db->Close();
  delete db;
  if (s.ok()) s = c;
  return s.ok() ? UIH_OK : Fail(err, path, s, "writing the schema");
}

int Init(const char* dir, const char* json, size_t len, const char* origin, const uih_store_init_opts* opts,
         uih_error* err) {
  if (dir == nullptr || json == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: NULL argument");
  const uih_store_init_opts o = opts ? *opts : uih_store_init_opts UIH_STORE_INIT_OPTS_DEFAULT;
  const uint32_t shards = o.shards;
  if (o.chunk_span <= 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: chunk span %lld, expected > 0",
                         static_cast<long long>(o.chunk_span));
  if (shards < 1 || shards > UIH_STORE_SHARDS_MAX)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_init: %u shards, expected 1..%d", shards,
                         UIH_STORE_SHARDS_MAX);
  uih_schema* schema = nullptr;
  int rc = uih_schema_parse(json, len, origin, &schema, err);
  if (rc != UIH_OK) return rc;
  std::unique_ptr<uih_schema, void (*)(uih_schema*)> own(schema, uih_schema_free);
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  bool existed = fs::exists(st);
  if (existed && !fs::is_directory(st))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: %s exists and is not a directory", dir);
  if (existed && !fs::is_empty(dir, ec))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_init: %s is not empty (a store is created in a new or empty directory)", dir);
  if (!existed && !fs::create_directories(dir, ec))
    return uih_error_set(err, UIH_ERR_IO, "store_init: creating %s: %s", dir, ec.message().c_str());
  for (uint32_t i = 0; i < shards && rc == UIH_OK; i++) rc = CreateShard(ShardPath(dir, i), schema, json, len, o.chunk_span, err);
  if (rc == UIH_OK) {  // a random id names the store in the records logged against it
    uint64_t id = 0;
    while (id == 0)
      if (getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id))
        return uih_error_set(err, UIH_ERR_IO, "store_init: getrandom: %s", strerror(errno));
    char line[32];
    snprintf(line, sizeof line, "id %016" PRIx64 "\n", id);
    std::string text = "uihstore 1\nshards " + std::to_string(shards) + "\n" + line;
    rc = WriteFileDurably(dir, uih::kDescriptorFile, text, err);
  }
  if (rc != UIH_OK) {  // leave the directory as it was found
    for (uint32_t i = 0; i < shards; i++) fs::remove_all(ShardPath(dir, i), ec);
    if (!existed) fs::remove(dir, ec);
  }
  return rc;
}

// ---- open --------------------------------------------------------------------

// The newest schema version the shard holds, its text in *json.
int ReadNewestSchema(Shard* sh, uint32_t* version, std::string* json, uih_error* err) {
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ReadOptions(), sh->meta));
  *version = 0;
  const std::string prefix = uih::kSchemaKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != prefix.size() + 4)
      return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: metadata key '%s' is not a schema key",
                           sh->path.c_str(), it->key().ToString(true).c_str());
    *version = uih::LoadBE32(it->key().data() + prefix.size());
    *json = it->value().ToString();
  }
  if (!it->status().ok()) return Fail(err, sh->path, it->status(), "reading the schema");
  if (*version == 0)
    return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: the shard holds no schema (key %s...)", sh->path.c_str(),
                         uih::kSchemaKeyPrefix);
  return UIH_OK;
}

int ReadCurrent(Shard* sh, uih_error* err) {
  std::string v;
  Status s = sh->db->Get(ReadOptions(), sh->meta, uih::kCurrentKey, &v);
  sh->current = 0;
  if (s.IsNotFound()) return UIH_OK;
  if (!s.ok()) return Fail(err, sh->path, s, "reading the current generation");
  if (v.size() != 4)
    return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: key %s holds %zu bytes, expected 4", sh->path.c_str(),
                         uih::kCurrentKey, v.size());
  sh->current = uih::LoadBE32(v.data());
  return UIH_OK;
}

int ReadRecords(Shard* sh, std::map<uint32_t, uih_generation>* records, uih_error* err) {
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ReadOptions(), sh->meta));
  const std::string prefix = uih::kGenerationKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uih_generation g;
    int rc = uih_generation_decode(U8(it->value()), it->value().size(), &g, err);
    if (rc == UIH_OK && (it->key().size() != prefix.size() + 4 ||
                         uih::LoadBE32(it->key().data() + prefix.size()) != g.generation || g.shard != sh->index))
      rc = uih_error_set(err, UIH_ERR_CORRUPTION, "generation record %u of shard %u is stored under key %s",
                         g.generation, g.shard, it->key().ToString(true).c_str());
    if (rc != UIH_OK) {
      uih_error_prefix(err, "store %s: ", sh->path.c_str());
      return rc;
    }
    (*records)[g.generation] = g;
  }
  if (!it->status().ok()) return Fail(err, sh->path, it->status(), "reading the generation records");
  return UIH_OK;
}

int ReadErased(Shard* sh, uih_error* err) {
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ReadOptions(), sh->meta));
  const std::string prefix = uih::kErasedKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const Slice k = it->key(), v = it->value();
    if (k.size() != prefix.size() + 8)
      return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: erasure key %s has %zu bytes, expected %zu",
                           sh->path.c_str(), k.ToString(true).c_str(), k.size(), prefix.size() + 8);
    if (v.size() != 12)
      return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: erasure key %s holds %zu bytes, expected 12",
                           sh->path.c_str(), k.ToString(true).c_str(), v.size());
    const uint64_t user = uih::LoadBE64(k.data() + prefix.size());
    uih::Erasure e;
    e.generation = uih::LoadBE32(v.data());
    e.through = uih::FromOrdered(uih::LoadBE64(v.data() + 4));
    if (e.generation == 0)
      return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: erasure of user %" PRIu64 " names generation 0",
                           sh->path.c_str(), user);
    sh->erased[user] = e;
    sh->any_erased.store(true, std::memory_order_release);
  }
  if (!it->status().ok()) return Fail(err, sh->path, it->status(), "reading the erased users");
  return UIH_OK;
}

int OpenShard(uih_store* s, uint32_t index, uih_error* err) {
  auto sh = std::make_unique<Shard>();
  sh->index = index;
  sh->path = ShardPath(s->dir, index);
  const bool ro = s->opts.read_only != 0;
  DBOptions dbo;
  if (ro) dbo.info_log = std::make_shared<uih::SilentLogger>();
  else dbo.info_log = std::make_shared<uih::LogFile>(sh->path);
  std::vector<std::string> names;
  Status st = DB::ListColumnFamilies(dbo, sh->path, &names);
  if (!st.ok()) return Fail(err, sh->path, st, "opening shard " + std::to_string(index));
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  mo.block_cache_bytes = s->opts.block_cache_bytes;
  std::vector<ColumnFamilyDescriptor> cfs;
  for (const std::string& name : names)
    cfs.emplace_back(name, name == UIH_MUTABLE_CF         ? uih::MutableCfOptions(mo)
                           : uih::IsGenerationCf(name)    ? uih::GenerationCfOptions()
                                                           : ColumnFamilyOptions());
  if (std::find(names.begin(), names.end(), UIH_MUTABLE_CF) == names.end())
    return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: the shard has no column family %s", sh->path.c_str(),
                         UIH_MUTABLE_CF);
  std::vector<ColumnFamilyHandle*> handles;
  st = ro ? DB::OpenForReadOnly(dbo, sh->path, cfs, &handles, &sh->db)
          : DB::Open(dbo, sh->path, cfs, &handles, &sh->db);
  if (!st.ok()) return Fail(err, sh->path, st, "opening shard " + std::to_string(index));
  // Generations' handles wait in `others` (closed with the shard) until
  // they are paired with their records.
  std::map<uint32_t, ColumnFamilyHandle*> gen_cfs;
  for (ColumnFamilyHandle* h : handles) {
    uint32_t g;
    if (h->GetName() == kDefaultColumnFamilyName) sh->meta = h;
    else if (h->GetName() == UIH_MUTABLE_CF) sh->events = h;
    else sh->others.push_back(h);
    if (uih::ParseGenerationCfName(h->GetName(), &g)) gen_cfs[g] = h;
  }
  Shard* raw = sh.get();
  s->shards[index] = std::move(sh);  // closed with the store from here on
  std::map<uint32_t, uih_generation> records;
  int rc = ReadCurrent(raw, err);
  if (rc == UIH_OK) rc = ReadRecords(raw, &records, err);
  if (rc == UIH_OK) rc = ReadErased(raw, err);
  if (rc != UIH_OK) return rc;
  // Pair records with column families. A column family without a record
  // (a load killed before it published, or a retirement half done) is
  // dropped; a record without one is removed, unless it is the current
  // generation's, which cannot be.
  for (auto& [g, h] : gen_cfs) {
    raw->others.erase(std::find(raw->others.begin(), raw->others.end(), h));
    if (records.count(g)) {
      auto gen = std::make_shared<Generation>();
      gen->record = records[g];
      gen->db = raw->db;
      gen->cf = h;
      raw->gens[g] = gen;
      std::string dicts;
      st = raw->db->Get(ReadOptions(), raw->meta, uih::DictsKey(g), &dicts);
      if (!st.ok() && !st.IsNotFound()) return Fail(err, raw->path, st, "reading generation " + std::to_string(g) + "'s value dictionaries");
      st = Status::OK();
      rc = gen->SetDicts(dicts, "store " + raw->path, err);
      if (rc != UIH_OK) return rc;
      continue;
    }
    if (!ro) st = raw->db->DropColumnFamily(h);
    raw->db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (!st.ok()) return Fail(err, raw->path, st, "dropping the unpublished generation " + std::to_string(g));
  }
  for (auto& [g, rec] : records) {
    if (raw->gens.count(g)) continue;
    if (g == raw->current)
      return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: the current generation %u has no column family %s",
                           raw->path.c_str(), g, uih::GenerationCfName(g).c_str());
    if (ro) continue;
    WriteOptions wo;
    wo.sync = true;
    WriteBatch wb;  // the record and its dictionaries go together
    st = wb.Delete(raw->meta, uih::GenerationKey(g));
    if (st.ok()) st = wb.Delete(raw->meta, uih::DictsKey(g));
    if (st.ok()) st = raw->db->Write(wo, &wb);
    if (!st.ok()) return Fail(err, raw->path, st, "removing the record of retired generation " + std::to_string(g));
  }
  if (raw->current != 0 && !raw->gens.count(raw->current))
    return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: the current generation %u has no record",
                         raw->path.c_str(), raw->current);
  return uih::AdoptMutable(raw->path, nullptr, raw->db, raw->events, raw->meta, &raw->mut, err);
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
  if (s->opts.one_shard) s->tmp += ShardPath("", s->opts.shard);
  if (s->opts.keep == 0) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: keep must be at least 1");
  struct stat st;
  if (stat(dir, &st) != 0) return uih::NotAStore(err, dir, errno == ENOENT ? "it does not exist" : strerror(errno));
  if (!S_ISDIR(st.st_mode)) return uih::NotAStore(err, dir, "it is not a directory");
  std::string path = s->dir + "/" + uih::kDescriptorFile;
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return uih::NotAStore(err, dir, "no UIHSTORE descriptor in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) return uih_error_set(err, UIH_ERR_IO, "store %s: cannot read %s", dir, path.c_str());
  std::stringstream text;
  text << in.rdbuf();
  std::string desc = text.str();
  uint32_t nshards;
  int rc = uih_store_descriptor_parse(desc.data(), desc.size(), &nshards, &s->id, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "%s: ", path.c_str());
    return rc;
  }
  if (s->opts.one_shard && s->opts.shard >= nshards)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_open: %s: shard %u, the store has %u (0..%u)", dir,
                         s->opts.shard, nshards, nshards - 1);
  s->shards.resize(nshards);
  // A read-only store pins the generations it opens, and opens them
  // inside the gate: no writer retires them in between (pins.h).
  rc = s->pins.Open(path, !s->opts.read_only, err);
  if (rc != UIH_OK) return rc;
  {
    std::optional<uih::PinGate> gate;
    if (s->opts.read_only) {
      gate.emplace(&s->pins, false, err);
      if (gate->rc() != UIH_OK) return gate->rc();
    }
    for (uint32_t i = 0; i < nshards; i++) {
      if (s->opts.one_shard && i != s->opts.shard) continue;
      rc = OpenShard(s.get(), i, err);
      if (rc != UIH_OK) return rc;
      if (!s->opts.read_only) continue;
      for (auto& [g, gen] : s->shards[i]->gens) {
        rc = s->pins.Pin(i, g, err);
        if (rc != UIH_OK) return rc;
      }
    }
  }
  uint32_t best = 0;
  std::string json;
  for (auto& sh : s->shards) {
    if (!sh) continue;
    std::string j;
    rc = ReadNewestSchema(sh.get(), &sh->schema_version, &j, err);
    if (rc != UIH_OK) return rc;
    if (sh->schema_version > best) best = sh->schema_version, json = j;
  }
  std::string origin = s->dir + ": schema version " + std::to_string(best);
  SchemaVersion& newest = s->schemas[best];
  newest.json = json;
  rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &newest.schema, err);
  if (rc != UIH_OK) return rc;
  s->schema = newest.schema;
  for (auto& sh : s->shards)
    if (sh) uih::SetMutableSchema(sh->mut, s->schema);
  if (!s->opts.read_only) {
    for (auto& sh : s->shards) {
      if (!sh) continue;
      rc = CatchUpWatermark(sh.get(), err);
      if (rc != UIH_OK) return rc;
    }
    std::error_code ec;
    fs::remove_all(s->tmp, ec);  // a killed load's files
    if (s->opts.one_shard) fs::create_directory(s->dir + "/tmp", ec);  // the parent of this shard's
  }
  *out = s.release();
  return UIH_OK;
}

// ---- status --------------------------------------------------------------------

int Generations(uih_store* s, uint32_t shard, uih_generation* out, size_t cap, size_t* n, uint32_t* current,
                uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  std::lock_guard<std::mutex> lock(sh->mu);
  size_t i = 0;
  for (auto& [g, gen] : sh->gens) {
    if (i < cap && out) out[i] = gen->record;
    i++;
  }
  if (n) *n = i;
  if (current) *current = sh->current;
  return UIH_OK;
}

int Pinned(uih_store* s, uint32_t shard, uint32_t generation, int* pinned, uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (pinned == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_pinned: NULL argument");
  bool p = false;
  rc = s->pins.Pinned(shard, generation, &p, err);
  *pinned = p;
  return rc;
}

int Sizes(uih_store* s, uint32_t shard, uint64_t* imm, uint64_t* mut, uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  ColumnFamilyMetaData md;
  uint64_t i = 0;
  if (auto gen = sh->Get(0)) {
    sh->db->GetColumnFamilyMetaData(gen->cf, &md);
    i = md.size;
  }
  sh->db->GetColumnFamilyMetaData(sh->events, &md);
  if (imm) *imm = i;
  if (mut) *mut = md.size;
  return UIH_OK;
}

}  // namespace

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

int uih_store_init(const char* dir, const char* schema_json, size_t len, const char* origin, uint32_t shards,
                   uih_error* err) {
  uih_store_init_opts o = UIH_STORE_INIT_OPTS_DEFAULT;
  o.shards = shards;
  return uih::CallC(err, "uih_store_init", [&] { return Init(dir, schema_json, len, origin, &o, err); });
}

int uih_store_create(const char* dir, const char* schema_json, size_t len, const char* origin,
                     const uih_store_init_opts* opts, uih_error* err) {
  return uih::CallC(err, "uih_store_create", [&] { return Init(dir, schema_json, len, origin, opts, err); });
}

int uih_store_open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  return uih::CallC(err, "uih_store_open", [&] { return Open(dir, opts, out, err); });
}

void uih_store_close(uih_store* s) {
  uih::CallCVoid([&] { delete s; });
}

const uih_schema* uih_store_schema(const uih_store* s) { return s ? s->schema.load() : nullptr; }
uint32_t uih_store_shards(const uih_store* s) { return s ? static_cast<uint32_t>(s->shards.size()) : 0; }
int uih_store_has_shard(const uih_store* s, uint32_t shard) {
  return s && shard < s->shards.size() && s->shards[shard] ? 1 : 0;
}
const char* uih_store_dir(const uih_store* s) { return s ? s->dir.c_str() : nullptr; }
uint64_t uih_store_id(const uih_store* s) { return s ? s->id : 0; }
const char* uih_store_tmpdir(const uih_store* s) { return s ? s->tmp.c_str() : nullptr; }

uih_mutable* uih_store_mutable(uih_store* s, uint32_t shard) {
  return s && shard < s->shards.size() && s->shards[shard] ? s->shards[shard]->mut : nullptr;
}

int uih_store_generations(uih_store* s, uint32_t shard, uih_generation* out, size_t cap, size_t* n,
                          uint32_t* current, uih_error* err) {
  return uih::CallC(err, "uih_store_generations", [&] { return Generations(s, shard, out, cap, n, current, err); });
}

int uih_store_pinned(uih_store* s, uint32_t shard, uint32_t generation, int* pinned, uih_error* err) {
  return uih::CallC(err, "uih_store_pinned", [&] { return Pinned(s, shard, generation, pinned, err); });
}

int uih_store_sizes(uih_store* s, uint32_t shard, uint64_t* immutable_bytes, uint64_t* mutable_bytes,
                    uih_error* err) {
  return uih::CallC(err, "uih_store_sizes", [&] { return Sizes(s, shard, immutable_bytes, mutable_bytes, err); });
}

}  // extern "C"
