// scale_bench: one command that builds a large store and measures every
// operation on it — loads, opening, inference, training — each in a
// process of its own (its peak RSS, CPU time and writes its own), with
// open files limited to 1,024 as a deployment's default.
//
//   build/release/bench/scale_bench [--events N] [--users U] [--dir DIR] [--seed S]
//                                   [--shards S] [--threads T] [--memory MB]
//                                   [--requests R] [--append-rate A] [--train-users U]
//                                   [--procs P] [--train-seconds S] [--json FILE]
//                                   [--keep 1] [--small 1] [--phases P,...]
//
// --events (default 216 M: > 200 M kept) sizes the users (heavy-tailed,
// inputs.cc);
// --users sets them instead. Phases, in order (each file says more):
//   inputs    30 history days and 3 daily days of zstd CSV (inputs.cc);
//   loads     the history, day 1 (late events), day 2 (deletions and a
//             schema change) (load.cc);
//   open      read-only cold and warm, writable (load.cc);
//   inference snapshots of 1 K / 8 K / 64 K events, cold and warm, 1 and 2
//             threads, appends streaming; the training records logged
//             (serve.cc);
//   training  three tenants cold and warm; 1 against --procs processes;
//             --procs processes while day 3 loads (train.cc).
// --phases runs only some of them (loads, open, serve, train) on a store a
// run with --keep 1 left in DIR (its inputs reused; a load already done is
// skipped), e.g. `--phases train` to measure training again.
// Printed as it goes and at the end; --json appends every figure as one
// JSON line (bench/scale/plot.py draws the curves from such lines).
// Timings are never asserted; a wrong answer (a snapshot out of order, a
// rebuilt record unlike its snapshot) stops the run with exit 1, so
// `--small 1` in CTest keeps it working.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "../files.h"
#include "scale.h"

namespace scale {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double CpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
std::string StorePath(const Config& c) { return c.dir + "/store"; }
std::string RecordsPath(const Config& c) { return c.dir + "/records.bin"; }

double Figures::Get(const std::string& k) const {
  for (auto& kv : v)
    if (kv.first == k) return kv.second;
  return 0;
}

Child RunChild(const Config& c, const std::string& what, const std::function<void(Figures&)>& fn) {
  printf("  %s...\n", what.c_str());
  fflush(stdout);
  const std::string store = StorePath(c);
  const uint64_t before = bench::DiskUnder(store);
  int fds[2];
  if (pipe(fds) != 0) {
    perror("scale_bench: pipe");
    exit(1);
  }
  const double t0 = Seconds();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    rlimit rl{1024, 1024};
    setrlimit(RLIMIT_NOFILE, &rl);
    Figures f;
    fn(f);
    std::string s;
    char line[256];
    for (auto& kv : f.v) {
      snprintf(line, sizeof line, "%s %.17g\n", kv.first.c_str(), kv.second);
      s += line;
    }
    for (size_t at = 0; at < s.size();) {
      ssize_t n = write(fds[1], s.data() + at, s.size() - at);
      if (n <= 0) _exit(1);
      at += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  Child r;
  std::atomic<bool> done{false};
  uint64_t peak = before, peak_tmp = 0;
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak, bench::DiskUnder(store));
      peak_tmp = std::max(peak_tmp, bench::DiskUnder(store + "/tmp"));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) data.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  r.wall = Seconds() - t0;
  done = true;
  sampler.join();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "scale_bench: %s failed\n", what.c_str());
    exit(1);
  }
  r.cpu = CpuSeconds(ru);
  r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024;
  r.peak_disk_mb = static_cast<double>(peak - before) / 1e6;
  r.peak_tmp_mb = static_cast<double>(peak_tmp) / 1e6;
  for (size_t at = 0; at < data.size();) {
    size_t nl = data.find('\n', at), sp = data.find(' ', at);
    r.f.Set(data.substr(at, sp - at), std::strtod(data.c_str() + sp + 1, nullptr));
    at = nl + 1;
  }
  return r;
}

}  // namespace scale

