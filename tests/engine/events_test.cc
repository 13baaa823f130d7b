// Event lists against a model: a list is the set of its distinct events in
// time order. Encoding, merging in any grouping (the merge operator's
// partial merges), limits, retention, decoding ranges and projections, and
// corruption (every bit flip, every truncation, quarantine).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "batch_model.h"
#include "engine/stripe_gen.h"
#include "uih/events.h"
#include "uih/key.h"

namespace {

using Bytes = std::vector<uint8_t>;
using uih_test::BatchPtr;
using uih_test::Event;
using uih_test::SchemaPtr;

class Events : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(UIH_OK, uih_events_create(&ev_, nullptr));
    std::string json = uih_test::RandomSchemaJson(rng_, 7);
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_schema_parse(json.data(), json.size(), "t", &schema_.s, &err)) << err.msg;
    g_ = uih_schema_group_at(schema_.s, 0);
    for (uint32_t i = 0; i < g_->ntraits; i++) all_ids_.push_back(g_->traits[i].id);
  }
  void TearDown() override { uih_events_free(ev_); }

  // A batch of `n` random events over a random subset of the traits (the
  // timestamp always), as a writer on another schema version would make.
  void RandomBatch(uint32_t n, BatchPtr* out, bool all_traits = false) {
    std::vector<uint16_t> ids{g_->ts->id};
    for (uint16_t id : all_ids_)
      if (id != g_->ts->id && (all_traits || rng_() % 3)) ids.push_back(id);
    ASSERT_EQ(UIH_OK, uih_batch_create(g_, n, ids.data(), (uint32_t)ids.size(), &out->b, nullptr));
    uih_test::FillRandomBatch(rng_, out->b, n);
  }
  Bytes Encode(const uih_batch* b) {
    const uint8_t* p;
    size_t n;
    uih_error err{};
    EXPECT_EQ(UIH_OK, uih_events_encode(ev_, b, &p, &n, &err)) << err.msg;
    return Bytes(p, p + n);
  }
  Bytes Merge(const std::vector<Bytes>& in, const uih_events_limits* lim = nullptr) {
    std::vector<uih_slice> s;
    for (const Bytes& b : in) s.push_back({b.data(), b.size()});
    const uint8_t* p;
    size_t n;
    uih_error err{};
    EXPECT_EQ(UIH_OK, uih_events_merge(ev_, g_->id, s.data(), s.size(), lim, &p, &n, &err))
        << err.msg;
    return Bytes(p, p + n);
  }
  // Merges in a random binary tree of partial merges, each shuffled.
  Bytes TreeMerge(std::vector<Bytes> in, const uih_events_limits* lim) {
    while (in.size() > 1) {
      std::shuffle(in.begin(), in.end(), rng_);
      size_t k = 2 + rng_() % std::min<size_t>(3, in.size() - 1);
      std::vector<Bytes> part(in.end() - (long)k, in.end());
      in.resize(in.size() - k);
      in.push_back(Merge(part, lim));
    }
    return in[0];
  }
  // Every event of a list, all traits of the group asked for.
  std::vector<Event> Decode(const Bytes& list, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
    uih_events_info info{};
    uih_error err{};
    EXPECT_EQ(UIH_OK, uih_events_read_info(list.data(), list.size(), &info, &err)) << err.msg;
    BatchPtr b;
    EXPECT_EQ(UIH_OK, uih_batch_create(g_, std::max<uint32_t>(1, std::min(info.count, 65536u)),
                                       all_ids_.data(), (uint32_t)all_ids_.size(), &b.b, nullptr));
    EXPECT_EQ(UIH_OK, uih_events_decode(list.data(), list.size(), lo, hi, b.b, &err)) << err.msg;
    return uih_test::EventsOf(b.b);
  }
  static std::set<Event> AsSet(const std::vector<Event>& v) { return {v.begin(), v.end()}; }
  static bool TimeOrdered(const std::vector<Event>& v) {
    for (size_t i = 1; i < v.size(); i++)
      if (v[i - 1].first > v[i].first) return false;
    return true;
  }

  std::mt19937_64 rng_{7};
  uih_events* ev_ = nullptr;
  SchemaPtr schema_;
  const uih_group* g_ = nullptr;
  std::vector<uint16_t> all_ids_;
};

