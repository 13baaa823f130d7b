// Stripe codec: round trips over random schemas and value shapes, selective
// and ranged decodes against slices of the full decode, schema evolution,
// encoding choices, and corruption (every bit flip, every truncation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <xxhash.h>

#include "batch_model.h"
#include "engine/alloc_count.h"
#include "engine/stripe_gen.h"
#include "intseq.h"
#include "stripe_internal.h"
#include "uih/stripe.h"

namespace {

using uih_test::FillRandomBatch;
using uih_test::SameEvents;

using uih_test::BatchPtr;
using uih_test::SchemaPtr;

class Stripe : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(UIH_OK, uih_stripe_encoder_create(nullptr, &enc_, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_decoder_create(&dec_, nullptr));
  }
  void TearDown() override {
    uih_stripe_encoder_free(enc_);
    uih_stripe_decoder_free(dec_);
  }
  static void Parse(const std::string& json, SchemaPtr* out) {
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_schema_parse(json.data(), json.size(), "t", &out->s, &err)) << err.msg;
  }
  // Encodes `b` and returns a copy of the stripe.
  std::vector<uint8_t> Encode(const uih_batch* b, uint32_t schema_version = 1) {
    const uint8_t* p = nullptr;
    size_t n = 0;
    uih_error err{};
    int rc = uih_stripe_encode(enc_, b, schema_version, &p, &n, &err);
    EXPECT_EQ(UIH_OK, rc) << err.msg;
    return rc == UIH_OK ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
  }
  std::vector<uint8_t> EncodeLike(const uih_batch* b, const std::vector<uih_stripe_column_info>& like) {
    const uint8_t* p = nullptr;
    size_t n = 0;
    uih_error err{};
    int rc = uih_stripe_encode_like(enc_, b, 1, like.data(), static_cast<uint32_t>(like.size()), &p, &n, &err);
    EXPECT_EQ(UIH_OK, rc) << err.msg;
    return rc == UIH_OK ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
  }
  int Decode(const std::vector<uint8_t>& s, uint32_t begin, uint32_t end, uih_batch* out,
             unsigned flags = UIH_DECODE_VERIFY_CHECKSUM, uih_error* err = nullptr) {
    return uih_stripe_decode(dec_, s.data(), s.size(), begin, end, flags, out, err);
  }
  // `st` decodes to `in`'s events whole (checksum verified) and over
  // `ranges` random ranges, into `out`.
  void ExpectDecodesTo(const std::vector<uint8_t>& st, const uih_batch* in, uih_batch* out, std::mt19937_64& rng,
                       int ranges) {
    uih_error err{};
    const uint32_t n = in->count;
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
    ASSERT_TRUE(SameEvents(in, 0, out));
    for (int r = 0; r < ranges; r++) {
      uint32_t a = static_cast<uint32_t>(rng() % (n + 1));
      uint32_t b = a + static_cast<uint32_t>(rng() % (n - a + 1));
      ASSERT_EQ(UIH_OK, Decode(st, a, b, out, 0, &err)) << err.msg;
      ASSERT_TRUE(SameEvents(in, a, out)) << "[" << a << "," << b << ")";
    }
  }
  // An input and an output batch of group `g`, room for `capacity` events.
  static void MakeBatches(const uih_group* g, uint32_t capacity, BatchPtr* in, BatchPtr* out) {
    ASSERT_EQ(UIH_OK, uih_batch_create(g, capacity, nullptr, 0, &in->b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, capacity, nullptr, 0, &out->b, nullptr));
  }
  uih_stripe_encoder* enc_ = nullptr;
  uih_stripe_decoder* dec_ = nullptr;
};

using ContextPtr = std::unique_ptr<uih_stripe_context, void (*)(uih_stripe_context*)>;
using EncoderPtr = std::unique_ptr<uih_stripe_encoder, void (*)(uih_stripe_encoder*)>;

// An encoder with the default options but these (fast, no_checksum).
EncoderPtr MakeEncoder(int fast, int no_checksum) {
  uih_stripe_encoder_opts o = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
  o.fast = fast;
  o.no_checksum = no_checksum;
  uih_stripe_encoder* e = nullptr;
  EXPECT_EQ(UIH_OK, uih_stripe_encoder_create(&o, &e, nullptr));
  return EncoderPtr(e, uih_stripe_encoder_free);
}

// A context with a value dictionary for each column of `b` that may have
// one: a random part of the column's distinct values (so some values are
// found there and some not), counted as the column counts them.
ContextPtr RandomContext(std::mt19937_64& rng, const uih_batch* b) {
  uih_stripe_context* ctx = nullptr;
  EXPECT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ContextPtr out(ctx, uih_stripe_context_free);
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    const uih_column* col = &b->columns[c];
    if (!(uih_encodings_for_type(col->trait->type) & UIH_ENC_SHARED)) continue;
    std::map<uint64_t, uint64_t> counts;
    for (uint32_t r = 0; r < b->count; r++)
      if (uih_column_has(col, r)) counts[uih_column_get_bits(col, r)]++;
    std::vector<uint64_t> values, n;
    const uint64_t keep = rng() % 4;  // none, a third, two thirds, all
    for (const auto& [v, k] : counts)
      if (rng() % 3 < keep) values.push_back(v), n.push_back(k);
    uih_value_dict* d = nullptr;
    int rc = uih_value_dict_build(b->group->id, col->trait->id, col->trait->type, values.data(), n.data(), values.size(), 1,
                                  1 + rng() % 5000, &d, nullptr);
    if (values.empty()) {
      EXPECT_EQ(UIH_ERR_NOT_FOUND, rc);
      continue;
    }
    EXPECT_EQ(UIH_OK, rc);
    EXPECT_EQ(UIH_OK, uih_stripe_context_add(ctx, d, nullptr));
  }
  return out;
}

uint32_t RandomCount(std::mt19937_64& rng) {
  static const uint32_t edges[] = {1, 2, 3, 127, 128, 129, 255, 256, 257, 1000};
  return rng() % 3 ? edges[rng() % 10] : 1 + static_cast<uint32_t>(rng() % 3000);
}

// Rows past `count` stay absent and zero, as uih_batch_append() relies on.
::testing::AssertionResult TailIsClear(const uih_batch* b) {
  for (uint32_t c = 0; c < b->ncolumns; c++)
    for (uint32_t r = b->count; r < b->capacity; r++)
      if (uih_column_has(&b->columns[c], r) || uih_column_get_bits(&b->columns[c], r) != 0)
        return ::testing::AssertionFailure() << "column " << c << " row " << r << " is dirty";
  return ::testing::AssertionSuccess();
}

TEST_F(Stripe, RoundTripsRandomSchemasAndShapes) {
  std::mt19937_64 rng(42);
  uint32_t encodings_seen = 0, scaled_seen = 0, hinted = 0;
  std::set<int> compressions_seen;
  for (int iter = 0; iter < 400; iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 1 + static_cast<int>(rng() % 10)), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    uint32_t n = RandomCount(rng);
    BatchPtr in, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
    FillRandomBatch(rng, in.b, n);
    // Every other stripe is encoded with value dictionaries of its columns
    // at hand (random parts of their values), which both ends then use.
    ContextPtr ctx = iter % 2 ? RandomContext(rng, in.b) : ContextPtr(nullptr, uih_stripe_context_free);
    uih_stripe_encoder_set_context(enc_, ctx.get());
    uih_stripe_decoder_set_context(dec_, ctx.get());

    std::vector<uint8_t> s = Encode(in.b);
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(s, Encode(in.b)) << "encoding must be deterministic";

    uih_stripe_info info{};
    ASSERT_EQ(UIH_OK, uih_stripe_read_info(s.data(), s.size(), &info, nullptr));
    EXPECT_EQ(n, info.count);
    EXPECT_EQ(3, info.group);
    EXPECT_EQ(in.b->ncolumns, info.ncolumns);
    for (uint32_t c = 0; c < info.ncolumns; c++) {
      uih_stripe_column_info ci{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), c, &ci, nullptr));
      EXPECT_EQ(in.b->columns[c].trait->id, ci.trait_id);
      encodings_seen |= ci.encoding;
      scaled_seen += ci.scaled;
      compressions_seen.insert(ci.compression);
    }
    // The whole directory in one pass says what entry-at-a-time does, up
    // to the room given.
    const uint32_t cap = static_cast<uint32_t>(rng() % (info.ncolumns + 2));
    std::vector<uih_stripe_column_info> all(cap + 1), one(info.ncolumns);
    all[cap].trait_id = 0xbeef;  // beyond cap: untouched
    uih_stripe_info again{};
    ASSERT_EQ(UIH_OK, uih_stripe_read_columns(s.data(), s.size(), &again, all.data(), cap, nullptr));
    EXPECT_EQ(0, memcmp(&info, &again, sizeof info));
    EXPECT_EQ(0xbeef, all[cap].trait_id);
    for (uint32_t c = 0; c < cap && c < info.ncolumns; c++) {
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), c, &one[c], nullptr));
      EXPECT_EQ(one[c].trait_id, all[c].trait_id);
      EXPECT_EQ(one[c].type, all[c].type);
      EXPECT_EQ(one[c].encoding, all[c].encoding);
      EXPECT_EQ(one[c].compression, all[c].compression);
      EXPECT_EQ(one[c].bytes, all[c].bytes);
      EXPECT_EQ(one[c].presence, all[c].presence);
      EXPECT_EQ(one[c].scaled, all[c].scaled);
      EXPECT_EQ(one[c].events, info.count);
      EXPECT_EQ(all[c].events, info.count);
    }
    // Written like itself, a stripe is the same bytes: its winners alone
    // compete, and win. Written like any directory (random encodings,
    // compressions and scaling per trait, some traits left out), it holds
    // the same events.
    std::vector<uih_stripe_column_info> own(info.ncolumns), other;
    ASSERT_EQ(UIH_OK, uih_stripe_read_columns(s.data(), s.size(), &again, own.data(), info.ncolumns, nullptr));
    EXPECT_EQ(s, EncodeLike(in.b, own)) << "like itself";
    for (uint32_t c = 0; c < in.b->ncolumns; c++) {
      if (rng() % 4 == 0) continue;
      uih_stripe_column_info ci{};
      ci.trait_id = in.b->columns[c].trait->id;
      // One encoding, as a directory names it, or now and then several
      // (what a caller may pass): those the column allows compete.
      ci.encoding = rng() % 4 ? 1u << (rng() % UIH_ENC_COUNT) : static_cast<uint32_t>(rng() % (1u << UIH_ENC_COUNT));
      ci.compression = static_cast<uih_compression>(UIH_COMPRESS_NONE + rng() % 3);
      ci.scaled = static_cast<int>(rng() % 2);
      other.push_back(ci);
    }
    {
      std::vector<uint8_t> liked = EncodeLike(in.b, other);
      uih_error lerr{};
      ASSERT_EQ(UIH_OK, Decode(liked, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &lerr)) << lerr.msg;
      ASSERT_TRUE(SameEvents(in.b, 0, out.b)) << "like another directory";
      // Where the trait allows the encoding, it needs no dictionary and
      // the column has values, that encoding is the one used.
      uih_stripe_info li{};
      std::vector<uih_stripe_column_info> got(in.b->ncolumns);
      ASSERT_EQ(UIH_OK, uih_stripe_read_columns(liked.data(), liked.size(), &li, got.data(), in.b->ncolumns, nullptr));
      for (const uih_stripe_column_info& h : other) {
        const uih_trait* t = uih_group_trait_by_id(g, h.trait_id);
        uint32_t allowed = t->encodings & uih_encodings_for_type(t->type);
        if (allowed == 0) allowed = uih_encodings_for_type(t->type);
        const uih_column* col = &in.b->columns[uih_batch_column_index(in.b, h.trait_id)];
        bool any = false;
        for (uint32_t r = 0; r < n && !any; r++) any = uih_column_has(col, r);
        if (!(allowed & h.encoding) || (h.encoding & UIH_ENC_DICTIONARY) || !any) continue;
        for (const uih_stripe_column_info& c : got) {
          if (c.trait_id == h.trait_id) {
            EXPECT_TRUE(c.encoding & h.encoding & allowed) << "trait " << h.trait_id << ": " << c.encoding;
          }
        }
        hinted++;
      }
    }
    const int64_t* ts = uih_column_i64(uih_batch_ts_column(in.b));
    EXPECT_EQ(ts[0], info.min_ts);
    EXPECT_EQ(ts[n - 1], info.max_ts);

    uih_error err{};
    ASSERT_EQ(UIH_OK, Decode(s, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
    ASSERT_EQ(n, out.b->count);
    ASSERT_TRUE(SameEvents(in.b, 0, out.b));

    // Ranges, decoded into the same (dirty) batch, equal slices.
    for (int r = 0; r < 4; r++) {
      uint32_t a = static_cast<uint32_t>(rng() % (n + 1));
      uint32_t b = a + static_cast<uint32_t>(rng() % (n - a + 1));
      if (r == 0) a = n > 5 ? n - 5 : 0, b = n;  // "the last N events"
      ASSERT_EQ(UIH_OK, Decode(s, a, b, out.b, 0, &err)) << err.msg << " [" << a << "," << b << ")";
      ASSERT_EQ(b - a, out.b->count);
      ASSERT_TRUE(SameEvents(in.b, a, out.b)) << "[" << a << "," << b << ")";
      ASSERT_TRUE(TailIsClear(out.b));
    }

    // A projection of some traits equals those columns of the full decode.
    std::vector<uint16_t> ids;
    for (uint32_t c = 0; c < in.b->ncolumns; c++)
      if (rng() % 2) ids.push_back(in.b->columns[c].trait->id);
    if (ids.empty()) ids.push_back(g->ts->id);
    BatchPtr proj;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, ids.data(), static_cast<uint32_t>(ids.size()), &proj.b, nullptr));
    ASSERT_EQ(UIH_OK, Decode(s, 0, n, proj.b, 0, &err)) << err.msg;
    ASSERT_EQ(n, proj.b->count);
    ASSERT_TRUE(SameEvents(in.b, 0, proj.b));
  }
  // The shapes are varied enough that every encoding and compressor won
  // somewhere, so all of them were round-tripped above.
  EXPECT_EQ((1u << UIH_ENC_COUNT) - 1, encodings_seen);
  EXPECT_EQ((std::set<int>{UIH_COMPRESS_NONE, UIH_COMPRESS_LZ4, UIH_COMPRESS_ZSTD}), compressions_seen);
  EXPECT_GT(scaled_seen, 40u) << "columns stored as multiples of a common step";
  EXPECT_GT(hinted, 100u) << "columns written like another stripe's";
  uih_stripe_encoder_set_context(enc_, nullptr);
  uih_stripe_decoder_set_context(dec_, nullptr);
}

TEST_F(Stripe, MaximumEventCount) {
  std::mt19937_64 rng(7);
  SchemaPtr schema;
  Parse(uih_test::RandomSchemaJson(rng, 6), &schema);
  const uih_group* g = uih_schema_group_at(schema.s, 0);
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, UIH_STRIPE_EVENTS_MAX, &in, &out));
  FillRandomBatch(rng, in.b, UIH_STRIPE_EVENTS_MAX);
  std::vector<uint8_t> s = Encode(in.b);
  ASSERT_EQ(UIH_OK, Decode(s, 0, UIH_DECODE_TO_END, out.b));
  ASSERT_EQ(static_cast<uint32_t>(UIH_STRIPE_EVENTS_MAX), out.b->count);
  EXPECT_TRUE(SameEvents(in.b, 0, out.b));
  ASSERT_EQ(UIH_OK, Decode(s, UIH_STRIPE_EVENTS_MAX - 100, UIH_STRIPE_EVENTS_MAX, out.b));
  ASSERT_EQ(100u, out.b->count);
  EXPECT_TRUE(SameEvents(in.b, UIH_STRIPE_EVENTS_MAX - 100, out.b));
}

