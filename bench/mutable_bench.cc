// Mutable tier benchmark: blind UihAppend merges against a read-modify-write
// baseline (Get, decode, append, encode, Put under a per-key lock) on the
// same store options, side by side in one run.
//
//   build/release/bench/mutable_bench [users] [appends]
//
// Data: `uih gen`'s generator (examples/feed.schema.json, group
// "engagement"). Events before the median timestamp are preloaded (what the
// mutable tier already holds today); the rest arrive one event per append in
// time order, users interleaved, as online appends do. Prints:
//  1. appends/s on 1, 2 and 4 threads, and the ratio;
//  2. read latency p50/p99 of a (user, group) with 1, 16 and 256 pending
//     operands in the memtable, then after a flush and a full compaction;
//  3. bytes written per appended event (WAL + flush + compaction, from
//     RocksDB's statistics) for both.
// WAL on, not synced per append (UIH_APPEND_SYNC would make both fsync-bound).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "rocksdb/db.h"
#include "rocksdb/statistics.h"
#include "uih/events.h"
#include "uih/gen.h"
#include "uih/key.h"
#include "uih/mutable.h"
#include "mutable_internal.h"

namespace {

using bench::Check;

using Clock = std::chrono::steady_clock;


struct Event {
  uint64_t user;
  std::vector<uint64_t> bits;  // per batch column
  uint64_t present;            // bit c: column c has a value
  int64_t ts;
};

struct Data {
  uih_schema* schema = nullptr;
  const uih_group* g = nullptr;
  std::vector<Event> preload, appends;
};

Data Generate(uint64_t users, size_t max_appends) {
  Data d;
  uih_error err{};
  Check(uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &d.schema, &err), err, "schema");
  d.g = uih_schema_group_by_name(d.schema, "engagement");
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = users;
  o.seed = 7;
  o.max_events = 2000;  // the mutable tier holds a day or so, not a lifetime
  uih_gen* gen = nullptr;
  uih_batch* b = nullptr;
  Check(uih_gen_create(d.g, &o, &gen, &err), err, "gen");
  Check(uih_batch_create(d.g, d.g->stripe_events, nullptr, 0, &b, &err), err, "batch");
  std::vector<Event> all;
  int ts = uih_batch_column_index(b, d.g->ts->id);
  for (;;) {
    uint64_t user;
    Check(uih_gen_next(gen, &user, b, &err), err, "gen");
    if (b->count == 0) break;
    for (uint32_t r = 0; r < b->count; r++) {
      Event e{user, std::vector<uint64_t>(b->ncolumns), 0,
              (int64_t)uih_column_get_bits(&b->columns[ts], r)};
      for (uint32_t c = 0; c < b->ncolumns; c++)
        if (uih_column_has(&b->columns[c], r)) {
          e.bits[c] = uih_column_get_bits(&b->columns[c], r);
          e.present |= 1ull << c;
        }
      all.push_back(std::move(e));
    }
  }
  uih_batch_free(b);
  uih_gen_free(gen);
  std::sort(all.begin(), all.end(), [](const Event& x, const Event& y) { return x.ts < y.ts; });
  size_t half = all.size() / 2;
  d.preload.assign(all.begin(), all.begin() + (long)half);
  d.appends.assign(all.begin() + (long)half, all.end());
  if (d.appends.size() > max_appends) d.appends.resize(max_appends);
  return d;
}

void SetRow(uih_batch* b, const Event& e) {
  uint32_t row;
  uih_batch_append(b, &row, nullptr);
  for (uint32_t c = 0; c < b->ncolumns; c++)
    if (e.present >> c & 1) uih_column_set_bits(&b->columns[c], row, e.bits[c]);
}

std::string Key(uint64_t user, uint16_t group) {
  uint8_t k[UIH_KEY_GROUP_PREFIX_SIZE];
  uih_key_group_prefix(user, group, k);
  return std::string(reinterpret_cast<char*>(k), sizeof k);
}

