// ABI smoke test: a TableFactory subclass built against RocksDB's internal
// headers, registered by name, created from an options string, and driven
// through put / flush / get / multiget / iterate / ingest / reopen on
// Debian's librocksdb. A define or layout mismatch between our compile of
// the headers and the library shows up here as a crash, a sanitizer report,
// or wrong counts.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "abi/counting_table.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/options_util.h"
#include "test_util.h"

namespace {

using namespace rocksdb;
using uih_test::CountingTableFactory;

const char* kFactoryString = "id=CountingTable;inner={id=BlockBasedTable;block_size=4096}";

std::string Key(int i) {
  char buf[32];
  snprintf(buf, sizeof buf, "key%08d", i);
  return buf;
}
std::string Value(int i, int version = 0) {
  return "value-" + std::to_string(i) + "-" + std::to_string(version) + std::string(i % 97, 'v');
}

class AbiSmoke : public testing::Test {
 protected:
  void SetUp() override {
    uih_test::RegisterCountingTable();
    config_.ignore_unknown_options = false;
    config_.ignore_unsupported_options = false;
    config_.invoke_prepare_options = true;
  }

  // Options whose table factory comes from an options string.
  Options MakeOptions() {
    Options base;
    base.create_if_missing = true;
    ColumnFamilyOptions cf;
    Status s = GetColumnFamilyOptionsFromString(config_, ColumnFamilyOptions(base),
                                                std::string("table_factory={") + kFactoryString + "}", &cf);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return Options(DBOptions(base), cf);
  }

  static CountingTableFactory* Counting(const Options& o) {
    return o.table_factory->CheckedCast<CountingTableFactory>();
  }

  ConfigOptions config_;
  uih_test::TempDir dir_;
};

TEST_F(AbiSmoke, CreatesTheFactoryByNameFromAString) {
  std::shared_ptr<TableFactory> f;
  Status s = TableFactory::CreateFromString(config_, kFactoryString, &f);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_STREQ("CountingTable", f->Name());
  auto* counting = f->CheckedCast<CountingTableFactory>();
  ASSERT_NE(nullptr, counting);
  ASSERT_STREQ("BlockBasedTable", counting->inner()->Name());
  const auto* bbto = counting->inner()->GetOptions<BlockBasedTableOptions>();
  ASSERT_NE(nullptr, bbto);
  EXPECT_EQ(4096u, bbto->block_size);

  // Unknown names are errors, not silently defaulted.
  s = TableFactory::CreateFromString(config_, "id=NoSuchTable", &f);
  EXPECT_FALSE(s.ok());
}

TEST_F(AbiSmoke, PutFlushGetIterateThroughTheSubclass) {
  Options options = MakeOptions();
  CountingTableFactory* counting = Counting(options);
  ASSERT_NE(nullptr, counting);
  DB* raw = nullptr;
  ASSERT_TRUE(DB::Open(options, dir_.path(), &raw).ok());
  std::unique_ptr<DB> db(raw);

  const int n = 5000;
  std::map<std::string, std::string> model;
  for (int i = 0; i < n; i++) {
    ASSERT_TRUE(db->Put(WriteOptions(), Key(i), Value(i)).ok());
    model[Key(i)] = Value(i);
  }
  for (int i = 0; i < n; i += 7) {  // deletes and overwrites land in the same file
    ASSERT_TRUE(db->Delete(WriteOptions(), Key(i)).ok());
    model.erase(Key(i));
  }
  for (int i = 3; i < n; i += 11) {
    ASSERT_TRUE(db->Put(WriteOptions(), Key(i), Value(i, 1)).ok());
    model[Key(i)] = Value(i, 1);
  }
  ASSERT_TRUE(db->Flush(FlushOptions()).ok());
  EXPECT_EQ(1, counting->counters().builders.load());
  EXPECT_EQ(1, counting->counters().finishes.load());
  EXPECT_EQ(n, counting->counters().adds.load())
      << "the flush writes one entry per key: its latest value or its tombstone";
  EXPECT_GE(counting->counters().readers.load(), 1);

  int gets_before = counting->counters().gets.load();
  std::string v;
  for (int i = 0; i < n; i++) {
    Status s = db->Get(ReadOptions(), Key(i), &v);
    auto it = model.find(Key(i));
    if (it == model.end()) {
      ASSERT_TRUE(s.IsNotFound()) << Key(i) << " " << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_EQ(it->second, v);
    }
  }
  EXPECT_EQ(gets_before + n, counting->counters().gets.load());

  // The batched MultiGet reaches TableReader::MultiGet (the vector overload
  // would fall back to one Get per key).
  std::vector<std::string> keys = {Key(1), Key(3), Key(7), Key(14), Key(n + 5)};
  std::vector<Slice> slices(keys.begin(), keys.end());
  std::vector<PinnableSlice> values(keys.size());
  std::vector<Status> st(keys.size());
  db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), slices.data(), values.data(),
               st.data(), /*sorted_input=*/true);
  for (size_t i = 0; i < keys.size(); i++) {
    auto want = model.find(keys[i]);
    ASSERT_EQ(want != model.end(), st[i].ok()) << keys[i] << " " << st[i].ToString();
    if (want != model.end()) {
      EXPECT_EQ(want->second, values[i].ToString());
    }
  }
  EXPECT_GE(counting->counters().multigets.load(), 1);

  std::unique_ptr<Iterator> it(db->NewIterator(ReadOptions()));
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(model.end(), m);
    ASSERT_EQ(m->first, it->key().ToString());
    ASSERT_EQ(m->second, it->value().ToString());
  }
  ASSERT_TRUE(it->status().ok());
  EXPECT_EQ(model.end(), m);
  auto r = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) ASSERT_EQ(r->first, it->key().ToString());
  EXPECT_EQ(model.rend(), r);
  it->Seek(Key(n / 2));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(model.lower_bound(Key(n / 2))->first, it->key().ToString());
  EXPECT_GE(counting->counters().iterators.load(), 1);
  it.reset();

  // A second, overlapping file; compacting both reads through the readers
  // and writes through a new builder.
  for (int i = 3; i < n; i += 5) {
    ASSERT_TRUE(db->Put(WriteOptions(), Key(i), Value(i, 1)).ok());
    model[Key(i)] = Value(i, 1);
  }
  ASSERT_TRUE(db->Flush(FlushOptions()).ok());
  int builders_before = counting->counters().builders.load();
  ASSERT_TRUE(db->CompactRange(CompactRangeOptions(), nullptr, nullptr).ok());
  EXPECT_GT(counting->counters().builders.load(), builders_before);
  for (int i = 0; i < n; i += 3) {
    auto want = model.find(Key(i));
    Status s = db->Get(ReadOptions(), Key(i), &v);
    ASSERT_EQ(want != model.end(), s.ok()) << Key(i) << " " << s.ToString();
    if (want != model.end()) {
      ASSERT_EQ(want->second, v);
    }
  }

  EXPECT_TRUE(db->VerifyChecksum().ok());
  db.reset();
  EXPECT_EQ(counting->counters().readers.load(), counting->counters().readers_closed.load())
      << "every reader the DB opened was destroyed through our vtable";
}

