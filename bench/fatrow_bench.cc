// Fat rows against late materialization: both paradigms on one generated
// workload, in one run, reported as the seed paper's Table 1.
//
//   build/release/bench/fatrow_bench [--users N] [--scale X] [--days D] [--train-days T] [--length L]
//                                    [--batch B] [--fat-blocks KB,KB] [--shards S] [--seed S]
//                                    [--dir DIR] [--json FILE] [--cold 1] [--small]
//
// Workload: `uih gen`'s generator, examples/feed.schema.json, N users with
// histories over D days (the lookback; --scale: the Pareto scale of
// engagement events per user, 1,000 by default: a median of ~1,800 over
// the D days, 18% of users past 4,096; search gets a quarter), groups
// `engagement` (8 active traits) and `search` (3). Days 1..D-T are loaded;
// then each of the last T days is served: its events go to the mutable
// tier, every user active that day gets 16 or 17 inference requests
// (RecD's 16.5 examples per user per day) at random times of it, served
// in time order, each snapshotted with the union spec every tenant's needs
// fit in (engagement:L, search:L/16) and its record logged; then the day
// is loaded. Training data written per day:
//  - fat rows: each example's sequences, as inference returned them, one
//    value per example (per group and trait: presence bytes, then values)
//    in a day's BlockBasedTable file (ZSTD; --fat-blocks: block sizes to
//    try, 4 KB = RocksDB's default), clustered by user as RecD clusters
//    its data (so larger blocks compress a user's consecutive examples
//    together), ingested into a RocksDB;
//  - late materialization: every byte the process wrote that day besides
//    the fat rows (/proc/self/io): the log, the mutable tier's WAL,
//    flushes and compactions, the daily load's sorted runs and new
//    generation (a load writes the whole store anew, copying unchanged
//    stripes).
// Stored: the fat rows' files against the store's directory (opened with
// keep 1: no older generation stays) and the logs; and what each further
// day of kept examples adds.
// Tenants (training jobs reading the T days): long = engagement:L, every
// trait; mid = engagement:L/4 (ts, item, type, watch) + search:L/16; short
// = engagement:L/32 (ts, item). Fat rows: a scan of every row, each cut to
// the tenant's groups, lengths and traits. Late materialization: the logs
// read and a user's records put together (data affinity; a stable sort of
// the log's index by user, timed), then uih_materialize per batch of B
// with the tenant's projection, in the shared layout (a user's records as
// windows into rows written once) and again jagged. One thread each:
// examples/s per core. Bytes read per example: fat rows' compressed bytes;
// the record's bytes in the log plus the stripe bytes read. Batch latency:
// per batch of B, from reading to the tenant's arrays (the logs are read
// once per pass, before the first batch, counted in examples/s only).
// Every tenant's every sequence is compared between the paradigms (fat
// rows hold what inference returned); a difference fails the run (exit 1).
// --small: a few seconds' workload for CTest. --cold 1: files evicted
// from the page cache before every timed pass. --json: the numbers for
// bench/plot_fatrow.py.

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

#include "files.h"
#include "check.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "uih/csv.h"
#include "uih/gen.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"

namespace {

using bench::Check;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr int64_t kDay = 86400000;
constexpr int64_t kStart = INT64_C(1700000000000);
const char* const kGroups[2] = {"engagement", "search"};

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double Pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}
uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  uint64_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}
// The served days' logs, read whole, and their records in the order a
// training job takes them: a user's records together (data affinity), in
// log order (time) within a user.
struct Logs {
  std::vector<std::string> bytes;
  std::vector<const uint8_t*> recs;
  std::vector<size_t> lens;
};
Logs ReadLogs(const std::vector<std::string>& paths) {
  Logs l;
  std::vector<uint64_t> users;
  for (const std::string& path : paths) {
    std::ifstream f(path, std::ios::binary);
    l.bytes.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const uint8_t* buf = reinterpret_cast<const uint8_t*>(l.bytes.back().data());
    const size_t len = l.bytes.back().size();
    uih_error err{};
    size_t n = 0;
    Check(uih_snapshot_log_index(buf, len, path.c_str(), nullptr, nullptr, nullptr, nullptr, 0, &n, &err), err, "log");
    std::vector<uint64_t> offs(n), ls(n), us(n);
    Check(uih_snapshot_log_index(buf, len, path.c_str(), offs.data(), ls.data(), us.data(), nullptr, n, &n, &err), err,
          "log");
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return us[a] < us[b]; });
    for (size_t i : order) {
      l.recs.push_back(buf + offs[i]);
      l.lens.push_back(ls[i]);
    }
  }
  return l;
}

// The union's columns: per group (spec order) its active traits by id.
struct Layout {
  const uih_group* group[2];
  std::vector<uint16_t> traits[2];
  std::vector<size_t> widths[2];
};

