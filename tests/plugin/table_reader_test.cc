// UihTable's TableReader and TableBuilder driven directly, for the calls
// no public RocksDB API reaches in 7.8.3 (Prefetch, Abandon) or reaches
// only as estimates (ApproximateOffsetOf, ApproximateSize, memory).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>

#include "db/dbformat.h"
#include "file/random_access_file_reader.h"
#include "file/writable_file_writer.h"
#include "options/cf_options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/file_system.h"
#include "rocksdb/sst_file_writer.h"
#include "table/internal_iterator.h"
#include "table/table_builder.h"
#include "table/table_reader.h"
#include "test_util.h"
#include "uih_plugin/table.h"

namespace {

using namespace rocksdb;

std::string Seek(const std::string& user_key) {
  return InternalKey(user_key, kMaxSequenceNumber, kValueTypeForSeek).Encode().ToString();
}
std::string Last(const std::string& user_key) {
  return InternalKey(user_key, 0, static_cast<ValueType>(0)).Encode().ToString();
}

class TableReaderTest : public testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(11);
    while (data_.size() < 300) {
      std::string k = "key" + std::to_string(rng() % 100000);
      data_[k] = std::string(1 + rng() % 700, static_cast<char>('a' + rng() % 26));
    }
    SstFileWriter w(EnvOptions(), Opts(0));
    ASSERT_TRUE(w.Open(path_).ok());
    for (const auto& [k, v] : data_) ASSERT_TRUE(w.Put(k, v).ok());
    ASSERT_TRUE(w.Finish().ok());
  }

  static Options Opts(size_t cache_size) {
    uih::UihTableOptions t;
    t.cache_size = cache_size;
    Options o;
    o.table_factory = std::make_shared<uih::UihTableFactory>(t);
    return o;
  }

  // A reader of the file through a factory of its own (so its own cache).
  std::unique_ptr<TableReader> Open(const Options& o) {
    auto fs = o.env->GetFileSystem();
    std::unique_ptr<FSRandomAccessFile> f;
    uint64_t size = 0;
    EXPECT_TRUE(fs->NewRandomAccessFile(path_, FileOptions(), &f, nullptr).ok());
    EXPECT_TRUE(fs->GetFileSize(path_, IOOptions(), &size, nullptr).ok());
    ImmutableOptions io(o);
    // TableReaderOptions keeps references: every argument must outlive it.
    const EnvOptions env;
    TableReaderOptions tro(io, nullptr, env, icmp_);
    std::unique_ptr<TableReader> t;
    Status s = o.table_factory->NewTableReader(
        tro, std::make_unique<RandomAccessFileReader>(std::move(f), path_), size, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }

  InternalKeyComparator icmp_{BytewiseComparator()};
  uih_test::TempDir dir_;
  std::string path_ = dir_ / "t.sst";
  std::map<std::string, std::string> data_;
};

// With a value cache, Prefetch loads exactly the entries in [begin, end]:
// afterwards an iterator that may not do I/O reads those and only those.
TEST_F(TableReaderTest, PrefetchFillsTheValueCacheWithTheRange) {
  std::mt19937_64 rng(5);
  std::vector<std::string> keys;
  for (const auto& kv : data_) keys.push_back(kv.first);
  for (int trial = 0; trial < 40; trial++) {
    Options o = Opts(16 << 20);
    std::unique_ptr<TableReader> t = Open(o);
    ASSERT_TRUE(t);
    // Bounds: present keys, absent keys between them, or open.
    auto bound = [&]() -> std::string {
      const std::string& k = keys[rng() % keys.size()];
      return rng() % 2 ? k : k + "\x01";
    };
    bool open_begin = trial % 7 == 0, open_end = trial % 5 == 0;
    std::string lo = open_begin ? "" : bound(), hi = open_end ? "" : bound();
    if (!open_begin && !open_end && hi < lo) std::swap(lo, hi);
    std::string b = Seek(lo), e = Last(hi);
    Slice bs(b), es(e);
    ASSERT_TRUE(t->Prefetch(open_begin ? nullptr : &bs, open_end ? nullptr : &es).ok());
    ReadOptions no_io;
    no_io.read_tier = kBlockCacheTier;
    for (const auto& [k, v] : data_) {
      bool in = (open_begin || k >= lo) && (open_end || k <= hi);
      std::unique_ptr<InternalIterator> it(t->NewIterator(no_io, nullptr, nullptr, false, TableReaderCaller::kUncategorized));
      it->Seek(Seek(k));
      if (in) {
        ASSERT_TRUE(it->Valid()) << k << ": " << it->status().ToString();
        EXPECT_EQ(ExtractUserKey(it->key()).ToString(), k);
        EXPECT_EQ(it->value().ToString(), v);
      } else {
        EXPECT_TRUE(it->status().IsIncomplete()) << k << " outside [" << lo << ", " << hi << "] was cached";
      }
    }
  }
}

TEST_F(TableReaderTest, PrefetchRejectsAReversedRange) {
  std::unique_ptr<TableReader> t = Open(Opts(1 << 20));
  std::string b = Seek("key9"), e = Last("key1");
  Slice bs(b), es(e);
  EXPECT_TRUE(t->Prefetch(&bs, &es).IsInvalidArgument());
}

