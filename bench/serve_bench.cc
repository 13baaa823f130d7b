// The serving process: snapshots while appends stream in and a load
// publishes from another store, with the write-through cache and without
// it (the baseline), side by side in one run.
//
//   build/release/bench/serve_bench [--users N] [--history H] [--mutable M] [--length L]
//                                   [--seconds S] [--append-rate R] [--dir DIR] [--seed X]
//
// A store of 2 shards: N users (default 2,000), each with H events
// (default 2,000) in generation 1 and M (default 300) in the mutable tier,
// one group of 4 traits (ts, an item id, a category, a uint32). For each
// of cache off and cache on (64 MiB), a serving store (UIH_STORE_ROLE_SERVE,
// follow_ms 20) runs, for S seconds (default 5): one thread appending one
// event at a time to random users at up to R events/s (default 100,000;
// 0: none, to time snapshots alone), and one thread taking snapshots of L
// events (default 1,024: the newest M from the mutable tier, the rest from
// the generation) of random users.
// Printed: snapshot latency p50 / p99 / p99.9 and snapshots/s, appends/s,
// the cache's hit rate; then a load (a store of role load in this process)
// publishes a new generation while both threads go on: the longest
// snapshot during the load and the switch, and the time from the publish's
// return to the new generation served. Every snapshot's sequence is checked
// to have L events in time order.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "quantile.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace {

using bench::Check;
using bench::Quantile;
using Clock = std::chrono::steady_clock;

const char kSchema[] = R"({"name": "serve", "version": 1, "groups": [
  {"name": "engagement", "id": 1, "stripe_events": 256, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"},
    {"name": "kind", "id": 3, "type": "category", "categories": ["view", "click", "like", "share"]},
    {"name": "watch_ms", "id": 4, "type": "uint32"}]}]})";

constexpr int64_t kStart = 1700000000000, kMinute = 60000;

struct Opts {
  uint64_t users = 2000, history = 2000, mut = 300;
  uint32_t length = 1024;
  double seconds = 5, append_rate = 100000;
  std::string dir = "/tmp/uih_serve_bench";
  uint64_t seed = 1;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A batch of one event of the group.
struct Event {
  uih_batch* b = nullptr;
  explicit Event(const uih_group* g) {
    uih_error err{};
    uint32_t row;
    Check(uih_batch_create(g, 1, nullptr, 0, &b, &err), err, "batch");
    Check(uih_batch_append(b, &row, &err), err, "batch");
  }
  ~Event() { uih_batch_free(b); }
  void Set(int64_t ts, uint64_t item, uint32_t kind, uint32_t watch) {
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], 0, static_cast<uint64_t>(ts));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], 0, item);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 3)], 0, kind);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 4)], 0, watch);
  }
};

uih_store* OpenAs(const std::string& path, unsigned role, size_t cache_bytes) {
  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  o.role = role;
  o.follow_ms = 20;
  o.cache_bytes = cache_bytes;
  uih_store* s = nullptr;
  uih_error err{};
  Check(uih_store_open(path.c_str(), &o, &s, &err), err, "opening the store");
  return s;
}

void Append(uih_store* s, Event& ev, uint64_t user) {
  uih_mutable* m = nullptr;
  uih_error err{};
  Check(uih_store_mutable(s, uih_shard_of(user, uih_store_shards(s)), &m, &err), err, "mutable tier");
  Check(uih_mutable_append(m, user, ev.b, 0, &err), err, "appending");
}

