// Inference snapshots and training-time reconstruction, side by side with
// the per-record baseline, in one run.
//
//   build/release/bench/materialize_bench [--users N] [--days D] [--requests R] [--length L]
//                                         [--batch B] [--shards S] [--scale X] [--dir DIR] [--seed S]
//
// Data: `uih gen`'s generator (examples/feed.schema.json, group
// "engagement", 9 traits) for N users over D days (--scale: the Pareto
// scale of events per user, 10 by default: median ~18 events; 100: ~180); days 1..D-1 loaded,
// day D appended to the mutable tier. R requests at random users and
// times of day D are snapshotted with spec engagement:L (latency per call,
// record bytes); then day D is loaded (its events move into generation 2)
// and the records are rebuilt:
//  - materialize: uih_materialize in batches of B, for projections to L, L/4
//    and L/16 events with every trait, and to L/16 with two traits;
//  - per record (the baseline): for each record, uih_store_read of its
//    window with the arrival column, filtered by arrival and cut to the
//    newest events, then the logged mutable events decoded — what a reader
//    without data affinity, checkpoints or projection does;
// records/s, events/s, stripes decoded and stripe bytes read per record.
// Every rebuilt sequence of the full projection is compared with what the
// snapshot returned (the count of identical ones is printed).
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

#include "uih/csv.h"
#include "uih/gen.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"
#include "uih/stripe.h"

namespace {

namespace fs = std::filesystem;
constexpr int64_t kDay = 86400000;
constexpr int64_t kStart = INT64_C(1700000000000);

void Check(int rc, const uih_error& err, const char* what) {
  if (rc != UIH_OK) {
    fprintf(stderr, "materialize_bench: %s: %s\n", what, uih_error_message(&err));
    exit(1);
  }
}

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
    else {
      fprintf(stderr,
              "usage: materialize_bench [--users N] [--days D] [--requests R] [--length L] [--batch B] [--shards S]"
              " [--scale X] [--dir DIR] [--seed S]\n");
      return 2;
    }
  }
  if (days < 2 || length < 16) {
    fprintf(stderr, "materialize_bench: --days >= 2 and --length >= 16\n");
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
      Check(uih_mutable_append(uih_store_mutable(s, uih_shard_of(user, shards)), user, one, 0, &err), err, "append");
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
  for (uint64_t i = 0; i < requests; i++) {
    uint64_t user = active[rng() % active.size()];
    int64_t ts = boundary + static_cast<int64_t>(rng() % kDay);
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
  std::sort(lat.begin(), lat.end());
  uint64_t rec_bytes = 0;
  for (auto& r : records) rec_bytes += r.size();
  printf("\nsnapshot (1 thread): p50 %.1f us, p99 %.1f us, p99.9 %.1f us; %.1f events per sequence,"
         " %.1f record bytes per example (%.2f per event shown to the model)\n",
         lat[lat.size() / 2] * 1e6, lat[lat.size() * 99 / 100] * 1e6, lat[lat.size() * 999 / 1000] * 1e6,
         static_cast<double>(seq_events) / static_cast<double>(requests),
         static_cast<double>(rec_bytes) / static_cast<double>(requests),
         static_cast<double>(rec_bytes) / static_cast<double>(std::max<uint64_t>(seq_events, 1)));

  // The day moves on: today's events (now in the records) are loaded.
  lo.through = INT64_MIN;
  const char* tin[] = {today.c_str()};
  Check(uih_load(s, tin, 1, &lo, nullptr, &err), err, "load today");

  // Training.
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  for (auto& r : records) {
    ptrs.push_back(reinterpret_cast<const uint8_t*>(r.data()));
    lens.push_back(r.size());
  }
  struct Proj {
    uint32_t length, ntraits;
  } projs[] = {{length, 0}, {length / 4, 0}, {length / 16, 0}, {length / 16, 2}};
  printf("\n%-34s %12s %12s %14s %16s\n", "reconstruction (1 thread)", "records/s", "M events/s", "stripes/record",
         "KB read/record");
  for (const Proj& pj : projs) {
    uih_projection p{};
    p.ngroups = 1;
    p.groups[0].group = g->id;
    p.groups[0].max_length = pj.length;
    p.groups[0].ntraits = pj.ntraits;
    if (pj.ntraits) {
      p.groups[0].traits[0] = g->ts->id;
      p.groups[0].traits[1] = uih_group_trait_by_name(g, "item_id")->id;
    }
    uih_materialize_stats total{};
    uint64_t identical = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t at = 0; at < records.size(); at += batch) {
      size_t n = std::min<size_t>(batch, records.size() - at);
      uih_materialized* m = nullptr;
      uih_materialize_stats st{};
      Check(uih_materialize(s, ptrs.data() + at, lens.data() + at, n, &p, &m, &st, &err), err, "materialize");
      total.events += st.events;
      total.stripes_read += st.stripes_read;
      total.bytes_read += st.bytes_read;
      total.mismatches += st.mismatches;
      if (pj.length == length && pj.ntraits == 0)
        for (size_t i = 0; i < n; i++) identical += RowsOf(uih_materialized_group(m, 0), i) == seen[at + i];
      uih_materialized_free(m);
    }
    double t = Seconds(t0);
    char what[64];
    snprintf(what, sizeof what, "materialize engagement:%u%s", pj.length, pj.ntraits ? " (ts, item)" : "");
    printf("%-34s %12.0f %12.2f %14.2f %16.2f", what, static_cast<double>(records.size()) / t,
           static_cast<double>(total.events) / t / 1e6,
           static_cast<double>(total.stripes_read) / static_cast<double>(records.size()),
           static_cast<double>(total.bytes_read) / 1e3 / static_cast<double>(records.size()));
    if (pj.length == length && pj.ntraits == 0)
      printf("   %" PRIu64 " of %zu sequences identical to inference, %" PRIu64 " mismatches", identical,
             records.size(), total.mismatches);
    printf("\n");
  }

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
    printf("%-34s %12.0f %12.2f\n", "per record (uih_store_read)", static_cast<double>(records.size()) / t,
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