// A fat row: per group a u32 count, then per group and column the
// presence bytes and the values at the type's width.
void EncodeRow(const Layout& lay, const uih_batch* const* seqs, std::string* out) {
  out->clear();
  for (int gi = 0; gi < 2; gi++) {
    uint32_t n = seqs[gi]->count;
    out->append(reinterpret_cast<const char*>(&n), 4);
  }
  for (int gi = 0; gi < 2; gi++) {
    const uih_batch* b = seqs[gi];
    for (size_t c = 0; c < lay.traits[gi].size(); c++) {
      const uih_column& col = b->columns[uih_batch_column_index(b, lay.traits[gi][c])];
      for (uint32_t r = 0; r < b->count; r++) out->push_back(static_cast<char>(uih_column_has(&col, r)));
      for (uint32_t r = 0; r < b->count; r++) {
        uint64_t bits = uih_column_has(&col, r) ? uih_column_get_bits(&col, r) : 0;
        out->append(reinterpret_cast<const char*>(&bits), lay.widths[gi][c]);
      }
    }
  }
}

// What a training job reads: per group a length and a trait subset.
struct Tenant {
  const char* name;
  uint32_t length[2];                    // engagement, search; 0: not read
  std::vector<const char*> traits[2];    // empty: every active trait
};

// A batch of one tenant's sequences, jagged: per projected (group, trait)
// column the presence bytes and values of every record back to back.
struct Cut {
  std::vector<uint32_t> lengths[2];
  std::vector<std::vector<uint8_t>> present[2], values[2];
  void Clear() {
    for (int gi = 0; gi < 2; gi++) {
      lengths[gi].clear();
      for (auto& v : present[gi]) v.clear();
      for (auto& v : values[gi]) v.clear();
    }
  }
};

// Which union columns a tenant reads, per group.
struct Projected {
  uint32_t length[2];
  std::vector<size_t> columns[2];  // indexes into Layout::traits
  uih_projection projection;
};

Projected Project(const Layout& lay, const Tenant& t) {
  Projected p{};
  for (int gi = 0; gi < 2; gi++) {
    p.length[gi] = t.length[gi];
    if (!t.length[gi]) continue;
    uih_projection_group& pg = p.projection.groups[p.projection.ngroups++];
    pg.group = lay.group[gi]->id;
    pg.max_length = t.length[gi];
    std::vector<uint16_t> ids;
    if (t.traits[gi].empty()) ids = lay.traits[gi];
    for (const char* name : t.traits[gi]) ids.push_back(uih_group_trait_by_name(lay.group[gi], name)->id);
    for (uint16_t id : ids) {
      p.columns[gi].push_back(std::find(lay.traits[gi].begin(), lay.traits[gi].end(), id) - lay.traits[gi].begin());
      pg.traits[pg.ntraits++] = id;
    }
  }
  p.projection.on_mismatch = UIH_MISMATCH_FLAG;
  p.projection.layout = UIH_LAYOUT_SHARED;
  return p;
}

// Fat rows, read: the tenant's newest events of its traits out of a row.
void CutRow(const Layout& lay, const Projected& p, const char* row, Cut* cut) {
  uint32_t n[2];
  memcpy(n, row, 8);
  const char* at = row + 8;
  for (int gi = 0; gi < 2; gi++) {
    const char* group_at = at;
    size_t row_bytes = 0;
    for (size_t w : lay.widths[gi]) row_bytes += 1 + w;
    at += n[gi] * row_bytes;
    if (!p.length[gi]) continue;
    const uint32_t k = std::min(n[gi], p.length[gi]), from = n[gi] - k;
    cut->lengths[gi].push_back(k);
    cut->present[gi].resize(p.columns[gi].size());
    cut->values[gi].resize(p.columns[gi].size());
    for (size_t j = 0; j < p.columns[gi].size(); j++) {
      const char* col = group_at;
      for (size_t c = 0; c < p.columns[gi][j]; c++) col += n[gi] * (1 + lay.widths[gi][c]);
      const size_t w = lay.widths[gi][p.columns[gi][j]];
      cut->present[gi][j].insert(cut->present[gi][j].end(), col + from, col + n[gi]);
      const char* vals = col + n[gi] + from * w;
      cut->values[gi][j].insert(cut->values[gi][j].end(), vals, vals + k * w);
    }
  }
}

// Late materialization, read: record `rec`'s arrays out of a materialized
// batch (for the comparison, not timed).
void CutMaterialized(const Layout& lay, const Projected& p, const uih_materialized* m, size_t rec, Cut* cut) {
  uint32_t mgi = 0;
  for (int gi = 0; gi < 2; gi++) {
    if (!p.length[gi]) continue;
    const uih_mat_group* mg = uih_materialized_group(m, mgi++);
    cut->present[gi].resize(mg->ncolumns);
    cut->values[gi].resize(mg->ncolumns);
    cut->lengths[gi].push_back(mg->lengths[rec]);
    for (uint32_t j = 0; j < mg->ncolumns; j++) {
      const size_t w = lay.widths[gi][p.columns[gi][j]];
      const uint8_t* pr = mg->columns[j].present + mg->offsets[rec];
      const uint8_t* v = static_cast<const uint8_t*>(mg->columns[j].values) + mg->offsets[rec] * w;
      cut->present[gi][j].insert(cut->present[gi][j].end(), pr, pr + mg->lengths[rec]);
      cut->values[gi][j].insert(cut->values[gi][j].end(), v, v + mg->lengths[rec] * w);
    }
  }
}