// Where a column's payload starts: payloads are contiguous and end where
// the checksum begins (stripe_format.h).
size_t PayloadOffset(const std::vector<uint8_t>& s, uint32_t column) {
  uih_stripe_info info{};
  EXPECT_EQ(UIH_OK, uih_stripe_read_info(s.data(), s.size(), &info, nullptr));
  size_t at = s.size() - 4;
  for (uint32_t c = info.ncolumns; c-- > column;) {
    uih_stripe_column_info ci{};
    EXPECT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), c, &ci, nullptr));
    at -= ci.bytes;
  }
  return at;
}

// Whatever the bytes, a ranged decode that succeeds gives a valid batch,
// and where the full decode succeeds too, exactly its slice; a full success
// implies the range's. (A range may succeed where the full decode fails:
// it does not validate blocks it skips; the checksum guards those.)
TEST_F(Stripe, RangedDecodesAgreeWithTheFullDecodeOnAnyBytes) {
  std::mt19937_64 rng(31);
  int both = 0, only_range = 0;
  for (int iter = 0; iter < 60; iter++) {
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 5), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    static const uint32_t kCounts[] = {40, 300, 1000, 3000};
    const uint32_t n = kCounts[iter % 4];
    BatchPtr in, all, part;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &in.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &all.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &part.b, nullptr));
    FillRandomBatch(rng, in.b, n);
    std::vector<uint8_t> s = Encode(in.b);
    for (int round = 0; round < 40; round++) {
      std::vector<uint8_t> c = s;
      for (int f = 0, flips = 1 + static_cast<int>(rng() % 3); round > 0 && f < flips; f++)
        c[rng() % c.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      int rc = Decode(c, 0, UIH_DECODE_TO_END, all.b, 0);
      const uint32_t ranges[][2] = {{n - 32, n}, {n / 3, n / 3 + 19}, {0, 17}, {n - 1, n}};
      for (const auto& r : ranges) {
        uih_error err{};
        int prc = Decode(c, r[0], r[1], part.b, 0, &err);
        SCOPED_TRACE("iteration " + std::to_string(iter) + " round " + std::to_string(round) + " [" +
                     std::to_string(r[0]) + ", " + std::to_string(r[1]) + ")");
        if (rc == UIH_OK) {
          ASSERT_EQ(UIH_OK, prc) << err.msg;
          ASSERT_TRUE(SameEvents(all.b, r[0], part.b));
        }
        ASSERT_TRUE(TailIsClear(part.b));
        if (prc != UIH_OK) continue;
        ASSERT_EQ(r[1] - r[0], part.b->count);
        (rc == UIH_OK ? both : only_range)++;
        uih_column* ts = uih_batch_ts_column(part.b);
        for (uint32_t row = 0; row < part.b->count; row++) {
          ASSERT_TRUE(uih_column_has(ts, row));
          if (row) {
            ASSERT_LE(uih_column_i64(ts)[row - 1], uih_column_i64(ts)[row]);
          }
        }
      }
    }
  }
  EXPECT_GT(both, 1000);
  EXPECT_GT(only_range, 0) << "corruption in skipped blocks never let a range through";
}

// A range decodes the blocks it needs and steps over the others by their
// headers: broken exception positions in the first block of a column fail
// the full decode and a range there, not the last events; the checksum
// catches them all.
TEST_F(Stripe, ARangeReadsOnlyTheBlocksItNeeds) {
  SchemaPtr schema;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "v", "id": 2, "type": "id", "encodings": ["for"], "compression": "none"}]}]})", &schema);
  const uint32_t n = 1000;
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(uih_schema_group_at(schema.s, 0), n, &in, &out));
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, 1000 * i);
    uih_column_set_bits(&in.b->columns[1], i, i % 40 == 0 ? 1000000 + i : i % 7);  // outliers: exceptions
  }
  std::vector<uint8_t> s = Encode(in.b);
  // The column's first FOR block: varint min (0, one byte), w, x, the
  // packed low bits, xw, then x ascending positions: repeat the first.
  size_t at = PayloadOffset(s, 1);
  ASSERT_EQ(0, s[at]);
  unsigned w = s[at + 1], nexc = s[at + 2];
  ASSERT_GE(nexc, 2u);
  size_t positions = at + 3 + (UIH_SEQ_BLOCK * w + 7) / 8 + 1;
  s[positions + 1] = s[positions];
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, 0, n, out.b, 0, &err));
  EXPECT_STREQ("stripe column of trait 2: values are truncated or malformed", err.msg);
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, 100, 140, out.b, 0, &err));
  ASSERT_EQ(UIH_OK, Decode(s, n - 100, n, out.b, 0, &err)) << err.msg;
  ASSERT_EQ(100u, out.b->count);
  EXPECT_TRUE(SameEvents(in.b, n - 100, out.b));
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, n - 100, n, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "checksum mismatch")) << err.msg;
}

const char* kV1 = R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
  {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "item", "id": 2, "type": "id"}]}]})";
const char* kV2 = R"({"name": "s", "version": 2, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
  {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "item", "id": 2, "type": "id"},
  {"name": "liked", "id": 3, "type": "flag", "added_in": 2}]}]})";
const char* kWrongType = R"({"name": "s", "version": 2, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
  {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "item", "id": 2, "type": "float32"}]}]})";

TEST_F(Stripe, TraitAddedLaterDecodesAbsentAndWrongTypesAreErrors) {
  SchemaPtr v1, v2, wrong;
  Parse(kV1, &v1);
  Parse(kV2, &v2);
  Parse(kWrongType, &wrong);
  std::mt19937_64 rng(3);
  BatchPtr in;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v1.s, 0), 50, nullptr, 0, &in.b, nullptr));
  FillRandomBatch(rng, in.b, 50);
  std::vector<uint8_t> s = Encode(in.b);

  BatchPtr now;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v2.s, 0), 50, nullptr, 0, &now.b, nullptr));
  ASSERT_EQ(3u, now.b->ncolumns);
  ASSERT_EQ(UIH_OK, Decode(s, 0, 50, now.b));
  EXPECT_TRUE(SameEvents(in.b, 0, now.b));  // includes: trait 3 absent everywhere
  for (uint32_t r = 0; r < 50; r++) ASSERT_FALSE(uih_column_has(&now.b->columns[2], r));

  BatchPtr bad;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(wrong.s, 0), 50, nullptr, 0, &bad.b, nullptr));
  uih_error err{};
  EXPECT_EQ(UIH_ERR_TYPE_MISMATCH, Decode(s, 0, 50, bad.b, 0, &err));
  EXPECT_STREQ("stripe stores trait 2 ('item') as id, the batch asks for float32", err.msg);
}

// Added traits interleave with stored ones by id: the reader walks the
// directory and the batch together and must not lose its place.
TEST_F(Stripe, InterleavedAddedTraitsDecodeAbsent) {
  SchemaPtr a, b;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "x", "id": 3, "type": "uint32"},
    {"name": "y", "id": 6, "type": "int64"}]}]})", &a);
  Parse(R"({"name": "s", "version": 2, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "n1", "id": 2, "type": "flag", "added_in": 2},
    {"name": "x", "id": 3, "type": "uint32"}, {"name": "n2", "id": 4, "type": "id", "added_in": 2},
    {"name": "y", "id": 6, "type": "int64"}, {"name": "n3", "id": 9, "type": "float32", "added_in": 2}]}]})", &b);
  std::mt19937_64 rng(21);
  BatchPtr in, out, proj;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(a.s, 0), 300, nullptr, 0, &in.b, nullptr));
  FillRandomBatch(rng, in.b, 300);
  std::vector<uint8_t> s = Encode(in.b);
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(b.s, 0), 300, nullptr, 0, &out.b, nullptr));
  ASSERT_EQ(UIH_OK, Decode(s, 0, 300, out.b));
  EXPECT_TRUE(SameEvents(in.b, 0, out.b));
  const uint16_t ids[] = {2, 6, 9};
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(b.s, 0), 300, ids, 3, &proj.b, nullptr));
  ASSERT_EQ(UIH_OK, Decode(s, 100, 300, proj.b));
  EXPECT_TRUE(SameEvents(in.b, 100, proj.b));
}

// Every stripe stores its group's timestamp column (the schema never lets
// the event time change): one without it is corrupt, even for a decode that
// does not ask for timestamps.
TEST_F(Stripe, AStripeWithoutTheTimestampColumnIsCorrupt) {
  SchemaPtr writer, reader;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "item", "id": 2, "type": "id"}, {"name": "when", "id": 5, "type": "timestamp"}]}]})", &writer);
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "item", "id": 2, "type": "id"},
    {"name": "when", "id": 5, "type": "int64"}]}]})", &reader);
  std::mt19937_64 rng(8);
  BatchPtr in, out, item_only;
  const uih_group* rg = uih_schema_group_at(reader.s, 0);
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(writer.s, 0), 30, nullptr, 0, &in.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(rg, 30, nullptr, 0, &out.b, nullptr));
  const uint16_t item[] = {2};
  ASSERT_EQ(UIH_OK, uih_batch_create(rg, 30, item, 1, &item_only.b, nullptr));
  FillRandomBatch(rng, in.b, 30);
  std::vector<uint8_t> s = Encode(in.b);
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, 0, 30, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err));
  EXPECT_STREQ("stripe has no column for the timestamp trait 1 ('ts')", err.msg);
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, 20, 30, item_only.b, 0, &err));
  EXPECT_STREQ("stripe has no column for the timestamp trait 1 ('ts')", err.msg);
  EXPECT_EQ(0u, item_only.b->count);
  // The group's timestamp trait stored with another type: corrupt as well.
  SchemaPtr other;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "item", "id": 2, "type": "id"}, {"name": "at", "id": 9, "type": "timestamp"}]}]})", &other);
  BatchPtr odd;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(other.s, 0), 30, nullptr, 0, &odd.b, nullptr));
  FillRandomBatch(rng, odd.b, 30);
  std::vector<uint8_t> t = Encode(odd.b);
  SchemaPtr item_is_ts;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 2, "type": "timestamp"}, {"name": "at", "id": 9, "type": "int64"}]}]})", &item_is_ts);
  BatchPtr r;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(item_is_ts.s, 0), 30, nullptr, 0, &r.b, nullptr));
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(t, 0, 30, r.b, 0, &err));
  EXPECT_STREQ("stripe stores the timestamp trait 2 ('ts') as id", err.msg);
}

TEST_F(Stripe, DecodeArgumentErrors) {
  SchemaPtr v1;
  Parse(kV1, &v1);
  const char* other = R"({"name": "s", "version": 1, "groups": [{"name": "h", "id": 9, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"}]}]})";
  SchemaPtr o;
  Parse(other, &o);
  std::mt19937_64 rng(4);
  BatchPtr in, small, wrong_group;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v1.s, 0), 20, nullptr, 0, &in.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v1.s, 0), 5, nullptr, 0, &small.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(o.s, 0), 20, nullptr, 0, &wrong_group.b, nullptr));
  FillRandomBatch(rng, in.b, 20);
  std::vector<uint8_t> s = Encode(in.b);
  uih_error err{};
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, Decode(s, 0, 20, small.b, 0, &err));
  EXPECT_STREQ("stripe_decode: 20 events do not fit a batch of capacity 5", err.msg);
  EXPECT_EQ(UIH_OK, Decode(s, 15, 20, small.b, 0, &err));
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, Decode(s, 10, 21, in.b, 0, &err));
  EXPECT_STREQ("stripe_decode: range [10, 21) is outside the stripe's 20 events", err.msg);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, Decode(s, 11, 10, in.b, 0, &err));
  EXPECT_STREQ("stripe_decode: range [11, 10) begins after it ends", err.msg);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, Decode(s, 0, 20, wrong_group.b, 0, &err));
  EXPECT_STREQ("stripe belongs to feature group 1, the batch to group 9 ('h')", err.msg);
  EXPECT_EQ(UIH_OK, Decode(s, 7, 7, in.b, 0, &err));  // an empty range is fine
  EXPECT_EQ(0u, in.b->count);
}

TEST_F(Stripe, EncoderRejectsWhatAStripeCannotHold) {
  SchemaPtr v1;
  Parse(kV1, &v1);
  const uih_group* g = uih_schema_group_at(v1.s, 0);
  BatchPtr b;
  ASSERT_EQ(UIH_OK, uih_batch_create(g, 4, nullptr, 0, &b.b, nullptr));
  const uint8_t* p;
  size_t len;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encode(enc_, b.b, 1, &p, &len, &err));
  EXPECT_STREQ("stripe encode: empty batch", err.msg);
  uint32_t row;
  for (int i = 0; i < 3; i++) uih_batch_append(b.b, &row, nullptr);
  uih_column* ts = uih_batch_ts_column(b.b);
  uih_column_set_bits(ts, 0, 10);
  uih_column_set_bits(ts, 2, 30);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encode(enc_, b.b, 1, &p, &len, &err));
  EXPECT_STREQ("stripe encode: event 1 has no timestamp", err.msg);
  uih_column_set_bits(ts, 1, 40);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encode(enc_, b.b, 1, &p, &len, &err));
  EXPECT_STREQ("stripe encode: event 2 (ts 30) is earlier than event 1 (ts 40); a stripe's "
               "events are in timestamp order", err.msg);
  const uint16_t only_item[] = {2};
  BatchPtr no_ts;
  ASSERT_EQ(UIH_OK, uih_batch_create(g, 4, only_item, 1, &no_ts.b, nullptr));
  uih_batch_append(no_ts.b, &row, nullptr);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encode(enc_, no_ts.b, 1, &p, &len, &err));
  EXPECT_STREQ("stripe encode: the batch has no column for the timestamp trait 'ts'", err.msg);

  uih_stripe_encoder* e = nullptr;
  uih_stripe_encoder_opts bad_gain = {1.0, 3, 0, 0, 0, 0.2}, bad_level = {0.1, 30, 0, 0, 0, 0.2};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encoder_create(&bad_gain, &e, &err));
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encoder_create(&bad_level, &e, &err));
  EXPECT_EQ(nullptr, e);
}

