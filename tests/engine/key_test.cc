// Key codec: byte order equals tuple order, round trip, prefixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uih/key.h"

namespace {

std::vector<uint8_t> Encode(const uih_key& k) {
  std::vector<uint8_t> out(UIH_KEY_SIZE);
  uih_key_encode(&k, out.data());
  return out;
}

int Sign(int x) { return (x > 0) - (x < 0); }

// Draws values that hit the edges often: 0, 1, max, min, +-1 around them,
// and uniform random bits otherwise.
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  uint64_t U64() {
    static const uint64_t edges[] = {0, 1, 2, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                     UINT64_MAX - 1, UINT64_MAX, 0xff, 0x100};
    switch (rng() % 4) {
      case 0: return edges[rng() % (sizeof edges / sizeof *edges)];
      case 1: return rng() % 1000;  // many collisions, so ties on the first field occur
      default: return rng();
    }
  }
  uint16_t U16() {
    switch (rng() % 4) {
      case 0: return static_cast<uint16_t>((rng() % 2) ? 0 : UINT16_MAX);
      case 1: return static_cast<uint16_t>(rng() % 4);
      default: return static_cast<uint16_t>(rng());
    }
  }
  int64_t I64() {
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
    switch (rng() % 4) {
      case 0: return edges[rng() % (sizeof edges / sizeof *edges)];
      case 1: return static_cast<int64_t>(rng() % 2001) - 1000;
      default: return static_cast<int64_t>(rng());
    }
  }
  uih_key Key() { return uih_key{U64(), U16(), I64()}; }
};

TEST(KeyCodec, RoundTripsRandomAndExtremeTuples) {
  Gen g(1);
  for (int i = 0; i < 200000; i++) {
    uih_key k = g.Key();
    auto buf = Encode(k);
    uih_key back{};
    ASSERT_EQ(UIH_OK, uih_key_decode(buf.data(), buf.size(), &back, nullptr));
    ASSERT_EQ(k.user_id, back.user_id);
    ASSERT_EQ(k.group, back.group);
    ASSERT_EQ(k.ts, back.ts);
  }
}

TEST(KeyCodec, ByteOrderEqualsTupleOrder) {
  Gen g(2);
  for (int i = 0; i < 200000; i++) {
    uih_key a = g.Key(), b = g.Key();
    // Force shared leading fields often, so later fields decide the order.
    if (i % 3 == 0) b.user_id = a.user_id;
    if (i % 3 == 0 && i % 2 == 0) b.group = a.group;
    auto ea = Encode(a), eb = Encode(b);
    ASSERT_EQ(Sign(uih_key_compare(&a, &b)), Sign(std::memcmp(ea.data(), eb.data(), UIH_KEY_SIZE)))
        << a.user_id << "," << a.group << "," << a.ts << " vs " << b.user_id << "," << b.group
        << "," << b.ts;
  }
}

TEST(KeyCodec, SortingEncodingsSortsTuples) {
  Gen g(3);
  std::vector<uih_key> keys(5000);
  for (auto& k : keys) k = g.Key();
  std::vector<std::vector<uint8_t>> enc;
  for (auto& k : keys) enc.push_back(Encode(k));
  std::sort(enc.begin(), enc.end());
  std::sort(keys.begin(), keys.end(), [](const uih_key& a, const uih_key& b) {
    if (a.user_id != b.user_id) return a.user_id < b.user_id;
    if (a.group != b.group) return a.group < b.group;
    return a.ts < b.ts;
  });
  for (size_t i = 0; i < keys.size(); i++) ASSERT_EQ(Encode(keys[i]), enc[i]) << i;
}

TEST(KeyCodec, DrawnLayoutIsExact) {
  uih_key k{0x0102030405060708ull, 0x090a, 0};
  std::vector<uint8_t> want = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x80, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(want, Encode(k));
  k.ts = INT64_MIN;
  auto e = Encode(k);
  EXPECT_EQ(std::vector<uint8_t>(8, 0), std::vector<uint8_t>(e.begin() + 10, e.end()));
  k.ts = -1;
  e = Encode(k);
  EXPECT_EQ(0x7f, e[10]);
  EXPECT_EQ(0xff, e[17]);
  k.ts = INT64_MAX;
  e = Encode(k);
  EXPECT_EQ(std::vector<uint8_t>(8, 0xff), std::vector<uint8_t>(e.begin() + 10, e.end()));
}

TEST(KeyCodec, DecodeRejectsWrongLengths) {
  uint8_t buf[UIH_KEY_SIZE + 1] = {};
  uih_key k;
  uih_error err{};
  for (size_t len : {size_t{0}, size_t{1}, size_t{10}, size_t{17}, size_t{19}}) {
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_key_decode(buf, len, &k, &err)) << len;
    EXPECT_NE(nullptr, std::strstr(err.msg, "expected 18")) << err.msg;
  }
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_key_decode(nullptr, UIH_KEY_SIZE, &k, &err));
}

TEST(KeyCodec, PrefixesSelectExactlyTheirKeys) {
  Gen g(4);
  for (int i = 0; i < 50000; i++) {
    uih_key k = g.Key();
    uint64_t user = (i % 2) ? k.user_id : g.U64();
    uint16_t group = (i % 3) ? k.group : g.U16();
    uint8_t up[UIH_KEY_USER_PREFIX_SIZE], gp[UIH_KEY_GROUP_PREFIX_SIZE];
    uih_key_user_prefix(user, up);
    uih_key_group_prefix(user, group, gp);
    auto e = Encode(k);
    ASSERT_EQ(k.user_id == user, std::memcmp(e.data(), up, sizeof up) == 0);
    ASSERT_EQ(k.user_id == user && k.group == group, std::memcmp(e.data(), gp, sizeof gp) == 0);
  }
}

