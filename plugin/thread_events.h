// One uih_events workspace per thread and per user, so that RocksDB's
// threads merge and filter without allocating per call. Distinct users
// (tags) never share one: a merge can run inside an append's Merge() on
// the same thread (max_successive_merges), while the append's operand
// still lives in the append's workspace.
#pragma once

#include "uih/events.h"

namespace uih {

enum class Workspace { kMergeOperator, kRetention, kStore };

template <Workspace W>
uih_events* ThreadEvents() {
  struct Holder {
    uih_events* ev = nullptr;
    Holder() { uih_events_create(&ev, nullptr); }
    ~Holder() { uih_events_free(ev); }
  };
  thread_local Holder holder;
  return holder.ev;  // NULL only when out of memory
}

}  // namespace uih