// The smallest encoding wins for shapes where the winner is obvious.
// A fast encoder (one encoding per column, chosen by estimate) writes
// stripes that decode to the same events, whole, by ranges and projected,
// deterministically, inside the schema's hints and never compressed; it
// uses several encodings, and is not far from the competition's size.
TEST_F(Stripe, AFastEncoderRoundTripsInsideTheHints) {
  EncoderPtr own = MakeEncoder(1, 0);
  uih_stripe_encoder* fast = own.get();
  ASSERT_NE(nullptr, fast);
  std::mt19937_64 rng(43);
  uint32_t encodings_seen = 0;
  uint64_t fast_bytes = 0, best_bytes = 0;
  for (int iter = 0; iter < 300; iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 1 + static_cast<int>(rng() % 10)), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    uint32_t n = RandomCount(rng);
    BatchPtr in, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
    FillRandomBatch(rng, in.b, n);
    const uint8_t* p;
    size_t len;
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_stripe_encode(fast, in.b, 1, &p, &len, &err)) << err.msg;
    std::vector<uint8_t> st(p, p + len);
    ASSERT_EQ(UIH_OK, uih_stripe_encode(fast, in.b, 1, &p, &len, &err)) << err.msg;
    EXPECT_EQ(st, std::vector<uint8_t>(p, p + len)) << "deterministic";
    fast_bytes += st.size();
    best_bytes += Encode(in.b).size();
    for (uint32_t c = 0; c < in.b->ncolumns; c++) {
      uih_stripe_column_info ci{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &ci, nullptr));
      EXPECT_NE(0u, ci.encoding & in.b->columns[c].trait->encodings) << uih_encoding_name(ci.encoding);
      EXPECT_EQ(UIH_COMPRESS_NONE, ci.compression);
      encodings_seen |= ci.encoding;
    }
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
    ASSERT_TRUE(SameEvents(in.b, 0, out.b));
    uint32_t a = static_cast<uint32_t>(rng() % (n + 1)), b = a + static_cast<uint32_t>(rng() % (n - a + 1));
    ASSERT_EQ(UIH_OK, Decode(st, a, b, out.b, 0, &err)) << err.msg;
    ASSERT_TRUE(SameEvents(in.b, a, out.b));
    std::vector<uint16_t> ids{g->ts->id};
    for (uint32_t c = 0; c < in.b->ncolumns; c++)
      if (rng() % 2 && in.b->columns[c].trait != g->ts) ids.push_back(in.b->columns[c].trait->id);
    BatchPtr proj;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, ids.data(), static_cast<uint32_t>(ids.size()), &proj.b, nullptr));
    ASSERT_EQ(UIH_OK, Decode(st, 0, n, proj.b, 0, &err)) << err.msg;
    ASSERT_TRUE(SameEvents(in.b, 0, proj.b));
  }
  for (uint32_t enc : {UIH_ENC_PLAIN, UIH_ENC_DELTA, UIH_ENC_FOR, UIH_ENC_RLE, UIH_ENC_SPARSE})
    EXPECT_NE(0u, encodings_seen & enc) << uih_encoding_name(enc) << " never chosen";
  EXPECT_LT(static_cast<double>(fast_bytes), 1.6 * static_cast<double>(best_bytes))
      << fast_bytes << " bytes fast, " << best_bytes << " with every encoding competing";
  printf("fast encoder: %.2fx the bytes of the full competition\n",
         static_cast<double>(fast_bytes) / static_cast<double>(best_bytes));
}

TEST_F(Stripe, PicksTheEncodingTheDataCallsFor) {
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "constant", "id": 2, "type": "id"},
    {"name": "rare_flag", "id": 3, "type": "flag"},
    {"name": "two_values", "id": 4, "type": "id"},
    {"name": "noise", "id": 5, "type": "id", "compression": "zstd"}]}]})", &s);
  BatchPtr b;
  const uint32_t n = 4096;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(s.s, 0), n, nullptr, 0, &b.b, nullptr));
  std::mt19937_64 rng(5);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(b.b, &row, nullptr);
    uih_column_set_bits(&b.b->columns[0], i, 1700000000000ull + 1000ull * i);  // regular clock
    uih_column_set_bits(&b.b->columns[1], i, 123456789);
    uih_column_set_bits(&b.b->columns[2], i, i % 500 == 0);
    uih_column_set_bits(&b.b->columns[3], i, (rng() % 2) ? 1ull << 60 : 77);
    uih_column_set_bits(&b.b->columns[4], i, rng());
  }
  std::vector<uint8_t> st = Encode(b.b);
  auto col = [&](uint32_t i) {
    uih_stripe_column_info ci{};
    EXPECT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), i, &ci, nullptr));
    return ci;
  };
  // A regular clock: constant deltas pack to width 0, anchors are all that is left.
  EXPECT_TRUE(col(0).encoding == UIH_ENC_DELTA || col(0).encoding == UIH_ENC_DELTA2) << col(0).encoding;
  EXPECT_LE(col(0).bytes, 32u * 12);
  EXPECT_LT(col(1).bytes, 64u * 11);                // a constant costs almost nothing
  EXPECT_EQ(UIH_ENC_SPARSE, col(2).encoding);
  // Two values: a dictionary, or the scaled frame of reference (their
  // difference is the common step): one bit per value either way.
  EXPECT_TRUE(col(3).encoding == UIH_ENC_DICT || (col(3).encoding == UIH_ENC_FOR && col(3).scaled))
      << col(3).encoding;
  EXPECT_LT(col(3).bytes, n / 8 + 128);
  EXPECT_EQ(UIH_COMPRESS_NONE, col(4).compression)  // zstd cannot shrink noise by 10%
      << "kept a compression that does not pay";
  EXPECT_GE(col(4).bytes, n * 8u);
}

// Byte-stream split is plain's size until compressed: float columns are
// judged by their size after the compression step, so on smooth data
// (exponents and high mantissa bytes repeat) split + compression wins over
// plain + compression, and decodes back bit-exact. Without compression the
// two tie, and split is never kept.
TEST_F(Stripe, SmoothFloatsGetByteStreamSplitAndCompression) {
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "f", "id": 2, "type": "float32"},
    {"name": "f_plain", "id": 3, "type": "float32", "encodings": ["plain"]},
    {"name": "f_raw", "id": 4, "type": "float32", "compression": "none"}]}]})", &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  for (uint32_t n : {256u, 4096u}) {
    BatchPtr b, out;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &b.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &out.b, nullptr));
    for (uint32_t i = 0; i < n; i++) {
      uint32_t row;
      uih_batch_append(b.b, &row, nullptr);
      uih_column_set_bits(&b.b->columns[0], i, 1000ull * i);
      float f = 20.0f + 5.0f * static_cast<float>(std::sin(i / 50.0));  // a smooth signal
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      for (uint32_t c = 1; c < 4; c++) uih_column_set_bits(&b.b->columns[c], i, bits);
    }
    std::vector<uint8_t> st = Encode(b.b);
    EXPECT_EQ(st, Encode(b.b)) << "deterministic";
    uih_stripe_column_info f{}, plain{}, raw{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, &f, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 2, &plain, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 3, &raw, nullptr));
    EXPECT_EQ(UIH_ENC_BSS, f.encoding) << "n " << n;
    EXPECT_NE(UIH_COMPRESS_NONE, f.compression) << "n " << n;
    EXPECT_EQ(UIH_ENC_PLAIN, plain.encoding);
    EXPECT_LT(f.bytes, plain.bytes) << "n " << n << ": split + compression beats plain + compression";
    // Uncompressed, split only ties plain (the narrow band of bit
    // patterns makes the sparse encoding's FOR-packed values smaller still).
    EXPECT_NE(UIH_ENC_BSS, raw.encoding);
    EXPECT_EQ(UIH_COMPRESS_NONE, raw.compression);
    EXPECT_LE(raw.bytes, 4 * n);
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b));
    ASSERT_EQ(n, out.b->count);
    EXPECT_TRUE(SameEvents(b.b, 0, out.b));
    ASSERT_EQ(UIH_OK, Decode(st, n - 70, n, out.b));
    ASSERT_EQ(70u, out.b->count);
    EXPECT_TRUE(SameEvents(b.b, n - 70, out.b));
  }
}

// Every single-bit flip of a small stripe is caught by the checksum, and
// without verification decodes to an error or to some valid batch; every
// truncation is an error. Either way: no crash, no out-of-bounds read
// (the sanitizer build runs this too).
TEST_F(Stripe, EveryBitFlipAndTruncationIsHandled) {
  std::mt19937_64 rng(11);
  EncoderPtr keep = MakeEncoder(0, 1);
  uih_stripe_encoder* no_sum = keep.get();
  ASSERT_NE(nullptr, no_sum);
  for (int iter = 0; iter < 8; iter++) {
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 4), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    const uint32_t n = iter < 4 ? 20 : 200;
    BatchPtr in, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
    FillRandomBatch(rng, in.b, n);
    // Half the stripes end with a checksum of their own, half leave it to
    // their container: a flip of the flag that says which must be caught.
    const bool with_sum = iter % 2 == 0;
    std::vector<uint8_t> s = Encode(in.b);
    if (!with_sum) {
      const uint8_t* p = nullptr;
      size_t len = 0;
      ASSERT_EQ(UIH_OK, uih_stripe_encode(no_sum, in.b, 1, &p, &len, nullptr));
      ASSERT_EQ(s.size() - UIH_STRIPE_CHECKSUM_SIZE, len);
      s.assign(p, p + len);
    }
    // Structure checks must catch every flip of the fixed header (format
    // version and flags in byte 0, the group's varint in byte 1; count and
    // timestamps follow as varints:
    // the full decode matches the timestamps against them); the checksum's
    // own bits go unnoticed without verification (nothing else reads them).
    const size_t fixed = 2, sum = s.size() - (with_sum ? UIH_STRIPE_CHECKSUM_SIZE : 0);
    int undetected = 0, same = 0;
    for (size_t bit = 0; bit < s.size() * 8; bit++) {
      std::vector<uint8_t> c = s;
      c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      uih_error err{};
      if (with_sum) {
        ASSERT_NE(UIH_OK, Decode(c, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err))
            << "bit " << bit;
        ASSERT_NE('\0', err.msg[0]);
      }
      int rc = Decode(c, 0, UIH_DECODE_TO_END, out.b, 0, &err);
      ASSERT_TRUE(TailIsClear(out.b)) << "bit " << bit;
      if (rc != UIH_OK) {
        ASSERT_NE('\0', err.msg[0]);
        continue;
      }
      ASSERT_GE(bit / 8, fixed) << "a flip of the fixed header went unnoticed: bit " << bit;
      if (bit / 8 >= sum) continue;  // the checksum: only verification reads it
      undetected++;
      same += out.b->count == n && SameEvents(in.b, 0, out.b);
    }
    // Every flip of the checksum is noticed only by verification.
    for (size_t bit = sum * 8; bit < s.size() * 8; bit++) {
      std::vector<uint8_t> c = s;
      c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      EXPECT_EQ(UIH_OK, Decode(c, 0, UIH_DECODE_TO_END, out.b, 0)) << "bit " << bit;
    }
    // Most flips the structure checks let through are value bits: they
    // change the events (the rest, about 2-10% here, fall in the schema
    // version, padding bits and the like).
    EXPECT_LT(same * 4, undetected) << same << " of " << undetected << " flips change nothing";
    for (size_t len = 0; len < s.size(); len++) {
      std::vector<uint8_t> c(s.begin(), s.begin() + static_cast<long>(len));
      uih_error err{};
      ASSERT_NE(UIH_OK, Decode(c, 0, UIH_DECODE_TO_END, out.b, 0, &err)) << "length " << len;
      ASSERT_EQ(UIH_ERR_CORRUPTION, err.code) << err.msg;
    }
  }
}

// The AVX2 decoding paths (unpacking, delta sums with the sign flip and the
// timestamp order check fused in) and the scalar ones give the same result
// for every single-bit flip: same code, same message, same events, over the
// whole stripe and over a range. Timestamps decode with delta encodings in
// most of these stripes, so flips there reach the fused order check.
TEST_F(Stripe, VectorAndScalarPathsAgreeOnEveryBitFlip) {
  if (!uih_intseq_set_simd(1)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937_64 rng(12);
  int delta_ts = 0, failures = 0, successes = 0;
  for (int iter = 0; iter < 8; iter++) {
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 2), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    const uint32_t n = iter % 2 ? 150 : 300;
    BatchPtr in, out[2];
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &in.b, nullptr));
    for (auto& o : out) ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &o.b, nullptr));
    FillRandomBatch(rng, in.b, n);
    std::vector<uint8_t> s = Encode(in.b);
    uih_stripe_column_info ts{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), 0, &ts, nullptr));
    delta_ts += ts.encoding == UIH_ENC_DELTA || ts.encoding == UIH_ENC_DELTA2;
    for (size_t bit = 0; bit < s.size() * 8; bit++) {
      std::vector<uint8_t> c = s;
      c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      uint32_t begin = bit % 3 == 0 ? static_cast<uint32_t>(rng() % n) : 0;
      uint32_t end = bit % 3 == 0 ? begin + static_cast<uint32_t>(rng() % (n - begin + 1)) : UIH_DECODE_TO_END;
      int rc[2];
      uih_error err[2]{};
      for (int simd = 0; simd < 2; simd++) {
        uih_intseq_set_simd(simd);
        rc[simd] = Decode(c, begin, end, out[simd].b, 0, &err[simd]);
      }
      uih_intseq_set_simd(1);
      ASSERT_EQ(rc[0], rc[1]) << "bit " << bit << ": " << err[0].msg << " / " << err[1].msg;
      ASSERT_STREQ(err[0].msg, err[1].msg) << "bit " << bit;
      ASSERT_TRUE(SameEvents(out[0].b, 0, out[1].b)) << "bit " << bit;
      (rc[0] == UIH_OK ? successes : failures)++;
      // Whatever a flip did, timestamps that decode are in order.
      const int64_t* t = uih_column_i64(&out[1].b->columns[0]);
      for (uint32_t r = 1; rc[1] == UIH_OK && r < out[1].b->count; r++)
        ASSERT_LE(t[r - 1], t[r]) << "bit " << bit << " row " << r;
    }
  }
  EXPECT_GE(delta_ts, 4);
  EXPECT_GT(failures, 1000);
  EXPECT_GT(successes, 1000);
}

TEST_F(Stripe, HeaderErrorsNameTheProblem) {
  SchemaPtr v1;
  Parse(kV1, &v1);
  BatchPtr in;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v1.s, 0), 10, nullptr, 0, &in.b, nullptr));
  std::mt19937_64 rng(9);
  FillRandomBatch(rng, in.b, 10);
  std::vector<uint8_t> s = Encode(in.b);
  uih_stripe_info info;
  uih_error err{};
  std::vector<uint8_t> c = s;
  for (uint8_t first : {0x04, 0x14, 0x00, 0xff}) {  // version 4 (with or without a checksum), 0, 15
    c[0] = first;
    EXPECT_EQ(UIH_ERR_NOT_SUPPORTED, uih_stripe_read_info(c.data(), c.size(), &info, &err));
    EXPECT_EQ("stripe format version " + std::to_string(first & 15) +
                  " is not supported (this build reads versions 1 to 3)",
              std::string(err.msg));
  }
  for (uint8_t first : {0x01, 0x11, 0x12, 0xf2}) {  // version 1 without its magic, 2 with flags in its first byte
    c[0] = first;
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_stripe_read_info(c.data(), c.size(), &info, &err));
    char want[160];
    std::snprintf(want, sizeof want,
                  "stripe offset 0: first byte 0x%02x is no format's (version 1 starts with \"UIHS\", 2 with "
                  "0x02, 3 with 0x03 or 0x13)",
                  first);
    EXPECT_STREQ(want, err.msg);
  }
  c = s;
  c[0] = 'U';  // the first byte of a version-1 stripe's magic
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_stripe_read_info(c.data(), c.size(), &info, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "magic")) << err.msg;
  c = s;
  ASSERT_EQ(0x13, c[0]);  // format 3, the checksum flag in bit 4
  c[0] |= 0x40;
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_stripe_read_info(c.data(), c.size(), &info, &err));
  EXPECT_STREQ("stripe offset 0: unknown flags 0x5 in bits 4-7", err.msg);
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_stripe_read_info(s.data(), 5, &info, &err));
  EXPECT_STREQ("stripe is 5 bytes, shorter than the smallest header (7 bytes)", err.msg);
  c = s;
  c[s.size() - 1] ^= 1;
  BatchPtr out;
  ASSERT_EQ(UIH_OK, uih_batch_create(uih_schema_group_at(v1.s, 0), 10, nullptr, 0, &out.b, nullptr));
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(c, 0, 10, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "checksum mismatch")) << err.msg;
  EXPECT_EQ(UIH_OK, Decode(c, 0, 10, out.b, 0, &err)) << "checksum not asked for: not checked";
}