// Without a cache, Prefetch asks the file system to read ahead and the
// reader's answers stay the same.
TEST_F(TableReaderTest, PrefetchWithoutACacheKeepsReadsCorrect) {
  std::unique_ptr<TableReader> t = Open(Opts(0));
  std::string b = Seek(data_.begin()->first), e = Last(data_.rbegin()->first);
  Slice bs(b), es(e);
  ASSERT_TRUE(t->Prefetch(&bs, &es).ok());
  ASSERT_TRUE(t->Prefetch(nullptr, nullptr).ok());
  std::unique_ptr<InternalIterator> it(t->NewIterator(ReadOptions(), nullptr, nullptr, false, TableReaderCaller::kUncategorized));
  auto want = data_.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++want) {
    ASSERT_NE(want, data_.end());
    EXPECT_EQ(ExtractUserKey(it->key()).ToString(), want->first);
    EXPECT_EQ(it->value().ToString(), want->second);
  }
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ(want, data_.end());
}

// Offsets are exact for UihTable: the offset of a key is where its value
// starts in the data section (values in key order, each followed by a
// 4-byte checksum), past the end it is the data size, and a size is the
// difference of two offsets.
TEST_F(TableReaderTest, ApproximateOffsetsAreTheValuesPositions) {
  std::unique_ptr<TableReader> t = Open(Opts(0));
  uint64_t at = 0;
  for (const auto& [k, v] : data_) {
    EXPECT_EQ(at, t->ApproximateOffsetOf(Seek(k), TableReaderCaller::kUncategorized)) << k;
    // A key just after k (absent) lands on the next value.
    at += v.size() + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    EXPECT_EQ(at, t->ApproximateOffsetOf(Seek(k + '\x01'), TableReaderCaller::kUncategorized)) << k;
  }
  const uint64_t data_size = at;
  EXPECT_EQ(0u, t->ApproximateOffsetOf(Seek(""), TableReaderCaller::kUncategorized));
  EXPECT_EQ(data_size, t->ApproximateOffsetOf(Seek("\xff"), TableReaderCaller::kUncategorized));
  EXPECT_EQ(data_size, t->ApproximateSize(Seek(""), Seek("\xff"), TableReaderCaller::kUncategorized));
  // [second key, last key): everything but the first and the last value.
  auto second = std::next(data_.begin());
  uint64_t inner = data_size - (data_.begin()->second.size() + UIH_TABLE_VALUE_CHECKSUM_SIZE) -
                   (data_.rbegin()->second.size() + UIH_TABLE_VALUE_CHECKSUM_SIZE);
  EXPECT_EQ(inner, t->ApproximateSize(Seek(second->first), Seek(data_.rbegin()->first),
                                      TableReaderCaller::kUncategorized));
  EXPECT_EQ(0u, t->ApproximateSize(Seek("\xff"), Seek(""), TableReaderCaller::kUncategorized)) << "reversed";
  // The reader's memory is its index, as the file's properties size it.
  SstFileReader r(Opts(0));
  ASSERT_TRUE(r.Open(path_).ok());
  uint64_t index_size = r.GetTableProperties()->index_size;
  EXPECT_GT(t->ApproximateMemoryUsage(), 0u);
  EXPECT_GE(t->ApproximateMemoryUsage(), index_size / 2);
  EXPECT_LE(t->ApproximateMemoryUsage(), 2 * index_size + 4096);
}

// Abandon gives the file back: nothing is written to it afterwards, and
// the builder refuses more entries and Finish.
TEST(UihTableBuilder, AbandonStopsWritingTheFile) {
  uih_test::TempDir dir;
  Options o;
  o.table_factory = std::make_shared<uih::UihTableFactory>();
  ImmutableOptions io(o);
  MutableCFOptions mo(o);
  InternalKeyComparator icmp(BytewiseComparator());
  IntTblPropCollectorFactories collectors;
  const std::string cf_name = "default";
  TableBuilderOptions tbo(io, mo, icmp, &collectors, kNoCompression, CompressionOptions(), 0, cf_name, -1);
  std::unique_ptr<FSWritableFile> f;
  const std::string path = dir / "abandoned.sst";
  ASSERT_TRUE(io.fs->NewWritableFile(path, FileOptions(), &f, nullptr).ok());
  WritableFileWriter w(std::move(f), path, FileOptions());
  std::unique_ptr<TableBuilder> b(o.table_factory->NewTableBuilder(tbo, &w));
  for (int i = 0; i < 10; i++)
    b->Add(InternalKey("k" + std::to_string(i), 1, kTypeValue).Encode(), std::string(100, 'v'));
  ASSERT_TRUE(b->status().ok());
  const uint64_t written = b->FileSize();
  EXPECT_EQ(10 * (100 + UIH_TABLE_VALUE_CHECKSUM_SIZE), written) << "values go straight to the file";
  b->Abandon();
  b->Add(InternalKey("k99", 1, kTypeValue).Encode(), std::string(100, 'v'));
  EXPECT_FALSE(b->status().ok());
  EXPECT_FALSE(b->Finish().ok());
  EXPECT_EQ(written, b->FileSize());
  b.reset();
  ASSERT_TRUE(w.Close().ok());
  uint64_t size = 0;
  ASSERT_TRUE(io.fs->GetFileSize(path, IOOptions(), &size, nullptr).ok());
  EXPECT_EQ(written, size) << "bytes were written after Abandon";
}

}  // namespace
