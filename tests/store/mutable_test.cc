// The mutable tier end to end through its C API: concurrent appends against
// a model with flushes and compactions racing them, durability under
// SIGKILL, idempotent retries, caps, retention by watermark, and corrupt
// operands and values that stay confined to their key.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <stdexcept>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <xxhash.h>

#include "batch_model.h"
#include "uih_plugin/c_api.h"
#include "engine/stripe_gen.h"
#include "rocksdb/db.h"
#include "test_util.h"
#include "uih/events.h"
#include "uih/key.h"
#include "uih/mutable.h"
#include "format.h"
#include "mutable_internal.h"
#include "store_internal.h"
#include "uih_store/window.h"

namespace {

using uih_test::BatchPtr;
using uih_test::Event;

class Mutable : public testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(11);
    json_ = uih_test::RandomSchemaJson(rng, 6);
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_schema_parse(json_.data(), json_.size(), "t", &schema_, &err)) << err.msg;
    g_ = uih_schema_group_at(schema_, 0);
  }
  void TearDown() override {
    uih_mutable_close(m_);
    uih_schema_free(schema_);
  }
  void Open(const uih_mutable_opts* opts = nullptr) {
    uih_mutable_close(m_);
    m_ = nullptr;
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_mutable_open(dir_.path().c_str(), schema_, opts, &m_, &err)) << err.msg;
  }
  std::vector<Event> Read(uint64_t user, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
    BatchPtr b;
    uih_error err{};
    EXPECT_EQ(UIH_OK, uih_mutable_read(m_, user, g_->id, lo, hi, &b.b, &err)) << err.msg;
    return b.b ? uih_test::EventsOf(b.b) : std::vector<Event>();
  }
  BatchPtr Random(std::mt19937_64& rng, uint32_t n) {
    BatchPtr b;
    EXPECT_EQ(UIH_OK, uih_batch_create(g_, n, nullptr, 0, &b.b, nullptr));
    uih_test::FillRandomBatch(rng, b.b, n);
    return b;
  }
  // Events of one timestamp each: ts[i], every other trait absent.
  BatchPtr AtTimes(const std::vector<int64_t>& ts) {
    BatchPtr b;
    EXPECT_EQ(UIH_OK, uih_batch_create(g_, (uint32_t)ts.size(), nullptr, 0, &b.b, nullptr));
    int c = uih_batch_column_index(b.b, g_->ts->id);
    for (int64_t t : ts) {
      uint32_t row;
      uih_batch_append(b.b, &row, nullptr);
      uih_column_set_bits(&b.b->columns[c], row, (uint64_t)t);
    }
    return b;
  }
  void Append(uint64_t user, const BatchPtr& b, unsigned flags = 0) {
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_mutable_append(m_, user, b.b, flags, &err)) << err.msg;
  }
  // Every key and value of the events column family, straight from RocksDB.
  std::map<std::string, std::string> Stored() {
    std::map<std::string, std::string> kv;
    std::unique_ptr<rocksdb::Iterator> it(uih::MutableDB(m_)->NewIterator(
        rocksdb::ReadOptions(), uih::MutableColumnFamily(m_)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) kv[it->key().ToString()] = it->value().ToString();
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
    return kv;
  }
  // The users with keys, each key checked: a chunk's (18 bytes, its ts a
  // chunk start, its events inside the chunk) or, in a store without
  // chunks, the 10-byte (user, group) key.
  std::set<uint64_t> StoredUsers() {
    std::set<uint64_t> users;
    const int64_t span = uih_mutable_chunk_span(m_);
    for (const auto& [k, v] : Stored()) {
      uih_key key{};
      if (span == 0) {
        EXPECT_EQ(UIH_OK, uih_key_group_prefix_decode((const uint8_t*)k.data(), k.size(), &key.user_id, &key.group,
                                                      nullptr));
      } else {
        EXPECT_EQ(UIH_OK, uih_key_decode((const uint8_t*)k.data(), k.size(), &key, nullptr));
        EXPECT_EQ(key.ts, uih_key_chunk_start(key.ts, span));
        uih_events_info info{};
        EXPECT_EQ(UIH_OK, uih_events_read_info((const uint8_t*)v.data(), v.size(), &info, nullptr));
        if (info.count && !info.quarantined) {
          EXPECT_EQ(key.ts, uih_key_chunk_start(info.min_ts, span)) << "the chunk's first event";
          EXPECT_EQ(key.ts, uih_key_chunk_start(info.max_ts, span)) << "the chunk's last event";
        }
      }
      EXPECT_EQ(g_->id, key.group);
      users.insert(key.user_id);
    }
    return users;
  }
  std::string Key(uint64_t user, int64_t ts) {
    uint8_t k[UIH_KEY_SIZE];
    return std::string((const char*)k, uih::MutableKey(uih_mutable_chunk_span(m_), user, g_->id, ts, k));
  }

  uih_test::TempDir dir_;
  std::string json_;
  uih_schema* schema_ = nullptr;
  const uih_group* g_ = nullptr;
  uih_mutable* m_ = nullptr;
};