// The schema's hints bound the choices: every column's encoding is one the
// trait allows, and its compression the one it names (or none, when that
// does not pay).
TEST_F(Stripe, ChoicesStayInsideTheSchemaHints) {
  std::mt19937_64 rng(13);
  int restricted = 0, hinted_compressed = 0;
  for (int iter = 0; iter < 300; iter++) {
    SchemaPtr schema;
    Parse(uih_test::RandomSchemaJson(rng, 8), &schema);
    const uih_group* g = uih_schema_group_at(schema.s, 0);
    uint32_t n = RandomCount(rng);
    BatchPtr in;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &in.b, nullptr));
    FillRandomBatch(rng, in.b, n);
    std::vector<uint8_t> s = Encode(in.b);
    for (uint32_t c = 0; c < in.b->ncolumns; c++) {
      const uih_trait* t = in.b->columns[c].trait;
      uih_stripe_column_info ci{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), c, &ci, nullptr));
      SCOPED_TRACE("iteration " + std::to_string(iter) + " trait " + t->name);
      EXPECT_NE(0u, ci.encoding & t->encodings) << uih_encoding_name(ci.encoding) << " not in the hint";
      restricted += t->encodings != uih_encodings_for_type(t->type);
      if (t->compression == UIH_COMPRESS_AUTO) continue;
      if (ci.compression != UIH_COMPRESS_NONE) {
        EXPECT_EQ(t->compression, ci.compression);
        hinted_compressed++;
      }
    }
  }
  EXPECT_GT(restricted, 300);
  EXPECT_GT(hinted_compressed, 20);
}

// The competition keeps the smallest form: a column free to take any
// encoding is exactly as long as the shortest of the same values' columns
// each held to one encoding (no compression, no dictionary, so lengths are
// the encodings' own). The values are drawn around the cases the encoder
// decides without measuring (run-length forms without a repeat, sparse
// forms without a zero: a single repeat or zero, or none, at any place).
TEST_F(Stripe, TheCompetitionKeepsTheShortestOfEveryEncodingAlone) {
  static const std::pair<const char*, uint32_t> kForms[] = {
      {"plain", UIH_ENC_PLAIN}, {"delta", UIH_ENC_DELTA}, {"delta2", UIH_ENC_DELTA2}, {"for", UIH_ENC_FOR},
      {"dict", UIH_ENC_DICT},   {"rle", UIH_ENC_RLE},     {"sparse", UIH_ENC_SPARSE}};
  static const std::pair<const char*, uih_type> kTypes[] = {
      {"id", UIH_TYPE_ID}, {"int64", UIH_TYPE_INT64}, {"uint32", UIH_TYPE_UINT32}, {"category", UIH_TYPE_CATEGORY}};
  for (const auto& [type, type_code] : kTypes) {
    std::string traits = R"({"name": "ts", "id": 1, "type": "timestamp"})";
    traits += std::string(R"(, {"name": "any", "id": 2, "compression": "none", "type": ")") + type + "\"}";
    uint16_t id = 3;
    std::vector<std::string> alone;
    for (const auto& [f, bit] : kForms) {
      if (!(uih_encodings_for_type(type_code) & bit)) continue;
      traits += ", {\"name\": \"" + std::string(f) + "\", \"id\": " + std::to_string(id++) +
                R"(, "compression": "none", "type": ")" + type + "\", \"encodings\": [\"" + f + "\"]}";
      alone.push_back(f);
    }
    SchemaPtr s;
    Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [)" +
              traits + "]}]}",
          &s);
    const uih_group* g = uih_schema_group_at(s.s, 0);
    std::mt19937_64 rng(static_cast<uint64_t>(type_code));
    // Values as the encoder widens them (a signed type's sign bit flipped):
    // a zero or a repeat here is one there.
    const uint64_t flip = type_code == UIH_TYPE_INT64 ? 1ull << 63 : 0;
    int without_repeat = 0, without_zero = 0;
    for (int iter = 0; iter < 400; iter++) {
      const uint32_t n = RandomCount(rng);
      BatchPtr b;
      ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &b.b, nullptr));
      const uint64_t limit = uih_type_width(type_code) == 4 ? 0xffffffffull : ~0ull;
      const int shape = static_cast<int>(rng() % 6);
      std::vector<uint64_t> v(n);
      for (uint32_t i = 0; i < n; i++) {
        switch (shape) {
          case 0: v[i] = rng() & limit; break;                                  // noise
          case 1: v[i] = 1 + i * (1 + rng() % 3); break;                        // ascending, no repeat, no zero
          case 2: v[i] = i > 0 && rng() % 16 ? v[i - 1] : rng() % 4; break;      // long runs, zeros among them
          case 3: v[i] = (rng() % 8 ? 0 : 1 + rng() % 1000); break;              // mostly zeros
          default: v[i] = 1000 + i * 7 + (rng() % 3) * 3; break;                 // near a step
        }
      }
      if (n >= 2 && rng() % 2) v[1 + rng() % (n - 1)] = v[0];  // exactly one more repeat or zero, anywhere
      if (rng() % 3 == 0) v[rng() % n] = 0;
      bool repeat = false, zero = false;
      for (uint32_t i = 0; i < n; i++) repeat |= i > 0 && v[i] == v[i - 1], zero |= v[i] == 0;
      without_repeat += !repeat;
      without_zero += !zero;
      for (uint32_t i = 0; i < n; i++) {
        uint32_t row;
        ASSERT_EQ(UIH_OK, uih_batch_append(b.b, &row, nullptr));
        uih_column_set_bits(&b.b->columns[0], i, 1700000000000ull + i);
        for (uint32_t c = 1; c < b.b->ncolumns; c++) uih_column_set_bits(&b.b->columns[c], i, v[i] ^ flip);
      }
      std::vector<uint8_t> st = Encode(b.b);
      ASSERT_FALSE(st.empty());
      uih_stripe_column_info any{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, &any, nullptr));
      uint32_t shortest = UINT32_MAX;
      std::string which;
      for (uint32_t c = 2; c < b.b->ncolumns; c++) {
        uih_stripe_column_info one{};
        ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &one, nullptr));
        if (one.bytes < shortest) shortest = one.bytes, which = alone[c - 2];
      }
      ASSERT_EQ(shortest, any.bytes) << type << ", shape " << shape << ", " << n << " values: "
                                     << uih_encoding_name(any.encoding) << " chosen, " << which << " alone is shorter";
    }
    EXPECT_GT(without_repeat, 50) << type;
    EXPECT_GT(without_zero, 50) << type;
  }
}

// A column is compressed only when that saves at least min_compression_gain
// of its raw bytes: just below its actual saving it is compressed, just
// above it is not.
TEST_F(Stripe, CompressionIsKeptOnlyWhenItSavesTheMargin) {
  SchemaPtr schema;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "v", "id": 2, "type": "uint32", "encodings": ["plain"], "compression": "zstd"}]}]})", &schema);
  const uint32_t n = 2048;
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(uih_schema_group_at(schema.s, 0), n, &in, &out));
  std::mt19937_64 rng(14);
  uint64_t few[40];
  for (auto& f : few) f = rng() & 0xffffffffu;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, 1000ull * i);
    uih_column_set_bits(&in.b->columns[1], i, few[rng() % 40]);  // plain bytes zstd can shrink
  }
  auto encode_with = [&](double gain, uih_stripe_column_info* ci, int no_compression = 0) {
    uih_stripe_encoder_opts o = {gain, 3, no_compression, 0, 0, 0.20};
    uih_stripe_encoder* e = nullptr;
    ASSERT_EQ(UIH_OK, uih_stripe_encoder_create(&o, &e, nullptr));
    const uint8_t* p;
    size_t len;
    ASSERT_EQ(UIH_OK, uih_stripe_encode(e, in.b, 1, &p, &len, nullptr));
    std::vector<uint8_t> st(p, p + len);
    uih_stripe_encoder_free(e);
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, ci, nullptr));
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b));
    ASSERT_TRUE(SameEvents(in.b, 0, out.b));
  };
  const double raw = 4.0 * n;  // plain, every event present
  uih_stripe_column_info any{}, below{}, above{};
  encode_with(0.0, &any);
  ASSERT_EQ(UIH_COMPRESS_ZSTD, any.compression);
  const double saving = 1.0 - any.bytes / raw;  // the stored size counts the raw-length varint too
  ASSERT_GT(saving, 0.2);
  encode_with(saving - 0.001, &below);
  EXPECT_EQ(UIH_COMPRESS_ZSTD, below.compression);
  EXPECT_EQ(any.bytes, below.bytes);
  encode_with(saving + 0.001, &above);
  EXPECT_EQ(UIH_COMPRESS_NONE, above.compression);
  EXPECT_EQ(static_cast<uint32_t>(raw), above.bytes);
  // no_compression: not even tried, whatever it would gain; the same events back.
  uih_stripe_column_info never{};
  encode_with(0.0, &never, 1);
  EXPECT_EQ(UIH_COMPRESS_NONE, never.compression);
  EXPECT_EQ(static_cast<uint32_t>(raw), never.bytes);
}

// A bit-packed payload shorter than 256 bytes is not offered to a
// compressor when the schema leaves compression to the codec, however well
// it would compress; from 256 bytes on it is; a trait that names its
// compressor gets it tried at any length from 32 bytes, and a plain
// payload is offered under 256 bytes too. The values: 4-bit codes in a
// period of 16, which LZ4 and ZSTD shrink to almost nothing.
TEST_F(Stripe, ShortPackedPayloadsAreCompressedOnlyWhenTheSchemaAsks) {
  SchemaPtr schema;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "v", "id": 2, "type": "uint32", "encodings": ["for"]},
    {"name": "w", "id": 3, "type": "uint32", "encodings": ["for"], "compression": "zstd"},
    {"name": "p", "id": 4, "type": "uint32", "encodings": ["plain"]}]}]})", &schema);
  uint32_t seen_short = 0, seen_long = 0;
  for (uint32_t n : {40u, 100u, 200u, 400u, 480u, 486u, 488u, 520u, 1000u, 4000u}) {
    SCOPED_TRACE("n " + std::to_string(n));
    BatchPtr in, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(uih_schema_group_at(schema.s, 0), n, &in, &out));
    for (uint32_t i = 0; i < n; i++) {
      uint32_t row;
      uih_batch_append(in.b, &row, nullptr);
      uih_column_set_bits(&in.b->columns[0], i, 1000ull * i);
      uih_column_set_bits(&in.b->columns[1], i, (i * 7) % 16);
      uih_column_set_bits(&in.b->columns[2], i, (i * 7) % 16);
      uih_column_set_bits(&in.b->columns[3], i, (i * 7) % 16);
    }
    std::vector<uint8_t> st = Encode(in.b);
    uih_stripe_column_info v{}, w{}, p{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, &v, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 2, &w, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 3, &p, nullptr));
    ASSERT_EQ(UIH_ENC_FOR, v.encoding);
    ASSERT_EQ(UIH_ENC_PLAIN, p.encoding);
    EXPECT_NE(UIH_COMPRESS_NONE, p.compression) << "plain: offered under 256 bytes too";
    EXPECT_LE(p.bytes, 4 * n * 9 / 10);
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b));
    EXPECT_TRUE(SameEvents(in.b, 0, out.b));
    const size_t packed = n / 2 + 3 * ((n + 127) / 128);  // 4 bits a value, a 3-byte header a block
    if (packed < 32) {
      EXPECT_EQ(UIH_COMPRESS_NONE, v.compression);
      EXPECT_EQ(UIH_COMPRESS_NONE, w.compression) << "under 32 bytes nothing is tried";
      continue;
    }
    if (packed < 256) {
      seen_short++;
      EXPECT_EQ(UIH_COMPRESS_NONE, v.compression);
      EXPECT_EQ(packed, v.bytes);
    } else {
      seen_long++;
      EXPECT_NE(UIH_COMPRESS_NONE, v.compression);
      EXPECT_LT(v.bytes, packed / 4);
    }
    EXPECT_EQ(UIH_COMPRESS_ZSTD, w.compression) << "named in the schema: tried from 32 bytes";
    EXPECT_LT(w.bytes, packed);
  }
  EXPECT_EQ(5u, seen_short);  // 100 .. 486 events: 53 .. 255 bytes
  EXPECT_EQ(4u, seen_long);   // 488 .. 4000: 256 .. 2096
}

// After warm-up a decoder allocates nothing: the same stripes (every
// encoding, presence, both compressors, large and small), decoded whole,
// by ranges and by projections again and again, leave the heap alone and
// its scratch buffers where they were.
TEST_F(Stripe, NoAllocationPerCallAfterWarmUp) {
  if (uih_test_allocations() < 0) GTEST_SKIP() << "this build cannot count allocations";
  {
    int64_t before = uih_test_allocations();
    void* volatile p = malloc(24);
    free(p);
    if (uih_test_allocations() == before) GTEST_SKIP() << "allocations are not being counted";
  }
  std::mt19937_64 rng(15);
  struct Case {
    SchemaPtr schema;
    BatchPtr all, part, proj;
    std::vector<uint8_t> stripe;
  };
  std::vector<std::unique_ptr<Case>> cases;
  uint32_t compressed = 0;
  for (int i = 0; i < 24; i++) {
    auto c = std::make_unique<Case>();
    Parse(uih_test::RandomSchemaJson(rng, 6), &c->schema);
    const uih_group* g = uih_schema_group_at(c->schema.s, 0);
    uint32_t n = i % 4 == 0 ? 20000 : RandomCount(rng);
    BatchPtr in;
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &in.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &c->all.b, nullptr));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &c->part.b, nullptr));
    const uint16_t ids[] = {g->traits[1].id, g->traits[3].id};
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, ids, 2, &c->proj.b, nullptr));
    FillRandomBatch(rng, in.b, n);
    c->stripe = Encode(in.b);
    for (uint32_t k = 0; k < in.b->ncolumns; k++) {
      uih_stripe_column_info ci{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(c->stripe.data(), c->stripe.size(), k, &ci, nullptr));
      compressed += ci.compression != UIH_COMPRESS_NONE;
    }
    cases.push_back(std::move(c));
  }
  ASSERT_GT(compressed, 10u);
  auto decode_all = [&] {
    for (auto& c : cases) {
      uint32_t n = static_cast<uint32_t>(c->all.b->capacity);
      ASSERT_EQ(UIH_OK, Decode(c->stripe, 0, UIH_DECODE_TO_END, c->all.b));
      ASSERT_EQ(UIH_OK, Decode(c->stripe, n > 32 ? n - 32 : 0, n, c->part.b));
      ASSERT_EQ(UIH_OK, Decode(c->stripe, n / 3, n / 2, c->part.b, 0));
      ASSERT_EQ(UIH_OK, Decode(c->stripe, 0, n, c->proj.b, 0));
    }
  };
  decode_all();  // warm-up: the decoder sizes its scratch to the largest stripe
  const uih_stripe_decoder* d = dec_;
  const uint64_t* vals = d->vals;
  const uint8_t* raw = d->raw;
  size_t cap = d->cap, raw_cap = d->raw_cap, dir_cap = d->dir_cap;
  int64_t before = uih_test_allocations();
  for (int rep = 0; rep < 3; rep++) decode_all();
  EXPECT_EQ(before, uih_test_allocations()) << "allocations during decoding after warm-up";
  EXPECT_EQ(vals, d->vals);
  EXPECT_EQ(raw, d->raw);
  EXPECT_EQ(cap, d->cap);
  EXPECT_EQ(raw_cap, d->raw_cap);
  EXPECT_EQ(dir_cap, d->dir_cap);
}