bool SameCut(const Cut& a, const Cut& b) {
  for (int gi = 0; gi < 2; gi++)
    if (a.lengths[gi] != b.lengths[gi] || a.present[gi] != b.present[gi] || a.values[gi] != b.values[gi]) return false;
  return true;
}

// What a trainer does with a batch: reads every value.
uint64_t Consume(const Cut& c) {
  uint64_t sum = 0;
  for (int gi = 0; gi < 2; gi++)
    for (const auto& v : c.values[gi])
      for (uint8_t x : v) sum += x;
  return sum;
}
uint64_t Consume(const uih_materialized* m, uint32_t ngroups) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < ngroups; i++) {
    const uih_mat_group* mg = uih_materialized_group(m, i);
    for (uint32_t c = 0; c < mg->ncolumns; c++) {
      const uint8_t* v = static_cast<const uint8_t*>(mg->columns[c].values);
      const size_t bytes = mg->rows * uih_type_width(static_cast<uih_type>(mg->columns[c].type));
      for (size_t k = 0; k < bytes; k++) sum += v[k];
    }
  }
  return sum;
}

// One paradigm's reading of one tenant.
struct Pass {
  double seconds = 0, bytes_read = 0;
  std::vector<double> batch_seconds;
  uint64_t events = 0, mismatches = 0;
};

struct Options {
  uint64_t users = 1000, seed = 1;
  uint32_t days = 30, train_days = 2, length = 4096, batch = 256, shards = 2;
  double scale = 1000;
  std::vector<uint32_t> fat_blocks_kb = {4, 256};
  std::string dir = "/tmp/uih_fatrow_bench", json;
  bool cold = false;
};

Options Parse(int argc, char** argv) {
  Options o;
  auto usage = [] {
    fprintf(stderr,
            "usage: fatrow_bench [--users N] [--scale X] [--days D] [--train-days T] [--length L] [--batch B]"
            " [--fat-blocks KB,KB] [--shards S] [--seed S] [--dir DIR] [--json FILE] [--cold 1] [--small]\n");
    exit(2);
  };
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--small") {  // CTest: seconds, every code path
      o.users = 120, o.scale = 40, o.days = 6, o.length = 256, o.batch = 64, o.fat_blocks_kb = {4, 64};
      continue;
    }
    if (i + 1 >= argc) usage();
    std::string v = argv[++i];
    if (a == "--users") o.users = std::stoull(v);
    else if (a == "--scale") o.scale = std::stod(v);
    else if (a == "--days") o.days = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--train-days") o.train_days = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--length") o.length = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--batch") o.batch = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--shards") o.shards = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--seed") o.seed = std::stoull(v);
    else if (a == "--dir") o.dir = v;
    else if (a == "--json") o.json = v;
    else if (a == "--cold") o.cold = v == "1";
    else if (a == "--fat-blocks") {
      o.fat_blocks_kb.clear();
      for (size_t at = 0; at < v.size();) {
        size_t comma = v.find(',', at);
        o.fat_blocks_kb.push_back(static_cast<uint32_t>(std::stoul(v.substr(at, comma - at))));
        at = comma == std::string::npos ? v.size() : comma + 1;
      }
    } else usage();
  }
  if (o.train_days < 1 || o.days <= o.train_days || o.length < 32 || o.batch < 1 || o.fat_blocks_kb.empty()) {
    fprintf(stderr, "fatrow_bench: need --days > --train-days >= 1, --length >= 32, --batch >= 1, a block size\n");
    exit(2);
  }
  return o;
}

// The union's layout: per group its active traits, by id, and their widths.
Layout LayoutOf(const uih_schema* schema) {
  Layout lay{};
  for (int gi = 0; gi < 2; gi++) {
    const uih_group* g = uih_schema_group_by_name(schema, kGroups[gi]);
    lay.group[gi] = g;
    for (uint32_t t = 0; t < g->ntraits; t++)
      if (uih_trait_active(&g->traits[t])) lay.traits[gi].push_back(g->traits[t].id);
    std::sort(lay.traits[gi].begin(), lay.traits[gi].end());
    for (uint16_t id : lay.traits[gi])
      for (uint32_t t = 0; t < g->ntraits; t++)
        if (g->traits[t].id == id) lay.widths[gi].push_back(uih_type_width(g->traits[t].type));
  }
  return lay;
}

// The generated histories: the days before the served ones as CSV to load,
// each served day's as CSV (its mutable-tier appends and its load).
struct Workload {
  int64_t served_from = 0;
  std::vector<std::string> history;
  std::vector<std::vector<std::string>> days;
  std::vector<std::vector<uint64_t>> active;  // per served day, users with engagement events, ascending
  uint64_t history_events = 0, served_events = 0;
};

