// The store's objects (uih/store.h) and what its files share: open.cc and
// create.cc make them (move.cc brings older shards to format 3), store.cc
// answers what they hold, schemas.cc keeps their schema versions, scan.cc,
// writer.cc and publish.cc read and write generations, follow.cc follows
// other processes' publishes, read.cc reads events. What the materializer
// may see of them is internal/uih_store/view.h.
//
// Who may touch what: a store is shared by any number of threads. A
// shard's `mu` guards its database, generations, current one and erasures
// (only a serving store's follower replaces them after open); `writer_mu`
// its one writer; `refresh_mu` its follower's state; the store's
// `schemas_mu` its schema versions. Nothing else changes after open.
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
#include "follow.h"
#include "format.h"
#include "mutable_internal.h"
#include "pins.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "uih/store.h"
#include "uih/stripe.h"
#include "uih_store/view.h"

namespace uih {

// A shard's database (shard-%04u/) as this process opened it, read-only or
// writable. Its generations hold it: a serving store that reopened the
// shard at a publish closes the old one when the last reader of its
// generations lets go.
struct Database {
  std::string path;  // its folder, for messages
  rocksdb::DB* db = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* legacy_mutable = nullptr;  // uih.mutable of a shard before format 3
  std::vector<rocksdb::ColumnFamilyHandle*> others;  // column families the store does not know: left alone
  uint32_t format = 1;                               // uih.format (format.h)
  std::string recovered;  // torn write-ahead log tails its open dropped (CheckWriteAheadLogs), or ""
  bool writable = false;  // opened by a loader: flushed when closed
  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();
};

struct Shard {
  uint32_t index = 0;
  std::string path;          // shard-%04u: its database
  std::string mutable_path;  // mutable-%04u: its mutable tier (format 3)
  uih_mutable* mut = nullptr;  // its mutable tier; null in a loading store

  std::mutex mu;  // im, gens, current, erased
  std::shared_ptr<Database> im;  // replaced only by a serving store's follower (follow.cc)
  std::map<uint32_t, std::shared_ptr<Generation>> gens;
  uint32_t current = 0;
  std::map<uint64_t, Erasure> erased;   // the users its loads erased (its metadata's "uih.erased/")
  std::atomic<bool> any_erased{false};  // `erased` is not empty: a record's check needs no lock otherwise

  std::mutex writer_mu;  // writing
  bool writing = false;
  uint32_t schema_version = 0;  // the newest schema version in its metadata (the writer's)

  // A serving store's follower (follow.cc): the last hint it acted on, and
  // the outcome of its last refresh.
  std::mutex refresh_mu;  // one refresh at a time; hint_seen, retention
  uint32_t hint_seen = 0;
  std::string recovered;  // what its open recovered from, in words (uih_store_recovered)
  // Watermarks the retention filter takes once no reader holds the
  // generation served before them, oldest first (follow.cc).
  std::vector<std::pair<std::weak_ptr<Generation>, int64_t>> retention;
  // Databases the shard served before, held until no generation of theirs
  // is, so that the follower closes them, not a reader's thread.
  std::vector<std::shared_ptr<Database>> retired;
  std::mutex follow_mu;  // follow_rc, follow_error
  int follow_rc = UIH_OK;
  std::string follow_error;

