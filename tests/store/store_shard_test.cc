// Stores opened for one shard (uih_store_opts.one_shard): loads of
// different shards at once, in as many stores (processes, on a cluster),
// give what one load of the whole store gives; a shard's store refuses
// what belongs to the others, and recovers only its own leftovers.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store/store_fixture.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace {

using uih_test::kBase;
using uih_test::kDay;
using uih_test::kHeader;
using uih_test::kSchemaV2;
using uih_test::Scan;
using uih_test::WriteFile;
namespace fs = std::filesystem;

class StoreShardTest : public uih_test::StoreTest {
 protected:
  uih_store* OpenShard(const std::string& path, uint32_t shard, int read_only = 0, uih_error* err = nullptr) {
    uih_error local{};
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = read_only;
    o.one_shard = 1;
    o.shard = shard;
    uih_store* s = nullptr;
    int rc = uih_store_open(path.c_str(), &o, &s, err ? err : &local);
    if (err == nullptr) {
      EXPECT_EQ(rc, UIH_OK) << uih_error_message(&local);
    }
    return s;
  }
  // `n` events of `users` users over day `day` (schema version 2: with a
  // score, else without a liked flag).
  std::string Day(const std::string& name, int day, int n, int users, uint64_t seed, bool v2 = false) {
    std::mt19937_64 rng(seed);
    std::string text = v2 ? "user_id,group,ts,item,score\n" : kHeader;
    for (int i = 0; i < n; i++)
      text += std::to_string(rng() % users) + ",a," +
              std::to_string(kBase + day * kDay + static_cast<int64_t>(rng() % kDay)) + "," +
              std::to_string(rng() % 1000) + "," + (v2 ? std::to_string(rng() % 50) : "") + "\n";
    std::string path = dir_ / name;
    WriteFile(path, text);
    return path;
  }
  std::string Path(const std::string& name) { return dir_ / name; }
};

uih_generation Current(uih_store* s, uint32_t shard) {
  uih_generation g[8];
  size_t n = 0;
  uint32_t cur = 0;
  uih_error err{};
  EXPECT_EQ(uih_store_generations(s, shard, g, 8, &n, &cur, &err), UIH_OK) << uih_error_message(&err);
  for (size_t i = 0; i < n && i < 8; i++)
    if (g[i].generation == cur) return g[i];
  ADD_FAILURE() << "shard " << shard << " has no current generation";
  return uih_generation{};
}