// A projection reads only its columns: bytes of another column, corrupted
// (and the checksum fixed up to match), fail a full decode but not a
// projected one, which still gives the right values, checksum verified or
// not.
TEST_F(Stripe, UnrequestedColumnsAreNotRead) {
  SchemaPtr schema;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id", "encodings": ["for"], "compression": "none"},
    {"name": "watch", "id": 3, "type": "uint32"}]}]})", &schema);
  const uih_group* g = uih_schema_group_at(schema.s, 0);
  const uint32_t n = 500;
  BatchPtr in, all, proj;
  ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &in.b, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &all.b, nullptr));
  const uint16_t ids[] = {1, 3};
  ASSERT_EQ(UIH_OK, uih_batch_create(g, n, ids, 2, &proj.b, nullptr));
  std::mt19937_64 rng(16);
  FillRandomBatch(rng, in.b, n);
  std::vector<uint8_t> s = Encode(in.b);
  uih_stripe_column_info item{};
  ASSERT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), 1, &item, nullptr));
  ASSERT_EQ(UIH_ENC_FOR, item.encoding);
  // 0xff everywhere: the first block's minimum becomes an overlong varint.
  size_t at = PayloadOffset(s, 1);
  std::memset(s.data() + at, 0xff, item.bytes);
  uint32_t sum = static_cast<uint32_t>(XXH3_64bits(s.data(), s.size() - 4));
  std::memcpy(s.data() + s.size() - 4, &sum, 4);
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(s, 0, UIH_DECODE_TO_END, all.b, UIH_DECODE_VERIFY_CHECKSUM, &err));
  EXPECT_STREQ("stripe column of trait 2: values are truncated or malformed", err.msg);
  for (unsigned flags : {0u, static_cast<unsigned>(UIH_DECODE_VERIFY_CHECKSUM)}) {
    ASSERT_EQ(UIH_OK, Decode(s, 0, UIH_DECODE_TO_END, proj.b, flags, &err)) << err.msg;
    ASSERT_EQ(n, proj.b->count);
    EXPECT_TRUE(SameEvents(in.b, 0, proj.b));
    ASSERT_EQ(UIH_OK, Decode(s, n - 50, n, proj.b, flags, &err)) << err.msg;
    ASSERT_EQ(50u, proj.b->count);
    EXPECT_TRUE(SameEvents(in.b, n - 50, proj.b));
  }
}

// Presence and the sparse encoding's position forms each get picked where
// they are smallest: a bitmap for columns present at most events, a
// position list for rare ones; sparse values place their non-zero entries
// with bits when they are common, with a list when rare.
TEST_F(Stripe, PresenceAndSparseFormsFitTheData) {
  SchemaPtr schema;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "dense", "id": 2, "type": "uint32", "compression": "none"},
    {"name": "rare", "id": 3, "type": "uint32", "compression": "none"},
    {"name": "none", "id": 4, "type": "uint32", "compression": "none"},
    {"name": "sparse_common", "id": 5, "type": "id", "encodings": ["sparse"], "compression": "none"},
    {"name": "sparse_rare", "id": 6, "type": "id", "encodings": ["sparse"], "compression": "none"}]}]})",
        &schema);
  const uih_group* g = uih_schema_group_at(schema.s, 0);
  const uint32_t n = 3000;
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
  std::mt19937_64 rng(17);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, 1000ull * i);
    if (rng() % 10 != 0) uih_column_set_bits(&in.b->columns[1], i, rng() % 1000);  // 90% present
    if (rng() % 200 == 0) uih_column_set_bits(&in.b->columns[2], i, rng() % 1000);  // 0.5% present
    uih_column_set_bits(&in.b->columns[4], i, rng() % 3 == 0 ? rng() % 1000 + 1 : 0);  // a third non-zero
    uih_column_set_bits(&in.b->columns[5], i, rng() % 300 == 0 ? rng() % 1000 + 1 : 0);  // rarely non-zero
  }
  std::vector<uint8_t> s = Encode(in.b);
  auto col = [&](uint32_t c) {
    uih_stripe_column_info ci{};
    EXPECT_EQ(UIH_OK, uih_stripe_column_at(s.data(), s.size(), c, &ci, nullptr));
    return ci;
  };
  EXPECT_EQ(UIH_PRESENCE_ALL, col(0).presence);
  EXPECT_EQ(UIH_PRESENCE_BITMAP, col(1).presence);
  EXPECT_EQ(UIH_PRESENCE_LIST, col(2).presence);
  EXPECT_EQ(UIH_PRESENCE_NONE, col(3).presence);
  EXPECT_EQ(0u, col(3).bytes);
  // The sparse payload (every event present, no compression): varint z,
  // then the form byte, 0 for bits, 1 for a position list.
  auto form = [&](uint32_t c) {
    EXPECT_EQ(UIH_ENC_SPARSE, col(c).encoding);
    EXPECT_EQ(UIH_PRESENCE_ALL, col(c).presence);
    uih_cursor cur = uih_cursor_make(s.data() + PayloadOffset(s, c), col(c).bytes);
    uih_cursor_varint(&cur);
    return uih_cursor_u8(&cur);
  };
  EXPECT_EQ(0, form(4));
  EXPECT_EQ(1, form(5));
  ASSERT_EQ(UIH_OK, Decode(s, 0, UIH_DECODE_TO_END, out.b));
  ASSERT_EQ(n, out.b->count);
  EXPECT_TRUE(SameEvents(in.b, 0, out.b));
  ASSERT_EQ(UIH_OK, Decode(s, 1234, 2345, out.b));
  ASSERT_EQ(1111u, out.b->count);
  EXPECT_TRUE(SameEvents(in.b, 1234, out.b));
}

}  // namespace

namespace {

// What a reader would refuse is refused at encode, with what was expected.
TEST_F(Stripe, EncodeRefusesWhatAReaderWouldRefuse) {
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 2, "groups": [{"name": "g", "id": 1, "stripe_events": 8, "traits": [
        {"name": "ts", "id": 1, "type": "timestamp"},
        {"name": "kind", "id": 2, "type": "category", "categories": ["a", "b", "c"]},
        {"name": "new", "id": 3, "type": "int64", "added_in": 2},
        {"name": "old", "id": 4, "type": "int64", "dropped_in": 2}]}]})",
        &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  ASSERT_EQ(2u, g->schema_version);
  auto make = [&](std::vector<uint16_t> ids, uint32_t n, uint32_t kind) {
    BatchPtr b;
    EXPECT_EQ(UIH_OK, uih_batch_create(g, 16, ids.data(), static_cast<uint32_t>(ids.size()), &b.b, nullptr));
    for (uint32_t i = 0; i < n; i++) {
      uint32_t row;
      uih_batch_append(b.b, &row, nullptr);
      for (uint32_t c = 0; c < b.b->ncolumns; c++)
        uih_column_set_bits(&b.b->columns[c], row, b.b->columns[c].trait->id == 2 ? kind : 100 + i);
    }
    return b;
  };
  auto refused = [&](const uih_batch* b, uint32_t version, int code, const std::string& msg) {
    const uint8_t* p;
    size_t n;
    uih_error err{};
    EXPECT_EQ(code, uih_stripe_encode(enc_, b, version, &p, &n, &err));
    EXPECT_EQ(msg, std::string(err.msg));
  };
  BatchPtr ok = make({1, 2}, 8, 2);
  EXPECT_FALSE(Encode(ok.b, 2).empty());
  EXPECT_FALSE(Encode(ok.b, 1).empty());
  refused(ok.b, 0, UIH_ERR_INVALID_ARGUMENT, "stripe encode: schema version 0, the schema of group 'g' has versions 1..2");
  refused(ok.b, 3, UIH_ERR_INVALID_ARGUMENT, "stripe encode: schema version 3, the schema of group 'g' has versions 1..2");
  BatchPtr nine = make({1, 2}, 9, 0);
  refused(nine.b, 2, UIH_ERR_OUT_OF_RANGE,
          "stripe encode: 9 events, group 'g' has stripes of at most 8 (stripe_events) but for a burst of one "
          "timestamp (at most 65536 events)");
  // A burst: more events than a stripe holds, every one at one timestamp,
  // is one stripe, and decodes whole.
  BatchPtr burst = make({1, 2}, 12, 1);
  for (uint32_t r = 0; r < burst.b->count; r++) uih_column_set_bits(&burst.b->columns[0], r, 500);
  const auto bytes = Encode(burst.b, 2);
  ASSERT_FALSE(bytes.empty());
  uih_stripe_info info;
  ASSERT_EQ(UIH_OK, uih_stripe_read_info(bytes.data(), bytes.size(), &info, nullptr));
  EXPECT_EQ(12u, info.count);
  EXPECT_EQ(500, info.min_ts);
  EXPECT_EQ(500, info.max_ts);
  BatchPtr added = make({1, 3}, 2, 0);
  EXPECT_FALSE(Encode(added.b, 2).empty());
  refused(added.b, 1, UIH_ERR_INVALID_ARGUMENT,
          "stripe encode: trait 'new' (3) was added in schema version 2, after version 1");
  BatchPtr dropped = make({1, 4}, 2, 0);
  EXPECT_FALSE(Encode(dropped.b, 1).empty());
  refused(dropped.b, 2, UIH_ERR_INVALID_ARGUMENT,
          "stripe encode: trait 'old' (4) was dropped in schema version 2; a version-2 stripe cannot hold it");
  BatchPtr code3 = make({1, 2}, 3, 3);
  refused(code3.b, 2, UIH_ERR_OUT_OF_RANGE,
          "stripe encode: event 0: trait 'kind' has category code 3, its vocabulary has 3 (0..2)");
}

}  // namespace

namespace {

// A batch of `n` events shaped like real logs with coarse clocks: day-
// granular timestamps kept in seconds, prices in cents that are whole
// dollars (a tenth of them absent), ids a fixed stride apart, signed
// multiples of 7. `off_step` moves the last event of every column one unit
// off its step.
void FillStepped(std::mt19937_64& rng, uih_batch* b, uint32_t n, bool off_step) {
  uih_batch_clear(b);
  int64_t day = 19000;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(b, &row, nullptr);
    if (rng() % 3 == 0) day += static_cast<int64_t>(rng() % 40);
    bool last = off_step && i == n - 1;
    uih_column_set_bits(&b->columns[0], i, static_cast<uint64_t>(day * 86400 + last));
    if (rng() % 10) uih_column_set_bits(&b->columns[1], i, 100 * (rng() % 500) + last);
    uih_column_set_bits(&b->columns[2], i, (1ull << 40) + (1ull << 20) * (rng() % 100000) + last);
    uih_column_set_bits(&b->columns[3], i, static_cast<uint64_t>(-7 * static_cast<int64_t>(rng() % 1000) + last));
  }
}

const char* kStepped = R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "price", "id": 2, "type": "uint32"},
    {"name": "item", "id": 3, "type": "id"},
    {"name": "delta", "id": 4, "type": "int64"}]}]})";

}  // namespace

// Values a common step apart are stored as multiples of it (the scaled
// columns of formats 2 and 3): chosen for every such column by both encoders, decoded
// back exactly over any range, and smaller than the same values one unit
// off the step.
TEST_F(Stripe, CommonStepsAreStoredOnce) {
  SchemaPtr s;
  Parse(kStepped, &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  EncoderPtr keep = MakeEncoder(1, 0);
  uih_stripe_encoder* fast = keep.get();
  ASSERT_NE(nullptr, fast);
  std::mt19937_64 rng(19);
  for (uint32_t n : {2u, 18u, 127u, 129u, 1000u, 5000u}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    BatchPtr in, off, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
    ASSERT_EQ(UIH_OK, uih_batch_create(g, n, nullptr, 0, &off.b, nullptr));
    std::mt19937_64 again = rng;
    FillStepped(rng, in.b, n, false);
    FillStepped(again, off.b, n, true);
    for (uih_stripe_encoder* e : {enc_, fast}) {
      const uint8_t* p = nullptr;
      size_t len = 0;
      ASSERT_EQ(UIH_OK, uih_stripe_encode(e, in.b, 1, &p, &len, nullptr));
      std::vector<uint8_t> st(p, p + len);
      ASSERT_EQ(UIH_OK, uih_stripe_encode(e, off.b, 1, &p, &len, nullptr));
      const size_t off_len = len;
      for (uint32_t c = 0; c < 4; c++) {
        uih_stripe_column_info ci{};
        ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &ci, nullptr));
        // Two events may differ by nothing at all (no step) or take fewer
        // bytes unscaled; from tens of events on, every column is scaled.
        if (n >= 18) {
          EXPECT_EQ(1, ci.scaled) << "column " << c << (e == fast ? " (fast)" : "");
        }
      }
      if (n >= 18) {
        EXPECT_LT(st.size() + n, off_len) << "the step saves at least a byte per event";
      }
      ASSERT_NO_FATAL_FAILURE(ExpectDecodesTo(st, in.b, out.b, rng, 6));
    }
  }
}

