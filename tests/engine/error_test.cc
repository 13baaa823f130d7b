// Error codes keep their numbers; messages format, truncate and stack.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "error_internal.h"
#include "uih/error.h"

namespace {

TEST(Error, CodesAreFixed) {
  // Stored in logs and returned across the ABI: these never change.
  EXPECT_EQ(0, UIH_OK);
  EXPECT_EQ(1, UIH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(2, UIH_ERR_NO_MEMORY);
  EXPECT_EQ(3, UIH_ERR_IO);
  EXPECT_EQ(4, UIH_ERR_CORRUPTION);
  EXPECT_EQ(5, UIH_ERR_SCHEMA);
  EXPECT_EQ(6, UIH_ERR_PARSE);
  EXPECT_EQ(7, UIH_ERR_NOT_FOUND);
  EXPECT_EQ(8, UIH_ERR_NOT_SUPPORTED);
  EXPECT_EQ(9, UIH_ERR_TYPE_MISMATCH);
  EXPECT_EQ(10, UIH_ERR_OUT_OF_RANGE);
  EXPECT_EQ(11, UIH_ERR_INCOMPATIBLE);
  EXPECT_EQ(12, UIH_ERR_INTERNAL);
}

TEST(Error, EveryCodeHasADistinctDescription) {
  for (int a = 0; a <= UIH_ERR_LAST_; a++) {
    ASSERT_STRNE("unknown error", uih_strerror(a)) << a;
    for (int b = 0; b < a; b++) ASSERT_STRNE(uih_strerror(a), uih_strerror(b));
  }
  EXPECT_STREQ("unknown error", uih_strerror(-1));
  EXPECT_STREQ("unknown error", uih_strerror(UIH_ERR_LAST_ + 1));
}

TEST(Error, SetFormatsAndReturnsTheCode) {
  uih_error e{};
  EXPECT_EQ(UIH_ERR_PARSE, uih_error_set(&e, UIH_ERR_PARSE, "line %d: '%s' is not an integer", 1832, "17x"));
  EXPECT_EQ(UIH_ERR_PARSE, e.code);
  EXPECT_STREQ("line 1832: '17x' is not an integer", uih_error_message(&e));
  EXPECT_EQ(UIH_ERR_PARSE, uih_error_prefix(&e, "%s: ", "day.csv"));
  EXPECT_STREQ("day.csv: line 1832: '17x' is not an integer", e.msg);
  EXPECT_EQ(UIH_ERR_IO, uih_error_set(nullptr, UIH_ERR_IO, "ignored"));
  EXPECT_EQ(UIH_OK, uih_error_prefix(nullptr, "x"));
  uih_error_clear(&e);
  EXPECT_EQ(UIH_OK, e.code);
  EXPECT_STREQ("ok", uih_error_message(&e));
  e.code = UIH_ERR_IO;
  EXPECT_STREQ("I/O error", uih_error_message(&e));  // no message set: the description
}

TEST(Error, LongMessagesAreCutVisibly) {
  uih_error e{};
  std::string long_text(2000, 'x');
  uih_error_set(&e, UIH_ERR_SCHEMA, "%s", long_text.c_str());
  EXPECT_EQ(UIH_ERROR_MSG_MAX - 1, std::strlen(e.msg));
  EXPECT_STREQ("...", e.msg + UIH_ERROR_MSG_MAX - 4);
  uih_error_set(&e, UIH_ERR_SCHEMA, "tail");
  uih_error_prefix(&e, "%s", long_text.c_str());
  EXPECT_EQ(UIH_ERROR_MSG_MAX - 1, std::strlen(e.msg));
  EXPECT_STREQ("...", e.msg + UIH_ERROR_MSG_MAX - 4);
}

TEST(Error, CorruptionGoesThroughOneFunction) {
  uih_error e{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_corruption(&e, "stripe at offset %d: bad checksum", 4096));
  EXPECT_STREQ("stripe at offset 4096: bad checksum", e.msg);
}

}  // namespace