struct Store {
  uih_mutable* m = nullptr;
  std::string path;
  Store(const std::string& p, const Data& d, const char* cf_options = nullptr) : path(p) {
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
    o.db_options = "statistics=BasicStatistics";
    o.cf_options = cf_options;
    uih_error err{};
    Check(uih_mutable_open(p.c_str(), d.schema, &o, &m, &err), err, "open");
  }
  ~Store() {
    uih_mutable_close(m);
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  rocksdb::Statistics* stats() { return uih::MutableDB(m)->GetDBOptions().statistics.get(); }
  uint64_t BytesWritten() {
    rocksdb::Statistics* s = stats();
    return s->getTickerCount(rocksdb::WAL_FILE_BYTES) + s->getTickerCount(rocksdb::FLUSH_WRITE_BYTES) +
           s->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
  }
  void Settle() {
    uih_error err{};
    Check(uih_mutable_flush(m, &err), err, "flush");
    Check(uih_mutable_compact(m, &err), err, "compact");
  }
};

// Preloads every user's earlier events as one append per user, then settles.
void Preload(Store& s, const Data& d) {
  std::vector<const Event*> sorted;
  for (const Event& e : d.preload) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Event* x, const Event* y) { return x->user < y->user; });
  uih_batch* b = nullptr;
  uih_error err{};
  Check(uih_batch_create(d.g, UIH_STRIPE_EVENTS_MAX, nullptr, 0, &b, &err), err, "batch");
  for (size_t i = 0; i < sorted.size();) {
    uih_batch_clear(b);
    size_t j = i;
    while (j < sorted.size() && sorted[j]->user == sorted[i]->user && b->count < b->capacity)
      SetRow(b, *sorted[j++]);
    Check(uih_mutable_append(s.m, sorted[i]->user, b, 0, &err), err, "preload");
    i = j;
  }
  uih_batch_free(b);
  s.Settle();
  s.stats()->Reset();
}

// The baseline: read the value, decode it, add the event, encode, write.
// Writers of one key are serialized by a striped lock, as they must be.
class ReadModifyWrite {
 public:
  ReadModifyWrite(Store& s, const Data& d) : s_(s), d_(d) {}
  void Append(const Event& e, uih_batch* b, uih_events* ev) {
    std::string key = Key(e.user, d_.g->id);
    std::lock_guard<std::mutex> lock(locks_[std::hash<std::string>()(key) % kLocks]);
    rocksdb::DB* db = uih::MutableDB(s_.m);
    rocksdb::PinnableSlice v;
    rocksdb::Status st = db->Get({}, uih::MutableColumnFamily(s_.m), key, &v);
    uih_error err{};
    uih_batch_clear(b);
    if (st.ok())
      Check(uih_events_decode(reinterpret_cast<const uint8_t*>(v.data()), v.size(), INT64_MIN,
                              INT64_MAX, b, &err),
            err, "rmw decode");
    SetRow(b, e);
    const uint8_t* p;
    size_t n;
    Check(uih_events_encode(ev, b, &p, &n, &err), err, "rmw encode");
    db->Put({}, uih::MutableColumnFamily(s_.m), key,
            rocksdb::Slice(reinterpret_cast<const char*>(p), n));
  }

 private:
  static constexpr size_t kLocks = 1024;
  Store& s_;
  const Data& d_;
  std::mutex locks_[kLocks];
};

struct RunResult {
  double appends_per_s;
  double bytes_per_event;
};

RunResult RunAppends(const Data& d, int threads, bool rmw, const std::string& dir) {
  Store s(dir + (rmw ? "/rmw" : "/merge"), d);
  Preload(s, d);
  ReadModifyWrite baseline(s, d);
  std::atomic<size_t> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&] {
      uih_batch* b = nullptr;
      uih_events* ev = nullptr;
      uih_error err{};
      Check(uih_batch_create(d.g, rmw ? UIH_STRIPE_EVENTS_MAX : 1, nullptr, 0, &b, &err), err, "batch");
      Check(uih_events_create(&ev, &err), err, "events");
      for (size_t i; (i = next.fetch_add(1)) < d.appends.size();) {
        const Event& e = d.appends[i];
        if (rmw) {
          baseline.Append(e, b, ev);
        } else {
          uih_batch_clear(b);
          SetRow(b, e);
          Check(uih_mutable_append(s.m, e.user, b, 0, &err), err, "append");
        }
      }
      uih_events_free(ev);
      uih_batch_free(b);
    });
  for (auto& t : ts) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  s.Settle();
  return {d.appends.size() / secs, (double)s.BytesWritten() / d.appends.size()};
}