TEST_F(Mutable, ConcurrentAppendsWithFlushesAndCompactionsEqualTheModel) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.max_successive_merges = 8;  // exercise merges on the write path too
  Open(&o);
  // Each user draws its events from a pool, so threads append duplicates of
  // each other's events to the same keys.
  const int kUsers = 12, kThreads = 4, kAppends = 1500;
  std::mt19937_64 rng(5);
  std::vector<BatchPtr> pools;
  for (int u = 0; u < kUsers; u++) pools.push_back(Random(rng, 40));
  std::vector<std::set<Event>> model(kUsers);
  std::mutex model_mu;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread maintenance([&] {
    std::mt19937_64 r(99);
    while (!done) {
      uih_error err{};
      if ((r() % 3 ? uih_mutable_flush(m_, &err) : uih_mutable_compact(m_, &err)) != UIH_OK) {
        ADD_FAILURE() << err.msg;
        failures++;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; t++)
    writers.emplace_back([&, t] {
      std::mt19937_64 r(1000 + t);
      for (int i = 0; i < kAppends; i++) {
        uint64_t user = r() % kUsers;
        BatchPtr b;
        uint32_t n = 1 + (uint32_t)(r() % 5);
        if (uih_batch_create(g_, n, nullptr, 0, &b.b, nullptr) != UIH_OK) failures++;
        for (uint32_t k = 0; k < n; k++)
          if (uih_batch_copy_row(b.b, pools[user].b, (uint32_t)(r() % 40), nullptr) != UIH_OK) failures++;
        std::vector<Event> evs = uih_test::EventsOf(b.b);
        uih_error err{};
        if (uih_mutable_append(m_, user, b.b, 0, &err) != UIH_OK) {
          ADD_FAILURE() << err.msg;
          failures++;
          continue;
        }
        std::lock_guard<std::mutex> lock(model_mu);
        model[user].insert(evs.begin(), evs.end());
      }
    });
  for (auto& w : writers) w.join();
  done = true;
  maintenance.join();
  ASSERT_EQ(0, failures.load());
  for (int pass = 0; pass < 2; pass++) {
    for (int u = 0; u < kUsers; u++) {
      std::vector<Event> got = Read(u);
      EXPECT_EQ(model[u], std::set<Event>(got.begin(), got.end())) << "user " << u;
      EXPECT_EQ(model[u].size(), got.size()) << "user " << u << ": duplicates";
      for (size_t i = 1; i < got.size(); i++) EXPECT_LE(got[i - 1].first, got[i].first);
    }
    Open(&o);  // and again after reopening
  }
}

// RocksDB preallocates a write-ahead log 1.1x the write buffer at a time
// (74 MB): a load writing a watermark into each shard's mutable tier held
// that much disk per shard until it closed. The store's databases step by
// at most kPreallocationMax (store_internal.h).
TEST_F(Mutable, AFewSyncedBytesTakeAFewMegabytesOfDiskNotAWriteBuffer) {
  Open();
  std::mt19937_64 rng(5);
  BatchPtr b = Random(rng, 3);
  Append(7, b, UIH_APPEND_SYNC);
  ASSERT_EQ(3u, Read(7).size());
  uint64_t allocated = 0, logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    if (e.path().extension() != ".log") continue;
    struct stat st {};
    ASSERT_EQ(0, stat(e.path().c_str(), &st)) << e.path();
    allocated += static_cast<uint64_t>(st.st_blocks) * 512;
    logs++;
  }
  ASSERT_LE(1u, logs) << "the append went through a write-ahead log";
  EXPECT_LE(allocated, uih::kPreallocationMax + (uint64_t{1} << 20)) << "bytes of disk the logs take";
}

TEST_F(Mutable, RetriesAreIdempotent) {
  Open();
  std::mt19937_64 rng(3);
  BatchPtr a = Random(rng, 20), b = Random(rng, 20);
  Append(1, a);
  Append(1, b);
  std::vector<Event> once = Read(1);
  Append(1, a);  // a retried append, in the memtable
  EXPECT_EQ(once, Read(1));
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  Append(1, b);  // and on top of a compacted value
  EXPECT_EQ(once, Read(1));
  std::map<std::string, std::string> before = Stored();
  EXPECT_LT(1u, before.size()) << "random timestamps fall in many chunks";
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  EXPECT_EQ(before, Stored());
}

TEST_F(Mutable, EveryAcknowledgedAppendSurvivesSigkill) {
  // A fixed schema the child knows: timestamp and one int64 trait "v".
  const char* schema =
      R"({"name":"d","version":1,"groups":[{"name":"g","id":9,"traits":[
        {"name":"ts","id":1,"type":"timestamp"},{"name":"v","id":2,"type":"int64"}]}]})";
  std::string schema_path = dir_ / "schema.json";
  std::ofstream(schema_path) << schema;
  std::string db = dir_ / "db";
  std::mt19937_64 rng(17);
  std::set<int64_t> acked;
  int64_t next = 0;
  for (int round = 0; round < 6; round++) {
    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    const std::string from = std::to_string(next); /* made before the fork: the child only execs */
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(UIH_APPEND_CHILD, UIH_APPEND_CHILD, db.c_str(), schema_path.c_str(), from.c_str(), "1000000",
            (char*)nullptr);
      _exit(127);
    }
    close(fds[1]);
    // Let it append for a random while, then kill it mid-flight.
    FILE* in = fdopen(fds[0], "r");
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(100 + (int)(rng() % 400));
    long long v;
    int seen = 0;
    while (std::chrono::steady_clock::now() < deadline && fscanf(in, "%lld", &v) == 1) {
      acked.insert(v);
      seen++;
    }
    kill(pid, SIGKILL);
    while (fscanf(in, "%lld", &v) == 1) acked.insert(v);  // printed before the kill
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended on its own, status " << status;
    ASSERT_GT(seen, 0) << "round " << round << ": the child acknowledged nothing";
    next = *acked.rbegin() + 1000;  // fresh timestamps for the next child

    // Reopen: every acknowledged event is there exactly once, and nothing
    // that was never attempted.
    uih_schema* s = nullptr;
    ASSERT_EQ(UIH_OK, uih_schema_load(schema_path.c_str(), &s, nullptr));
    uih_mutable* m = nullptr;
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_mutable_open(db.c_str(), s, nullptr, &m, &err)) << err.msg;
    std::set<int64_t> found;
    size_t total = 0;
    for (uint64_t u = 0; u < 16; u++) {
      uih_batch* b = nullptr;
      ASSERT_EQ(UIH_OK, uih_mutable_read(m, u, 9, INT64_MIN, INT64_MAX, &b, &err)) << err.msg;
      for (const Event& e : uih_test::EventsOf(b)) {
        EXPECT_EQ((int64_t)(u), e.first % 16);
        ASSERT_EQ(1u, e.second.size());
        EXPECT_EQ((uint64_t)(e.first * 7), e.second[0].second);
        found.insert(e.first);
        total++;
      }
      uih_batch_free(b);
    }
    uih_mutable_close(m);
    uih_schema_free(s);
    EXPECT_EQ(found.size(), total) << "an event is stored twice";
    for (int64_t a : acked) ASSERT_TRUE(found.count(a)) << "acknowledged event " << a << " lost";
    EXPECT_LE(found.size(), acked.size() + 1 * (round + 1)) << "more than one unacknowledged "
                                                               "append per kill survived";
  }
}

