// Event batches: layout, presence, projections, limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uih/batch.h"

namespace {

class Batch : public testing::Test {
 protected:
  void SetUp() override {
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &schema_, &err))
        << err.msg;
    group_ = uih_schema_group_by_name(schema_, "engagement");
    ASSERT_NE(nullptr, group_);
  }
  void TearDown() override { uih_schema_free(schema_); }
  uih_schema* schema_ = nullptr;
  const uih_group* group_ = nullptr;
};

TEST_F(Batch, DefaultSelectionIsTheActiveTraitsInIdOrder) {
  uih_batch* b = nullptr;
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 256, nullptr, 0, &b, nullptr));
  EXPECT_EQ(uih_group_active_count(group_), b->ncolumns);
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    EXPECT_TRUE(uih_trait_active(b->columns[c].trait));
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(b->columns[c].values) % 64);
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(b->columns[c].present) % 64);
    if (c) {
      EXPECT_LT(b->columns[c - 1].trait->id, b->columns[c].trait->id);
    }
  }
  EXPECT_EQ(-1, uih_batch_column_index(b, 5));  // dropped "score"
  ASSERT_NE(nullptr, uih_batch_ts_column(b));
  EXPECT_EQ(group_->ts, uih_batch_ts_column(b)->trait);
  uih_batch_free(b);
}

TEST_F(Batch, ProjectionSelectsTraitsIncludingDroppedOnes) {
  const uint16_t ids[] = {9, 5, 2};
  uih_batch* b = nullptr;
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 10, ids, 3, &b, nullptr));
  ASSERT_EQ(3u, b->ncolumns);
  EXPECT_EQ(0, uih_batch_column_index(b, 2));
  EXPECT_EQ(1, uih_batch_column_index(b, 5));
  EXPECT_EQ(2, uih_batch_column_index(b, 9));
  EXPECT_EQ(nullptr, uih_batch_ts_column(b));
  uih_batch_free(b);
}

// uih_batch_prepare keeps a batch of the same group and columns (cleared,
// grown when asked for more) and replaces any other; timestamps are NULL
// only where the batch lacks the timestamp.
TEST_F(Batch, PrepareReusesOnlyTheSameGroupAndColumns) {
  uih_error err{};
  uih_batch* b = nullptr;
  const uint16_t two[] = {2, 1};
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, two, 2, 4, &err)) << err.msg;
  ASSERT_NE(nullptr, b);
  EXPECT_EQ(2u, b->ncolumns);
  uint32_t row;
  ASSERT_EQ(UIH_OK, uih_batch_append(b, &row, &err));
  uih_column_set_bits(uih_batch_ts_column(b), row, 42);
  ASSERT_NE(nullptr, uih_batch_timestamps(b));
  EXPECT_EQ(42, uih_batch_timestamps(b)[0]);
  uih_batch* was = b;
  const uint16_t same[] = {1, 2};  // another order, the same columns
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, same, 2, 3, &err));
  EXPECT_EQ(was, b) << "kept";
  EXPECT_EQ(0u, b->count) << "cleared";
  EXPECT_EQ(0, uih_batch_timestamps(b)[0]) << "values zeroed";
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, same, 2, 100, &err));
  EXPECT_GE(b->capacity, 100u);
  EXPECT_EQ(2u, b->ncolumns);
  const uint16_t other[] = {2, 9};
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, other, 2, 1, &err));
  EXPECT_EQ(nullptr, uih_batch_timestamps(b)) << "no timestamp column";
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, nullptr, 0, 0, &err));
  EXPECT_EQ(uih_group_active_count(group_), b->ncolumns);
  EXPECT_GE(b->capacity, 1u);
  was = b;
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, nullptr, 0, 1, &err));
  EXPECT_EQ(was, b) << "every active trait, kept";
  const uint16_t bad[] = {77};
  was = b;
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_batch_prepare(&b, group_, bad, 1, 8, &err));
  EXPECT_EQ(was, b) << "an error leaves the batch as it was";
  const uint16_t twice[] = {1, 1};
  ASSERT_EQ(UIH_OK, uih_batch_prepare(&b, group_, two, 2, 1, &err));
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_batch_prepare(&b, group_, twice, 2, 1, &err))
      << "a repeated id is refused, not taken for the batch's two columns";
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_batch_prepare(nullptr, group_, nullptr, 0, 8, &err));
  uih_batch_free(b);
}

