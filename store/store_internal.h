// The store's objects (uih/store.h) and what its files share: open.cc and
// create.cc make them, store.cc answers what they hold, schemas.cc keeps
// their schema versions, scan.cc, writer.cc and publish.cc read and write
// generations, read.cc reads events. What the materializer may see of them
// is internal/uih_store/view.h.
//
// Who may touch what: a store is shared by any number of threads. A
// shard's `mu` guards its generations, its current one and its erasures;
// `writer_mu` its one writer; the store's `schemas_mu` its schema versions.
// Nothing else changes after open.
#pragma once

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "error_internal.h"
#include "format.h"
#include "mutable_internal.h"
#include "pins.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "uih/store.h"
#include "uih/stripe.h"
#include "uih_store/view.h"

namespace uih {

struct Shard {
  uint32_t index = 0;
  std::string path;
  rocksdb::DB* db = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* events = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> others;  // column families the store does not know: left alone
  uih_mutable* mut = nullptr;

  std::mutex mu;  // gens, current, erased
  std::map<uint32_t, std::shared_ptr<Generation>> gens;
  uint32_t current = 0;
  std::map<uint64_t, Erasure> erased;   // the users its loads erased (its metadata's "uih.erased/")
  std::atomic<bool> any_erased{false};  // `erased` is not empty: a record's check needs no lock otherwise

  std::mutex writer_mu;  // writing
  bool writing = false;
  uint32_t schema_version = 0;  // the newest schema version in its metadata (the writer's)

  // Generation `generation` (0: the current one) held, or null.
  std::shared_ptr<Generation> Get(uint32_t generation) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = gens.find(generation ? generation : current);
    return it == gens.end() ? nullptr : it->second;
  }

  ~Shard();
};

// A schema version the store knows: read from a shard, or added for a load
// that has not published it yet.
struct SchemaVersion {
  uih_schema* schema = nullptr;
  std::string json;
};

inline const uint8_t* U8(const rocksdb::Slice& s) { return reinterpret_cast<const uint8_t*>(s.data()); }
inline rocksdb::Slice S(const uint8_t* p, size_t n) { return rocksdb::Slice(reinterpret_cast<const char*>(p), n); }

// Sets `err` from a failed RocksDB call on `where` (a shard's folder, a
// file; empty when the caller's prefix names it): the code FromStatus gives
// and "store WHERE: WHAT: <RocksDB's message>", WHAT printf-formatted.
// Returns the code.
int StatusError(uih_error* err, const std::string& where, const rocksdb::Status& s, const char* what, ...)
    __attribute__((format(printf, 4, 5)));

// The value of metadata key `key` (column family `meta` of the database at
// `where`) into *v; *found false, and UIH_OK, when there is none. `what`
// names the value in an error ("the watermark").
int GetMeta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, const std::string& key,
            const char* what, std::string* v, bool* found, uih_error* err);

// A metadata value of format.h's integers, parsed (an i64 in the store's
// `format`): *found false, *out untouched, when the key is absent; a value
// that does not parse is a corruption naming the key and `where`.
int ReadMetaU32(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, const char* key,
                uint32_t* out, bool* found, uih_error* err);
int ReadMetaI64(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, const std::string& where, uint32_t format,
                const char* key, int64_t* out, bool* found, uih_error* err);

// The traits of `b`'s columns, in their order, but `skip` (0: none).
std::vector<uint16_t> ColumnIds(const uih_batch* b, uint16_t skip = 0);

// UIH_ERR_NOT_FOUND for a path that holds no store (a store, or a mutable
// store), saying why: "not a uihstore store: PATH: why".
int NotAStore(uih_error* err, const char* path, const char* why);

// A generation's column family: UihTable files, ingested, never compacted.
rocksdb::ColumnFamilyOptions GenerationCfOptions();

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
  const std::string* shard = nullptr;    // its folder, for messages
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
  ~uih_store_writer();
};

namespace uih {

// The shard `shard` of `s`, or an error naming the store and its shards.
int ShardAt(uih_store* s, uint32_t shard, Shard** out, uih_error* err);
// The shard holding `user`'s history, or an error when the store did not
// open it (a store opened for one shard).
int ShardOfUser(uih_store* s, uint64_t user, Shard** out, uih_error* err);
// A watermark behind the shard's current generation (a load killed
// between publishing and advancing it) catches up.
int CatchUpWatermark(Shard* sh, uih_error* err);
// Removes generation g's record and its dictionaries from the shard's
// metadata, together, in one synced write.
rocksdb::Status DeleteGenerationRecord(Shard* sh, uint32_t g);
// Ends the writer's table file being written, if any.
int FinishFile(uih_store_writer* w, uih_error* err);
// The newest schema version the shard holds, its text in *json.
int ReadNewestSchema(Shard* sh, uint32_t* version, std::string* json, uih_error* err);

}  // namespace uih
