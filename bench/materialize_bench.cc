// Inference snapshots and training-time reconstruction, side by side with
// two baselines, in one run.
//
//   build/release/bench/materialize_bench [--users N] [--days D] [--requests R] [--length L]
//                                         [--batch B] [--shards S] [--scale X] [--dir DIR] [--seed S]
//                                         [--cold 1]
//
// Data: `uih gen`'s generator (examples/feed.schema.json, group
// "engagement", 9 traits) for N users over D days (--scale: the Pareto
// scale of events per user, 10 by default: median ~18 events; 100: ~180);
// days 1..D-1 loaded, day D appended to the mutable tier. R requests of
// users active on day D, 16 or 17 per user (RecD's 16.5 examples per user),
// at random times of that day, are snapshotted with spec engagement:L
// (latency per call, record bytes); then day D is loaded (its events move
// into generation 2) and the records are rebuilt in batches of B, with the
// records of a user together (R = 16.5 per user per batch) and spread out
// (the same records reordered so a batch's users are distinct, R = 1):
//  - materialize: uih_materialize for tenants reading L, L/4 and L/32
//    events (4,096 / 1,024 / 128 with --length 4096), each with every trait
//    and with two, and L in the jagged layout;
//  - the materializer (uih_materializer): 1 worker with batches rebuilt
//    ahead of the caller, the same without (depth 1: no prefetch), without
//    batched reads (each user's read on its own), without data affinity
//    (each record read and decoded alone), and with every core; the caller
//    sums every value it gets, as a trainer reads them;
//  - fat rows: every full sequence stored pre-materialized as one value per
//    record (its columns as they are in memory) in a RocksDB BlockBasedTable
//    compressed with LZ4, and with ZSTD, read back with Get (no block cache)
//    into per-trait arrays;
//  - per record: uih_store_read of each record's window, filtered by
//    arrival and cut, then its mutable events decoded (no affinity, no
//    checkpoints, no projection);
// records/s, events/s, stripes decoded and bytes read from storage per
// record (fat rows: their compressed bytes). Every rebuilt sequence of the
// full projection is compared with what the snapshot returned. With
// --cold 1, every timed pass starts with the store's and the fat rows'
// files evicted from the page cache (posix_fadvise), so it reads the device.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "files.h"
#include "check.h"
#include "rocksdb/db.h"
#include "rocksdb/table.h"
#include "uih/csv.h"
#include "uih/gen.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"
#include "uih/stripe.h"

namespace {

using bench::Check;

namespace fs = std::filesystem;
constexpr int64_t kDay = 86400000;
constexpr int64_t kStart = INT64_C(1700000000000);


double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A sequence as comparable rows: every column's presence and bits.
using Rows = std::vector<std::vector<uint64_t>>;
Rows RowsOf(const uih_batch* b) {
  Rows out;
  for (uint32_t r = 0; r < b->count; r++) {
    std::vector<uint64_t> row;
    for (uint32_t c = 0; c < b->ncolumns; c++) {
      bool has = uih_column_has(&b->columns[c], r);
      row.push_back(has);
      row.push_back(has ? uih_column_get_bits(&b->columns[c], r) : 0);
    }
    out.push_back(row);
  }
  return out;
}
Rows RowsOf(const uih_mat_group* g, size_t rec) {
  Rows out;
  for (uint64_t r = g->offsets[rec]; r < g->offsets[rec] + g->lengths[rec]; r++) {
    std::vector<uint64_t> row;
    for (uint32_t c = 0; c < g->ncolumns; c++) {
      const uih_mat_column& col = g->columns[c];
      size_t w = uih_type_width(static_cast<uih_type>(col.type));
      uint64_t bits = 0;
      memcpy(&bits, static_cast<const uint8_t*>(col.values) + r * w, w);
      row.push_back(col.present[r]);
      row.push_back(bits);
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t users = 20000, requests = 20000, seed = 1;
  uint32_t days = 30, length = 256, batch = 256, shards = 2;
  double scale = 10;
  bool cold = false;
  std::string dir = "/tmp/uih_materialize_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--users") users = std::stoull(v);
    else if (a == "--days") days = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--requests") requests = std::stoull(v);
    else if (a == "--length") length = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--batch") batch = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--shards") shards = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--dir") dir = v;
    else if (a == "--seed") seed = std::stoull(v);
    else if (a == "--scale") scale = std::stod(v);
    else if (a == "--cold") cold = v == "1";
    else {
      fprintf(stderr,
              "usage: materialize_bench [--users N] [--days D] [--requests R] [--length L] [--batch B] [--shards S]"
              " [--scale X] [--dir DIR] [--seed S] [--cold 1]\n");
      return 2;
    }
  }
  if (days < 2 || length < 32) {
    fprintf(stderr, "materialize_bench: --days >= 2 and --length >= 32\n");
    return 2;
  }
  uih_error err{};
  const char* schema_path = UIH_SOURCE_DIR "/examples/feed.schema.json";
  std::ifstream sin(schema_path, std::ios::binary);
  std::string json((std::istreambuf_iterator<char>(sin)), {});
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = dir + "/store";
  Check(uih_store_init(store.c_str(), json.data(), json.size(), schema_path, shards, &err), err, "init");
  uih_store* s = nullptr;
  Check(uih_store_open(store.c_str(), nullptr, &s, &err), err, "open");
  const uih_schema* schema = uih_store_schema(s);
  const uih_group* g = uih_schema_group_by_name(schema, "engagement");