// A scaled column whose step is below 2 (below 1 in the timestamp column
// of format 3), or a scaled bit where the format allows none (a float, a
// plain encoding), is corruption naming the trait.
TEST_F(Stripe, MalformedScaledColumnsAreCorrupt) {
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "price", "id": 2, "type": "uint32", "compression": "none"},
    {"name": "score", "id": 3, "type": "float32", "compression": "none"}]}]})", &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  const uint32_t n = 20;
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, 1700000000 + 1000 * i);
    uih_column_set_bits(&in.b->columns[1], i, 100 * (i * i % 37));
    uih_column_set_bits(&in.b->columns[2], i, 0x3f800000u + i);
  }
  std::vector<uint8_t> st = Encode(in.b);
  uih_stripe_column_info cols[3];
  size_t payloads = 0;
  for (uint32_t c = 0; c < 3; c++) {
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &cols[c], nullptr));
    payloads += cols[c].bytes;
  }
  ASSERT_EQ(1, cols[1].scaled);
  ASSERT_EQ(UIH_PRESENCE_ALL, cols[1].presence);
  ASSERT_EQ(UIH_COMPRESS_NONE, cols[1].compression);
  // Ids a step from the previous and one-byte lengths: the directory is 3
  // bytes per entry, right before the payloads; an entry's second code
  // byte holds the scaled bit.
  const size_t body = st.size() - UIH_STRIPE_CHECKSUM_SIZE - payloads, dir = body - 3 * 3;
  const size_t price = body + cols[0].bytes;  // its payload starts with the step
  ASSERT_EQ(1, cols[0].scaled);
  ASSERT_EQ(1000, st[body] | (st[body + 1] & 0x7f) << 7);  // the timestamps' step, 1000 (two bytes)
  ASSERT_EQ(100, st[price]);
  uih_error err{};
  const char* kBadStep = "scaled values have a truncated header or a step below 2 (1 in a timestamp column)";
  for (uint8_t step : {0, 1}) {
    std::vector<uint8_t> c = st;
    c[price] = step;
    EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(c, 0, n, out.b, 0, &err));
    EXPECT_EQ(std::string("stripe column of trait 2: ") + kBadStep, err.msg);
  }
  {  // The timestamp column may have a step of 1 (format 3), not 0.
    std::vector<uint8_t> c = st;
    c.erase(c.begin() + static_cast<long>(body) + 1);  // the step's second byte: a one-byte varint is left
    c[body] = 0;
    c[dir + 2] = static_cast<uint8_t>(cols[0].bytes - 1);  // the first entry's length
    EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(c, 0, n, out.b, 0, &err));
    EXPECT_EQ(std::string("stripe column of trait 1: ") + kBadStep, err.msg);
  }
  std::vector<uint8_t> c = st;
  c[dir + 2 * 3 + 1] |= 0x10;  // the float's values byte
  EXPECT_EQ(UIH_ERR_CORRUPTION, Decode(c, 0, n, out.b, 0, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "trait 3 is scaled, which float32 values")) << err.msg;
  ASSERT_EQ(UIH_OK, Decode(st, 0, n, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
  EXPECT_TRUE(SameEvents(in.b, 0, out.b));
}

// Stripes written in an older format decode to the events they were
// written from, and re-encoded they become the current format (3) and
// smaller. tests/engine/data/stripe_v1 holds twelve stripes of a random
// nine-trait schema written by the format-1 encoder (commit dae4693);
// stripe_v2 twelve of a schema whose integer columns take delta and delta2
// (u64 anchors in format 2), half of them scaled, written by the format-2
// encoder (commit 6fd866d). Each lists every event in events.txt (hex bits,
// '-' absent).
TEST_F(Stripe, OlderFormatsStillDecode) {
  auto slurp = [](const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    std::string data;
    char buf[4096];
    for (size_t k; f && (k = std::fread(buf, 1, sizeof buf, f)) > 0;) data.append(buf, k);
    if (f) std::fclose(f);
    return data;
  };
  for (uint32_t version : {1u, 2u}) {
    SCOPED_TRACE("format " + std::to_string(version));
    const std::string dir = std::string(UIH_SOURCE_DIR) + "/tests/engine/data/stripe_v" + std::to_string(version) + "/";
    SchemaPtr s;
    Parse(slurp(dir + "schema.json"), &s);
    const uih_group* g = uih_schema_group_at(s.s, 0);
    const std::string bin = slurp(dir + "stripes.bin"), txt = slurp(dir + "events.txt");
    ASSERT_FALSE(bin.empty());
    size_t at = 0, line = 0;
    std::vector<std::string> lines;
    for (size_t e; (e = txt.find('\n', line)) != std::string::npos; line = e + 1) lines.push_back(txt.substr(line, e - line));
    size_t next_line = 0, stripes = 0, old_bytes = 0, new_bytes = 0;
    uint32_t encodings = 0, scaled = 0;
    while (at < bin.size()) {
      uint32_t len;
      ASSERT_LE(at + 4, bin.size());
      std::memcpy(&len, bin.data() + at, 4);
      ASSERT_LE(at + 4 + len, bin.size());
      std::vector<uint8_t> st(bin.begin() + static_cast<long>(at) + 4, bin.begin() + static_cast<long>(at + 4 + len));
      at += 4 + len;
      uih_stripe_info info{};
      ASSERT_EQ(UIH_OK, uih_stripe_read_info(st.data(), st.size(), &info, nullptr));
      EXPECT_EQ(version, info.version);
      EXPECT_EQ(1, info.checksum);
      for (uint32_t c = 0; c < info.ncolumns; c++) {
        uih_stripe_column_info col{};
        ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &col, nullptr));
        encodings |= col.encoding;
        scaled += static_cast<uint32_t>(col.scaled);
      }
      ASSERT_EQ("stripe " + std::to_string(info.count), lines.at(next_line++));
      // The expected events, from their listing.
      BatchPtr want, out;
      ASSERT_NO_FATAL_FAILURE(MakeBatches(g, info.count, &want, &out));
      for (uint32_t r = 0; r < info.count; r++) {
        uint32_t row;
        uih_batch_append(want.b, &row, nullptr);
        std::istringstream fields(lines.at(next_line++));
        for (uint32_t c = 0; c < want.b->ncolumns; c++) {
          std::string f;
          ASSERT_TRUE(static_cast<bool>(fields >> f));
          if (f != "-") uih_column_set_bits(&want.b->columns[c], r, std::stoull(f, nullptr, 16));
        }
      }
      uih_error err{};
      ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
      ASSERT_TRUE(SameEvents(want.b, 0, out.b)) << "stripe " << stripes;
      const uint32_t a = info.count / 3, b = info.count - info.count / 4;
      ASSERT_EQ(UIH_OK, Decode(st, a, b, out.b, 0, &err)) << err.msg;
      ASSERT_TRUE(SameEvents(want.b, a, out.b)) << "stripe " << stripes;
      std::vector<uint8_t> again = Encode(want.b);
      ASSERT_EQ(UIH_OK, uih_stripe_read_info(again.data(), again.size(), &info, nullptr));
      EXPECT_EQ(3u, info.version);
      ASSERT_EQ(UIH_OK, Decode(again, 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
      ASSERT_TRUE(SameEvents(want.b, 0, out.b));
      // Format 3's one-byte version and flags, id steps and varint anchors
      // make every format-2 stripe smaller.
      if (version == 2) {
        EXPECT_LT(again.size(), st.size()) << "stripe " << stripes;
      }
      old_bytes += st.size();
      new_bytes += again.size();
      stripes++;
    }
    EXPECT_EQ(12u, stripes);
    EXPECT_EQ(lines.size(), next_line);
    EXPECT_LT(new_bytes, old_bytes);
    if (version == 2) {  // what the fixture is for
      EXPECT_EQ(UIH_ENC_DELTA | UIH_ENC_DELTA2 | UIH_ENC_FOR, encodings & (UIH_ENC_DELTA | UIH_ENC_DELTA2 | UIH_ENC_FOR));
      EXPECT_GE(scaled, 6u);
    }
  }
}

namespace {

size_t VarintAt(const std::vector<uint8_t>& s, size_t at, uint64_t* v) {
  *v = 0;
  for (unsigned shift = 0;; shift += 7) {
    *v |= static_cast<uint64_t>(s.at(at) & 0x7f) << shift;
    if (!(s.at(at++) & 0x80)) return at;
  }
}
void PutVarint(std::vector<uint8_t>* s, uint64_t v) {
  for (; v >= 0x80; v >>= 7) s->push_back(static_cast<uint8_t>(v | 0x80));
  s->push_back(static_cast<uint8_t>(v));
}

// A format-3 stripe without a checksum, respelled in format 2: its header
// and directory, the payloads as they are (the same bytes in both formats
// unless a column has delta anchors). `step1` is set if a directory entry
// stepped its id by 1.
std::vector<uint8_t> ToFormatTwo(const std::vector<uint8_t>& v3, uint32_t ncolumns) {
  EXPECT_EQ(0x03, v3.at(0));
  std::vector<uint8_t> v2 = {0x02, 0x00};
  size_t at = 1;
  uint64_t x;
  for (int k = 0; k < 6; k++) at = VarintAt(v3, at, &x);  // group .. span
  v2.insert(v2.end(), v3.begin() + 1, v3.begin() + static_cast<long>(at));
  int prev = -1;
  for (uint32_t c = 0; c < ncolumns; c++) {
    const uint8_t b1 = v3.at(at), b2 = v3.at(at + 1);
    at += 2;
    uint64_t id = static_cast<uint64_t>(prev + (b2 >> 5)), len;
    if ((b2 >> 5) == 0) at = VarintAt(v3, at, &id);
    at = VarintAt(v3, at, &len);
    PutVarint(&v2, id);
    v2.push_back(b1);
    v2.push_back(b2 & 0x1f);
    PutVarint(&v2, len);
    prev = static_cast<int>(id);
  }
  v2.insert(v2.end(), v3.begin() + static_cast<long>(at), v3.end());
  return v2;
}

}  // namespace

// Format 3's directory: ids within 7 of the previous are a step in the
// second code byte, larger gaps spell the id, and a spelled id the step
// could have said is refused (one spelling per stripe). A stripe of one
// event and many absent columns takes 3 bytes per entry, fewer than format
// 2's 4: a fresh decoder and one that decoded a wider stripe before both
// read it right.
TEST_F(Stripe, FormatThreeDirectoryStepsIds) {
  std::string json = R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"})";
  const int ids[] = {2, 3, 9, 10, 30, 31, 32, 40, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 300};
  for (int id : ids) json += R"(, {"name": "t)" + std::to_string(id) + R"(", "id": )" + std::to_string(id) + R"(, "type": "uint32"})";
  json += "]}]}";
  SchemaPtr s;
  Parse(json, &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  const uint32_t ncols = 1 + sizeof ids / sizeof ids[0];
  BatchPtr one, wide, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, 300, &wide, &out));
  ASSERT_EQ(UIH_OK, uih_batch_create(g, 1, nullptr, 0, &one.b, nullptr));
  uint32_t row;
  uih_batch_append(one.b, &row, nullptr);
  uih_column_set_bits(&one.b->columns[0], 0, 1700000000);
  EncoderPtr bare = MakeEncoder(0, 1);
  const uint8_t* p = nullptr;
  size_t len = 0;
  ASSERT_EQ(UIH_OK, uih_stripe_encode(bare.get(), one.b, 1, &p, &len, nullptr));
  const std::vector<uint8_t> st(p, p + len);
  // 3 bytes per absent column (two code bytes and a zero length) but for
  // the four spelled ids (9 after 3, 30 after 10, 40 after 32, 200 after
  // 40 and 300 after 211: a byte each, two for 200 and 300).
  EXPECT_LT(st.size(), 4u * ncols);
  uih_stripe_info info{};
  ASSERT_EQ(UIH_OK, uih_stripe_read_info(st.data(), st.size(), &info, nullptr));
  ASSERT_EQ(ncols, info.ncolumns);
  for (uint32_t c = 0; c < ncols; c++) {
    uih_stripe_column_info ci{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), c, &ci, nullptr));
    EXPECT_EQ(c == 0 ? 1 : ids[c - 1], ci.trait_id);
  }
  uih_stripe_decoder* fresh = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_decoder_create(&fresh, nullptr));
  std::unique_ptr<uih_stripe_decoder, void (*)(uih_stripe_decoder*)> keep(fresh, uih_stripe_decoder_free);
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_stripe_decode(fresh, st.data(), st.size(), 0, UIH_DECODE_TO_END, 0, out.b, &err)) << err.msg;
  EXPECT_TRUE(SameEvents(one.b, 0, out.b));
  std::mt19937_64 rng(31);
  FillRandomBatch(rng, wide.b, 300);
  ASSERT_EQ(UIH_OK, Decode(Encode(wide.b), 0, UIH_DECODE_TO_END, out.b, UIH_DECODE_VERIFY_CHECKSUM, &err)) << err.msg;
  ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b, 0, &err)) << err.msg;
  EXPECT_TRUE(SameEvents(one.b, 0, out.b));

  // The second entry (trait 2, a step of 1 from trait 1) respelled with its
  // id: the same stripe but for the spelling, refused.
  size_t at = 1;
  uint64_t x;
  for (int k = 0; k < 6; k++) at = VarintAt(st, at, &x);
  at += 2 + 1;  // the first entry: two code bytes and a one-byte length
  ASSERT_EQ(1, st[at + 1] >> 5);
  std::vector<uint8_t> c = st;
  c[at + 1] &= 0x1f;
  c.insert(c.begin() + static_cast<long>(at) + 2, 2);
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_stripe_read_info(c.data(), c.size(), &info, &err));
  EXPECT_EQ("stripe offset " + std::to_string(at) + ": directory entry 1 is truncated or out of range",
            std::string(err.msg));
  c[at + 2] = 9;  // an id the step could not say (1 + 8) is its spelling; the entries after it step from it
  ASSERT_EQ(UIH_OK, uih_stripe_read_info(c.data(), c.size(), &info, &err)) << err.msg;
  uih_stripe_column_info ci{};
  ASSERT_EQ(UIH_OK, uih_stripe_column_at(c.data(), c.size(), 1, &ci, nullptr));
  EXPECT_EQ(9, ci.trait_id);
  ASSERT_EQ(UIH_OK, uih_stripe_column_at(c.data(), c.size(), 2, &ci, nullptr));
  EXPECT_EQ(10, ci.trait_id);  // trait 3's step of 1
}

// The timestamp column of format 3 takes a step of 1 when its values have
// no larger one (its anchors and minimums then count from the header's min
// timestamp); format 2 never did, and refuses it.
TEST_F(Stripe, OnlyFormatThreeScalesTimestampsByOne) {
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 65536, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp", "encodings": ["for"], "compression": "none"},
      {"name": "n", "id": 2, "type": "uint32", "encodings": ["plain"], "compression": "none"}]}]})",
        &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  EncoderPtr bare = MakeEncoder(0, 1);
  for (uint64_t unit : {1, 1000}) {  // no common step, then one of 1000
    SCOPED_TRACE("unit " + std::to_string(unit));
    BatchPtr in, out;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, 50, &in, &out));
    for (uint32_t i = 0; i < 50; i++) {
      uint32_t row;
      uih_batch_append(in.b, &row, nullptr);
      uih_column_set_bits(&in.b->columns[0], i, 1700000000000ull + unit * (i * i + i % 3));
      uih_column_set_bits(&in.b->columns[1], i, i);
    }
    const uint8_t* p = nullptr;
    size_t len = 0;
    ASSERT_EQ(UIH_OK, uih_stripe_encode(bare.get(), in.b, 1, &p, &len, nullptr));
    const std::vector<uint8_t> st(p, p + len);
    uih_stripe_column_info ts{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 0, &ts, nullptr));
    EXPECT_EQ(1, ts.scaled);
    EXPECT_EQ(UIH_ENC_FOR, ts.encoding);
    uih_error err{};
    ASSERT_EQ(UIH_OK, Decode(st, 0, UIH_DECODE_TO_END, out.b, 0, &err)) << err.msg;
    EXPECT_TRUE(SameEvents(in.b, 0, out.b));
    const std::vector<uint8_t> v2 = ToFormatTwo(st, 2);
    uih_stripe_info info{};
    ASSERT_EQ(UIH_OK, uih_stripe_read_info(v2.data(), v2.size(), &info, nullptr));
    EXPECT_EQ(2u, info.version);
    int rc = Decode(v2, 0, UIH_DECODE_TO_END, out.b, 0, &err);
    if (unit == 1) {
      EXPECT_EQ(UIH_ERR_CORRUPTION, rc);
      EXPECT_STREQ("stripe column of trait 1: scaled values have a truncated header or a step below 2 (1 in a "
                   "timestamp column)",
                   err.msg);
    } else {  // the respelling itself is right: format 2 reads a step of 1000
      ASSERT_EQ(UIH_OK, rc) << err.msg;
      EXPECT_TRUE(SameEvents(in.b, 0, out.b));
    }
  }
}