TEST_F(Mutable, CapsKeepTheNewestEvents) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.max_events = 10;
  Open(&o);
  for (int64_t t = 0; t < 100; t += 5) {
    std::vector<int64_t> ts;
    for (int64_t k = t; k < t + 5; k++) ts.push_back(k);
    Append(7, AtTimes(ts));
  }
  auto check = [&] {
    std::vector<Event> got = Read(7);
    ASSERT_EQ(10u, got.size());
    EXPECT_EQ(90, got.front().first);
    EXPECT_EQ(99, got.back().first);
  };
  check();
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  check();
  uih_mutable_opts age = UIH_MUTABLE_OPTS_DEFAULT;
  age.max_age = 3;
  Open(&age);
  Append(7, AtTimes({100}));
  std::vector<Event> got = Read(7);
  ASSERT_EQ(4u, got.size());  // 97..100
  EXPECT_EQ(97, got.front().first);
}

TEST_F(Mutable, RetentionDropsExactlyTheEventsBelowTheWatermark) {
  Open();
  // User u has events at u*10 .. u*10+9.
  for (uint64_t u = 0; u < 10; u++) {
    std::vector<int64_t> ts;
    for (int64_t k = 0; k < 10; k++) ts.push_back((int64_t)u * 10 + k);
    Append(u, AtTimes(ts));
  }
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  EXPECT_EQ(10u, StoredUsers().size()) << "nothing is dropped before a watermark exists";
  int64_t wm;
  int has = 1;
  ASSERT_EQ(UIH_OK, uih_mutable_watermark(m_, &wm, &has, nullptr));
  EXPECT_EQ(0, has);

  ASSERT_EQ(UIH_OK, uih_mutable_set_watermark(m_, 45, nullptr));
  // Pending operands below the watermark go too.
  Append(8, AtTimes({3, 44, 45}));
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  std::set<uint64_t> users = StoredUsers();
  EXPECT_EQ((std::set<uint64_t>{4, 5, 6, 7, 8, 9}), users) << "emptied values are removed";
  for (uint64_t u = 0; u < 10; u++) {
    std::vector<Event> got = Read(u);
    std::vector<int64_t> want, ts;
    for (int64_t k = 0; k < 10; k++)
      if ((int64_t)u * 10 + k >= 45) want.push_back((int64_t)u * 10 + k);
    if (u == 8) want.insert(want.begin(), 45);
    for (const Event& e : got) ts.push_back(e.first);
    EXPECT_EQ(want, ts) << "user " << u;
  }
  // The watermark is durable and only advances.
  Open();
  ASSERT_EQ(UIH_OK, uih_mutable_watermark(m_, &wm, &has, nullptr));
  EXPECT_EQ(1, has);
  EXPECT_EQ(45, wm);
  uih_error err{};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_mutable_set_watermark(m_, 44, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "may only advance")) << err.msg;
  // After reopening, the filter uses it without being told again.
  Append(9, AtTimes({1, 2}));
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  EXPECT_EQ(90, Read(9).front().first);
  // Reads can ask for a window.
  std::vector<Event> w = Read(9, 93, 95);
  ASSERT_EQ(3u, w.size());
  EXPECT_EQ(93, w.front().first);
}

