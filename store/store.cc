// The store's objects (store_internal.h): shards and their generations,
// finding a user's shard, what the materializer may see of one
// (uih_store/view.h), and the C API of what a store holds: its schema,
// shards, generations, pins and sizes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstring>

#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih/key.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/generation_files.h"
#include "uih_plugin/logger.h"
#include "uih_plugin/status.h"

namespace uih {

using rocksdb::ColumnFamilyHandle;

// ---- errors -------------------------------------------------------------------

// RocksDB's words for a Status, each kind's prefix once: it builds some
// messages from another Status's (a table's corruption inside a version's),
// which reads "Corruption: Corruption: ...".
std::string StatusWords(const rocksdb::Status& s) {
  std::string w = s.ToString();
  for (const char* p : {"Corruption: ", "IO error: ", "Invalid argument: ", "Not implemented: "}) {
    const std::string twice = std::string(p) + p;
    for (size_t at; (at = w.find(twice)) != std::string::npos;) w.erase(at, strlen(p));
  }
  return w;
}

namespace {

// " (RocksDB logged: ...)": what the database's logger (a ReportingLogger)
// kept of a failed open at WARN and above — the log file and the bytes it
// would drop — or "" when it kept nothing.
std::string Logged(const rocksdb::DBOptions& dbo) {
  auto* logger = dynamic_cast<ReportingLogger*>(dbo.info_log.get());
  const std::string said = logger ? logger->Report() : "";
  return said.empty() ? "" : " (RocksDB logged: " + said + ")";
}

int SetStatusError(uih_error* err, const std::string& where, const rocksdb::Status& s, const std::string& after,
                   const char* what, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, what, ap);
  const int code = FromStatus(s);
  const char* store = where.empty() ? "" : "store ";
  const char* sep = where.empty() ? "" : ": ";
  const std::string words = StatusWords(s);
  if (code == UIH_ERR_CORRUPTION)
    return uih_corruption(err, "%s%s%s%s: %s%s", store, where.c_str(), sep, msg, words.c_str(), after.c_str());
  return uih_error_set(err, code, "%s%s%s%s: %s%s", store, where.c_str(), sep, msg, words.c_str(), after.c_str());
}

}  // namespace

int StatusError(uih_error* err, const std::string& where, const rocksdb::Status& s, const char* what, ...) {
  va_list ap;
  va_start(ap, what);
  const int rc = SetStatusError(err, where, s, "", what, ap);
  va_end(ap);
  return rc;
}

int OpenError(uih_error* err, const std::string& where, const rocksdb::Status& s, const rocksdb::DBOptions& dbo,
              const char* what, ...) {
  va_list ap;
  va_start(ap, what);
  const int rc = SetStatusError(err, where, s, Logged(dbo), what, ap);
  va_end(ap);
  return rc;
}

int GetMeta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, const std::string& key,
            const char* what, std::string* v, bool* found, uih_error* err) {
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, key, v);
  *found = s.ok();
  if (s.ok() || s.IsNotFound()) return UIH_OK;
  return StatusError(err, where, s, "reading %s", what);
}

int ReadMetaU32(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, const char* key,
                uint32_t* out, bool* found, uih_error* err) {
  std::string v;
  int rc = GetMeta(db, meta, where, key, key, &v, found, err);
  if (rc != UIH_OK || !*found) return rc;
  rc = ParseU32Value(v, key, out, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "store %s: ", where.c_str());
}

int ReadMetaI64(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, uint32_t format,
                const char* key, int64_t* out, bool* found, uih_error* err) {
  std::string v;
  int rc = GetMeta(db, meta, where, key, key, &v, found, err);
  if (rc != UIH_OK || !*found) return rc;
  rc = ParseI64Value(v, format, key, out, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "store %s: ", where.c_str());
}

std::vector<uint16_t> ColumnIds(const uih_batch* b, uint16_t skip) {
  std::vector<uint16_t> ids;
  for (uint32_t c = 0; c < b->ncolumns; c++)
    if (b->columns[c].trait->id != skip || skip == 0) ids.push_back(b->columns[c].trait->id);
  return ids;
}

int SyncDirectory(const std::string& dir, uih_error* err) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int e = fd < 0 ? errno : (fsync(fd) == 0 ? 0 : errno);
  if (fd >= 0) close(fd);
  return e == 0 ? UIH_OK : uih_error_set(err, UIH_ERR_IO, "store %s: syncing the directory: %s", dir.c_str(), strerror(e));
}

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
  return SyncDirectory(dir, err);
}

