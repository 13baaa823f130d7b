// The daily loader against the LSM write path it replaces, side by side in
// one run.
//
//   build/release/bench/load_bench [--day N] [--history 0,10,100] [--shards S]
//                                  [--threads T] [--dir DIR] [--seed S] [--keep 1]
//
// Data: `uih gen`'s generator (examples/feed.schema.json, group
// "engagement", 9 traits), users spread over m + 1 days so that the first m
// days hold about m·N events (the history) and the last day about N (the
// day). For each history size m·N:
//  1. the history is loaded into a fresh store (one load), then the day is
//     loaded onto it, once on one thread and once on T, each on its own
//     copy of the store: seconds per phase (read CSV, sort, merge+publish),
//     events/s, bytes written (write(2) bytes of the process, /proc/self/io
//     wchar: sorted runs, table files, metadata) per byte of the generation
//     written and per new event, store bytes per event;
//  2. the LSM baseline: the same stripes Put into a leveled BlockBasedTable
//     column family (LZ4, RocksDB defaults otherwise), in user-hash order as
//     updates arrive: first the whole history, then only the stripes the
//     day changed (Puts of new and changed stripes, Deletes of dropped
//     ones), each settled (flushed, compactions done); bytes written from
//     RocksDB's statistics (WAL + flush + compaction) and from wchar, per
//     byte stored (live SST bytes) and per new event.
// --keep 1 leaves DIR/h<m>/ behind: history.csv, day.csv and store/ (the
// history loaded, not the day), to profile or repeat a day's `uih load`.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "rocksdb/db.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "uih/csv.h"
#include "uih/gen.h"
#include "uih/loader.h"
#include "uih/store.h"