TEST_F(Batch, RejectsBadSelectionsAndCapacities) {
  uih_batch* b = nullptr;
  uih_error err{};
  const uint16_t unknown[] = {1, 42};
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_batch_create(group_, 8, unknown, 2, &b, &err));
  EXPECT_STREQ("group 'engagement' has no trait with id 42", err.msg);
  const uint16_t twice[] = {2, 2};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_batch_create(group_, 8, twice, 2, &b, &err));
  EXPECT_STREQ("trait id 2 selected twice", err.msg);
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_batch_create(group_, 0, nullptr, 0, &b, &err));
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_batch_create(group_, UIH_BATCH_EVENTS_MAX + 1, nullptr, 0, &b, &err));
  EXPECT_STREQ("batch capacity 1048577 is outside [1, 1048576]", err.msg);
  EXPECT_EQ(nullptr, b);
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 65536, nullptr, 0, &b, &err));
  uih_batch_free(b);
  uih_batch_free(nullptr);
}

// Random fill against a model: values and presence read back exactly, a
// full batch refuses more events, clear() restores the all-absent state.
TEST_F(Batch, ValuesAndPresenceMatchAModel) {
  std::mt19937_64 rng(7);
  for (uint32_t cap : {1u, 63u, 64u, 65u, 256u, 1000u}) {
    uih_batch* b = nullptr;
    ASSERT_EQ(UIH_OK, uih_batch_create(group_, cap, nullptr, 0, &b, nullptr));
    for (int round = 0; round < 2; round++) {
      std::vector<std::vector<std::pair<bool, uint64_t>>> model(b->ncolumns);
      for (uint32_t i = 0; i < cap; i++) {
        uint32_t row = UINT32_MAX;
        ASSERT_EQ(UIH_OK, uih_batch_append(b, &row, nullptr));
        ASSERT_EQ(i, row);
        for (uint32_t c = 0; c < b->ncolumns; c++) {
          uih_column* col = &b->columns[c];
          bool present = rng() % 3 != 0;
          uint64_t bits = rng();
          size_t w = uih_type_width(col->trait->type);
          uint64_t stored = w == 8 ? bits : w == 4 ? (bits & 0xffffffffu) : (bits != 0);
          if (present) uih_column_set_bits(col, row, bits);
          model[c].push_back({present, present ? stored : 0});
        }
      }
      uint32_t row;
      uih_error err{};
      EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_batch_append(b, &row, &err));
      EXPECT_EQ("batch for group 'engagement' is full (" + std::to_string(cap) + " events)",
                std::string(err.msg));
      for (uint32_t c = 0; c < b->ncolumns; c++)
        for (uint32_t i = 0; i < cap; i++) {
          ASSERT_EQ(model[c][i].first, uih_column_has(&b->columns[c], i) != 0) << c << " " << i;
          ASSERT_EQ(model[c][i].second, uih_column_get_bits(&b->columns[c], i)) << c << " " << i;
        }
      uih_batch_clear(b);
      EXPECT_EQ(0u, b->count);
      for (uint32_t c = 0; c < b->ncolumns; c++)
        for (uint32_t i = 0; i < cap; i++) {
          ASSERT_FALSE(uih_column_has(&b->columns[c], i));
          ASSERT_EQ(0u, uih_column_get_bits(&b->columns[c], i));
        }
    }
    uih_batch_free(b);
  }
}

