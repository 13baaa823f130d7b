// ld_counts (loader/counts.h) against an exact count of the same stream:
// exact while the distinct values fit, and within the Misra-Gries bounds
// once pruned, whatever the order of the stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

extern "C" {
#include "counts.h"
}

namespace {

std::map<uint64_t, uint64_t> Exact(const std::vector<uint64_t>& stream) {
  std::map<uint64_t, uint64_t> m;
  for (uint64_t v : stream) m[v]++;
  return m;
}

// Zipf(1.1)-like ranks over `distinct` values, spread over 64 bits (0 among them).
std::vector<uint64_t> ZipfStream(size_t n, size_t distinct, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(distinct);
  double sum = 0;
  for (size_t r = 0; r < distinct; r++) cdf[r] = sum += 1 / std::pow(static_cast<double>(r + 1), 1.1);
  std::uniform_real_distribution<double> u(0, sum);
  std::vector<uint64_t> out(n);
  for (auto& v : out) {
    const uint64_t r = static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    v = r * 0x9e3779b97f4a7c15ull;  // rank 0 is value 0
  }
  return out;
}

void Add(ld_counts* c, const std::vector<uint64_t>& stream) {
  for (uint64_t v : stream) {
    ASSERT_EQ(ld_counts_add(c, v), 0);
    ASSERT_LE(c->used, c->max);
  }
}

TEST(LoaderCounts, ExactWhileTheDistinctValuesFit) {
  for (uint64_t seed = 1; seed <= 5; seed++) {
    const std::vector<uint64_t> stream = ZipfStream(20000, 3000, seed);
    const auto want = Exact(stream);
    ld_counts c{};
    c.max = want.size();
    Add(&c, stream);
    EXPECT_EQ(c.subtracted, 0u);
    EXPECT_EQ(c.total, stream.size());
    EXPECT_EQ(c.used, want.size());
    for (auto& [v, n] : want) EXPECT_EQ(ld_counts_get(&c, v), n) << v;
    EXPECT_EQ(ld_counts_get(&c, 12345), 0u) << "never added";
    ld_counts_free(&c);
  }
}

TEST(LoaderCounts, PrunedCountsStayWithinTheBoundInAnyOrder) {
  for (uint64_t seed = 1; seed <= 4; seed++) {
    std::vector<uint64_t> stream = ZipfStream(100000, 40000, seed);
    if (seed % 2 == 0) std::sort(stream.begin(), stream.end());  // values grouped: the worst order for a first-come cap
    const auto want = Exact(stream);
    ld_counts c{};
    c.max = 1024;
    Add(&c, stream);
    const double bound = 2.0 * static_cast<double>(stream.size()) / static_cast<double>(c.max);
    EXPECT_GT(c.subtracted, 0u) << "pruned";
    EXPECT_LE(static_cast<double>(c.subtracted), bound);
    for (auto& [v, n] : want) {
      const uint64_t got = ld_counts_get(&c, v);
      EXPECT_LE(got, n) << v;
      EXPECT_GE(got + c.subtracted, n) << v;
      if (static_cast<double>(n) > bound) {
        EXPECT_GT(got, 0u) << "a frequent value is held: " << v << " x" << n;
      }
    }
    ld_counts_free(&c);
  }
}

TEST(LoaderCounts, TheSameStreamGivesTheSameCounts) {
  const std::vector<uint64_t> stream = ZipfStream(50000, 20000, 9);
  ld_counts a{}, b{};
  a.max = b.max = 500;
  Add(&a, stream);
  Add(&b, stream);
  ASSERT_EQ(a.used, b.used);
  EXPECT_EQ(a.subtracted, b.subtracted);
  for (auto& [v, n] : Exact(stream)) EXPECT_EQ(ld_counts_get(&a, v), ld_counts_get(&b, v)) << v;
  ld_counts_free(&a);
  ld_counts_free(&b);
}

TEST(LoaderCounts, AllDistinctValuesInATinyTable) {
  ld_counts c{};
  c.max = 2;
  for (uint64_t v = 0; v < 1000; v++) {
    ASSERT_EQ(ld_counts_add(&c, v), 0);
    ASSERT_LE(c.used, 2u);
  }
  EXPECT_EQ(c.total, 1000u);
  EXPECT_LE(c.subtracted, 1000u);  // 2N / max
  for (int i = 0; i < 5; i++) ASSERT_EQ(ld_counts_add(&c, 7), 0);
  EXPECT_GE(ld_counts_get(&c, 7), 1u) << "the value just added is held";
  ld_counts_free(&c);
  EXPECT_EQ(ld_counts_get(&c, 7), 0u) << "freed: empty";
}

}  // namespace
