// Damaged UihTable files: every flipped bit and every truncation either
// fails (open, read or VerifyChecksum) or leaves contents identical to the
// original. Never a crash, never different answers.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/sst_file_writer.h"
#include "test_util.h"
#include "uih_table.h"

namespace {

using namespace rocksdb;

Options UihOptions() {
  Options o;
  o.table_factory.reset(new uih::UihTableFactory());
  return o;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The file's contents through SstFileReader, or an error status.
Status ReadAll(const std::string& path, std::map<std::string, std::string>* out) {
  SstFileReader r(UihOptions());
  Status s = r.Open(path);
  if (!s.ok()) return s;
  s = r.VerifyChecksum();
  if (!s.ok()) return s;
  ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<Iterator> it(r.NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) (*out)[it->key().ToString()] = it->value().ToString();
  if (!it->status().ok()) return it->status();
  size_t back = 0;
  for (it->SeekToLast(); it->Valid(); it->Prev()) back++;
  if (!it->status().ok()) return it->status();
  if (back != out->size()) return Status::Corruption("backward scan disagrees");
  return Status::OK();
}

class TableCorruption : public testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(3);
    SstFileWriter w(EnvOptions(), UihOptions());
    ASSERT_TRUE(w.Open(dir_ / "good.sst").ok());
    for (int i = 0; i < 60; i++) {
      char key[32];
      snprintf(key, sizeof key, "user%04d/%08d", i / 4, i * 37);
      std::string v(rng() % 40, '\0');
      for (auto& c : v) c = static_cast<char>(rng());
      ASSERT_TRUE(w.Put(key, v).ok());
      want_[key] = v;
    }
    ASSERT_TRUE(w.Finish().ok());
    good_ = ReadFile(dir_ / "good.sst");
    std::map<std::string, std::string> got;
    ASSERT_TRUE(ReadAll(dir_ / "good.sst", &got).ok());
    ASSERT_EQ(want_, got);
  }
  uih_test::TempDir dir_;
  std::string good_;
  std::map<std::string, std::string> want_;
};

TEST_F(TableCorruption, EveryFlippedBitFailsOrChangesNothing) {
  std::string path = dir_ / "bad.sst";
  size_t detected = 0, harmless = 0;
  for (size_t i = 0; i < good_.size(); i++) {
    for (int bit : {0, 5}) {
      std::string bad = good_;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      WriteFile(path, bad);
      std::map<std::string, std::string> got;
      Status s = ReadAll(path, &got);
      if (!s.ok()) {
        detected++;
        ASSERT_FALSE(s.ToString().empty());
        continue;
      }
      ASSERT_EQ(want_, got) << "byte " << i << " bit " << bit << " changed the contents undetected";
      harmless++;
    }
  }
  // Data, index and properties are checksummed: almost every flip is caught;
  // the rest hit bytes nothing reads (footer padding, an unused checksum-type
  // byte, the global sequence number field, which ingestion rewrites).
  EXPECT_GT(detected, 9 * (detected + harmless) / 10) << detected << " detected, " << harmless << " harmless";
}

TEST_F(TableCorruption, EveryTruncationFails) {
  std::string path = dir_ / "short.sst";
  for (size_t len = 0; len < good_.size(); len++) {
    WriteFile(path, good_.substr(0, len));
    std::map<std::string, std::string> got;
    Status s = ReadAll(path, &got);
    ASSERT_FALSE(s.ok()) << "truncated to " << len << " bytes but read fine";
  }
}

}  // namespace