TEST_F(Mutable, CorruptOperandsAndValuesStayConfinedToTheirKey) {
  Open();
  std::mt19937_64 rng(8);
  BatchPtr good = Random(rng, 10);
  Append(1, good);
  Append(2, good);
  Append(3, good);
  rocksdb::DB* db = uih::MutableDB(m_);
  // The chunk of the first event.
  const int64_t first = (int64_t)uih_column_get_bits(&good.b->columns[uih_batch_column_index(good.b, g_->ts->id)], 0);
  auto key = [&](uint64_t u) { return Key(u, first); };
  // User 1: a garbage operand on top of its events. User 2: a garbage base
  // value under a good append. User 3 stays healthy.
  const std::string garbage("\x01\x00not an event list at all", 26);
  ASSERT_TRUE(db->Merge({}, uih::MutableColumnFamily(m_), key(1), garbage).ok());
  ASSERT_TRUE(db->Put({}, uih::MutableColumnFamily(m_), key(2), garbage).ok());
  Append(2, good);
  std::vector<Event> want = uih_test::EventsOf(good.b);
  std::sort(want.begin(), want.end());
  auto expect_corrupt = [&](uint64_t u) {
    BatchPtr b;
    uih_error err{};
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_read(m_, u, g_->id, INT64_MIN, INT64_MAX, &b.b, &err));
    EXPECT_NE(nullptr, strstr(err.msg, ("user " + std::to_string(u) + " group 3").c_str()))
        << err.msg;
  };
  for (int pass = 0; pass < 2; pass++) {
    expect_corrupt(1);
    expect_corrupt(2);
    std::vector<Event> got = Read(3);
    std::sort(got.begin(), got.end());
    got.erase(std::unique(got.begin(), got.end()), got.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    EXPECT_EQ(want, got);
    // Flushes and compactions go on: the bad key does not stop the store.
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih_mutable_flush(m_, &err)) << err.msg;
    ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, &err)) << err.msg;
    Append(3, good);
  }
  // Nothing was dropped: the garbage operand is kept in user 1's value.
  std::string v;
  ASSERT_TRUE(db->Get({}, uih::MutableColumnFamily(m_), key(1), &v).ok());
  uih_events_info info{};
  ASSERT_EQ(UIH_OK, uih_events_read_info((const uint8_t*)v.data(), v.size(), &info, nullptr));
  ASSERT_TRUE(info.quarantined);
  bool kept = false;
  for (uint32_t i = 0; i < info.count; i++) {
    uih_slice s{};
    ASSERT_EQ(UIH_OK, uih_events_quarantined((const uint8_t*)v.data(), v.size(), i, &s, nullptr, 0,
                                             nullptr));
    kept |= std::string((const char*)s.data, s.len) == garbage;
  }
  EXPECT_TRUE(kept);
}

TEST_F(Mutable, ReadsReuseBatchesAndKeepTheirProjection) {
  Open();
  std::mt19937_64 rng(4);
  BatchPtr a = Random(rng, 30);
  Append(5, a);
  uint16_t ids[] = {g_->ts->id};
  BatchPtr b;
  ASSERT_EQ(UIH_OK, uih_batch_create(g_, 2, ids, 1, &b.b, nullptr));
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_mutable_read(m_, 5, g_->id, INT64_MIN, INT64_MAX, &b.b, &err)) << err.msg;
  EXPECT_EQ(1u, b.b->ncolumns) << "the projection is kept when the batch grows";
  EXPECT_EQ(Read(5).size(), b.b->count);
  uih_batch* same = b.b;
  ASSERT_EQ(UIH_OK, uih_mutable_read(m_, 6, g_->id, INT64_MIN, INT64_MAX, &b.b, &err));
  EXPECT_EQ(same, b.b) << "large enough: reused";
  EXPECT_EQ(0u, b.b->count);
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_mutable_read(m_, 5, 77, INT64_MIN, INT64_MAX, &b.b, &err));
}

TEST_F(Mutable, OptionsAreValidated) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.cf_options = "merge_operator=max";
  uih_error err{};
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT,
            uih_mutable_open(dir_.path().c_str(), schema_, &o, &m_, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "needs merge_operator=UihAppend")) << err.msg;
  o.cf_options = "no_such_option=1";
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_mutable_open(dir_.path().c_str(), schema_, &o, &m_, &err));
  o.cf_options = "merge_operator={id=UihAppend;max_events=3};write_buffer_size=1048576";
  Open(&o);
  Append(1, AtTimes({1, 2, 3, 4, 5}));
  EXPECT_EQ(3u, Read(1).size());
}

// Every file under `dir` with its size and modification time.
std::string DirState(const std::string& dir) {
  std::set<std::string> lines;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    std::error_code ec;
    auto size = e.is_regular_file() ? e.file_size() : 0;
    lines.insert(e.path().string() + " " + std::to_string(size) + " " +
                 std::to_string(e.last_write_time(ec).time_since_epoch().count()));
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST_F(Mutable, ReadOnlyOpenWritesNothingAndRefusesWrites) {
  Open();
  Append(5, AtTimes({10, 20}));
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_mutable_set_watermark(m_, 1, &err)) << err.msg;
  uih_mutable_close(m_);
  m_ = nullptr;
  std::string before = DirState(dir_.path());
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.read_only = 1;
  Open(&o);
  EXPECT_EQ(2u, Read(5).size());
  int64_t wm;
  int has;
  ASSERT_EQ(UIH_OK, uih_mutable_watermark(m_, &wm, &has, &err)) << err.msg;
  EXPECT_TRUE(has && wm == 1);
  BatchPtr b = AtTimes({30});
  EXPECT_EQ(UIH_ERR_NOT_SUPPORTED, uih_mutable_append(m_, 5, b.b, 0, &err)) << err.msg;
  EXPECT_EQ(UIH_ERR_NOT_SUPPORTED, uih_mutable_set_watermark(m_, 2, &err)) << err.msg;
  EXPECT_EQ(UIH_ERR_NOT_SUPPORTED, uih_mutable_flush(m_, &err)) << err.msg;
  uih_mutable_close(m_);
  m_ = nullptr;
  EXPECT_EQ(before, DirState(dir_.path())) << "a read-only open wrote to the store";
}

