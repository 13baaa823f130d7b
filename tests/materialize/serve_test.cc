// Serving and loading at once (uih/store.h, "Processes"): a serving store
// appends and snapshots while loads publish from other stores and other
// processes; it follows each publish without reopening, loses or repeats
// no event across the switch, applies erasures and schema changes, holds
// what its readers hold, and every record it logged rebuilds exactly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "materialize/snapshot_model.h"
#include "store/store_fixture.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace {

using namespace uih_test::model;
using uih_test::kBase;
using uih_test::kDay;
using uih_test::StoreTest;
using uih_test::WriteFile;
using Clock = std::chrono::steady_clock;

uih_store* OpenAs(const std::string& path, unsigned role, uint32_t follow_ms = 250, uint32_t keep = 2) {
  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  o.role = role;
  o.follow_ms = follow_ms;
  o.keep = keep;
  uih_store* s = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_open(path.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
  return s;
}

uint32_t Served(uih_store* s, uint32_t shard) {
  uint32_t g = 0;
  uih_error err{};
  EXPECT_EQ(uih_store_following(s, shard, &g, &err), UIH_OK) << uih_error_message(&err);
  return g;
}

// Waits (up to 5 s) until every shard of `s` serves `generation` and its
// mutable tier has applied it; how long that took.
double WaitServed(uih_store* s, uint32_t generation, int64_t through) {
  const auto t0 = Clock::now();
  for (;;) {
    bool all = true;
    for (uint32_t sh = 0; sh < uih_store_shards(s); sh++) {
      int64_t wm = 0;
      int has = 0;
      uih_error err{};
      EXPECT_EQ(uih_mutable_watermark(uih_test::MutableOf(s, sh), &wm, &has, &err), UIH_OK);
      all = all && Served(s, sh) == generation && has && wm == through;
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (all) {  // the follower's catch-up is done once a refresh of our own gets its turn
      uih_error err{};
      EXPECT_EQ(uih_store_refresh(s, &err), UIH_OK) << uih_error_message(&err);
    }
    if (all || ms > 5000) return ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<Ev> ReadAll(uih_store* s, uint64_t user, uint16_t group) {
  uih_batch* b = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_read(s, user, group, INT64_MIN, INT64_MAX, UIH_TIER_ALL, 0, &b, &err), UIH_OK)
      << uih_error_message(&err);
  std::vector<Ev> out = b ? Events(b) : std::vector<Ev>{};
  uih_batch_free(b);
  return out;
}

int Append(uih_store* s, uint64_t user, uint16_t group, const Ev& e) {
  const uih_group* g = uih_schema_group_by_id(uih_store_schema(s), group);
  uih_batch* b = nullptr;
  uih_error err{};
  int rc = uih_batch_create(g, 1, nullptr, 0, &b, &err);
  uint32_t row;
  if (rc == UIH_OK) rc = uih_batch_append(b, &row, &err);
  if (rc == UIH_OK) {
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(e.ts));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, e.item);
    if (e.liked >= 0) uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], row, static_cast<uint64_t>(e.liked));
    rc = uih_mutable_append(uih_test::MutableOf(s, uih_shard_of(user, uih_store_shards(s))), user, b, 0, &err);
  }
  EXPECT_EQ(rc, UIH_OK) << uih_error_message(&err);
  uih_batch_free(b);
  return rc;
}

}  // namespace