TEST_F(AbiSmoke, SstFileWriterAndIngestion) {
  Options options = MakeOptions();
  CountingTableFactory* counting = Counting(options);
  ASSERT_NE(nullptr, counting);

  // Two non-overlapping files, written through the subclass.
  std::vector<std::string> files;
  for (int f = 0; f < 2; f++) {
    SstFileWriter writer(EnvOptions(), options);
    std::string path = dir_ / ("ingest" + std::to_string(f) + ".sst");
    ASSERT_TRUE(writer.Open(path).ok());
    for (int i = f * 1000; i < (f + 1) * 1000; i++)
      ASSERT_TRUE(writer.Put(Key(i), Value(i)).ok());
    ExternalSstFileInfo info;
    ASSERT_TRUE(writer.Finish(&info).ok());
    EXPECT_EQ(1000u, info.num_entries);
    files.push_back(path);
  }
  EXPECT_EQ(2, counting->counters().builders.load());
  EXPECT_EQ(2000, counting->counters().adds.load());

  DB* raw = nullptr;
  ASSERT_TRUE(DB::Open(options, dir_ / "db", &raw).ok());
  std::unique_ptr<DB> db(raw);
  IngestExternalFileOptions ifo;
  ifo.move_files = true;
  Status s = db->IngestExternalFile(files, ifo);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(counting->counters().readers.load(), 2);

  std::string v;
  for (int i = 0; i < 2000; i += 37) {
    ASSERT_TRUE(db->Get(ReadOptions(), Key(i), &v).ok()) << Key(i);
    ASSERT_EQ(Value(i), v);
  }
  EXPECT_TRUE(db->Get(ReadOptions(), Key(2000), &v).IsNotFound());

  // Ingested files land in one level and carry their table properties.
  ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(&meta);
  int levels_with_files = 0;
  for (const auto& level : meta.levels) levels_with_files += !level.files.empty();
  EXPECT_EQ(1, levels_with_files);
  TablePropertiesCollection props;
  ASSERT_TRUE(db->GetPropertiesOfAllTables(&props).ok());
  EXPECT_EQ(2u, props.size());
  for (const auto& p : props) EXPECT_EQ(1000u, p.second->num_entries);
}

TEST_F(AbiSmoke, OptionsFileRoundTripsTheFactory) {
  Options options = MakeOptions();
  DB* raw = nullptr;
  ASSERT_TRUE(DB::Open(options, dir_.path(), &raw).ok());
  ASSERT_TRUE(raw->Put(WriteOptions(), "k", "v").ok());
  delete raw;

  DBOptions db_options;
  std::vector<ColumnFamilyDescriptor> cfs;
  Status s = LoadLatestOptions(config_, dir_.path(), &db_options, &cfs);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(1u, cfs.size());
  auto* counting = cfs[0].options.table_factory->CheckedCast<CountingTableFactory>();
  ASSERT_NE(nullptr, counting) << cfs[0].options.table_factory->Name();
  const auto* bbto = counting->inner()->GetOptions<BlockBasedTableOptions>();
  ASSERT_NE(nullptr, bbto);
  EXPECT_EQ(4096u, bbto->block_size);
}

}  // namespace