// Paths that hold no store are refused and left as they were, whether the
// open may create a store or not.
TEST_F(Mutable, WhatIsNotAStoreIsRefusedAndLeftAlone) {
  uih_mutable_opts create = UIH_MUTABLE_OPTS_DEFAULT, ro = UIH_MUTABLE_OPTS_DEFAULT;
  ro.read_only = 1;
  uih_error err{};
  std::string missing = dir_ / "missing";
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_mutable_open(missing.c_str(), schema_, &ro, &m_, &err));
  EXPECT_EQ("not a uihstore store: " + missing + ": it does not exist", std::string(err.msg));
  EXPECT_FALSE(std::filesystem::exists(missing));

  std::string plain = dir_ / "plain";
  std::filesystem::create_directories(plain);
  std::ofstream(plain + "/notes.txt") << "data";
  std::string before = DirState(plain);
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_mutable_open(plain.c_str(), schema_, &ro, &m_, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "no RocksDB database in it")) << err.msg;
  EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_mutable_open((plain + "/notes.txt").c_str(), schema_, &create, &m_, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "it is not a directory")) << err.msg;
  EXPECT_EQ(before, DirState(plain));

  std::string other = dir_ / "other";
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, other, &db).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "k", "v").ok());
    delete db;
  }
  before = DirState(other);
  for (const uih_mutable_opts* o : {&ro, &create}) {
    EXPECT_EQ(UIH_ERR_NOT_FOUND, uih_mutable_open(other.c_str(), schema_, o, &m_, &err));
    EXPECT_EQ("not a uihstore store: " + other + ": a RocksDB database without column family uih.mutable",
              std::string(err.msg));
    EXPECT_EQ(nullptr, m_);
  }
  EXPECT_EQ(before, DirState(other)) << "another RocksDB database was changed";
}

// A user's history in chunks against a model: random appends whose events
// straddle chunks (negative times, both ends of int64 among them), flushes
// and compactions, then random windows and newest-N reads — uih_mutable_read
// and the snapshot's ReadMutableNewest — are exactly the model's slices, in
// time order; and every key is a chunk holding only its own events.
TEST_F(Mutable, ChunkedHistoriesReadLikeOneList) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.chunk_span = 1000;
  o.max_successive_merges = 4;
  Open(&o);
  ASSERT_EQ(1000, uih_mutable_chunk_span(m_));
  std::mt19937_64 rng(21);
  const int kUsers = 3;
  std::vector<std::map<int64_t, Event>> model(kUsers);  // distinct times: the newest N are unambiguous
  std::set<int64_t> used;
  auto draw_ts = [&]() -> int64_t {
    for (;;) {
      int64_t t;
      switch (rng() % 10) {
        case 0: t = INT64_MIN + (int64_t)(rng() % 3000); break;
        case 1: t = INT64_MAX - (int64_t)(rng() % 3000); break;
        default: t = (int64_t)(rng() % 40000) - 20000;
      }
      if (used.insert(t).second) return t;
    }
  };
  for (int round = 0; round < 60; round++) {
    uint64_t user = rng() % kUsers;
    uint32_t n = 1 + (uint32_t)(rng() % 40);
    BatchPtr b = Random(rng, n);
    int tsc = uih_batch_column_index(b.b, g_->ts->id);
    for (uint32_t r = 0; r < n; r++) uih_column_set_bits(&b.b->columns[tsc], r, (uint64_t)draw_ts());
    Append(user, b);
    if (rng() % 3 == 0) Append(user, b);  // a retry
    for (const Event& e : uih_test::EventsOf(b.b)) model[user][e.first] = e;
    if (rng() % 7 == 0) {
      ASSERT_EQ(UIH_OK, uih_mutable_flush(m_, nullptr));
    }
    if (rng() % 11 == 0) {
      ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
    }
  }
  EXPECT_EQ(kUsers, (int)StoredUsers().size());
  EXPECT_LT(20u, Stored().size()) << "the histories span many chunks";
  uih::Gather scratch;  // kept from read to read, as a snapshotter keeps its own
  for (int q = 0; q < 400; q++) {
    uint64_t user = rng() % kUsers;
    int64_t lo = q % 10 == 0 ? INT64_MIN : (int64_t)(rng() % 50000) - 25000;
    int64_t hi = q % 10 == 1 ? INT64_MAX : lo + (int64_t)(rng() % 20000);
    if (q % 20 == 2) std::swap(lo, hi);  // empty
    uint32_t newest = q % 3 == 0 ? UINT32_MAX : 1 + (uint32_t)(rng() % 30);
    std::vector<Event> want;
    for (auto it = model[user].lower_bound(lo); it != model[user].end() && it->first <= hi; ++it)
      want.push_back(it->second);
    if (want.size() > newest) want.erase(want.begin(), want.end() - newest);
    BatchPtr b;
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih::ReadMutableNewest(m_, user, g_->id, lo, hi, newest, &b.b, &scratch, &err)) << err.msg;
    EXPECT_EQ(want, uih_test::EventsOf(b.b)) << "user " << user << " [" << lo << ", " << hi << "] newest " << newest;
    if (newest == UINT32_MAX) {
      EXPECT_EQ(want, Read(user, lo, hi));
    }
  }
  // Reopened (the span is the store's, not the options'), after a compaction.
  uih_mutable_opts other = UIH_MUTABLE_OPTS_DEFAULT;
  other.chunk_span = 7;
  Open(&other);
  EXPECT_EQ(1000, uih_mutable_chunk_span(m_));
  ASSERT_EQ(UIH_OK, uih_mutable_compact(m_, nullptr));
  for (int u = 0; u < kUsers; u++) {
    std::vector<Event> want;
    for (const auto& [t, e] : model[u]) want.push_back(e);
    EXPECT_EQ(want, Read(u));
  }
}

