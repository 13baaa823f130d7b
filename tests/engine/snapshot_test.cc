// Snapshot records (uih/snapshot.h): random records round-trip through the
// binary form at exactly the size announced; every damaged byte and every
// cut is refused with an offset; the checkpoint rule; identities cover the
// timestamp and id traits and nothing else; a typical group costs at most
// 32 bytes besides its mutable events.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uih/schema.h"
#include "uih/snapshot.h"
#include "uih/stripe.h"

namespace {

const char kSchema[] = R"({"name": "s", "version": 1, "groups": [
  {"name": "a", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"},
    {"name": "rating", "id": 3, "type": "uint32"},
    {"name": "author", "id": 4, "type": "id"}]},
  {"name": "b", "id": 7, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "dwell", "id": 2, "type": "float32"}]}]})";

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uih_schema_parse(kSchema, strlen(kSchema), "s.json", &schema_, &err_), UIH_OK) << uih_error_message(&err_);
    ASSERT_EQ(uih_stripe_encoder_create(nullptr, &enc_, &err_), UIH_OK);
  }
  void TearDown() override {
    uih_stripe_encoder_free(enc_);
    uih_schema_free(schema_);
  }
  // `n` events of group `g` as a stripe, kept in `keep`.
  std::string Stripe(std::mt19937_64& rng, const uih_group* g, uint32_t n, int64_t from) {
    uih_batch* b = nullptr;
    EXPECT_EQ(uih_batch_create(g, n, nullptr, 0, &b, &err_), UIH_OK);
    for (uint32_t r = 0; r < n; r++) {
      uint32_t row;
      EXPECT_EQ(uih_batch_append(b, &row, &err_), UIH_OK);
      for (uint32_t c = 0; c < b->ncolumns; c++) {
        uint64_t v = c == 0 ? static_cast<uint64_t>(from + r * 1000) : rng() % 100000;
        if (b->columns[c].trait->type == UIH_TYPE_FLOAT32 || b->columns[c].trait->type == UIH_TYPE_UINT32) v &= 0xffff;
        uih_column_set_bits(&b->columns[c], r, v);
      }
    }
    const uint8_t* out;
    size_t len;
    EXPECT_EQ(uih_stripe_encode(enc_, b, 1, &out, &len, &err_), UIH_OK) << uih_error_message(&err_);
    uih_batch_free(b);
    return std::string(reinterpret_cast<const char*>(out), len);
  }
  uih_snapshot_record Random(std::mt19937_64& rng, std::vector<std::string>* keep) {
    uih_snapshot_record r{};
    r.store = rng() % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
    r.user_id = rng() % 4 == 0 ? ~uint64_t{0} - rng() % 3 : rng() % 1000000;
    static const int64_t kTs[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1700000000000, INT64_MAX};
    r.request_ts = rng() % 3 == 0 ? kTs[rng() % 6] : 1700000000000 + static_cast<int64_t>(rng() % 100000000);
    r.schema_version = 1 + static_cast<uint32_t>(rng() % 3);
    r.generation = rng() % 5 == 0 ? 0 : 1 + static_cast<uint32_t>(rng() % 100000);
    uint16_t ids[] = {0, 1, 7, 9, 300, 65535};
    for (uint16_t id : ids) {
      if (rng() % 2 && !(id == 65535 && r.ngroups == 0)) continue;
      uih_snapshot_group& g = r.groups[r.ngroups++];
      g.group = id;
      static const uint32_t kLen[] = {0, 1, 15, 16, 63, 64, 256, 1000, 4096, 70000};
      g.length = r.generation ? kLen[rng() % 10] : 0;  // an immutable part is of the record's generation
      if (g.length) {
        g.generation = r.generation;
        uint64_t back = rng() % 4 == 0 ? 0 : rng() % 100000000;
        if (back > static_cast<uint64_t>(r.request_ts) - static_cast<uint64_t>(INT64_MIN)) back = 0;
        g.end_ts = static_cast<int64_t>(static_cast<uint64_t>(r.request_ts) - back);
        uint64_t span = rng() % 4 == 0 ? 0 : rng() % 10000000000;
        if (span > static_cast<uint64_t>(g.end_ts) - static_cast<uint64_t>(INT64_MIN)) span = 0;
        g.start_ts = static_cast<int64_t>(static_cast<uint64_t>(g.end_ts) - span);
        for (uint32_t& c : g.check) c = static_cast<uint32_t>(rng());
        uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
        for (uint32_t k = uih_snapshot_checkpoints(g.length, cp); k < UIH_SNAPSHOT_CHECKS_MAX; k++) g.check[k] = 0;
      }
      if (rng() % 2) {
        const uih_group* sg = uih_schema_group_at(schema_, static_cast<uint32_t>(rng() % 2));
        std::string blob;
        for (uint32_t k = 1 + static_cast<uint32_t>(rng() % 3); k > 0; k--) {  // one to three stripes
          std::string st = Stripe(rng, sg, 1 + static_cast<uint32_t>(rng() % 40), 1700000000000);
          size_t at = blob.size();
          blob.resize(at + st.size() + 10);
          uih_snapshot_mutable_put(reinterpret_cast<uint8_t*>(blob.data()), blob.size(), &at,
                                   reinterpret_cast<const uint8_t*>(st.data()), st.size());
          blob.resize(at);
        }
        keep->push_back(blob);
        g.mutable_events = reinterpret_cast<const uint8_t*>(keep->back().data());
        g.mutable_len = keep->back().size();
      }
    }
    return r;
  }
  static void ExpectSame(const uih_snapshot_record& a, const uih_snapshot_record& b) {
    EXPECT_EQ(a.store, b.store);
    EXPECT_EQ(a.user_id, b.user_id);
    EXPECT_EQ(a.request_ts, b.request_ts);
    EXPECT_EQ(a.schema_version, b.schema_version);
    EXPECT_EQ(a.generation, b.generation);
    ASSERT_EQ(a.ngroups, b.ngroups);
    for (uint32_t i = 0; i < a.ngroups; i++) {
      const uih_snapshot_group &x = a.groups[i], &y = b.groups[i];
      EXPECT_EQ(x.group, y.group);
      EXPECT_EQ(x.length, y.length);
      EXPECT_EQ(x.generation, y.generation);
      EXPECT_EQ(x.start_ts, y.start_ts);
      EXPECT_EQ(x.end_ts, y.end_ts);
      for (int k = 0; k < UIH_SNAPSHOT_CHECKS_MAX; k++) EXPECT_EQ(x.check[k], y.check[k]) << "check " << k;
      ASSERT_EQ(x.mutable_len, y.mutable_len);
      if (x.mutable_len) {
        EXPECT_EQ(memcmp(x.mutable_events, y.mutable_events, x.mutable_len), 0);
      }
    }
  }
  uih_schema* schema_ = nullptr;
  uih_stripe_encoder* enc_ = nullptr;
  uih_error err_{};
};

