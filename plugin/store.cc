// The C API of uih/store.h: a store's directory and descriptor, its shards'
// databases, generations published and retired, and the immutable tier's
// reads. The loader (loader/) drives the writer; the bytes it writes are
// the engine's (keys, stripes, generation records).
#include "uih/store.h"

#include <fcntl.h>
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
#include <sstream>
#include <string>
#include <vector>

#include "c_api.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/write_batch.h"
#include "status.h"
#include "store_layout.h"
#include "uih/key.h"
#include "uih/stripe.h"
#include "uih_mutable.h"
#include "uih_table.h"

using namespace rocksdb;
namespace fs = std::filesystem;

// ---- the layout ---------------------------------------------------------------

namespace uih {
namespace {

void AppendBE32(std::string* s, uint32_t v) {
  for (int i = 3; i >= 0; i--) s->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t LoadBE32(const char* p) {
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | u[3];
}

}  // namespace

std::string GenerationKey(uint32_t generation) {
  std::string k = kGenerationKeyPrefix;
  AppendBE32(&k, generation);
  return k;
}

std::string SchemaKey(uint32_t version) {
  std::string k = kSchemaKeyPrefix;
  AppendBE32(&k, version);
  return k;
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

}  // namespace uih

// ---- the objects --------------------------------------------------------------

namespace {

// One live generation of a shard; readers hold it while they read, so a
// retired generation's files stay until the last one lets go.
struct Generation {
  uih_generation record{};
  DB* db = nullptr;
  ColumnFamilyHandle* cf = nullptr;
  ~Generation() {
    if (cf) db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  }
};

struct Shard {
  uint32_t index = 0;
  std::string path;
  DB* db = nullptr;
  ColumnFamilyHandle* meta = nullptr;
  ColumnFamilyHandle* events = nullptr;
  std::vector<ColumnFamilyHandle*> others;  // column families the store does not know: left alone
  uih_mutable* mut = nullptr;

  std::mutex mu;  // gens, current
  std::map<uint32_t, std::shared_ptr<Generation>> gens;
  uint32_t current = 0;

  std::mutex writer_mu;  // writing
  bool writing = false;
  uint32_t schema_version = 0;  // the newest schema version in its metadata (the writer's)

  std::shared_ptr<Generation> Get(uint32_t generation) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = gens.find(generation ? generation : current);
    return it == gens.end() ? nullptr : it->second;
  }

