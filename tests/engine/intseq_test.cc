// Bit packing and integer sequences against simple reference models, on
// both the AVX2 and the scalar unpacking paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "intseq.h"

namespace {

uint64_t Mask(unsigned w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }

// Every sequence kind: FOR, and deltas with u64 and with varint anchors.
const uih_seq_kind kAllKinds[] = {UIH_SEQ_FOR,           UIH_SEQ_FOR_SIGNED,          UIH_SEQ_DELTA,
                                  UIH_SEQ_DELTA2,        UIH_SEQ_DELTA_VARINT,        UIH_SEQ_DELTA_VARINT_SIGNED,
                                  UIH_SEQ_DELTA2_VARINT, UIH_SEQ_DELTA2_VARINT_SIGNED};

// Reference: value k is bits [k*w, k*w + w) of the little-endian stream.
uint64_t RefValue(const std::vector<uint8_t>& bytes, size_t k, unsigned w) {
  uint64_t v = 0;
  for (unsigned b = 0; b < w; b++) {
    size_t bit = k * w + b;
    v |= static_cast<uint64_t>((bytes[bit / 8] >> (bit % 8)) & 1) << b;
  }
  return v;
}

class IntSeq : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    simd_ = uih_intseq_set_simd(GetParam());
    if (GetParam() && !simd_) GTEST_SKIP() << "no AVX2 on this CPU";
  }
  void TearDown() override { uih_intseq_set_simd(1); }
  int simd_ = 0;
};

TEST_P(IntSeq, PackUnpackMatchesTheBitModelForEveryWidthAndRange) {
  std::mt19937_64 rng(1);
  for (unsigned w = 0; w <= 64; w++) {
    for (int trial = 0; trial < 20; trial++) {
      size_t n = 1 + rng() % 300;
      std::vector<uint64_t> v(n);
      for (auto& x : v) x = rng() & Mask(w);
      uih_wbuf out{};
      uih_pack(&out, v.data(), n, w);
      ASSERT_EQ((n * w + 7) / 8, out.len);
      std::vector<uint8_t> bytes(out.data, out.data + out.len);
      for (size_t k = 0; k < n; k++) ASSERT_EQ(v[k], RefValue(bytes, k, w)) << "w=" << w;
      size_t a = rng() % (n + 1), b = a + rng() % (n - a + 1);
      uint64_t base = rng();
      std::vector<uint64_t> got(b - a + 1, 0xdead);
      // Exactly the run's bytes available: the careful tail path must work.
      uih_unpack(bytes.data(), bytes.size(), w, a, b, base, got.data());
      for (size_t k = a; k < b; k++) ASSERT_EQ(base + v[k], got[k - a]) << "w=" << w << " k=" << k;
      ASSERT_EQ(0xdeadu, got[b - a]) << "wrote past the range";
      uih_wbuf_free(&out);
    }
  }
}

TEST_P(IntSeq, SequencesRoundTripAnyRange) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 400; trial++) {
    size_t n = 1 + rng() % 700;
    std::vector<uint64_t> v(n);
    int shape = trial % 4;
    uint64_t cur = rng();
    for (auto& x : v) {
      if (shape == 0) x = rng();                                      // noise
      else if (shape == 1) x = cur += rng() % 1000;                   // clock
      else if (shape == 2) x = cur += (rng() % 20 == 0) ? rng() : 5;  // outliers: exceptions
      else x = UIH_SIGN64 + rng() % 7 - 3;                            // small signed
    }
    for (uih_seq_kind kind : kAllKinds) {
      uih_wbuf out{};
      uih_seq_encode(&out, v.data(), n, kind);
      size_t a = rng() % (n + 1), b = a + rng() % (n - a + 1);
      std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
      uih_cursor c = uih_cursor_make(out.data, out.len);
      ASSERT_EQ(0, uih_seq_decode(&c, n, kind, a, b, got.data(), scratch.data()));
      ASSERT_EQ(0u, uih_cursor_left(&c)) << "the whole sequence is consumed";
      for (size_t k = a; k < b; k++) ASSERT_EQ(v[k], got[k - a]) << "kind " << kind << " k " << k;
      // Every truncation fails cleanly.
      for (size_t len = 0; len < out.len; len += 1 + out.len / 50) {
        uih_cursor t = uih_cursor_make(out.data, len);
        ASSERT_NE(0, uih_seq_decode(&t, n, kind, 0, n, got.data(), scratch.data()));
      }
      uih_wbuf_free(&out);
    }
  }
}