TEST_F(SnapshotTest, RandomRecordsRoundTripAtTheAnnouncedSize) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; i++) {
    std::vector<std::string> keep;
    keep.reserve(8);
    uih_snapshot_record r = Random(rng, &keep);
    size_t need = uih_snapshot_record_size(&r), len = 0;
    std::vector<uint8_t> buf(need);
    if (need > 1) {
      EXPECT_EQ(uih_snapshot_record_encode(&r, buf.data(), need - 1, &len, &err_), UIH_ERR_OUT_OF_RANGE);
      EXPECT_EQ(len, need) << "a short buffer still learns the size";
    }
    ASSERT_EQ(uih_snapshot_record_encode(&r, buf.data(), buf.size(), &len, &err_), UIH_OK) << uih_error_message(&err_);
    ASSERT_EQ(len, need);
    uih_snapshot_record back;
    ASSERT_EQ(uih_snapshot_record_decode(buf.data(), len, &back, &err_), UIH_OK) << uih_error_message(&err_);
    ExpectSame(r, back);
    char text[2048];
    size_t tl = uih_snapshot_record_format(&back, text, sizeof text);
    EXPECT_EQ(tl, strlen(text));
    EXPECT_NE(std::string(text).find("user " + std::to_string(r.user_id)), std::string::npos) << text;
    EXPECT_EQ(std::string(text).find("not stripes"), std::string::npos) << text;
  }
}

