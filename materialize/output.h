// The materializer's output (uih/materialize.h's results): where each
// record's sequence comes from — runs of rows of decoded stripes, kept
// while the batch is read and decoded (rebuild_read.cc) — and the writer
// that lays them out in the projection's layout, one array per trait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "uih/materialize.h"

namespace uih::mat {

// Rows [from, to) of a decoded stripe.
struct Seg {
  const uih_batch* b;
  uint32_t from, to;
};

// Where one record's sequence in one group comes from, oldest first: runs
// of rows of decoded stripes (its immutable part), then of its mutable
// stripes. Nothing is copied until the output is written.
struct Pick {
  std::vector<Seg> segs;
  uint32_t events = 0;
  uint32_t mutable_events = 0;  // the newest of them are the record's mutable part
  void Add(const uih_batch* b, uint32_t row) {  // rows come in ascending order
    if (!segs.empty() && segs.back().b == b && segs.back().to == row) segs.back().to++;
    else segs.push_back({b, row, row + 1});
    events++;
  }
};

// Output bytes, allocated unset (the writer sets every one): large ones
// (a long sequence's traits, tens of MB) in transparent huge pages, so
// the first write faults once per 2 MB, not once per 4 KB.
class OutBytes {
 public:
  void Reset(size_t n);  // throws std::bad_alloc, as a vector would (the C API's firewall reports it)
  uint8_t* data() const { return p_.get(); }
  uint8_t& operator[](size_t i) const { return p_.get()[i]; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { free(p); }
  };
  std::unique_ptr<uint8_t, Free> p_;
};

// One projected trait of one group, for the whole batch.
struct OutColumn {
  uint16_t trait = 0;
  uih_type type = UIH_TYPE_INT64;
  size_t width = 8;
  OutBytes values, present;
};

struct OutGroup {
  std::vector<OutColumn> cols;
  std::vector<uih_mat_column> views;
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> lengths;
  uih_mat_group view{};
};

// Lays a batch's picks out: shared (a user's records as windows into rows
// written once) or jagged, then copies the runs column by column. Keeps its
// scratch between users (and batches, when reused).
class OutputWriter {
 public:
  // `served`: the records served together (a user's), each list in
  // order; a record flagged a mismatch under skip comes out empty.
  void Write(const uih_projection* p, const std::vector<const uih_group*>& groups, const std::vector<uint8_t>& flags,
             const std::vector<std::vector<Pick>>& picks, const std::vector<std::vector<size_t>>& served,
             uih_materialize_stats* st, uih_materialized* out);

 private:
  // A row of a decoded batch.
  struct Src {
    const uih_batch* b;
    uint32_t row;
  };
  void Share(const std::vector<size_t>& idx, uint32_t gi, const std::vector<OutColumn>& cols, OutGroup* og,
             std::vector<Seg>* runs, uint64_t* rows);

  const uih_projection* p_ = nullptr;
  const std::vector<const uih_group*>* groups_ = nullptr;
  const std::vector<std::vector<Pick>>* picks_ = nullptr;
  std::vector<size_t> order_;
  std::vector<int> cols_;
  std::vector<Src> region_;
  std::vector<int64_t> region_ts_;
};

}  // namespace uih::mat

struct uih_materialized {
  size_t n = 0;
  std::vector<uih::mat::OutGroup> groups;
  std::vector<uint8_t> flags;
  std::vector<std::string> why;  // per record: why it is flagged, or ""
};
