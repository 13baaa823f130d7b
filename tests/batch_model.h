// Batches as a model test sees them: owning handles for schemas and batches,
// and a batch's events as plain values to compare with == and put in sets.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "uih/batch.h"
#include "uih/schema.h"

namespace uih_test {

struct SchemaPtr {
  uih_schema* s = nullptr;
  SchemaPtr() = default;
  SchemaPtr(const SchemaPtr&) = delete;
  SchemaPtr& operator=(const SchemaPtr&) = delete;
  ~SchemaPtr() { uih_schema_free(s); }
};

struct BatchPtr {
  uih_batch* b = nullptr;
  BatchPtr() = default;
  BatchPtr(const BatchPtr&) = delete;
  BatchPtr& operator=(const BatchPtr&) = delete;
  BatchPtr(BatchPtr&& o) noexcept : b(o.b) { o.b = nullptr; }
  ~BatchPtr() { uih_batch_free(b); }
};

// An event: its timestamp, then (trait id, value bits) of its present
// traits in the batch's column order.
using Event = std::pair<int64_t, std::vector<std::pair<uint16_t, uint64_t>>>;

inline std::vector<Event> EventsOf(const uih_batch* b) {
  std::vector<Event> out;
  int ts = uih_batch_column_index(b, b->group->ts->id);
  for (uint32_t r = 0; r < b->count; r++) {
    Event e{ts >= 0 ? (int64_t)uih_column_get_bits(&b->columns[ts], r) : 0, {}};
    for (uint32_t c = 0; c < b->ncolumns; c++)
      if ((int)c != ts && uih_column_has(&b->columns[c], r))
        e.second.push_back({b->columns[c].trait->id, uih_column_get_bits(&b->columns[c], r)});
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace uih_test