// Generation 1: `history` events per user, a minute apart, ending before
// `through`; then `mut` events each in the mutable tier after it.
int64_t Build(const Opts& o, const std::string& path) {
  std::filesystem::remove_all(o.dir);
  std::filesystem::create_directories(o.dir);
  uih_error err{};
  uih_store_init_opts io = UIH_STORE_INIT_OPTS_DEFAULT;
  io.shards = 2;
  Check(uih_store_create(path.c_str(), kSchema, strlen(kSchema), "serve.json", &io, &err), err, "init");
  const std::string csv = o.dir + "/history.csv";
  {
    std::ofstream f(csv);
    f << "user_id,group,ts,item,kind,watch_ms\n";
    std::mt19937_64 rng(o.seed);
    for (uint64_t u = 1; u <= o.users; u++)
      for (uint64_t k = 0; k < o.history; k++)
        f << u << ",engagement," << kStart + static_cast<int64_t>(k) * kMinute + static_cast<int64_t>(u % 1000) << ","
          << rng() % 1000000 << "," << rng() % 4 << "," << rng() % 60000 << "\n";
  }
  const int64_t through = kStart + static_cast<int64_t>(o.history) * kMinute;
  uih_store* s = OpenAs(path, UIH_STORE_ROLE_ALL, 0);
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = through;
  lo.threads = 2;
  const char* in[] = {csv.c_str()};
  Check(uih_load(s, in, 1, &lo, nullptr, &err), err, "loading the history");
  Event ev(uih_schema_group_by_id(uih_store_schema(s), 1));
  std::mt19937_64 rng(o.seed + 1);
  for (uint64_t k = 0; k < o.mut; k++)
    for (uint64_t u = 1; u <= o.users; u++) {
      ev.Set(through + static_cast<int64_t>(k) * 1000 + static_cast<int64_t>(u % 1000), rng() % 1000000, 1, 100);
      Append(s, ev, u);
    }
  uih_store_close(s);
  return through;
}

struct Run {
  std::vector<double> steady_us, publish_us;
  uint64_t appends = 0;
  double seconds = 0, publish_to_served_ms = 0, load_ms = 0;
  uih_cache_stats cache{};
};

Run Serve(const Opts& o, const std::string& path, size_t cache_bytes, int64_t through, int64_t* clock) {
  Run r;
  uih_store* s = OpenAs(path, UIH_STORE_ROLE_SERVE, cache_bytes);
  const uih_group* g = uih_schema_group_by_id(uih_store_schema(s), 1);
  std::atomic<int> phase{0};  // 0 steady, 1 publishing, 2 stop
  std::atomic<uint64_t> appended{0};
  std::thread appender([&] {
    if (o.append_rate <= 0) return;  // snapshots alone
    Event ev(g);
    std::mt19937_64 rng(o.seed + 7);
    const auto t0 = Clock::now();
    for (uint64_t i = 0; phase.load() < 2; i++) {
      // Paced: ahead of the rate, it sleeps (a spinning appender would take
      // a core from the snapshots on a small machine).
      const double ahead = static_cast<double>(i) / o.append_rate - std::chrono::duration<double>(Clock::now() - t0).count();
      if (ahead > 0.0005) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
      ev.Set(++*clock, rng() % 1000000, 2, 50);
      Append(s, ev, 1 + rng() % o.users);
      appended++;
    }
  });
  uih_snapshotter* sn = nullptr;
  uih_error err{};
  Check(uih_snapshotter_create(s, &sn, &err), err, "snapshotter");
  std::mt19937_64 rng(o.seed + 3);
  uih_snapshot_spec spec{1, {{1, o.length}}};
  auto snap = [&](std::vector<double>* into) {
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    const auto t0 = Clock::now();
    Check(uih_snapshot(sn, 1 + rng() % o.users, *clock, &spec, &seqs, &rec, &len, &err), err, "snapshot");
    into->push_back(Ms(Clock::now() - t0) * 1000);
    const int64_t* ts = uih_batch_timestamps(seqs[0]);
    if (seqs[0]->count != o.length || !std::is_sorted(ts, ts + seqs[0]->count)) {
      fprintf(stderr, "serve_bench: a snapshot of %u events, expected %u in time order\n", seqs[0]->count, o.length);
      exit(1);
    }
  };
  for (int i = 0; i < 2000; i++) snap(&r.publish_us);  // warm-up, not counted
  r.publish_us.clear();
  Check(uih_store_cache_stats(s, &r.cache, &err), err, "cache stats");
  const uih_cache_stats warm = r.cache;
  const uint64_t a0 = appended;
  const auto t0 = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < o.seconds) snap(&r.steady_us);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.appends = appended - a0;
  Check(uih_store_cache_stats(s, &r.cache, &err), err, "cache stats");
  r.cache.hits -= warm.hits;
  r.cache.misses -= warm.misses;
  // A load publishes from a store of its own while snapshots go on.
  phase = 1;
  uint32_t served = 0;
  Check(uih_store_following(s, 0, &served, &err), err, "following");
  std::atomic<bool> loaded{false};
  Clock::time_point published;
  std::thread loader([&] {
    const std::string day = o.dir + "/day" + std::to_string(served) + ".csv";
    {
      std::ofstream f(day);
      f << "user_id,group,ts,item,kind,watch_ms\n";
      for (uint64_t u = 1; u <= o.users; u += 10) f << u << ",engagement," << through + 1 << ",5,1,100\n";
    }
    uih_store* l = OpenAs(path, UIH_STORE_ROLE_LOAD, 0);
    uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
    lo.through = through + 2 + served;  // a little later each run
    const char* in[] = {day.c_str()};
    uih_error e{};
    const auto l0 = Clock::now();
    Check(uih_load(l, in, 1, &lo, nullptr, &e), e, "the load");
    published = Clock::now();
    r.load_ms = Ms(published - l0);
    uih_store_close(l);
    loaded = true;
  });
  for (;;) {
    snap(&r.publish_us);
    uint32_t now0 = 0, now1 = 0;
    uih_store_following(s, 0, &now0, &err);
    uih_store_following(s, 1, &now1, &err);
    if (loaded && now0 > served && now1 > served) {
      r.publish_to_served_ms = Ms(Clock::now() - published);
      break;
    }
  }
  loader.join();
  for (int i = 0; i < 500; i++) snap(&r.publish_us);  // the switch's aftermath
  phase = 2;
  appender.join();
  uih_snapshotter_free(sn);
  uih_store_close(s);
  return r;
}

