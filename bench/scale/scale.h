// bench/scale: one store built large and every operation measured on it.
// What the parts share: the run's settings, the generated inputs' plan,
// and how a phase runs in a process of its own (main.cc says the whole).
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace scale {

constexpr int64_t kDay = 86400000;  // ms
constexpr int64_t kStart = INT64_C(1700000000000);

// The two groups' ids in examples/feed.schema.json, and its traits read
// back: the timestamp and the item id.
constexpr uint16_t kEngagement = 1, kSearch = 2;
constexpr uint16_t kTsTrait = 1, kItemTrait = 2;

struct Config {
  std::string dir = "/tmp/uih_scale";
  // Events generated in all (history and days); those of sessions running
  // past the last day (~7-8%) are left out, so the default keeps > 200 M.
  uint64_t events = 216000000;
  uint64_t users = 0;           // > 0: this many users instead (events follow)
  uint32_t history_days = 30, days = 3;
  uint32_t shards = 2, threads = 2;
  uint64_t memory = uint64_t{512} << 20;  // a load's sort memory
  uint64_t seed = 1;
  uint32_t requests = 2000;      // snapshots per length, thread count, warm or cold
  double append_rate = 20000;    // events/s streamed while snapshots run
  uint32_t train_users = 2000;   // users whose requests are logged, 16 or 17 each
  uint32_t procs = 8;            // training processes at once
  double train_seconds = 8;      // of each timed multi-process window
  std::string json;              // results appended here as one JSON line
  bool keep = false;             // leave DIR behind
  // Phases to run (comma-separated: loads, open, serve, train; default all).
  // Without loads, DIR holds a store a kept run made (--keep 1), and is kept.
  std::string phases = "all";
  std::string schema;            // examples/feed.schema.json
  bool small = false;            // the CTest setting: fewer requests, shorter windows
};

inline bool Runs(const Config& c, const std::string& phase) {
  const std::string list = "," + c.phases + ",";
  return list.find(",all,") != std::string::npos || list.find("," + phase + ",") != std::string::npos;
}

// What generation wrote and what the phases need of it.
struct Plan {
  uint64_t users = 0;              // ids 1..users
  uint64_t half = 0;               // users per generating thread
  uint64_t events = 0, history_events = 0;
  std::vector<uint64_t> day_events;  // per daily file
  std::vector<uint64_t> late;        // of them, late (timestamped the day before)
  int64_t max_ts = 0;
  uint64_t beyond = 0;               // generated past the last day, left out
  uint64_t input_bytes = 0;          // compressed, all files
  double seconds = 0;
  std::string history_dir;
  std::vector<std::string> day_dirs;
  std::string deletes;               // the deletion list of the second day
  std::vector<uint64_t> erased;      // users it erases
};

// The generators' settings for group `group` of a half (thread) `h`.
struct GenSpec {
  uint64_t seed;
  uint64_t first_user;
  double scale;
  uint32_t max_events;
  double gap_s;  // mean seconds between events of a session
};
GenSpec Spec(const Config& c, uint16_t group, uint32_t h, uint64_t half);

// Sizes the run (users per half), writes the inputs (or keeps those of an
// identical earlier run), and returns the plan.
Plan Generate(const Config& c);
// Engagement events per user (index id - 1), from the generators alone.
std::vector<uint32_t> EngagementCounts(const Config& c, const Plan& p);

// A phase in a child process: what it measured (fixed fields plus named
// figures) and what the kernel says of it.
struct Figures {
  std::vector<std::pair<std::string, double>> v;
  void Set(const std::string& k, double x) { v.emplace_back(k, x); }
  double Get(const std::string& k) const;
};
struct Child {
  Figures f;
  double wall = 0, cpu = 0;  // seconds
  double peak_rss_mb = 0;
  double peak_disk_mb = 0;   // the store's bytes at most over before (files once each), sampled as it ran
  double peak_tmp_mb = 0;    // the store's tmp/ at most
};
// Runs fn in a forked process (open files limited to 1,024 there, as a
// deployment's default); the process exits 1 on any failure and so does
// this program.
Child RunChild(const Config& c, const std::string& what, const std::function<void(Figures&)>& fn);

// One load of `input` into the store, in the calling (child) process
// (deletes, schema: "" for none); its figures into f (load.cc).
void LoadInto(const Config& c, const std::string& input, int64_t through, const std::string& deletes,
              const std::string& schema, Figures& f);

// The phases (load.cc, serve.cc, train.cc).
void LoadPhases(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out);
void OpenPhase(const Config& c, std::vector<std::pair<std::string, Child>>& out);
void ServePhase(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out);
void TrainPhases(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out);

std::string StorePath(const Config& c);
std::string RecordsPath(const Config& c);
double Seconds();  // monotonic
double CpuSeconds(const rusage& u);  // user + system

}  // namespace scale