  // Histories: days 1..D-1 as CSV to load, day D into the mutable tier.
  const int64_t boundary = kStart + static_cast<int64_t>(days - 1) * kDay;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.seed = seed;
  o.users = users;
  o.days = days;
  o.start_ts = kStart;
  o.activity_scale = scale;
  uih_gen* gen = nullptr;
  Check(uih_gen_create(g, &o, &gen, &err), err, "generator");
  const std::string history = dir + "/history.csv", today = dir + "/today.csv";
  FILE* h = fopen(history.c_str(), "w");
  FILE* d = fopen(today.c_str(), "w");
  uih_batch *b = nullptr, *one = nullptr;
  Check(uih_batch_create(g, g->stripe_events, nullptr, 0, &b, &err), err, "batch");
  Check(uih_batch_create(g, g->stripe_events, nullptr, 0, &one, &err), err, "batch");
  Check(uih_csv_write_header(h, b, &err), err, "csv");
  Check(uih_csv_write_header(d, b, &err), err, "csv");
  const int tsc = uih_batch_column_index(b, g->ts->id);
  uint64_t stored = 0, fresh = 0;
  std::vector<uint64_t> active;  // users with events today
  for (;;) {
    uint64_t user;
    Check(uih_gen_next(gen, &user, b, &err), err, "generator");
    if (b->count == 0) break;
    uih_batch_clear(one);
    for (uint32_t r = 0; r < b->count; r++) {
      bool now = static_cast<int64_t>(uih_column_get_bits(&b->columns[tsc], r)) >= boundary;
      Check(uih_csv_write_row(now ? d : h, user, b, r, &err), err, "csv");
      if (now) Check(uih_batch_copy_row(one, b, r, &err), err, "copy");
      (now ? fresh : stored)++;
    }
    if (one->count) {
      uih_mutable* tier = nullptr;
      Check(uih_store_mutable(s, uih_shard_of(user, shards), &tier, &err), err, "store_mutable");
      Check(uih_mutable_append(tier, user, one, 0, &err), err, "append");
      if (active.empty() || active.back() != user) active.push_back(user);
    }
  }
  fclose(h);
  fclose(d);
  uih_gen_free(gen);
  uih_batch_free(b);
  uih_batch_free(one);
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = boundary;
  lo.threads = 2;
  const char* hin[] = {history.c_str()};
  Check(uih_load(s, hin, 1, &lo, nullptr, &err), err, "load the history");
  printf("materialize_bench: %" PRIu64 " users, %u days: %" PRIu64 " events stored, %" PRIu64
         " in the mutable tier (%zu users active today); %" PRIu64 " requests, spec engagement:%u, batches of %u\n",
         users, days, stored, fresh, active.size(), requests, length, batch);