TEST_F(Batch, FloatsKeepTheirBitsIncludingNaNPayloads) {
  const uint16_t ids[] = {5};  // score, float32
  uih_batch* b = nullptr;
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 4, ids, 1, &b, nullptr));
  const uint32_t patterns[] = {0x7fc00001u, 0xff800000u, 0x80000000u, 0x3f800000u};
  for (uint32_t p : patterns) {
    uint32_t row;
    ASSERT_EQ(UIH_OK, uih_batch_append(b, &row, nullptr));
    uih_column_set_bits(&b->columns[0], row, p);
    EXPECT_EQ(p, uih_column_get_bits(&b->columns[0], row));
  }
  EXPECT_EQ(1.0f, uih_column_get_f32(&b->columns[0], 3));
  uih_batch_free(b);
}

// Filled a column at a time, as batch.h allows, a batch equals one filled
// event by event; growing it keeps every event and its projection.
TEST_F(Batch, ColumnAtATimeFillsAndReserveKeepsEverything) {
  std::mt19937_64 rng(9);
  uint16_t ids[] = {group_->ts->id, group_->traits[group_->ntraits - 1].id};
  uih_batch *cols = nullptr, *rows = nullptr;
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 100, ids, 2, &cols, nullptr));
  ASSERT_EQ(UIH_OK, uih_batch_create(group_, 100, ids, 2, &rows, nullptr));
  const uint32_t n = 70;
  for (uint32_t c = 0; c < cols->ncolumns; c++) {
    uih_column* col = &cols->columns[c];
    size_t w = uih_type_width(col->trait->type);
    for (uint32_t i = 0; i < n; i++) {
      if (rng() % 4 == 0) continue;
      uint64_t v = w == 1 ? rng() % 2 : w == 4 ? rng() & 0xffffffffu : rng();
      memcpy(static_cast<uint8_t*>(col->values) + i * w, &v, w);  // little-endian: the low bytes
      uih_column_mark(col, i);
    }
  }
  cols->count = n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    ASSERT_EQ(UIH_OK, uih_batch_append(rows, &row, nullptr));
    for (uint32_t c = 0; c < rows->ncolumns; c++)
      if (uih_column_has(&cols->columns[c], i))
        uih_column_set_bits(&rows->columns[c], row, uih_column_get_bits(&cols->columns[c], i));
  }
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_batch_reserve(&cols, 50, &err));  // already holds that many: unchanged
  EXPECT_EQ(100u, cols->capacity);
  ASSERT_EQ(UIH_OK, uih_batch_reserve(&cols, 3000, &err)) << err.msg;
  EXPECT_EQ(3000u, cols->capacity);
  ASSERT_EQ(n, cols->count);
  ASSERT_EQ(2u, cols->ncolumns);
  for (uint32_t c = 0; c < 2; c++) {
    EXPECT_EQ(ids[c] < ids[1 - c] ? std::min(ids[0], ids[1]) : std::max(ids[0], ids[1]), cols->columns[c].trait->id);
    for (uint32_t i = 0; i < cols->capacity; i++) {
      bool want = i < n && uih_column_has(&rows->columns[c], i);
      ASSERT_EQ(want, uih_column_has(&cols->columns[c], i) != 0) << c << " " << i;
      ASSERT_EQ(i < n ? uih_column_get_bits(&rows->columns[c], i) : 0u, uih_column_get_bits(&cols->columns[c], i));
    }
  }
  uint32_t row;
  ASSERT_EQ(UIH_OK, uih_batch_append(cols, &row, nullptr));  // room to grow into
  EXPECT_EQ(n, row);
  EXPECT_EQ(UIH_ERR_OUT_OF_RANGE, uih_batch_reserve(&cols, UIH_BATCH_EVENTS_MAX + 1, &err));
  EXPECT_EQ(3000u, cols->capacity);
  uih_batch_free(cols);
  uih_batch_free(rows);
}

}  // namespace