Workload Generate(const Options& o, const Layout& lay) {
  Workload w;
  w.served_from = kStart + static_cast<int64_t>(o.days - o.train_days) * kDay;
  const int64_t served_end = w.served_from + static_cast<int64_t>(o.train_days) * kDay;
  w.days.resize(o.train_days);
  w.active.resize(o.train_days);
  uih_error err{};
  for (int gi = 0; gi < 2; gi++) {
    uih_gen_opts go = UIH_GEN_OPTS_DEFAULT;
    go.seed = o.seed + static_cast<uint64_t>(gi);
    go.users = o.users;
    go.days = o.days;
    go.start_ts = kStart;
    go.activity_scale = gi == 0 ? o.scale : o.scale / 4;
    uih_gen* gen = nullptr;
    Check(uih_gen_create(lay.group[gi], &go, &gen, &err), err, "generator");
    uih_batch* b = nullptr;
    Check(uih_batch_create(lay.group[gi], lay.group[gi]->stripe_events, nullptr, 0, &b, &err), err, "batch");
    std::vector<FILE*> out;
    auto open_csv = [&](const std::string& path) {
      FILE* f = fopen(path.c_str(), "w");
      if (!f) {
        fprintf(stderr, "fatrow_bench: %s: %s\n", path.c_str(), strerror(errno));
        exit(1);
      }
      Check(uih_csv_write_header(f, b, &err), err, "csv");
      out.push_back(f);
      return path;
    };
    w.history.push_back(open_csv(o.dir + "/history." + kGroups[gi] + ".csv"));
    for (uint32_t d = 0; d < o.train_days; d++)
      w.days[d].push_back(open_csv(o.dir + "/day" + std::to_string(d + 1) + "." + kGroups[gi] + ".csv"));
    const int tsc = uih_batch_column_index(b, lay.group[gi]->ts->id);
    for (;;) {
      uint64_t user;
      Check(uih_gen_next(gen, &user, b, &err), err, "generator");
      if (b->count == 0) break;
      for (uint32_t r = 0; r < b->count; r++) {
        const int64_t ts = static_cast<int64_t>(uih_column_get_bits(&b->columns[tsc], r));
        if (ts >= served_end) continue;  // a busy user's sessions run past the last day
        const size_t f = ts < w.served_from ? 0 : static_cast<size_t>((ts - w.served_from) / kDay + 1);
        Check(uih_csv_write_row(out[f], user, b, r, &err), err, "csv");
        (f ? w.served_events : w.history_events)++;
        if (f && gi == 0 && (w.active[f - 1].empty() || w.active[f - 1].back() != user))
          w.active[f - 1].push_back(user);
      }
    }
    for (FILE* f : out)
      if (fclose(f) != 0) {
        fprintf(stderr, "fatrow_bench: writing the workload: %s\n", strerror(errno));
        exit(1);
      }
    uih_batch_free(b);
    uih_gen_free(gen);
  }
  return w;
}

// A day's events into the mutable tier, a user's run of them per append.
void AppendToMutable(uih_store* s, const std::vector<std::string>& files) {
  uih_error err{};
  for (const std::string& path : files) {
    uih_csv_reader* r = nullptr;
    Check(uih_csv_open(path.c_str(), uih_store_schema(s), &r, &err), err, path.c_str());
    uih_batch* run = nullptr;
    uint64_t owner = 0;
    for (;;) {
      uint64_t user;
      const uih_batch* ev;
      Check(uih_csv_next(r, &user, &ev, &err), err, path.c_str());
      if (run && (!ev || user != owner || run->count == run->capacity)) {
        uih_mutable* tier = nullptr;
        Check(uih_store_mutable(s, uih_shard_of(owner, uih_store_shards(s)), &tier, &err), err, "store_mutable");
        Check(uih_mutable_append(tier, owner, run, 0, &err), err, "append");
        uih_batch_clear(run);
      }
      if (!ev) break;
      if (!run) Check(uih_batch_create(ev->group, 256, nullptr, 0, &run, &err), err, "batch");
      owner = user;
      Check(uih_batch_copy_row(run, ev, 0, &err), err, "copy");
    }
    uih_batch_free(run);
    uih_csv_close(r);
  }
}

// A fat-row dataset: a RocksDB of the days' files, ZSTD in blocks of block_kb.
struct FatRows {
  uint32_t block_kb;
  std::string path;
  rocksdb::DB* db = nullptr;
  uint64_t bytes = 0;
  std::unique_ptr<rocksdb::SstFileWriter> day;
};

// What serving a day wrote.
struct Day {
  std::string log;
  uint64_t examples = 0, log_bytes = 0, load_bytes = 0;
  uint64_t store_writes = 0;  // every byte the store and the log took: appends, flushes, the load
  uint64_t fat_bytes = 0;     // the day's fat-row files, every block size
};

// A fat-row key: (day, user, request time, example), big-endian: a day's
// examples clustered by user, as RecD clusters its training data.
std::string FatKey(uint32_t day, uint64_t user, int64_t ts, uint64_t example) {
  std::string k;
  for (uint64_t v : {uint64_t{day}, user, static_cast<uint64_t>(ts) ^ (uint64_t{1} << 63), example})
    for (int b = 7; b >= 0; b--) k.push_back(static_cast<char>(v >> (8 * b)));
  return k;
}

