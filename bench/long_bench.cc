// Ultra-long sequences: what a snapshot and a rebuild cost as the length
// grows to UIH_SNAPSHOT_LENGTH_MAX (2^20), on one user whose history is
// longer still, side by side in one run. A store of one shard, one user
// with H events (1,200,000) loaded and M (20,000) appended to the mutable
// tier; then, warm, per length L (1 K, 8 K, 64 K, 256 K, 1 M): R snapshots
// of L events (p50, p99) and R rebuilds of one such record whole
// (uih_materialize, p50), each also per event, against the 1 K figure.
// Every snapshot is checked to hold L events in time order and every
// rebuild to equal its snapshot's timestamps.
//
//   build/release/bench/long_bench [--history H] [--mutable M] [--reps R] [--dir DIR] [--seed S]
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
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

const char kSchema[] = R"({"name": "long", "version": 1, "groups": [{"name": "engagement", "id": 1, "traits": [
  {"name": "ts", "id": 1, "type": "timestamp"},
  {"name": "item", "id": 2, "type": "id"},
  {"name": "kind", "id": 3, "type": "category", "categories": ["view", "click", "like", "share"]},
  {"name": "watch_ms", "id": 4, "type": "uint32"}]}]})";
constexpr int64_t kStart = 1700000000000;
constexpr uint64_t kUser = 42;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  uint64_t history = 1200000, mut = 20000, reps = 15, seed = 1;
  std::string dir = "/tmp/uih_long_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--history") history = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--mutable") mut = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--reps") reps = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--dir") dir = v;
    else if (a == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else {
      fprintf(stderr, "usage: long_bench [--history H] [--mutable M] [--reps R] [--dir DIR] [--seed S]\n");
      return 2;
    }
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/store", csv = dir + "/history.csv";
  uih_error err{};
  uih_store_init_opts io = UIH_STORE_INIT_OPTS_DEFAULT;
  Check(uih_store_create(path.c_str(), kSchema, strlen(kSchema), "long.json", &io, &err), err, "init");
  std::mt19937_64 rng(seed);
  {
    std::ofstream f(csv);
    f << "user_id,group,ts,item,kind,watch_ms\n";
    for (uint64_t k = 0; k < history; k++)
      f << kUser << ",engagement," << kStart + static_cast<int64_t>(k) * 1000 << "," << rng() % 1000000 << ","
        << rng() % 4 << "," << rng() % 60000 << "\n";
  }
  const int64_t through = kStart + static_cast<int64_t>(history) * 1000;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  uih_store* s = nullptr;
  Check(uih_store_open(path.c_str(), &so, &s, &err), err, "open");
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = through;
  const char* in[] = {csv.c_str()};
  Check(uih_load(s, in, 1, &lo, nullptr, &err), err, "loading the history");
  {
    const uih_group* g = uih_schema_group_by_id(uih_store_schema(s), 1);
    uih_batch* b = nullptr;
    Check(uih_batch_create(g, static_cast<uint32_t>(std::max<uint64_t>(mut, 1)), nullptr, 0, &b, &err), err, "batch");
    for (uint64_t k = 0; k < mut; k++) {
      uint32_t row;
      Check(uih_batch_append(b, &row, &err), err, "batch");
      uih_column_set_bits(&b->columns[0], row, static_cast<uint64_t>(through + static_cast<int64_t>(k) * 1000));
      uih_column_set_bits(&b->columns[1], row, rng() % 1000000);
      uih_column_set_bits(&b->columns[2], row, rng() % 4);
      uih_column_set_bits(&b->columns[3], row, rng() % 60000);
    }
    uih_mutable* m = nullptr;
    Check(uih_store_mutable(s, 0, &m, &err), err, "mutable tier");
    if (mut) Check(uih_mutable_append(m, kUser, b, 0, &err), err, "appending");
    uih_batch_free(b);
  }
  const int64_t request = through + static_cast<int64_t>(mut) * 1000 + 1;
  printf("long_bench: one user, %" PRIu64 " events loaded + %" PRIu64 " appended, %" PRIu64
         " reps per length, warm\n",
         history, mut, reps);
  printf("%9s %12s %12s %10s %14s %10s %8s\n", "length", "snapshot p50", "p99", "ns/event", "rebuild p50", "ns/event",
         "vs 1K");
  uih_snapshotter* sn = nullptr;
  Check(uih_snapshotter_create(s, &sn, &err), err, "snapshotter");
  double base = 0;
  for (uint32_t len : {1u << 10, 1u << 13, 1u << 16, 1u << 18, 1u << 20}) {
    if (len > history + mut) break;
    uih_snapshot_spec spec{1, {{1, len}}};
    std::vector<double> snap, rebuild;
    std::string record;
    std::vector<int64_t> seen;
    for (uint64_t r = 0; r <= reps; r++) {  // the first one warms up
      const uih_batch* const* seqs;
      const uint8_t* rec;
      size_t n;
      const auto t0 = Clock::now();
      Check(uih_snapshot(sn, kUser, request, &spec, &seqs, &rec, &n, &err), err, "snapshot");
      const double us = Us(Clock::now() - t0);
      const int64_t* ts = uih_batch_timestamps(seqs[0]);
      if (seqs[0]->count != len || !std::is_sorted(ts, ts + len)) {
        fprintf(stderr, "long_bench: a snapshot of %u held %u events\n", len, seqs[0]->count);
        return 1;
      }
      if (r == 0) {
        record.assign(reinterpret_cast<const char*>(rec), n);
        seen.assign(ts, ts + len);
        continue;
      }
      snap.push_back(us);
    }
    uih_projection p{};
    p.ngroups = 1;
    p.groups[0] = {1, len, 0, {}};
    for (uint64_t r = 0; r <= reps; r++) {
      const uint8_t* rp = reinterpret_cast<const uint8_t*>(record.data());
      size_t rl = record.size();
      uih_materialized* mz = nullptr;
      uih_materialize_stats st{};
      const auto t0 = Clock::now();
      Check(uih_materialize(s, &rp, &rl, 1, &p, &mz, &st, &err), err, "materialize");
      const double us = Us(Clock::now() - t0);
      const uih_mat_group* mg = uih_materialized_group(mz, 0);
      const uih_mat_column* c = nullptr;
      for (uint32_t k = 0; mg && k < mg->ncolumns; k++)
        if (mg->columns[k].trait == 1) c = &mg->columns[k];
      if (!c || st.mismatches || mg->rows != seen.size() ||
          std::memcmp(c->values, seen.data(), seen.size() * sizeof(int64_t)) != 0) {
        fprintf(stderr, "long_bench: the rebuild of %u differs from its snapshot\n", len);
        return 1;
      }
      uih_materialized_free(mz);
      if (r) rebuild.push_back(us);
    }
    const double p50 = Quantile(snap, 0.5), p99 = Quantile(snap, 0.99), rb = Quantile(rebuild, 0.5);
    if (!base) base = p50 / len;
    printf("%9u %10.1f us %10.1f us %10.1f %12.1f us %10.1f %7.2fx\n", len, p50, p99, p50 * 1000 / len, rb,
           rb * 1000 / len, p50 / len / base);
  }
  uih_snapshotter_free(sn);
  uih_store_close(s);
  std::filesystem::remove_all(dir);
  return 0;
}
