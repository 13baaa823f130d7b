// Every name uihstore registers is creatable from a string, options
// round-trip through the OPTIONS file, and what UihTable cannot store fails
// at open with a clear status.
#include <gtest/gtest.h>

#include "uih_plugin/registry.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/options_util.h"
#include "test_util.h"
#include "uih_plugin/events.h"
#include "uih_plugin/table.h"

namespace {

using namespace rocksdb;

TEST(Registry, EveryRegisteredNameIsCreatableFromAString) {
  ASSERT_EQ(3u, uih::RegisteredNames().size());
  ConfigOptions cfg;
  for (const auto& r : uih::RegisteredNames()) {
    ColumnFamilyOptions cf;
    Status s = GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(), r.option + "=" + r.name, &cf);
    ASSERT_TRUE(s.ok()) << r.option << "=" << r.name << ": " << s.ToString();
    const char* got = r.option == "table_factory"    ? cf.table_factory->Name()
                      : r.option == "merge_operator" ? cf.merge_operator->Name()
                                                     : cf.compaction_filter_factory->Name();
    EXPECT_STREQ(r.name.c_str(), got);
  }
}

// Opens a DB whose column family is `cf_options` and returns the column
// family options RocksDB loads back from the OPTIONS file it wrote.
ColumnFamilyOptions RoundTrip(const uih_test::TempDir& dir, const std::string& cf_options) {
  Options o;
  o.create_if_missing = true;
  ConfigOptions cfg;
  ColumnFamilyOptions cf;
  Status s = GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(o), cf_options, &cf);
  EXPECT_TRUE(s.ok()) << s.ToString();
  DB* db = nullptr;
  s = DB::Open(Options(DBOptions(o), cf), dir.path(), &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  delete db;
  DBOptions dbo;
  std::vector<ColumnFamilyDescriptor> cfs;
  s = LoadLatestOptions(cfg, dir.path(), &dbo, &cfs);
  EXPECT_TRUE(s.ok() && !cfs.empty()) << s.ToString();
  return cfs.empty() ? ColumnFamilyOptions() : cfs[0].options;
}

TEST(Registry, UihAppendOptionsRoundTripAndUihRetentionIsAFactory) {
  uih_test::TempDir dir;
  ColumnFamilyOptions cf = RoundTrip(dir,
                                     "merge_operator={id=UihAppend;max_events=77;max_age=-1};"
                                     "compaction_filter_factory=UihRetention");
  ASSERT_NE(nullptr, cf.merge_operator);
  auto* op = cf.merge_operator->CheckedCast<uih::UihAppendOperator>();
  ASSERT_NE(nullptr, op);
  EXPECT_EQ(77u, op->limits().max_events);
  EXPECT_EQ(-1, op->limits().max_age);
  ASSERT_NE(nullptr, cf.compaction_filter_factory);
  EXPECT_NE(nullptr, cf.compaction_filter_factory->CheckedCast<uih::UihRetentionFactory>());
  // A compaction_filter (one static object per process) cannot hold a
  // store's watermark: the error says what to write instead.
  Status s = GetColumnFamilyOptionsFromString(ConfigOptions(), ColumnFamilyOptions(),
                                              "compaction_filter=UihRetention", &cf);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("compaction_filter_factory=UihRetention"))
      << s.ToString();
}

TEST(Registry, UihTableOptionsRoundTripThroughTheOptionsFile) {
  uih_test::TempDir dir;
  ColumnFamilyOptions cf = RoundTrip(
      dir, "table_factory={id=UihTable;index_layout=numeric;index_block_entries=99;restart_interval=7;"
           "readahead_size=12345;cache_size=4096;use_io_uring=false}");
  auto* f = cf.table_factory->CheckedCast<uih::UihTableFactory>();
  ASSERT_NE(nullptr, f);
  EXPECT_EQ(uih::UihTableOptions::IndexLayout::kNumeric, f->options().index_layout);
  EXPECT_EQ(99u, f->options().index_block_entries);
  EXPECT_EQ(7u, f->options().restart_interval);
  EXPECT_EQ(12345u, f->options().readahead_size);
  EXPECT_EQ(4096u, f->options().cache_size);
  EXPECT_FALSE(f->options().use_io_uring);
}

TEST(Registry, UnsupportedSetupsFailAtOpen) {
  uih_test::TempDir dir;
  Options o;
  o.create_if_missing = true;
  o.table_factory.reset(new uih::UihTableFactory());
  o.comparator = ReverseBytewiseComparator();
  DB* db = nullptr;
  Status s = DB::Open(o, dir / "reverse", &db);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("bytewise")) << s.ToString();

  // User-defined timestamps: a different comparator, so refused the same way.
  const Comparator* with_ts = nullptr;
  ASSERT_TRUE(Comparator::CreateFromString(ConfigOptions(), "leveldb.BytewiseComparator.u64ts", &with_ts).ok());
  ASSERT_EQ(8u, with_ts->timestamp_size());
  o.comparator = with_ts;
  s = DB::Open(o, dir / "timestamps", &db);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();

  o.comparator = BytewiseComparator();
  ASSERT_TRUE(DB::Open(o, dir / "ok", &db).ok());
  s = db->DeleteRange(WriteOptions(), db->DefaultColumnFamily(), "a", "b");
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  delete db;

  // SstFileWriter takes a range deletion without asking the table (7.8.3),
  // so the file fails at Finish and no file with the deletion dropped is made.
  SstFileWriter w(EnvOptions(), o);
  ASSERT_TRUE(w.Open(dir / "range.sst").ok());
  ASSERT_TRUE(w.Put("a", "1").ok());
  w.DeleteRange("b", "c").PermitUncheckedError();
  s = w.Finish();
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("range deletions")) << s.ToString();

  uih::UihTableOptions bad;
  bad.restart_interval = 0;
  o.table_factory.reset(new uih::UihTableFactory(bad));
  s = DB::Open(o, dir / "bad", &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  bad = uih::UihTableOptions();
  bad.index_block_entries = 1025;
  o.table_factory.reset(new uih::UihTableFactory(bad));
  s = DB::Open(o, dir / "bad_block", &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("index_block_entries")) << s.ToString();

  // A layout name RocksDB's option parser does not know.
  ConfigOptions cfg;
  ColumnFamilyOptions cf;
  s = GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(),
                                       "table_factory={id=UihTable;index_layout=columnar}", &cf);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

// index_layout=numeric on keys that are not 18 bytes fails the flush with a
// message saying why, and loses nothing: the data stays in the memtable/WAL.
TEST(Registry, NumericLayoutRefusesOtherKeysAtFlush) {
  uih_test::TempDir dir;
  Options o;
  o.create_if_missing = true;
  uih::UihTableOptions to;
  to.index_layout = uih::UihTableOptions::IndexLayout::kNumeric;
  o.table_factory.reset(new uih::UihTableFactory(to));
  DB* db = nullptr;
  ASSERT_TRUE(DB::Open(o, dir / "db", &db).ok());
  std::unique_ptr<DB> guard(db);
  ASSERT_TRUE(db->Put(WriteOptions(), "short key", "v").ok());
  Status s = db->Flush(FlushOptions());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string::npos, s.ToString().find("18-byte keys")) << s.ToString();
  std::string v;
  s = db->Get(ReadOptions(), "short key", &v);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ("v", v);
}

}  // namespace