TEST_F(SnapshotTest, EveryDamagedByteAndEveryCutIsRefused) {
  std::mt19937_64 rng(4);
  std::vector<std::string> keep;
  uih_snapshot_record r = Random(rng, &keep);
  std::vector<uint8_t> buf(uih_snapshot_record_size(&r));
  size_t len;
  ASSERT_EQ(uih_snapshot_record_encode(&r, buf.data(), buf.size(), &len, &err_), UIH_OK);
  uih_snapshot_record back;
  for (size_t i = 0; i < len; i++)
    for (int bit = 0; bit < 8; bit++) {
      std::vector<uint8_t> bad = buf;
      bad[i] ^= static_cast<uint8_t>(1 << bit);
      int rc = uih_snapshot_record_decode(bad.data(), len, &back, &err_);
      EXPECT_EQ(rc, UIH_ERR_CORRUPTION) << "byte " << i << " bit " << bit;
      EXPECT_NE(std::string(uih_error_message(&err_)).find("snapshot record"), std::string::npos);
    }
  for (size_t cut = 0; cut < len; cut++)
    EXPECT_EQ(uih_snapshot_record_decode(buf.data(), cut, &back, &err_), UIH_ERR_CORRUPTION) << "cut at " << cut;
}

// Records whose checksum is right but whose fields are not: each refused
// with what was wrong.
TEST_F(SnapshotTest, WellSealedNonsenseIsRefused) {
  auto seal = [](std::vector<uint8_t> body) {
    uint32_t sum = static_cast<uint32_t>(XXH3_64bits(body.data(), body.size()));
    for (int k = 0; k < 4; k++) body.push_back(static_cast<uint8_t>(sum >> (8 * k)));
    return body;
  };
  struct Case {
    std::vector<uint8_t> body;
    int rc;
    const char* message;
  } cases[] = {
      {{4, 1, 0, 1, 1, 1, 0, 0}, UIH_ERR_NOT_SUPPORTED, "version 4"},
      {{2, 7, 7, 7}, UIH_ERR_CORRUPTION, "the header ends early"},  // version 2: a u32 store first
      {{2, 1, 2, 3, 4, 1, 0, 1, 0}, UIH_ERR_CORRUPTION, "0 groups"},
      {{1, 1, 0, 0, 1, 1, 0, 0}, UIH_ERR_CORRUPTION, "schema version 0"},
      {{1, 1, 0, 1, 0}, UIH_ERR_CORRUPTION, "0 groups"},
      {{1, 1, 0, 1, 33}, UIH_ERR_CORRUPTION, "33 groups"},
      {{1, 1, 0, 1, 2, 5, 0, 0, 5, 0, 0}, UIH_ERR_CORRUPTION, "group id 5"},
      {{1, 1, 0, 1, 1, 0x80, 0x80, 0x04, 0, 0}, UIH_ERR_CORRUPTION, "group id 65536"},
      {{1, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0}, UIH_ERR_CORRUPTION, "expected 1..65535"},
      {{1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 2, 3, 4, 0}, UIH_ERR_CORRUPTION, "generation 0"},
      {{1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 2, 3, 4, 0}, UIH_ERR_CORRUPTION, "out of range"},  // end before INT64_MIN
      {{1, 1, 0, 1, 1, 1, 0, 9, 1, 2}, UIH_ERR_CORRUPTION, "9 mutable bytes"},
      {{1, 1, 0, 1, 1, 1, 0, 0, 7}, UIH_ERR_CORRUPTION, "1 bytes after the last group"},
      {{1, 1, 0, 1, 1, 1, 0x80}, UIH_ERR_CORRUPTION, "ends early"},
      {{1, 1, 0, 1, 1, 1, 0, 3, 5, 1, 2}, UIH_ERR_CORRUPTION, "not length-prefixed"},
      {{1, 1, 0, 1, 1, 1, 0, 2, 0, 0}, UIH_ERR_CORRUPTION, "not length-prefixed"},
      // Version 3: a generation after the schema version, which every immutable part must be of.
      {{3, 1, 2, 3, 4, 1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x10, 1, 1, 0, 0}, UIH_ERR_CORRUPTION, "expected 0..4294967295"},
      {{3, 1, 2, 3, 4, 1, 0, 1, 5, 1, 1, 1, 6, 0, 0, 1, 2, 3, 4, 0}, UIH_ERR_CORRUPTION, "(the record's: 5)"},
      {{3, 1, 2, 3, 4, 1, 0, 1, 5}, UIH_ERR_CORRUPTION, "the header ends early"},
  };
  // (Version 1 bodies: the same as version 2 without the store.) The "out of range" case's request ts is 0 (zigzag 0), so "end 1 before
  // it" stays in range; make the request INT64_MIN (zigzag 2^64 - 1) there.
  cases[10].body = {1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 1, 1, 1, 1, 1, 0, 1, 2, 3, 4, 0};
  for (const Case& c : cases) {
    std::vector<uint8_t> rec = seal(c.body);
    uih_snapshot_record r;
    EXPECT_EQ(uih_snapshot_record_decode(rec.data(), rec.size(), &r, &err_), c.rc) << c.message;
    EXPECT_NE(std::string(uih_error_message(&err_)).find(c.message), std::string::npos)
        << "want \"" << c.message << "\" in: " << uih_error_message(&err_);
  }
}

