// Inference snapshots (uih_snapshot, uih/store.h), model-based: a store
// loaded with a day and a mutable tier holding the next (with late events
// below the watermark, which a snapshot must not see); for random users and
// request times, every group's sequence is the newest max_length events of
// the model's immutable part followed by its mutable part, and the logged
// record names exactly that: the window, the generation, identity checksums
// computed here from the model, and the mutable events themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plugin/store_fixture.h"
#include "uih/key.h"
#include "uih/snapshot.h"
#include "uih/store.h"
#include "uih/stripe.h"

namespace {

using uih_test::kBase;
using uih_test::kDay;
using uih_test::StoreTest;
using uih_test::WriteFile;

struct Ev {
  int64_t ts;
  uint64_t item;
  int liked;  // -1 absent (group a only)
  bool operator==(const Ev& o) const { return ts == o.ts && item == o.item && liked == o.liked; }
};
std::ostream& operator<<(std::ostream& os, const Ev& e) { return os << "{" << e.ts << "," << e.item << "," << e.liked << "}"; }

std::vector<Ev> Events(const uih_batch* b, uint32_t from = 0, uint32_t to = UINT32_MAX) {
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
std::vector<uint32_t> Checks(const uih_schema* schema, uint16_t group, const std::vector<Ev>& evs) {
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
  uint32_t n = uih_snapshot_identity_columns(b, cols, 8);
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

TEST_F(StoreTest, SnapshotsAreTheNewestEventsOfBothTiersAndTheirRecordNamesThem) {
  std::mt19937_64 rng(17);
  constexpr uint64_t kUsers = 60;
  const int64_t through = kBase + kDay;
  // Day 0 into the immutable tier; unique timestamps per user and group.
  std::map<std::pair<uint64_t, uint16_t>, std::vector<Ev>> imm, mut;
  std::set<std::tuple<uint64_t, uint16_t, int64_t>> used;
  auto fresh = [&](uint64_t u, uint16_t g, int64_t lo, int64_t span) {
    for (;;) {
      int64_t ts = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
      if (used.insert({u, g, ts}).second) return ts;
    }
  };
  std::string text = "user_id,group,ts,item,liked\n";
  for (int i = 0; i < 3000; i++) {
    uint64_t u = rng() % kUsers;
    uint16_t g = rng() % 3 ? 1 : 2;
    Ev e{fresh(u, g, kBase, kDay), rng() % 1000, g == 1 && rng() % 2 ? static_cast<int>(rng() % 2) : -1};
    imm[{u, g}].push_back(e);
    text += std::to_string(u) + (g == 1 ? ",a," : ",b,") + std::to_string(e.ts) + "," + std::to_string(e.item) + "," +
            (e.liked >= 0 ? std::to_string(e.liked) : "") + "\n";
  }
  std::string day0 = dir_ / "day0.csv";
  WriteFile(day0, text);
  uih_store* s = Init("store", 2);
  uih_error err{};
  ASSERT_EQ(Load(s, {day0}, through, 0, &err), UIH_OK) << uih_error_message(&err);
  for (auto& [k, v] : imm) std::sort(v.begin(), v.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });

  // Day 1 into the mutable tier, with late events (ts before the watermark).
  const uih_schema* schema = uih_store_schema(s);
  for (int i = 0; i < 1500; i++) {
    uint64_t u = rng() % kUsers;
    uint16_t g = rng() % 3 ? 1 : 2;
    bool late = rng() % 10 == 0;
    Ev e{late ? fresh(u, g, kBase, kDay) : fresh(u, g, through, kDay), rng() % 1000, g == 1 ? 1 : -1};
    if (!late) mut[{u, g}].push_back(e);
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(schema, g), 1, nullptr, 0, &b, &err), UIH_OK);
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(e.ts));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, e.item);
    if (e.liked >= 0) uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], row, static_cast<uint64_t>(e.liked));
    ASSERT_EQ(uih_mutable_append(uih_store_mutable(s, uih_shard_of(u, 2)), u, b, 0, &err), UIH_OK)
        << uih_error_message(&err);
    uih_batch_free(b);
  }
  for (auto& [k, v] : mut) std::sort(v.begin(), v.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });

  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  int checked = 0, both = 0, mutable_only = 0;
  for (int i = 0; i < 600; i++) {
    uint64_t u = rng() % kUsers;
    int64_t request = through + static_cast<int64_t>(rng() % (kDay + kDay / 4)) - kDay / 8;
    uih_snapshot_spec spec{};
    spec.ngroups = rng() % 2 ? 2 : 1;
    // Group b first sometimes: sequences come in the spec's order, the record by id.
    spec.groups[0] = {static_cast<uint16_t>(rng() % 2 ? 1 : 2), 1 + static_cast<uint32_t>(rng() % 40)};
    spec.groups[1] = {static_cast<uint16_t>(spec.groups[0].group == 1 ? 2 : 1), 1 + static_cast<uint32_t>(rng() % 9)};
    const uih_batch* const* seqs = nullptr;
    const uint8_t* rec = nullptr;
    size_t rec_len = 0;
    ASSERT_EQ(uih_snapshot(sn, u, request, &spec, &seqs, &rec, &rec_len, &err), UIH_OK) << uih_error_message(&err);
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(rec, rec_len, &r, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(r.user_id, u);
    EXPECT_EQ(r.request_ts, request);
    ASSERT_EQ(r.ngroups, spec.ngroups);
    for (uint32_t k = 0; k < spec.ngroups; k++) {
      const uint16_t g = spec.groups[k].group;
      const uint32_t max = spec.groups[k].max_length;
      SCOPED_TRACE("user " + std::to_string(u) + " group " + std::to_string(g) + " at " + std::to_string(request));
      // The model: immutable events before the watermark and the request,
      // mutable ones from the watermark to the request; the newest max.
      std::vector<Ev> im, mu;
      for (const Ev& e : imm[{u, g}])
        if (e.ts <= request && e.ts < through) im.push_back(e);
      for (const Ev& e : mut[{u, g}])
        if (e.ts <= request) mu.push_back(e);
      if (mu.size() > max) mu.erase(mu.begin(), mu.end() - max);
      size_t room = max - mu.size();
      if (im.size() > room) im.erase(im.begin(), im.end() - static_cast<std::ptrdiff_t>(room));
      std::vector<Ev> want = im;
      want.insert(want.end(), mu.begin(), mu.end());
      ASSERT_EQ(Events(seqs[k]), want);
      // The record's group (listed by id).
      const uih_snapshot_group* rg = nullptr;
      for (uint32_t j = 0; j < r.ngroups; j++)
        if (r.groups[j].group == g) rg = &r.groups[j];
      ASSERT_NE(rg, nullptr);
      ASSERT_EQ(rg->length, im.size());
      if (!im.empty()) {
        EXPECT_EQ(rg->generation, 1u);
        EXPECT_EQ(rg->start_ts, im.front().ts);
        EXPECT_EQ(rg->end_ts, im.back().ts);
        std::vector<uint32_t> checks = Checks(schema, g, im);
        EXPECT_EQ(std::vector<uint32_t>(rg->check, rg->check + checks.size()), checks);
        both += !mu.empty();
      } else {
        mutable_only += !mu.empty();
      }
      // The mutable events, from the record alone.
      std::vector<Ev> logged;
      size_t at = 0, len;
      const uint8_t* stripe;
      uih_stripe_decoder* dec = nullptr;
      ASSERT_EQ(uih_stripe_decoder_create(&dec, &err), UIH_OK);
      while (uih_snapshot_mutable_next(rg, &at, &stripe, &len) == 1) {
        uih_batch* b = nullptr;
        ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(schema, g), UIH_STRIPE_EVENTS_MAX, nullptr, 0, &b, &err), UIH_OK);
        ASSERT_EQ(uih_stripe_decode(dec, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, b, &err), UIH_OK);
        std::vector<Ev> part = Events(b);
        logged.insert(logged.end(), part.begin(), part.end());
        uih_batch_free(b);
      }
      uih_stripe_decoder_free(dec);
      EXPECT_EQ(logged, mu);
      checked++;
    }
  }
  EXPECT_GT(checked, 700);
  EXPECT_GT(both, 50) << "sequences from both tiers";
  EXPECT_GT(mutable_only, 5) << "sequences from the mutable tier alone";
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

