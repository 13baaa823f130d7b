// What the snapshot and serving tests share: events as the tests see them,
// the identity checksums of a record computed from a model, a store with a
// day loaded and the next in its mutable tier (World), and logged records
// handed to uih_materialize and read back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "store/store_fixture.h"
#include "uih/key.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"

namespace uih_test::model {

struct Ev {
  int64_t ts;
  uint64_t item;
  int liked;  // -1 absent (group a only)
  bool operator==(const Ev& o) const { return ts == o.ts && item == o.item && liked == o.liked; }
};
inline std::ostream& operator<<(std::ostream& os, const Ev& e) { return os << "{" << e.ts << "," << e.item << "," << e.liked << "}"; }

inline std::vector<Ev> Events(const uih_batch* b, uint32_t from = 0, uint32_t to = UINT32_MAX) {
  std::vector<Ev> out;
  int ts = uih_batch_column_index(b, 1), item = uih_batch_column_index(b, 2), liked = uih_batch_column_index(b, 3);
  for (uint32_t r = from; r < std::min(to, b->count); r++)
    out.push_back({static_cast<int64_t>(uih_column_get_bits(&b->columns[ts], r)),
                   uih_column_get_bits(&b->columns[item], r),
                   liked >= 0 && uih_column_has(&b->columns[liked], r)
                       ? static_cast<int>(uih_column_get_bits(&b->columns[liked], r))
                       : -1});
  return out;
}

// The identity chain of `evs` (newest first) at the record's checkpoints,
// computed from a batch built here.
inline std::vector<uint32_t> Checks(const uih_schema* schema, uint16_t group, const std::vector<Ev>& evs) {
  const uih_group* g = uih_schema_group_by_id(schema, group);
  uih_batch* b = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_batch_create(g, static_cast<uint32_t>(std::max<size_t>(evs.size(), 1)), nullptr, 0, &b, &err), UIH_OK);
  for (const Ev& e : evs) {
    uint32_t row;
    EXPECT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(e.ts));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, e.item);
    if (e.liked >= 0) uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], row, static_cast<uint64_t>(e.liked));
  }
  int cols[8];
  uint32_t n = uih_snapshot_identity_columns(nullptr, b, cols, 8);
  uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
  uint32_t ncp = uih_snapshot_checkpoints(static_cast<uint32_t>(evs.size()), cp);
  std::vector<uint32_t> out(ncp);
  uint64_t h = 0;
  for (uint32_t k = 1; k <= evs.size(); k++) {
    h = uih_snapshot_identity_next(h, b, cols, n, static_cast<uint32_t>(evs.size() - k));
    for (uint32_t c = 0; c < ncp; c++)
      if (cp[c] == k) out[c] = static_cast<uint32_t>(h);
  }
  uih_batch_free(b);
  return out;
}

// A store with day 0 loaded and day 1 in the mutable tier (with late
// events below the watermark, which snapshots must not see), and the model
// of both; day1_csv holds day 1 as loader input, for the next load.
struct World {
  std::mt19937_64 rng{17};
  static constexpr uint64_t kUsers = 60;
  const int64_t through = kBase + kDay;
  std::map<std::pair<uint64_t, uint16_t>, std::vector<Ev>> imm, mut, late;
  std::set<std::tuple<uint64_t, uint16_t, int64_t>> used;
  std::string day1_csv = "user_id,group,ts,item,liked\n";

