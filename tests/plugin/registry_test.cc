// Every name uihstore registers is creatable from a string, options
// round-trip through the OPTIONS file, and what UihTable cannot store fails
// at open with a clear status.
#include <gtest/gtest.h>

#include "registry.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/options_util.h"
#include "test_util.h"
#include "uih_table.h"

namespace {

using namespace rocksdb;

TEST(Registry, EveryRegisteredNameIsCreatableFromAString) {
  ASSERT_FALSE(uih::RegisteredNames().empty());
  ConfigOptions cfg;
  for (const auto& name : uih::RegisteredNames()) {
    std::shared_ptr<TableFactory> f;
    Status s = TableFactory::CreateFromString(cfg, "id=" + name, &f);
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    EXPECT_EQ(name, f->Name());
  }
}

TEST(Registry, UihTableOptionsRoundTripThroughTheOptionsFile) {
  uih_test::TempDir dir;
  Options o;
  o.create_if_missing = true;
  ConfigOptions cfg;
  ColumnFamilyOptions cf;
  ASSERT_TRUE(GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(o),
                                               "table_factory={id=UihTable;restart_interval=7;readahead_size=12345;cache_size=4096}", &cf)
                  .ok());
  DB* db = nullptr;
  ASSERT_TRUE(DB::Open(Options(DBOptions(o), cf), dir.path(), &db).ok());
  delete db;
  DBOptions dbo;
  std::vector<ColumnFamilyDescriptor> cfs;
  ASSERT_TRUE(LoadLatestOptions(cfg, dir.path(), &dbo, &cfs).ok());
  auto* f = cfs[0].options.table_factory->CheckedCast<uih::UihTableFactory>();
  ASSERT_NE(nullptr, f);
  EXPECT_EQ(7u, f->options().restart_interval);
  EXPECT_EQ(12345u, f->options().readahead_size);
  EXPECT_EQ(4096u, f->options().cache_size);
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

  o.comparator = BytewiseComparator();
  ASSERT_TRUE(DB::Open(o, dir / "ok", &db).ok());
  s = db->DeleteRange(WriteOptions(), db->DefaultColumnFamily(), "a", "b");
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  delete db;

  uih::UihTableOptions bad;
  bad.restart_interval = 0;
  o.table_factory.reset(new uih::UihTableFactory(bad));
  s = DB::Open(o, dir / "bad", &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

}  // namespace