void StrictRecovery(rocksdb::DBOptions* dbo) {
  dbo->wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  dbo->track_and_verify_wals_in_manifest = true;
}

namespace {

// A file whose preallocation steps are at most kPreallocationMax: RocksDB
// sets the step once, when it creates a write-ahead log or a compaction's
// output (store_internal.h).
class BoundedPreallocationFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  void SetPreallocationBlockSize(size_t size) override {
    FSWritableFileOwnerWrapper::SetPreallocationBlockSize(std::min(size, kPreallocationMax));
  }
};

class BoundedPreallocationFileSystem : public rocksdb::FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  static const char* kClassName() { return kWritesOnlyFileSystem; }  // reads as the default's (generation_files.h)
  const char* Name() const override { return kClassName(); }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* f, rocksdb::IODebugContext* d) override {
    return Bound(target()->NewWritableFile(name, o, f, d), f);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* f,
                                       rocksdb::IODebugContext* d) override {
    return Bound(target()->ReopenWritableFile(name, o, f, d), f);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* f,
                                      rocksdb::IODebugContext* d) override {
    return Bound(target()->ReuseWritableFile(name, old, o, f, d), f);
  }

 private:
  static rocksdb::IOStatus Bound(rocksdb::IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* f) {
    if (s.ok() && *f) *f = std::make_unique<BoundedPreallocationFile>(std::move(*f));
    return s;
  }
};

}  // namespace

void BoundPreallocation(rocksdb::DBOptions* dbo) {
  // One for the process, never freed: databases closed at exit may still use it.
  static rocksdb::Env* const env =
      rocksdb::NewCompositeEnv(std::make_shared<BoundedPreallocationFileSystem>(rocksdb::FileSystem::Default()))
          .release();
  if (dbo->env == rocksdb::Env::Default()) dbo->env = env;
}

int NotAStore(uih_error* err, const char* path, const char* why) {
  return uih_error_set(err, UIH_ERR_NOT_FOUND, "not a uihstore store: %s: %s", path, why);
}

int ReadDescriptorFile(const std::string& dir, uint32_t* shards, uint64_t* id, uint64_t* bytes, uih_error* err) {
  const std::string path = dir + "/" + kDescriptorFile;
  if (bytes) *bytes = 0;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return NotAStore(err, dir.c_str(), "no UIHSTORE descriptor in it");
  if (fd < 0) return uih_error_set(err, UIH_ERR_IO, "store %s: cannot read %s: %s", dir.c_str(), path.c_str(),
                                   strerror(errno));
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  const int e = errno;
  close(fd);
  if (n < 0) return uih_error_set(err, UIH_ERR_IO, "store %s: cannot read %s: %s", dir.c_str(), path.c_str(),
                                  strerror(e));
  if (bytes) *bytes = text.size();
  int rc = uih_store_descriptor_parse(text.data(), text.size(), shards, id, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "%s: ", path.c_str());
}

// ---- generations and shards ----------------------------------------------------

rocksdb::Status FlushOut(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& cfs) {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;
  return db->Flush(fo, cfs);
}

Database::~Database() {
  if (db == nullptr) return;
  if (writable) {  // a clean close leaves nothing to its write-ahead log
    std::vector<ColumnFamilyHandle*> cfs;
    for (ColumnFamilyHandle* h : {meta, legacy_mutable})
      if (h) cfs.push_back(h);
    FlushOut(db, cfs).PermitUncheckedError();
  }
  for (ColumnFamilyHandle* h : others) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  for (ColumnFamilyHandle* h : {meta, legacy_mutable})
    if (h) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  db->Close().PermitUncheckedError();
  delete db;
}

Generation::~Generation() {
  files_.reset();
  if (cf_) db_->db->DestroyColumnFamilyHandle(cf_).PermitUncheckedError();
  uih_stripe_context_free(dicts_);
  if (on_release_) on_release_();
}

rocksdb::DB* Generation::db() const { return db_->db; }

std::vector<GenerationLayer> Generation::Layers() const {
  rocksdb::ColumnFamilyMetaData md;
  db()->GetColumnFamilyMetaData(cf_, &md);
  return GenerationLayers(md);
}