// With bytes to spare after the run (as inside a stripe), the vector paths
// take more of the values, including the masked last step: every width,
// ranges starting anywhere, lengths around the eight-value step.
TEST_P(IntSeq, UnpackWithSlackMatchesTheBitModel) {
  std::mt19937_64 rng(3);
  for (unsigned w = 0; w <= 64; w++) {
    for (int trial = 0; trial < 40; trial++) {
      size_t n = trial < 20 ? 1 + static_cast<size_t>(trial) : 1 + rng() % 300;
      std::vector<uint64_t> v(n);
      for (auto& x : v) x = rng() & Mask(w);
      uih_wbuf out{};
      uih_pack(&out, v.data(), n, w);
      std::vector<uint8_t> bytes(out.data, out.data + out.len);
      size_t slack = rng() % 40;
      for (size_t i = 0; i < slack; i++) bytes.push_back(static_cast<uint8_t>(rng()));
      size_t a = rng() % (n + 1), b = a + rng() % (n - a + 1);
      uint64_t base = trial % 3 == 0 ? ~0ull - rng() % 5 : rng();  // sums wrap
      std::vector<uint64_t> got(b - a + 1, 0xdead);
      uih_unpack(bytes.data(), bytes.size(), w, a, b, base, got.data());
      for (size_t k = a; k < b; k++) ASSERT_EQ(base + v[k], got[k - a]) << "w=" << w << " k=" << k;
      ASSERT_EQ(0xdeadu, got[b - a]) << "wrote past the range";
      uih_wbuf_free(&out);
    }
  }
}

// A delta sequence whose values go up, with the deltas an encoder meets in
// timestamps: small steps, session gaps (exceptions), repeats.
std::vector<uint64_t> Clock(std::mt19937_64& rng, size_t n, uint64_t start) {
  std::vector<uint64_t> v(n);
  uint64_t cur = start;
  for (auto& x : v) x = cur += rng() % 20 == 0 ? rng() % 100000000 : rng() % 3 ? rng() % 2000 : 0;
  return v;
}

bool NeverDecreases(const uint64_t* v, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (static_cast<int64_t>(v[i]) < static_cast<int64_t>(v[i - 1])) return false;
  return true;
}

// Both paths decode `bytes` the same way: same result, same bytes consumed,
// same values. `sorted` may differ (only AVX2 checks) but may only claim
// order that is there. Returns the AVX2 path's *sorted (or -1 if it failed
// or there is no AVX2).
int DecodeBothWays(const std::vector<uint8_t>& bytes, size_t n, uih_seq_kind kind, uint64_t bias,
                   size_t a, size_t b, const char* what, int* rc = nullptr) {
  int result[2], sorted[2] = {-1, -1};
  size_t used[2];
  std::vector<uint64_t> got[2];
  std::vector<uint64_t> scratch(UIH_SEQ_BLOCK);
  int avx2 = 0;
  for (int simd = 0; simd < 2; simd++) {
    avx2 = uih_intseq_set_simd(simd);
    got[simd].assign(b - a + 1, 0xdead);
    uih_cursor c = uih_cursor_make(bytes.data(), bytes.size());
    result[simd] = uih_seq_decode_biased(&c, n, kind, bias, a, b, got[simd].data(), scratch.data(), &sorted[simd]);
    EXPECT_EQ(result[simd] != 0, c.bad != 0) << what;
    used[simd] = static_cast<size_t>(c.p - bytes.data());
    EXPECT_EQ(0xdeadu, got[simd][b - a]) << what << ": wrote past the range";
  }
  uih_intseq_set_simd(1);
  EXPECT_EQ(result[0], result[1]) << what;
  if (rc) *rc = result[0];
  if (result[0] != 0 || result[1] != 0) return -1;
  EXPECT_EQ(used[0], used[1]) << what;
  EXPECT_EQ(got[0], got[1]) << what << " kind " << kind << " [" << a << ", " << b << ")";
  EXPECT_EQ(0, sorted[0]) << what << ": the scalar path does not check order";
  if (sorted[1]) {
    EXPECT_TRUE(NeverDecreases(got[1].data(), b - a)) << what << ": order claimed falsely";
  }
  return avx2 ? sorted[1] : -1;
}

