// The scale run's inference: a process that owns the store (role all),
// appends streaming into the mutable tier from one thread at a fixed rate
// while uih_snapshot runs on 1 and on 2 threads, each with its own
// snapshotter. Per length L (1 K, 8 K, 64 K engagement events, with 256
// search events): the users with at least L engagement events (by the
// generator, erased ones left out), cold — the store's files evicted from
// the page cache (posix_fadvise DONTNEED), then each of up to --requests
// distinct users once — and warm: --requests snapshots of those users
// again. p50/p99/p99.9 per case, the snapshots' mean length, appends/s.
//
// Then the training records are logged as a serving process logs them:
// --train-users users drawn by their events (active users), 16 or 17
// requests each (R = 16.5), one or two events appended to the user before
// each, snapshots of 4,096 engagement and 256 search events. Each record is
// kept with digests (XXH3) of its newest 4,096 / 1,024 / 128 engagement
// events' timestamps and items, which the training processes check every
// rebuilt record against (train.cc).
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <unordered_set>

#include "../check.h"
#include "../files.h"
#include "../quantile.h"
#include "scale.h"
#include "uih/key.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace scale {
namespace {

using bench::Check;
using bench::Quantile;

// Appends to the mutable tier: one event at a time, at a rate, the clock
// of the serving process (every appended timestamp is distinct and newer).
struct Appender {
  uih_store* s;
  const uih_group* g;
  std::atomic<int64_t> now;
  std::atomic<uint64_t> appended{0};
  std::atomic<bool> stop{false};

  Appender(uih_store* store, int64_t start) : s(store), g(uih_schema_group_by_id(uih_store_schema(store), kEngagement)), now(start) {}

  void One(uint64_t user, uih_batch* b, std::mt19937_64& rng) {
    uih_error err{};
    uih_batch_clear(b);
    uint32_t row;
    Check(uih_batch_append(b, &row, &err), err, "batch");
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, kTsTrait)], 0, static_cast<uint64_t>(now.fetch_add(1)));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, kItemTrait)], 0, rng() % 10000000);
    uih_mutable* m = nullptr;
    Check(uih_store_mutable(s, uih_shard_of(user, uih_store_shards(s)), &m, &err), err, "mutable tier");
    Check(uih_mutable_append(m, user, b, 0, &err), err, "appending");
    appended++;
  }

  void Run(double rate, uint64_t users, uint64_t seed) {
    uih_error err{};
    uih_batch* b = nullptr;
    Check(uih_batch_create(g, 1, nullptr, 0, &b, &err), err, "batch");
    std::mt19937_64 rng(seed);
    const double t0 = Seconds();
    for (uint64_t i = 0; rate > 0 && !stop; i++) {
      const double ahead = static_cast<double>(i) / rate - (Seconds() - t0);
      if (ahead > 0.0005) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
      One(1 + rng() % users, b, rng);
    }
    uih_batch_free(b);
  }
};

uint64_t Digest(const uih_batch* b, uint32_t newest) {
  const uint32_t n = std::min(newest, b->count), from = b->count - n;
  std::vector<uint64_t> items(n);
  const int ic = uih_batch_column_index(b, kItemTrait);
  for (uint32_t r = 0; r < n; r++) items[r] = uih_column_get_bits(&b->columns[ic], from + r);
  return XXH3_64bits_withSeed(items.data(), n * sizeof(uint64_t),
                              XXH3_64bits(uih_batch_timestamps(b) + from, n * sizeof(int64_t)));
}

void CheckSequence(const uih_batch* b, uint32_t length, uint64_t user) {
  const int64_t* ts = uih_batch_timestamps(b);
  if (b->count == 0 || b->count > length || !std::is_sorted(ts, ts + b->count)) {
    fprintf(stderr, "scale_bench: the snapshot of user %llu held %u events (asked %u), or out of order\n",
            static_cast<unsigned long long>(user), b->count, length);
    exit(1);
  }
}

// `requests` split over `threads` threads; latencies in microseconds.
std::vector<double> Snapshots(std::vector<uih_snapshotter*>& sn, const std::vector<uint64_t>& users,
                              uint32_t length, Appender& app, double* mean_events) {
  const size_t threads = sn.size();
  std::vector<std::vector<double>> lat(threads);
  std::atomic<uint64_t> events{0};
  std::vector<std::thread> ts;
  for (size_t t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      uih_snapshot_spec spec{2, {{kEngagement, length}, {kSearch, 256}}};
      uih_error err{};
      for (size_t i = t; i < users.size(); i += threads) {
        const uih_batch* const* seqs;
        const uint8_t* rec;
        size_t n;
        const double t0 = Seconds();
        Check(uih_snapshot(sn[t], users[i], app.now.load(), &spec, &seqs, &rec, &n, &err), err, "snapshot");
        lat[t].push_back((Seconds() - t0) * 1e6);
        CheckSequence(seqs[0], length, users[i]);
        events += seqs[0]->count;
      }
    });
  for (auto& t : ts) t.join();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  *mean_events = all.empty() ? 0 : static_cast<double>(events) / static_cast<double>(all.size());
  return all;
}

}  // namespace