// Serves day d: its events to the mutable tier, 16 or 17 requests per
// active user at random times of it, served in time order (as inference
// serves them), each snapshotted and logged; then each written as a fat
// row, clustered by user (the same snapshots again, in that order: the
// day's state does not change while it is served); then the day's load.
Day Serve(const Options& o, const Workload& w, uint32_t d, const Layout& lay, const uih_snapshot_spec& spec,
          uih_store* s, uih_snapshotter* sn, std::vector<FatRows>* fats, std::mt19937_64* rng,
          std::vector<double>* snapshot_seconds) {
  uih_error err{};
  Day day;
  const uint64_t written_before = bench::BytesWritten();
  const int64_t day_start = w.served_from + static_cast<int64_t>(d) * kDay;
  AppendToMutable(s, w.days[d]);
  struct Request {
    int64_t ts;
    uint64_t user;
  };
  std::vector<Request> requests;
  for (size_t u = 0; u < w.active[d].size(); u++)
    for (size_t k = 0; k < 16 + u % 2; k++)  // 16.5 per user
      requests.push_back({day_start + static_cast<int64_t>((*rng)() % kDay), w.active[d][u]});
  std::sort(requests.begin(), requests.end(),
            [](const Request& a, const Request& b) { return a.ts != b.ts ? a.ts < b.ts : a.user < b.user; });
  day.examples = requests.size();
  day.log = o.dir + "/day" + std::to_string(d + 1) + ".log";
  FILE* log = fopen(day.log.c_str(), "wb");
  if (!log) {
    fprintf(stderr, "fatrow_bench: %s: %s\n", day.log.c_str(), strerror(errno));
    exit(1);
  }
  for (const Request& r : requests) {
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    auto t0 = Clock::now();
    Check(uih_snapshot(sn, r.user, r.ts, &spec, &seqs, &rec, &len, &err), err, "snapshot");
    snapshot_seconds->push_back(Since(t0));
    Check(uih_snapshot_log_append(log, rec, len, &err), err, "log");
  }
  if (fclose(log) != 0) {
    fprintf(stderr, "fatrow_bench: %s: %s\n", day.log.c_str(), strerror(errno));
    exit(1);
  }
  day.log_bytes = FileBytes(day.log);
  for (FatRows& f : *fats) {
    rocksdb::Options wopt;
    wopt.compression = rocksdb::kZSTD;
    rocksdb::BlockBasedTableOptions bt;
    bt.block_size = f.block_kb * 1024;
    wopt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(bt));
    f.day.reset(new rocksdb::SstFileWriter(rocksdb::EnvOptions(), wopt));
    Check(f.day->Open(f.path + ".day" + std::to_string(d + 1) + ".sst"), "fat rows");
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const Request& a, const Request& b) { return a.user < b.user; });
  std::string row;
  for (size_t i = 0; i < requests.size(); i++) {
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    Check(uih_snapshot(sn, requests[i].user, requests[i].ts, &spec, &seqs, &rec, &len, &err), err, "snapshot");
    EncodeRow(lay, seqs, &row);
    const std::string key = FatKey(d + 1, requests[i].user, requests[i].ts, i);
    for (FatRows& f : *fats) Check(f.day->Put(key, row), "fat rows");
  }
  for (FatRows& f : *fats) {
    rocksdb::ExternalSstFileInfo info;
    Check(f.day->Finish(&info), "fat rows");
    f.day.reset();
    f.bytes += info.file_size;
    day.fat_bytes += info.file_size;
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    Check(f.db->IngestExternalFile({info.file_path}, io), "fat rows ingest");
  }
  std::vector<const char*> in;
  for (const std::string& f : w.days[d]) in.push_back(f.c_str());
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = day_start + kDay;
  lo.threads = 2;
  lo.lookback = static_cast<int64_t>(o.days + o.train_days) * kDay;  // what logged records need stays
  uih_load_stats ls{};
  Check(uih_load(s, in.data(), in.size(), &lo, &ls, &err), err, "daily load");
  day.load_bytes = ls.bytes;
  day.store_writes = bench::BytesWritten() - written_before - day.fat_bytes;
  return day;
}

// Late materialization, one tenant: the logs read (a user's records put
// together), then batches rebuilt in the layout asked for.
Pass ReadLate(const Options& o, uih_store* s, const std::vector<std::string>& logs, const Projected& p,
              uih_mat_layout layout, uint64_t* checksum) {
  if (o.cold) bench::Evict(o.dir);
  uih_error err{};
  uih_projection proj = p.projection;
  proj.layout = layout;
  Pass ps;
  auto t0 = Clock::now();
  const Logs l = ReadLogs(logs);
  for (const std::string& b : l.bytes) ps.bytes_read += static_cast<double>(b.size());
  ps.seconds += Since(t0);
  for (size_t at = 0; at < l.recs.size(); at += o.batch) {
    const size_t n = std::min<size_t>(o.batch, l.recs.size() - at);
    auto b0 = Clock::now();
    uih_materialized* m = nullptr;
    uih_materialize_stats st{};
    Check(uih_materialize(s, l.recs.data() + at, l.lens.data() + at, n, &proj, &m, &st, &err), err, "materialize");
    *checksum += Consume(m, proj.ngroups);
    uih_materialized_free(m);
    const double bt = Since(b0);
    ps.batch_seconds.push_back(bt);
    ps.seconds += bt;
    ps.bytes_read += static_cast<double>(st.bytes_read);
    ps.events += st.events;
    ps.mismatches += st.mismatches + st.unreadable;
  }
  return ps;
}