  int64_t Fresh(uint64_t u, uint16_t g, int64_t lo, int64_t span) {
    for (;;) {
      int64_t ts = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
      if (used.insert({u, g, ts}).second) return ts;
    }
  }
  static std::string Line(uint64_t u, uint16_t g, const Ev& e) {
    return std::to_string(u) + (g == 1 ? ",a," : ",b,") + std::to_string(e.ts) + "," + std::to_string(e.item) + "," +
           (e.liked >= 0 ? std::to_string(e.liked) : "") + "\n";
  }
  void Build(uih_store* s, const std::string& dir) {
    std::string text = "user_id,group,ts,item,liked\n";
    for (int i = 0; i < 3000; i++) {
      uint64_t u = rng() % kUsers;
      uint16_t g = rng() % 3 ? 1 : 2;
      Ev e{Fresh(u, g, kBase, kDay), rng() % 1000, g == 1 && rng() % 2 ? static_cast<int>(rng() % 2) : -1};
      imm[{u, g}].push_back(e);
      text += Line(u, g, e);
    }
    std::string day0 = dir + "/day0.csv";
    WriteFile(day0, text);
    std::vector<const char*> in = {day0.c_str()};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    uih_error err{};
    ASSERT_EQ(uih_load(s, in.data(), 1, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
    for (auto& [k, v] : imm) std::sort(v.begin(), v.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
    const uih_schema* schema = uih_store_schema(s);
    for (int i = 0; i < 1500; i++) {
      uint64_t u = rng() % kUsers;
      uint16_t g = rng() % 3 ? 1 : 2;
      bool is_late = rng() % 10 == 0;
      Ev e{is_late ? Fresh(u, g, kBase, kDay) : Fresh(u, g, through, kDay), rng() % 1000, g == 1 ? 1 : -1};
      (is_late ? late : mut)[{u, g}].push_back(e);
      day1_csv += Line(u, g, e);
      uih_batch* b = nullptr;
      ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(schema, g), 1, nullptr, 0, &b, &err), UIH_OK);
      uint32_t row;
      ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
      uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(e.ts));
      uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, e.item);
      if (e.liked >= 0) uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], row, static_cast<uint64_t>(e.liked));
      ASSERT_EQ(uih_mutable_append(uih_test::MutableOf(s, uih_shard_of(u, uih_store_shards(s))), u, b, 0, &err), UIH_OK)
          << uih_error_message(&err);
      uih_batch_free(b);
    }
    for (auto& [k, v] : mut) std::sort(v.begin(), v.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  }
};

// Logged records as the pointer and length arrays uih_materialize takes.
struct RecordPtrs {
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  explicit RecordPtrs(const std::vector<std::string>& records) {
    for (const std::string& r : records) {
      ptrs.push_back(reinterpret_cast<const uint8_t*>(r.data()));
      lens.push_back(r.size());
    }
  }
};

// One snapshot of `user` at `request` for `spec`: its record appended to
// `records`, and what each of the spec's first two groups got to `a`, `b`.
inline void SnapshotInto(uih_snapshotter* sn, uint64_t user, int64_t request, const uih_snapshot_spec& spec,
                         std::vector<std::string>* records, std::vector<std::vector<Ev>>* a,
                         std::vector<std::vector<Ev>>* b) {
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  uih_error err{};
  ASSERT_EQ(uih_snapshot(sn, user, request, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
  records->emplace_back(reinterpret_cast<const char*>(rec), len);
  a->push_back(Events(seqs[0]));
  if (b) b->push_back(Events(seqs[1]));
}

// The record of one snapshot ("" and a test failure when it fails).
inline std::string RecordOf(uih_snapshotter* sn, uint64_t user, int64_t request, const uih_snapshot_spec& spec) {
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  uih_error err{};
  if (uih_snapshot(sn, user, request, &spec, &seqs, &rec, &len, &err) != UIH_OK) {
    ADD_FAILURE() << uih_error_message(&err);
    return "";
  }
  return std::string(reinterpret_cast<const char*>(rec), len);
}

// A group of a materialized batch as per-record event lists.
inline std::vector<std::vector<Ev>> Sequences(const uih_materialized* m, uint32_t gi) {
  const uih_mat_group* g = uih_materialized_group(m, gi);
  std::vector<std::vector<Ev>> out(uih_materialized_records(m));
  auto col = [&](uint16_t trait) -> const uih_mat_column* {
    for (uint32_t c = 0; c < g->ncolumns; c++)
      if (g->columns[c].trait == trait) return &g->columns[c];
    return nullptr;
  };
  const uih_mat_column *ts = col(1), *item = col(2), *liked = col(3);
  for (size_t i = 0; i < out.size(); i++)
    for (uint64_t r = g->offsets[i]; r < g->offsets[i] + g->lengths[i]; r++) {
      Ev e{static_cast<const int64_t*>(ts->values)[r], static_cast<const uint64_t*>(item->values)[r], -1};
      if (liked && liked->present[r]) e.liked = static_cast<const uint8_t*>(liked->values)[r];
      out[i].push_back(e);
    }
  return out;
}

}  // namespace uih_test::model
