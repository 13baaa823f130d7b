// One batch of records rebuilt (uih_materialize): rebuild.cc screens the
// records and plans the batch's reads, rebuild_read.cc reads, verifies and
// picks each record's events; output.cc lays them out.
//
// Records are served user by user (data affinity): per user and group one
// job, whose newest stripes — as many as the records need if they are full
// — are read with every other job's at once (one io_uring submission), the
// rest through the store's window reader; the stripes are decoded newest
// first, each into its own batch, only as far as the records need; each
// record's immutable part verified at its checkpoint with the engine's
// identity chain, and kept as runs of rows of those batches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "output.h"
#include "uih/io.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih_plugin/c_api.h"
#include "uih_store/view.h"
#include "uih_store/window.h"

namespace uih::mat {

// Records that are not served: they did not decode, are another store's, or
// their user was erased since.
constexpr uint8_t kNotServed = UIH_RECORD_UNREADABLE | UIH_RECORD_OTHER_STORE | UIH_RECORD_ERASED;

// Per record of a user's group: its group in the record, and the
// immutable events it needs.
struct Need {
  size_t rec;
  const uih_snapshot_group* rg;
  uint32_t want, check;                                // events output from the part; events verified (a checkpoint)
  std::vector<std::pair<uint32_t, uint32_t>> found;  // its rows, newest first: (decoded stripe, row)
  // Its identity chain over `found`, extended as each stripe is decoded
  // (while its rows are in cache): the job's chain of its schema version
  // (-1: none, the version is unknown), h(found.size()), and whether its
  // rows are so far the previous need's (then so is h, copied).
  int chain = -1;
  uint64_t h = 0;
  bool same = false;
};

// One user's group in a batch, from its plan to its decode: what its
// records need, where their stripes lie, and the first (newest) run of
// them, read together with every other job's of the batch.
struct Job {
  uint32_t gi = 0;
  const std::string* shard = nullptr;  // its folder, for messages
  std::shared_ptr<Generation> gen;
  const GenerationFiles* files = nullptr;
  uint64_t user = 0;
  std::vector<Need> needs;
  std::vector<GenerationFiles::Extent> plan;
  size_t begin = 0;  // plan[begin, end) is the first run
  GenerationFiles::StripeSet first;
  size_t req = 0;  // its requests' first, when batched
  bool batched = false;
  std::string damaged;  // why its stripes cannot be read (a corruption): its records are flagged
};

// Decoded stripes' batches (immutable and mutable) kept on a thread
// between jobs and calls (cleared, their capacity kept: uih_batch_prepare
// reuses a batch of the same group and columns), so that a long rebuild
// does not fault its batches in afresh on every call — at 2^20 events,
// ~4,096 batches and ~40 MB. A call takes as many as it gives back, so
// the pool holds what the largest call decoded, and at most kSpareBatches
// batches of kSpareBytes (capacity x columns x 8 bytes) in all. Batches
// point into their store's schemas: the pool holds one store's (by its
// serial, view.h) and frees them, unread, when a call of another comes.
class BatchPool {
 public:
  static constexpr uint64_t kSpareBytes = uint64_t{64} << 20;
  static constexpr size_t kSpareBatches = 8192;
  // This thread's pool, for a call on the store of serial `store`.
  static BatchPool& ThisThread(uint64_t store);
  std::unique_ptr<BatchPtr> Take();
  void Give(std::unique_ptr<BatchPtr> b) noexcept;  // out of memory: b freed

 private:
  static uint64_t Bytes(const uih_batch* b) { return uint64_t{b->capacity} * std::max<uint32_t>(b->ncolumns, 1) * 8; }
  std::vector<std::unique_ptr<BatchPtr>> spare_;
  uint64_t bytes_ = 0;  // the spare batches' Bytes
  uint64_t store_ = 0;  // whose schemas they point into
};

class Rebuild {
 public:
  Rebuild(uih_store* s, const uih_projection* p, bool affinity, bool batch_io, uih_materialize_stats* st)
      : s_(s), p_(p), affinity_(affinity), batch_io_(batch_io), st_(st), pool_(BatchPool::ThisThread(StoreSerial(s))) {}
  int Run(const uint8_t* const* records, const size_t* lens, size_t n, uih_materialized* out, uih_error* err);