// A store made before chunks (no span in it) keeps one key per user and
// group, read and written as before; a malformed span is named, and a span
// must be positive.
TEST_F(Mutable, StoresWithoutChunksKeepTheirSingleKey) {
  Open();
  EXPECT_EQ(UIH_CHUNK_SPAN_DEFAULT, uih_mutable_chunk_span(m_));
  rocksdb::DB* db = uih::MutableDB(m_);
  ASSERT_TRUE(db->Delete({}, db->DefaultColumnFamily(), uih::kChunkSpanKey).ok());
  Open();
  EXPECT_EQ(0, uih_mutable_chunk_span(m_));
  std::mt19937_64 rng(2);
  BatchPtr a = Random(rng, 30), b = Random(rng, 30);
  Append(4, a);
  Append(4, b);
  std::vector<Event> want = uih_test::EventsOf(a.b), more = uih_test::EventsOf(b.b);
  want.insert(want.end(), more.begin(), more.end());
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  std::vector<Event> got = Read(4);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(want, got);
  std::map<std::string, std::string> kv = Stored();
  ASSERT_EQ(1u, kv.size());
  EXPECT_EQ(Key(4, 0), kv.begin()->first);
  EXPECT_EQ(10u, kv.begin()->first.size());

  db = uih::MutableDB(m_);
  ASSERT_TRUE(db->Put({}, db->DefaultColumnFamily(), uih::kChunkSpanKey, "abc").ok());
  uih_mutable_close(m_);
  m_ = nullptr;
  uih_error err{};
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_open(dir_.path().c_str(), schema_, nullptr, &m_, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "'uih.chunk_span' holds 3 bytes")) << err.msg;
  EXPECT_EQ(nullptr, m_);
  uih_mutable_opts zero = UIH_MUTABLE_OPTS_DEFAULT;
  zero.chunk_span = 0;
  EXPECT_EQ(UIH_ERR_INVALID_ARGUMENT, uih_mutable_open((dir_ / "new").c_str(), schema_, &zero, &m_, &err));
  EXPECT_NE(nullptr, strstr(err.msg, "chunk_span 0")) << err.msg;
}

// A read of the newest events jumps over empty spans with one seek to the
// chunk before them, and a key there that names no chunk start is an
// error, not the end of the history.
TEST_F(Mutable, NewestReadsSeekAcrossGapsAndNameBadKeys) {
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.chunk_span = 100;
  Open(&o);
  std::mt19937_64 rng(3);
  BatchPtr old = Random(rng, 1), recent = Random(rng, 1);
  int tsc = uih_batch_column_index(old.b, g_->ts->id);
  uih_column_set_bits(&old.b->columns[tsc], 0, 1000);           // chunk 1000
  uih_column_set_bits(&recent.b->columns[tsc], 0, 5000000000);  // 50 M spans later
  Append(9, old);
  Append(9, recent);
  std::vector<Event> want = uih_test::EventsOf(old.b), more = uih_test::EventsOf(recent.b);
  want.insert(want.end(), more.begin(), more.end());
  uih::Gather scratch;  // the snapshotter's way: one kept from read to read
  for (uint32_t newest : {2u, 5u, UINT32_MAX}) {
    BatchPtr b;
    uih_error err{};
    ASSERT_EQ(UIH_OK, uih::ReadMutableNewest(m_, 9, g_->id, INT64_MIN, INT64_MAX, newest, &b.b, &scratch, &err)) << err.msg;
    EXPECT_EQ(want, uih_test::EventsOf(b.b)) << newest;
  }
  rocksdb::DB* db = uih::MutableDB(m_);
  const std::string value = Stored()[Key(9, 1000)];
  // Between the two chunks, then newer than both: keys whose last byte
  // makes their timestamp no multiple of the span.
  for (int64_t at : {INT64_C(3000), INT64_C(9000000000)}) {
    std::string bad = Key(9, at);
    bad[17] = 7;
    ASSERT_TRUE(db->Put({}, uih::MutableColumnFamily(m_), bad, value).ok());
    for (uint32_t newest : {2u, UINT32_MAX}) {
      BatchPtr b;
      uih_error err{};
      EXPECT_EQ(UIH_ERR_CORRUPTION, uih::ReadMutableNewest(m_, 9, g_->id, INT64_MIN, INT64_MAX, newest, &b.b, &scratch, &err))
          << at << " " << newest;
      EXPECT_NE(nullptr, strstr(err.msg, "expected 18 bytes naming a chunk start")) << err.msg;
    }
  }
}

TEST(ChunkStart, IsTheFloorMultipleOfTheSpan) {
  EXPECT_EQ(0, uih_key_chunk_start(0, 3600));
  EXPECT_EQ(0, uih_key_chunk_start(3599, 3600));
  EXPECT_EQ(3600, uih_key_chunk_start(3600, 3600));
  EXPECT_EQ(-3600, uih_key_chunk_start(-1, 3600));
  EXPECT_EQ(-3600, uih_key_chunk_start(-3600, 3600));
  EXPECT_EQ(INT64_MIN, uih_key_chunk_start(INT64_MIN, 1));
  EXPECT_EQ(INT64_MIN, uih_key_chunk_start(INT64_MIN, 2));
  EXPECT_EQ(INT64_MIN, uih_key_chunk_start(INT64_MIN + 5, 3600)) << "no multiple below is representable";
  EXPECT_EQ(INT64_MAX, uih_key_chunk_start(INT64_MAX, 1));
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; i++) {
    int64_t span = 1 + (int64_t)(rng() % (i % 2 ? 5000 : UINT64_MAX >> 1));
    int64_t ts = (int64_t)rng();
    int64_t c = uih_key_chunk_start(ts, span);
    ASSERT_LE(c, ts);
    __int128 floor = (__int128)ts - (((__int128)ts % span) + span) % span;
    if (floor >= (__int128)INT64_MIN) ASSERT_EQ((__int128)c, floor) << ts << " " << span;
    else ASSERT_EQ(INT64_MIN, c);
    ASSERT_LE(c, uih_key_chunk_start(ts == INT64_MAX ? ts : ts + 1, span)) << "non-decreasing";
  }
}