TEST_F(Events, EncodeIsCanonicalAndRoundTrips) {
  for (int iter = 0; iter < 200; iter++) {
    SCOPED_TRACE(iter);
    BatchPtr b;
    RandomBatch(1 + rng_() % 300, &b);
    // Duplicate some events: a retried append inside one operand.
    std::vector<Event> model = uih_test::EventsOf(b.b);
    Bytes list = Encode(b.b);
    std::vector<Event> got = Decode(list);
    EXPECT_EQ(AsSet(model), AsSet(got));
    EXPECT_EQ(AsSet(model).size(), got.size()) << "duplicates kept";
    EXPECT_TRUE(TimeOrdered(got));
    // Encoding is deterministic and a fixed point: decode then encode again.
    EXPECT_EQ(list, Encode(b.b));
    BatchPtr again;
    ASSERT_EQ(UIH_OK, uih_batch_create(g_, std::max<uint32_t>(1, (uint32_t)got.size()),
                                       all_ids_.data(), (uint32_t)all_ids_.size(), &again.b,
                                       nullptr));
    ASSERT_EQ(UIH_OK, uih_events_decode(list.data(), list.size(), INT64_MIN, INT64_MAX, again.b,
                                        nullptr));
    EXPECT_EQ(AsSet(got), AsSet(uih_test::EventsOf(again.b)));
  }
}

TEST_F(Events, DuplicatesWithinABatchCollapse) {
  BatchPtr b;
  RandomBatch(50, &b, true);
  BatchPtr twice;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 100, nullptr, 0, &twice.b, nullptr));
  for (int k = 0; k < 2; k++)
    for (uint32_t r = 0; r < 50; r++) ASSERT_EQ(UIH_OK, uih_batch_copy_row(twice.b, b.b, r, nullptr));
  EXPECT_EQ(Encode(b.b), Encode(twice.b));
}

// A range copy is the row copies it stands for, into batches of other
// trait selections too; one that does not fit copies nothing.
TEST_F(Events, CopyingRowsAtOnceEqualsCopyingThemOneByOne) {
  for (int iter = 0; iter < 100; iter++) {
    SCOPED_TRACE(iter);
    BatchPtr src;
    RandomBatch(1 + rng_() % 200, &src);
    std::vector<uint16_t> ids;
    for (uint16_t id : all_ids_)
      if (rng_() % 3) ids.push_back(id);
    if (ids.empty()) ids.push_back(all_ids_[0]);
    const uint32_t from = static_cast<uint32_t>(rng_() % (src.b->count + 1));
    const uint32_t to = from + static_cast<uint32_t>(rng_() % (src.b->count - from + 1));
    BatchPtr one, many;
    const uint32_t pre = static_cast<uint32_t>(rng_() % 100);  // the copy lands at any bit of a presence word
    ASSERT_EQ(UIH_OK, uih_batch_create(g_, 300, ids.data(), (uint32_t)ids.size(), &one.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g_, 300, ids.data(), (uint32_t)ids.size(), &many.b, nullptr));
    for (uint32_t r = 0; r < pre && r < src.b->count; r++) {
      ASSERT_EQ(UIH_OK, uih_batch_copy_row(one.b, src.b, r, nullptr));
      ASSERT_EQ(UIH_OK, uih_batch_copy_row(many.b, src.b, r, nullptr));
    }
    for (uint32_t r = from; r < to; r++) ASSERT_EQ(UIH_OK, uih_batch_copy_row(one.b, src.b, r, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_copy_rows(many.b, src.b, from, to, nullptr));
    ASSERT_EQ(one.b->count, many.b->count);
    for (uint32_t c = 0; c < one.b->ncolumns; c++) {
      const size_t w = uih_type_width(one.b->columns[c].trait->type);
      EXPECT_EQ(0, memcmp(one.b->columns[c].values, many.b->columns[c].values, 300 * w)) << "column " << c;
      EXPECT_EQ(0, memcmp(one.b->columns[c].present, many.b->columns[c].present, (300 + 63) / 64 * 8)) << "column " << c;
    }
  }
  BatchPtr src, small;
  RandomBatch(10, &src);
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 4, nullptr, 0, &small.b, nullptr));
  uih_error err{};
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_batch_copy_rows(small.b, src.b, 0, 5, &err));
  EXPECT_EQ(0u, small.b->count);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_batch_copy_rows(small.b, src.b, 3, 11, &err));
}