// Records of versions 1 (no store field) and 2 (no generation field) still
// decode, with store 0 (version 1) and generation 0, to the same fields as
// the current record they differ from.
TEST_F(SnapshotTest, OlderRecordsDecodeWithoutTheFieldsTheyLack) {
  std::mt19937_64 rng(8);
  auto varint_len = [](uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
  };
  for (int i = 0; i < 200; i++) {
    std::vector<std::string> keep;
    uih_snapshot_record r = Random(rng, &keep);
    size_t len = 0;
    std::vector<uint8_t> buf(uih_snapshot_record_size(&r));
    ASSERT_EQ(uih_snapshot_record_encode(&r, buf.data(), buf.size(), &len, &err_), UIH_OK);
    ASSERT_EQ(buf[0], UIH_SNAPSHOT_FORMAT);
    const uint64_t zz = (static_cast<uint64_t>(r.request_ts) << 1) ^ static_cast<uint64_t>(r.request_ts >> 63);
    const size_t gen_at = 5 + varint_len(r.user_id) + varint_len(zz) + varint_len(r.schema_version);
    const size_t gen_end = gen_at + varint_len(r.generation);
    for (uint8_t version : {1, 2}) {
      std::vector<uint8_t> old = {version};
      if (version == 2) old.insert(old.end(), buf.begin() + 1, buf.begin() + 5);  // the store
      old.insert(old.end(), buf.begin() + 5, buf.begin() + static_cast<std::ptrdiff_t>(gen_at));
      old.insert(old.end(), buf.begin() + static_cast<std::ptrdiff_t>(gen_end), buf.end() - 4);  // without the checksum
      const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(old.data(), old.size()));
      for (int k = 0; k < 4; k++) old.push_back(static_cast<uint8_t>(sum >> (8 * k)));
      uih_snapshot_record back;
      ASSERT_EQ(uih_snapshot_record_decode(old.data(), old.size(), &back, &err_), UIH_OK) << uih_error_message(&err_);
      EXPECT_EQ(back.version, version);
      EXPECT_EQ(back.store, version == 1 ? 0u : r.store);
      EXPECT_EQ(back.generation, 0u);
      back.store = r.store;
      back.generation = r.generation;
      ExpectSame(r, back);
    }
  }
}