  ~Shard() {
    uih::FreeMutable(mut);
    gens.clear();
    if (db == nullptr) return;
    for (ColumnFamilyHandle* h : others) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    for (ColumnFamilyHandle* h : {meta, events})
      if (h) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db->Close().PermitUncheckedError();
    delete db;
  }
};

}  // namespace

// A schema version the store knows: read from a shard, or added for a load
// that has not published it yet.
struct SchemaVersion {
  uih_schema* schema = nullptr;
  std::string json;
};

struct uih_store {
  std::string dir, tmp;
  uih_store_opts opts{};
  std::atomic<const uih_schema*> schema{nullptr};  // the newest version a shard holds
  std::mutex schemas_mu;
  std::map<uint32_t, SchemaVersion> schemas;  // every version seen; freed at close
  std::vector<std::unique_ptr<Shard>> shards;
  ~uih_store() {
    shards.clear();
    for (auto& v : schemas) uih_schema_free(v.second.schema);
  }
};

struct uih_store_scan {
  std::shared_ptr<Generation> gen;  // null: an empty scan
  std::unique_ptr<Iterator> it;
  bool started = false;
};

struct uih_store_writer {
  uih_store* s = nullptr;
  Shard* sh = nullptr;
  uint32_t generation = 0;
  std::string dir;
  Options options;
  std::unique_ptr<SstFileWriter> file;
  std::vector<std::string> files;
  uint64_t file_bytes = 0;
  std::vector<uint64_t> erased_users;  // their mutable events go with the publish
  ~uih_store_writer() {
    file.reset();  // abandons an unfinished file
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (sh) {
      std::lock_guard<std::mutex> lock(sh->writer_mu);
      sh->writing = false;
    }
  }
};

namespace {

const uint8_t* U8(const Slice& s) { return reinterpret_cast<const uint8_t*>(s.data()); }
Slice S(const uint8_t* p, size_t n) { return Slice(reinterpret_cast<const char*>(p), n); }

std::string ShardPath(const std::string& dir, uint32_t i) {
  char name[32];
  snprintf(name, sizeof name, "/shard-%04u", i);
  return dir + name;
}

int Fail(uih_error* err, const std::string& where, const Status& s, const std::string& what) {
  return uih_error_set(err, uih::FromStatus(s), "store %s: %s: %s", where.c_str(), what.c_str(),
                       s.ToString().c_str());
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

int CreateShard(const std::string& path, const uih_schema* schema, const char* json, size_t len, uih_error* err) {
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
  s = db->Put(wo, handles[0], uih::SchemaKey(uih_schema_version(schema)), Slice(json, len));
  for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  Status c = db->Close();
  delete db;
  if (s.ok()) s = c;
  return s.ok() ? UIH_OK : Fail(err, path, s, "writing the schema");
}

int Init(const char* dir, const char* json, size_t len, const char* origin, uint32_t shards, uih_error* err) {
  if (dir == nullptr || json == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: NULL argument");
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
  for (uint32_t i = 0; i < shards && rc == UIH_OK; i++) rc = CreateShard(ShardPath(dir, i), schema, json, len, err);
  if (rc == UIH_OK) {
    std::string text = "uihstore 1\nshards " + std::to_string(shards) + "\n";
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

int OpenShard(uih_store* s, uint32_t index, uih_error* err) {
  auto sh = std::make_unique<Shard>();
  sh->index = index;
  sh->path = ShardPath(s->dir, index);
  const bool ro = s->opts.read_only != 0;
  DBOptions dbo;
  if (ro) dbo.info_log = std::make_shared<uih::SilentLogger>();
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
  s->shards.push_back(std::move(sh));  // closed with the store from here on
  std::map<uint32_t, uih_generation> records;
  int rc = ReadCurrent(raw, err);
  if (rc == UIH_OK) rc = ReadRecords(raw, &records, err);
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
    st = raw->db->Delete(wo, raw->meta, uih::GenerationKey(g));
    if (!st.ok()) return Fail(err, raw->path, st, "removing the record of retired generation " + std::to_string(g));
  }
  if (raw->current != 0 && !raw->gens.count(raw->current))
    return uih_error_set(err, UIH_ERR_CORRUPTION, "store %s: the current generation %u has no record",
                         raw->path.c_str(), raw->current);
  return uih::AdoptMutable(raw->path, nullptr, raw->db, raw->events, raw->meta, &raw->mut, err);
}

// A watermark behind the current generation (a load killed between
// publishing and advancing it) catches up.
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

int Open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  if (dir == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: NULL argument");
  *out = nullptr;
  auto s = std::make_unique<uih_store>();
  s->dir = dir;
  while (s->dir.size() > 1 && s->dir.back() == '/') s->dir.pop_back();
  s->tmp = s->dir + "/tmp";
  s->opts = UIH_STORE_OPTS_DEFAULT;
  if (opts) s->opts = *opts;
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
  int rc = uih_store_descriptor_parse(desc.data(), desc.size(), &nshards, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "%s: ", path.c_str());
    return rc;
  }
  for (uint32_t i = 0; i < nshards; i++) {
    rc = OpenShard(s.get(), i, err);
    if (rc != UIH_OK) return rc;
  }
  uint32_t best = 0;
  std::string json;
  for (auto& sh : s->shards) {
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
  for (auto& sh : s->shards) uih::SetMutableSchema(sh->mut, s->schema);
  if (!s->opts.read_only) {
    for (auto& sh : s->shards) {
      rc = CatchUpWatermark(sh.get(), err);
      if (rc != UIH_OK) return rc;
    }
    std::error_code ec;
    fs::remove_all(s->tmp, ec);  // a killed load's files
  }
  *out = s.release();
  return UIH_OK;
}

// ---- status --------------------------------------------------------------------

int ShardAt(uih_store* s, uint32_t shard, Shard** out, uih_error* err) {
  if (s == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store: NULL store");
  if (shard >= s->shards.size())
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store %s: shard %u, it has %zu (0..%zu)", s->dir.c_str(), shard,
                         s->shards.size(), s->shards.size() - 1);
  *out = s->shards[shard].get();
  return UIH_OK;
}

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

// ---- reads ---------------------------------------------------------------------

// Appends rows [begin, end) of `src` whose ts is in [from, to] to *out.
int AppendWindow(const uih_batch* src, int64_t from, int64_t to, uih_batch** out, uih_error* err) {
  int tsc = uih_batch_column_index(src, src->group->ts->id);
  const int64_t* ts = static_cast<const int64_t*>(src->columns[tsc].values);
  for (uint32_t r = 0; r < src->count; r++) {
    if (ts[r] < from || ts[r] > to) continue;
    if ((*out)->count == (*out)->capacity) {
      if ((*out)->capacity == UIH_STRIPE_EVENTS_MAX)
        return uih_error_set(err, UIH_ERR_OUT_OF_RANGE,
                             "more than %d events in the window: read a narrower one", UIH_STRIPE_EVENTS_MAX);
      uint64_t want = std::min<uint64_t>(uint64_t{(*out)->capacity} * 2, UIH_STRIPE_EVENTS_MAX);
      int rc = uih_batch_reserve(out, static_cast<uint32_t>(want), err);
      if (rc != UIH_OK) return rc;
    }
    int rc = uih_batch_copy_row(*out, src, r, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

// A batch of the same group and columns as `like`, without `skip`.
int BatchLike(const uih_batch* like, uint32_t capacity, uint16_t skip, uih_batch** out, uih_error* err) {
  std::vector<uint16_t> ids;
  for (uint32_t c = 0; c < like->ncolumns; c++)
    if (like->columns[c].trait->id != skip) ids.push_back(like->columns[c].trait->id);
  return uih_batch_create(like->group, capacity, ids.data(), static_cast<uint32_t>(ids.size()), out, err);
}

int ReadImmutable(Shard* sh, const Generation& gen, uint64_t user, const uih_group* g, int64_t from, int64_t to,
                  uih_batch** out, uih_error* err) {
  if (from > to) return UIH_OK;
  uint8_t prefix[UIH_KEY_GROUP_PREFIX_SIZE], bound[UIH_KEY_GROUP_PREFIX_SIZE], lo[UIH_KEY_SIZE];
  uih_key_group_prefix(user, g->id, prefix);
  memcpy(bound, prefix, sizeof bound);
  ReadOptions ro;
  Slice upper = S(bound, sizeof bound);
  if (uih_key_prefix_successor(bound, sizeof bound)) ro.iterate_upper_bound = &upper;
  std::unique_ptr<Iterator> it(sh->db->NewIterator(ro, gen.cf));
  uih_key k{user, g->id, from};
  uih_key_encode(&k, lo);
  it->SeekForPrev(S(lo, sizeof lo));  // the stripe holding `from`, if one starts before it
  if (!it->Valid() || !it->key().starts_with(S(prefix, sizeof prefix))) it->Seek(S(prefix, sizeof prefix));
  uih_stripe_decoder* dec = nullptr;
  uih_batch* tmp = nullptr;
  int rc = uih_stripe_decoder_create(&dec, err);
  for (; rc == UIH_OK && it->Valid() && it->key().starts_with(S(prefix, sizeof prefix)); it->Next()) {
    uih_key sk;
    rc = uih_key_decode(U8(it->key()), it->key().size(), &sk, err);
    if (rc != UIH_OK || sk.ts > to) break;
    uih_stripe_info info;
    rc = uih_stripe_read_info(U8(it->value()), it->value().size(), &info, err);
    if (rc != UIH_OK) break;
    if (info.max_ts < from) continue;
    uint32_t want = std::max<uint32_t>(info.count, 1);
    if (tmp == nullptr) rc = BatchLike(*out, want, 0, &tmp, err);
    else rc = uih_batch_reserve(&tmp, want, err);
    if (rc == UIH_OK)
      rc = uih_stripe_decode(dec, U8(it->value()), it->value().size(), 0, UIH_DECODE_TO_END,
                             UIH_DECODE_VERIFY_CHECKSUM, tmp, err);
    if (rc == UIH_OK) rc = AppendWindow(tmp, from, to, out, err);
    if (rc != UIH_OK)
      uih_error_prefix(err, "stripe of user %" PRIu64 " group %u at ts %" PRId64 ": ", user, g->id, sk.ts);
  }
  if (rc == UIH_OK && !it->status().ok())
    rc = Fail(err, sh->path, it->status(), "reading generation " + std::to_string(gen.record.generation));
  uih_batch_free(tmp);
  uih_stripe_decoder_free(dec);
  return rc;
}

int Read(uih_store* s, uint64_t user, uint16_t group, int64_t from, int64_t to, unsigned tier, uint32_t generation,
         uih_batch** batch, uih_error* err) {
  if (s == nullptr || batch == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: NULL argument");
  if (tier < UIH_TIER_IMMUTABLE || tier > UIH_TIER_ALL)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: tier %u, expected 1 (immutable), 2 (mutable) or 3 (all)",
                         tier);
  const uih_group* g = uih_schema_group_by_id(s->schema, group);
  if (g == nullptr) return uih_error_set(err, UIH_ERR_NOT_FOUND, "store_read: the schema has no group with id %u", group);
  Shard* sh = s->shards[uih_shard_of(user, static_cast<uint32_t>(s->shards.size()))].get();
  if (*batch != nullptr && (*batch)->group->id == group) {  // the caller's projection, whatever its version
    g = (*batch)->group;
    uih_batch_clear(*batch);
  } else {
    uih_batch* nb = nullptr;
    int rc = uih_batch_create(g, 64, nullptr, 0, &nb, err);
    if (rc != UIH_OK) return rc;
    uih_batch_free(*batch);
    *batch = nb;
  }
  int64_t wm = INT64_MIN;
  int has = 0;
  int rc = uih_mutable_watermark(sh->mut, &wm, &has, err);
  if (rc != UIH_OK) return rc;
  const bool split = tier == UIH_TIER_ALL && has;
  if (tier & UIH_TIER_IMMUTABLE) {
    auto gen = sh->Get(generation);
    if (generation != 0 && !gen)
      return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: shard %u has no live generation %u", s->dir.c_str(),
                           sh->index, generation);
    // With the split, only what is below the watermark (nothing when it is INT64_MIN).
    if (gen && !(split && wm == INT64_MIN)) {
      rc = ReadImmutable(sh, *gen, user, g, from, split ? std::min(to, wm - 1) : to, batch, err);
      if (rc != UIH_OK) return rc;
    }
  }
  if (tier & UIH_TIER_MUTABLE) {
    int64_t lo = split ? std::max(from, wm) : from;
    uih_batch* tmp = nullptr;
    rc = BatchLike(*batch, 64, UIH_TRAIT_ARRIVAL, &tmp, err);
    if (rc == UIH_OK && lo <= to) rc = uih_mutable_read(sh->mut, user, group, lo, to, &tmp, err);
    if (rc == UIH_OK) rc = AppendWindow(tmp, lo, to, batch, err);
    uih_batch_free(tmp);
  }
  return rc;
}

// ---- scans and writers ------------------------------------------------------------

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
    w->file = std::make_unique<SstFileWriter>(EnvOptions(), w->options);
    Status st = w->file->Open(w->files.back());
    if (!st.ok()) return Fail(err, w->files.back(), st, "creating a table file");
  }
  Status st = w->file->Put(S(key, klen), S(value, vlen));
  if (!st.ok()) return Fail(err, w->files.back(), st, "adding a stripe");
  w->file_bytes += klen + vlen;
  if (w->file_bytes >= w->s->opts.file_bytes) return FinishFile(w, err);
  return UIH_OK;
}

// Retires the oldest generations beyond `keep`: the record first, then the
// column family (a crash between leaves a column family without a record,
// which the next open drops).
int Retire(uih_store* s, Shard* sh, uih_error* err) {
  for (;;) {
    std::shared_ptr<Generation> old;
    {
      std::lock_guard<std::mutex> lock(sh->mu);
      if (sh->gens.size() <= s->opts.keep || sh->gens.begin()->first == sh->current) return UIH_OK;
      old = sh->gens.begin()->second;
    }
    WriteOptions wo;
    wo.sync = true;
    uint32_t g = old->record.generation;
    Status st = sh->db->Delete(wo, sh->meta, uih::GenerationKey(g));
    if (st.ok()) st = sh->db->DropColumnFamily(old->cf);
    if (!st.ok()) return Fail(err, sh->path, st, "retiring generation " + std::to_string(g));
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens.erase(g);  // its handle goes with the last reader
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
  WriteBatch wb;
  std::string cur;
  uih::AppendBE32(&cur, w->generation);
  st = wb.Put(sh->meta, uih::GenerationKey(w->generation), S(rec, sizeof rec));
  if (st.ok()) st = wb.Put(sh->meta, uih::kCurrentKey, cur);
  if (st.ok() && g->schema_version > sh->schema_version)  // a schema change comes with its first generation
    st = wb.Put(sh->meta, uih::SchemaKey(g->schema_version), version->json);
  const uih_schema* schema = version->schema;
  for (size_t i = 0; st.ok() && i < w->erased_users.size(); i++)
    for (uint32_t k = 0; st.ok() && k < uih_schema_group_count(schema); k++) {
      uint8_t key[UIH_KEY_GROUP_PREFIX_SIZE];
      uih_key_group_prefix(w->erased_users[i], uih_schema_group_at(schema, k)->id, key);
      st = wb.Delete(sh->events, S(key, sizeof key));
    }
  WriteOptions wo;
  wo.sync = true;
  if (st.ok()) st = sh->db->Write(wo, &wb);  // the switch
  if (!st.ok()) {
    drop();
    return failed(Fail(err, sh->path, st, "writing its record"));
  }
  auto gen = std::make_shared<Generation>();
  gen->record = *g;
  gen->db = sh->db;
  gen->cf = cf;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->gens[w->generation] = gen;
    sh->current = w->generation;
  }
  sh->schema_version = g->schema_version;
  {
    std::lock_guard<std::mutex> lock(w->s->schemas_mu);
    if (g->schema_version > uih_schema_version(w->s->schema)) {  // the tiers first, then the store's
      for (auto& other : w->s->shards) uih::SetMutableSchema(other->mut, schema);
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

int uih_store_init(const char* dir, const char* schema_json, size_t len, const char* origin, uint32_t shards,
                   uih_error* err) {
  return uih::CallC(err, "uih_store_init", [&] { return Init(dir, schema_json, len, origin, shards, err); });
}

int uih_store_open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  return uih::CallC(err, "uih_store_open", [&] { return Open(dir, opts, out, err); });
}

void uih_store_close(uih_store* s) {
  uih::CallCVoid([&] { delete s; });
}

const uih_schema* uih_store_schema(const uih_store* s) { return s ? s->schema.load() : nullptr; }
uint32_t uih_store_shards(const uih_store* s) { return s ? static_cast<uint32_t>(s->shards.size()) : 0; }
const char* uih_store_dir(const uih_store* s) { return s ? s->dir.c_str() : nullptr; }
const char* uih_store_tmpdir(const uih_store* s) { return s ? s->tmp.c_str() : nullptr; }

uih_mutable* uih_store_mutable(uih_store* s, uint32_t shard) {
  return s && shard < s->shards.size() ? s->shards[shard]->mut : nullptr;
}

int uih_store_generations(uih_store* s, uint32_t shard, uih_generation* out, size_t cap, size_t* n,
                          uint32_t* current, uih_error* err) {
  return uih::CallC(err, "uih_store_generations", [&] { return Generations(s, shard, out, cap, n, current, err); });
}

int uih_store_sizes(uih_store* s, uint32_t shard, uint64_t* immutable_bytes, uint64_t* mutable_bytes,
                    uih_error* err) {
  return uih::CallC(err, "uih_store_sizes", [&] { return Sizes(s, shard, immutable_bytes, mutable_bytes, err); });
}

int uih_store_read(uih_store* s, uint64_t user_id, uint16_t group, int64_t from, int64_t to, unsigned tier,
                   uint32_t generation, uih_batch** batch, uih_error* err) {
  return uih::CallC(err, "uih_store_read",
                    [&] { return Read(s, user_id, group, from, to, tier, generation, batch, err); });
}

int uih_store_scan_open(uih_store* s, uint32_t shard, uint32_t generation, uih_store_scan** out, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_open", [&] { return ScanOpen(s, shard, generation, out, err); });
}

int uih_store_scan_next(uih_store_scan* sc, const uint8_t** key, size_t* key_len, const uint8_t** value,
                        size_t* value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_next", [&] { return ScanNext(sc, key, key_len, value, value_len, err); });
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
