// GenerationFiles against a model: generations of one to four layers —
// each layer the files of one ingestion, the newer ones replacing and
// deleting stripes of the older — ingested into a column family as the
// store ingests them, then every plan of a user's stripes read back and
// compared with what the model holds and with RocksDB's own iterator over
// the column family.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "test_util.h"
#include "uih/key.h"
#include "uih_plugin/generation_files.h"
#include "uih_plugin/table.h"

namespace {

using namespace rocksdb;
using uih::GenerationFiles;
using uih::UihTableFactory;
using uih::UihTableOptions;

struct Key {
  uint64_t user;
  uint16_t group;
  int64_t ts;
  bool operator<(const Key& o) const {
    return user != o.user ? user < o.user : group != o.group ? group < o.group : ts < o.ts;
  }
};

std::string Encode(const Key& k) {
  uih_key key{k.user, k.group, k.ts};
  uint8_t b[UIH_KEY_SIZE];
  uih_key_encode(&key, b);
  return std::string(reinterpret_cast<char*>(b), sizeof b);
}

ColumnFamilyOptions GenerationOptions(uint32_t index_block_entries) {
  UihTableOptions o;
  o.reproducible = true;
  o.index_block_entries = index_block_entries;
  ColumnFamilyOptions cf;
  cf.table_factory = std::make_shared<UihTableFactory>(o);
  cf.disable_auto_compactions = true;
  return cf;
}

// A value in the model: the stripe's bytes, or a deletion a layer writes.
struct Op {
  bool deletion;
  std::string bytes;
};

class Generation {
 public:
  explicit Generation(uint32_t seed) : rng_(seed) {
    Options o;
    o.create_if_missing = true;
    DB* db = nullptr;
    Status s = DB::Open(o, dir_ / "db", &db);
    EXPECT_TRUE(s.ok()) << s.ToString();
    db_.reset(db);
    cf_options_ = GenerationOptions(rng_() % 2 ? 4 : 128);
    s = db_->CreateColumnFamily(cf_options_, "gen", &cf_);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  ~Generation() {
    if (cf_) db_->DestroyColumnFamilyHandle(cf_).PermitUncheckedError();
  }

  // One layer: its operations in key order, written into `files` files
  // split by key and ingested in one call, as the store ingests a load's.
  void Ingest(const std::map<Key, Op>& ops, size_t files) {
    std::vector<std::string> paths;
    auto it = ops.begin();
    for (size_t f = 0; f < files && it != ops.end(); f++) {
      const std::string path = dir_ / ("layer" + std::to_string(layers_) + "-" + std::to_string(f) + ".sst");
      SstFileWriter w(EnvOptions(), Options(DBOptions(), cf_options_));
      ASSERT_TRUE(w.Open(path).ok());
      for (size_t n = 0, share = (ops.size() + files - 1) / files; it != ops.end() && n < share; ++it, n++) {
        Status s = it->second.deletion ? w.Delete(Encode(it->first)) : w.Put(Encode(it->first), it->second.bytes);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
      ASSERT_TRUE(w.Finish().ok());
      paths.push_back(path);
    }
    IngestExternalFileOptions io;
    io.move_files = true;
    io.write_global_seqno = false;  // a shared file is never written
    Status s = db_->IngestExternalFile(cf_, paths, io);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (const auto& [k, op] : ops)
      if (op.deletion)
        model_.erase(k);
      else
        model_[k] = op.bytes;
    layers_++;
  }

  // The first layer: histories of a few users in two groups.
  std::map<Key, Op> Base() {
    std::map<Key, Op> ops;
    const size_t n = 1 + rng_() % 300;
    for (size_t i = 0; i < n; i++) ops[RandomKey()] = {false, RandomBytes()};
    return ops;
  }

  // A later layer: stored stripes replaced or deleted, new ones added.
  std::map<Key, Op> Delta() {
    std::map<Key, Op> ops;
    std::vector<Key> stored;
    for (const auto& kv : model_) stored.push_back(kv.first);
    const size_t n = 1 + rng_() % 60;
    for (size_t i = 0; i < n; i++) {
      const int what = static_cast<int>(rng_() % 3);
      const Key k = what < 2 && !stored.empty() ? stored[rng_() % stored.size()] : RandomKey();
      ops[k] = {what == 1, what == 1 ? std::string() : RandomBytes()};
    }
    return ops;
  }

  Key RandomKey() {
    return {rng_() % 6, static_cast<uint16_t>(1 + rng_() % 2), Timestamp()};
  }
  int64_t Timestamp() { return 1700000000000 + static_cast<int64_t>(rng_() % 200) * 1000; }
  std::string RandomBytes() {
    std::string b(rng_() % 8 == 0 ? 0 : rng_() % 200, '\0');
    for (char& c : b) c = static_cast<char>(rng_());
    return b;
  }
  // A bound of a query: the extremes, a stored stripe's start, next to one.
  int64_t Bound() {
    switch (rng_() % 6) {
      case 0: return INT64_MIN;
      case 1: return INT64_MAX;
      case 2: return Timestamp() - 1;
      case 3: return Timestamp() + 1;
      default: return Timestamp();
    }
  }

  // What a plan of (user, group, from, to) must read: the stripes starting
  // at or before `to`, from the last starting at or before `from` (or the
  // history's first).
  std::vector<std::pair<int64_t, std::string>> Expected(uint64_t user, uint16_t group, int64_t from, int64_t to) const {
    std::vector<std::pair<int64_t, std::string>> out;
    if (from > to) return out;
    for (auto it = model_.lower_bound({user, group, INT64_MIN}); it != model_.end(); ++it) {
      if (it->first.user != user || it->first.group != group || it->first.ts > to) break;
      if (it->first.ts <= from) out.clear();
      out.emplace_back(it->first.ts, it->second);
    }
    return out;
  }

  // RocksDB's own view of the column family is the model's.
  void CheckIterator() const {
    std::unique_ptr<Iterator> it(db_->NewIterator(ReadOptions(), cf_));
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model_.end());
      EXPECT_EQ(it->key().ToString(), Encode(m->first));
      EXPECT_EQ(it->value().ToString(), m->second);
    }
    ASSERT_TRUE(it->status().ok()) << it->status().ToString();
    EXPECT_EQ(m, model_.end());
  }