void ServePhase(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out) {
  const std::vector<uint32_t> counts = EngagementCounts(c, p);
  const std::unordered_set<uint64_t> erased(p.erased.begin(), p.erased.end());
  out.emplace_back("serve", RunChild(c, "inference", [&](Figures& f) {
    uih_error err{};
    uih_store* s = nullptr;
    Check(uih_store_open(StorePath(c).c_str(), nullptr, &s, &err), err, "open");
    Appender app(s, kStart + static_cast<int64_t>(c.history_days + 2) * kDay);
    std::thread appender([&] { app.Run(c.append_rate, p.users, c.seed + 5); });
    std::mt19937_64 rng(c.seed + 9);
    std::vector<uih_snapshotter*> sn(2);
    for (auto& x : sn) Check(uih_snapshotter_create(s, &x, &err), err, "snapshotter");
    const double a0 = Seconds();
    const uint64_t n0 = app.appended;
    for (uint32_t length : {1u << 10, 1u << 13, 1u << 16}) {
      std::vector<uint64_t> eligible;
      for (uint64_t i = 0; i < counts.size(); i++)
        if (counts[i] >= length && !erased.count(i + 1)) eligible.push_back(i + 1);
      f.Set("users_" + std::to_string(length), static_cast<double>(eligible.size()));
      if (eligible.empty()) continue;
      std::shuffle(eligible.begin(), eligible.end(), rng);
      for (uint32_t threads : {1u, 2u}) {
        // Cold: distinct users, each once, from files just evicted.
        std::vector<uint64_t> cold(eligible.begin(), eligible.begin() + std::min<size_t>(eligible.size(), c.requests));
        std::vector<uint64_t> warm(c.requests);
        for (auto& u : warm) u = cold[rng() % cold.size()];
        for (const char* mode : {"cold", "warm"}) {
          const bool is_cold = mode[0] == 'c';
          if (is_cold) bench::Evict(StorePath(c));
          std::vector<uih_snapshotter*> use(sn.begin(), sn.begin() + threads);
          double mean = 0;
          std::vector<double> lat = Snapshots(use, is_cold ? cold : warm, length, app, &mean);
          const std::string k = "snap_" + std::to_string(length) + "_t" + std::to_string(threads) + "_" + mode;
          f.Set(k + "_p50_us", Quantile(lat, 0.5));
          f.Set(k + "_p99_us", Quantile(lat, 0.99));
          f.Set(k + "_p999_us", Quantile(lat, 0.999));
          f.Set(k + "_n", static_cast<double>(lat.size()));
          f.Set(k + "_events", mean);
        }
      }
    }
    f.Set("appends_per_s", static_cast<double>(app.appended - n0) / (Seconds() - a0));
    app.stop = true;
    appender.join();

    // The training records, as a serving process logs them.
    std::vector<uint64_t> cum(counts.size());
    uint64_t sum = 0;
    for (size_t i = 0; i < counts.size(); i++) cum[i] = sum += erased.count(i + 1) ? 0 : counts[i];
    if (sum == 0) {
      fprintf(stderr, "scale_bench: no user has events to log records for\n");
      exit(1);
    }
    FILE* rf = fopen(RecordsPath(c).c_str(), "wb");
    if (!rf) {
      perror("scale_bench: records");
      exit(1);
    }
    uih_batch* one = nullptr;
    Check(uih_batch_create(app.g, 1, nullptr, 0, &one, &err), err, "batch");
    uih_snapshot_spec spec{2, {{kEngagement, 4096}, {kSearch, 256}}};
    uint64_t records = 0, record_bytes = 0;
    for (uint32_t u = 0; u < c.train_users; u++) {
      const uint64_t user = 1 + static_cast<uint64_t>(std::upper_bound(cum.begin(), cum.end(), rng() % sum) - cum.begin());
      const uint32_t r = 16 + (u & 1);
      for (uint32_t k = 0; k < r; k++) {
        for (uint32_t e = 0; e <= (k & 1); e++) app.One(user, one, rng);
        const uih_batch* const* seqs;
        const uint8_t* rec;
        size_t n;
        Check(uih_snapshot(sn[0], user, app.now.load(), &spec, &seqs, &rec, &n, &err), err, "snapshot");
        CheckSequence(seqs[0], 4096, user);
        const uint32_t len = static_cast<uint32_t>(n);
        const uint64_t d[3] = {Digest(seqs[0], 4096), Digest(seqs[0], 1024), Digest(seqs[0], 128)};
        if (fwrite(&len, 4, 1, rf) != 1 || fwrite(rec, 1, n, rf) != n || fwrite(d, 8, 3, rf) != 3) {
          fprintf(stderr, "scale_bench: writing the records failed\n");
          exit(1);
        }
        records++;
        record_bytes += n;
      }
    }
    if (fclose(rf) != 0) {
      fprintf(stderr, "scale_bench: writing the records failed\n");
      exit(1);
    }
    f.Set("records", static_cast<double>(records));
    f.Set("record_bytes", static_cast<double>(record_bytes) / static_cast<double>(std::max<uint64_t>(records, 1)));
    uih_batch_free(one);
    for (auto* x : sn) uih_snapshotter_free(x);
    uih_store_close(s);
  }));
}

}  // namespace scale