void ReadLatency(const Data& d, const std::string& dir) {
  printf("\nread latency of one (user, group): 50 events settled + P pending single-event operands\n");
  printf("(max_successive_merges=0 so operands stay pending; the default 64 caps P)\n");
  printf("%9s %12s %12s %14s %14s\n", "pending", "p50 us", "p99 us", "p50 settled", "p99 settled");
  const int kKeys = 400;
  for (int pending : {1, 16, 256}) {
    Store s(dir + "/lat", d, "max_successive_merges=0;write_buffer_size=268435456");
    uih_batch* b = nullptr;
    uih_error err{};
    Check(uih_batch_create(d.g, 64, nullptr, 0, &b, &err), err, "batch");
    // 50 settled events per key, from the generated events.
    size_t at = 0;
    for (int k = 0; k < kKeys; k++) {
      uih_batch_clear(b);
      for (int i = 0; i < 50; i++) SetRow(b, d.appends[at++ % d.appends.size()]);
      Check(uih_mutable_append(s.m, k, b, 0, &err), err, "append");
    }
    s.Settle();
    for (int p = 0; p < pending; p++)
      for (int k = 0; k < kKeys; k++) {
        uih_batch_clear(b);
        Event e = d.appends[at++ % d.appends.size()];
        e.ts += 1000000000;  // newer than the settled ones
        SetRow(b, e);
        Check(uih_mutable_append(s.m, k, b, 0, &err), err, "append");
      }
    auto measure = [&](double* p50, double* p99) {
      std::vector<double> us;
      uih_batch* out = nullptr;
      std::mt19937_64 rng(1);
      for (int rep = 0; rep < 5; rep++)
        for (int i = 0; i < kKeys; i++) {
          uint64_t k = rng() % kKeys;
          auto t0 = Clock::now();
          Check(uih_mutable_read(s.m, k, d.g->id, INT64_MIN, INT64_MAX, &out, &err), err, "read");
          us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          if (out->count == 0 || out->count > (uint32_t)(50 + pending)) exit(1);
        }
      uih_batch_free(out);
      std::sort(us.begin(), us.end());
      *p50 = us[us.size() / 2];
      *p99 = us[us.size() * 99 / 100];
    };
    double a50, a99, b50, b99;
    measure(&a50, &a99);
    s.Settle();
    measure(&b50, &b99);
    printf("%9d %12.1f %12.1f %14.1f %14.1f\n", pending, a50, a99, b50, b99);
    uih_batch_free(b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t users = argc > 1 ? strtoull(argv[1], nullptr, 10) : 20000;
  size_t max_appends = argc > 2 ? strtoull(argv[2], nullptr, 10) : 200000;
  const char* tmp = getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/uih-mutable-bench";
  Data d = Generate(users, max_appends);
  printf("mutable_bench: %" PRIu64 " users, %zu events preloaded, %zu single-event appends, "
         "%u hardware threads\n",
         users, d.preload.size(), d.appends.size(), std::thread::hardware_concurrency());
  printf("\n%8s %16s %16s %8s %14s %14s\n", "threads", "UihAppend/s", "read-mod-write/s", "ratio",
         "B/event merge", "B/event rmw");
  for (int threads : {1, 2, 4}) {
    RunResult m = RunAppends(d, threads, false, dir);
    RunResult r = RunAppends(d, threads, true, dir);
    printf("%8d %16.0f %16.0f %7.2fx %14.0f %14.0f\n", threads, m.appends_per_s, r.appends_per_s,
           m.appends_per_s / r.appends_per_s, m.bytes_per_event, r.bytes_per_event);
    fflush(stdout);
  }
  ReadLatency(d, dir);
  uih_schema_free(d.schema);
  return 0;
}