TEST_F(Events, MergeIsAUnionInAnyGroupingAndOrder) {
  for (int iter = 0; iter < 60; iter++) {
    SCOPED_TRACE(iter);
    // A pool of events; operands are random samples of it (with repeats),
    // each written on a random trait subset.
    std::vector<Bytes> ops;
    std::set<Event> model;
    int nops = 1 + (int)(rng_() % 12);
    for (int k = 0; k < nops; k++) {
      BatchPtr b;
      RandomBatch(1 + rng_() % 40, &b);
      for (const Event& e : uih_test::EventsOf(b.b)) model.insert(e);
      ops.push_back(Encode(b.b));
      if (rng_() % 4 == 0) ops.push_back(ops[rng_() % ops.size()]);  // a retry
    }
    Bytes flat = Merge(ops);
    EXPECT_EQ(flat, TreeMerge(ops, nullptr));
    std::reverse(ops.begin(), ops.end());
    EXPECT_EQ(flat, Merge(ops));
    std::vector<Event> got = Decode(flat);
    EXPECT_EQ(model, AsSet(got));
    EXPECT_EQ(model.size(), got.size());
    EXPECT_TRUE(TimeOrdered(got));
    // Merging a value with itself changes nothing.
    EXPECT_EQ(flat, Merge({flat, flat}));
  }
}

TEST_F(Events, LimitsKeepTheNewestAndCommuteWithPartialMerges) {
  for (int iter = 0; iter < 60; iter++) {
    SCOPED_TRACE(iter);
    std::vector<Bytes> ops;
    for (int k = 0, n = 2 + (int)(rng_() % 8); k < n; k++) {
      BatchPtr b;
      RandomBatch(1 + rng_() % 60, &b);
      ops.push_back(Encode(b.b));
    }
    std::vector<Event> all = Decode(Merge(ops));
    uih_events_limits lim{};
    if (rng_() % 2) lim.max_events = 1 + (uint32_t)(rng_() % (all.size() + 5));
    uint64_t span = (uint64_t)all.back().first - (uint64_t)all.front().first;
    if (rng_() % 2 && span > 0 && span < (uint64_t)INT64_MAX / 2)
      lim.max_age = 1 + (int64_t)(rng_() % span);
    // Expected: the newest events in canonical order.
    std::vector<Event> want = all;
    if (lim.max_age) {
      int64_t cut = all.back().first - lim.max_age;
      want.erase(want.begin(), std::find_if(want.begin(), want.end(),
                                            [&](const Event& e) { return e.first >= cut; }));
    }
    if (lim.max_events && want.size() > lim.max_events)
      want.erase(want.begin(), want.end() - lim.max_events);
    Bytes direct = Merge(ops, &lim);
    EXPECT_EQ(want, Decode(direct));
    EXPECT_EQ(direct, TreeMerge(ops, &lim)) << "max_events " << lim.max_events << " max_age "
                                             << lim.max_age;
  }
}

TEST_F(Events, RetentionKeepsExactlyTheEventsAtOrAboveTheWatermark) {
  for (int iter = 0; iter < 100; iter++) {
    SCOPED_TRACE(iter);
    BatchPtr b;
    RandomBatch(1 + rng_() % 100, &b);
    Bytes list = Encode(b.b);
    std::vector<Event> all = Decode(list);
    int64_t wm = all[rng_() % all.size()].first + (int64_t)(rng_() % 3) - 1;
    if (rng_() % 8 == 0) wm = INT64_MIN;
    if (rng_() % 8 == 0) wm = INT64_MAX;
    std::vector<Event> want;
    for (const Event& e : all)
      if (e.first >= wm) want.push_back(e);
    const uint8_t* p;
    size_t n;
    uih_retain_action a = uih_events_retain(ev_, list.data(), list.size(), wm, &p, &n);
    if (want.empty()) {
      EXPECT_EQ(UIH_RETAIN_REMOVE, a);
    } else if (want.size() == all.size()) {
      EXPECT_EQ(UIH_RETAIN_KEEP, a);
    } else {
      ASSERT_EQ(UIH_RETAIN_CHANGE, a);
      EXPECT_EQ(want, Decode(Bytes(p, p + n)));
    }
  }
}