namespace uih_test {

// A store of one shard with the events `rows` (kHeader's columns) loaded
// through 1000, closed; its path.
std::string StoreTest::OneDay(const std::string& rows) {
  uih_store* s = Init("store", 1);
  WriteFile(dir_ / "d1.csv", kHeader + rows);
  uih_error err{};
  EXPECT_EQ(Load(s, {dir_ / "d1.csv"}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
  return dir_ / "store";
}

int StoreTest::LoadErasing(uih_store* s, const std::string& file, int64_t through, uint64_t user, uih_error* err) {
  const std::string del = dir_ / "del.csv";
  WriteFile(del, "user_id\n" + std::to_string(user) + "\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = through;
  o.deletes = del.c_str();
  const char* in[] = {file.c_str()};
  return uih_load(s, in, 1, &o, nullptr, err);
}

}  // namespace uih_test

namespace {

uih_projection Whole() {
  uih_projection p{};
  p.ngroups = 2;
  p.groups[0].group = 1;
  p.groups[0].max_length = 24;
  p.groups[1].group = 2;
  p.groups[1].max_length = 6;
  p.on_mismatch = UIH_MISMATCH_FLAG;
  return p;
}

// The World's store, served by one store while another loads day 1 (with
// one user erased): the server serves generation 2 within a second of the
// publish without reopening, a scan begun before it still reads generation
// 1 whole, every user's events of both tiers are the model's — day 1 in the
// generation, each event once, the erased user's gone — records logged on
// either side of the switch rebuild to what inference saw (the erased
// user's before it flagged), and generation 1 is retired only once the
// server and its scan let go.
TEST_F(StoreTest, AServingStoreFollowsALoadPublishedByAnother) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_store_close(s);
  const std::string path = dir_ / "store";
  uih_store* serve = OpenAs(path, UIH_STORE_ROLE_SERVE, 20);
  uih_store* load = OpenAs(path, UIH_STORE_ROLE_LOAD, 0, 1);
  ASSERT_NE(serve, nullptr);
  ASSERT_NE(load, nullptr);
  uih_error err{};
  uih_mutable* m = nullptr;
  EXPECT_EQ(uih_store_mutable(load, 0, &m, &err), UIH_ERR_NOT_SUPPORTED) << "a loading store has no mutable tier";
  // The erased user: one with mutable events in group a.
  uint64_t erased = 0;
  bool found = false;
  for (auto& [k, v] : w.mut)
    if (k.second == 1 && v.size() >= 3) erased = k.first, found = true;
  ASSERT_TRUE(found);

  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(serve, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  std::vector<std::vector<Ev>> seen_a, seen_b;
  auto snap = [&](uint64_t u, int64_t request) {
    SnapshotInto(sn, u, request, uih_snapshot_spec{2, {{1, 24}, {2, 6}}}, &records, &seen_a, &seen_b);
  };
  for (uint64_t u = 0; u < World::kUsers; u++) snap(u, w.through + kDay - 1);
  const size_t before_switch = records.size();
  // A scan of shard 0's generation 1, begun before the publish.
  const std::map<std::string, std::string> gen1 = uih_test::Scan(serve, 0);
  uih_store_scan* sc = nullptr;
  ASSERT_EQ(uih_store_scan_open(serve, 0, 0, &sc, &err), UIH_OK);

  const std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, w.day1_csv);
  ASSERT_EQ(LoadErasing(load, day1, w.through + kDay, erased, &err), UIH_OK) << uih_error_message(&err);
  int pinned = 0;
  ASSERT_EQ(uih_store_pinned(load, 0, 1, &pinned, &err), UIH_OK);
  EXPECT_EQ(pinned, 1) << "the server held generation 1 when the load retired";
  uih_generation live[4];
  size_t nlive = 0;
  ASSERT_EQ(uih_store_generations(load, 0, live, 4, &nlive, nullptr, &err), UIH_OK);
  ASSERT_EQ(nlive, 2u) << "keep 1, but generation 1 is held: not retired";
  EXPECT_EQ(live[0].generation, 1u);
  const double ms = WaitServed(serve, 2, w.through + kDay);
  EXPECT_LT(ms, 1000) << "served within a second of the publish (follow_ms 20)";

  // The scan begun before goes on reading generation 1, whole.
  EXPECT_EQ(uih_test::Drain(sc), gen1);
  uih_store_scan_close(sc);

  // Both tiers as the model has them: every event once.
  for (uint64_t u = 0; u < World::kUsers; u++)
    for (uint16_t g : {1, 2}) {
      std::vector<Ev> want;
      if (u != erased)
        for (auto* part : {&w.imm, &w.mut, &w.late}) {
          auto it = part->find({u, g});
          if (it != part->end()) want.insert(want.end(), it->second.begin(), it->second.end());
        }
      std::sort(want.begin(), want.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
      ASSERT_EQ(ReadAll(serve, u, g), want) << "user " << u << " group " << g;
    }
  // The erased user is back with a new event, which is served.
  const Ev back{w.through + kDay + 5, 4242, 1};
  ASSERT_EQ(Append(serve, erased, 1, back), UIH_OK);
  EXPECT_EQ(ReadAll(serve, erased, 1), std::vector<Ev>{back});
  for (uint64_t u = 0; u < World::kUsers; u++) snap(u, w.through + kDay + 10);
  uih_snapshotter_free(sn);

  // Generation 1 is let go: the next publish retires it.
  for (int i = 0; i < 500 && pinned; i++) {
    ASSERT_EQ(uih_store_pinned(load, 0, 1, &pinned, &err), UIH_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(pinned, 0) << "the server let generation 1 go once it served 2";
  std::string day2 = dir_ / "day2.csv";
  WriteFile(day2, "user_id,group,ts,item,liked\n1,a," + std::to_string(w.through + kDay + 7) + ",9,\n");
  ASSERT_EQ(Load(load, {day2}, w.through + 2 * kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_generation gens[4];
  size_t n = 0;
  uint32_t cur = 0;
  ASSERT_EQ(uih_store_generations(load, 0, gens, 4, &n, &cur, &err), UIH_OK);
  EXPECT_EQ(cur, 3u);
  for (size_t i = 0; i < n; i++) EXPECT_NE(gens[i].generation, 1u) << "generation 1 retired";
  EXPECT_LT(WaitServed(serve, 3, w.through + 2 * kDay), 1000);

  // Every record rebuilds to what inference saw; the erased user's records
  // from before the erasure are mismatches, the rest are not.
  uih_store_close(load);
  uih_store_opts ro = UIH_STORE_OPTS_DEFAULT;
  ro.read_only = 1;
  uih_store* train = nullptr;
  ASSERT_EQ(uih_store_open(path.c_str(), &ro, &train, &err), UIH_OK) << uih_error_message(&err);
  RecordPtrs logged(records);
  const uih_projection whole = Whole();
  uih_materialized* mat = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(train, logged.ptrs.data(), logged.lens.data(), records.size(), &whole, &mat, &st, &err),
            UIH_OK)
      << uih_error_message(&err);
  const std::vector<std::vector<Ev>> got_a = Sequences(mat, 0), got_b = Sequences(mat, 1);
  const uint8_t* flags = uih_materialized_flags(mat);
  size_t mismatched = 0;
  for (size_t i = 0; i < records.size(); i++) {
    const bool erased_before = i < before_switch && i % World::kUsers == erased;
    mismatched += flags[i] != 0;
    if (erased_before) {
      EXPECT_NE(flags[i], 0) << "record " << i << " of the erased user, logged before the erasure";
      continue;
    }
    EXPECT_EQ(flags[i], 0) << "record " << i;
    EXPECT_EQ(got_a[i], seen_a[i]) << "record " << i;
    EXPECT_EQ(got_b[i], seen_b[i]) << "record " << i;
  }
  EXPECT_EQ(mismatched, 1u);
  uih_materialized_free(mat);
  uih_store_close(train);
  uih_store_close(serve);
}

// A serving store with follow_ms 0 serves a publish only when told
// (uih_store_refresh); two serving stores of one shard cannot both own its
// mutable tier, and the second says why.
TEST_F(StoreTest, AServingStoreRefreshesWhenToldAndOwnsItsMutableTierAlone) {
  const std::string path = OneDay("1,a,100,5,1\n");
  uih_error err{};
  uih_store* serve = OpenAs(path, UIH_STORE_ROLE_SERVE, 0);
  ASSERT_NE(serve, nullptr);
  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  o.role = UIH_STORE_ROLE_SERVE;
  uih_store* second = nullptr;
  EXPECT_NE(uih_store_open(path.c_str(), &o, &second, &err), UIH_OK);
  EXPECT_NE(std::string(uih_error_message(&err)).find("mutable tier is owned by another store of this process"),
            std::string::npos)
      << uih_error_message(&err);
  o.role = UIH_STORE_ROLE_ALL;  // a store that loads and serves: the same LOCK
  EXPECT_NE(uih_store_open(path.c_str(), &o, &second, &err), UIH_OK);
  EXPECT_NE(std::string(uih_error_message(&err)).find("owned by another store of this process"), std::string::npos)
      << uih_error_message(&err);
  ASSERT_EQ(Append(serve, 1, 1, Ev{1500, 6, -1}), UIH_OK);
  uih_store* load = OpenAs(path, UIH_STORE_ROLE_LOAD);
  WriteFile(dir_ / "d2.csv", uih_test::kHeader + "1,a,1500,6,\n");
  ASSERT_EQ(Load(load, {dir_ / "d2.csv"}, 2000, 0, &err), UIH_OK) << uih_error_message(&err);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Served(serve, 0), 1u) << "follow_ms 0: no follower";
  EXPECT_EQ(ReadAll(serve, 1, 1), (std::vector<Ev>{{100, 5, 1}, {1500, 6, -1}}));
  ASSERT_EQ(uih_store_refresh(serve, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(Served(serve, 0), 2u);
  EXPECT_EQ(ReadAll(serve, 1, 1), (std::vector<Ev>{{100, 5, 1}, {1500, 6, -1}})) << "the event once, from generation 2";
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_store_read(serve, 1, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK);
  EXPECT_EQ(b->count, 2u);
  uih_batch_free(b);
  uih_store_close(load);
  uih_store_close(serve);
}

// A load that erases a user while no server runs: until a serving store
// applies the generation, readers hide the user's mutable events (their
// history is the generation's, which has none); the next serving open
// applies it — the events deleted, the watermark advanced — and a user who
// was not erased keeps theirs throughout.
TEST_F(StoreTest, AnErasureNoServerHasAppliedYetHidesTheUsersMutableEvents) {
  const std::string path = OneDay("1,a,100,5,1\n2,a,110,6,\n");
  uih_error err{};
  uih_store* serve = OpenAs(path, UIH_STORE_ROLE_SERVE, 0);
  ASSERT_EQ(Append(serve, 1, 1, Ev{1700, 7, -1}), UIH_OK);  // both above the next load's through
  ASSERT_EQ(Append(serve, 2, 1, Ev{1600, 8, -1}), UIH_OK);
  uih_store_close(serve);
  uih_store* load = OpenAs(path, UIH_STORE_ROLE_LOAD);
  WriteFile(dir_ / "d2.csv", uih_test::kHeader + "3,a,1200,9,\n");
  ASSERT_EQ(LoadErasing(load, dir_ / "d2.csv", 1550, 1, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(load);
  auto check = [&](uih_store* st, const char* when) {
    EXPECT_EQ(ReadAll(st, 1, 1), std::vector<Ev>{}) << when;
    EXPECT_EQ(ReadAll(st, 2, 1), (std::vector<Ev>{{110, 6, -1}, {1600, 8, -1}})) << when;
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_store_read(st, 1, 1, INT64_MIN, INT64_MAX, UIH_TIER_MUTABLE, 0, &b, &err), UIH_OK);
    EXPECT_EQ(b->count, 0u) << when;
    uih_batch_free(b);
    uih_snapshotter* sn = nullptr;
    ASSERT_EQ(uih_snapshotter_create(st, &sn, &err), UIH_OK);
    uih_snapshot_spec spec{1, {{1, 24}}};
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    ASSERT_EQ(uih_snapshot(sn, 1, 1900, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(seqs[0]->count, 0u) << when;
    uih_snapshotter_free(sn);
  };
  uih_store_opts ro = UIH_STORE_OPTS_DEFAULT;
  ro.read_only = 1;
  uih_store* reader = nullptr;
  ASSERT_EQ(uih_store_open(path.c_str(), &ro, &reader, &err), UIH_OK) << uih_error_message(&err);
  check(reader, "before any server applied generation 2");
  uih_store_close(reader);
  serve = OpenAs(path, UIH_STORE_ROLE_SERVE, 0);
  check(serve, "in the server that applied it at open");
  int64_t wm = 0;
  int has = 0;
  ASSERT_EQ(uih_mutable_watermark(uih_test::MutableOf(serve, 0), &wm, &has, &err), UIH_OK);
  EXPECT_EQ(wm, 1550);
  uih_store_close(serve);
  ASSERT_EQ(uih_store_open(path.c_str(), &ro, &reader, &err), UIH_OK) << uih_error_message(&err);
  check(reader, "after");
  uih_store_close(reader);
}

// Processes, as deployed: this process serves — appending and snapshotting
// from two threads without pause — while `uih load` processes publish each
// shard on their own (one of them erasing a user, one changing the schema).
// The server follows every publish, never fails a request, ends on the
// last generation with the new schema, and every record it logged rebuilds
// to what it served (the erased user's from before the erasure flagged).
TEST_F(StoreTest, ServingGoesOnWhileLoadProcessesPublishEachShard) {
  uih_store* s = Init("store", 2);
  uih_error err{};
  std::string text = uih_test::kHeader;
  std::map<uint64_t, std::vector<Ev>> appended;  // per user, in order: the first day's, then what the server appends
  for (uint64_t u = 1; u <= 40; u++)
    for (int k = 0; k < 6; k++) {
      const int64_t ts = kBase + static_cast<int64_t>(u) * 1000 + k;
      text += std::to_string(u) + ",a," + std::to_string(ts) + ",7,\n";
      appended[u].push_back({ts, 7, -1});
    }
  WriteFile(dir_ / "d0.csv", text);
  ASSERT_EQ(Load(s, {dir_ / "d0.csv"}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
  const std::string path = dir_ / "store";
  uih_store* serve = OpenAs(path, UIH_STORE_ROLE_SERVE, 25);
  ASSERT_NE(serve, nullptr);

  std::mutex mu;  // what follows
  std::vector<std::string> records;
  std::vector<std::vector<Ev>> seen_a;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> clock{kBase + kDay};  // the serving day's time
  std::atomic<int> failures{0};
  std::thread appender([&] {
    uint64_t i = 0;
    while (!stop) {
      const uint64_t u = 1 + i % 40;
      const Ev e{clock.fetch_add(1) + 1, 100 + i, -1};
      if (Append(serve, u, 1, e) != UIH_OK) failures++;
      std::lock_guard<std::mutex> lock(mu);
      appended[u].push_back(e);
      i++;
    }
  });
  std::thread snapshotter([&] {
    uih_snapshotter* sn = nullptr;
    uih_error e{};
    if (uih_snapshotter_create(serve, &sn, &e) != UIH_OK) return void(failures++);
    for (uint64_t i = 0; !stop; i++) {
      uih_snapshot_spec spec{1, {{1, 24}}};
      const uih_batch* const* seqs;
      const uint8_t* rec;
      size_t len;
      if (uih_snapshot(sn, 1 + i % 40, clock.load(), &spec, &seqs, &rec, &len, &e) != UIH_OK) {
        ADD_FAILURE() << uih_error_message(&e);
        failures++;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu);
      records.emplace_back(reinterpret_cast<const char*>(rec), len);
      seen_a.push_back(Events(seqs[0]));
    }
    uih_snapshotter_free(sn);
  });
  struct Joiner {  // the threads stop and join however the test ends
    std::atomic<bool>* stop;
    std::thread *a, *b;
    ~Joiner() {
      *stop = true;
      if (a->joinable()) a->join();
      if (b->joinable()) b->join();
    }
  } joiner{&stop, &appender, &snapshotter};
  // Each night's file: the day's served events so far, as the log pipeline
  // would deliver them, loaded shard by shard by processes of their own.
  // The child only execs: this process has threads (the appender, the
  // snapshotter), so a child that allocated could wait forever on a lock
  // one of them held at the fork.
  auto run = [&](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execv(UIH_CLI, argv.data());
      _exit(127);
    }
    return pid;
  };
  const std::string v2 = dir_ / "v2.json";
  WriteFile(v2, uih_test::kSchemaV2);
  const std::string del = dir_ / "del.csv";
  WriteFile(del, "user_id\n7\n");
  for (int night = 1; night <= 3; night++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const int64_t through = clock.load() - 50;  // events after it stay in the mutable tier
    std::string day = "user_id,group,ts,item\n";  // no 'liked': version 2 drops it
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [u, evs] : appended)
        for (const Ev& e : evs)
          if (e.ts < through) day += std::to_string(u) + ",a," + std::to_string(e.ts) + "," + std::to_string(e.item) + "\n";
    }
    const std::string file = dir_ / ("night" + std::to_string(night) + ".csv");
    WriteFile(file, day);
    std::vector<pid_t> pids;
    for (uint32_t shard = 0; shard < 2; shard++) {
      std::vector<std::string> args = {UIH_CLI, "load", "--store", path, "--shard", std::to_string(shard),
                                       "--through", std::to_string(through), file};
      if (night == 2 && shard == uih_shard_of(7, 2)) args.insert(args.end() - 1, {"--delete", del});
      if (night == 3) args.insert(args.end() - 1, {"--schema", v2});
      pids.push_back(run(args));
    }
    for (pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "uih load, night " << night;
    }
    EXPECT_LT(WaitServed(serve, static_cast<uint32_t>(night + 1), through), 1000) << "night " << night;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  appender.join();
  snapshotter.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(uih_schema_version(uih_store_schema(serve)), 2u) << "the schema the last loads brought";
  ASSERT_GT(records.size(), 100u);

  uih_store_opts ro = UIH_STORE_OPTS_DEFAULT;
  ro.read_only = 1;
  uih_store* train = nullptr;
  ASSERT_EQ(uih_store_open(path.c_str(), &ro, &train, &err), UIH_OK) << uih_error_message(&err);
  RecordPtrs logged(records);
  uih_projection p{};
  p.ngroups = 1;
  p.groups[0].group = 1;
  p.groups[0].max_length = 24;
  p.groups[0].ntraits = 2;
  p.groups[0].traits[0] = 1;
  p.groups[0].traits[1] = 2;
  p.on_mismatch = UIH_MISMATCH_FLAG;
  uih_materialized* mat = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(train, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &mat, &st, &err),
            UIH_OK)
      << uih_error_message(&err);
  const std::vector<std::vector<Ev>> got = Sequences(mat, 0);
  const uint8_t* flags = uih_materialized_flags(mat);
  size_t flagged = 0;
  for (size_t i = 0; i < records.size(); i++) {
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(logged.ptrs[i], logged.lens[i], &r, &err), UIH_OK);
    if (flags[i]) {
      flagged++;
      EXPECT_EQ(r.user_id, 7u) << "record " << i << " flagged";
      continue;
    }
    std::vector<Ev> want = seen_a[i];
    for (Ev& e : want) e.liked = -1;
    ASSERT_EQ(got[i], want) << "record " << i << " of user " << r.user_id;
  }
  EXPECT_GT(flagged, 0u) << "user 7's records from before the erasure";
  uih_materialized_free(mat);
  // What was served is what was appended: every record's events are the
  // user's, in time order, each once; and now, every user's newest events
  // are the newest appended, across three switches (user 7, erased, aside).
  std::map<std::pair<uint64_t, int64_t>, uint64_t> items;  // (user, ts) -> item
  for (auto& [u, evs] : appended)
    for (const Ev& e : evs) items[{u, e.ts}] = e.item;
  for (size_t i = 0; i < records.size(); i++) {
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(logged.ptrs[i], logged.lens[i], &r, &err), UIH_OK);
    for (size_t k = 0; k < seen_a[i].size(); k++) {
      auto it = items.find({r.user_id, seen_a[i][k].ts});
      ASSERT_TRUE(it != items.end() && it->second == seen_a[i][k].item) << "record " << i << " event " << k;
      if (k) {
        ASSERT_LT(seen_a[i][k - 1].ts, seen_a[i][k].ts) << "record " << i;
      }
    }
  }
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(serve, &sn, &err), UIH_OK);
  for (uint64_t u = 1; u <= 40; u++) {
    if (u == 7) continue;
    std::vector<Ev> want = appended[u];
    if (want.size() > 24) want.erase(want.begin(), want.end() - 24);
    uih_snapshot_spec spec{1, {{1, 24}}};
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    ASSERT_EQ(uih_snapshot(sn, u, clock.load() + 1, &spec, &seqs, &rec, &len, &err), UIH_OK);
    ASSERT_EQ(Events(seqs[0]), want) << "user " << u;
  }
  uih_snapshotter_free(sn);
  uih_store_close(train);
  uih_store_close(serve);
}

}  // namespace

namespace {

// The newest `n` events at or before `request` among what uih_store_read
// gives for both tiers (through RocksDB, never the cache).
std::vector<Ev> NewestOf(uih_store* s, uint64_t user, uint16_t group, int64_t request, uint32_t n) {
  uih_batch* b = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_read(s, user, group, INT64_MIN, request, UIH_TIER_ALL, 0, &b, &err), UIH_OK)
      << uih_error_message(&err);
  std::vector<Ev> all = b ? Events(b) : std::vector<Ev>{};
  uih_batch_free(b);
  if (all.size() > n) all.erase(all.begin(), all.end() - n);
  return all;
}

std::vector<Ev> SnapshotOf(uih_snapshotter* sn, uint64_t user, int64_t request, uint32_t n) {
  uih_snapshot_spec spec{1, {{1, n}}};
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  uih_error err{};
  EXPECT_EQ(uih_snapshot(sn, user, request, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
  return Events(seqs[0]);
}

}  // namespace

// The write-through cache (uih_store_opts.cache_bytes) against RocksDB:
// while appends land in random chunks of random users (out of order, late
// within the tier, several per batch), every snapshot's mutable part from
// the cache equals what the store reads through RocksDB, a cache a few
// users big evicts and stays within its bytes, and a publish with an
// erasure drops the erased user's entry.
TEST_F(StoreTest, TheWriteThroughCacheServesWhatRocksDBHolds) {
  for (size_t cache_bytes : {size_t{64} << 20, size_t{16} << 10}) {
    SCOPED_TRACE("cache of " + std::to_string(cache_bytes) + " bytes");
    const std::string name = "store" + std::to_string(cache_bytes);
    uih_store* s = Init(name, 2);
    uih_error err{};
    WriteFile(dir_ / "d0.csv", uih_test::kHeader + "1,a,100,5,1\n2,a,110,6,\n");
    ASSERT_EQ(Load(s, {dir_ / "d0.csv"}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
    uih_store_close(s);
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.role = UIH_STORE_ROLE_SERVE;
    o.follow_ms = 0;
    o.cache_bytes = cache_bytes;
    const std::string path = dir_ / name;
    ASSERT_EQ(uih_store_open(path.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
    uih_snapshotter* sn = nullptr;
    ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
    std::mt19937_64 rng(cache_bytes);
    const int64_t span = uih_mutable_chunk_span(uih_test::MutableOf(s, 0));
    size_t compared = 0;
    for (int step = 0; step < 3000; step++) {
      const uint64_t u = 1 + rng() % 30;
      if (rng() % 3) {
        const Ev e{1000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(6 * span)), rng() % 50,
                   static_cast<int>(rng() % 3) - 1};
        ASSERT_EQ(Append(s, u, 1, e), UIH_OK);
        continue;
      }
      const int64_t request = 1000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(7 * span));
      const uint32_t n = 1 + static_cast<uint32_t>(rng() % 40);
      ASSERT_EQ(SnapshotOf(sn, u, request, n), NewestOf(s, u, 1, request, n)) << "step " << step << " user " << u;
      compared++;
    }
    uih_cache_stats cs{};
    ASSERT_EQ(uih_store_cache_stats(s, &cs, &err), UIH_OK);
    EXPECT_GT(compared, 800u);
    EXPECT_EQ(cs.hits + cs.misses, compared);
    EXPECT_GT(cs.misses, 0u);
    EXPECT_LE(cs.bytes, cs.capacity);
    if (cache_bytes > (1 << 20)) {
      EXPECT_EQ(cs.misses, 30u) << "each user's history read from RocksDB once";
      EXPECT_EQ(cs.entries, 30u);
    } else {
      EXPECT_GT(cs.misses, 100u) << "a small cache evicts";
      EXPECT_LT(cs.entries, 30u);
    }
    // An erasure published by a load: the user's entry goes with the events.
    uih_store* load = OpenAs(path, UIH_STORE_ROLE_LOAD);
    WriteFile(dir_ / "d1.csv", uih_test::kHeader + "1,a,900,5,1\n");
    ASSERT_EQ(LoadErasing(load, dir_ / "d1.csv", 1001, 3, &err), UIH_OK) << uih_error_message(&err);
    uih_store_close(load);
    ASSERT_EQ(uih_store_refresh(s, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(SnapshotOf(sn, 3, INT64_MAX, 40), std::vector<Ev>{});
    for (uint64_t u = 1; u <= 30; u++)
      ASSERT_EQ(SnapshotOf(sn, u, INT64_MAX, 40), NewestOf(s, u, 1, INT64_MAX, 40)) << "user " << u;
    uih_snapshotter_free(sn);
    uih_store_close(s);
  }
}

// A fill racing appends: one thread appends to user after user while
// another snapshots the user being appended to, so that its first read
// of RocksDB (the fill) often misses an append in flight; once quiet,
// every user's snapshot from the cache equals RocksDB's, every event
// there.
TEST_F(StoreTest, TheCacheKeepsNoFillThatMissedAnAppend) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  uih_store_close(s);
  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  o.role = UIH_STORE_ROLE_SERVE;
  ASSERT_EQ(uih_store_open((dir_ / "store").c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
  constexpr uint64_t kUsers = 2000, kEach = 20;
  std::atomic<uint64_t> at{0};
  std::thread appender([&] {
    for (uint64_t i = 0; i < kUsers * kEach; i++) {
      at = i;
      Append(s, 1 + i / kEach, 1, Ev{static_cast<int64_t>(i + 1), i, -1});
    }
    at = kUsers * kEach;
  });
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  for (uint64_t i = at; i < kUsers * kEach; i = at) SnapshotOf(sn, 1 + i / kEach, INT64_MAX, 16);
  appender.join();
  size_t differ = 0;
  for (uint64_t u = 1; u <= kUsers; u++) {
    const std::vector<Ev> want = NewestOf(s, u, 1, INT64_MAX, 100);
    EXPECT_EQ(want.size(), kEach) << "user " << u;
    differ += SnapshotOf(sn, u, INT64_MAX, 100) != want;
  }
  EXPECT_EQ(differ, 0u) << "users whose cached history misses an append";
  uih_cache_stats cs{};
  ASSERT_EQ(uih_store_cache_stats(s, &cs, &err), UIH_OK);
  EXPECT_GT(cs.hits, 1000u);
  uih_snapshotter_free(sn);
  uih_store_close(s);
}
