// Generations held by read-only stores, in any process (uih/store.h).
//
// A read-only open sees the generations its shards had when it opened and
// reads their files for as long as it is open; a load in the writer may
// meanwhile publish newer ones and retire these. So each read-only store
// pins what it holds, and Retire skips what is pinned — with byte-range
// locks (Linux open file description locks) on the store's descriptor
// file, which exists in every store, can be locked through a read-only
// descriptor, and is unlocked by the kernel when the holder closes it or
// dies: nothing is written, nothing is left behind by a killed reader.
//
//   byte 0                              the gate: a reader opening holds it
//                                       shared, a writer retiring holds it
//                                       exclusive, so a reader either pins
//                                       what it opened before the writer
//                                       looks, or opens after the writer
//                                       retired (and never sees it)
//   byte 1 + shard * 2^32 + generation  pinned: a reader holds it shared
//
// A writer tests a pin by asking whether an exclusive lock of its byte
// would conflict (F_OFD_GETLK). A serving store pins the generations it
// serves and lets each go when the last of its readers does; one store
// may pin a generation twice (two openings of its shard), so a byte is
// unlocked when its last pin goes.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "uih/error.h"

namespace uih {

class Pins {
 public:
  Pins() = default;
  Pins(const Pins&) = delete;
  Pins& operator=(const Pins&) = delete;
  ~Pins();

  // Opens `descriptor` (a read-only store: for reading; a writer: for
  // reading and writing, which an exclusive lock needs).
  int Open(const std::string& descriptor, bool writer, uih_error* err);
  // Waits for the gate: shared (a reader opening, or a serving store's
  // threads reopening shards: counted, so that the lock is held until the
  // last of them leaves) or exclusive (a writer retiring).
  int Enter(bool exclusive, uih_error* err);
  void Leave();
  // This store holds the generation (a reader), until it closes or lets
  // go as many times as it pinned it.
  int Pin(uint32_t shard, uint32_t generation, uih_error* err);
  void Unpin(uint32_t shard, uint32_t generation);
  // Whether another store, in this process or another, holds it.
  int Pinned(uint32_t shard, uint32_t generation, bool* pinned, uih_error* err) const;

 private:
  int fd_ = -1;
  std::string path_;
  std::mutex mu_;  // held_, gate_
  std::map<uint64_t, uint32_t> held_;  // (shard << 32 | generation) -> pins
  uint32_t gate_ = 0;     // this store's threads inside the gate
  bool exclusive_ = false;  // and how
};

// The gate held for a scope.
class PinGate {
 public:
  PinGate(Pins* p, bool exclusive, uih_error* err) : p_(p) { rc_ = p_->Enter(exclusive, err); }
  ~PinGate() {
    if (rc_ == 0) p_->Leave();
  }
  int rc() const { return rc_; }

 private:
  Pins* p_;
  int rc_;
};

}  // namespace uih