TEST(SnapshotCheckpoints, FollowTheRule) {
  struct Case {
    uint32_t length;
    std::vector<uint32_t> want;
  } cases[] = {{0, {}},          {1, {1}},          {63, {63}},           {64, {64, 16}},
               {100, {100, 25}}, {256, {256, 64, 16}}, {4096, {4096, 1024, 256, 64}}, {100000, {100000, 25000, 6250, 1562}}};
  for (const Case& c : cases) {
    uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
    uint32_t n = uih_snapshot_checkpoints(c.length, cp);
    EXPECT_EQ(std::vector<uint32_t>(cp, cp + n), c.want) << c.length;
  }
  EXPECT_EQ(uih_snapshot_checkpoint_for(4096, 128), 256u);
  EXPECT_EQ(uih_snapshot_checkpoint_for(4096, 64), 64u);
  EXPECT_EQ(uih_snapshot_checkpoint_for(4096, 1), 64u);
  EXPECT_EQ(uih_snapshot_checkpoint_for(4096, 4096), 4096u);
  EXPECT_EQ(uih_snapshot_checkpoint_for(4096, 5000), 4096u);
  EXPECT_EQ(uih_snapshot_checkpoint_for(20, 3), 20u);
}

// The identity covers ts and the id traits (item, author), present or
// not, and nothing else; the chain depends on the order.
TEST_F(SnapshotTest, IdentitiesCoverTimestampAndIdTraitsOnly) {
  const uih_group* g = uih_schema_group_by_id(schema_, 1);
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_batch_create(g, 8, nullptr, 0, &b, &err_), UIH_OK);
  for (int r = 0; r < 2; r++) {
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err_), UIH_OK);
    for (uint32_t c = 0; c < b->ncolumns; c++) uih_column_set_bits(&b->columns[c], static_cast<uint32_t>(r), 10 + r);
  }
  int cols[8];
  uint32_t n = uih_snapshot_identity_columns(nullptr, b, cols, 8);
  ASSERT_EQ(n, 3u) << "ts, item, author";
  EXPECT_EQ(cols[0], uih_batch_column_index(b, 1));
  EXPECT_EQ(cols[1], uih_batch_column_index(b, 2));
  EXPECT_EQ(cols[2], uih_batch_column_index(b, 4));
  auto chain = [&] { return uih_snapshot_identity_next(uih_snapshot_identity_next(0, b, cols, n, 1), b, cols, n, 0); };
  const uint64_t base = chain();
  EXPECT_NE(base, uih_snapshot_identity_next(uih_snapshot_identity_next(0, b, cols, n, 0), b, cols, n, 1)) << "order";
  uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], 0, 999);  // rating: not identity
  EXPECT_EQ(chain(), base);
  for (uint16_t id : {1, 2, 4}) {
    uih_column* c = &b->columns[uih_batch_column_index(b, id)];
    uint64_t was = uih_column_get_bits(c, 0);
    uih_column_set_bits(c, 0, was + 1);
    EXPECT_NE(chain(), base) << "trait " << id;
    uih_column_set_bits(c, 0, was);
  }
  EXPECT_EQ(chain(), base);
  uih_column* author = &b->columns[uih_batch_column_index(b, 4)];
  uih_column_set_bits(author, 0, 0);
  uint64_t zero = chain();
  author->present[0] &= ~uint64_t{1};  // absent is not 0
  EXPECT_NE(chain(), zero);
  uih_batch_free(b);
}