TEST(IntSeqPaths, VectorAndScalarDeltaDecodingAgree) {
  std::mt19937_64 rng(4);
  const size_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 127, 128, 129, 130, 131, 255, 256, 257, 1000};
  int checked = 0;
  for (int trial = 0; trial < 600; trial++) {
    size_t n = trial % 2 ? lengths[rng() % 17] : 1 + rng() % 700;
    int shape = trial % 6;
    std::vector<uint64_t> v;
    if (shape == 0) {
      v = Clock(rng, n, UIH_SIGN64 + 1700000000000ull);  // int64 ms timestamps, unsigned form
    } else if (shape == 1) {
      v = Clock(rng, n, 0);  // starts at INT64_MIN once flipped
    } else if (shape == 2) {  // up to INT64_MAX (unsigned form ~0) and past it
      v = Clock(rng, n, ~0ull - rng() % 1000000000);
    } else if (shape == 3) {  // extremes and noise: decreases, wraps
      v.resize(n);
      const uint64_t edges[] = {0, 1, UIH_SIGN64 - 1, UIH_SIGN64, UIH_SIGN64 + 1, ~0ull, ~0ull - 1};
      for (auto& x : v) x = rng() % 2 ? edges[rng() % 7] : rng();
    } else if (shape == 4) {  // ordered but with deltas >= 2^56
      v = Clock(rng, n, 0);
      for (size_t i = 1; i < n; i++) v[i] = v[i - 1] + (rng() % 4 == 0 ? (1ull << 56) + rng() % 1000 : rng() % 1000);
    } else {  // one step down somewhere
      v = Clock(rng, n, UIH_SIGN64 + (1ull << 40));  // far from INT64_MIN under either bias: the step down stays one as int64
      if (n > 1) {
        size_t at = 1 + rng() % (n - 1);
        for (size_t i = at; i < n; i++) v[i] -= 1 + (v[at] - v[at - 1]);
      }
    }
    for (uih_seq_kind kind : kAllKinds) {
      uih_wbuf out{};
      uih_seq_encode(&out, v.data(), n, kind);
      std::vector<uint8_t> bytes(out.data, out.data + out.len);
      uih_wbuf_free(&out);
      uint64_t bias = rng() % 3 == 0 ? 0 : UIH_SIGN64;
      size_t a = rng() % 2 ? 0 : rng() % (n + 1), b = a + rng() % (n - a + 1);
      if (rng() % 2) b = n;
      int sorted = DecodeBothWays(bytes, n, kind, bias, a, b, "well-formed");
      ASSERT_FALSE(testing::Test::HasFailure()) << "trial " << trial;
      // The outputs are v + bias; as int64 with the flip they are v's order.
      std::vector<uint64_t> want(v.begin() + static_cast<long>(a), v.begin() + static_cast<long>(b));
      for (auto& x : want) x += bias;
      bool up = NeverDecreases(want.data(), want.size());
      if (sorted >= 0 && kind >= UIH_SEQ_DELTA && a == 0 && (shape <= 1 || shape == 5)) {
        // Small deltas: the check is exact on whole-sequence decodes.
        ASSERT_EQ(up, sorted == 1) << "trial " << trial << " kind " << kind;
        checked++;
      }
      // Each byte changed (small sequences) or a few random ones: both
      // paths fail alike or decode alike.
      size_t flips = bytes.size() < 64 ? bytes.size() : 64;
      for (size_t f = 0; f < flips; f++) {
        std::vector<uint8_t> bad = bytes;
        size_t at = bytes.size() < 64 ? f : rng() % bytes.size();
        bad[at] ^= static_cast<uint8_t>(1 + rng() % 255);
        DecodeBothWays(bad, n, kind, bias, a, b, "corrupted");
        ASSERT_FALSE(testing::Test::HasFailure()) << "trial " << trial << " byte " << at;
      }
      for (size_t len = 0; len < bytes.size(); len += 1 + bytes.size() / 16) {
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(len));
        EXPECT_EQ(-1, DecodeBothWays(cut, n, kind, bias, a, b, "truncated"));
      }
    }
  }
  if (uih_intseq_set_simd(1)) {
    EXPECT_GT(checked, 100);
  }
}