// Fat rows, one tenant: a scan of every row, each cut to the tenant's needs.
Pass ReadFat(const Options& o, const Layout& lay, const FatRows& f, const Projected& p, uint64_t* checksum) {
  if (o.cold) bench::Evict(f.path);
  Pass ps;
  Cut cut;
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  auto t0 = Clock::now();
  std::unique_ptr<rocksdb::Iterator> it(f.db->NewIterator(ro));
  it->SeekToFirst();
  while (it->Valid()) {
    auto b0 = Clock::now();
    cut.Clear();
    for (uint32_t k = 0; k < o.batch && it->Valid(); k++, it->Next()) CutRow(lay, p, it->value().data(), &cut);
    *checksum += Consume(cut);
    ps.batch_seconds.push_back(Since(b0));
    for (int gi = 0; gi < 2; gi++)
      for (uint32_t l : cut.lengths[gi]) ps.events += l;
  }
  Check(it->status(), "fat rows scan");
  ps.seconds = Since(t0);
  ps.bytes_read = static_cast<double>(f.bytes);
  return ps;
}

// Both paradigms' sequences of one tenant, example by example (not timed),
// in the order both keep them (day, user, request time): how many are
// identical; the first differences on stderr.
uint64_t Compare(const Options& o, uih_store* s, const std::vector<std::string>& logs, const Layout& lay,
                 const FatRows& f, const Tenant& t, const Projected& p, uint64_t examples) {
  uih_error err{};
  const Logs l = ReadLogs(logs);
  std::unique_ptr<rocksdb::Iterator> it(f.db->NewIterator(rocksdb::ReadOptions()));
  it->SeekToFirst();
  uint64_t identical = 0, rows = 0;
  for (size_t at = 0; at < l.recs.size(); at += o.batch) {
    const size_t n = std::min<size_t>(o.batch, l.recs.size() - at);
    uih_materialized* m = nullptr;
    Check(uih_materialize(s, l.recs.data() + at, l.lens.data() + at, n, &p.projection, &m, nullptr, &err), err,
          "materialize");
    for (size_t i = 0; i < n && it->Valid(); i++, it->Next(), rows++) {
      Cut a, b;
      CutMaterialized(lay, p, m, i, &a);
      CutRow(lay, p, it->value().data(), &b);
      if (SameCut(a, b)) identical++;
      else if (at + i - identical < 5) fprintf(stderr, "fatrow_bench: tenant %s: example %zu differs\n", t.name, at + i);
    }
    uih_materialized_free(m);
  }
  for (; it->Valid(); it->Next()) rows++;
  Check(it->status(), "fat rows scan");
  if (l.recs.size() != examples || rows != examples) {
    fprintf(stderr, "fatrow_bench: %" PRIu64 " examples served, %zu records logged, %" PRIu64 " fat rows\n", examples,
            l.recs.size(), rows);
    exit(1);
  }
  return identical;
}

struct Result {
  Pass late, late_jagged;
  std::vector<Pass> fat;  // per block size
  uint64_t identical = 0;
};

// What each paradigm wrote and keeps.
struct Totals {
  double examples = 0, days = 0;
  uint64_t logs = 0, loads = 0, writes = 0;  // over the served days: the logs, the generations, every byte
  uint64_t store_on_disk = 0, generation = 0;  // at the end: the store's directory, its current generation
  double late_written_per_day() const { return static_cast<double>(writes) / days; }
  double late_stored() const { return static_cast<double>(store_on_disk + logs); }
};