 private:
  // rebuild.cc: the projection, the records, the plan.
  int CheckProjection(uih_error* err);
  int CheckGroup(uint32_t i, const uih_group* g, uih_error* err);
  int DecodeRecords(const uint8_t* const* records, const size_t* lens, size_t n, uih_error* err);
  int FlagOtherStores(uih_error* err);
  void FlagErased();
  int PlanUsers(uih_error* err);
  int PlanUser(const std::vector<size_t>& idx, uih_error* err);
  int PlanGroup(const std::vector<size_t>& idx, uint32_t gi, const ShardView& v, uih_error* err);
  int DecodeMutable(size_t rec, uint32_t gi, const uih_snapshot_group& rg, uih_error* err);
  void Mismatch(size_t rec, uint32_t gi, const char* why);
  void Why(size_t rec, const char* group, const char* why);
  void NoteFailure(size_t rec, const char* group, const char* why);
  // rebuild_read.cc: reading, verifying, picking.
  int ReadFirstRuns(uih_error* err);
  int ServeJob(Job& job, uih_error* err);
  static bool Damaged(Job& job, int rc, const uih_error* err);
  void FlagDamaged(const Job& job);
  int Collect(Job& job, std::vector<std::unique_ptr<BatchPtr>>* decoded, uih_error* err);
  void StartChains(Job& job, const uih_batch* like);
  void ExtendChains(Job& job, const std::vector<std::unique_ptr<BatchPtr>>& decoded);
  bool Verify(const Job& job, const Need& nd, const std::vector<std::unique_ptr<BatchPtr>>& decoded, uih_error* err,
              int* rc);
  void PickPart(uint32_t gi, const Need& nd, const std::vector<std::unique_ptr<BatchPtr>>& decoded);
  const uih_trait* DroppedIdTrait(const uih_group* vg, uint32_t gi) const;

  uih_store* s_;
  const uih_projection* p_;
  bool affinity_;  // records of a user served together
  bool batch_io_;  // the first runs of every job read as one batch (io_uring), not one by one
  uih_materialize_stats* st_;
  BatchPool& pool_;  // this thread's, for this store: where decoded stripes' batches come from and go back
  uih_stripe_decoder* dec_ = nullptr;  // the records' mutable stripes
  const uih_schema* schema_ = nullptr;
  std::vector<const uih_group*> groups_;      // per projected group, the store's schema
  std::vector<std::vector<uint16_t>> reads_;  // per projected group: traits a window holds
  std::vector<uih_snapshot_record> recs_;
  std::vector<uint8_t> flags_;
  std::vector<std::string> why_;  // per record: why it is flagged ("" when it is not)
  size_t first_bad_ = SIZE_MAX;  // under UIH_MISMATCH_FAIL: the first record that failed, and why
  std::string bad_message_;
  std::vector<std::vector<Pick>> picks_;     // [record][group]
  std::vector<std::vector<size_t>> served_;  // records served together (a user's, with affinity)
  std::vector<Job> jobs_;                    // the batch's reads, planned before any is made
  std::vector<uih_io_req> reqs_;
  WindowReader reader_;
  std::vector<uint64_t> arrival_;  // a decoded stripe's arrival generations
  // The job's identity chains: one per schema version of its records (the
  // columns each reads), their n and h set per record when it is verified.
  std::vector<uih_snapshot_chain> chains_;
  std::vector<const uih_group*> chain_groups_;
  std::vector<size_t> before_;  // per need: its rows before the stripe being collected
  std::vector<uint64_t> step_h_, next_h_;  // a need's chain after each of its rows from the last stripe
  OutputWriter writer_;
  std::vector<std::unique_ptr<BatchPtr>> keep_;  // decoded stripes the picks point into

 public:
  ~Rebuild() {
    for (auto& b : keep_) pool_.Give(std::move(b));
    uih_stripe_decoder_free(dec_);
  }
};

}  // namespace uih::mat
