// MultiGet under read faults. A read fault must fail exactly the keys whose
// own entries it hit, with IOError, and every duplicate of such a key in the
// batch alike: RocksDB 7.8.3's FilePickerMultiGet skips the duplicates of a
// key that ends its file once that key is done, without setting up their
// search in the next level (docs/rocksdb-7.8.3-table-notes.md, "MultiGet").
//
// A fault here is "the first read of file F whose bytes hold key K's value
// fails" (one shot per armed (file, key)), the same rule whoever reads:
// RocksDB's file layer (BlockBasedTable, and UihTable when the file system
// is not the default one) or UihTable's own batched reads (io_uring or
// pread, faulted through uih_io_set_fault). Every value embeds its key as
// "<key>", and nothing is compressed, so the rule can look at the bytes.
#include <fcntl.h>
#include <iostream>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/options_util.h"
#include "table/multiget_context.h"
#include "test_util.h"
#include "uih/io.h"

namespace {

using namespace rocksdb;

// ---- the fault plan, shared by both ways of reading -------------------------

class FaultPlan {
 public:
  // Which layer each table file holds (by file number), once the DB is built.
  void SetLayers(std::map<uint64_t, int> layer_of_file) {
    std::lock_guard<std::mutex> l(mu_);
    layer_of_file_ = std::move(layer_of_file);
  }
  void Arm(const std::set<std::pair<int, std::string>>& faults) {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = faults;
    fired_ = 0;
  }
  int Fired() {
    std::lock_guard<std::mutex> l(mu_);
    return fired_;
  }
  // True when this read of `path` must fail (and the fault is spent).
  bool Hit(const std::string& path, const char* bytes, size_t n) {
    std::lock_guard<std::mutex> l(mu_);
    if (armed_.empty()) return false;
    auto f = layer_of_file_.find(FileNumber(path));
    if (f == layer_of_file_.end()) return false;
    std::string_view got(bytes, n);
    for (auto it = armed_.begin(); it != armed_.end(); ++it) {
      if (it->first == f->second && got.find("<" + it->second + ">") != std::string_view::npos) {
        armed_.erase(it);
        fired_++;
        return true;
      }
    }
    return false;
  }

 private:
  static uint64_t FileNumber(const std::string& path) {
    size_t slash = path.find_last_of('/');
    std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.size() < 5 || base.substr(base.size() - 4) != ".sst") return 0;
    return std::strtoull(base.c_str(), nullptr, 10);
  }
  std::mutex mu_;
  std::map<uint64_t, int> layer_of_file_;
  std::set<std::pair<int, std::string>> armed_;
  int fired_ = 0;
};

// RocksDB's file layer: a file system whose random-access files consult the plan.
class FaultFile : public FSRandomAccessFileOwnerWrapper {
 public:
  FaultFile(std::unique_ptr<FSRandomAccessFile>&& f, std::string path, FaultPlan* plan)
      : FSRandomAccessFileOwnerWrapper(std::move(f)), path_(std::move(path)), plan_(plan) {}
  IOStatus Read(uint64_t offset, size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* dbg) const override {
    IOStatus s = target()->Read(offset, n, o, result, scratch, dbg);
    if (s.ok() && plan_->Hit(path_, result->data(), result->size()))
      return IOStatus::IOError("injected read fault in " + path_);
    return s;
  }
  IOStatus MultiRead(FSReadRequest* reqs, size_t n, const IOOptions& o, IODebugContext* dbg) override {
    for (size_t i = 0; i < n; i++)
      reqs[i].status = Read(reqs[i].offset, reqs[i].len, o, &reqs[i].result, reqs[i].scratch, dbg);
    return IOStatus::OK();
  }

 private:
  std::string path_;
  FaultPlan* plan_;
};

class FaultFs : public FileSystemWrapper {
 public:
  FaultFs(FaultPlan* plan) : FileSystemWrapper(FileSystem::Default()), plan_(plan) {}
  const char* Name() const override { return "FaultFs"; }
  IOStatus NewRandomAccessFile(const std::string& fname, const FileOptions& fo,
                               std::unique_ptr<FSRandomAccessFile>* out, IODebugContext* dbg) override {
    std::unique_ptr<FSRandomAccessFile> f;
    IOStatus s = target()->NewRandomAccessFile(fname, fo, &f, dbg);
    if (s.ok()) out->reset(new FaultFile(std::move(f), fname, plan_));
    return s;
  }

 private:
  FaultPlan* plan_;
};