void PrintTable(const Totals& tt, const std::vector<FatRows>& fats, const Tenant* tenants,
                const std::vector<Result>& results) {
  const double nd = tt.days;
  printf("\n%-34s %-22s %10s\n", "", "", "MB");
  printf("%-34s %-22s %10.2f  = logs %.2f + daily load's generation %.2f + the rest %.2f (mutable tier's WAL,\n"
         "%-34s %-22s %10s    flushes, compactions; the load's sorted runs, metadata)\n",
         "written per day", "late materialization", tt.late_written_per_day() / 1e6,
         static_cast<double>(tt.logs) / nd / 1e6, static_cast<double>(tt.loads) / nd / 1e6,
         static_cast<double>(tt.writes - tt.logs - tt.loads) / nd / 1e6, "", "", "");
  for (const FatRows& f : fats)
    printf("%-34s fat rows, %3u KB blocks %9.2f  %.1fx\n", "", f.block_kb, static_cast<double>(f.bytes) / nd / 1e6,
           static_cast<double>(f.bytes) / nd / tt.late_written_per_day());
  char stored[64];
  snprintf(stored, sizeof stored, "stored (%.0f days of examples)", nd);
  printf("%-34s %-22s %10.2f  = the store's directory %.2f (its generation %.2f) + logs %.2f (%.0f B per record)\n",
         stored, "late materialization", tt.late_stored() / 1e6, static_cast<double>(tt.store_on_disk) / 1e6,
         static_cast<double>(tt.generation) / 1e6, static_cast<double>(tt.logs) / 1e6,
         static_cast<double>(tt.logs) / tt.examples);
  for (const FatRows& f : fats)
    printf("%-34s fat rows, %3u KB blocks %9.2f  %.1fx\n", "", f.block_kb, static_cast<double>(f.bytes) / 1e6,
           static_cast<double>(f.bytes) / tt.late_stored());
  printf("%-34s %-22s %10.2f  logs; fat rows %s\n", "each further day of examples kept", "late materialization",
         static_cast<double>(tt.logs) / nd / 1e6, [&] {
           std::string fr;
           for (const FatRows& f : fats) {
             char one[64];
             snprintf(one, sizeof one, "%s%.2f (%.1fx)", fr.empty() ? "" : ", ", static_cast<double>(f.bytes) / nd / 1e6,
                      static_cast<double>(f.bytes) / static_cast<double>(tt.logs));
             fr += one;
           }
           return fr;
         }().c_str());
  printf("\n%-7s %-23s %11s %12s %10s %9s %9s  %s\n", "tenant", "paradigm", "KB read/ex", "examples/s", "events/ex",
         "p50 ms", "p99 ms", "against late materialization");
  for (size_t ti = 0; ti < results.size(); ti++) {
    const Result& r = results[ti];
    auto line = [&](const char* what, const Pass& ps) {
      printf("%-7s %-23s %11.2f %12.0f %10.1f %9.3f %9.3f", tenants[ti].name, what, ps.bytes_read / tt.examples / 1e3,
             tt.examples / ps.seconds, static_cast<double>(ps.events) / tt.examples, Pct(ps.batch_seconds, 0.5) * 1e3,
             Pct(ps.batch_seconds, 0.99) * 1e3);
    };
    line("late materialization", r.late);
    printf("  %" PRIu64 " of %.0f sequences identical to fat rows'\n", r.identical, tt.examples);
    line("  the same, jagged", r.late_jagged);
    printf("  every record's rows on their own\n");
    for (size_t i = 0; i < fats.size(); i++) {
      char what[40];
      snprintf(what, sizeof what, "fat rows, %u KB blocks", fats[i].block_kb);
      line(what, r.fat[i]);
      printf("  %.1fx the bytes, %.2fx the examples/s\n", r.fat[i].bytes_read / r.late.bytes_read,
             r.late.seconds / r.fat[i].seconds);
    }
  }
  printf("(one thread each: examples/s per core; late materialization reads its log records and the stripes, and puts\n"
         " a user's records together, in the shared layout a user's records are windows into rows written once)\n");
}