TEST_F(Events, DecodeRangesAndProjections) {
  BatchPtr b;
  RandomBatch(200, &b, true);
  Bytes list = Encode(b.b);
  std::vector<Event> all = Decode(list);
  for (int iter = 0; iter < 100; iter++) {
    int64_t lo = all[rng_() % all.size()].first, hi = all[rng_() % all.size()].first;
    if (lo > hi) std::swap(lo, hi);
    std::vector<Event> want;
    for (const Event& e : all)
      if (e.first >= lo && e.first <= hi) want.push_back(e);
    EXPECT_EQ(want, Decode(list, lo, hi));
  }
  // A projection to the timestamp and one trait.
  uint16_t other = all_ids_[0] == g_->ts->id ? all_ids_[1] : all_ids_[0];
  uint16_t ids[] = {g_->ts->id, other};
  BatchPtr p;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 200, ids, 2, &p.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_events_decode(list.data(), list.size(), INT64_MIN, INT64_MAX, p.b, nullptr));
  std::vector<Event> got = uih_test::EventsOf(p.b);
  ASSERT_EQ(all.size(), got.size());
  for (size_t i = 0; i < all.size(); i++) {
    std::vector<std::pair<uint16_t, uint64_t>> want;
    for (auto& kv : all[i].second)
      if (kv.first == other) want.push_back(kv);
    EXPECT_EQ(all[i].first, got[i].first);
    EXPECT_EQ(want, got[i].second);
  }
  // Too small a batch is an error, not a truncation; the batch is untouched.
  BatchPtr small;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, (uint32_t)all.size() - 1, nullptr, 0, &small.b, nullptr));
  uih_error err{};
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE,
            uih_events_decode(list.data(), list.size(), INT64_MIN, INT64_MAX, small.b, &err));
  EXPECT_EQ(0u, small.b->count);
  EXPECT_NE(nullptr, strstr(err.msg, "the batch holds")) << err.msg;
}

// The newest N of a range are the range's last N, whatever traits each
// event has (rows of every width), and a batch of N holds them.
TEST_F(Events, DecodingTheNewestIsTheTailOfTheRange) {
  BatchPtr b;
  RandomBatch(300, &b);
  Bytes list = Encode(b.b);
  std::vector<Event> all = Decode(list);
  for (int iter = 0; iter < 200; iter++) {
    int64_t lo = all[rng_() % all.size()].first, hi = all[rng_() % all.size()].first;
    if (lo > hi) std::swap(lo, hi);
    if (iter % 10 == 0) lo = INT64_MIN;
    std::vector<Event> range;
    for (const Event& e : all)
      if (e.first >= lo && e.first <= hi) range.push_back(e);
    const uint32_t newest = static_cast<uint32_t>(rng_() % (range.size() + 3));
    std::vector<Event> want(range.end() - std::min<std::ptrdiff_t>(newest, static_cast<std::ptrdiff_t>(range.size())),
                            range.end());
    BatchPtr out;
    ASSERT_EQ(UIH_OK, uih_batch_create(g_, std::max<uint32_t>(1, std::min<uint32_t>(newest, 300)), all_ids_.data(),
                                       (uint32_t)all_ids_.size(), &out.b, nullptr));
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_events_decode_newest(list.data(), list.size(), lo, hi, newest, out.b, &err)) << err.msg;
    EXPECT_EQ(want, uih_test::EventsOf(out.b)) << "[" << lo << ", " << hi << "] newest " << newest;
  }
}

// A list merged alone is itself, byte for byte, when the limits leave it
// whole, and what the row-by-row merge gives when they cut it (that merge
// is run here with an empty list beside it, which changes nothing).
TEST_F(Events, AListMergedAloneIsItselfOrItsLimitedMerge) {
  BatchPtr none;  // no events, and no column but the timestamp: the union's columns are the list's
  const uint16_t ts = g_->ts->id;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 1, &ts, 1, &none.b, nullptr));
  const Bytes empty = Encode(none.b);
  for (int iter = 0; iter < 100; iter++) {
    BatchPtr b;
    RandomBatch(1 + static_cast<uint32_t>(rng_() % 200), &b);
    const Bytes list = Encode(b.b);
    const std::vector<Event> all = Decode(list);
    uih_events_limits lim{};
    if (iter % 3 == 1) lim.max_events = 1 + static_cast<uint32_t>(rng_() % (all.size() + 5));
    if (iter % 3 == 2) lim.max_age = 1 + static_cast<int64_t>(rng_() % 1000000000);
    const Bytes alone = Merge({list}, &lim), slow = Merge({list, empty}, &lim);
    EXPECT_EQ(alone, slow) << iter;
    if (iter % 3 == 0) {
      EXPECT_EQ(alone, list) << iter;
    }
  }
}