// UihTable's own batched reads: the I/O layer's hook consults the plan.
FaultPlan* hooked_plan = nullptr;
int64_t HookedRead(void*, int fd, uint64_t, const void* bytes, int64_t res) {
  if (res <= 0 || !hooked_plan) return res;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return res;
  path[n] = '\0';
  return hooked_plan->Hit(path, static_cast<const char*>(bytes), static_cast<size_t>(res)) ? -EIO : res;
}

// ---- the databases ---------------------------------------------------------

enum class Reader { kBlockBased, kUihFileLayer, kUihUring, kUihPread };
const char* Name(Reader r) {
  switch (r) {
    case Reader::kBlockBased: return "BlockBasedTable";
    case Reader::kUihFileLayer: return "UihTable through RocksDB's file layer";
    case Reader::kUihUring: return "UihTable batched through io_uring";
    case Reader::kUihPread: return "UihTable batched through pread";
  }
  return "?";
}
const Reader kReaders[] = {Reader::kBlockBased, Reader::kUihFileLayer, Reader::kUihUring, Reader::kUihPread};

// One operation on a key in a layer; a layer is one table file, written
// oldest first, at a level of its own (or at L0).
struct Op {
  char type;  // 'p' put, 'm' merge, 'd' delete
  std::string value;
};
using Layer = std::map<std::string, Op>;

struct Built {
  std::unique_ptr<Env> env;  // outlives the DB
  std::unique_ptr<DB> db;
  std::map<uint64_t, int> layer_of_file;  // for FaultPlan::SetLayers
};

Options MakeOptions(Reader r, Env* env) {
  Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = true;
  o.num_levels = 7;
  o.compression = kNoCompression;
  o.target_file_size_base = 64 << 20;
  o.env = env;
  ConfigOptions cfg;
  cfg.ignore_unsupported_options = false;
  ColumnFamilyOptions cf;
  std::string spec = "merge_operator=stringappend;";
  if (r != Reader::kBlockBased) {
    spec += std::string("table_factory={id=UihTable;cache_size=0;use_io_uring=") +
            (r == Reader::kUihUring ? "true}" : "false}");
  }
  Status s = GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(o), spec, &cf);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (r == Reader::kBlockBased) {
    // One entry per block, no cache, no filter, index keys not shortened:
    // a key's lookup reads the block of the first key at or after it, once
    // for all its duplicates (and, after a merge operand, the next block:
    // see the arming rule). (In 7.8.3 no_block_cache in an options string
    // keeps the default cache; the struct does not.)
    BlockBasedTableOptions t;
    t.block_size = 1;
    t.no_block_cache = true;
    t.index_shortening = BlockBasedTableOptions::IndexShorteningMode::kNoShortening;
    cf.table_factory.reset(NewBlockBasedTableFactory(t));
  }
  return Options(DBOptions(o), cf);
}

uint64_t FileNumber(const LiveFileMetaData& f) {
  return std::strtoull(f.name.c_str() + (f.name[0] == '/'), nullptr, 10);
}