void WriteJson(const Options& o, const Totals& tt, const std::vector<FatRows>& fats, const Tenant* tenants,
               const std::vector<Result>& results) {
  FILE* j = fopen(o.json.c_str(), "w");
  if (!j) {
    fprintf(stderr, "fatrow_bench: %s: %s\n", o.json.c_str(), strerror(errno));
    exit(1);
  }
  fprintf(j,
          "{\"users\": %" PRIu64 ", \"scale\": %g, \"days\": %u, \"train_days\": %u, \"length\": %u, \"batch\": %u,"
          " \"examples\": %.0f,\n \"late\": {\"written_per_day\": %.0f, \"logs_per_day\": %.0f, \"load_per_day\": %.0f,"
          " \"rest_per_day\": %.0f, \"stored\": %.0f},\n \"fat\": [",
          o.users, o.scale, o.days, o.train_days, o.length, o.batch, tt.examples, tt.late_written_per_day(),
          static_cast<double>(tt.logs) / tt.days, static_cast<double>(tt.loads) / tt.days,
          static_cast<double>(tt.writes - tt.logs - tt.loads) / tt.days, tt.late_stored());
  for (size_t i = 0; i < fats.size(); i++)
    fprintf(j, "%s{\"block_kb\": %u, \"written_per_day\": %.0f, \"stored\": %" PRIu64 "}", i ? ", " : "",
            fats[i].block_kb, static_cast<double>(fats[i].bytes) / tt.days, fats[i].bytes);
  fprintf(j, "],\n \"tenants\": [");
  auto pass = [&](const Pass& ps) {
    fprintf(j, "{\"bytes_per_example\": %.1f, \"examples_per_s\": %.0f, \"p50_ms\": %.4f, \"p99_ms\": %.4f}",
            ps.bytes_read / tt.examples, tt.examples / ps.seconds, Pct(ps.batch_seconds, 0.5) * 1e3,
            Pct(ps.batch_seconds, 0.99) * 1e3);
  };
  for (size_t ti = 0; ti < results.size(); ti++) {
    fprintf(j, "%s\n  {\"name\": \"%s\", \"late\": ", ti ? "," : "", tenants[ti].name);
    pass(results[ti].late);
    fprintf(j, ", \"late_jagged\": ");
    pass(results[ti].late_jagged);
    fprintf(j, ", \"fat\": [");
    for (size_t i = 0; i < fats.size(); i++) {
      if (i) fprintf(j, ", ");
      pass(results[ti].fat[i]);
    }
    fprintf(j, "]}");
  }
  fprintf(j, "]}\n");
  if (fclose(j) != 0) {
    fprintf(stderr, "fatrow_bench: %s: %s\n", o.json.c_str(), strerror(errno));
    exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  uih_error err{};
  const char* schema_path = UIH_SOURCE_DIR "/examples/feed.schema.json";
  std::ifstream sin(schema_path, std::ios::binary);
  const std::string json((std::istreambuf_iterator<char>(sin)), {});
  fs::remove_all(o.dir);
  fs::create_directories(o.dir);
  const std::string store = o.dir + "/store";
  Check(uih_store_init(store.c_str(), json.data(), json.size(), schema_path, o.shards, &err), err, "init");
  uih_store* s = nullptr;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.keep = 1;  // a load retires the generation before it: what is on disk is what is kept
  Check(uih_store_open(store.c_str(), &so, &s, &err), err, "open");
  const Layout lay = LayoutOf(uih_store_schema(s));

  const Workload w = Generate(o, lay);
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = w.served_from;
  lo.threads = 2;
  std::vector<const char*> in;
  for (const std::string& f : w.history) in.push_back(f.c_str());
  Check(uih_load(s, in.data(), in.size(), &lo, nullptr, &err), err, "load the history");
  const Tenant tenants[] = {
      {"long", {o.length, 0}, {{}, {}}},
      {"mid", {o.length / 4, o.length / 16}, {{"event_ts", "item_id", "event_type", "watch_ms"}, {}}},
      {"short", {o.length / 32, 0}, {{"event_ts", "item_id"}, {}}},
  };
  uih_snapshot_spec spec{};  // the union of the tenants' needs
  spec.ngroups = 2;
  spec.groups[0] = {lay.group[0]->id, o.length};
  spec.groups[1] = {lay.group[1]->id, o.length / 16};
  printf("fatrow_bench: %" PRIu64 " users, %u days of history (%" PRIu64 " events), then %u days served (%" PRIu64
         " events)\n  union spec engagement:%u search:%u; tenants: long engagement:%u (8 traits), mid"
         " engagement:%u (4) + search:%u (3), short engagement:%u (2); batches of %u\n",
         o.users, o.days - o.train_days, w.history_events, o.train_days, w.served_events, o.length, o.length / 16,
         o.length, o.length / 4, o.length / 16, o.length / 32, o.batch);

  std::vector<FatRows> fats(o.fat_blocks_kb.size());
  for (size_t i = 0; i < fats.size(); i++) {
    fats[i].block_kb = o.fat_blocks_kb[i];
    fats[i].path = o.dir + "/fat" + std::to_string(o.fat_blocks_kb[i]) + "k";
    rocksdb::Options fopt;
    fopt.create_if_missing = true;
    rocksdb::BlockBasedTableOptions bt;
    bt.no_block_cache = true;
    fopt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(bt));
    Check(rocksdb::DB::Open(fopt, fats[i].path, &fats[i].db), "fat rows");
  }
  std::mt19937_64 rng(o.seed);
  uih_snapshotter* sn = nullptr;
  Check(uih_snapshotter_create(s, &sn, &err), err, "snapshotter");
  std::vector<double> snapshot_seconds;
  std::vector<Day> days;
  Totals tt;
  tt.days = o.train_days;
  for (uint32_t d = 0; d < o.train_days; d++) {
    days.push_back(Serve(o, w, d, lay, spec, s, sn, &fats, &rng, &snapshot_seconds));
    tt.examples += static_cast<double>(days.back().examples);
    tt.logs += days.back().log_bytes;
    tt.loads += days.back().load_bytes;
    tt.writes += days.back().store_writes;
  }
  uih_snapshotter_free(sn);
  std::vector<std::string> logs;
  for (const Day& day : days) logs.push_back(day.log);
  tt.store_on_disk = bench::BytesUnder(store);
  for (uint32_t sh = 0; sh < o.shards; sh++) {
    uint64_t imm, mut;
    Check(uih_store_sizes(s, sh, &imm, &mut, &err), err, "sizes");
    tt.generation += imm;
  }
  printf("  %.0f examples served (snapshot p50 %.1f us, p99 %.1f us)\n", tt.examples, Pct(snapshot_seconds, 0.5) * 1e6,
         Pct(snapshot_seconds, 0.99) * 1e6);

  // Training: every tenant, both paradigms, every example of the served days.
  std::vector<Result> results;
  uint64_t checksum = 0, failures = 0;
  for (const Tenant& t : tenants) {
    const Projected p = Project(lay, t);
    Result r;
    r.late = ReadLate(o, s, logs, p, UIH_LAYOUT_SHARED, &checksum);
    r.late_jagged = ReadLate(o, s, logs, p, UIH_LAYOUT_JAGGED, &checksum);
    for (const FatRows& f : fats) r.fat.push_back(ReadFat(o, lay, f, p, &checksum));
    r.identical = Compare(o, s, logs, lay, fats[0], t, p, static_cast<uint64_t>(tt.examples));
    failures += static_cast<uint64_t>(tt.examples) - r.identical + r.late.mismatches;
    results.push_back(std::move(r));
  }
  PrintTable(tt, fats, tenants, results);
  printf("(checksum of every value read: %" PRIu64 ")\n", checksum);
  if (!o.json.empty()) WriteJson(o, tt, fats, tenants, results);
  for (FatRows& f : fats) delete f.db;
  uih_store_close(s);
  if (failures) {
    fprintf(stderr, "fatrow_bench: %" PRIu64 " sequences differ or did not verify; files kept in %s\n", failures,
            o.dir.c_str());
    return 1;
  }
  fs::remove_all(o.dir);
  return 0;
}