TEST_F(Events, MismatchedTypesAndGroupsAreErrors) {
  // A list whose trait 1000 is an id, merged with one where it is a flag.
  const char* a_json =
      R"({"name":"s","version":1,"groups":[{"name":"g","id":3,"traits":[
        {"name":"ts","id":1,"type":"timestamp"},{"name":"x","id":1000,"type":"id"}]}]})";
  const char* b_json =
      R"({"name":"s","version":1,"groups":[{"name":"g","id":3,"traits":[
        {"name":"ts","id":1,"type":"timestamp"},{"name":"x","id":1000,"type":"flag"}]}]})";
  SchemaPtr sa, sb;
  ASSERT_EQ(UIH_OK, uih_schema_parse(a_json, strlen(a_json), "a", &sa.s, nullptr));
  ASSERT_EQ(UIH_OK, uih_schema_parse(b_json, strlen(b_json), "b", &sb.s, nullptr));
  BatchPtr ba, bb;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(sa.s, 0), 4, nullptr, 0, &ba.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(sb.s, 0), 4, nullptr, 0, &bb.b, nullptr));
  uint32_t row;
  for (uih_batch* b : {ba.b, bb.b}) {
    ASSERT_EQ(UIH_OK, uih_batch_append(b, &row, nullptr));
    uih_column_set_bits(&b->columns[0], row, 5);
    uih_column_set_bits(&b->columns[1], row, 1);
  }
  Bytes la = Encode(ba.b), lb = Encode(bb.b);
  uih_slice in[] = {{la.data(), la.size()}, {lb.data(), lb.size()}};
  const uint8_t* p;
  size_t n;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_events_merge(ev_, 3, in, 2, nullptr, &p, &n, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "input 1: trait 1000 has type 7")) << err.msg;
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_events_merge(ev_, 4, in, 1, nullptr, &p, &n, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "input 0: offset 2: feature group 3, expected 4")) << err.msg;
  // Decoding asks each trait with its stored type.
  EXPECT_EQ(UIH_ERR_TYPE_MISMATCH,
            uih_events_decode(lb.data(), lb.size(), INT64_MIN, INT64_MAX, ba.b, &err));
  // An event without its timestamp cannot be encoded.
  BatchPtr c;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(sa.s, 0), 4, nullptr, 0, &c.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_append(c.b, &row, nullptr));
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_events_encode(ev_, c.b, &p, &n, &err));
}

TEST_F(Events, EveryBitFlipAndTruncationIsDetected) {
  BatchPtr b;
  RandomBatch(6, &b, true);
  Bytes list = Encode(b.b);
  uih_events_info info{};
  for (size_t i = 0; i < list.size() * 8; i++) {
    Bytes bad = list;
    bad[i / 8] ^= (uint8_t)(1u << (i % 8));
    int rc = uih_events_read_info(bad.data(), bad.size(), &info, nullptr);
    EXPECT_TRUE(rc == UIH_ERR_CORRUPTION || rc == UIH_ERR_NOT_SUPPORTED) << "bit " << i;
  }
  for (size_t len = 0; len < list.size(); len++)
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_events_read_info(list.data(), len, &info, nullptr)) << len;
}

