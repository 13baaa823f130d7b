// The scale run's loads and opens, each in a process of its own.
//
// history   DIR/input/history/ (history_days days) into a fresh store of
//           examples/feed.schema.json, through the last history day's end;
// day 1     the next day's files: ~1/33 new events, 1 in 50 of them late
//           (the day before's), onto the history;
// day 2     the same with a deletion list (every 2,000th user, 5 items) and
//           a schema change (bench/scale/feed.v3.schema.json adds a trait
//           to each group);
// day 3     is loaded by train.cc while training processes read.
// Per load: wall and CPU seconds, events/s, events per CPU-second, what the
// loader says of its phases, bytes the process wrote (/proc/self/io) per
// byte of the new generation, its peak RSS, the store's peak disk over what
// it held before (temporary disk) and its tmp/'s peak.
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "../check.h"
#include "../files.h"
#include "scale.h"
#include "uih/loader.h"
#include "uih/store.h"

namespace scale {
namespace {

using bench::Check;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

uint64_t GenerationBytes(uih_store* s) {
  uih_error err{};
  uint64_t sum = 0;
  for (uint32_t sh = 0; sh < uih_store_shards(s); sh++) {
    uint64_t imm, mut;
    Check(uih_store_sizes(s, sh, &imm, &mut, &err), err, "sizes");
    sum += imm;
  }
  return sum;
}

size_t OpenFiles() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) n++;
    closedir(d);
  }
  return n - 3;  // ., .. and the directory itself
}

double RssMb() {
  long pages = 0, resident = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// The load's peak RSS per phase, as its progress names them: sampled
// every 20 ms by a thread of the loading process.
struct PhaseRss {
  std::atomic<int> phase{0};  // 0 read, 1 merge, 2 publish
  std::atomic<bool> stop{false};
  double peak[3] = {0, 0, 0};
  std::thread t{[this] {
    while (!stop) {
      const double r = RssMb();
      const int p = phase;
      if (r > peak[p]) peak[p] = r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }};
  static void Progress(const uih_load_progress* p, void* arg) {
    auto* self = static_cast<PhaseRss*>(arg);
    self->phase = !strcmp(p->phase, "read") ? 0 : !strcmp(p->phase, "merge") ? 1 : 2;
  }
  void Stop() {  // then peak[] is the sampler's last word
    stop = true;
    if (t.joinable()) t.join();
  }
  ~PhaseRss() { Stop(); }
};

}  // namespace

void LoadInto(const Config& c, const std::string& input, int64_t through, const std::string& deletes,
              const std::string& schema, Figures& f) {
  uih_error err{};
  uih_store* s = nullptr;
  Check(uih_store_open(StorePath(c).c_str(), nullptr, &s, &err), err, "open");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = through;
  o.threads = c.threads;
  o.memory = c.memory;
  if (!deletes.empty()) o.deletes = deletes.c_str();
  std::string json;
  if (!schema.empty()) {
    json = ReadFile(schema);
    o.schema_json = json.data();
    o.schema_len = json.size();
    o.schema_origin = schema.c_str();
  }
  const char* in[] = {input.c_str()};
  uih_load_stats st{};
  const uint64_t w0 = bench::BytesWritten();
  {
    PhaseRss rss;
    o.progress = PhaseRss::Progress;
    o.progress_arg = &rss;
    Check(uih_load(s, in, 1, &o, &st, &err), err, "load");
    rss.Stop();
    f.Set("rss_read_mb", rss.peak[0]);
    f.Set("rss_merge_mb", std::max(rss.peak[1], rss.peak[2]));
  }
  f.Set("written_bytes", static_cast<double>(bench::BytesWritten() - w0));
  f.Set("generation_bytes", static_cast<double>(GenerationBytes(s)));
  f.Set("events_in", static_cast<double>(st.events_in));
  f.Set("events_new", static_cast<double>(st.events_new));
  f.Set("events_stored", static_cast<double>(st.events));
  f.Set("duplicates", static_cast<double>(st.duplicates));
  f.Set("deleted", static_cast<double>(st.deleted));
  f.Set("stripes", static_cast<double>(st.stripes));
  f.Set("stripes_copied", static_cast<double>(st.stripes_copied));
  f.Set("stripes_written", static_cast<double>(st.stripes_written));
  f.Set("runs", static_cast<double>(st.runs));
  f.Set("input_bytes", static_cast<double>(st.input_bytes));
  f.Set("seconds_read", st.seconds_read);
  f.Set("seconds_sort", st.seconds_sort);
  f.Set("seconds_merge", st.seconds_merge);
  uih_store_close(s);
}

void LoadPhases(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out) {
  const std::string store = StorePath(c);
  std::filesystem::remove_all(store);
  const int64_t history_end = kStart + static_cast<int64_t>(c.history_days) * kDay;
  // RocksDB is touched only in children: its background threads would not
  // survive a fork, and a child's flush would wait for them forever.
  out.emplace_back("load_history", RunChild(c, "history load", [&](Figures& f) {
                     uih_error err{};
                     std::string json = ReadFile(c.schema);
                     Check(uih_store_init(store.c_str(), json.data(), json.size(), c.schema.c_str(), c.shards, &err),
                           err, "init");
                     LoadInto(c, p.history_dir, history_end, "", "", f);
                   }));
  out.emplace_back("load_day1", RunChild(c, "day 1 load", [&](Figures& f) {
                     LoadInto(c, p.day_dirs[0], history_end + kDay, "", "", f);
                   }));
  const std::string v3 = std::string(UIH_SOURCE_DIR) + "/bench/scale/feed.v3.schema.json";
  out.emplace_back("load_day2", RunChild(c, "day 2 load (deletions, schema change)", [&](Figures& f) {
                     LoadInto(c, p.day_dirs[1], history_end + 2 * kDay, p.deletes, v3, f);
                   }));
}

// Opening the store read-only as a training process does: from a cold page
// cache (and its first read, which opens a shard's generation files) and a
// warm one, and writable (which recovers), and the files each holds open.
void OpenPhase(const Config& c, std::vector<std::pair<std::string, Child>>& out) {
  out.emplace_back("open", RunChild(c, "opening the store", [&](Figures& f) {
                     uih_error err{};
                     uih_store_opts ro = UIH_STORE_OPTS_DEFAULT;
                     ro.read_only = 1;
                     for (const char* how : {"cold", "warm", "rw"}) {
                       if (std::string(how) == "cold") bench::Evict(StorePath(c));
                       const size_t fd0 = OpenFiles();
                       uih_store* s = nullptr;
                       const double t0 = Seconds();
                       Check(uih_store_open(StorePath(c).c_str(), std::string(how) == "rw" ? nullptr : &ro, &s, &err),
                             err, "open");
                       f.Set(std::string("open_") + how + "_ms", (Seconds() - t0) * 1e3);
                       f.Set(std::string("open_") + how + "_files", static_cast<double>(OpenFiles() - fd0));
                       if (std::string(how) == "cold") {
                         // The first read after it: one shard's generation files
                         // opened, each index read and checked whole.
                         uih_batch* b = nullptr;
                         const double r0 = Seconds();
                         Check(uih_store_read(s, 1, kEngagement, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err),
                               err, "first read");
                         f.Set("open_cold_first_read_ms", (Seconds() - r0) * 1e3);
                         uih_batch_free(b);
                       }
                       uih_store_close(s);
                     }
                   }));
}

}  // namespace scale
