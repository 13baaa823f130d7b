// What the materializer object (materializer.cc) calls of the rebuild (rebuild.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "uih/materialize.h"

namespace uih {

// uih_materialize, with data affinity switchable (off: each record read
// and decoded on its own) and batched reads (off: each user's first read on
// its own). Thread-safe: it keeps nothing between calls but this thread's
// reader for batches of reads and its spare decoded batches (BatchPool,
// rebuild.h).
int Materialize(uih_store* s, const uint8_t* const* records, const size_t* lens, size_t n,
                const uih_projection* projection, bool affinity, bool batch_io, uih_materialized** out,
                uih_materialize_stats* stats, uih_error* err);

}  // namespace uih