// uih_min_max's four running extremes agree with std::minmax_element at
// every length (the tails past a multiple of four) and wherever the
// extremes sit: first, last, inside, repeated, at 0 and at 2^64 - 1.
TEST(IntSeqPaths, MinMaxAgreesWithTheStandardLibrary) {
  std::mt19937_64 rng(31);
  for (size_t n = 1; n < 40; n++)
    for (int trial = 0; trial < 50; trial++) {
      std::vector<uint64_t> v(n);
      for (auto& x : v) x = trial % 3 == 0 ? rng() : 1000 + rng() % 7;
      if (trial % 5 == 1) v[rng() % n] = 0;
      if (trial % 5 == 2) v[rng() % n] = ~0ull;
      if (trial % 5 == 3) v[n - 1] = 0, v[0] = ~0ull;
      uint64_t lo = 1, hi = 1;
      uih_min_max(v.data(), n, &lo, &hi);
      const auto mm = std::minmax_element(v.begin(), v.end());
      ASSERT_EQ(*mm.first, lo) << "n " << n << " trial " << trial;
      ASSERT_EQ(*mm.second, hi) << "n " << n << " trial " << trial;
    }
}

// Varint anchors (format 3) take the bytes their values need: a sequence
// with varint anchors is the one with u64 anchors, less, per block, 8 bytes
// minus the varint of its first value (zigzag of the signed value in a
// _SIGNED kind) and, in DELTA2, 8 minus the varint of zigzag(first delta).
TEST(IntSeqAnchors, VarintAnchorsTakeTheBytesTheirValuesNeed) {
  auto varint_len = [](uint64_t x) {
    size_t n = 1;
    for (; x >= 0x80; x >>= 7) n++;
    return n;
  };
  auto zigzag = [](int64_t x) { return (static_cast<uint64_t>(x) << 1) ^ (0 - (static_cast<uint64_t>(x) >> 63)); };
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 300; trial++) {
    const size_t n = 1 + rng() % 400;
    const int is_signed = trial % 2;
    // Scaled multiples from 0, or sign-flipped values near 0, or anything.
    std::vector<uint64_t> v = Clock(rng, n, rng());
    if (trial % 3 != 2) {  // moved to start at 0, or at -1 (signed): a one-byte anchor
      const uint64_t shift = v[0] - (is_signed ? UIH_SIGN64 - 1 : 0);
      for (auto& x : v) x -= shift;
    }
    for (int order = 1; order <= 2; order++) {
      const uih_seq_kind fixed = order == 1 ? UIH_SEQ_DELTA : UIH_SEQ_DELTA2;
      const uih_seq_kind varint = uih_seq_delta_kind(order, 3, is_signed);
      ASSERT_EQ(fixed, uih_seq_delta_kind(order, 2, is_signed));
      size_t saved = 0;
      for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
        const uint64_t first = v[s];
        saved += 8 - varint_len(is_signed ? zigzag(static_cast<int64_t>(first ^ UIH_SIGN64)) : first);
        if (order == 2 && s + 1 < n) saved += 8 - varint_len(zigzag(static_cast<int64_t>(v[s + 1] - v[s])));
      }
      uih_wbuf a{}, b{};
      uih_seq_encode(&a, v.data(), n, fixed);
      uih_seq_encode(&b, v.data(), n, varint);
      ASSERT_EQ(a.len - saved, b.len) << "trial " << trial << " order " << order;
      // And it decodes, whole and skipped, to the same values.
      std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
      uih_cursor c = uih_cursor_make(b.data, b.len);
      ASSERT_EQ(0, uih_seq_decode(&c, n, varint, 0, n, got.data(), scratch.data()));
      ASSERT_EQ(v, got);
      uih_cursor k = uih_cursor_make(b.data, b.len);
      ASSERT_EQ(0, uih_seq_skip(&k, n, varint));
      ASSERT_EQ(c.p, k.p);
      if (trial % 3 != 2) {  // the first block's anchor takes one byte
        EXPECT_GE(a.len - b.len, 7u) << "trial " << trial;
      }
      uih_wbuf_free(&a);
      uih_wbuf_free(&b);
    }
  }
}

