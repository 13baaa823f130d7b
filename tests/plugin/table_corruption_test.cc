// Damaged UihTable files, for both index layouts: every flipped bit and
// every truncation either fails with Corruption (open, read or
// VerifyChecksum) or leaves contents identical to the original; a damaged
// value in a DB is reported by every read. Never a crash, never different
// answers.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/sst_file_writer.h"
#include "table/format.h"
#include "test_util.h"
#include "uih/key.h"
#include "uih_plugin/table.h"

namespace {

using namespace rocksdb;

Options UihOptions() {
  Options o;
  o.table_factory.reset(new uih::UihTableFactory());
  return o;
}

using uih_test::ReadFile;
using uih_test::WriteFile;

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

// What may go wrong with a damaged file: Corruption, or NotSupported for a
// flip that turns a version field (footer, checksum tail) into a version
// this build does not know. Anything else (an assertion, an IOError, OK
// with other contents) is a bug.
bool Expected(const Status& s, bool in_version_field) {
  return s.IsCorruption() || (in_version_field && s.IsNotSupported());
}

// A small table per index layout: 60 keys of 13 bytes (prefix layout) or
// 60 UIH keys of 18 bytes (numeric layout), random values.
class TableCorruption : public testing::TestWithParam<uih::UihTableOptions::IndexLayout> {
 protected:
  Options TableOptions() const {
    uih::UihTableOptions to;
    to.index_layout = GetParam();
    to.index_block_entries = 8;  // several numeric blocks
    Options o;
    o.table_factory.reset(new uih::UihTableFactory(to));
    return o;
  }
  void SetUp() override {
    std::mt19937_64 rng(3);
    SstFileWriter w(EnvOptions(), TableOptions());
    ASSERT_TRUE(w.Open(dir_ / "good.sst").ok());
    for (int i = 0; i < 60; i++) {
      std::string key;
      if (GetParam() == uih::UihTableOptions::IndexLayout::kNumeric) {
        uih_key k{static_cast<uint64_t>(1000 + i / 4), 1, 1700000000000 + i * 37};
        uint8_t b[UIH_KEY_SIZE];
        uih_key_encode(&k, b);
        key.assign(reinterpret_cast<char*>(b), sizeof b);
      } else {
        char buf[32];
        snprintf(buf, sizeof buf, "user%04d/%08d", i / 4, i * 37);
        key = buf;
      }
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
    // The layout asked for is the one written.
    SstFileReader r(TableOptions());
    ASSERT_TRUE(r.Open(dir_ / "good.sst").ok());
    const auto& up = r.GetTableProperties()->user_collected_properties;
    EXPECT_EQ(GetParam() == uih::UihTableOptions::IndexLayout::kNumeric ? "numeric" : "prefix",
              up.at(uih::kIndexLayoutProperty));
  }
  // Byte i lies in a field that holds a format version: the footer's, or
  // the checksum tail's (plugin/table/tail.h; 40 bytes before the footer).
  bool InVersionField(size_t i) const {
    const size_t footer = good_.size() - Footer::kNewVersionsEncodedLength, tail = footer - 40;
    return i >= footer || (i >= tail + 4 && i < tail + 8);
  }
  uih_test::TempDir dir_;
  std::string good_;
  std::map<std::string, std::string> want_;
};

TEST_P(TableCorruption, EveryFlippedBitFailsOrChangesNothing) {
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
        ASSERT_TRUE(Expected(s, InVersionField(i))) << "byte " << i << " bit " << bit << ": " << s.ToString();
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

TEST_P(TableCorruption, EveryTruncationFails) {
  std::string path = dir_ / "short.sst";
  for (size_t len = 0; len < good_.size(); len++) {
    WriteFile(path, good_.substr(0, len));
    std::map<std::string, std::string> got;
    Status s = ReadAll(path, &got);
    ASSERT_FALSE(s.ok()) << "truncated to " << len << " bytes but read fine";
    ASSERT_TRUE(s.IsCorruption()) << "truncated to " << len << ": " << s.ToString();
  }
}

// A damaged value inside a live DB: reads that verify checksums (Get,
// MultiGet, iterators) and DB::VerifyChecksum report Corruption naming the
// file; the other keys still read fine.
TEST_P(TableCorruption, DamagedValueInADbIsReportedByEveryRead) {
  // The first value's first byte: values start at offset 0 (uih/table.h).
  ASSERT_GT(want_.begin()->second.size(), 0u);
  std::string bad = good_;
  bad[0] = static_cast<char>(bad[0] ^ 1);
  WriteFile(dir_ / "bad.sst", bad);
  Options o = TableOptions();
  o.create_if_missing = true;
  DB* raw = nullptr;
  ASSERT_TRUE(DB::Open(o, dir_ / "db", &raw).ok());
  std::unique_ptr<DB> db(raw);
  ASSERT_TRUE(db->IngestExternalFile({dir_ / "bad.sst"}, IngestExternalFileOptions()).ok());
  const std::string& damaged = want_.begin()->first;
  const std::string& fine = std::next(want_.begin())->first;
  ReadOptions ro;
  ro.verify_checksums = true;
  std::string v;
  Status s = db->Get(ro, damaged, &v);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find(".sst")) << "the error names no file: " << s.ToString();
  ASSERT_TRUE(db->Get(ro, fine, &v).ok());
  EXPECT_EQ(std::next(want_.begin())->second, v);
  std::vector<Slice> keys = {damaged, fine};
  std::vector<PinnableSlice> vals(2);
  std::vector<Status> st(2);
  db->MultiGet(ro, db->DefaultColumnFamily(), keys.size(), keys.data(), vals.data(), st.data());
  EXPECT_TRUE(st[0].IsCorruption()) << st[0].ToString();
  EXPECT_TRUE(st[1].ok()) << st[1].ToString();
  std::unique_ptr<Iterator> it(db->NewIterator(ro));
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsCorruption()) << it->status().ToString();
  s = db->VerifyChecksum();
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Layouts, TableCorruption,
                         testing::Values(uih::UihTableOptions::IndexLayout::kPrefix,
                                         uih::UihTableOptions::IndexLayout::kNumeric),
                         [](const testing::TestParamInfo<uih::UihTableOptions::IndexLayout>& p) {
                           return std::string(p.param == uih::UihTableOptions::IndexLayout::kNumeric ? "Numeric"
                                                                                                     : "Prefix");
                         });

}  // namespace