// Value dictionaries: ranked by count (ties: the smaller value), cut by
// min_count and max_entries, deterministic, and what they serialize to
// parses back to the same dictionary, whose every damaged byte or missing
// tail is refused with a message.
TEST(ValueDict, BuildsRanksSerializesAndParses) {
  const uint64_t values[] = {50, 7, 9, 1000, 3, 8};
  const uint64_t counts[] = {4, 9, 4, 1, 9, 2};
  uih_value_dict* d = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 5, UIH_TYPE_ID, values, counts, 6, 2, 4, &d, &err)) << err.msg;
  std::unique_ptr<uih_value_dict, void (*)(uih_value_dict*)> keep(d, uih_value_dict_free);
  EXPECT_EQ(4u, uih_value_dict_entries(d));  // 1000 (once) is below min_count, 8 past max_entries
  EXPECT_EQ(5u, uih_value_dict_trait(d));
  EXPECT_EQ(1u, uih_value_dict_group(d));
  const uint8_t* p;
  size_t len;
  uih_value_dict_bytes(d, &p, &len);
  std::vector<uint8_t> bytes(p, p + len);
  uih_value_dict* again = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 5, UIH_TYPE_ID, values, counts, 6, 2, 4, &again, &err));
  uih_value_dict_bytes(again, &p, &len);
  EXPECT_EQ(bytes, std::vector<uint8_t>(p, p + len)) << "the same counts give the same dictionary";
  uih_value_dict_free(again);
  uih_value_dict* parsed = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_parse(bytes.data(), bytes.size(), UIH_VALUE_DICT_INDEX, &parsed, &err)) << err.msg;
  EXPECT_EQ(uih_value_dict_id(d), uih_value_dict_id(parsed));
  EXPECT_EQ(4u, uih_value_dict_entries(parsed));
  uih_value_dict_free(parsed);
  // Ranks: 3 and 7 (nine times each; 3 is the smaller), then 9 and 50 (four
  // times each), as the stored values say (a FOR sequence after the count).
  uint64_t ranked[4];
  uih_cursor cur = uih_cursor_make(bytes.data() + 11, bytes.size() - 11 - 4);
  uint64_t scratch[UIH_SEQ_BLOCK];
  ASSERT_EQ(0, uih_seq_decode(&cur, 4, UIH_SEQ_FOR, 0, 4, ranked, scratch));
  EXPECT_EQ((std::vector<uint64_t>{3, 7, 9, 50}), std::vector<uint64_t>(ranked, ranked + 4));
  EXPECT_EQ(4, bytes[10]);

  for (size_t cut = 0; cut < bytes.size(); cut++) {
    uih_value_dict* x = nullptr;
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_value_dict_parse(bytes.data(), cut, 0, &x, &err)) << "length " << cut;
    EXPECT_EQ(nullptr, x);
  }
  for (size_t bit = 0; bit < bytes.size() * 8; bit++) {
    std::vector<uint8_t> c = bytes;
    c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    uih_value_dict* x = nullptr;
    int rc = uih_value_dict_parse(c.data(), c.size(), 0, &x, &err);
    EXPECT_NE(UIH_OK, rc) << "bit " << bit;
    EXPECT_NE('\0', err.msg[0]);
  }
  std::vector<uint8_t> c = bytes;
  c[4] = 3;
  EXPECT_EQ(UIH_ERR_NOT_SUPPORTED, uih_value_dict_parse(c.data(), c.size(), 0, &parsed, &err));
  EXPECT_STREQ("value dictionary version 3 is not supported (this build reads versions 1 to 2)", err.msg);

  const uint64_t twice[] = {4, 4}, ones[] = {1, 1}, wide[] = {1ull << 40};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_value_dict_build(1, 5, UIH_TYPE_ID, twice, ones, 2, 1, 9, &parsed, &err));
  EXPECT_STREQ("value_dict_build: a value is listed twice", err.msg);
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_value_dict_build(1, 5, UIH_TYPE_UINT32, wide, ones, 1, 1, 9, &parsed, &err));
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_value_dict_build(1, 5, UIH_TYPE_FLOAT32, wide, ones, 1, 1, 9, &parsed, &err));
  EXPECT_STREQ("value_dict_build: trait 5 is float32; dictionaries hold id, int64, uint32 and category values",
               err.msg);
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_value_dict_build(1, 5, UIH_TYPE_ID, values, counts, 6, 10, 9, &parsed, &err));

  // Worth it when ranks are much narrower than the values: 1,000 entries
  // (10-bit ranks) pay among 40-bit ids, not among ids below 2,048.
  std::vector<uint64_t> many, twos(1000, 2);
  for (uint64_t r = 0; r < 1000; r++) many.push_back(r * 977);
  uih_value_dict* big = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 5, UIH_TYPE_ID, many.data(), twos.data(), 1000, 1, 1000, &big, nullptr));
  EXPECT_EQ(1, uih_value_dict_pays(big, 60000, 100000, 1ull << 40));
  EXPECT_EQ(0, uih_value_dict_pays(big, 60000, 100000, 2047));
  EXPECT_EQ(0, uih_value_dict_pays(big, 100, 100, 1ull << 40)) << "its own bytes outweigh a hundred hits";
  EXPECT_EQ(0, uih_value_dict_pays(big, 2, 1, 1ull << 40));
  uih_value_dict_free(big);

  // A declined trait's mark: no entries, round-trips, never pays, and a
  // stripe encoded with it in the context does not use it.
  uih_value_dict* mark = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_declined(1, 5, UIH_TYPE_ID, &mark, &err)) << err.msg;
  EXPECT_EQ(0u, uih_value_dict_entries(mark));
  EXPECT_EQ(0, uih_value_dict_pays(mark, 10, 10, 1ull << 40));
  const uint8_t* mp;
  size_t mlen;
  uih_value_dict_bytes(mark, &mp, &mlen);
  uih_value_dict* again_mark = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_parse(mp, mlen, UIH_VALUE_DICT_INDEX, &again_mark, &err)) << err.msg;
  EXPECT_EQ(uih_value_dict_id(mark), uih_value_dict_id(again_mark));
  EXPECT_EQ(0u, uih_value_dict_entries(again_mark));
  uih_value_dict_free(again_mark);
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_value_dict_declined(1, 5, UIH_TYPE_FLAG, &again_mark, &err));
  uih_value_dict_free(mark);
}

// Version 2 adds the model, each symbol's code length in a nibble after the
// values: the ranks [0, 256) one symbol each, bucket j for the ranks whose
// rank - 255 has j + 1 bits, then the escape. Version 1 (the same bytes
// without the lengths) still parses, has no model, and its trait's columns
// are then shared, never coded.
// The checksum a serialized dictionary ends with, made right again after
// its bytes were changed.
void Reseal(std::vector<uint8_t>* bytes) {
  const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(bytes->data(), bytes->size() - 4));
  std::memcpy(bytes->data() + bytes->size() - 4, &sum, 4);
}

TEST(ValueDict, VersionTwoCarriesAModelAndVersionOneStillParses) {
  std::vector<uint64_t> values, counts;
  for (uint64_t r = 0; r < 1000; r++)  // 40-bit ids, Zipf counts
    values.push_back((r * 0x9e3779b97f4aull) & ((1ull << 40) - 1)), counts.push_back(100000 / (r + 1) + 2);
  values.push_back(1ull << 39 | 1), counts.push_back(1);  // counted once: left out, an escape
  uih_value_dict* d = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 5, UIH_TYPE_ID, values.data(), counts.data(), values.size(), 2, 1000, &d,
                                         &err)) << err.msg;
  std::unique_ptr<uih_value_dict, void (*)(uih_value_dict*)> keep(d, uih_value_dict_free);
  ASSERT_EQ(256u, d->direct);
  ASSERT_EQ(256u + 10 + 1, d->nsym) << "744 ranks past 256: buckets of 1, 2, 4, ... 512 (10 of them), the escape";
  EXPECT_EQ(uint64_t{PC_TABLE_SIZE}, [&] {
    uint64_t k = 0;
    for (uint32_t s = 0; s < d->nsym; s++) k += uint64_t{1} << (PC_MAX_LEN - d->lens[s]);
    return k;
  }());
  EXPECT_LT(d->lens[0], d->lens[255]) << "the most frequent value's code is the shortest";
  const uint8_t* p;
  size_t len;
  uih_value_dict_bytes(d, &p, &len);
  std::vector<uint8_t> v2(p, p + len);
  EXPECT_EQ(2, v2[4]);
  const size_t nibbles = (d->nsym + 1) / 2;
  for (uint32_t s = 0; s < d->nsym; s++) EXPECT_EQ(d->lens[s], (v2[len - 4 - nibbles + s / 2] >> (4 * (s & 1))) & 15);
  // Lengths that are not a complete code are refused (checksum made right).
  std::vector<uint8_t> bad = v2;
  bad[len - 4 - nibbles] ^= 0x01;
  Reseal(&bad);
  uih_value_dict* x = nullptr;
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_value_dict_parse(bad.data(), bad.size(), 0, &x, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "code lengths are not a complete prefix code")) << err.msg;

  // Version 1: no lengths.
  std::vector<uint8_t> v1(v2.begin(), v2.end() - static_cast<std::ptrdiff_t>(nibbles));  // keeps 4 bytes for the sum
  v1[4] = 1;
  Reseal(&v1);
  uih_value_dict* old = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_parse(v1.data(), v1.size(), UIH_VALUE_DICT_INDEX, &old, &err)) << err.msg;
  EXPECT_EQ(1000u, uih_value_dict_entries(old));
  EXPECT_EQ(0u, old->nsym);
  for (uint32_t r = 0; r < 1000; r++) ASSERT_EQ(uih_value_dict_value(d, r), uih_value_dict_value(old, r));
  // A version-1 dictionary with trailing bytes (a version 2's lengths) is not one.
  std::vector<uint8_t> mixed = v2;
  mixed[4] = 1;
  Reseal(&mixed);
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_value_dict_parse(mixed.data(), mixed.size(), 0, &x, &err));

  SchemaPtr s;
  const std::string json = R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"}, {"name": "item", "id": 5, "type": "id"}]}]})";
  ASSERT_EQ(UIH_OK, uih_schema_parse(json.data(), json.size(), "t", &s.s, &err)) << err.msg;
  // The padding nibble after an odd number of lengths must be zero.
  ASSERT_EQ(1u, d->nsym % 2);
  std::vector<uint8_t> padded = v2;
  padded[len - 5] |= 0x10;
  Reseal(&padded);
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_value_dict_parse(padded.data(), padded.size(), 0, &x, &err));
  EXPECT_NE(nullptr, std::strstr(err.msg, "padding after its code lengths is not zero")) << err.msg;
  uih_stripe_context* ctx = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ContextPtr keep_ctx(ctx, uih_stripe_context_free);
  ASSERT_EQ(UIH_OK, uih_stripe_context_add(ctx, old, nullptr));
  // 200 events of a group's items: 200 distinct ids, all ranked.
  auto items = [&](const uih_group* g, BatchPtr* out) {
    ASSERT_EQ(UIH_OK, uih_batch_create(g, 200, nullptr, 0, &out->b, nullptr));
    for (uint32_t i = 0; i < 200; i++) {
      uint32_t row;
      uih_batch_append(out->b, &row, nullptr);
      uih_column_set_bits(&out->b->columns[0], i, i);
      uih_column_set_bits(&out->b->columns[1], i, values[(i * 389) % 1000]);
    }
  };
  BatchPtr batch;
  ASSERT_NO_FATAL_FAILURE(items(uih_schema_group_at(s.s, 0), &batch));
  uih_batch* b = batch.b;
  EncoderPtr enc = MakeEncoder(0, 0);
  uih_stripe_encoder_set_context(enc.get(), ctx);
  const uint8_t* sp;
  size_t slen;
  ASSERT_EQ(UIH_OK, uih_stripe_encode(enc.get(), b, 1, &sp, &slen, &err)) << err.msg;
  uih_stripe_column_info ci{};
  ASSERT_EQ(UIH_OK, uih_stripe_column_at(sp, slen, 1, &ci, nullptr));
  EXPECT_EQ(uint32_t{UIH_ENC_SHARED}, ci.encoding);
  // Where the schema allows coded but not shared: frame of reference with
  // the version-1 dictionary, coded with the version-2 one.
  SchemaPtr coded_only;
  const std::string json2 = R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 5, "type": "id", "encodings": ["for", "coded"]}]}]})";
  ASSERT_EQ(UIH_OK, uih_schema_parse(json2.data(), json2.size(), "t", &coded_only.s, &err)) << err.msg;
  BatchPtr batch2;
  ASSERT_NO_FATAL_FAILURE(items(uih_schema_group_at(coded_only.s, 0), &batch2));
  uih_batch* b2 = batch2.b;
  for (const bool with_model : {false, true}) {
    uih_stripe_context* c2 = nullptr;
    ASSERT_EQ(UIH_OK, uih_stripe_context_create(&c2, nullptr));
    ContextPtr keep_c2(c2, uih_stripe_context_free);
    const std::vector<uint8_t>& bytes = with_model ? v2 : v1;
    uih_value_dict* dd = nullptr;
    ASSERT_EQ(UIH_OK, uih_value_dict_parse(bytes.data(), bytes.size(), UIH_VALUE_DICT_INDEX, &dd, &err)) << err.msg;
    ASSERT_EQ(UIH_OK, uih_stripe_context_add(c2, dd, nullptr));
    uih_stripe_encoder_set_context(enc.get(), c2);
    ASSERT_EQ(UIH_OK, uih_stripe_encode(enc.get(), b2, 1, &sp, &slen, &err)) << err.msg;
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(sp, slen, 1, &ci, nullptr));
    EXPECT_EQ(with_model ? uint32_t{UIH_ENC_CODED} : uint32_t{UIH_ENC_FOR}, ci.encoding) << with_model;
  }
  uih_stripe_encoder_set_context(enc.get(), nullptr);
}

namespace {

// A catalog item's 40-bit id: its popularity rank scrambled, as hashed ids are.
uint64_t HashedItem(uint64_t rank) { return (rank * 0x9e3779b97f4aull) & ((1ull << 40) - 1); }

// The ids of a catalog's n most popular items and their counts, as Zipf(1)
// with `top` at rank 0 would count them.
void ZipfCatalog(uint64_t n, uint64_t top, std::vector<uint64_t>* values, std::vector<uint64_t>* counts) {
  for (uint64_t r = 0; r < n; r++) values->push_back(HashedItem(r)), counts->push_back(top / (r + 1));
}

// Appends n events to `b` (group: ts, item): timestamps 1000 apart, items from `item()`.
template <class Item>
void FillItems(uih_batch* b, uint32_t n, Item item) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(b, &row, nullptr);
    uih_column_set_bits(&b->columns[0], i, 1000 * i);
    uih_column_set_bits(&b->columns[1], i, item());
  }
}

}  // namespace