TEST_F(Events, MalformedInputsAreQuarantinedWithNothingLost) {
  uint8_t key[UIH_KEY_GROUP_PREFIX_SIZE];
  uih_key_group_prefix(42, g_->id, key);
  BatchPtr b1, b2, b3;
  RandomBatch(5, &b1);
  RandomBatch(5, &b2);
  RandomBatch(5, &b3);
  Bytes existing = Encode(b1.b), good = Encode(b2.b), later = Encode(b3.b);
  Bytes bad = good;
  bad[bad.size() / 2] ^= 0x10;
  uih_slice ex{existing.data(), existing.size()};
  uih_slice ops[] = {{good.data(), good.size()}, {bad.data(), bad.size()}};
  const uint8_t* p;
  size_t n;
  int q = 0;
  uih_error why{};
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, key, sizeof key, &ex, ops, 2, nullptr, &p, &n, &q,
                                           &why));
  ASSERT_EQ(1, q);
  EXPECT_NE(nullptr, strstr(why.msg, "user 42 group 3: operand 1: event list: offset")) << why.msg;
  Bytes quarantined(p, p + n);
  uih_events_info info{};
  ASSERT_EQ(UIH_OK, uih_events_read_info(quarantined.data(), quarantined.size(), &info, nullptr));
  EXPECT_TRUE(info.quarantined);
  EXPECT_EQ(3u, info.count);
  // Reading it reports the corruption and its reason.
  BatchPtr out;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 64, nullptr, 0, &out.b, nullptr));
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_events_decode(quarantined.data(), quarantined.size(),
                                                  INT64_MIN, INT64_MAX, out.b, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "quarantined: user 42 group 3: operand 1")) << err.msg;
  // A later append joins the quarantine flat; every input is kept byte for byte.
  uih_slice ex2{quarantined.data(), quarantined.size()};
  uih_slice op3{later.data(), later.size()};
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, key, sizeof key, &ex2, &op3, 1, nullptr, &p, &n, &q,
                                           &why));
  ASSERT_EQ(1, q);
  Bytes q2(p, p + n);
  ASSERT_EQ(UIH_OK, uih_events_read_info(q2.data(), q2.size(), &info, nullptr));
  ASSERT_EQ(4u, info.count);
  std::vector<Bytes> want{existing, good, bad, later};
  char reason[512];
  for (uint32_t i = 0; i < 4; i++) {
    uih_slice s{};
    ASSERT_EQ(UIH_OK, uih_events_quarantined(q2.data(), q2.size(), i, &s, reason, sizeof reason,
                                             nullptr));
    EXPECT_EQ(want[i], Bytes(s.data, s.data + s.len)) << i;
  }
  EXPECT_NE(nullptr, strstr(reason, "existing value: is quarantined")) << reason;
  // Without a bad input the same call merges.
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, key, sizeof key, &ex, ops, 1, nullptr, &p, &n, &q,
                                           &why));
  EXPECT_EQ(0, q);
  EXPECT_EQ(Merge({existing, good}), Bytes(p, p + n));
  // An operand of another group under this key is malformed too.
  uint8_t other[UIH_KEY_GROUP_PREFIX_SIZE];
  uih_key_group_prefix(42, (uint16_t)(g_->id + 1), other);
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, other, sizeof other, nullptr, ops, 1, nullptr, &p,
                                           &n, &q, &why));
  EXPECT_EQ(1, q);
  // A chunk's 18-byte key merges the same, its group and user named alike.
  uint8_t chunk[UIH_KEY_SIZE];
  uih_key ck{42, g_->id, -3600};
  uih_key_encode(&ck, chunk);
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, chunk, sizeof chunk, &ex, ops, 1, nullptr, &p, &n, &q, &why));
  EXPECT_EQ(0, q);
  EXPECT_EQ(Merge({existing, good}), Bytes(p, p + n));
  ASSERT_EQ(UIH_OK, uih_events_merge_value(ev_, chunk, sizeof chunk, &ex, ops, 2, nullptr, &p, &n, &q, &why));
  EXPECT_EQ(1, q);
  EXPECT_NE(nullptr, strstr(why.msg, "user 42 group 3: operand 1")) << why.msg;
  // A key that is not a mutable key is an error, not a quarantine.
  for (size_t len : {(size_t)0, (size_t)9, (size_t)11, (size_t)17, (size_t)19})
    EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT,
              uih_events_merge_value(ev_, chunk, len, nullptr, ops, 1, nullptr, &p, &n, &q, &why)) << len;
  // Retention never drops what it cannot read.
  EXPECT_EQ(UIH_RETAIN_KEEP,
            uih_events_retain(ev_, q2.data(), q2.size(), INT64_MAX, &p, &n));
  EXPECT_EQ(UIH_RETAIN_KEEP, uih_events_retain(ev_, bad.data(), bad.size(), INT64_MAX, &p, &n));
}

}  // namespace
