// Prefix codes (the `coded` encoding's entropy model) against their
// definitions: lengths make complete codes of at most PC_MAX_LEN bits that
// are optimal when nothing needs limiting, canonical codes are prefix-free
// and decode back through the bit reader, and lengths that do not make a
// complete code are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "prefix_code.h"

namespace {

uint64_t Kraft(const std::vector<uint8_t>& len) {
  uint64_t k = 0;
  for (uint8_t l : len) k += uint64_t{1} << (PC_MAX_LEN - l);
  return k;
}

double Bits(const std::vector<uint64_t>& f, const std::vector<uint8_t>& len) {
  double b = 0;
  for (size_t i = 0; i < f.size(); i++) b += static_cast<double>(f[i]) * len[i];
  return b;
}

double Entropy(const std::vector<uint64_t>& f) {
  double total = 0, h = 0;
  for (uint64_t x : f) total += static_cast<double>(x);
  for (uint64_t x : f) h -= static_cast<double>(x) * std::log2(static_cast<double>(x) / total);
  return h;
}

// The cost of Huffman's code (unlimited), in bits: the sum of the merged
// weights, computed here the simple way.
double HuffmanCost(const std::vector<uint64_t>& f) {
  std::vector<uint64_t> heap(f.begin(), f.end());
  double cost = 0;
  while (heap.size() > 1) {
    std::sort(heap.begin(), heap.end(), std::greater<>());
    uint64_t a = heap.back();
    heap.pop_back();
    uint64_t b = heap.back();
    heap.pop_back();
    cost += static_cast<double>(a + b);
    heap.push_back(a + b);
  }
  return cost;
}

std::vector<uint64_t> RandomFrequencies(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> f(n);
  switch (rng() % 4) {
    case 0:  // Zipf-like: a few symbols dominate, a long tail
      for (size_t i = 0; i < n; i++) f[i] = 1 + 1000000 / (i + 1);
      std::shuffle(f.begin(), f.end(), rng);
      break;
    case 1:  // all alike
      std::fill(f.begin(), f.end(), 1 + rng() % 100);
      break;
    case 2:  // doubling (then flat, so sums stay far from 2^64): a deep unlimited code
      for (size_t i = 0; i < n; i++) f[i] = uint64_t{1} << std::min<size_t>(i, 50);
      break;
    default:
      for (auto& x : f) x = 1 + rng() % (uint64_t{1} << (rng() % 40));
  }
  return f;
}

TEST(PrefixCode, LengthsMakeCompleteCodesWithinTheLimit) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 300; iter++) {
    const size_t n = 2 + rng() % (iter % 3 ? 40 : PC_MAX_SYMBOLS - 1);
    std::vector<uint64_t> f = RandomFrequencies(rng, n);
    std::vector<uint8_t> len(n), again(n);
    ASSERT_EQ(0, pc_lengths(f.data(), n, len.data())) << iter;
    ASSERT_EQ(0, pc_lengths(f.data(), n, again.data()));
    EXPECT_EQ(len, again) << "deterministic";
    for (uint8_t l : len) ASSERT_TRUE(l >= 1 && l <= PC_MAX_LEN) << int(l);
    EXPECT_EQ(uint64_t{PC_TABLE_SIZE}, Kraft(len)) << "complete";
    // Never better than Huffman; when as good (its code fits): within a bit
    // per symbol of the entropy, and a more frequent symbol never gets a
    // longer code (swapping them would be cheaper).
    EXPECT_GE(Bits(f, len), HuffmanCost(f));
    if (Bits(f, len) == HuffmanCost(f)) {
      EXPECT_LE(Bits(f, len), Entropy(f) + std::accumulate(f.begin(), f.end(), 0.0));
      for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
          if (f[i] > f[j]) {
            ASSERT_LE(len[i], len[j]) << i << " " << j;
          }
        }
      }
    }
  }
  const uint64_t zero[] = {3, 0, 4}, one[] = {5};
  uint8_t len[3];
  EXPECT_EQ(-1, pc_lengths(zero, 3, len));
  EXPECT_EQ(-1, pc_lengths(one, 1, len));
}