// Popular ids stored as ranks: with a dictionary of the catalog's head, a
// Zipf-shaped column of 40-bit ids is chosen shared (ranks bit-packed) or
// coded (ranks entropy-coded by the dictionary's model: smaller still),
// whichever the schema allows, and is much smaller; decoding needs that very
// dictionary: without a context, or with another dictionary of the trait,
// it fails naming the one it needs; with it, every range decodes to the
// events written.
TEST_F(Stripe, SharedColumnsNeedTheirDictionary) {
  // The catalog's 5,000 most popular items, counted as Zipf(1) would.
  std::vector<uint64_t> values, counts;
  ZipfCatalog(5000, 1000000, &values, &counts);
  uih_value_dict *d = nullptr, *other = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 2, UIH_TYPE_ID, values.data(), counts.data(), values.size(), 1, 5000, &d, nullptr));
  counts[0] = 1;  // another dictionary of the same trait
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 2, UIH_TYPE_ID, values.data(), counts.data(), values.size(), 1, 5000, &other,
                                         nullptr));
  const uint32_t id = uih_value_dict_id(d);
  ASSERT_NE(id & 0xffff, uih_value_dict_id(other) & 0xffff) << "coded columns name a dictionary by 16 bits";
  uih_stripe_context *ctx = nullptr, *wrong = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&wrong, nullptr));
  ContextPtr keep(ctx, uih_stripe_context_free), keep_wrong(wrong, uih_stripe_context_free);
  ASSERT_EQ(UIH_OK, uih_stripe_context_add(ctx, d, nullptr));
  ASSERT_EQ(UIH_OK, uih_stripe_context_add(wrong, other, nullptr));

  std::mt19937_64 rng(23);
  std::discrete_distribution<uint64_t> zipf(counts.begin(), counts.end());
  std::map<uint32_t, size_t> sizes[2];  // events -> stripe bytes, shared and coded
  for (const uint32_t want : {uint32_t{UIH_ENC_SHARED}, uint32_t{UIH_ENC_CODED}}) {
    SCOPED_TRACE(uih_encoding_name(want));
    SchemaPtr s;
    Parse(std::string(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 4096, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"},
      {"name": "item", "id": 2, "type": "id", "encodings": ["for", ")") + uih_encoding_name(want) + R"("]}]}]})", &s);
    const uih_group* g = uih_schema_group_at(s.s, 0);
    for (uint32_t n : {1u, 18u, 300u, 4096u}) {
      BatchPtr in, out;
      ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
      // Nine in ten from the dictionary's items, the rest from the tail.
      FillItems(in.b, n, [&] { return HashedItem(rng() % 10 ? zipf(rng) : 5000 + rng() % 10000000); });
      std::vector<uint8_t> alone = Encode(in.b);
      uih_stripe_encoder_set_context(enc_, ctx);
      std::vector<uint8_t> st = Encode(in.b);
      uih_stripe_encoder_set_context(enc_, nullptr);
      uih_stripe_column_info ci{};
      ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, &ci, nullptr));
      if (n >= 18) {
        EXPECT_EQ(want, ci.encoding) << n;
        EXPECT_LT(st.size() * 3, alone.size() * 2) << n << " events: " << st.size() << " vs " << alone.size();
        sizes[want == UIH_ENC_CODED][n] = st.size();
      }
      if (ci.encoding != want) continue;
      uih_error err{};
      EXPECT_EQ(UIH_ERR_NOT_FOUND, Decode(st, 0, n, out.b, 0, &err));
      char msg[200];
      if (want == UIH_ENC_SHARED)
        std::snprintf(msg, sizeof msg, "stripe column of trait 2 is encoded against value dictionary %08x, which "
                      "the decoder's context (none) cannot give", id);
      else
        std::snprintf(msg, sizeof msg, "stripe column of trait 2 is coded against a value dictionary whose id ends "
                      "in %04x, which the decoder's context (none) cannot give", id & 0xffff);
      EXPECT_STREQ(msg, err.msg);
      EXPECT_TRUE(TailIsClear(out.b));
      uih_stripe_decoder_set_context(dec_, wrong);
      EXPECT_EQ(UIH_ERR_NOT_FOUND, Decode(st, 0, n, out.b, 0, &err));
      EXPECT_NE(nullptr, std::strstr(err.msg, "which the decoder's context does not hold")) << err.msg;
      uih_stripe_decoder_set_context(dec_, ctx);
      ASSERT_NO_FATAL_FAILURE(ExpectDecodesTo(st, in.b, out.b, rng, 8));
      uih_stripe_decoder_set_context(dec_, nullptr);
    }
  }
  // The model takes fewer bits than bit-packed ranks (Zipf ranks: most are
  // small, a few are large).
  for (uint32_t n : {300u, 4096u}) EXPECT_LT(sizes[1][n] * 20, sizes[0][n] * 19) << n;
  const uih_group* g = nullptr;
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 4096, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"}]}]})", &s);
  g = uih_schema_group_at(s.s, 0);
  // A fast encoder's stripes stand alone, context or not.
  EncoderPtr fast_enc = MakeEncoder(1, 0);
  uih_stripe_encoder* fast = fast_enc.get();
  ASSERT_NE(nullptr, fast);
  uih_stripe_encoder_set_context(fast, ctx);
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, 100, &in, &out));
  for (uint32_t i = 0; i < 100; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, i);
    uih_column_set_bits(&in.b->columns[1], i, HashedItem(zipf(rng)));
  }
  const uint8_t* p;
  size_t len;
  ASSERT_EQ(UIH_OK, uih_stripe_encode(fast, in.b, 1, &p, &len, nullptr));
  uih_stripe_column_info ci{};
  EXPECT_EQ(UIH_OK, uih_stripe_column_at(p, len, 1, &ci, nullptr));
  EXPECT_EQ(0u, ci.encoding & UIH_ENC_DICTIONARY);
}

// Prefix codes decode slower than bit-packed values, so a coded column must
// save min_coded_gain over the best encoding without a dictionary: with a
// gain of 0 the small codes of a skewed rating are coded, with 0.9 they are
// not (and the stripe is larger); the option is checked.
TEST_F(Stripe, CodedColumnsMustSaveTheirGain) {
  std::vector<uint64_t> values = {4, 5, 3, 2, 1}, counts = {400, 300, 150, 100, 50};  // ratings 1-5
  uih_value_dict* d = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 2, UIH_TYPE_CATEGORY, values.data(), counts.data(), 5, 1, 5, &d, nullptr));
  uih_stripe_context* ctx = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ContextPtr keep(ctx, uih_stripe_context_free);
  ASSERT_EQ(UIH_OK, uih_stripe_context_add(ctx, d, nullptr));
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "rating", "id": 2, "type": "category", "compression": "none"}]}]})", &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  BatchPtr in, out;
  ASSERT_NO_FATAL_FAILURE(MakeBatches(g, 200, &in, &out));
  std::mt19937_64 rng(5);
  std::discrete_distribution<uint32_t> pick(counts.begin(), counts.end());
  for (uint32_t i = 0; i < 200; i++) {
    uint32_t row;
    uih_batch_append(in.b, &row, nullptr);
    uih_column_set_bits(&in.b->columns[0], i, i);
    uih_column_set_bits(&in.b->columns[1], i, values[pick(rng)]);
  }
  size_t sizes[2];
  const double gains[2] = {0.0, 0.9};
  for (int k = 0; k < 2; k++) {
    uih_stripe_encoder_opts o = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
    o.min_coded_gain = gains[k];
    uih_stripe_encoder* e = nullptr;
    ASSERT_EQ(UIH_OK, uih_stripe_encoder_create(&o, &e, nullptr));
    EncoderPtr own(e, uih_stripe_encoder_free);
    uih_stripe_encoder_set_context(e, ctx);
    const uint8_t* p;
    ASSERT_EQ(UIH_OK, uih_stripe_encode(e, in.b, 1, &p, &sizes[k], nullptr));
    uih_stripe_column_info ci{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(p, sizes[k], 1, &ci, nullptr));
    EXPECT_EQ(k == 0, ci.encoding == UIH_ENC_CODED) << uih_encoding_name(ci.encoding);
  }
  EXPECT_LT(sizes[0], sizes[1]);
  uih_stripe_encoder_opts o = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
  o.min_coded_gain = 1.0;
  uih_stripe_encoder* e = nullptr;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_stripe_encoder_create(&o, &e, &err));
  EXPECT_STREQ("min_coded_gain 1 is outside [0, 1)", err.msg);
}

// Coded columns from untrusted bytes: every flipped bit and every cut of a
// stripe with a coded column (no checksum of its own: nothing else catches
// them) decodes or fails with a message, leaves the batch's tail clear, and
// when the full decode succeeds every range agrees with it. Flips of the
// codes' padding, lengths and escape counts are caught.
TEST_F(Stripe, CodedColumnsSurviveEveryFlipAndCut) {
  std::vector<uint64_t> values, counts;
  ZipfCatalog(3000, 100000, &values, &counts);
  uih_value_dict* d = nullptr;
  ASSERT_EQ(UIH_OK, uih_value_dict_build(1, 2, UIH_TYPE_ID, values.data(), counts.data(), values.size(), 1, 3000, &d,
                                         nullptr));
  uih_stripe_context* ctx = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ContextPtr keep(ctx, uih_stripe_context_free);
  ASSERT_EQ(UIH_OK, uih_stripe_context_add(ctx, d, nullptr));
  SchemaPtr s;
  Parse(R"({"name": "s", "version": 1, "groups": [{"name": "g", "id": 1, "stripe_events": 4096, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id", "encodings": ["for", "coded"]}]}]})", &s);
  const uih_group* g = uih_schema_group_at(s.s, 0);
  EncoderPtr keep_enc = MakeEncoder(0, 1);
  uih_stripe_encoder_set_context(keep_enc.get(), ctx);
  uih_stripe_decoder_set_context(dec_, ctx);
  std::mt19937_64 rng(31);
  std::discrete_distribution<uint64_t> zipf(counts.begin(), counts.end());
  for (uint32_t n : {20u, 129u, 300u}) {  // one block; a last block of one value; three blocks
    BatchPtr in, out, full, spare;
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &in, &out));
    ASSERT_NO_FATAL_FAILURE(MakeBatches(g, n, &full, &spare));
    FillItems(in.b, n, [&] { return HashedItem(rng() % 5 ? zipf(rng) : 3000 + rng() % 100000); });
    const uint8_t* p;
    size_t len;
    ASSERT_EQ(UIH_OK, uih_stripe_encode(keep_enc.get(), in.b, 1, &p, &len, nullptr));
    const std::vector<uint8_t> st(p, p + len);
    uih_stripe_column_info ci{};
    ASSERT_EQ(UIH_OK, uih_stripe_column_at(st.data(), st.size(), 1, &ci, nullptr));
    ASSERT_EQ(uint32_t{UIH_ENC_CODED}, ci.encoding);
    ASSERT_NO_FATAL_FAILURE(ExpectDecodesTo(st, in.b, out.b, rng, 8));
    const size_t payload = st.size() - ci.bytes;  // the item column's payload is the last
    int caught = 0, flips = 0;
    for (size_t bit = 0; bit < st.size() * 8; bit++) {
      std::vector<uint8_t> c = st;
      c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      uih_error err{};
      int rc = Decode(c, 0, UIH_DECODE_TO_END, full.b, 0, &err);
      ASSERT_TRUE(TailIsClear(full.b)) << "bit " << bit;
      if (bit / 8 >= payload) flips++, caught += rc != UIH_OK;
      if (rc != UIH_OK) {
        ASSERT_NE('\0', err.msg[0]);
        continue;
      }
      for (int r = 0; r < 4; r++) {
        uint32_t a = static_cast<uint32_t>(rng() % (n + 1)), b = a + static_cast<uint32_t>(rng() % (n - a + 1));
        ASSERT_EQ(UIH_OK, Decode(c, a, b, out.b, 0, &err)) << err.msg << " bit " << bit;
        ASSERT_TRUE(SameEvents(full.b, a, out.b)) << "bit " << bit << " [" << a << "," << b << ")";
      }
    }
    EXPECT_GT(caught * 4, flips) << "a quarter of the coded payload's flips at least break a check";
    // Named failures: an escape count of every value; a stripe cut inside
    // the codes.
    {
      std::vector<uint8_t> c = st;
      ASSERT_LT(c[payload + 2], 0x80) << "a one-byte escape count";
      c[payload + 2] = static_cast<uint8_t>(n < 128 ? n : 127);
      uih_error err{};
      if (n < 128) {
        ASSERT_EQ(UIH_ERR_CORRUPTION, Decode(c, 0, UIH_DECODE_TO_END, out.b, 0, &err));
        EXPECT_NE(nullptr, std::strstr(err.msg, "escape every value")) << err.msg;
      }
    }
    for (size_t cut = 0; cut < st.size(); cut++) {
      std::vector<uint8_t> c(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(cut));
      uih_error err{};
      ASSERT_NE(UIH_OK, Decode(c, 0, UIH_DECODE_TO_END, out.b, 0, &err)) << "cut " << cut;
      ASSERT_TRUE(TailIsClear(out.b));
    }
  }
  uih_stripe_decoder_set_context(dec_, nullptr);
}

// A context's dictionaries travel as one value (what a store keeps per
// generation): they parse back in order with their ids; damage anywhere is
// refused, naming the dictionary; no dictionaries is an empty value.
TEST(ValueDict, ContextsSerializeAndParse) {
  uih_stripe_context* ctx = nullptr;
  ASSERT_EQ(UIH_OK, uih_stripe_context_create(&ctx, nullptr));
  ContextPtr keep(ctx, uih_stripe_context_free);
  const uint64_t values[] = {10, 20, 30}, counts[] = {3, 2, 1};
  for (uint16_t trait = 2; trait <= 3; trait++) {
    uih_value_dict* d = nullptr;
    ASSERT_EQ(UIH_OK, uih_value_dict_build(7, trait, UIH_TYPE_UINT32, values, counts, 3, 1, 9, &d, nullptr));
    ASSERT_EQ(UIH_OK, uih_stripe_context_add(ctx, d, nullptr));
  }
  uint8_t* bytes = nullptr;
  size_t len = 0;
  ASSERT_EQ(UIH_OK, uih_stripe_context_serialize(ctx, &bytes, &len, nullptr));
  std::vector<uint8_t> v(bytes, bytes + len);
  std::free(bytes);
  uih_stripe_context* back = nullptr;
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_stripe_context_parse(v.data(), v.size(), 0, &back, &err)) << err.msg;
  ASSERT_EQ(2u, uih_stripe_context_count(back));
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(uih_value_dict_id(uih_stripe_context_at(ctx, i)), uih_value_dict_id(uih_stripe_context_at(back, i)));
    EXPECT_EQ(7u, uih_value_dict_group(uih_stripe_context_at(back, i)));
  }
  uih_stripe_context_free(back);
  const size_t first = 1 + v[0];  // where the second dictionary starts: a whole one before
  for (size_t cut = 1; cut < v.size(); cut++) {
    int rc = uih_stripe_context_parse(v.data(), cut, 0, &back, &err);
    if (cut == first) {
      ASSERT_EQ(UIH_OK, rc) << err.msg;
      EXPECT_EQ(1u, uih_stripe_context_count(back));
      uih_stripe_context_free(back);
      continue;
    }
    EXPECT_NE(UIH_OK, rc) << cut;
    EXPECT_EQ(nullptr, back);
    EXPECT_EQ(0, std::strncmp(err.msg, "value dictionaries: ", 20)) << err.msg;
  }
  ASSERT_EQ(UIH_OK, uih_stripe_context_parse(nullptr, 0, 0, &back, &err));
  EXPECT_EQ(0u, uih_stripe_context_count(back));
  uih_stripe_context_free(back);
}
