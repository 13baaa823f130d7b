// Bit packing and integer sequences against simple reference models, on
// both the AVX2 and the scalar unpacking paths.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "intseq.h"

namespace {

uint64_t Mask(unsigned w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }

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
  const uih_seq_kind kinds[] = {UIH_SEQ_FOR, UIH_SEQ_FOR_SIGNED, UIH_SEQ_DELTA, UIH_SEQ_DELTA2};
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
    for (uih_seq_kind kind : kinds) {
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

INSTANTIATE_TEST_SUITE_P(Paths, IntSeq, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Avx2") : std::string("Scalar");
                         });

}  // namespace