int Generation::SetDicts(const std::string& bytes, uih_error* err) {
  uih_stripe_context* parsed = nullptr;
  if (!bytes.empty()) {
    int rc = uih_stripe_context_parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, &parsed, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "generation %u: ", number());
  }
  uih_stripe_context_free(dicts_);
  dicts_ = parsed;
  return UIH_OK;
}

int Generation::Files(const std::string& shard, const GenerationFiles** out, uih_error* err) {
  std::lock_guard<std::mutex> lock(files_mu_);
  if (!files_) {
    rocksdb::Status s = GenerationFiles::Open(db_->db, cf_, &files_);
    if (!s.ok()) return StatusError(err, shard, s, "opening generation %u's files", number());
  }
  *out = files_.get();
  return UIH_OK;
}

rocksdb::Status DeleteGenerationRecord(Database* im, uint32_t g) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::WriteBatch wb;
  rocksdb::Status st = wb.Delete(im->meta, GenerationKey(g));
  if (st.ok()) st = wb.Delete(im->meta, DictsKey(g));
  return st.ok() ? im->db->Write(wo, &wb) : st;
}

Shard::~Shard() {
  FreeMutable(mut);  // before the database a mutable tier of an older format borrows
  gens.clear();
  im.reset();
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

int ViewUser(uih_store* s, uint64_t user, bool with_split, ShardView* out, uih_error* err) {
  Shard* sh;
  int rc = ShardOfUser(s, user, &sh, err);
  if (rc != UIH_OK) return rc;
  out->shard = sh->index;
  out->path = &sh->path;
  out->mut = sh->mut;
  out->split = Split{};
  out->mutable_erased = false;
  if (!with_split) {
    out->gen = sh->Get(0);
    return UIH_OK;
  }
  if (sh->mut == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "store %s: opened to load (UIH_STORE_ROLE_LOAD), it has no mutable tier to read",
                         s->dir.c_str());
  // The watermark first, then the generation: a publish in between makes
  // the generation newer than the watermark, never older (see Split).
  int64_t wm;
  int has;
  MutableWatermark(sh->mut, &wm, &has);
  out->gen = sh->Get(0);
  out->split = SplitOf(wm, has, out->gen.get());
  out->mutable_erased = out->gen && MutableErased(sh, user, out->gen->number());
  return UIH_OK;
}

bool MutableErased(Shard* sh, uint64_t user, uint32_t generation) {
  if (sh->mut == nullptr || !sh->any_erased.load(std::memory_order_acquire)) return false;
  const uint32_t applied = MutableApplied(sh->mut);
  if (applied >= generation) return false;  // the usual case: no lock on a snapshot's path
  std::lock_guard<std::mutex> lock(sh->mu);
  auto it = sh->erased.find(user);
  return it != sh->erased.end() && it->second.generation > applied && it->second.generation <= generation;
}

uint64_t StoreSerial(const uih_store* s) { return s->serial; }

bool ErasedSince(uih_store* s, uint64_t user, uint32_t generation, bool exact, int64_t request_ts, Erasure* by) {
  Shard* sh = s->shards[uih_shard_of(user, static_cast<uint32_t>(s->shards.size()))].get();
  if (sh == nullptr || !sh->any_erased.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(sh->mu);
  auto it = sh->erased.find(user);
  if (it == sh->erased.end()) return false;
  *by = it->second;
  return exact || generation ? generation < by->generation : request_ts < by->through;
}

}  // namespace uih

namespace {

using uih::Shard;
using uih::ShardAt;

int Generations(uih_store* s, uint32_t shard, uih_generation* out, size_t cap, size_t* n, uint32_t* current,
                uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  std::lock_guard<std::mutex> lock(sh->mu);
  size_t i = 0;
  for (auto& [g, gen] : sh->gens) {
    if (i < cap && out) out[i] = gen->record();
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
  rocksdb::ColumnFamilyMetaData md;
  uint64_t i = 0, m = 0;
  if (auto gen = sh->Get(0)) {
    gen->db()->GetColumnFamilyMetaData(gen->cf(), &md);
    i = md.size;
  }
  if (sh->mut) {
    uih::MutableDB(sh->mut)->GetColumnFamilyMetaData(uih::MutableColumnFamily(sh->mut), &md);
    m = md.size;
  }
  if (imm) *imm = i;
  if (mut) *mut = m;
  return UIH_OK;
}

int Layout(uih_store* s, uint32_t shard, uint32_t generation, uih_generation_layout* out, uih_error* err) {
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_generation_layout: NULL argument");
  *out = uih_generation_layout{};
  std::shared_ptr<uih::Generation> gen = sh->Get(generation);
  if (!gen) {
    if (generation == 0) return UIH_OK;
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: shard %u has no live generation %u", s->dir.c_str(),
                         shard, generation);
  }
  const std::vector<uih::GenerationLayer> layers = gen->Layers();
  out->layers = static_cast<uint32_t>(std::max<size_t>(layers.size(), 1));  // a generation of no stripes is one
  for (const uih::GenerationLayer& l : layers)
    for (const rocksdb::SstFileMetaData& f : l.files) {
      out->files++;
      out->bytes += f.size;
      if (&l == &layers.front()) out->oldest_bytes += f.size;
    }
  return UIH_OK;
}

int CacheStats(uih_store* s, uih_cache_stats* out, uih_error* err) {
  if (s == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_cache_stats: NULL argument");
  *out = uih_cache_stats{};
  for (auto& sh : s->shards) {
    if (!sh || !sh->mut || !sh->mut->cache) continue;
    const uih::MutableCache::Stats st = sh->mut->cache->stats();
    out->hits += st.hits;
    out->misses += st.misses;
    out->entries += st.entries;
    out->bytes += st.bytes;
    out->capacity += st.capacity;
  }
  return UIH_OK;
}

int Mutable(uih_store* s, uint32_t shard, uih_mutable** out, uih_error* err) {
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_mutable: NULL argument");
  *out = nullptr;
  Shard* sh;
  int rc = ShardAt(s, shard, &sh, err);
  if (rc == UIH_OK && sh->mut == nullptr)
    rc = uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                       "store %s: opened to load (UIH_STORE_ROLE_LOAD), it has no mutable tier: a serving "
                       "process owns it",
                       s->dir.c_str());
  if (rc == UIH_OK) *out = sh->mut;
  return rc;
}

}  // namespace

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

const uih_schema* uih_store_schema(const uih_store* s) { return s ? s->schema.load() : nullptr; }
uint32_t uih_store_shards(const uih_store* s) { return s ? static_cast<uint32_t>(s->shards.size()) : 0; }
int uih_store_has_shard(const uih_store* s, uint32_t shard) {
  return s && shard < s->shards.size() && s->shards[shard] ? 1 : 0;
}
const char* uih_store_dir(const uih_store* s) { return s ? s->dir.c_str() : nullptr; }
uint64_t uih_store_id(const uih_store* s) { return s ? s->id : 0; }

const char* uih_store_recovered(const uih_store* s, uint32_t shard) {
  if (s == nullptr || shard >= s->shards.size() || !s->shards[shard]) return "";
  return s->shards[shard]->recovered.c_str();
}
const char* uih_store_tmpdir(const uih_store* s) { return s ? s->tmp.c_str() : nullptr; }

int uih_store_cache_stats(uih_store* s, uih_cache_stats* out, uih_error* err) {
  return uih::CallC(err, "uih_store_cache_stats", [&] { return CacheStats(s, out, err); });
}

int uih_store_mutable(uih_store* s, uint32_t shard, uih_mutable** out, uih_error* err) {
  return uih::CallC(err, "uih_store_mutable", [&] { return Mutable(s, shard, out, err); });
}

int uih_store_generations(uih_store* s, uint32_t shard, uih_generation* out, size_t cap, size_t* n,
                          uint32_t* current, uih_error* err) {
  return uih::CallC(err, "uih_store_generations", [&] { return Generations(s, shard, out, cap, n, current, err); });
}

int uih_store_pinned(uih_store* s, uint32_t shard, uint32_t generation, int* pinned, uih_error* err) {
  return uih::CallC(err, "uih_store_pinned", [&] { return Pinned(s, shard, generation, pinned, err); });
}

int uih_store_generation_layout(uih_store* s, uint32_t shard, uint32_t generation, uih_generation_layout* out,
                                uih_error* err) {
  return uih::CallC(err, "uih_store_generation_layout", [&] { return Layout(s, shard, generation, out, err); });
}

int uih_store_sizes(uih_store* s, uint32_t shard, uint64_t* immutable_bytes, uint64_t* mutable_bytes,
                    uih_error* err) {
  return uih::CallC(err, "uih_store_sizes", [&] { return Sizes(s, shard, immutable_bytes, mutable_bytes, err); });
}

}  // extern "C"