// Bad specs are refused with what was wrong; the snapshotter stays usable.
TEST_F(StoreTest, SnapshotSpecsAreChecked) {
  uih_store* s = Init("store", 1);
  uih_snapshotter* sn = nullptr;
  uih_error err{};
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  struct Case {
    uih_snapshot_spec spec;
    const char* message;
  } cases[] = {
      {{0, {}}, "0 groups"},
      {{1, {{9, 5}}}, "no group with id 9"},
      {{1, {{1, 0}}}, "max_length 0"},
      {{1, {{1, UIH_STRIPE_EVENTS_MAX + 1}}}, "max_length 65537"},
      {{2, {{1, 5}, {1, 6}}}, "asked for twice"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(uih_snapshot(sn, 1, kBase, &c.spec, &seqs, &rec, &len, &err), UIH_OK) << c.message;
    EXPECT_NE(std::string(uih_error_message(&err)).find(c.message), std::string::npos) << uih_error_message(&err);
  }
  uih_snapshot_spec ok{1, {{2, 5}}};
  ASSERT_EQ(uih_snapshot(sn, 1, kBase, &ok, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(seqs[0]->count, 0u) << "an empty store: no events, a record all the same";
  uih_snapshot_record r;
  ASSERT_EQ(uih_snapshot_record_decode(rec, len, &r, &err), UIH_OK);
  EXPECT_EQ(r.groups[0].length, 0u);
  EXPECT_EQ(r.groups[0].mutable_len, 0u);
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

}  // namespace