TEST(KeyCodec, PrefixSuccessorIsTheExclusiveUpperBound) {
  Gen g(5);
  for (int i = 0; i < 50000; i++) {
    uih_key k = g.Key();
    uint8_t gp[UIH_KEY_GROUP_PREFIX_SIZE], bound[UIH_KEY_GROUP_PREFIX_SIZE];
    uih_key_group_prefix(k.user_id, k.group, gp);
    std::memcpy(bound, gp, sizeof gp);
    int has = uih_key_prefix_successor(bound, sizeof bound);
    auto e = Encode(k);
    if (!has) {
      // Only the all-0xff prefix has no successor, and the buffer is unchanged.
      ASSERT_EQ(UINT64_MAX, k.user_id);
      ASSERT_EQ(UINT16_MAX, k.group);
      ASSERT_EQ(0, std::memcmp(bound, gp, sizeof gp));
      continue;
    }
    // Every key with the prefix sorts below the bound ...
    ASSERT_LT(std::memcmp(e.data(), bound, sizeof bound), 0);
    // ... and the next (user, group) starts exactly at it.
    uih_key next = k;
    next.ts = INT64_MIN;
    if (k.group == UINT16_MAX) {
      next.user_id++;
      next.group = 0;
    } else {
      next.group++;
    }
    ASSERT_EQ(0, std::memcmp(Encode(next).data(), bound, sizeof bound));
  }
}

}  // namespace

namespace {

// The shard function is a contract with every system that partitions
// training data: these values may never change.
TEST(Shard, ValuesArePinned) {
  struct {
    uint64_t user;
    uint32_t n2, n16, n1000;
  } pinned[] = {{0, 1, 9, 897},
                {1, 0, 14, 78},
                {42, 0, 8, 720},
                {1700000000000ull, 0, 0, 808},
                {UINT64_MAX, 1, 3, 627}};
  for (const auto& p : pinned) {
    EXPECT_EQ(p.n2, uih_shard_of(p.user, 2)) << p.user;
    EXPECT_EQ(p.n16, uih_shard_of(p.user, 16)) << p.user;
    EXPECT_EQ(p.n1000, uih_shard_of(p.user, 1000)) << p.user;
    EXPECT_EQ(0u, uih_shard_of(p.user, 1));
    EXPECT_EQ(0u, uih_shard_of(p.user, 0));
  }
}

// A string id's id is a contract with every inference service and
// training job that hashes the same strings: these values may never change.
// XXH3-64 of "" is 0x2d06800538d394c2, as xxHash's own reference says.
TEST(HashId, ValuesArePinned) {
  struct {
    const char* s;
    uint64_t id;
  } pinned[] = {{"", 0x2d06800538d394c2ull},
                {"alice", 5593767425381308080ull},
                {"\xc3\xa9", 17839895020865391795ull},  // "é", precomposed, in UTF-8
                {"A2SUAM1J3GNN3B", 13147978552888737663ull},
                {"bob", 1442208253991303397ull}};
  for (const auto& p : pinned) EXPECT_EQ(uih_hash_id(p.s, strlen(p.s)), p.id) << p.s;
  EXPECT_NE(uih_hash_id("e\xcc\x81", 3), uih_hash_id("\xc3\xa9", 2)) << "bytes as given: not normalized";
  EXPECT_EQ(uih_hash_id(nullptr, 0), uih_hash_id("", 0));
}

// Strings laid end to end (Arrow's layout) give what one at a time gives.
TEST(HashId, ManyAtOnceAreOneAtATime) {
  std::mt19937_64 rng(9);
  std::string bytes;
  std::vector<uint64_t> offsets{0};
  for (int i = 0; i < 500; i++) {
    const size_t len = rng() % 5 == 0 ? 0 : rng() % 40;
    for (size_t k = 0; k < len; k++) bytes += static_cast<char>(rng());
    offsets.push_back(bytes.size());
  }
  std::vector<uint64_t> out(500, 0);
  uih_hash_ids(reinterpret_cast<const uint8_t*>(bytes.data()), offsets.data(), 500, out.data());
  for (size_t i = 0; i < 500; i++)
    ASSERT_EQ(out[i], uih_hash_id(bytes.data() + offsets[i], offsets[i + 1] - offsets[i])) << i;
}

// Many at once give what one at a time gives.
TEST(Shard, ManyAtOnceAreOneAtATime) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> users(1000);
  for (uint64_t& u : users) u = rng() >> (rng() % 64);
  for (uint32_t n : {0u, 1u, 2u, 7u, 1000u, UINT32_MAX}) {
    std::vector<uint32_t> out(users.size(), 12345);
    uih_shard_of_many(users.data(), users.size(), n, out.data());
    for (size_t i = 0; i < users.size(); i++) ASSERT_EQ(uih_shard_of(users[i], n), out[i]) << users[i] << " " << n;
  }
  uih_shard_of_many(nullptr, 0, 4, nullptr);  // nothing to do
}

// Consecutive user ids (how ids are often handed out) spread evenly.
TEST(Shard, ConsecutiveUsersSpreadEvenly) {
  for (uint32_t n : {2u, 7u, 16u, 64u}) {
    std::vector<uint32_t> count(n);
    const uint32_t users = 200000;
    for (uint64_t u = 0; u < users; u++) {
      uint32_t s = uih_shard_of(u, n);
      ASSERT_LT(s, n);
      count[s]++;
    }
    double expect = static_cast<double>(users) / n;
    for (uint32_t s = 0; s < n; s++) EXPECT_NEAR(expect, count[s], expect * 0.05) << "shard " << s << " of " << n;
  }
}

}  // namespace