// Without the limit biting, the lengths are Huffman's: as cheap as its
// code, checked against the simple construction above.
TEST(PrefixCode, LengthsAreHuffmansWhenTheyFit) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 200; iter++) {
    const size_t n = 2 + rng() % 30;
    std::vector<uint64_t> f(n);
    for (auto& x : f) x = 1 + rng() % 1000;
    std::vector<uint8_t> len(n);
    ASSERT_EQ(0, pc_lengths(f.data(), n, len.data()));
    if (*std::max_element(len.begin(), len.end()) < PC_MAX_LEN) {
      EXPECT_EQ(HuffmanCost(f), Bits(f, len));
    }
  }
}

TEST(PrefixCode, CanonicalCodesDecodeThroughTheReader) {
  std::mt19937_64 rng(13);
  for (int iter = 0; iter < 200; iter++) {
    const size_t n = 2 + rng() % 300;
    std::vector<uint64_t> f = RandomFrequencies(rng, n);
    std::vector<uint8_t> len(n);
    std::vector<uint16_t> code(n);
    ASSERT_EQ(0, pc_lengths(f.data(), n, len.data()));
    ASSERT_EQ(0, pc_codes(len.data(), n, code.data()));
    // The decode table: every PC_MAX_LEN-bit string starts with one code.
    std::vector<int> owner(PC_TABLE_SIZE, -1);
    for (size_t s = 0; s < n; s++)
      for (uint32_t k = code[s]; k < PC_TABLE_SIZE; k += 1u << len[s]) {
        ASSERT_EQ(-1, owner[k]) << "prefix-free";
        owner[k] = static_cast<int>(s);
      }
    ASSERT_EQ(owner.end(), std::find(owner.begin(), owner.end(), -1));
    // Symbols with raw bits between them, written and read back.
    std::vector<std::pair<size_t, uint64_t>> msg;
    uih_wbuf out{};
    pc_writer w{&out, 0, 0};
    for (int i = 0; i < 1000; i++) {
      size_t s = rng() % n;
      unsigned raw = static_cast<unsigned>(rng() % 25);
      uint64_t bits = rng() & ((uint64_t{1} << raw) - 1);
      msg.push_back({s, bits | uint64_t{raw} << 32});
      pc_put(&w, code[s], len[s]);
      pc_put(&w, bits, raw);
    }
    pc_flush(&w);
    // A reader that may load past the stream (masked) and one that may not.
    for (size_t loadable : {out.len, out.len + 64}) {
      std::vector<uint8_t> buf(out.data, out.data + out.len);
      buf.resize(out.len + 64, 0xff);  // what lies beyond must not leak in
      pc_reader r = pc_reader_make(buf.data(), out.len, loadable);
      for (const auto& [s, packed] : msg) {
        if (r.n < PC_MAX_LEN + 24) pc_refill(&r);
        size_t got = static_cast<size_t>(owner[r.acc & (PC_TABLE_SIZE - 1)]);
        ASSERT_EQ(s, got);
        pc_take(&r, len[got]);
        unsigned raw = static_cast<unsigned>(packed >> 32);
        ASSERT_EQ(packed & 0xffffffffu, pc_take(&r, raw));
      }
      EXPECT_EQ(out.len, (pc_reader_used(&r) + 7) / 8);
      if (r.n < 8) pc_refill(&r);
      EXPECT_EQ(0u, r.acc & 0xff) << "zeros past the stream, whatever the buffer holds";
    }
    uih_wbuf_free(&out);
  }
}

TEST(PrefixCode, IncompleteOrOversubscribedLengthsAreRefused) {
  std::vector<uint16_t> code(8);
  const std::vector<std::vector<uint8_t>> bad = {
      {1, 2},           // incomplete: a quarter of the strings start with no code
      {1, 1, 1},        // oversubscribed
      {0, 1},           // a symbol without a code
      {12, 1, 2, 3},    // longer than PC_MAX_LEN
      {2, 2, 2},        // incomplete
  };
  for (const auto& len : bad) EXPECT_EQ(-1, pc_codes(len.data(), len.size(), code.data()));
  const std::vector<uint8_t> ok = {1, 2, 3, 3};
  ASSERT_EQ(0, pc_codes(ok.data(), ok.size(), code.data()));
  // Canonical: 0, 10, 110, 111, written bit-reversed.
  EXPECT_EQ(0b0, code[0]);
  EXPECT_EQ(0b01, code[1]);
  EXPECT_EQ(0b011, code[2]);
  EXPECT_EQ(0b111, code[3]);
}

}  // namespace