// Writes the layers (oldest first), each flushed and moved to its level,
// and notes which file holds which layer.
Built Build(Reader r, const std::string& dir, const std::vector<Layer>& layers, const std::vector<int>& levels,
            FaultPlan* plan) {  // the plan faults this DB's reads once armed
  Built b;
  bool file_layer = r == Reader::kBlockBased || r == Reader::kUihFileLayer;
  if (file_layer) b.env = NewCompositeEnv(std::make_shared<FaultFs>(plan));
  DB* db = nullptr;
  Status s = DB::Open(MakeOptions(r, b.env ? b.env.get() : Env::Default()), dir, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  b.db.reset(db);
  std::map<uint64_t, int>& layer_of_file = b.layer_of_file;
  for (size_t i = 0; i < layers.size(); i++) {
    for (const auto& [k, op] : layers[i]) {
      if (op.type == 'p') s = db->Put(WriteOptions(), k, op.value);
      else if (op.type == 'm') s = db->Merge(WriteOptions(), k, op.value);
      else s = db->Delete(WriteOptions(), k);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_TRUE(db->Flush(FlushOptions()).ok());
    std::vector<LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
    for (const auto& f : files) {
      if (layer_of_file.count(FileNumber(f))) continue;
      layer_of_file[FileNumber(f)] = static_cast<int>(i);
      if (levels[i] > 0) {
        CompactionOptions co;
        co.compression = kDisableCompressionOption;  // the column family's (none), not Snappy
        s = db->CompactFiles(co, {f.db_path + f.name}, levels[i]);
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    }
    if (levels[i] > 0) {  // the compaction wrote the layer's file anew
      db->GetLiveFilesMetaData(&files);
      for (const auto& f : files)
        if (f.level == levels[i]) layer_of_file[FileNumber(f)] = static_cast<int>(i);
    }
  }
  std::vector<LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  EXPECT_EQ(layers.size(), files.size()) << Name(r) << ": one file per layer";
  for (const auto& f : files) {
    auto it = layer_of_file.find(FileNumber(f));
    if (it == layer_of_file.end()) {
      ADD_FAILURE() << Name(r) << ": " << f.name << " holds no layer";
      continue;
    }
    EXPECT_EQ(levels[it->second], f.level) << Name(r) << " " << f.name;
  }
  return b;
}

// ---- the model ---------------------------------------------------------------

struct Result {
  Status::Code code;
  std::string value;
  bool operator==(const Result& o) const { return code == o.code && (code != Status::kOk || value == o.value); }
};
std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << (r.code == Status::kOk ? "OK " + r.value : r.code == Status::kNotFound ? "NotFound" : r.code == Status::kIOError ? "IOError" : "code " + std::to_string(r.code));
}

// A key's answer, newest layer first; an armed (layer, key) on the way fails
// it. `reached` collects the armed faults a lookup gets to. Merges append
// (stringappend): base, then operands oldest first, comma-separated.
Result Expect(const std::vector<Layer>& layers, const std::string& k,
              const std::set<std::pair<int, std::string>>& armed, std::set<std::pair<int, std::string>>* reached) {
  std::vector<std::string> parts;  // newest first: operands, then the base
  bool found = false;
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0 && !found; i--) {
    auto it = layers[i].find(k);
    if (it == layers[i].end()) continue;
    if (armed.count({i, k})) {
      reached->insert({i, k});
      return {Status::kIOError, ""};
    }
    const Op& op = it->second;
    if (op.type != 'd') parts.push_back(op.value);
    found = op.type != 'm';
  }
  if (parts.empty()) return {Status::kNotFound, ""};
  std::string v;
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) v += (p == parts.rbegin() ? "" : ",") + *p;
  return {Status::kOk, v};
}

// MultiGet of `batch` with `armed` faults; every fault is spent or disarmed
// when it returns. `fired` counts the faults that fired.
std::vector<Result> RunMultiGet(DB* db, FaultPlan* plan, const std::set<std::pair<int, std::string>>& armed,
                                const std::vector<std::string>& batch, int* fired = nullptr) {
  plan->Arm(armed);
  std::vector<Slice> keys(batch.begin(), batch.end());
  std::vector<PinnableSlice> values(keys.size());
  std::vector<Status> statuses(keys.size());
  db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), keys.data(), values.data(), statuses.data());
  if (fired) *fired = plan->Fired();
  plan->Arm({});
  std::vector<Result> out;
  for (size_t i = 0; i < keys.size(); i++) out.push_back({statuses[i].code(), values[i].ToString()});
  return out;
}

class MultiGetFaults : public testing::Test {
 protected:
  void SetUp() override {
    hooked_plan = &plan_;
    uih_io_set_fault(HookedRead, nullptr);
    // Where the kernel refuses io_uring, the "io_uring" reader reads with
    // pread (as UihTable does); say so rather than pass quietly.
    uih_io* io = nullptr;
    ASSERT_EQ(UIH_OK, uih_io_create(4, 1, &io, nullptr));
    if (!uih_io_uses_uring(io)) std::cout << "note: io_uring is unavailable here; the io_uring reader ran on pread\n";
    uih_io_free(io);
  }
  void TearDown() override {
    uih_io_set_fault(nullptr, nullptr);
    hooked_plan = nullptr;
  }
  FaultPlan plan_;
  uih_test::TempDir dir_;
};

