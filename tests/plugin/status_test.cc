// Engine codes map to the rocksdb::Status a RocksDB caller expects.
#include <gtest/gtest.h>

#include "uih_plugin/status.h"

namespace {

TEST(ToStatus, MapsEveryCode) {
  using rocksdb::Status;
  struct {
    int code;
    Status::Code want;
  } cases[] = {
      {UIH_OK, Status::kOk},
      {UIH_ERR_INVALID_ARGUMENT, Status::kInvalidArgument},
      {UIH_ERR_NO_MEMORY, Status::kAborted},
      {UIH_ERR_IO, Status::kIOError},
      {UIH_ERR_CORRUPTION, Status::kCorruption},
      {UIH_ERR_SCHEMA, Status::kInvalidArgument},
      {UIH_ERR_PARSE, Status::kInvalidArgument},
      {UIH_ERR_NOT_FOUND, Status::kNotFound},
      {UIH_ERR_NOT_SUPPORTED, Status::kNotSupported},
      {UIH_ERR_TYPE_MISMATCH, Status::kInvalidArgument},
      {UIH_ERR_OUT_OF_RANGE, Status::kInvalidArgument},
      {UIH_ERR_INCOMPATIBLE, Status::kInvalidArgument},
      {UIH_ERR_INTERNAL, Status::kAborted},
  };
  static_assert(sizeof cases / sizeof *cases == UIH_ERR_LAST_ + 1, "a code has no mapping test");
  for (const auto& c : cases) {
    Status s = uih::ToStatus(c.code, "context");
    EXPECT_EQ(c.want, s.code()) << c.code;
    if (c.code != UIH_OK) {
      EXPECT_NE(std::string::npos, s.ToString().find("context")) << s.ToString();
    }
  }
  EXPECT_TRUE(uih::ToStatus(UIH_ERR_NO_MEMORY, "x").IsMemoryLimit());
}

TEST(ToStatus, UnknownCodesAreNeverOk) {
  rocksdb::Status s = uih::ToStatus(999, "future");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string::npos, s.ToString().find("999")) << s.ToString();
}

TEST(ToStatus, CarriesTheErrorMessage) {
  uih_error e{};
  uih_error_set(&e, UIH_ERR_CORRUPTION, "stripe 3: checksum mismatch");
  rocksdb::Status s = uih::ToStatus(e);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ("Corruption: stripe 3: checksum mismatch", s.ToString());
}

}  // namespace