  DB* db() { return db_.get(); }
  ColumnFamilyHandle* cf() { return cf_; }
  std::mt19937_64& rng() { return rng_; }
  size_t layers() const { return layers_; }

 private:
  uih_test::TempDir dir_;
  std::mt19937_64 rng_;
  std::unique_ptr<DB> db_;
  ColumnFamilyOptions cf_options_;
  ColumnFamilyHandle* cf_ = nullptr;
  std::map<Key, std::string> model_;
  size_t layers_ = 0;
};

TEST(GenerationFilesTest, PlansOfLayeredGenerationsReadWhatTheLayersMergeTo) {
  int layered = 0;
  for (uint32_t seed = 0; seed < 40; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Generation g(seed);
    const size_t layers = 1 + seed % 4;
    g.Ingest(g.Base(), 1 + g.rng()() % 3);
    for (size_t l = 1; l < layers; l++) g.Ingest(g.Delta(), 1 + g.rng()() % 2);
    g.CheckIterator();
    std::unique_ptr<GenerationFiles> files;
    Status s = GenerationFiles::Open(g.db(), g.cf(), &files);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_GE(files->layers(), 1u);
    EXPECT_LE(files->layers(), files->count());
    layered += files->layers() > 1;

    std::vector<GenerationFiles::Extent> plan;
    GenerationFiles::StripeSet set;
    uih_error err{};
    for (int q = 0; q < 400; q++) {
      const uint64_t user = g.rng()() % 7;  // user 6 has no history
      const uint16_t group = static_cast<uint16_t>(1 + g.rng()() % 3);
      int64_t from = g.Bound(), to = g.Bound();
      if (g.rng()() % 8 && from > to) std::swap(from, to);
      SCOPED_TRACE("user " + std::to_string(user) + " group " + std::to_string(group) + " [" + std::to_string(from) +
                   ", " + std::to_string(to) + "]");
      ASSERT_EQ(files->Plan(user, group, from, to, &plan, &err), UIH_OK) << uih_error_message(&err);
      ASSERT_EQ(files->Read(plan.data(), plan.size(), &set, &err), UIH_OK) << uih_error_message(&err);
      const auto want = g.Expected(user, group, from, to);
      ASSERT_EQ(set.stripes.size(), want.size());
      for (size_t i = 0; i < want.size(); i++) {
        EXPECT_EQ(set.stripes[i].start, want[i].first) << "stripe " << i;
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(set.at(set.stripes[i])), set.stripes[i].len),
                  want[i].second)
            << "stripe " << i;
      }
      // A tail of the plan, as the window reader reads the newest stripes.
      if (!plan.empty()) {
        const size_t from_i = g.rng()() % plan.size();
        ASSERT_EQ(files->Read(plan.data() + from_i, plan.size() - from_i, &set, &err), UIH_OK);
        ASSERT_EQ(set.stripes.size(), want.size() - from_i);
        for (size_t i = 0; i < set.stripes.size(); i++) EXPECT_EQ(set.stripes[i].start, want[from_i + i].first);
      }
    }
  }
  EXPECT_GE(layered, 20) << "most generations of several ingestions are layered";
}

// The oldest layer holds values only: a deletion there is no stripe a load
// writes, and a plan that meets it says where it is.
TEST(GenerationFilesTest, ADeletionInTheOldestLayerIsACorruption) {
  Generation g(7);
  std::map<Key, Op> ops;
  ops[{1, 1, 1700000000000}] = {false, "a"};
  ops[{1, 1, 1700000001000}] = {true, ""};
  g.Ingest(ops, 1);
  std::unique_ptr<GenerationFiles> files;
  ASSERT_TRUE(GenerationFiles::Open(g.db(), g.cf(), &files).ok());
  std::vector<GenerationFiles::Extent> plan;
  uih_error err{};
  EXPECT_EQ(files->Plan(1, 1, INT64_MIN, INT64_MAX, &plan, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("entry 1 is of type 0, a generation holds values only"),
            std::string::npos)
      << uih_error_message(&err);
}

}  // namespace