// The chain inference marks and training verifies: for random parts, a
// chain over the events newest first marks exactly the checks a hand-rolled
// chain of uih_snapshot_identity_next gives at each checkpoint; verifying
// accepts each checkpoint, resumed chains included, and refuses a changed
// identity, a wrong count and a count that is no checkpoint.
TEST_F(SnapshotTest, ChainsMarkAndVerifyEveryCheckpoint) {
  const uih_group* g = uih_schema_group_by_id(schema_, 1);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; round++) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 3000);
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_batch_create(g, n, nullptr, 0, &b, &err_), UIH_OK);
    for (uint32_t r = 0; r < n; r++) {
      uint32_t row;
      ASSERT_EQ(uih_batch_append(b, &row, &err_), UIH_OK);
      for (uint32_t c = 0; c < b->ncolumns; c++)
        if (c == 0 || rng() % 4) uih_column_set_bits(&b->columns[c], r, c == 0 ? 1000 + r : rng() % 50);
    }
    uih_snapshot_group part{};
    part.length = n;
    uih_snapshot_chain chain;
    uih_snapshot_chain_start(&chain, nullptr, b);
    std::vector<uint64_t> h(n + 1, 0);
    int cols[8];
    const uint32_t ncols = uih_snapshot_identity_columns(nullptr, b, cols, 8);
    for (uint32_t k = 1; k <= n; k++) {
      uih_snapshot_chain_push(&chain, b, n - k);
      uih_snapshot_chain_mark(&chain, &part);
      h[k] = uih_snapshot_identity_next(h[k - 1], b, cols, ncols, n - k);
      ASSERT_EQ(chain.n, k);
      ASSERT_EQ(chain.h, h[k]);
    }
    uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
    const uint32_t ncp = uih_snapshot_checkpoints(n, cp);
    for (uint32_t i = 0; i < ncp; i++) {
      EXPECT_EQ(part.check[i], static_cast<uint32_t>(h[cp[i]]));
      EXPECT_EQ(uih_snapshot_group_check(&part, cp[i]), part.check[i]);
      // Training's chain over the newest cp[i] events, resumed half way.
      uih_snapshot_chain t;
      uih_snapshot_chain_start(&t, g, b);
      t.n = cp[i] / 2;
      t.h = h[t.n];
      for (uint32_t k = t.n + 1; k <= cp[i]; k++) uih_snapshot_chain_push(&t, b, n - k);
      EXPECT_EQ(uih_snapshot_chain_verify(&t, &part), 1) << "checkpoint " << cp[i] << " of " << n;
      t.h ^= 1;
      EXPECT_EQ(uih_snapshot_chain_verify(&t, &part), 0);
    }
    if (n > 1 && uih_snapshot_checkpoint_for(n, n - 1) == n) {  // n - 1 is no checkpoint
      uih_snapshot_chain t = chain;
      t.n = n - 1;
      t.h = h[n - 1];
      EXPECT_EQ(uih_snapshot_chain_verify(&t, &part), 0);
      EXPECT_EQ(uih_snapshot_group_check(&part, n - 1), 0u);
    }
    uih_batch_free(b);
  }
}

// The size the format promises: a group with 256 immutable events of a
// three-month history, requested a day after its window ends, takes at most
// 32 bytes besides its mutable events.
TEST_F(SnapshotTest, ATypicalGroupTakesAtMost32Bytes) {
  uih_snapshot_record one{}, two{};
  one.user_id = two.user_id = 123456789;
  one.request_ts = two.request_ts = 1700000000000;
  one.schema_version = two.schema_version = 3;
  one.generation = two.generation = 120;
  one.ngroups = 1;
  two.ngroups = 2;
  for (uih_snapshot_record* r : {&one, &two})
    for (uint32_t i = 0; i < r->ngroups; i++) {
      uih_snapshot_group& g = r->groups[i];
      g.group = static_cast<uint16_t>(1 + i);
      g.length = 256;
      g.generation = 120;
      g.end_ts = r->request_ts - 86400000;
      g.start_ts = g.end_ts - 90 * int64_t{86400000};
    }
  size_t per_group = uih_snapshot_record_size(&two) - uih_snapshot_record_size(&one);
  EXPECT_LE(per_group, 32u);
  EXPECT_LE(uih_snapshot_record_size(&one), 32u + 16u) << "the header and record checksum add little";
}

}  // namespace