  // Generation `generation` (0: the current one) held, or null.
  std::shared_ptr<Generation> Get(uint32_t generation) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = gens.find(generation ? generation : current);
    return it == gens.end() ? nullptr : it->second;
  }
  // The database as it is now, held.
  std::shared_ptr<Database> Db() {
    std::lock_guard<std::mutex> lock(mu);
    return im;
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

// RocksDB's words for `s`, with no kind's prefix repeated ("Corruption:
// Corruption: ..." as RocksDB nests one Status in another).
std::string StatusWords(const rocksdb::Status& s);

// Sets `err` from a failed RocksDB call on `where` (a shard's folder, a
// file; empty when the caller's prefix names it): the code FromStatus gives
// and "store WHERE: WHAT: <RocksDB's message>", WHAT printf-formatted.
// Returns the code.
int StatusError(uih_error* err, const std::string& where, const rocksdb::Status& s, const char* what, ...)
    __attribute__((format(printf, 4, 5)));

// StatusError for a failed open of a database opened with `dbo`: what its
// ReportingLogger caught follows RocksDB's message, so a long path in the
// log line cannot push the status itself out of a message's 512 bytes.
int OpenError(uih_error* err, const std::string& where, const rocksdb::Status& s, const rocksdb::DBOptions& dbo,
              const char* what, ...) __attribute__((format(printf, 5, 6)));

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

// Writes `text` to DIR/NAME durably: a temporary file, fsync, rename, fsync
// of the directory. Errors name the file and the system's reason.
int WriteFileDurably(const std::string& dir, const std::string& name, const std::string& text, uih_error* err);
// fsync of the directory `dir`: the entries made in it are durable.
int SyncDirectory(const std::string& dir, uih_error* err);
// The options a shard database's column family `name` opens with: a
// generation's, the mutable tier's of an older format, or the defaults.
rocksdb::ColumnFamilyOptions ShardCfOptions(const uih_store* s, const std::string& name);

// The options every database of a store opens with, on top of `dbo`: a
// write-ahead log replays whole or the open fails (only a record torn at
// its very end is dropped), closed logs tracked in the MANIFEST.
void StrictRecovery(rocksdb::DBOptions* dbo);
// Files a store's databases write preallocated kPreallocationMax bytes at
// a time: RocksDB 7.8.3 preallocates a write-ahead log 1.1x the write
// buffer at a time (74 MB by default) and a compaction's output 1.1x its
// inputs or its largest size (flushes, MANIFESTs at 4 MiB, and the
// loader's generation files are not concerned). A load writing a few
// bytes of watermark into each shard's mutable tier made every log take
// 74 MB of disk until it closed, beside the generation being written.
// Sets dbo->env unless the caller chose one; reads are the default file
// system's (ReadsAsDefault, uih_plugin/generation_files.h). Writable opens
// only: a read-only one (a training process) keeps the default Env.
constexpr size_t kPreallocationMax = size_t{4} << 20;
void BoundPreallocation(rocksdb::DBOptions* dbo);
// Flushes `cfs` of a writable database into table files, so that what
// they hold no longer depends on its write-ahead log: done after a publish
// and when a writer closes, so that the log a later damage may cut or
// delete holds nothing needed. `where` names it in the error.
rocksdb::Status FlushOut(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& cfs);

// The same for the one table file at `path` (`size` bytes; any other kind
// of table file passes): before anything else opens it, e.g. a scrub.
int CheckTablePropertiesOf(const std::string& path, uint64_t size, uih_error* err);
// Before opening the database in `dir`: every block-based table file's
// properties block verified (check_tables.cc says why RocksDB's own open
// does not): a damaged one is a corruption naming the file. Reads only.
int CheckTableProperties(const std::string& dir, uih_error* err);
// The last 8 bytes of the file at `path`, `size` bytes (a table file's
// magic number), 0 when shorter or unreadable.
uint64_t TableMagicOf(const std::string& path, uint64_t size);
// Before opening the database in `dir` with `dbo`: each write-ahead log
// read whole; a damaged one is a corruption naming the log and the offset,
// but for a torn tail (a writer stopped mid-record), which RocksDB drops at
// the open: said in *torn (and in the database's LOG), "" when none. Reads
// only.
int CheckWriteAheadLogs(const std::string& dir, const rocksdb::DBOptions& dbo, std::string* torn, uih_error* err);

// UIH_ERR_NOT_FOUND for a path that holds no store (a store, or a mutable
// store), saying why: "not a uihstore store: PATH: why".
int NotAStore(uih_error* err, const char* path, const char* why);
// The descriptor of the store in the directory `dir`: its shard count and
// id; NotAStore when there is none, a corruption naming the file (and the
// line) when it does not parse; *bytes (may be null) its size.
int ReadDescriptorFile(const std::string& dir, uint32_t* shards, uint64_t* id, uint64_t* bytes, uih_error* err);

// A generation's column family: UihTable files, ingested, never compacted.
rocksdb::ColumnFamilyOptions GenerationCfOptions();

inline uint64_t NextStoreSerial() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

}  // namespace uih

struct uih_store {
  const uint64_t serial = uih::NextStoreSerial();  // this open's number in the process (StoreSerial, view.h)
  std::string dir, tmp;
  uint64_t id = 0;  // the descriptor's (0: a store made before ids)
  uih_store_opts opts{};
  std::atomic<const uih_schema*> schema{nullptr};  // the newest version a shard holds
  std::mutex schemas_mu;
  std::map<uint32_t, uih::SchemaVersion> schemas;  // every version seen; freed at close
  std::vector<std::unique_ptr<uih::Shard>> shards;  // null: not opened (opts.one_shard)
  uih::Pins pins;  // what a read-only or serving store holds; a writer's view of the others' (released after the shards close)
  std::unique_ptr<uih::Follower> follower;  // a serving store's (follow.cc); stopped before the shards close
  ~uih_store() {
    follower.reset();
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
  std::vector<uint64_t> erased_users;  // recorded with the publish; their mutable events go when it is applied
  std::string dicts;                   // the value dictionaries of the generation it builds
  std::shared_ptr<uih::Generation> base;  // a layered writer's: the generation whose files it shares
  ~uih_store_writer();
};

namespace uih {

// The shard `shard` of `s`, or an error naming the store and its shards.
int ShardAt(uih_store* s, uint32_t shard, Shard** out, uih_error* err);
// The shard holding `user`'s history, or an error when the store did not
// open it (a store opened for one shard).
int ShardOfUser(uih_store* s, uint64_t user, Shard** out, uih_error* err);
// Brings the shard's mutable tier up to its current generation: the
// erasures of the generations it has not applied deleted, its watermark
// advanced to the generation's through, uih.applied written, in one synced
// write (format.h); with `retention`, its retention filter follows at
// once. Only a store that owns the mutable tier does it.
int ApplyPublished(Shard* sh, bool retention, uih_error* err);
// Writes DIR/shard-%04u.published for the shard's current generation (a
// hint: a failure is reported, nothing depends on it).
int WritePublished(uih_store* s, Shard* sh, uih_error* err);
// Opens the shard's database (read-only or writable), reads its metadata
// and pairs its generations with their records, into `out` (not yet the
// shard's): what open.cc does at open and follow.cc at each publish.
struct ShardState {
  std::shared_ptr<Database> im;
  std::map<uint32_t, std::shared_ptr<Generation>> gens;
  uint32_t current = 0;
  std::map<uint64_t, Erasure> erased;
};
int ReadShard(uih_store* s, Shard* sh, bool read_only, ShardState* out, uih_error* err);
// Pins what a read-only store holds of the shard — every generation it
// opened — or a serving store — the one it serves (older ones a loader may
// retire under it; it never reads them for a snapshot) — until the last
// holder of each lets go. Called inside the pins' gate.
int PinShard(uih_store* s, uint32_t shard, ShardState* st, uih_error* err);
// Moves a shard of format 1 or 2's mutable tier into mutable-%04u/ (format.h),
// through a writable open of its own; a no-op for a shard of format 3.
int MoveMutable(uih_store* s, Shard* sh, uih_error* err);
// Removes generation g's record and its dictionaries from the shard's
// metadata, together, in one synced write.
rocksdb::Status DeleteGenerationRecord(Database* im, uint32_t g);
// Whether `user`'s mutable events are hidden from a read on `generation`:
// a load up to it erased the user, and the mutable tier has not applied
// that erasure yet (format.h).
bool MutableErased(Shard* sh, uint64_t user, uint32_t generation);
// Ends the writer's table file being written, if any.
int FinishFile(uih_store_writer* w, uih_error* err);
// The newest schema version the shard's database holds, its text in *json.
int ReadNewestSchema(Database* im, uint32_t* version, std::string* json, uih_error* err);

}  // namespace uih