// The C API's firewall: no exception reaches a C caller.
TEST(CApi, ExceptionsBecomeErrors) {
  uih_error err{};
  EXPECT_EQ(UIH_OK, uih::CallC(&err, "f", [] { return UIH_OK; }));
  EXPECT_EQ(UIH_ERR_CORRUPTION, uih::CallC(&err, "f", [] { return (int)UIH_ERR_CORRUPTION; }));
  EXPECT_EQ(UIH_ERR_NO_MEMORY, uih::CallC(&err, "uih_f", []() -> int { throw std::bad_alloc(); }));
  EXPECT_STREQ("uih_f: out of memory", err.msg);
  EXPECT_EQ(UIH_ERR_INTERNAL, uih::CallC(&err, "uih_f", []() -> int { throw std::runtime_error("boom"); }));
  EXPECT_STREQ("uih_f: unexpected C++ exception: boom", err.msg);
  EXPECT_EQ(UIH_ERR_INTERNAL, uih::CallC(&err, "uih_f", []() -> int { throw 7; }));
  EXPECT_STREQ("uih_f: unexpected C++ exception", err.msg);
  EXPECT_EQ(UIH_ERR_INTERNAL, uih::CallC(nullptr, "uih_f", []() -> int { throw 7; }));
  bool ran = false;
  uih::CallCVoid([&] {
    ran = true;
    throw std::logic_error("x");
  });
  EXPECT_TRUE(ran);
}

}  // namespace

// A store closed cleanly leaves nothing to its write-ahead log. One killed
// leaves its events there: that log damaged in its middle (a flipped byte,
// a zeroed 4 KB page, a record length running past the end of the file)
// fails the open, naming the log file and the offset, where RocksDB's
// default recovery would stop at the damage and its tolerant one would drop
// everything after a bad length in the last block, the events after it
// silently gone. A log cut inside its last record (a process killed
// mid-write) opens, without that record alone.
TEST_F(Mutable, ADamagedWriteAheadLogFailsTheOpenInsteadOfDroppingEvents) {
  namespace fs = std::filesystem;
  Open();
  const fs::path db = dir_.path(), image = dir_.path() + ".killed", mark399 = dir_.path() + ".mark399";
  for (int64_t i = 0; i < 400; i++) {  // one log record each
    if (i == 399) fs::copy_file(db / "UIH-ACKED", mark399, fs::copy_options::overwrite_existing);
    Append(1 + i % 7, AtTimes({1000 + i}));
  }
  // The directory as a process killed now leaves it (its events in the
  // write-ahead log alone); a clean close flushes them into a table file.
  fs::remove_all(image);
  fs::copy(db, image, fs::copy_options::recursive);
  uih_mutable_close(m_);
  m_ = nullptr;
  for (const fs::directory_entry& e : fs::directory_iterator(db))
    if (e.path().extension() == ".log") fs::remove(e.path());
  Open();
  size_t kept = 0;
  for (uint64_t u = 1; u <= 7; u++) kept += Read(u).size();
  EXPECT_EQ(kept, 400u) << "closed cleanly, its write-ahead log holds nothing needed";
  uih_mutable_close(m_);
  m_ = nullptr;
  fs::remove_all(db);
  fs::copy(image, db, fs::copy_options::recursive);
  fs::remove_all(image);
  const fs::path log = uih_test::LargestLog(db);
  ASSERT_FALSE(log.empty());
  const uintmax_t size = fs::file_size(log);
  ASSERT_GT(size, 8192u);
  const std::string copy = dir_.path() + ".pristine-log";  // beside the database, not in it
  fs::copy_file(log, copy, fs::copy_options::overwrite_existing);
  auto damaged_open = [&](const char* what, const std::function<void()>& damage) {
    SCOPED_TRACE(what);
    fs::copy_file(copy, log, fs::copy_options::overwrite_existing);
    damage();
    uih_error err{};
    uih_mutable* m = nullptr;
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_open(db.c_str(), schema_, nullptr, &m, &err))
        << "opened on what came before the damage";
    EXPECT_NE(std::string(err.msg).find("write-ahead log " + log.filename().string() + " is damaged at byte"),
              std::string::npos)
        << "names the log file and the offset: " << err.msg;
    uih_mutable_close(m);
  };
  damaged_open("a flipped byte", [&] { uih_test::FlipByte(log, size / 2); });
  // A record's length field changed so that it seems to run past the end
  // of the file: RocksDB's tolerant recovery alone would read the rest as a
  // torn tail and drop it without a word.
  damaged_open("a length running past the end", [&] {  // the first record of the log's last 32 KB block
    uih_test::FlipByte(log, (size - 1) / 32768 * 32768 + 5, 0x7f);
  });
  damaged_open("a zeroed page", [&] {
    std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  });
  // Cut inside the last record, acknowledged: a loss the open refuses,
  // saying what the acknowledged mark says.
  fs::copy_file(copy, log, fs::copy_options::overwrite_existing);
  fs::resize_file(log, size - 3);
  {
    uih_error err{};
    uih_mutable* m = nullptr;
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_open(db.c_str(), schema_, nullptr, &m, &err));
    EXPECT_NE(std::string(err.msg).find("were acknowledged"), std::string::npos) << err.msg;
    uih_mutable_close(m);
  }
  // The same cut where the process died writing that record (never
  // acknowledged: the mark is the one before it): that record alone is
  // gone, and said.
  fs::copy_file(mark399, db / "UIH-ACKED", fs::copy_options::overwrite_existing);
  Open();
  size_t events = 0;
  for (uint64_t u = 1; u <= 7; u++) events += Read(u).size();
  EXPECT_EQ(events, 399u) << "every record but the torn last one";
  fs::remove(copy);
  fs::remove(mark399);
}