namespace {

using bench::Check;

namespace fs = std::filesystem;
constexpr int64_t kDay = 86400000;
constexpr int64_t kStart = INT64_C(1700000000000);


// Bytes this process passed to write(2) and friends so far.
uint64_t Wchar() {
  std::ifstream in("/proc/self/io");
  std::string k;
  uint64_t v;
  while (in >> k >> v)
    if (k == "wchar:") return v;
  return 0;
}

struct Files {
  std::string history, day;
  uint64_t history_events = 0, day_events = 0;
};

// Writes the history (days 0..m-1) and the day (day m) as CSV.
Files Generate(const uih_group* g, uint64_t day_events, uint32_t m, uint64_t seed, const std::string& dir) {
  uih_error err{};
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.seed = seed;
  o.days = m + 1;
  o.users = UINT32_MAX;
  uih_gen* gen = nullptr;
  Check(uih_gen_create(g, &o, &gen, &err), err, "generator");
  uint64_t want = (m + 1) * day_events, total = 0, users = 0;
  while (total < want) total += uih_gen_user_events(gen, users++);
  uih_gen_free(gen);
  o.users = users;
  Check(uih_gen_create(g, &o, &gen, &err), err, "generator");
  Files f{dir + "/history.csv", dir + "/day.csv"};
  FILE* h = fopen(f.history.c_str(), "w");
  FILE* d = fopen(f.day.c_str(), "w");
  uih_batch* b = nullptr;
  Check(uih_batch_create(g, g->stripe_events, nullptr, 0, &b, &err), err, "batch");
  Check(uih_csv_write_header(h, b, &err), err, "csv");
  Check(uih_csv_write_header(d, b, &err), err, "csv");
  const int64_t boundary = kStart + static_cast<int64_t>(m) * kDay;
  const int ts = uih_batch_column_index(b, g->ts->id);
  for (;;) {
    uint64_t user;
    Check(uih_gen_next(gen, &user, b, &err), err, "generator");
    if (b->count == 0) break;
    for (uint32_t r = 0; r < b->count; r++) {
      bool today = static_cast<int64_t>(uih_column_get_bits(&b->columns[ts], r)) >= boundary;
      Check(uih_csv_write_row(today ? d : h, user, b, r, &err), err, "csv");
      (today ? f.day_events : f.history_events)++;
    }
  }
  uih_batch_free(b);
  uih_gen_free(gen);
  fclose(h);
  fclose(d);
  return f;
}

struct LoadRun {
  uih_load_stats st{};
  uint64_t written = 0, generation_bytes = 0;
  double seconds = 0;
};

LoadRun Load(const std::string& store, const std::string& file, int64_t through, uint32_t threads) {
  uih_error err{};
  uih_store* s = nullptr;
  Check(uih_store_open(store.c_str(), nullptr, &s, &err), err, "open");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = through;
  o.threads = threads;
  const char* in[] = {file.c_str()};
  LoadRun r;
  uint64_t w0 = Wchar();
  auto t0 = std::chrono::steady_clock::now();
  Check(uih_load(s, in, 1, &o, &r.st, &err), err, "load");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.written = Wchar() - w0;
  for (uint32_t sh = 0; sh < uih_store_shards(s); sh++) {
    uint64_t imm, mut;
    Check(uih_store_sizes(s, sh, &imm, &mut, &err), err, "sizes");
    r.generation_bytes += imm;
  }
  uih_store_close(s);
  return r;
}

using Stripes = std::map<std::string, std::string>;

Stripes ScanStore(const std::string& store) {
  uih_error err{};
  uih_store* s = nullptr;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.read_only = 1;
  Check(uih_store_open(store.c_str(), &so, &s, &err), err, "open");
  Stripes out;
  for (uint32_t sh = 0; sh < uih_store_shards(s); sh++) {
    uih_store_scan* sc = nullptr;
    Check(uih_store_scan_open(s, sh, 0, &sc, &err), err, "scan");
    for (;;) {
      const uint8_t *k, *v;
      size_t kl, vl;
      Check(uih_store_scan_next(sc, &k, &kl, &v, &vl, &err), err, "scan");
      if (!k) break;
      out.emplace(std::string(reinterpret_cast<const char*>(k), kl), std::string(reinterpret_cast<const char*>(v), vl));
    }
    uih_store_scan_close(sc);
  }
  uih_store_close(s);
  return out;
}

// A leveled BlockBasedTable store written through Put.
struct Lsm {
  rocksdb::DB* db = nullptr;
  std::shared_ptr<rocksdb::Statistics> stats = rocksdb::CreateDBStatistics();
  explicit Lsm(const std::string& path) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.statistics = stats;
    o.compression = rocksdb::kLZ4Compression;
    o.max_background_jobs = 2;
    Check(rocksdb::DB::Open(o, path, &db), "lsm open");
  }
  ~Lsm() { delete db; }
  uint64_t Written() const {
    return stats->getTickerCount(rocksdb::WAL_FILE_BYTES) + stats->getTickerCount(rocksdb::FLUSH_WRITE_BYTES) +
           stats->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
  }
  void Settle() {
    Check(db->Flush(rocksdb::FlushOptions()), "flush");
    for (;;) {
      uint64_t pending = 0, running = 0, flushes = 0;
      db->GetIntProperty("rocksdb.compaction-pending", &pending);
      db->GetIntProperty("rocksdb.num-running-compactions", &running);
      db->GetIntProperty("rocksdb.num-running-flushes", &flushes);
      if (!pending && !running && !flushes) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  uint64_t Stored() {
    uint64_t v = 0;
    db->GetIntProperty("rocksdb.live-sst-files-size", &v);
    return v;
  }
};

struct LsmRun {
  uint64_t written = 0, wchar = 0, stored = 0, put_bytes = 0, puts = 0, deletes = 0;
};

// Applies the difference from `before` to `after` (all of `after` when
// `before` is empty) in a hashed order, as a day of updates arrives.
LsmRun Apply(Lsm& lsm, const Stripes& before, const Stripes& after, uint64_t seed) {
  std::vector<const std::pair<const std::string, std::string>*> puts;
  std::vector<const std::string*> deletes;
  for (auto& kv : after) {
    auto it = before.find(kv.first);
    if (it == before.end() || it->second != kv.second) puts.push_back(&kv);
  }
  for (auto& kv : before)
    if (!after.count(kv.first)) deletes.push_back(&kv.first);
  std::shuffle(puts.begin(), puts.end(), std::mt19937_64(seed));
  LsmRun r;
  uint64_t w0 = lsm.Written(), c0 = Wchar();
  rocksdb::WriteOptions wo;
  for (auto* kv : puts) {
    Check(lsm.db->Put(wo, kv->first, kv->second), "put");
    r.put_bytes += kv->first.size() + kv->second.size();
  }
  for (auto* k : deletes) Check(lsm.db->Delete(wo, *k), "delete");
  lsm.Settle();
  r.written = lsm.Written() - w0;
  r.wchar = Wchar() - c0;
  r.stored = lsm.Stored();
  r.puts = puts.size();
  r.deletes = deletes.size();
  return r;
}

double Mb(uint64_t b) { return static_cast<double>(b) / 1e6; }

void PrintLoad(const char* what, const LoadRun& r, uint64_t new_events) {
  const uih_load_stats& s = r.st;
  printf("  %-26s read %6.2f s  sort %5.2f s  merge+publish %6.2f s  total %6.2f s  %5.2f M events/s\n", what,
         s.seconds_read, s.seconds_sort, s.seconds_merge, r.seconds, static_cast<double>(s.events_in) / r.seconds / 1e6);
  printf("  %-26s wrote %8.1f MB for a %8.1f MB generation: %.3f bytes written per byte stored, %.1f per new event;"
         " %.2f bytes/event stored, %" PRIu64 " of %" PRIu64 " stripes copied\n",
         "", Mb(r.written), Mb(r.generation_bytes), static_cast<double>(r.written) / static_cast<double>(r.generation_bytes),
         static_cast<double>(r.written) / static_cast<double>(std::max<uint64_t>(new_events, 1)),
         static_cast<double>(s.bytes) / static_cast<double>(std::max<uint64_t>(s.events, 1)), s.stripes_copied, s.stripes);
}

void PrintLsm(const char* what, const LsmRun& r, uint64_t new_events) {
  printf("  %-26s %" PRIu64 " puts (%.1f MB), %" PRIu64 " deletes: wrote %.1f MB (statistics; %.1f MB wchar),"
         " %.3f bytes written per byte put, %.1f per new event; %.1f MB stored\n",
         what, r.puts, Mb(r.put_bytes), r.deletes, Mb(r.written), Mb(r.wchar),
         static_cast<double>(r.written) / static_cast<double>(std::max<uint64_t>(r.put_bytes, 1)),
         static_cast<double>(r.written) / static_cast<double>(std::max<uint64_t>(new_events, 1)), Mb(r.stored));
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t day = 200000, seed = 1;
  uint32_t shards = 2, threads = 2;
  bool keep = false;
  std::string dir = "/tmp/uih_load_bench", histories = "0,10,100";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--day") day = std::stoull(v);
    else if (a == "--history") histories = v;
    else if (a == "--shards") shards = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--threads") threads = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--dir") dir = v;
    else if (a == "--seed") seed = std::stoull(v);
    else if (a == "--keep") keep = v != "0";
    else {
      fprintf(stderr,
              "usage: load_bench [--day N] [--history 0,10,100] [--shards S] [--threads T] [--dir DIR] [--seed S]"
              " [--keep 1]\n");
      return 2;
    }
  }
  uih_error err{};
  uih_schema* schema = nullptr;
  const char* schema_path = UIH_SOURCE_DIR "/examples/feed.schema.json";
  Check(uih_schema_load(schema_path, &schema, &err), err, "schema");
  const uih_group* g = uih_schema_group_by_name(schema, "engagement");
  std::ifstream sin(schema_path, std::ios::binary);
  std::string json((std::istreambuf_iterator<char>(sin)), {});
  printf("load_bench: a day of ~%" PRIu64 " events onto histories of {%s} days' worth; %u shards, %u threads; %s\n", day,
         histories.c_str(), shards, threads, dir.c_str());
  size_t pos = 0;
  while (pos <= histories.size()) {
    size_t comma = histories.find(',', pos);
    uint32_t m = static_cast<uint32_t>(std::stoul(histories.substr(pos, comma - pos)));
    pos = comma == std::string::npos ? histories.size() + 1 : comma + 1;
    std::string root = dir + "/h" + std::to_string(m);
    fs::remove_all(root);
    fs::create_directories(root);
    Files f = Generate(g, day, m, seed, root);
    printf("\nhistory %u days: %" PRIu64 " events stored before, a day of %" PRIu64 " events\n", m, f.history_events,
           f.day_events);
    const int64_t boundary = kStart + static_cast<int64_t>(m) * kDay;
    std::string base = root + "/store";
    Check(uih_store_init(base.c_str(), json.data(), json.size(), schema_path, shards, &err), err, "init");
    if (m > 0) PrintLoad("history load (T threads)", Load(base, f.history, boundary, threads), f.history_events);
    Stripes before = ScanStore(base);
    fs::copy(base, root + "/one", fs::copy_options::recursive);
    fs::copy(base, root + "/all", fs::copy_options::recursive);
    PrintLoad("day load, 1 thread", Load(root + "/one", f.day, INT64_MIN, 1), f.day_events);
    PrintLoad("day load, T threads", Load(root + "/all", f.day, INT64_MIN, threads), f.day_events);
    Stripes after = ScanStore(root + "/all");
    {
      Lsm lsm(root + "/lsm");
      if (m > 0) PrintLsm("LSM: history as Puts", Apply(lsm, Stripes(), before, seed), f.history_events);
      PrintLsm("LSM: the day's changes", Apply(lsm, before, after, seed + 1), f.day_events);
    }
    if (keep) {
      fs::remove_all(root + "/one");
      fs::remove_all(root + "/all");
      fs::remove_all(root + "/lsm");
    } else {
      fs::remove_all(root);
    }
  }
  uih_schema_free(schema);
  return 0;
}