  // Inference: snapshots of active users at random times of the day.
  std::mt19937_64 rng(seed);
  uih_snapshotter* sn = nullptr;
  Check(uih_snapshotter_create(s, &sn, &err), err, "snapshotter");
  uih_snapshot_spec spec{};
  spec.ngroups = 1;
  spec.groups[0] = {g->id, length};
  std::vector<std::string> records;
  std::vector<Rows> seen;
  std::vector<double> lat;
  uint64_t seq_events = 0;
  std::vector<uint64_t> of_user;  // per record: the user's number of requests so far
  std::vector<std::pair<uint64_t, int64_t>> reqs;  // (user, request time)
  uint64_t user = 0, left = 0;
  for (uint64_t i = 0; i < requests; i++) {
    if (left == 0) {  // 16 or 17 requests per user: 16.5 on average
      user = active[rng() % active.size()];
      left = 16 + (i / 16) % 2;
    }
    of_user.push_back(17 - left--);
    int64_t ts = boundary + static_cast<int64_t>(rng() % kDay);
    reqs.push_back({user, ts});
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    auto t0 = std::chrono::steady_clock::now();
    Check(uih_snapshot(sn, user, ts, &spec, &seqs, &rec, &len, &err), err, "snapshot");
    lat.push_back(Seconds(t0));
    records.emplace_back(reinterpret_cast<const char*>(rec), len);
    seen.push_back(RowsOf(seqs[0]));
    seq_events += seqs[0]->count;
  }
  uih_snapshotter_free(sn);
  // First requests of a user against the others: the first reads its
  // stripes and mutable blocks from the page cache into the block cache.
  std::vector<double> first_lat, again_lat;
  for (size_t i = 0; i < lat.size(); i++) (of_user[i] == 0 ? first_lat : again_lat).push_back(lat[i]);
  auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))] * 1e6;
  };
  uint64_t rec_bytes = 0;
  for (auto& r : records) rec_bytes += r.size();
  printf("\nsnapshot (1 thread): p50 %.1f us, p99 %.1f us, p99.9 %.1f us; %.1f events per sequence,"
         " %.1f record bytes per example (%.2f per event shown to the model)\n",
         pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), static_cast<double>(seq_events) / static_cast<double>(requests),
         static_cast<double>(rec_bytes) / static_cast<double>(requests),
         static_cast<double>(rec_bytes) / static_cast<double>(std::max<uint64_t>(seq_events, 1)));
  printf("    a user's first request p50 %.1f us, p99 %.1f us; its later ones p50 %.1f us, p99 %.1f us\n",
         pct(first_lat, 0.5), pct(first_lat, 0.99), pct(again_lat, 0.5), pct(again_lat, 0.99));
  // Warm: the same requests again, on every core, each thread with its
  // snapshotter and a share of the requests; the records must not change.
  {
    const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::vector<double>> tl(nt);
    std::atomic<uint64_t> differ{0};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < nt; t++)
      threads.emplace_back([&, t] {
        uih_snapshotter* tsn = nullptr;
        uih_error e{};
        Check(uih_snapshotter_create(s, &tsn, &e), e, "snapshotter");
        for (size_t i = t; i < reqs.size(); i += nt) {
          const uih_batch* const* seqs;
          const uint8_t* rec;
          size_t len;
          auto c0 = std::chrono::steady_clock::now();
          Check(uih_snapshot(tsn, reqs[i].first, reqs[i].second, &spec, &seqs, &rec, &len, &e), e, "snapshot");
          tl[t].push_back(Seconds(c0));
          differ += std::string(reinterpret_cast<const char*>(rec), len) != records[i];
        }
        uih_snapshotter_free(tsn);
      });
    for (auto& th : threads) th.join();
    const double wall = Seconds(t0);
    std::vector<double> all;
    for (auto& v : tl) all.insert(all.end(), v.begin(), v.end());
    printf("snapshot warm (the same requests again, %u threads): p50 %.1f us, p99 %.1f us, p99.9 %.1f us;"
           " %.0f k snapshots/s; %" PRIu64 " records differ\n",
           nt, pct(all, 0.5), pct(all, 0.99), pct(all, 0.999), static_cast<double>(all.size()) / wall / 1e3,
           differ.load());
  }

  // The day moves on: today's events (now in the records) are loaded.
  lo.through = INT64_MIN;
  const char* tin[] = {today.c_str()};
  Check(uih_load(s, tin, 1, &lo, nullptr, &err), err, "load today");

  // Training: records of a user together (as logged), and spread out.
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  for (auto& r : records) {
    ptrs.push_back(reinterpret_cast<const uint8_t*>(r.data()));
    lens.push_back(r.size());
  }
  std::vector<size_t> spread(records.size());
  std::iota(spread.begin(), spread.end(), 0);
  std::stable_sort(spread.begin(), spread.end(), [&](size_t x, size_t y) { return of_user[x] < of_user[y]; });
  std::vector<const uint8_t*> sptrs;
  std::vector<size_t> slens;
  for (size_t i : spread) sptrs.push_back(ptrs[i]), slens.push_back(lens[i]);

  auto projection = [&](uint32_t len, uint32_t ntraits) {
    uih_projection p{};
    p.ngroups = 1;
    p.groups[0].group = g->id;
    p.groups[0].max_length = len;
    p.groups[0].ntraits = ntraits;
    if (ntraits) {
      p.groups[0].traits[0] = g->ts->id;
      p.groups[0].traits[1] = uih_group_trait_by_name(g, "item_id")->id;
    }
    return p;
  };
  // What a trainer does with a batch: reads every value.
  auto consume = [](const uih_materialized* m) {
    uint64_t sum = 0;
    const uih_mat_group* mg = uih_materialized_group(m, 0);
    for (uint32_t c = 0; c < mg->ncolumns; c++) {
      const uint8_t* v = static_cast<const uint8_t*>(mg->columns[c].values);
      const size_t bytes = mg->rows * uih_type_width(static_cast<uih_type>(mg->columns[c].type));
      for (size_t k = 0; k < bytes; k++) sum += v[k];
    }
    return sum;
  };
  uint64_t checksum = 0;
  const double nrec = static_cast<double>(records.size());
  printf("\n%-44s %12s %12s %14s %16s\n", "reconstruction", "records/s", "M events/s", "stripes/record",
         "KB read/record");
  auto print_row = [&](const char* what, double t, uint64_t events, uint64_t stripes, double bytes) {
    printf("%-44s %12.0f %12.2f %14s %16.2f\n", what, nrec / t, static_cast<double>(events) / t / 1e6,
           stripes == UINT64_MAX ? "-" : std::to_string(static_cast<double>(stripes) / nrec).substr(0, 6).c_str(),
           bytes / 1e3 / nrec);
  };
  struct Order {
    const char* name;
    const uint8_t* const* ptrs;
    const size_t* lens;
  } orders[] = {{"R=16.5", ptrs.data(), lens.data()}, {"R=1", sptrs.data(), slens.data()}};
  struct Proj {
    uint32_t length, ntraits;
    uih_mat_layout layout;
  } projs[] = {{length, 0, UIH_LAYOUT_SHARED},      {length, 0, UIH_LAYOUT_JAGGED},
               {length, 2, UIH_LAYOUT_SHARED},      {length / 4, 0, UIH_LAYOUT_SHARED},
               {length / 4, 2, UIH_LAYOUT_SHARED},  {length / 32, 0, UIH_LAYOUT_SHARED},
               {length / 32, 2, UIH_LAYOUT_SHARED}};  // tenants: 4096 / 1024 / 128 with --length 4096
  {  // warm: the generation's files in the page cache, as every run after the first finds them
    uih_projection p = projection(length, 0);
    for (size_t at = 0; at < records.size(); at += batch) {
      uih_materialized* m = nullptr;
      Check(uih_materialize(s, ptrs.data() + at, lens.data() + at, std::min<size_t>(batch, records.size() - at), &p,
                            &m, nullptr, &err),
            err, "materialize");
      uih_materialized_free(m);
    }
  }
  for (const Order& ord : orders) {
    for (const Proj& pj : projs) {
      if (ord.ptrs != ptrs.data() && !(pj.length == length && pj.ntraits == 0)) continue;
      uih_projection p = projection(pj.length, pj.ntraits);
      p.layout = pj.layout;
      uih_materialize_stats total{};
      uint64_t identical = 0;
      if (cold) bench::Evict(dir);
      auto t0 = std::chrono::steady_clock::now();
      for (size_t at = 0; at < records.size(); at += batch) {
        size_t n = std::min<size_t>(batch, records.size() - at);
        uih_materialized* m = nullptr;
        uih_materialize_stats st{};
        Check(uih_materialize(s, ord.ptrs + at, ord.lens + at, n, &p, &m, &st, &err), err, "materialize");
        checksum += consume(m);
        total.events += st.events;
        total.rows += st.rows;
        total.stripes_read += st.stripes_read;
        total.bytes_read += st.bytes_read;
        total.mismatches += st.mismatches;
        if (ord.ptrs == ptrs.data() && pj.length == length && pj.ntraits == 0 && pj.layout == UIH_LAYOUT_SHARED) {
          // not timed
          auto c0 = std::chrono::steady_clock::now();
          for (size_t i = 0; i < n; i++) identical += RowsOf(uih_materialized_group(m, 0), i) == seen[at + i];
          t0 += std::chrono::steady_clock::now() - c0;
        }
        uih_materialized_free(m);
      }
      double t = Seconds(t0);
      char what[96];
      snprintf(what, sizeof what, "%s materialize engagement:%u%s%s", ord.name, pj.length,
               pj.ntraits ? " (ts, item)" : "", pj.layout == UIH_LAYOUT_JAGGED ? " jagged" : "");
      print_row(what, t, total.events, total.stripes_read, static_cast<double>(total.bytes_read));
      if (pj.layout == UIH_LAYOUT_SHARED)
        printf("    %.1f rows written per record for its %.1f events (shared layout)\n",
               static_cast<double>(total.rows) / nrec, static_cast<double>(total.events) / nrec);
      if (ord.ptrs == ptrs.data() && pj.length == length && pj.ntraits == 0 && pj.layout == UIH_LAYOUT_SHARED)
        printf("    %" PRIu64 " of %zu sequences identical to inference, %" PRIu64 " mismatches\n", identical,
               records.size(), total.mismatches);
    }
    // The materializer: prefetch, affinity, cores.
    struct Mode {
      const char* name;
      uih_materializer_opts o;
    } modes[] = {{"materializer, 1 worker", {1, 2, 0, 0}},
                 {"  no prefetch (depth 1)", {1, 1, 0, 0}},
                 {"  no batched reads (one by one)", {1, 2, 0, 1}},
                 {"  no data affinity", {1, 2, 1, 0}},
                 {"  every core", {std::max(1u, std::thread::hardware_concurrency()), 0, 0, 0}}};
    uih_projection p = projection(length, 0);
    for (const Mode& md : modes) {
      uih_materializer* mz = nullptr;
      Check(uih_materializer_create(s, &p, &md.o, &mz, &err), err, "materializer");
      uih_materialize_stats total{};
      if (cold) bench::Evict(dir);
      auto t0 = std::chrono::steady_clock::now();
      size_t submitted = 0, taken = 0;
      const size_t nbatches = (records.size() + batch - 1) / batch;
      while (taken < nbatches) {
        while (submitted < nbatches && submitted < taken + md.o.threads + 2) {
          size_t at = submitted * batch, n = std::min<size_t>(batch, records.size() - at);
          Check(uih_materializer_submit(mz, ord.ptrs + at, ord.lens + at, n, &err), err, "submit");
          submitted++;
        }
        uih_materialized* m = nullptr;
        uih_materialize_stats st{};
        Check(uih_materializer_next(mz, &m, &st, &err), err, "next");
        checksum += consume(m);
        total.events += st.events;
        total.stripes_read += st.stripes_read;
        total.bytes_read += st.bytes_read;
        uih_materialized_free(m);
        taken++;
      }
      double t = Seconds(t0);
      uih_materializer_free(mz);
      char what[96];
      snprintf(what, sizeof what, "%s %s%s", ord.name, md.name,
               md.o.threads > 1 ? (" (" + std::to_string(md.o.threads) + " threads)").c_str() : "");
      print_row(what, t, total.events, total.stripes_read, static_cast<double>(total.bytes_read));
    }
  }

  // Fat rows: each record's full sequence, pre-materialized, one value:
  // per column (the group's active traits, in the sequences' order) the
  // presence bytes, then the values at the type's width.
  std::vector<size_t> widths;
  for (uint32_t t = 0; t < g->ntraits; t++)
    if (uih_trait_active(&g->traits[t])) widths.push_back(uih_type_width(g->traits[t].type));
  for (rocksdb::CompressionType ct : {rocksdb::kLZ4Compression, rocksdb::kZSTD}) {
    const std::string path = dir + "/fat";
    rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
    rocksdb::Options opt;
    opt.create_if_missing = true;
    opt.compression = ct;
    rocksdb::BlockBasedTableOptions bt;
    bt.no_block_cache = true;
    opt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(bt));
    rocksdb::DB* db = nullptr;
    rocksdb::Status st = rocksdb::DB::Open(opt, path, &db);
    if (!st.ok()) {
      fprintf(stderr, "materialize_bench: fat rows: %s\n", st.ToString().c_str());
      return 1;
    }
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    std::string value;
    uint64_t raw = 0;
    for (size_t i = 0; i < records.size(); i++) {
      // Per column: presence bytes, then values, as the rows of `seen` hold them.
      const Rows& rows = seen[i];
      value.clear();
      for (size_t c = 0; c < widths.size() && !rows.empty(); c++) {
        for (const auto& r : rows) value.push_back(static_cast<char>(r[2 * c]));
        for (const auto& r : rows) value.append(reinterpret_cast<const char*>(&r[2 * c + 1]), widths[c]);
      }
      char key[8];
      for (int k = 0; k < 8; k++) key[k] = static_cast<char>(i >> (56 - 8 * k));
      raw += value.size();
      st = db->Put(wo, rocksdb::Slice(key, 8), value);
      if (!st.ok()) return 1;
    }
    st = db->Flush(rocksdb::FlushOptions());
    if (st.ok()) st = db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
    uint64_t sst = 0;
    db->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst);
    rocksdb::ReadOptions ro;
    rocksdb::PinnableSlice v;
    std::vector<uint8_t> present;
    std::vector<uint64_t> values;
    uint64_t events = 0;
    if (cold) bench::Evict(path);
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < records.size(); i++) {
      char key[8];
      for (int k = 0; k < 8; k++) key[k] = static_cast<char>(i >> (56 - 8 * k));
      v.Reset();
      st = db->Get(ro, db->DefaultColumnFamily(), rocksdb::Slice(key, 8), &v);
      if (!st.ok()) {
        fprintf(stderr, "materialize_bench: fat rows: %s\n", st.ToString().c_str());
        return 1;
      }
      // Into per-trait arrays, as a batch's tensors.
      const size_t rows = seen[i].size();
      present.resize(rows);
      values.resize(rows);
      for (size_t c = 0, at = 0; c < widths.size() && rows; c++) {
        memcpy(present.data(), v.data() + at, rows);
        memcpy(values.data(), v.data() + at + rows, rows * widths[c]);
        at += rows * (1 + widths[c]);
        for (size_t k = 0; k < rows * widths[c]; k++) checksum += reinterpret_cast<const uint8_t*>(values.data())[k];
      }
      events += seen[i].size();
    }
    double t = Seconds(t0);
    char what[96];
    snprintf(what, sizeof what, "fat rows engagement:%u (%s, %.1f KB raw)", length,
             ct == rocksdb::kLZ4Compression ? "LZ4" : "ZSTD", static_cast<double>(raw) / 1e3 / nrec);
    print_row(what, t, events, UINT64_MAX, static_cast<double>(sst));
    delete db;
    rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
  }
  printf("(checksum of every value read: %" PRIu64 ")\n", checksum);

  // The baseline: each record on its own through uih_store_read.
  {
    uih_stripe_decoder* dec = nullptr;
    Check(uih_stripe_decoder_create(&dec, &err), err, "decoder");
    std::vector<uint16_t> ids;
    for (uint32_t t = 0; t < g->ntraits; t++)
      if (uih_trait_active(&g->traits[t])) ids.push_back(g->traits[t].id);
    ids.push_back(UIH_TRAIT_ARRIVAL);
    uih_batch *win = nullptr, *mut = nullptr;
    Check(uih_batch_create(g, 64, ids.data(), static_cast<uint32_t>(ids.size()), &win, &err), err, "batch");
    Check(uih_batch_create(g, UIH_STRIPE_EVENTS_MAX, nullptr, 0, &mut, &err), err, "batch");
    uint64_t events = 0, identical = 0;
    if (cold) bench::Evict(dir);
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < records.size(); i++) {
      uih_snapshot_record r;
      Check(uih_snapshot_record_decode(ptrs[i], lens[i], &r, &err), err, "record");
      const uih_snapshot_group& rg = r.groups[0];
      uint32_t kept = 0;
      std::vector<uint32_t> rows;
      if (rg.length) {
        Check(uih_store_read(s, r.user_id, rg.group, rg.start_ts, rg.end_ts, UIH_TIER_IMMUTABLE, 0, &win, &err), err,
              "read");
        int arr = uih_batch_column_index(win, UIH_TRAIT_ARRIVAL);
        for (uint32_t row = win->count; row-- > 0 && kept < rg.length;)
          if (uih_column_get_bits(&win->columns[arr], row) <= rg.generation) {
            rows.push_back(row);
            kept++;
          }
      }
      uint32_t m = 0;
      size_t at = 0, len;
      const uint8_t* stripe;
      while (uih_snapshot_mutable_next(&rg, &at, &stripe, &len) == 1) {
        Check(uih_stripe_decode(dec, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, mut, &err), err,
              "mutable");
        m += mut->count;
      }
      events += kept + m;
    }
    double t = Seconds(t0);
    printf("%-44s %12.0f %12.2f\n", "R=16.5 per record (uih_store_read)", static_cast<double>(records.size()) / t,
           static_cast<double>(events) / t / 1e6);
    (void)identical;
    uih_batch_free(win);
    uih_batch_free(mut);
    uih_stripe_decoder_free(dec);
  }
  uih_store_close(s);
  fs::remove_all(dir);
  return 0;
}
