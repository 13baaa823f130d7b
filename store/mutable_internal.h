// The mutable tier behind uih/mutable.h, seen from the rest of the store:
// its object, its keys, its column family's options, a store's own mutable
// tiers (their cache, what a publish brings them), and the read-only tier
// of a shard of an older format. mutable.cc opens, appends and keeps
// the watermark; mutable_read.cc reads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "uih/key.h"
#include "uih/mutable.h"
#include "uih_plugin/events.h"

namespace uih {

// The acknowledged mark of a mutable store (acked.cc; format.h: UIH-ACKED):
// the sequence numbers of the last write the store acknowledged and of the
// last synced one, with the machine's boot id, in a file beside the
// database, advanced after each write (in place, not synced) and checked
// by every open: a database that holds less lost acknowledged writes with
// its write-ahead log.
class AckedMark {
 public:
  // Reads DIR/UIH-ACKED before the database opens (a writer appending
  // meanwhile only moves it past what this open will see): absent (a store
  // made before the mark) there is nothing to check; damaged (any size but
  // its own, a wrong magic or check), a corruption naming what is wrong.
  int Read(const std::string& dir, uih_error* err);
  // Then `db`, just opened, must hold as much — what was synced always, all
  // that was acknowledged unless the machine restarted since (its boot id):
  // else a corruption saying what was lost (*lost true: a reader racing its
  // owner's flush may look again). The unsynced writes a restart lost are
  // said in *recovered. `writable`: the mark is written again, durably, to
  // what the database holds in this boot, and kept open to be advanced.
  int Check(rocksdb::DB* db, bool writable, std::string* recovered, bool* lost, uih_error* err);
  // After a write: the last sequence number acknowledged, and the last
  // synced (the write's own when it was synced: a later one of another
  // thread may not be). The mark follows, never back; a failure to write
  // it leaves it behind: a weaker check, never a false alarm.
  void Advance(uint64_t acked, uint64_t synced);
  // `uih repair`: the mark written again, durably, to what `db` holds now.
  static int Reset(const std::string& dir, rocksdb::DB* db, uih_error* err);
  AckedMark() = default;
  AckedMark(const AckedMark&) = delete;
  AckedMark& operator=(const AckedMark&) = delete;
  ~AckedMark();

 private:
  static int Rewrite(const std::string& dir, uint64_t holds, const std::array<uint8_t, 16>& boot, uih_error* err);
  std::string dir_;
  bool present_ = false;             // as read
  uint64_t acked_ = 0, synced_ = 0;  // as read
  bool same_boot_ = false;           // written in this boot of the machine
  std::array<uint8_t, 16> boot_{};
  int fd_ = -1;  // open only in a writable store
  std::atomic<uint64_t> acked_w_{0}, synced_w_{0};  // what the owner last wrote
};

}  // namespace uih

// Who may touch what: `schema` changes when a load publishes a newer
// version (atomically); the watermark's writes are serialized by
// `watermark_mu`; nothing else changes after open.
struct uih_mutable {
  std::string path;
  // The watermark and uih.applied as last read or written (what reads
  // split at; the durable values are the database's).
  std::atomic<int64_t> wm{INT64_MIN};
  std::atomic<bool> has_wm{false};
  std::atomic<uint32_t> applied{0};
  std::atomic<const uih_schema*> schema{nullptr};  // a store's load may publish a newer one
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* events = nullptr;             // uih.mutable
  rocksdb::ColumnFamilyHandle* meta = nullptr;               // default: the watermark
  std::shared_ptr<uih::UihRetentionFactory> retention;       // null: not bound
  std::mutex watermark_mu;
  uint32_t format = 0;  // of its metadata values (format.h)
  int64_t span = 0;     // the chunk span; 0: one key per (user, group) (a store made before chunks)
  bool owns_db = true;  // false: the database of a shard of an older format, lent to it read-only
  bool writable = false;  // its owner's: flushed when closed
  std::string recovered;  // torn write-ahead log tails its open dropped, or ""
  uih_events_limits limits{};  // the merge operator's
  std::unique_ptr<uih::MutableCache> cache;  // a store's serving side: its write-through cache, or null
  uih::AckedMark acked;  // a database of its own (owns_db)
  // Closes the database, so a store given up half-open (an error or an
  // exception after DB::Open) does not keep its LOCK.
  ~uih_mutable();
};