void Print(const char* name, const Opts& o, const Run& r) {
  const uint64_t lookups = r.cache.hits + r.cache.misses;
  printf("%-10s snapshot of %u events, 1 thread: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, %.0f snapshots/s; "
         "appends alongside %.0f events/s; cache hit rate %.3f (%" PRIu64 " entries, %.1f MB)\n",
         name, o.length, Quantile(r.steady_us, 0.5), Quantile(r.steady_us, 0.99), Quantile(r.steady_us, 0.999),
         static_cast<double>(r.steady_us.size()) / r.seconds, static_cast<double>(r.appends) / r.seconds,
         lookups ? static_cast<double>(r.cache.hits) / static_cast<double>(lookups) : 0.0, r.cache.entries,
         static_cast<double>(r.cache.bytes) / 1e6);
  printf("%-10s during a publish (a load of %.0f ms in this process): longest snapshot %.2f ms, p99 %.1f us; "
         "publish to served %.1f ms\n",
         name, r.load_ms, *std::max_element(r.publish_us.begin(), r.publish_us.end()) / 1000,
         Quantile(r.publish_us, 0.99), r.publish_to_served_ms);
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--users") o.users = std::stoull(v);
    else if (a == "--history") o.history = std::stoull(v);
    else if (a == "--mutable") o.mut = std::stoull(v);
    else if (a == "--length") o.length = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--seconds") o.seconds = std::stod(v);
    else if (a == "--append-rate") o.append_rate = std::stod(v);
    else if (a == "--dir") o.dir = v;
    else if (a == "--seed") o.seed = std::stoull(v);
    else {
      fprintf(stderr, "usage: serve_bench [--users N] [--history H] [--mutable M] [--length L] [--seconds S]\n"
                      "                   [--append-rate R] [--dir DIR] [--seed X]\n");
      return 2;
    }
  }
  const std::string path = o.dir + "/store";
  int64_t clock = Build(o, path) + static_cast<int64_t>(o.mut) * 1000 + 1000;
  const int64_t through = kStart + static_cast<int64_t>(o.history) * kMinute;
  printf("serve_bench: %" PRIu64 " users, %" PRIu64 " events each in generation 1 and %" PRIu64
         " in the mutable tier, snapshots of %u, appends at up to %.0f/s\n",
         o.users, o.history, o.mut, o.length, o.append_rate);
  const Run off = Serve(o, path, 0, through, &clock);
  Print("no cache", o, off);
  const Run on = Serve(o, path, size_t{64} << 20, through, &clock);
  Print("cache", o, on);
  printf("cache / no cache: p50 %.2fx, p99 %.2fx faster\n", Quantile(off.steady_us, 0.5) / Quantile(on.steady_us, 0.5),
         Quantile(off.steady_us, 0.99) / Quantile(on.steady_us, 0.99));
  return 0;
}
