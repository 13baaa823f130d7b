#include <gtest/gtest.h>

#include "engine/stripe_gen.h"

#include <climits>
#include <cstring>
#include <vector>

namespace uih_test {

namespace {

const char* kTypes[] = {"id", "int64", "uint32", "float32", "category", "flag", "timestamp"};

// Encoding names allowed per type (mirrors the schema's table).
std::vector<std::string> EncodingsFor(const std::string& type) {
  if (type == "float32") return {"plain", "bss", "dict", "sparse"};
  if (type == "flag") return {"plain", "rle", "sparse"};
  if (type == "category") return {"plain", "for", "dict", "rle", "sparse"};
  if (type == "uint32" || type == "id") return {"plain", "delta", "for", "dict", "rle", "sparse"};
  return {"plain", "delta", "delta2", "for", "dict", "rle", "sparse"};
}

}  // namespace

std::string RandomSchemaJson(std::mt19937_64& rng, int ntraits) {
  std::string j = R"({"name": "rnd", "version": 1, "groups": [{"name": "g", "id": 3, "stripe_events": 65536, "traits": [)";
  j += R"({"name": "ts", "id": 1, "type": "timestamp"})";
  static const char* kCompress[] = {"auto", "none", "lz4", "zstd"};
  for (int i = 0; i < ntraits; i++) {
    // Non-event-time timestamps are not allowed: use int64 for the 7th type.
    std::string type = kTypes[rng() % 6];
    j += R"(, {"name": "t)" + std::to_string(i) + R"(", "id": )" + std::to_string(10 + 3 * i) +
         R"(, "type": ")" + type + "\"";
    if (rng() % 3 == 0) {
      auto encs = EncodingsFor(type);
      std::string list;
      for (const auto& e : encs)
        if (rng() % 2) list += (list.empty() ? "\"" : ", \"") + e + "\"";
      if (!list.empty()) j += R"(, "encodings": [)" + list + "]";
    }
    if (rng() % 3 == 0) j += std::string(R"(, "compression": ")") + kCompress[rng() % 4] + "\"";
    j += "}";
  }
  return j + "]}]}";
}

namespace {

uint64_t TypeMax(uih_type t) {
  switch (uih_type_width(t)) {
    case 8: return UINT64_MAX;
    case 4: return UINT32_MAX;
    default: return 1;
  }
}

uint64_t FloatBits(std::mt19937_64& rng) {
  static const uint32_t special[] = {0x7fc00000u, 0x7fc00001u, 0xffc12345u, 0x7f800000u,
                                     0xff800000u, 0x80000000u, 0x00000001u, 0x7f7fffffu};
  if (rng() % 4 == 0) return special[rng() % 8];
  float f = static_cast<float>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint64_t Extreme(std::mt19937_64& rng, uih_type t) {
  if (t == UIH_TYPE_INT64 || t == UIH_TYPE_TIMESTAMP) {
    static const int64_t v[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
    return static_cast<uint64_t>(v[rng() % 7]);
  }
  uint64_t mx = TypeMax(t);
  uint64_t v[] = {0, 1, mx, mx - 1, mx / 2};
  return v[rng() % 5] & mx;
}

}  // namespace

void FillRandomBatch(std::mt19937_64& rng, uih_batch* b, uint32_t n) {
  uih_batch_clear(b);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    uih_batch_append(b, &row, nullptr);
  }
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    uih_column* col = &b->columns[c];
    uih_type t = col->trait->type;
    bool is_ts = col->trait == b->group->ts;
    if (is_ts) {
      // Non-decreasing, with duplicates, bursts and sometimes extreme ends.
      int64_t cur = rng() % 5 == 0 ? INT64_MIN + static_cast<int64_t>(rng() % 1000)
                                   : static_cast<int64_t>(rng() % 2000000000000ull) - 1000000000000ll;
      static const uint64_t kPeriods[] = {2, 1000, 86400, 86400000};
      const uint64_t period = rng() % 4 == 0 ? kPeriods[rng() % 4] : 1;
      for (uint32_t i = 0; i < n; i++) {
        uint64_t step = rng() % 4 == 0 ? 0 : rng() % 3 == 0 ? rng() % 100000000 : rng() % 5000;
        step *= period;
        // Room below INT64_MAX, computed in uint64 so that it cannot overflow.
        uint64_t room = static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(cur);
        if (i > 0 && room > step) cur += static_cast<int64_t>(step);
        if (rng() % 50 == 0 && i == n - 1) cur = INT64_MAX;
        uih_column_set_bits(col, i, static_cast<uint64_t>(cur));
      }
      continue;
    }
    auto shape = static_cast<Shape>(rng() % static_cast<int>(Shape::kCount));
    int presence = rng() % 4;  // 0 all, 1 none, 2 dense, 3 sparse
    uint64_t mx = TypeMax(t);
    uint64_t base = rng() & mx, cur = base;
    static const uint64_t kSteps[] = {2, 3, 100, 1000, 86400, 1ull << 20};
    const uint64_t step = kSteps[rng() % 6];
    uint64_t distinct[5];
    for (auto& d : distinct) d = t == UIH_TYPE_FLOAT32 ? FloatBits(rng) : rng() & mx;
    for (uint32_t i = 0; i < n; i++) {
      bool present = presence == 0 || (presence == 2 && rng() % 10 != 0) ||
                     (presence == 3 && rng() % 20 == 0);
      if (!present) continue;
      uint64_t v = 0;
      switch (shape) {
        case Shape::kRandom: v = t == UIH_TYPE_FLOAT32 ? FloatBits(rng) : rng() & mx; break;
        case Shape::kSmallRange: v = (base + rng() % 300) & mx; break;
        case Shape::kConstant: v = base; break;
        case Shape::kRuns:
          if (rng() % 40 == 0) cur = distinct[rng() % 5];
          v = cur;
          break;
        case Shape::kFewDistinct: v = distinct[rng() % 3]; break;
        case Shape::kSparse: v = rng() % 30 == 0 ? (distinct[0] | 1) & mx : 0; break;
        case Shape::kMonotonic:
          cur = (cur + rng() % 7) & mx;
          v = cur;
          break;
        case Shape::kStepped: v = (base + step * (rng() % 1000)) & mx; break;
        default: v = t == UIH_TYPE_FLOAT32 ? FloatBits(rng) : Extreme(rng, t); break;
      }
      if (t == UIH_TYPE_FLAG) v &= 1;
      // A category with a vocabulary holds its codes only (the encoder and
      // the CSV reader refuse others).
      if (t == UIH_TYPE_CATEGORY && col->trait->ncategories) v %= col->trait->ncategories;
      uih_column_set_bits(col, i, v);
    }
  }
}

::testing::AssertionResult SameEvents(const uih_batch* want, uint32_t want_begin,
                                      const uih_batch* got) {
  for (uint32_t c = 0; c < got->ncolumns; c++) {
    const uih_column* g = &got->columns[c];
    int wi = uih_batch_column_index(want, g->trait->id);
    for (uint32_t r = 0; r < got->count; r++) {
      bool wh = wi >= 0 && uih_column_has(&want->columns[wi], want_begin + r);
      uint64_t wv = wh ? uih_column_get_bits(&want->columns[wi], want_begin + r) : 0;
      if (wh != (uih_column_has(g, r) != 0) || wv != uih_column_get_bits(g, r))
        return ::testing::AssertionFailure()
               << "trait " << g->trait->id << " row " << r << ": want "
               << (wh ? std::to_string(wv) : "absent") << ", got "
               << (uih_column_has(g, r) ? std::to_string(uih_column_get_bits(g, r)) : "absent");
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace uih_test
