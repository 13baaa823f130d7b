// Reading a user's newest events, the one way inference's snapshots,
// training's rebuilds and the store's own reads do it, so that they read the
// same events:
//
//   WindowReader  a user's stripes of one group in a generation, newest
//                 first: the plan (where they lie, from the indexes alone)
//                 read back from its end in runs — each as many stripes as
//                 the events still wanted would fill were they full, and at
//                 least twice the run before, so a short window reads only
//                 the tail of a long history and a long one few runs —
//                 and decoded one stripe at a time, its checksum verified;
//   Gather        events collected newest first, a decoded batch at a time
//                 (stripes of a generation, chunks of the mutable tier),
//                 and handed out oldest first.
//
// Neither is safe to share between threads; each keeps its buffers from
// call to call, so that once grown a read allocates nothing of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uih/batch.h"
#include "uih/stripe.h"
#include "uih_plugin/generation_files.h"
#include "uih_store/view.h"

namespace uih {

class WindowReader {
 public:
  using Extent = GenerationFiles::Extent;
  using StripeSet = GenerationFiles::StripeSet;

  WindowReader() = default;
  WindowReader(const WindowReader&) = delete;
  WindowReader& operator=(const WindowReader&) = delete;
  ~WindowReader();

  // Starts a walk back over plan[0, n) (key order, e.g. a Plan of `files`,
  // which stays valid meanwhile) of `user`'s stripes of group `g` in the
  // generation `gen` of the shard at `shard` (for messages), from its end.
  // Its newest run may be read already: plan[first_begin, n) into *first
  // (null: none), e.g. with a batch of other walks' reads.
  void Start(const std::string* shard, const Generation* gen, const GenerationFiles* files, uint64_t user,
             const uih_group* g, const Extent* plan, size_t n, const StripeSet* first = nullptr,
             size_t first_begin = 0);

  // The next older stripe of the walk, decoded into *out (made a batch of
  // the group with the columns `ids`, NULL: every active trait, by
  // uih_batch_prepare), reading the next run when the last one is used up,
  // sized by the `missing` events the caller still wants. *more 0, *out
  // untouched, when the walk has reached the plan's start. An error names
  // the shard, the generation and the stripe.
  int Next(uint32_t missing, const uint16_t* ids, uint32_t nids, uih_batch** out, bool* more, uih_error* err);

  // Since creation: runs read (not counting those given to Start), bytes of
  // the runs decoded from, stripes decoded.
  uint64_t reads() const { return reads_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t stripes() const { return stripes_; }

 private:
  uih_stripe_decoder* dec_ = nullptr;
  const std::string* shard_ = nullptr;
  const Generation* gen_ = nullptr;
  const GenerationFiles* files_ = nullptr;
  uint64_t user_ = 0;
  const uih_group* group_ = nullptr;
  const Extent* plan_ = nullptr;
  size_t end_ = 0;  // plan[0, end_) is not read yet
  size_t run_ = 0;  // the last run's stripes
  const StripeSet* first_ = nullptr;
  size_t first_begin_ = 0;
  const StripeSet* set_ = nullptr;  // the run being decoded
  size_t left_ = 0;                 // its stripes not decoded yet: the oldest ones
  StripeSet read_;
  uint64_t reads_ = 0, bytes_ = 0, stripes_ = 0;
};

// Whether `b`'s timestamps are in time order, as the loader writes a
// stripe's (checked: decoded bytes are untrusted).
bool InTimeOrder(const uih_batch* b);
// The rows [*first, *last) of `b` (in time order) with from <= ts <= to,
// by bisection.
void RowsWithin(const uih_batch* b, int64_t from, int64_t to, uint32_t* first, uint32_t* last);

class Gather {
 public:
  Gather() = default;
  Gather(const Gather&) = delete;
  Gather& operator=(const Gather&) = delete;
  ~Gather();

  void Clear() { used_ = 0, count_ = 0; }
  // Where to decode the next older events: the slot of a batch kept from an
  // earlier call (or NULL), for the caller to prepare, fill, grow or
  // replace (uih_batch_prepare, a WindowReader's Next...). Valid until the
  // next Next or Clear.
  uih_batch** Next();
  // Rows [from, to) of the batch in the slot Next gave last are gathered:
  // in time order, and older than none gathered before.
  void Take(uint32_t from, uint32_t to);
  uint32_t count() const { return count_; }
  // The newest `n` events gathered (all, when fewer), oldest first,
  // appended to `out` (of the same group; UIH_ERR_OUT_OF_RANGE, nothing
  // appended, when they do not fit).
  int AppendNewest(uint32_t n, uih_batch* out, uih_error* err) const;

 private:
  struct Part {
    uih_batch* b = nullptr;
    uint32_t from = 0, to = 0;
  };
  std::vector<Part> parts_;  // newest first; [0, used_) in use
  size_t used_ = 0;
  uint32_t count_ = 0;
};

}  // namespace uih
