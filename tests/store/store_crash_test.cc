// The store under the loads a user runs for real: a load killed (SIGKILL)
// at chosen points of every phase and at random moments leaves every shard
// on a complete generation and a rerun converges on the bytes of one clean
// run; a full disk (files capped with RLIMIT_FSIZE) fails a load with its
// message and leaves the previous generation serving; sixteen reader
// threads read across publishes and retirements; a scan keeps its
// generation after it is retired; the same loads into two stores give
// byte-identical files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "uih_plugin/logger.h"
#include "store/store_fixture.h"
#include "rocksdb/db.h"
#include "store_internal.h"

namespace {

using uih_test::kBase;
using uih_test::kDay;
using uih_test::kHeader;
using uih_test::Scan;
using uih_test::StoreTest;
using uih_test::WriteFile;
namespace fs = std::filesystem;

using Generation = std::vector<std::map<std::string, std::string>>;  // per shard

constexpr uint32_t kShards = 4;

// A day of `n` events of `users` users (some late, some repeated).
std::string Day(std::mt19937_64& rng, int day, int n, uint64_t users) {
  std::string text = kHeader;
  for (int i = 0; i < n; i++) {
    int64_t ts = kBase + day * kDay + static_cast<int64_t>(rng() % kDay);
    if (day > 0 && rng() % 10 == 0) ts -= kDay;  // late
    bool a = rng() % 4 != 0;
    text += std::to_string(rng() % users) + (a ? ",a," : ",b,") + std::to_string(ts) + "," +
            std::to_string(rng() % 5000) + "," + (a && rng() % 2 ? "1" : "") + "\n";
  }
  return text;
}

Generation ScanAll(uih_store* s) {
  Generation g;
  for (uint32_t sh = 0; sh < uih_store_shards(s); sh++) g.push_back(Scan(s, sh));
  return g;
}

// Runs the child load; kills it after `delay_ms` (< 0: never). Returns its
// wait status. With `file_limit`, no file the child writes may grow past
// it; with `stderr_to`, its messages go to that file.
int RunChild(const std::string& store, int64_t through, const std::string& phase, int at,
             const std::string& input, int delay_ms, uint64_t memory = 1048576, uint64_t file_limit = 0,
             const std::string& stderr_to = "") {
  // Everything the child needs is made before the fork, so the child
  // allocates nothing before its exec (a lock another thread held at the
  // fork would never be let go in it).
  const std::string through_s = std::to_string(through), memory_s = std::to_string(memory), at_s = std::to_string(at);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; e++)
    if (!file_limit || strncmp(*e, "UIH_TEST_FILE_LIMIT=", 20) != 0) env_s.emplace_back(*e);
  if (file_limit) env_s.push_back("UIH_TEST_FILE_LIMIT=" + std::to_string(file_limit));
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {UIH_LOAD_CHILD, store.c_str(), through_s.c_str(), memory_s.c_str(), "2",
                        phase.c_str(), at_s.c_str(), input.c_str(), nullptr};
  pid_t pid = fork();
  if (pid == 0) {
    if (!stderr_to.empty()) {
      const int fd = open(stderr_to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    }
    execve(UIH_LOAD_CHILD, const_cast<char* const*>(argv), envp.data());
    _exit(127);
  }
  if (delay_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Two days of loader input in the test's folder, a store "base" of
// kShards shards with day 0 loaded (generation 1), and "clean", a copy of
// it after one child load of day 1: their generations, and how long that
// load took.
class CrashTest : public StoreTest {
 protected:
  void MakeBase(std::mt19937_64& rng, int events, uint64_t users) {
    day0 = dir_ / "day0.csv";
    day1 = dir_ / "day1.csv";
    WriteFile(day0, Day(rng, 0, events, users));
    WriteFile(day1, Day(rng, 1, events, users));
    uih_error err{};
    uih_store* s = Init("base", kShards);
    ASSERT_EQ(Load(s, {day0}, through0, 0, &err), UIH_OK) << uih_error_message(&err);
    before = ScanAll(s);
    uih_store_close(s);
    fs::copy(dir_ / "base", dir_ / "clean", fs::copy_options::recursive);
    const auto t0 = std::chrono::steady_clock::now();
    const int status = RunChild(dir_ / "clean", through1, "-", 0, day1, -1);
    clean_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    s = Open(dir_ / "clean");
    after = ScanAll(s);
    uih_store_close(s);
  }
  std::string day0, day1;
  const int64_t through0 = kBase + kDay, through1 = kBase + 2 * kDay;
  Generation before, after;
  int clean_ms = 0;
};

// Killed at the end of reading, after each shard's merge, after each
// shard's publish, and at random moments: every shard opens on the
// generation before the load or the one it makes, whole, and rerunning the
// same load gives exactly the clean run's generation in every shard.
TEST_F(CrashTest, AKilledLoadLeavesCompleteGenerationsAndARerunConverges) {
  std::mt19937_64 rng(23);
  ASSERT_NO_FATAL_FAILURE(MakeBase(rng, 60000, 3000));  // the base, and what one clean run of day 1 gives
  uih_error err{};
  uih_store* s = nullptr;
  int status = 0;

  struct Kill {
    std::string phase;
    int at, delay_ms;
  };
  std::vector<Kill> kills = {{"read", 1, -1}};
  for (int i = 1; i <= static_cast<int>(kShards); i++) kills.push_back({"merge", i, -1});
  for (int i = 1; i < static_cast<int>(kShards); i++) kills.push_back({"publish", i, -1});
  for (int i = 0; i < 8; i++) kills.push_back({"-", 0, static_cast<int>(rng() % static_cast<uint64_t>(clean_ms + 1))});

  int partial = 0;
  for (size_t k = 0; k < kills.size(); k++) {
    SCOPED_TRACE("kill " + kills[k].phase + " " + std::to_string(kills[k].at) + " after " +
                 std::to_string(kills[k].delay_ms) + " ms");
    std::string store = dir_ / ("crash" + std::to_string(k));
    fs::copy(dir_ / "base", store, fs::copy_options::recursive);
    status = RunChild(store, through1, kills[k].phase, kills[k].at, day1, kills[k].delay_ms);
    if (kills[k].delay_ms < 0) {
      ASSERT_TRUE(WIFSIGNALED(status)) << "the child was to kill itself";
    }
    s = Open(store);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(fs::exists(store + "/tmp")) << "the open removes what the killed load left";
    int moved = 0;
    for (uint32_t sh = 0; sh < kShards; sh++) {
      uint32_t cur;
      size_t n;
      ASSERT_EQ(uih_store_generations(s, sh, nullptr, 0, &n, &cur, &err), UIH_OK);
      ASSERT_TRUE(cur == 1 || cur == 2) << "shard " << sh << " current " << cur;
      EXPECT_EQ(n, cur) << "no generation beyond the current one survives";
      EXPECT_EQ(Scan(s, sh), cur == 1 ? before[sh] : after[sh]) << "shard " << sh << " generation " << cur;
      moved += cur == 2;
    }
    if (kills[k].phase == "publish") {
      EXPECT_EQ(moved, kills[k].at) << "published shards stay published";
    }
    partial += moved > 0 && moved < static_cast<int>(kShards);
    // The same load again: every shard ends on the clean run's bytes.
    ASSERT_EQ(Load(s, {day1}, through1, 0, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(ScanAll(s), after);
    for (uint32_t sh = 0; sh < kShards; sh++) {
      uint32_t cur;
      size_t n;
      ASSERT_EQ(uih_store_generations(s, sh, nullptr, 0, &n, &cur, &err), UIH_OK);
      EXPECT_EQ(cur, 2u) << "shard " << sh << ": a rerun adds no generation to a shard that has the load";
    }
    uih_store_close(s);
    fs::remove_all(store);
  }
  EXPECT_GE(partial, 3) << "kills between shards' publishes were exercised";
}

// A load killed while it publishes — after its first shard's publish, and
// at random moments — with a serving store open on the store throughout:
// the server goes on serving, shard by shard, what it served or what the
// killed load did publish, each whole, and follows the rerun's generation
// to the clean run's bytes.
TEST_F(CrashTest, AServerFollowsTheRerunOfALoadKilledWhilePublishing) {
  std::mt19937_64 rng(29);
  ASSERT_NO_FATAL_FAILURE(MakeBase(rng, 20000, 1000));
  uih_error err{};
  for (int k = 0; k < 4; k++) {
    SCOPED_TRACE("kill " + std::to_string(k));
    const std::string store = dir_ / ("crash" + std::to_string(k));
    fs::copy(dir_ / "base", store, fs::copy_options::recursive);
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.role = UIH_STORE_ROLE_SERVE;
    o.follow_ms = 20;
    uih_store* serve = nullptr;
    ASSERT_EQ(uih_store_open(store.c_str(), &o, &serve, &err), UIH_OK) << uih_error_message(&err);
    const int status = k == 0 ? RunChild(store, through1, "publish", 1, day1, -1)
                              : RunChild(store, through1, "-", 0, day1, static_cast<int>(rng() % 60));
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) << "status " << status;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // what the server follows of it, it has
    uint32_t moved = 0;
    for (uint32_t sh = 0; sh < kShards; sh++) {
      uint32_t g = 0;
      ASSERT_EQ(uih_store_following(serve, sh, &g, &err), UIH_OK) << uih_error_message(&err);
      ASSERT_TRUE(g == 1 || g == 2) << "shard " << sh;
      EXPECT_EQ(Scan(serve, sh), g == 1 ? before[sh] : after[sh]) << "shard " << sh << " serving " << g;
      moved += g == 2;
    }
    if (k == 0) {
      EXPECT_EQ(moved, 1u) << "the shard the killed load published is served, the others are not";
    }
    ASSERT_EQ(RunChild(store, through1, "-", 0, day1, -1), 0) << "the rerun";
    for (int i = 0; i < 250; i++) {
      bool all = true;
      for (uint32_t sh = 0; sh < kShards; sh++) {
        uint32_t g = 0;
        ASSERT_EQ(uih_store_following(serve, sh, &g, &err), UIH_OK) << uih_error_message(&err);
        all = all && g == 2;
      }
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
    EXPECT_EQ(ScanAll(serve), after) << "the rerun's generation, followed";
    uih_store_close(serve);
    fs::remove_all(store);
  }
}

// A full disk or an I/O error during a load: every write past a file size
// limit fails (EFBIG, as ENOSPC would), at the store's open, while sorted
// runs spill, while table files are written. The load fails with a message
// naming the file and the system's reason, exits (no crash), and leaves the
// previous generation current and intact in every shard; once there is
// room, the same load gives the clean run's bytes.
TEST_F(CrashTest, AFullDiskFailsTheLoadAndLeavesThePreviousGenerationServing) {
  std::mt19937_64 rng(29);
  ASSERT_NO_FATAL_FAILURE(MakeBase(rng, 40000, 2000));
  uih_error err{};
  uih_store* s = nullptr;

  struct Case {
    uint64_t memory, limit;
  };
  // 4 KiB: even the store's open cannot write its options; 64 KiB with
  // 1 MiB of sort memory: the first sorted run; 64 KiB and 128 KiB with
  // no spill: the table files.
  const Case cases[] = {{64 << 20, 4 << 10}, {1 << 20, 64 << 10}, {64 << 20, 64 << 10}, {64 << 20, 128 << 10}};
  for (const Case& c : cases) {
    SCOPED_TRACE("memory " + std::to_string(c.memory) + ", files up to " + std::to_string(c.limit) + " bytes");
    std::string store = dir_ / "full", log = dir_ / "full.err";
    fs::remove_all(store);
    fs::copy(dir_ / "base", store, fs::copy_options::recursive);
    int status = RunChild(store, through1, "-", 0, day1, -1, c.memory, c.limit, log);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::ifstream in(log);
    std::string message((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(message.find("File too large"), std::string::npos) << message;
    EXPECT_NE(message.find(store), std::string::npos) << "names where: " << message;
    s = Open(store);
    ASSERT_NE(s, nullptr);
    for (uint32_t sh = 0; sh < kShards; sh++) {
      uint32_t cur;
      size_t n;
      ASSERT_EQ(uih_store_generations(s, sh, nullptr, 0, &n, &cur, &err), UIH_OK);
      EXPECT_EQ(cur, 1u) << "shard " << sh;
    }
    EXPECT_EQ(ScanAll(s), before);
    EXPECT_FALSE(fs::exists(store + "/tmp"));
    ASSERT_EQ(Load(s, {day1}, through1, 0, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(ScanAll(s), after);
    uih_store_close(s);
  }
}

// Sixteen threads read while loads publish and retire generations: no
// read fails, and each sees one whole generation — load k adds item k to
// every user, so a read of generation g holds items 1..g, each with
// arrival generation = item. Reads of a named older generation either see
// it whole or find it retired.
TEST_F(StoreTest, SixteenReadersAcrossPublishesAndRetirements) {
  constexpr int kLoads = 8, kUsers = 64;
  uih_store* s = Init("store", 2);
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> newest{0};
  std::atomic<uint64_t> reads{0}, retired{0}, failures{0};
  auto check = [&](uint64_t user, uint32_t generation, std::string* why) {
    uih_batch* b = nullptr;
    uih_error err{};
    const uint16_t ids[] = {1, 2, UIH_TRAIT_ARRIVAL};
    if (uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 1), 16, ids, 3, &b, &err) != UIH_OK) {
      *why = uih_error_message(&err);
      return false;
    }
    int rc = uih_store_read(s, user, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, generation, &b, &err);
    bool ok = true;
    if (rc == UIH_ERR_NOT_FOUND && generation != 0) {
      retired++;
    } else if (rc != UIH_OK) {
      *why = uih_error_message(&err);
      ok = false;
    } else {
      int item = uih_batch_column_index(b, 2), arrival = uih_batch_column_index(b, UIH_TRAIT_ARRIVAL);
      for (uint32_t r = 0; r < b->count && ok; r++)
        ok = uih_column_get_bits(&b->columns[item], r) == r + 1 && uih_column_get_bits(&b->columns[arrival], r) == r + 1;
      if (generation && b->count != generation) ok = false;
      if (!ok) *why = "user " + std::to_string(user) + ": " + std::to_string(b->count) + " events not items 1..n";
      reads++;
    }
    uih_batch_free(b);
    return ok;
  };
  std::vector<std::thread> readers;
  std::vector<std::string> errors(16);
  for (int t = 0; t < 16; t++)
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      while (!stop.load()) {
        uint32_t g = newest.load();
        if (g == 0) continue;
        uint32_t named = t % 2 ? 0 : 1 + static_cast<uint32_t>(rng() % g);
        if (!check(rng() % kUsers, named, &errors[static_cast<size_t>(t)])) {
          failures++;
          return;
        }
      }
    });
  std::string day = dir_ / "day.csv";
  uih_error err{};
  for (int k = 1; k <= kLoads; k++) {
    std::string text = kHeader;
    for (int u = 0; u < kUsers; u++) text += std::to_string(u) + ",a," + std::to_string(kBase + k) + "," + std::to_string(k) + ",\n";
    WriteFile(day, text);
    ASSERT_EQ(Load(s, {day}, kBase + k + 1, 0, &err), UIH_OK) << uih_error_message(&err);
    newest = static_cast<uint32_t>(k);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(failures.load(), 0u);
  for (auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_GT(reads.load(), 1000u);
  uih_store_close(s);
}

// A scan holds its generation: it reads the whole of it even after loads
// retired it.
TEST_F(StoreTest, AScanKeepsItsGenerationAfterItIsRetired) {
  uih_store* s = Init("store", 1);
  std::string day = dir_ / "day.csv";
  uih_error err{};
  std::mt19937_64 rng(3);
  WriteFile(day, Day(rng, 0, 5000, 200));
  ASSERT_EQ(Load(s, {day}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  auto want = Scan(s, 0);
  uih_store_scan* sc = nullptr;
  ASSERT_EQ(uih_store_scan_open(s, 0, 1, &sc, &err), UIH_OK);
  const uint8_t *k, *v;
  size_t kl, vl;
  std::map<std::string, std::string> got;
  ASSERT_EQ(uih_store_scan_next(sc, &k, &kl, &v, &vl, &err), UIH_OK);
  got[std::string(reinterpret_cast<const char*>(k), kl)] = std::string(reinterpret_cast<const char*>(v), vl);
  for (int d = 1; d <= 3; d++) {  // generations 2..4: generation 1 is retired (keep = 2)
    WriteFile(day, Day(rng, d, 2000, 200));
    ASSERT_EQ(Load(s, {day}, kBase + (d + 1) * kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  }
  size_t n;
  uint32_t cur;
  uih_generation gens[4];
  ASSERT_EQ(uih_store_generations(s, 0, gens, 4, &n, &cur, &err), UIH_OK);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(gens[0].generation, 3u);
  for (;;) {
    ASSERT_EQ(uih_store_scan_next(sc, &k, &kl, &v, &vl, &err), UIH_OK) << uih_error_message(&err);
    if (!k) break;
    got[std::string(reinterpret_cast<const char*>(k), kl)] = std::string(reinterpret_cast<const char*>(v), vl);
  }
  uih_store_scan_close(sc);
  EXPECT_EQ(got, want);
  uih_store_close(s);
}

// The table files of each generation, in key order, from a closed store.
std::vector<std::string> GenerationFiles(const std::string& store, uint32_t shards) {
  std::vector<std::string> out;
  for (uint32_t sh = 0; sh < shards; sh++) {
    char name[32];
    snprintf(name, sizeof name, "/shard-%04u", sh);
    std::string path = store + name;
    std::vector<std::string> cfs;
    EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &cfs).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (auto& c : cfs) descs.emplace_back(c, uih::IsGenerationCf(c) ? uih::GenerationCfOptions() : rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> hs;
    rocksdb::DB* db = nullptr;
    rocksdb::DBOptions o;
    o.info_log = std::make_shared<uih::SilentLogger>();
    EXPECT_TRUE(rocksdb::DB::OpenForReadOnly(o, path, descs, &hs, &db).ok());
    std::vector<rocksdb::LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
      return std::tie(a.column_family_name, a.smallestkey) < std::tie(b.column_family_name, b.smallestkey);
    });
    for (auto& f : files) {
      if (!uih::IsGenerationCf(f.column_family_name)) continue;
      std::ifstream in(f.db_path + "/" + f.name, std::ios::binary);
      out.push_back(f.column_family_name + ":" + std::string((std::istreambuf_iterator<char>(in)), {}));
    }
    for (auto* h : hs) db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  return out;
}

// Deterministic: the same loads into two stores, one spilling on three
// threads and one in memory, give the same files, byte for byte.
TEST_F(StoreTest, TheSameLoadsGiveByteIdenticalFiles) {
  std::mt19937_64 rng(31);
  std::vector<std::string> days;
  for (int d = 0; d < 2; d++) {
    days.push_back(dir_ / ("d" + std::to_string(d) + ".csv"));
    WriteFile(days.back(), Day(rng, d, 30000, 2000));
  }
  uih_store* a = Init("a", 3);
  uih_store* b = Init("b", 3);
  uih_error err{};
  for (int d = 0; d < 2; d++) {
    int64_t through = kBase + (d + 1) * kDay;
    ASSERT_EQ(Load(a, {days[static_cast<size_t>(d)]}, through, 0, &err, size_t{1} << 20, 3), UIH_OK)
        << uih_error_message(&err);
    ASSERT_EQ(Load(b, {days[static_cast<size_t>(d)]}, through, 0, &err, size_t{256} << 20, 1), UIH_OK)
        << uih_error_message(&err);
  }
  uih_store_close(a);
  uih_store_close(b);
  auto fa = GenerationFiles(dir_ / "a", 3), fb = GenerationFiles(dir_ / "b", 3);
  EXPECT_GE(fa.size(), 6u) << "two live generations in each of three shards";
  ASSERT_EQ(fa.size(), fb.size());
  for (size_t i = 0; i < fa.size(); i++) EXPECT_TRUE(fa[i] == fb[i]) << "file " << i << " differs";
}

}  // namespace