// Three days, each loaded into store "one" whole and into store "per" by
// three stores of one shard each, loading at once from three threads: the
// generations are byte for byte and record for record the same. Day 2
// brings deletions and a schema change; day 3 a lookback.
TEST_F(StoreShardTest, ConcurrentShardLoadsEqualOneLoad) {
  const uint32_t kShards = 3;
  uih_store* one = Init("one", kShards);
  uih_store* per = Init("per", kShards);
  uih_store_close(per);
  WriteFile(Path("deletes.csv"), "user_id\n7\n11\n");
  for (int day = 0; day < 3; day++) {
    std::string in = Day("day" + std::to_string(day) + ".csv", day, 4000, 400, 100 + day, day >= 1);
    const char* inputs[] = {in.c_str()};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    std::string deletes = Path("deletes.csv");
    if (day == 1) {
      o.deletes = deletes.c_str();
      o.schema_json = kSchemaV2;
      o.schema_len = strlen(kSchemaV2);
      o.schema_origin = "v2.json";
    }
    if (day == 2) o.lookback = kDay + kDay / 2;
    uih_error err{};
    ASSERT_EQ(uih_load(one, inputs, 1, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
    std::vector<uih_store*> stores(kShards);
    for (uint32_t i = 0; i < kShards; i++) stores[i] = OpenShard(Path("per"), i);
    std::vector<int> rcs(kShards);
    std::vector<uih_error> errs(kShards);
    std::vector<uih_load_stats> st(kShards);
    std::vector<std::thread> loads;
    for (uint32_t i = 0; i < kShards; i++)
      loads.emplace_back([&, i] { rcs[i] = uih_load(stores[i], inputs, 1, &o, &st[i], &errs[i]); });
    for (auto& t : loads) t.join();
    for (uint32_t i = 0; i < kShards; i++) {
      ASSERT_EQ(rcs[i], UIH_OK) << "shard " << i << ": " << uih_error_message(&errs[i]);
      EXPECT_EQ(st[i].shards, 1u) << "a store of one shard loads that shard";
      EXPECT_GT(st[i].events_skipped, 0u) << "the others' events are skipped";
      EXPECT_EQ(Scan(one, i), Scan(stores[i], i)) << "day " << day << " shard " << i;
      uih_generation a = Current(one, i), b = Current(stores[i], i);
      EXPECT_EQ(a.generation, b.generation);
      EXPECT_EQ(a.through, b.through);
      EXPECT_EQ(a.horizon, b.horizon);
      EXPECT_EQ(a.schema_version, b.schema_version);
      EXPECT_EQ(a.inputs_digest, b.inputs_digest) << "the same load";
      EXPECT_EQ(a.events, b.events);
      EXPECT_EQ(a.deleted, b.deleted);
      EXPECT_EQ(uih_schema_version(uih_store_schema(stores[i])), day >= 1 ? 2u : 1u);
    }
    for (uih_store* s : stores) uih_store_close(s);
  }
  // The whole store, opened again, reads as the other one.
  per = Open(Path("per"));
  ASSERT_NE(per, nullptr);
  EXPECT_EQ(uih_schema_version(uih_store_schema(per)), 2u);
  for (uint32_t i = 0; i < kShards; i++) EXPECT_EQ(Scan(one, i), Scan(per, i));
  uih_store_close(per);
  uih_store_close(one);
}

// What belongs to a shard the store did not open fails, naming the shard
// it did; the users of its own shard read and snapshot as usual.
TEST_F(StoreShardTest, OtherShardsAreRefusedByName) {
  uih_store* whole = Init("st", 4);
  std::string in = Day("day.csv", 0, 2000, 200, 5);
  ASSERT_EQ(Load(whole, {in}, kBase + kDay), UIH_OK);
  uih_store_close(whole);
  const std::string dir = Path("st");
  for (int ro = 0; ro < 2; ro++) {
    uih_store* s = OpenShard(dir, 2, ro);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(uih_store_shards(s), 4u) << "users map to shards as in the whole store";
    for (uint32_t i = 0; i < 4; i++) EXPECT_EQ(uih_store_has_shard(s, i), i == 2 ? 1 : 0);
    uih_error err{};
    uih_mutable* tier = reinterpret_cast<uih_mutable*>(&err);
    EXPECT_EQ(uih_store_mutable(s, 1, &tier, &err), UIH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(tier, nullptr);
    EXPECT_EQ(std::string(uih_error_message(&err)), "store " + dir + ": shard 1 is not open (opened for shard 2 alone)");
    EXPECT_EQ(uih_store_mutable(s, 2, &tier, &err), UIH_OK);
    EXPECT_NE(tier, nullptr);
    size_t n;
    uint32_t cur;
    EXPECT_EQ(uih_store_generations(s, 0, nullptr, 0, &n, &cur, &err), UIH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(uih_error_message(&err)), "store " + dir + ": shard 0 is not open (opened for shard 2 alone)");
    EXPECT_EQ(uih_store_generations(s, 2, nullptr, 0, &n, &cur, &err), UIH_OK);
    EXPECT_EQ(n, 1u);
    uint64_t mine = 0, other = 0;
    while (uih_shard_of(mine, 4) != 2) mine++;
    while (uih_shard_of(other, 4) == 2) other++;
    uih_batch* b = nullptr;
    EXPECT_EQ(uih_store_read(s, other, 1, INT64_MIN, INT64_MAX, UIH_TIER_ALL, 0, &b, &err), UIH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(uih_error_message(&err)), "store " + dir + ": user " + std::to_string(other) +
                                                         " is in shard " + std::to_string(uih_shard_of(other, 4)) +
                                                         ", which is not open (opened for shard 2 alone)");
    EXPECT_EQ(uih_store_read(s, mine, 1, INT64_MIN, INT64_MAX, UIH_TIER_ALL, 0, &b, &err), UIH_OK)
        << uih_error_message(&err);
    EXPECT_GT(b->count, 0u);
    uih_batch_free(b);
    uih_snapshotter* sn = nullptr;
    ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK) << uih_error_message(&err);
    uih_snapshot_spec spec{};
    spec.ngroups = 1;
    spec.groups[0] = {1, 16};
    const uih_batch* const* seqs = nullptr;
    const uint8_t* rec = nullptr;
    size_t len = 0;
    EXPECT_EQ(uih_snapshot(sn, other, kBase + kDay, &spec, &seqs, &rec, &len, &err), UIH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(uih_snapshot(sn, mine, kBase + kDay, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_GT(seqs[0]->count, 0u);
    uih_snapshotter_free(sn);
    if (!ro) {  // a load of another shard is refused before it reads anything
      const char* inputs[] = {in.c_str()};
      uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
      o.shard = 1;
      EXPECT_EQ(uih_load(s, inputs, 1, &o, nullptr, &err), UIH_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(uih_error_message(&err)), "load: shard 1, but the store was opened for shard 2 alone");
    }
    uih_store_close(s);
  }
  uih_error err{};
  uih_store* s = OpenShard(dir, 4, 0, &err);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(std::string(uih_error_message(&err)), "store_open: " + dir + ": shard 4, the store has 4 (0..3)");
}

// While a shard is open for writing, a whole writable store cannot open
// (it would load or clean up under the shard's writer), a second writer of
// that shard neither; readers, whole or of that shard, can.
TEST_F(StoreShardTest, AShardHasOneWriter) {
  uih_store_close(Init("st", 2));
  const std::string dir = Path("st");
  uih_store* w = OpenShard(dir, 1);
  ASSERT_NE(w, nullptr);
  uih_error err{};
  EXPECT_EQ(OpenShard(dir, 1, 0, &err), nullptr);
  EXPECT_NE(std::string(uih_error_message(&err)).find("shard-0001"), std::string::npos) << uih_error_message(&err);
  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  uih_store* s = nullptr;
  EXPECT_NE(uih_store_open(dir.c_str(), &o, &s, &err), UIH_OK);
  EXPECT_EQ(s, nullptr);
  uih_store* w0 = OpenShard(dir, 0);  // the other shard has its own writer
  EXPECT_NE(w0, nullptr);
  uih_store* r = Open(dir, 1);
  EXPECT_NE(r, nullptr);
  uih_store_close(r);
  uih_store_close(w0);
  uih_store_close(w);
}

// A store of one shard removes the temporary files its own shard's killed
// load left, and leaves another shard's running load's alone; a whole
// writable store removes all of them.
TEST_F(StoreShardTest, RecoveryTouchesOnlyItsShard) {
  uih_store_close(Init("st", 2));
  const std::string dir = Path("st");
  fs::create_directories(dir + "/tmp/shard-0000/sort-x");
  fs::create_directories(dir + "/tmp/shard-0001/sort-y");
  WriteFile(dir + "/tmp/shard-0000/sort-x/run-0", "left by a killed load");
  WriteFile(dir + "/tmp/shard-0001/sort-y/run-0", "a running load's");
  uih_store* s = OpenShard(dir, 0);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(uih_store_tmpdir(s)), dir + "/tmp/shard-0000");
  EXPECT_FALSE(fs::exists(dir + "/tmp/shard-0000"));
  EXPECT_TRUE(fs::exists(dir + "/tmp/shard-0001/sort-y/run-0"));
  // its load spills and writes under its own folder, and cleans it up
  std::string in = Day("day.csv", 0, 3000, 300, 8);
  const char* inputs[] = {in.c_str()};
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.memory = size_t{1} << 20;
  uih_load_stats st;
  uih_error err{};
  ASSERT_EQ(uih_load(s, inputs, 1, &lo, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.shards, 1u);
  EXPECT_TRUE(fs::exists(dir + "/tmp/shard-0001/sort-y/run-0"));
  uih_store_close(s);
  uih_store* ro = OpenShard(dir, 1, 1);  // reading never writes
  uih_store_close(ro);
  EXPECT_TRUE(fs::exists(dir + "/tmp/shard-0001/sort-y/run-0"));
  uih_store_close(Open(dir));
  EXPECT_FALSE(fs::exists(dir + "/tmp"));
}

}  // namespace
