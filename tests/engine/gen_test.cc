// The UIH generator: deterministic, per-user independent, well-formed, and
// shaped as documented in uih/gen.h (checked with tolerances on a sample).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "uih/gen.h"

namespace {

struct Fixture {
  uih_schema* schema = nullptr;
  const uih_group* group = nullptr;
  Fixture() {
    uih_error err{};
    EXPECT_EQ(UIH_OK, uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &schema, &err)) << err.msg;
    group = uih_schema_group_by_name(schema, "engagement");
  }
  ~Fixture() { uih_schema_free(schema); }
};

struct Event {
  uint64_t user;
  std::vector<uint64_t> bits;
  bool operator==(const Event& o) const { return user == o.user && bits == o.bits; }
};

// Every event of a run, with batches of `capacity`.
std::vector<Event> Generate(const uih_group* g, uih_gen_opts o, uint32_t capacity) {
  uih_gen* gen = nullptr;
  uih_batch* b = nullptr;
  EXPECT_EQ(UIH_OK, uih_gen_create(g, &o, &gen, nullptr));
  EXPECT_EQ(UIH_OK, uih_batch_create(g, capacity, nullptr, 0, &b, nullptr));
  std::vector<Event> out;
  for (;;) {
    uint64_t user = 0;
    EXPECT_EQ(UIH_OK, uih_gen_next(gen, &user, b, nullptr));
    if (b->count == 0) break;
    EXPECT_LE(b->count, capacity);
    for (uint32_t r = 0; r < b->count; r++) {
      Event e{user, {}};
      for (uint32_t c = 0; c < b->ncolumns; c++) {
        EXPECT_TRUE(uih_column_has(&b->columns[c], r));
        e.bits.push_back(uih_column_get_bits(&b->columns[c], r));
      }
      out.push_back(e);
    }
  }
  uih_batch_free(b);
  uih_gen_free(gen);
  return out;
}

TEST(Gen, SameSeedSameHistoriesWhateverTheBatchSize) {
  Fixture f;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 200;
  auto a = Generate(f.group, o, 256);
  EXPECT_EQ(a, Generate(f.group, o, 7));
  o.seed = 2;
  EXPECT_NE(a, Generate(f.group, o, 256));
}

TEST(Gen, UsersAreIndependentOfEachOther) {
  Fixture f;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 30;
  auto few = Generate(f.group, o, 256);
  o.users = 60;
  auto more = Generate(f.group, o, 256);
  ASSERT_LT(few.size(), more.size());
  EXPECT_TRUE(std::equal(few.begin(), few.end(), more.begin()));
}

TEST(Gen, HistoriesAreWellFormed) {
  Fixture f;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 300;
  o.first_user_id = 1000;
  uih_gen* gen = nullptr;
  ASSERT_EQ(UIH_OK, uih_gen_create(f.group, &o, &gen, nullptr));
  uint64_t expected = 0;
  for (uint64_t i = 0; i < o.users; i++) expected += uih_gen_user_events(gen, i);
  auto ev = Generate(f.group, o, 64);
  EXPECT_EQ(expected, ev.size());
  // Timestamps (column 0: the event time has the lowest id) never go back
  // within a user, across batch boundaries too; users come in id order.
  for (size_t i = 1; i < ev.size(); i++) {
    ASSERT_LE(ev[i - 1].user, ev[i].user);
    if (ev[i].user == ev[i - 1].user) {
      ASSERT_LE(static_cast<int64_t>(ev[i - 1].bits[0]), static_cast<int64_t>(ev[i].bits[0]));
    }
  }
  EXPECT_EQ(1000u, ev.front().user);
  EXPECT_GE(static_cast<int64_t>(ev.front().bits[0]), o.start_ts);
  // Values fit their types: categories within the vocabulary, flags 0/1.
  const uih_trait* et = uih_group_trait_by_name(f.group, "event_type");
  for (const auto& e : ev) {
    ASSERT_LT(e.bits[2], et->ncategories);
    ASSERT_LE(e.bits[4], 1u);
  }
  uih_gen_free(gen);
}

TEST(Gen, ShapesMatchTheDocumentedDistributions) {
  Fixture f;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 5000;
  auto ev = Generate(f.group, o, 256);
  const double n = static_cast<double>(ev.size());
  // Columns: 0 ts, 1 item_id, 2 event_type, 3 watch_ms, 4 liked, 5 commented,
  // 6 shared, 7 item_category.
  std::map<uint64_t, size_t> per_user, items, types;
  double liked = 0, commented = 0, shared = 0;
  std::vector<uint64_t> watch;
  for (const auto& e : ev) {
    per_user[e.user]++;
    items[e.bits[1]]++;
    types[e.bits[2]]++;
    liked += static_cast<double>(e.bits[4]);
    commented += static_cast<double>(e.bits[5]);
    shared += static_cast<double>(e.bits[6]);
    watch.push_back(e.bits[3]);
  }
  EXPECT_NEAR(0.04, liked / n, 0.005);
  EXPECT_NEAR(0.006, commented / n, 0.002);
  EXPECT_NEAR(0.003, shared / n, 0.0015);
  EXPECT_NEAR(0.67, static_cast<double>(types[0]) / n, 0.03) << "impressions dominate";
  std::nth_element(watch.begin(), watch.begin() + static_cast<long>(watch.size() / 2), watch.end());
  EXPECT_NEAR(8000.0, static_cast<double>(watch[watch.size() / 2]), 500.0);

  // Activity: most users short, a heavy tail holding much of the volume.
  std::vector<size_t> counts;
  for (const auto& [u, c] : per_user) counts.push_back(c);
  std::sort(counts.begin(), counts.end());
  EXPECT_LE(counts[counts.size() / 2], 30u);
  size_t top = std::accumulate(counts.end() - static_cast<long>(counts.size() / 100), counts.end(), size_t{0});
  EXPECT_GT(static_cast<double>(top) / n, 0.25);
  EXPECT_GT(counts.back(), 5000u);

  // Item popularity is skewed but spread over a large catalog.
  size_t top_item = 0;
  for (const auto& [id, c] : items) top_item = std::max(top_item, c);
  EXPECT_GT(static_cast<double>(top_item) / n, 0.01);
  EXPECT_LT(static_cast<double>(top_item) / n, 0.05);
  EXPECT_GT(static_cast<double>(items.size()), n / 5);
}

TEST(Gen, RejectsBadOptionsAndBatches) {
  Fixture f;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.activity_alpha = 0;
  uih_gen* gen = nullptr;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_gen_create(f.group, &o, &gen, &err));
  EXPECT_EQ(nullptr, gen);
  ASSERT_EQ(UIH_OK, uih_gen_create(f.group, nullptr, &gen, &err));
  const uint16_t ids[] = {1, 2};
  uih_batch* partial = nullptr;
  ASSERT_EQ(UIH_OK, uih_batch_create(f.group, 8, ids, 2, &partial, nullptr));
  uint64_t user;
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_gen_next(gen, &user, partial, &err));
  EXPECT_STREQ("gen_next: the batch must be of group 'engagement' with all its active traits", err.msg);
  uih_batch_free(partial);
  uih_gen_free(gen);
}

}  // namespace