// The acknowledged mark (UIH-ACKED): a process killed after acknowledging
// appends whose write-ahead log is then deleted whole is refused, not read
// as a log that never held them; after a machine restart (another boot
// id) the unsynced appends it lost are said and the synced ones required.
TEST_F(Mutable, AWholeLogLostAfterAKillIsRefusedAndARestartsUnsyncedLossSaid) {
  namespace fs = std::filesystem;
  Open();
  for (int64_t i = 0; i < 20; i++) Append(1, AtTimes({100 + i}), UIH_APPEND_SYNC);
  uih_error err{};
  ASSERT_EQ(UIH_OK, uih_mutable_flush(m_, &err)) << err.msg;  // the synced ones in a table file
  for (int64_t i = 0; i < 30; i++) Append(2, AtTimes({500 + i}));
  const fs::path db = dir_.path(), image = dir_.path() + ".killed";
  fs::remove_all(image);
  fs::copy(db, image, fs::copy_options::recursive);  // as the kill leaves it
  uih_mutable_close(m_);
  m_ = nullptr;
  fs::remove_all(db);
  fs::rename(image, db);
  std::vector<fs::path> logs;  // oldest first: the last is the one the process was writing
  for (const fs::directory_entry& e : fs::directory_iterator(db))
    if (e.path().extension() == ".log") logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 2u) << "the flush began a new log; the older one holds the metadata's first writes";
  {  // an older log zeroed whole is damage, not a torn tail (only the newest log can end torn)
    const std::string older = uih_test::ReadFile(logs[0]);
    uih_test::WriteFile(logs[0], std::string(older.size(), '\0'));
    uih_mutable* m = nullptr;
    EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_open(db.c_str(), schema_, nullptr, &m, &err));
    EXPECT_NE(std::string(err.msg).find("a newer log follows it"), std::string::npos) << err.msg;
    uih_mutable_close(m);
    uih_test::WriteFile(logs[0], older);
  }
  fs::remove(logs.back());
  auto refused = [&](const char* says) {
    uih_mutable* m = nullptr;
    uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
    for (int ro : {1, 0}) {
      o.read_only = ro;
      EXPECT_EQ(UIH_ERR_CORRUPTION, uih_mutable_open(db.c_str(), schema_, &o, &m, &err)) << (ro ? "read-only" : "");
      EXPECT_NE(std::string(err.msg).find(says), std::string::npos) << err.msg;
      uih_mutable_close(m);
      m = nullptr;
    }
  };
  refused("in this boot of the machine");

  // The same after a restart: the mark rewritten with another boot id.
  const std::string mark = uih_test::ReadFile(db / "UIH-ACKED");
  ASSERT_EQ(mark.size(), 56u);
  auto with_boot = [&](const std::string& m, uint8_t b) {
    std::string x = m;
    for (int i = 24; i < 40; i++) x[i] = static_cast<char>(b);
    const uint64_t check = XXH3_64bits(x.data(), 48);
    for (int i = 0; i < 8; i++) x[48 + i] = static_cast<char>(check >> (56 - 8 * i));
    return x;
  };
  uih_test::WriteFile(db / "UIH-ACKED", with_boot(mark, 0x5a));
  Open();
  EXPECT_EQ(Read(1).size(), 20u) << "the synced appends";
  EXPECT_EQ(Read(2).size(), 0u);
  EXPECT_NE(uih::MutableRecovered(m_).find("the machine restarted: 30 unsynced acknowledged writes"),
            std::string::npos)
      << uih::MutableRecovered(m_);
  Append(1, AtTimes({900}), UIH_APPEND_SYNC);
  uih_mutable_close(m_);
  m_ = nullptr;
  Open();  // in this boot, after the restart was accepted: the mark starts again from what the database holds
  EXPECT_EQ(Read(1).size(), 21u);
  EXPECT_EQ(uih::MutableRecovered(m_), "") << "said once";
  uih_mutable_close(m_);
  m_ = nullptr;

  // A mark saying more was synced than the database holds: refused after
  // a restart too; a damaged mark is named.
  std::string synced_more = with_boot(mark, 0x5a);
  for (int i = 0; i < 8; i++) synced_more[16 + i] = static_cast<char>(i == 7 ? 0xff : 0);
  uih_test::WriteFile(db / "UIH-ACKED", with_boot(synced_more, 0x5a));
  refused("synced ones");
  uih_test::WriteFile(db / "UIH-ACKED", mark.substr(0, 30));
  refused("UIH-ACKED is damaged");
}

// Readers opening a tier while its owner appends never see a mark ahead
// of the log they read: the mark is read before the database opens.
TEST_F(Mutable, ReadOnlyOpensBesideAnAppenderNeverRaiseAFalseAlarm) {
  Open();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int64_t i = 0; i < 3000 && !done; i++) Append(1 + i % 5, AtTimes({1000 + i}));
  });
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.read_only = 1;
  int opened = 0;
  for (int k = 0; k < 60; k++) {
    uih_mutable* m = nullptr;
    uih_error err{};
    const int rc = uih_mutable_open(dir_.path().c_str(), schema_, &o, &m, &err);
    if (rc == UIH_OK) opened++;
    else EXPECT_EQ(std::string(err.msg).find("acknowledged"), std::string::npos) << err.msg;
    uih_mutable_close(m);
  }
  done = true;
  writer.join();
  EXPECT_GT(opened, 0);
}