namespace uih {

class Gather;

// The sequence number of the last write in `wb`, once written (RocksDB
// numbers its writes as it writes it); 0 for an empty batch.
uint64_t LastSequence(const rocksdb::WriteBatch& wb);

// Torn write-ahead log tails the mutable store's open dropped, in words; "".
const std::string& MutableRecovered(const uih_mutable* m);

// For C++ embedders and tests: the database and column family of a store.
rocksdb::DB* MutableDB(uih_mutable* m);
rocksdb::ColumnFamilyHandle* MutableColumnFamily(uih_mutable* m);

// The key of the chunk holding `ts` in (user, group)'s history, for a store
// of chunk span `span` (0: the 10-byte key of a store without chunks); its
// length.
size_t MutableKey(int64_t span, uint64_t user, uint16_t group, int64_t ts, uint8_t key[UIH_KEY_SIZE]);
// [begin, end): every key of (user, group)'s history, chunked or not.
void MutableKeyRange(uint64_t user, uint16_t group, uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE],
                     uint8_t end[UIH_KEY_SIZE]);

// The options of column family uih.mutable (merge operator, retention,
// bloom filter, compression) for the settings `o`.
rocksdb::ColumnFamilyOptions MutableCfOptions(const uih_mutable_opts& o);

// The mutable tier of a shard of format 1 or 2 (its column family
// uih.mutable), read-only: the handles stay the shard database's and must
// outlive it; free it with FreeMutable. (A writable open moves such a tier
// into a database of its own first: move.cc.)
int AdoptMutable(const std::string& path, const uih_schema* schema, rocksdb::DB* db,
                 rocksdb::ColumnFamilyHandle* events, rocksdb::ColumnFamilyHandle* meta, uih_mutable** out,
                 uih_error* err);
void FreeMutable(uih_mutable* m);
// Sets the schema appends and reads use (an adopted store's, once read).
void SetMutableSchema(uih_mutable* m, const uih_schema* schema);
// The durable watermark (*has 0: never set).
int ReadWatermark(uih_mutable* m, int64_t* wm, int* has, uih_error* err);
// The watermark as of the last read or write of it, without I/O.
inline void MutableWatermark(const uih_mutable* m, int64_t* wm, int* has) {
  *has = m->has_wm.load(std::memory_order_acquire);
  *wm = m->wm.load(std::memory_order_acquire);
}
// The newest generation of its shard whose erasures and through the
// mutable tier has applied (UINT32_MAX: a mutable tier of an older format,
// which the publish itself erased from).
inline uint32_t MutableApplied(const uih_mutable* m) { return m->applied.load(std::memory_order_acquire); }
// Applies generation `generation` of its shard to a store's mutable tier,
// in one synced write: every event of `erased` deleted (in every group of
// its schema), the watermark advanced to `through` (never back), and
// uih.applied set. With `retention`, compactions drop what is below the
// new watermark from now on; without, the caller tells the filter later
// (SetRetention), once no read that split at the old one is under way.
int ApplyToMutable(uih_mutable* m, const std::vector<uint64_t>& erased, int64_t through, uint32_t generation,
                   bool retention, uih_error* err);
// The retention filter's watermark (never back).
void SetRetention(uih_mutable* m, int64_t watermark);
// Gives the mutable tier a write-through cache of `bytes` (0: none; a
// store made before chunks has none either).
void EnableCache(uih_mutable* m, size_t bytes);

// A store's mutable tier, mutable-%04u/, opened with the settings `o`
// (its schema set later, with SetMutableSchema).
int OpenStoreMutable(const std::string& path, const uih_mutable_opts& o, uih_mutable** out, uih_error* err);
// A store's new mutable tier, mutable-%04u/: created with its chunk span
// (uih.applied 0, no watermark), nothing else in it.
int CreateStoreMutable(const std::string& path, int64_t span, uih_error* err);

// uih_mutable_read, for every event (newest UINT32_MAX) or the newest ones,
// the chunks decoded into `scratch`'s batches.
int ReadEvents(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts, uint32_t newest,
               uih_batch** batch, Gather* scratch, uih_error* err);

}  // namespace uih
