// The store's objects (uih/store.h), shared by its files: store.cc
// (layout, init, open, status), read.cc (reads), generations.cc (scans,
// writers, publishing, retiring) and, for now, the materializer.
#pragma once

#include <atomic>
#include <filesystem>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "uih_plugin/generation_files.h"
#include "rocksdb/sst_file_writer.h"
#include "uih_plugin/status.h"
#include "pins.h"
#include "uih/store.h"
#include "uih/stripe.h"
#include "mutable_internal.h"

namespace uih {

using rocksdb::ColumnFamilyHandle;
using rocksdb::DB;

// One live generation of a shard; readers hold it while they read, so a
// retired generation's files stay until the last one lets go.
struct Generation {
  uih_generation record{};
  DB* db = nullptr;
  ColumnFamilyHandle* cf = nullptr;
  // The value dictionaries its stripes' shared columns may name, parsed
  // from the uih.dicts/<g> value: what decoders of its stripes are given
  // (uih_stripe_decoder_set_context; null: none).
  uih_stripe_context* ctx = nullptr;

  // Parses `bytes` (empty: none) into ctx; an error names the generation.
  int SetDicts(const std::string& bytes, const std::string& where, uih_error* err) {
    uih_stripe_context* parsed = nullptr;
    if (!bytes.empty()) {
      int rc = uih_stripe_context_parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, &parsed, err);
      if (rc != UIH_OK) {
        uih_error_prefix(err, "%s: generation %u: ", where.c_str(), record.generation);
        return rc;
      }
    }
    uih_stripe_context_free(ctx);
    ctx = parsed;
    return UIH_OK;
  }

  // Its files for direct reads, opened by the first read that needs them
  // (a failed open is retried by the next).
  rocksdb::Status Files(const GenerationFiles** out) {
    std::lock_guard<std::mutex> lock(files_mu);
    rocksdb::Status s;
    if (!files) s = GenerationFiles::Open(db, cf, &files);
    *out = files.get();
    return s;
  }

  ~Generation() {
    if (cf) db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    uih_stripe_context_free(ctx);
  }

 private:
  std::mutex files_mu;
  std::unique_ptr<GenerationFiles> files;
};

// Where a read of both tiers of a shard splits: events below it come from
// the generation, the rest from the mutable tier. The watermark is read
// before the generation; when a publish came in between, the generation's
// `through` is ahead of the watermark (and the mutable tier may already
// have dropped what lies below it), so the split is the larger of the two.
// Without either, there is no split: everything is the mutable tier's.
struct Split {
  bool has = false;
  int64_t at = INT64_MIN;
};
inline Split SplitOf(int64_t wm, int has_wm, const Generation* gen) {
  Split s;
  if (has_wm) s = {true, wm};
  if (gen && (!s.has || gen->record.through > s.at)) s = {true, gen->record.through};
  return s;
}

// A user's erasure: the generation whose load erased them and its through.
struct Erasure {
  uint32_t generation = 0;
  int64_t through = 0;
};

struct Shard {
  uint32_t index = 0;
  std::string path;
  DB* db = nullptr;
  ColumnFamilyHandle* meta = nullptr;
  ColumnFamilyHandle* events = nullptr;
  std::vector<ColumnFamilyHandle*> others;  // column families the store does not know: left alone
  uih_mutable* mut = nullptr;

  std::mutex mu;  // gens, current, erased
  std::map<uint32_t, std::shared_ptr<Generation>> gens;
  uint32_t current = 0;
  std::map<uint64_t, Erasure> erased;  // the users its loads erased (its metadata's "uih.erased/")
  std::atomic<bool> any_erased{false};  // `erased` is not empty: a record's check needs no lock otherwise

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

// A schema version the store knows: read from a shard, or added for a load
// that has not published it yet.
struct SchemaVersion {
  uih_schema* schema = nullptr;
  std::string json;
};

inline const uint8_t* U8(const rocksdb::Slice& s) { return reinterpret_cast<const uint8_t*>(s.data()); }
inline rocksdb::Slice S(const uint8_t* p, size_t n) { return rocksdb::Slice(reinterpret_cast<const char*>(p), n); }

inline int Fail(uih_error* err, const std::string& where, const rocksdb::Status& s, const std::string& what) {
  return uih_error_set(err, FromStatus(s), "store %s: %s: %s", where.c_str(), what.c_str(), s.ToString().c_str());
}

}  // namespace uih

struct uih_store {
  std::string dir, tmp;
  uint64_t id = 0;  // the descriptor's (0: a store made before ids)
  uih_store_opts opts{};
  std::atomic<const uih_schema*> schema{nullptr};  // the newest version a shard holds
  std::mutex schemas_mu;
  std::map<uint32_t, uih::SchemaVersion> schemas;  // every version seen; freed at close
  std::vector<std::unique_ptr<uih::Shard>> shards;  // null: not opened (opts.one_shard)
  uih::Pins pins;  // what a read-only store holds; a writer's view of the others' (released after the shards close)
  ~uih_store() {
    shards.clear();
    for (auto& v : schemas) uih_schema_free(v.second.schema);
  }
};

struct uih_store_scan {
  std::shared_ptr<uih::Generation> gen;  // null: an empty scan
  std::unique_ptr<rocksdb::Iterator> it;
  bool started = false;
  std::string dicts;  // gen's dictionaries serialized, once asked for (uih_store_scan_dicts)
  bool dicts_made = false;
};

struct uih_store_writer {
  uih_store* s = nullptr;
  uih::Shard* sh = nullptr;
  uint32_t generation = 0;
  std::string dir;
  rocksdb::Options options;
  std::unique_ptr<rocksdb::SstFileWriter> file;
  std::vector<std::string> files;
  uint64_t file_bytes = 0;
  std::vector<uint64_t> erased_users;  // their mutable events go with the publish
  std::string dicts;                   // the value dictionaries of the generation it builds
  ~uih_store_writer() {
    file.reset();  // abandons an unfinished file
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (sh) {
      std::lock_guard<std::mutex> lock(sh->writer_mu);
      sh->writing = false;
    }
  }
};

namespace uih {

// The shard `shard` of `s`, or an error naming the store and its shards.
int ShardAt(uih_store* s, uint32_t shard, Shard** out, uih_error* err);
// The shard holding `user`'s history, or an error when the store did not
// open it (a store opened for one shard).
int ShardOfUser(uih_store* s, uint64_t user, Shard** out, uih_error* err);
// Whether `user` was erased from their shard after a snapshot record of
// theirs was logged at generation `generation` (exact: the generation the
// record names, 0 when the shard had none) or, for records before version
// 3, at `generation` when a group names one, else at `request_ts` (before
// the erasing load's through: before the erasure); *by says by which
// erasure. A store opened for other shards knows nothing of the user.
bool ErasedSince(uih_store* s, uint64_t user, uint32_t generation, bool exact, int64_t request_ts, Erasure* by);
// A watermark behind the shard's current generation (a load killed
// between publishing and advancing it) catches up.
int CatchUpWatermark(Shard* sh, uih_error* err);
// Schema version `version` of the store (kept until close): parsed from the
// first shard that holds it. UIH_ERR_NOT_FOUND when none does.
int SchemaAt(uih_store* s, uint32_t version, const uih_schema** out, uih_error* err);

}  // namespace uih