// The shape that aborted RocksDB: L1 {a, k, z} (k a merge operand), L2
// {a, k} (k is the file's last key, a merge operand), L3 empty, L4 {a, k, z}.
// The batch asks for k twice; the first read of k in L2 fails. With one read
// per duplicate, the first k failed (done) and the second went on with the
// search bounds L1 had set up for L2, into the empty L3:
//   version_set.cc:736: FilePickerMultiGet::PrepareNextLevel(): Assertion
//   `fp_ctx.search_right_bound == -1 || ... == FileIndexer::kLevelMaxIndex' failed.
TEST_F(MultiGetFaults, DuplicatesOfAKeyWhoseReadFailsAllFail) {
  std::vector<Layer> layers = {
      {{"a", {'p', "<a>0"}}, {"k", {'p', "<k>0"}}, {"z", {'p', "<z>0"}}},
      {{"a", {'p', "<a>1"}}, {"k", {'m', "<k>1"}}},
      {{"a", {'p', "<a>2"}}, {"k", {'m', "<k>2"}}, {"z", {'p', "<z>2"}}},
  };
  std::vector<int> levels = {4, 2, 1};
  std::vector<std::string> batch = {"a", "k", "k", "z"};
  for (Reader r : kReaders) {
    SCOPED_TRACE(Name(r));
    Built b = Build(r, dir_ / std::to_string(static_cast<int>(r)), layers, levels, &plan_);
    ASSERT_TRUE(b.db);
    plan_.SetLayers(b.layer_of_file);
    std::vector<Result> clean = RunMultiGet(b.db.get(), &plan_, {}, batch);
    EXPECT_EQ((Result{Status::kOk, "<k>0,<k>1,<k>2"}), clean[1]);
    EXPECT_EQ(clean[1], clean[2]);
    int fired = 0;
    std::vector<Result> got = RunMultiGet(b.db.get(), &plan_, {{1, "k"}}, batch, &fired);
    EXPECT_EQ(1, fired) << "k's entries in L2 are read once for both duplicates";
    EXPECT_EQ((Result{Status::kOk, "<a>2"}), got[0]);
    EXPECT_EQ(Status::kIOError, got[1].code);
    EXPECT_EQ(Status::kIOError, got[2].code);
    EXPECT_EQ((Result{Status::kOk, "<z>2"}), got[3]);
    b.db.reset();
  }
}

// Random layers over a small keyspace, random batches with duplicates, random
// faults: every reader answers what the model says, duplicates alike, each
// fault on a lookup's path fires exactly once, and BlockBasedTable agrees.
TEST_F(MultiGetFaults, RandomBatchesMatchTheModelAndBlockBasedTable) {
  for (int seed = 0; seed < 6; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int keyspace = 40;
    auto key = [](int i) {
      char b[8];
      snprintf(b, sizeof b, "k%03d", i);
      return std::string(b);
    };
    // Levels 6..1 oldest first, some left empty, then up to two L0 files.
    std::vector<int> levels;
    for (int l = 6; l >= 1; l--)
      if (rng() % 3 != 0) levels.push_back(l);
    for (int n = static_cast<int>(rng() % 3); n > 0; n--) levels.push_back(0);
    std::vector<Layer> layers(levels.size());
    for (size_t i = 0; i < layers.size(); i++) {
      int density = 2 + static_cast<int>(rng() % 6);  // 1 key in 2..7
      for (int k = 0; k < keyspace; k++) {
        if (rng() % density != 0) continue;
        uint64_t t = rng() % 10;
        char type = i == 0 ? 'p' : t < 5 ? 'm' : t < 8 ? 'p' : 'd';
        // A compaction drops a deletion with nothing older beneath it.
        bool beneath = std::any_of(layers.begin(), layers.begin() + i, [&](const Layer& l) { return l.count(key(k)); });
        if (type == 'd' && levels[i] > 0 && !beneath) continue;
        layers[i][key(k)] = {type, "<" + key(k) + ">" + std::to_string(i)};
      }
      if (layers[i].empty()) {
        std::string k = key(static_cast<int>(rng() % keyspace));
        layers[i][k] = {'p', "<" + k + ">" + std::to_string(i)};
      }
    }

    std::vector<Built> dbs;
    for (Reader r : kReaders) {
      dbs.push_back(Build(r, dir_ / ("s" + std::to_string(seed) + "_" + std::to_string(static_cast<int>(r))), layers,
                          levels, &plan_));
      ASSERT_TRUE(dbs.back().db);
    }

    for (int trial = 0; trial < 60; trial++) {
      // A batch of 1..32 keys with duplicates: one MultiGetContext (larger
      // batches are cut into batches of 32, whose lookups are independent).
      std::vector<std::string> batch;
      size_t n = 1 + rng() % MultiGetContext::MAX_BATCH_SIZE;
      while (batch.size() < n) {
        std::string k = key(static_cast<int>(rng() % keyspace));
        batch.push_back(k);
        if (rng() % 3 == 0 && batch.size() < n) batch.push_back(k);
      }
      std::sort(batch.begin(), batch.end());
      // Faults on entries the batch's keys have, where BlockBasedTable reads
      // the entry's block for no other batch key: none falls between the
      // entry and the key before it in the file (that lookup would land on
      // this block, lacking a filter), and the key before it is not a batch
      // key with a merge operand there (that lookup reads on into the next
      // block, in case the key's entries continue). UihTable's index knows
      // where a key's entries are, so it reads neither.
      std::set<std::pair<int, std::string>> armed;
      for (size_t i = 0; i < layers.size(); i++) {
        for (const auto& k : batch) {
          auto it = layers[i].find(k);
          // (A deletion has no value, so no read shows its key.)
          if (it == layers[i].end() || it->second.type == 'd' || rng() % 4 != 0) continue;
          bool first = it == layers[i].begin();
          std::string prev = first ? std::string() : std::prev(it)->first;
          bool between = std::any_of(batch.begin(), batch.end(), [&](const std::string& o) { return o > prev && o < k; });
          bool reads_on = !first && std::prev(it)->second.type == 'm' &&
                          std::find(batch.begin(), batch.end(), prev) != batch.end();
          if (!between && !reads_on) armed.insert({static_cast<int>(i), k});
        }
      }
      std::set<std::pair<int, std::string>> reached;
      std::vector<Result> want;
      for (const auto& k : batch) want.push_back(Expect(layers, k, armed, &reached));
      for (size_t d = 0; d < dbs.size(); d++) {
        Reader r = kReaders[d];
        SCOPED_TRACE(std::string(Name(r)) + ", trial " + std::to_string(trial));
        plan_.SetLayers(dbs[d].layer_of_file);
        int fired = 0;
        std::vector<Result> got = RunMultiGet(dbs[d].db.get(), &plan_, armed, batch, &fired);
        EXPECT_EQ(static_cast<int>(reached.size()), fired) << "each fault on a lookup's path fires once";
        for (size_t i = 0; i < batch.size(); i++) ASSERT_EQ(want[i], got[i]) << "key " << i << " " << batch[i];
      }
    }
    dbs.clear();
  }
}