// A FOR block of wide random values (hashed ids) stores its values above a
// base of zero when they fit the same width there: the minimum's varint
// bytes saved, the values the same. An ascending block keeps its first
// value as its base (a ranged decode of a position list relies on it).
TEST(IntSeqBase, WideRandomBlocksStoreAZeroBase) {
  std::mt19937_64 rng(12);
  int zero = 0, trials = 0;
  for (int trial = 0; trial < 400; trial++) {
    const size_t n = 2 + rng() % 127;  // one block
    const int is_signed = trial % 2;
    std::vector<uint64_t> v(n);
    for (auto& x : v) x = (is_signed ? UIH_SIGN64 : 0) + (rng() >> 24);  // 40 bits, not negative
    if (v[0] == *std::min_element(v.begin(), v.end())) std::swap(v[0], v[n - 1]);
    for (int ascending = 0; ascending < 2; ascending++) {
      if (ascending) std::sort(v.begin(), v.end());
      const uih_seq_kind kind = is_signed ? UIH_SEQ_FOR_SIGNED : UIH_SEQ_FOR;
      uih_wbuf out{};
      uih_seq_encode(&out, v.data(), n, kind);
      uih_cursor c = uih_cursor_make(out.data, out.len);
      uint64_t min = 1;
      ASSERT_EQ(0, uih_seq_peek_min(&c, &min));
      std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
      ASSERT_EQ(0, uih_seq_decode(&c, n, kind, 0, n, got.data(), scratch.data()));
      ASSERT_EQ(v, got) << "trial " << trial;
      if (ascending) {
        EXPECT_EQ(is_signed ? ((v[0] ^ UIH_SIGN64) << 1) : v[0], min) << "trial " << trial;
      } else {
        trials++;
        zero += min == 0;  // zigzag(0) in a signed sequence is 0 too
        if (min == 0) {
          EXPECT_EQ(3 + (n * 40 + 7) / 8, out.len) << "trial " << trial;  // base, w, x, 40 bits each
        }
      }
      uih_wbuf_free(&out);
    }
  }
  EXPECT_GT(zero, trials * 8 / 10);
}

// Hand-made blocks the encoder never writes: exception positions out of
// order or past the block, widths past 64, exceptions too wide, a block
// whose deltas wrap from INT64_MAX to INT64_MIN. Both paths agree, and the
// AVX2 path never claims order it does not see.
TEST(IntSeqPaths, MalformedBlocksFailAlike) {
  std::mt19937_64 rng(5);
  int failed = 0, decoded = 0;
  for (int trial = 0; trial < 3000; trial++) {
    size_t n = 1 + rng() % 300;
    uih_wbuf out{};
    for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
      size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
      uih_wbuf_u64(&out, rng() % 2 ? ~0ull >> 1 : rng());  // anchor
      if (cnt == 1) continue;
      uih_wbuf_varint(&out, rng() % 4 ? rng() % 64 : rng());  // zigzag min
      unsigned w = rng() % 8 ? static_cast<unsigned>(rng() % 40) : static_cast<unsigned>(rng() % 256);
      unsigned nexc = rng() % 3 ? static_cast<unsigned>(rng() % 20) : 0;
      uih_wbuf_u8(&out, static_cast<uint8_t>(w));
      uih_wbuf_u8(&out, static_cast<uint8_t>(nexc));
      size_t nbytes = ((cnt - 1) * (w > 64 ? 1 : w) + 7) / 8;
      for (size_t i = 0; i < nbytes; i++) uih_wbuf_u8(&out, static_cast<uint8_t>(rng()));
      if (nexc) {
        unsigned xw = static_cast<unsigned>(rng() % 66);
        uih_wbuf_u8(&out, static_cast<uint8_t>(xw));
        uint8_t p = static_cast<uint8_t>(rng() % 8);
        for (unsigned i = 0; i < nexc; i++) {
          uih_wbuf_u8(&out, rng() % 50 ? p : static_cast<uint8_t>(rng()));
          p = static_cast<uint8_t>(p + 1 + rng() % 8);
        }
        for (size_t i = 0; i < (nexc * xw + 7) / 8; i++) uih_wbuf_u8(&out, static_cast<uint8_t>(rng()));
      }
    }
    for (size_t i = 0, pad = rng() % 3 ? 0 : rng() % 20; i < pad; i++) uih_wbuf_u8(&out, 0);
    std::vector<uint8_t> bytes(out.data, out.data + out.len);
    uih_wbuf_free(&out);
    size_t a = rng() % 2 ? 0 : rng() % (n + 1), b = rng() % 2 ? n : a + rng() % (n - a + 1);
    int rc = 0;
    DecodeBothWays(bytes, n, rng() % 2 ? UIH_SEQ_DELTA : UIH_SEQ_DELTA2, rng() % 2 ? 0 : UIH_SIGN64, a, b,
                   "hand-made", &rc);
    ASSERT_FALSE(testing::Test::HasFailure()) << "trial " << trial;
    (rc == 0 ? decoded : failed)++;
  }
  // Both outcomes are exercised.
  EXPECT_GT(failed, 300);
  EXPECT_GT(decoded, 300);
}

