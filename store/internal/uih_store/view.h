// What the materializer (snapshots and rebuilds) reads of a store, and
// nothing else of it: a user's shard as of now — its current generation,
// held for the read, and where the two tiers split — its mutable tier's
// newest events, the store's schema versions and the erasures its loads
// published. A generation's stripes are read through window.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "uih/generation.h"
#include "uih/store.h"
#include "uih/stripe.h"
#include "uih_plugin/generation_files.h"

namespace uih {

struct Database;

// One live generation of a shard. Readers hold it (a shared_ptr) while they
// read, so a retired generation's files stay until the last of them lets
// go. Safe to share between threads.
class Generation {
 public:
  // `db`: the shard's database as this process opened it, held as long as
  // the generation is.
  Generation(const uih_generation& record, std::shared_ptr<Database> db) : record_(record), db_(std::move(db)) {}
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;
  ~Generation();

  const uih_generation& record() const { return record_; }
  uint32_t number() const { return record_.generation; }
  // The value dictionaries its stripes' shared columns may name (null:
  // none), what a decoder of its stripes is given; valid while it is held.
  const uih_stripe_context* dicts() const { return dicts_; }
  // Its files for direct reads, opened by the first read that needs them (a
  // failed open is retried by the next); valid while it is held. An error
  // names the generation and `shard` (its folder).
  int Files(const std::string& shard, const GenerationFiles** out, uih_error* err);

  // ---- the store's side ----
  rocksdb::DB* db() const;
  rocksdb::ColumnFamilyHandle* cf() const { return cf_; }
  // Its files as layers, oldest first (GenerationLayers): one when a load
  // wrote it whole.
  std::vector<GenerationLayer> Layers() const;
  void set_cf(rocksdb::ColumnFamilyHandle* cf) { cf_ = cf; }
  // Parses `bytes` (a uih.dicts/<g> value; empty: none) into its
  // dictionaries; an error names the generation.
  int SetDicts(const std::string& bytes, uih_error* err);
  // Called once, when the last holder lets go (a serving store's pin).
  void on_release(std::function<void()> f) { on_release_ = std::move(f); }

 private:
  const uih_generation record_;
  const std::shared_ptr<Database> db_;
  std::function<void()> on_release_;
  rocksdb::ColumnFamilyHandle* cf_ = nullptr;  // destroyed with it
  uih_stripe_context* dicts_ = nullptr;
  std::mutex files_mu_;
  std::unique_ptr<GenerationFiles> files_;
};

// Where a read of both tiers of a shard splits: events below `at` come from
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
  if (gen && (!s.has || gen->record().through > s.at)) s = {true, gen->record().through};
  return s;
}

// A user's shard at one moment.
struct ShardView {
  uint32_t shard = 0;
  const std::string* path = nullptr;  // its folder, for messages; valid until the store closes
  uih_mutable* mut = nullptr;         // its mutable tier
  std::shared_ptr<Generation> gen;    // its current generation, held (null: none yet)
  Split split;                        // with_split only
  bool mutable_erased = false;        // with_split only: the user's mutable events are not to be
                                      // read (an erasure of `gen` its mutable tier has not applied)
};
// The shard of `user` as it is now. With `with_split`, the watermark is
// read first, then the generation, and their split set (see Split); without,
// the current generation alone. Fails, naming the shard, when the store was
// opened for another one.
int ViewUser(uih_store* s, uint64_t user, bool with_split, ShardView* out, uih_error* err);

// uih_mutable_read of only the newest `newest` events in [min_ts, max_ts]
// (the older ones are not decoded): what a snapshot of max_length needs.
// `scratch` (window.h) keeps the chunks' batches from call to call: one per
// caller, used by one thread at a time, freed before the store closes.
// Not behind the exception firewall: for callers already behind it.
class Gather;
int ReadMutableNewest(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                      uint32_t newest, uih_batch** batch, Gather* scratch, uih_error* err);

// This open of the store's number in the process, never another open's:
// what outlives the store (a thread's spare batches, which point into its
// schemas) tells by it whether what it holds is this store's.
uint64_t StoreSerial(const uih_store* s);

// Schema version `version` of the store (kept until close): parsed from the
// first shard that holds it. UIH_ERR_NOT_FOUND when none does.
int SchemaAt(uih_store* s, uint32_t version, const uih_schema** out, uih_error* err);

// A user's erasure: the generation whose load erased them and that load's
// through.
struct Erasure {
  uint32_t generation = 0;
  int64_t through = 0;
};
// Whether `user` was erased from their shard after a snapshot record of
// theirs was logged at generation `generation` (exact: the generation the
// record names, 0 when the shard had none) or, for records before version
// 3, at `generation` when a group names one, else at `request_ts` (before
// the erasing load's through: before the erasure); *by says by which
// erasure. A store opened for other shards knows nothing of the user.
bool ErasedSince(uih_store* s, uint64_t user, uint32_t generation, bool exact, int64_t request_ts, Erasure* by);

}  // namespace uih