// Duplicates served from the value cache: the first that keeps a cached
// value pins it, the others copy, and every answer stays valid after the
// next MultiGet (ASan would catch a pin that did not hold).
TEST(MultiGetCache, DuplicatesFromTheValueCacheAreAlikeAndStayValid) {
  uih_test::TempDir dir;
  Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = true;
  ColumnFamilyOptions cf;
  ConfigOptions cfg;
  ASSERT_TRUE(GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(o),
                                               "merge_operator=stringappend;"
                                               "table_factory={id=UihTable;cache_size=1048576}",
                                               &cf)
                  .ok());
  DB* raw = nullptr;
  ASSERT_TRUE(DB::Open(Options(DBOptions(o), cf), dir.path(), &raw).ok());
  std::unique_ptr<DB> db(raw);
  for (int i = 0; i < 20; i++) ASSERT_TRUE(db->Put(WriteOptions(), "k" + std::to_string(i), std::string(100, 'a' + i)).ok());
  ASSERT_TRUE(db->Flush(FlushOptions()).ok());
  ASSERT_TRUE(db->Merge(WriteOptions(), "k3", "m").ok());  // a merge operand above, a value below
  ASSERT_TRUE(db->Flush(FlushOptions()).ok());
  std::vector<std::string> batch = {"k1", "k1", "k1", "k3", "k3", "k7", "k9", "k9"};
  std::vector<Slice> keys(batch.begin(), batch.end());
  for (int round = 0; round < 3; round++) {  // the first fills the cache, the others hit it
    std::vector<PinnableSlice> values(keys.size());
    std::vector<Status> statuses(keys.size());
    db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), keys.data(), values.data(), statuses.data());
    std::vector<PinnableSlice> later(keys.size());
    std::vector<Status> later_statuses(keys.size());
    db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), keys.data(), later.data(),
                 later_statuses.data());
    for (size_t i = 0; i < keys.size(); i++) {
      int k = std::stoi(batch[i].substr(1));
      std::string want = std::string(100, static_cast<char>('a' + k)) + (k == 3 ? ",m" : "");
      ASSERT_TRUE(statuses[i].ok()) << statuses[i].ToString();
      EXPECT_EQ(want, values[i].ToString()) << "round " << round << " key " << i;
      EXPECT_EQ(want, later[i].ToString()) << "round " << round << " key " << i;
    }
  }
}

}  // namespace