// Exception positions must ascend strictly: a repeat or a step down at any
// index (inside or across the sixteen-byte chunks the check reads, with and
// without bytes to spare after the block) fails on both paths; ascending
// ones decode to the patched values.
TEST(IntSeqPaths, ExceptionPositionsMustAscend) {
  const size_t n = 128;  // one DELTA block: anchor + 127 deltas
  for (unsigned nexc = 1; nexc <= 40; nexc++) {
    for (unsigned broken = 0; broken <= nexc; broken++) {  // nexc: none broken
      for (int slack = 0; slack < 2; slack++) {
        std::vector<uint8_t> pos(nexc);
        for (unsigned i = 0; i < nexc; i++) pos[i] = static_cast<uint8_t>(3 * i + 1);
        if (broken > 0 && broken < nexc) pos[broken] = pos[broken - 1] - (broken % 2);  // repeat or step down
        if (broken == 0) pos[nexc - 1] = 127;  // past the block (127 deltas)
        uih_wbuf out{};
        uih_wbuf_u64(&out, 1000);
        uih_wbuf_varint(&out, 0);  // zigzag(0): min delta 0
        uih_wbuf_u8(&out, 4);
        uih_wbuf_u8(&out, static_cast<uint8_t>(nexc));
        std::vector<uint64_t> low(n - 1), high(nexc, 5);
        for (size_t k = 0; k < n - 1; k++) low[k] = k % 16;
        uih_pack(&out, low.data(), n - 1, 4);
        uih_wbuf_u8(&out, 3);
        uih_wbuf_put(&out, pos.data(), nexc);
        uih_pack(&out, high.data(), nexc, 3);
        std::vector<uint8_t> bytes(out.data, out.data + out.len);
        uih_wbuf_free(&out);
        size_t used = bytes.size();
        if (slack) bytes.resize(bytes.size() + 20, 0);
        int rc = 0;
        DecodeBothWays(bytes, n, UIH_SEQ_DELTA, 0, 0, n, "positions", &rc);
        bool valid = broken == nexc;
        ASSERT_EQ(valid ? 0 : -1, rc) << "nexc " << nexc << " broken " << broken << " slack " << slack;
        if (!valid) continue;
        std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
        uih_cursor c = uih_cursor_make(bytes.data(), bytes.size());
        ASSERT_EQ(0, uih_seq_decode(&c, n, UIH_SEQ_DELTA, 0, n, got.data(), scratch.data()));
        ASSERT_EQ(used, static_cast<size_t>(c.p - bytes.data()));
        uint64_t v = 1000;
        ASSERT_EQ(v, got[0]);
        for (size_t k = 1; k < n; k++) {
          uint64_t d = low[k - 1];
          for (unsigned i = 0; i < nexc; i++)
            if (pos[i] == k - 1) d += high[i] << 4;
          ASSERT_EQ(v += d, got[k]) << "k " << k;
        }
      }
    }
  }
}

