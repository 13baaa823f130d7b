// What a publish brings to the serving side (format.h, "Who writes which
// file"): the .published hint a loader leaves, a serving store's follower
// that polls it and serves the new generation, and the mutable tier's
// catching up with a generation (its erasures and through).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "uih/error.h"

struct uih_store;

namespace uih {

class Generation;
struct Shard;

// A serving store's thread: every `interval_ms` it reads each shard's
// .published hint and, when it names a generation other than the one
// served, refreshes the shard (Refresh). Stopped and joined by its
// destructor.
class Follower {
 public:
  Follower(uih_store* s, uint32_t interval_ms);
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;
  ~Follower();

 private:
  void Run();

  uih_store* const s_;
  const uint32_t interval_ms_;
  std::mutex mu_;  // stop_
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Serves the shard's current generation as its database says now, when
// the hint names another than the one served (or, with `force`, whatever
// the hint says): the database
// opened read-only again inside the pins' gate, what it holds pinned, a
// newer schema version taken, the shard's generations, erasures and
// database swapped under its lock (a read under way keeps what it held),
// then the mutable tier brought up to the new one (ApplyPublished), its
// retention filter following once no reader holds the generation served
// before. On an error the shard serves what it served; the error is kept
// for uih_store_following, and the next call tries again.
int Refresh(uih_store* s, Shard* sh, bool force, uih_error* err);

// After a switch in a store that owns both sides (role all: a publish of
// its own), the mutable tier brought up to the new generation, its
// retention filter following once no reader holds `old`.
int ApplySwitch(Shard* sh, std::weak_ptr<Generation> old, uih_error* err);

// The shard's hint in the store at `dir`: none, damaged (not one, or
// unreadable), or found, naming *generation; *bytes (may be null) read.
enum class HintState { kNone, kDamaged, kFound };
HintState ReadHint(const std::string& dir, uint32_t shard, uint32_t* generation, uint64_t* bytes);
// The shard's hint: the generation it names, or 0 (none, or not one).
uint32_t ReadPublished(const uih_store* s, uint32_t shard);

}  // namespace uih