namespace {

using scale::Child;
using Phases = std::vector<std::pair<std::string, Child>>;

// The figures of phase `name`, or NULL when it did not run.
const Child* Lookup(const Phases& ph, const std::string& name) {
  for (auto& p : ph)
    if (p.first == name) return &p.second;
  return nullptr;
}
bool Ran(const Phases& ph, const std::string& name) { return Lookup(ph, name) != nullptr; }
// Its figures, or none (every figure 0) when it did not run.
const Child& Find(const Phases& ph, const std::string& name) {
  static const Child none;
  const Child* c = Lookup(ph, name);
  return c ? *c : none;
}

void PrintLoad(const char* label, const Child& ch, double wall, double cpu, double rss) {
  const auto& f = ch.f;
  const double gen = f.Get("generation_bytes"), in = f.Get("events_in");
  printf("  %-34s %7.1f s  %6.1f cpu-s  %6.2f M ev/s  %6.2f M ev/cpu-s  read %5.1f sort %5.1f merge %6.1f s\n", label,
         wall, cpu, in / wall / 1e6, in / cpu / 1e6, f.Get("seconds_read"), f.Get("seconds_sort"),
         f.Get("seconds_merge"));
  printf("  %-34s %.0f events in, %.0f new, %.0f stored in %.1f MB (%.2f B/event); wrote %.2f B per B stored;"
         " peak RSS %.0f MB (reading %.0f, merging %.0f); disk over before %.0f MB (%.2fx the generation),"
         " tmp/ %.0f MB, %.0f runs; %.0f of %.0f stripes copied\n",
         "", in, f.Get("events_new"), f.Get("events_stored"), gen / 1e6, gen / std::max(1.0, f.Get("events_stored")),
         f.Get("written_bytes") / std::max(1.0, gen), rss, f.Get("rss_read_mb"), f.Get("rss_merge_mb"),
         ch.peak_disk_mb, ch.peak_disk_mb * 1e6 / std::max(1.0, gen),
         ch.peak_tmp_mb, f.Get("runs"), f.Get("stripes_copied"), f.Get("stripes"));
}

void AppendJson(const std::string& path, const scale::Config& c, const scale::Plan& p, const Phases& ph) {
  FILE* f = fopen(path.c_str(), "a");
  if (!f) {
    perror("scale_bench: --json");
    exit(1);
  }
  fprintf(f, "{\"events\": %" PRIu64 ", \"users\": %" PRIu64 ", \"history_events\": %" PRIu64
             ", \"shards\": %u, \"threads\": %u, \"memory_mb\": %" PRIu64 ", \"seed\": %" PRIu64
             ", \"input_bytes\": %" PRIu64 ", \"generate_s\": %.3f",
          p.events, p.users, p.history_events, c.shards, c.threads, c.memory >> 20, c.seed, p.input_bytes, p.seconds);
  for (auto& [name, ch] : ph) {
    fprintf(f, ", \"%s.wall_s\": %.4f, \"%s.cpu_s\": %.4f, \"%s.peak_rss_mb\": %.1f, \"%s.peak_disk_mb\": %.1f"
               ", \"%s.peak_tmp_mb\": %.1f",
            name.c_str(), ch.wall, name.c_str(), ch.cpu, name.c_str(), ch.peak_rss_mb, name.c_str(), ch.peak_disk_mb,
            name.c_str(), ch.peak_tmp_mb);
    for (auto& kv : ch.f.v) fprintf(f, ", \"%s.%s\": %.6g", name.c_str(), kv.first.c_str(), kv.second);
  }
  fprintf(f, "}\n");
  fclose(f);
}

int Usage() {
  fprintf(stderr,
          "usage: scale_bench [--events N] [--users U] [--dir DIR] [--seed S] [--shards S] [--threads T]\n"
          "                   [--memory MB] [--requests R] [--append-rate A] [--train-users U] [--procs P]\n"
          "                   [--train-seconds S] [--json FILE] [--keep 1] [--small 1]\n"
          "                   [--phases loads,open,serve,train]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  scale::Config c;
  c.schema = std::string(UIH_SOURCE_DIR) + "/examples/feed.schema.json";
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help") return Usage() - 2;
    if (i + 1 >= argc) return Usage();
    std::string v = argv[++i];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool num = *end == '\0' && x >= 0;
    if (a == "--dir") c.dir = v;
    else if (a == "--json") c.json = v;
    else if (a == "--phases") c.phases = v;
    else if (!num) return Usage();
    else if (a == "--events") c.events = static_cast<uint64_t>(x);
    else if (a == "--users") c.users = static_cast<uint64_t>(x);
    else if (a == "--seed") c.seed = static_cast<uint64_t>(x);
    else if (a == "--shards") c.shards = static_cast<uint32_t>(x);
    else if (a == "--threads") c.threads = static_cast<uint32_t>(x);
    else if (a == "--memory") c.memory = static_cast<uint64_t>(x) << 20;
    else if (a == "--requests") c.requests = static_cast<uint32_t>(x);
    else if (a == "--append-rate") c.append_rate = x;
    else if (a == "--train-users") c.train_users = static_cast<uint32_t>(x);
    else if (a == "--procs") c.procs = static_cast<uint32_t>(x);
    else if (a == "--train-seconds") c.train_seconds = x;
    else if (a == "--keep") c.keep = x != 0;
    else if (a == "--small") c.small = x != 0;
    else return Usage();
  }
  for (size_t at = 0; at <= c.phases.size();) {
    const size_t comma = std::min(c.phases.find(',', at), c.phases.size());
    const std::string name = c.phases.substr(at, comma - at);
    if (name != "all" && name != "loads" && name != "open" && name != "serve" && name != "train") {
      fprintf(stderr, "scale_bench: --phases: '%s', expected loads, open, serve or train\n", name.c_str());
      return 2;
    }
    at = comma + 1;
  }
  if (c.small) {
    c.requests = std::min<uint32_t>(c.requests, 200);
    c.train_users = std::min<uint32_t>(c.train_users, 100);
    c.train_seconds = std::min(c.train_seconds, 0.5);
    c.procs = std::min<uint32_t>(c.procs, 3);
  }
  if (c.shards == 0 || c.threads == 0 || c.requests == 0 || c.train_users == 0 || c.procs == 0 || c.memory == 0)
    return Usage();
  std::filesystem::create_directories(c.dir);
  printf("scale_bench: %s in %s, %u shards, %u threads, --memory %" PRIu64 " MB, seed %" PRIu64 "\n",
         c.users ? (std::to_string(c.users) + " users").c_str() : (std::to_string(c.events) + " events").c_str(),
         c.dir.c_str(), c.shards, c.threads, c.memory >> 20, c.seed);
  scale::Plan p = scale::Generate(c);
  printf("inputs: %" PRIu64 " users, %" PRIu64 " events (%" PRIu64 " history", p.users, p.events, p.history_events);
  for (size_t d = 0; d < p.day_events.size(); d++)
    printf(", day %zu %" PRIu64 " with %" PRIu64 " late", d + 1, p.day_events[d], p.late[d]);
  printf("; %" PRIu64 " past the last day left out), %.1f MB compressed, written in %.1f s\n", p.beyond,
         static_cast<double>(p.input_bytes) / 1e6, p.seconds);

  Phases ph;
  if (scale::Runs(c, "loads")) scale::LoadPhases(c, p, ph);
  else c.keep = true;  // the store of an earlier run: left as it was found
  if (scale::Runs(c, "open")) scale::OpenPhase(c, ph);
  if (scale::Runs(c, "serve")) scale::ServePhase(c, p, ph);
  if (scale::Runs(c, "train")) scale::TrainPhases(c, p, ph);

  // What ran (--phases) is printed: a phase that did not would print zeros and NaNs.
  const bool loads = Ran(ph, "load_history"), day3 = Ran(ph, "load_day3");
  if (loads || day3) printf("\nloads (%u threads, --memory %" PRIu64 " MB):\n", c.threads, c.memory >> 20);
  if (loads)
    for (const char* name : {"load_history", "load_day1", "load_day2"}) {
      const Child& ch = Find(ph, name);
      PrintLoad(name, ch, ch.wall, ch.cpu, ch.peak_rss_mb);
    }
  const Child& d3 = Find(ph, "load_day3");
  if (day3) {
    const std::string d3_label = "load_day3 (" + std::to_string(c.procs) + " trainers reading)";
    PrintLoad(d3_label.c_str(), d3, d3.f.Get("load_wall_s"), d3.f.Get("load_cpu_s"),
              d3.f.Get("load_rss_mb"));
  }
  if (Ran(ph, "open")) {
    const Child& op = Find(ph, "open");
    printf("\nopen: read-only cold %.1f ms (%.0f files) and its first read %.1f ms, warm %.1f ms; writable %.1f ms"
           " (%.0f files)\n",
           op.f.Get("open_cold_ms"), op.f.Get("open_cold_files"), op.f.Get("open_cold_first_read_ms"),
           op.f.Get("open_warm_ms"), op.f.Get("open_rw_ms"), op.f.Get("open_rw_files"));
  }
  if (Ran(ph, "serve")) {
    const Child& sv = Find(ph, "serve");
    printf("\ninference (appends alongside %.0f/s; +256 search events per snapshot):\n", sv.f.Get("appends_per_s"));
    printf("  %7s %7s %5s %8s %10s %10s %10s %8s %8s\n", "length", "users", "thr", "mode", "p50 us", "p99 us",
           "p99.9 us", "n", "events");
    for (uint32_t len : {1u << 10, 1u << 13, 1u << 16})
      for (uint32_t t : {1u, 2u})
        for (const char* mode : {"cold", "warm"}) {
          const std::string k = "snap_" + std::to_string(len) + "_t" + std::to_string(t) + "_" + mode;
          if (sv.f.Get(k + "_n") == 0) continue;
          printf("  %7u %7.0f %5u %8s %10.1f %10.1f %10.1f %8.0f %8.0f\n", len,
                 sv.f.Get("users_" + std::to_string(len)), t, mode, sv.f.Get(k + "_p50_us"), sv.f.Get(k + "_p99_us"),
                 sv.f.Get(k + "_p999_us"), sv.f.Get(k + "_n"), sv.f.Get(k + "_events"));
        }
  }
  if (Ran(ph, "train")) {
    const Child& tr = Find(ph, "train");
    printf("\ntraining (%.0f records: %u users drawn by activity, 16 or 17 each; %.0f B each; 1 worker, every record"
           " checked):\n",
           tr.f.Get("records"), c.train_users, tr.f.Get("record_bytes"));
    for (const char* t : {"long", "mid", "short"})
      for (const char* mode : {"cold", "open_cold", "warm"}) {
        const std::string k = std::string("train_") + t + "_" + mode;
        printf("  %-5s %-9s %9.0f records/s %9.0f records/cpu-s %9.0f B read/record %7.0f events/record\n", t, mode,
               tr.f.Get(k + "_records_per_s"), tr.f.Get(k + "_records_per_cpu_s"), tr.f.Get(k + "_bytes_per_record"),
               tr.f.Get(k + "_events_per_record"));
      }
    const Child& pr = Find(ph, "procs");
    const double one = std::max(1.0, pr.f.Get("procs_1_records_per_s")), many = pr.f.Get("procs_n_records_per_s");
    const double cores1 = std::max(1e-9, pr.f.Get("procs_1_cores")), coresn = std::max(1e-9, pr.f.Get("procs_n_cores"));
    printf("  mid tenant: 1 process %.0f records/s on %.2f cores; %u processes %.0f (%.2fx) on %.2f cores, %.2fx the"
           " records per CPU-s; %u during the day 3 load %.0f\n",
           one, cores1, c.procs, many, many / one, coresn, (many / coresn) / (one / cores1), c.procs,
           d3.f.Get("procs_during_load_records_per_s"));
  }
  if (!c.json.empty()) AppendJson(c.json, c, p, ph);
  if (!c.keep) std::filesystem::remove_all(c.dir);
  return 0;
}