// Skipping a sequence lands where decoding all of it does, and fails on
// every truncation; random access into FOR sequences gives every value; a
// ranged decode lands at the same end too.
TEST_P(IntSeq, SkipAndRandomAccessAgreeWithDecoding) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 300; trial++) {
    size_t n = 1 + rng() % 900;
    std::vector<uint64_t> v = trial % 2 ? Clock(rng, n, rng()) : std::vector<uint64_t>(n);
    if (trial % 2 == 0)
      for (auto& x : v) x = rng() % 3 == 0 ? rng() : rng() % 5000;  // exceptions, varied widths
    for (uih_seq_kind kind : kAllKinds) {
      uih_wbuf out{};
      uih_seq_encode(&out, v.data(), n, kind);
      // Bytes after the sequence, as inside a stripe: skip must stop before them.
      uih_wbuf_u64(&out, ~0ull);
      std::vector<uint8_t> bytes(out.data, out.data + out.len);
      uih_wbuf_free(&out);
      std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
      uih_cursor d = uih_cursor_make(bytes.data(), bytes.size());
      ASSERT_EQ(0, uih_seq_decode(&d, n, kind, 0, n, got.data(), scratch.data()));
      uih_cursor s = uih_cursor_make(bytes.data(), bytes.size());
      ASSERT_EQ(0, uih_seq_skip(&s, n, kind));
      ASSERT_EQ(d.p, s.p) << "kind " << kind << " n " << n;
      size_t a = rng() % (n + 1), b = a + rng() % (n - a + 1);
      uih_cursor r = uih_cursor_make(bytes.data(), bytes.size());
      ASSERT_EQ(0, uih_seq_decode(&r, n, kind, a, b, got.data(), scratch.data()));
      ASSERT_EQ(d.p, r.p) << "a ranged decode consumes the whole sequence";
      for (size_t k = a; k < b; k++) ASSERT_EQ(v[k], got[k - a]);
      size_t used = static_cast<size_t>(d.p - bytes.data());
      for (size_t len = 0; len < used; len += 1 + used / 40) {
        uih_cursor t = uih_cursor_make(bytes.data(), len);
        ASSERT_NE(0, uih_seq_skip(&t, n, kind)) << "length " << len;
        ASSERT_TRUE(t.bad);
      }
      if (kind != UIH_SEQ_FOR && kind != UIH_SEQ_FOR_SIGNED) continue;
      std::vector<uint64_t> at((n + UIH_SEQ_BLOCK - 1) / UIH_SEQ_BLOCK);
      uih_cursor start = uih_cursor_make(bytes.data(), bytes.size()), w = start;
      ASSERT_EQ(0, uih_seq_blocks(&w, n, at.data()));
      ASSERT_EQ(d.p, w.p);
      for (int q = 0; q < 50; q++) {
        size_t i = rng() % n;
        uint64_t x = 0;
        ASSERT_EQ(0, uih_seq_get(start, n, kind, at.data(), i, &x));
        ASSERT_EQ(v[i], x) << "kind " << kind << " i " << i;
      }
      uint64_t x = 0;
      EXPECT_NE(0, uih_seq_get(start, n, kind, at.data(), n, &x)) << "past the end";
    }
  }
}

// A ranged decode reads only the headers of blocks outside its range: a
// block whose exception positions are broken fails a whole decode and a
// range that needs it, not a range that lies elsewhere.
TEST_P(IntSeq, RangesDoNotValidateBlocksTheySkip) {
  const size_t n = 3 * UIH_SEQ_BLOCK;
  std::vector<uint64_t> v(n);
  for (size_t k = 0; k < n; k++) v[k] = k % 40 == 0 ? 1000000 + k : k % 7;  // outliers: exceptions
  uih_wbuf out{};
  uih_seq_encode(&out, v.data(), n, UIH_SEQ_FOR);
  std::vector<uint8_t> bytes(out.data, out.data + out.len);
  uih_wbuf_free(&out);
  // The first block: varint min (0: one byte), w, x, the packed low bits,
  // xw, then x ascending positions. Make the second position repeat the first.
  ASSERT_EQ(0, bytes[0]);
  unsigned w = bytes[1], nexc = bytes[2];
  ASSERT_GE(nexc, 2u);
  size_t positions = 3 + (UIH_SEQ_BLOCK * w + 7) / 8 + 1;
  bytes[positions + 1] = bytes[positions];
  std::vector<uint64_t> got(n), scratch(UIH_SEQ_BLOCK);
  uih_cursor c = uih_cursor_make(bytes.data(), bytes.size());
  EXPECT_NE(0, uih_seq_decode(&c, n, UIH_SEQ_FOR, 0, n, got.data(), scratch.data()));
  c = uih_cursor_make(bytes.data(), bytes.size());
  EXPECT_NE(0, uih_seq_decode(&c, n, UIH_SEQ_FOR, 100, 200, got.data(), scratch.data()));
  c = uih_cursor_make(bytes.data(), bytes.size());
  ASSERT_EQ(0, uih_seq_decode(&c, n, UIH_SEQ_FOR, 200, n, got.data(), scratch.data()));
  EXPECT_EQ(0u, uih_cursor_left(&c));
  for (size_t k = 200; k < n; k++) ASSERT_EQ(v[k], got[k - 200]);
  c = uih_cursor_make(bytes.data(), bytes.size());
  EXPECT_EQ(0, uih_seq_skip(&c, n, UIH_SEQ_FOR));
}

INSTANTIATE_TEST_SUITE_P(Paths, IntSeq, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Avx2") : std::string("Scalar");
                         });

}  // namespace
