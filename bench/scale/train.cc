// The scale run's training: the records serve.cc logged, rebuilt by
// uih_materializer (1 worker) from read-only stores, in batches of 512 in
// the order they were logged (a user's 16 or 17 records together), for
// three tenants reading the newest 4,096 / 1,024 / 128 engagement events.
// Every rebuilt record is checked against the digest of what its snapshot
// returned (timestamps and items), and must not be flagged.
//
//   one process  per tenant, one pass over every record three times: cold
//                (the store just opened, its files evicted: the first
//                batch opens the generation's files and reads each index
//                whole), warm, and open_cold (the files evicted again, the
//                indexes kept: a long job's reads): records/s, records per
//                CPU-second, bytes read from the files per record;
//   N processes  (--procs, default 8) each rebuilding the 1,024-event
//                tenant over the records in a loop, for --train-seconds,
//                against 1 process alike: aggregate records/s;
//   with a load  the same N while day 3 loads (this process: it publishes a
//                generation and retires one; the readers hold theirs): the
//                load's figures and the readers' aggregate while it ran.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "../check.h"
#include "../files.h"
#include "scale.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace scale {
namespace {

using bench::Check;
constexpr size_t kBatch = 512;
constexpr uint32_t kTenants[3] = {4096, 1024, 128};
const char* const kTenantNames[3] = {"long", "mid", "short"};

struct Records {
  std::vector<std::string> bytes;
  std::vector<std::array<uint64_t, 3>> digest;
};

Records ReadRecords(const Config& c) {
  Records r;
  FILE* f = fopen(RecordsPath(c).c_str(), "rb");
  if (!f) {
    perror("scale_bench: records");
    exit(1);
  }
  uint32_t len;
  while (fread(&len, 4, 1, f) == 1) {
    std::string b(len, '\0');
    std::array<uint64_t, 3> d{};
    if (fread(b.data(), 1, len, f) != len || fread(d.data(), 8, 3, f) != 3) {
      fprintf(stderr, "scale_bench: %s is short\n", RecordsPath(c).c_str());
      exit(1);
    }
    r.bytes.push_back(std::move(b));
    r.digest.push_back(d);
  }
  fclose(f);
  return r;
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return scale::CpuSeconds(u);
}

// A read-only store and a materializer for one tenant; batches rebuilt and
// every record checked.
struct Trainer {
  uih_store* s = nullptr;
  uih_materializer* m = nullptr;
  const Records& r;
  int tenant;
  uih_materialize_stats total{};

  Trainer(const Config& c, const Records& recs, int t) : r(recs), tenant(t) {
    uih_error err{};
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = 1;
    Check(uih_store_open(StorePath(c).c_str(), &o, &s, &err), err, "open read-only");
    uih_projection p{};
    p.ngroups = 1;
    p.groups[0].group = kEngagement;
    p.groups[0].max_length = kTenants[t];
    p.on_mismatch = UIH_MISMATCH_FAIL;
    uih_materializer_opts mo = UIH_MATERIALIZER_OPTS_DEFAULT;
    Check(uih_materializer_create(s, &p, &mo, &m, &err), err, "materializer");
  }
  ~Trainer() {
    uih_materializer_free(m);
    uih_store_close(s);
  }

  void Submit(size_t from) {
    uih_error err{};
    const size_t n = std::min(kBatch, r.bytes.size() - from);
    std::vector<const uint8_t*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; i++) {
      ptrs[i] = reinterpret_cast<const uint8_t*>(r.bytes[from + i].data());
      lens[i] = r.bytes[from + i].size();
    }
    Check(uih_materializer_submit(m, ptrs.data(), lens.data(), n, &err), err, "submit");
  }

  // The next batch's result, checked; its records.
  size_t Take(size_t from) {
    uih_error err{};
    uih_materialized* out = nullptr;
    uih_materialize_stats st{};
    Check(uih_materializer_next(m, &out, &st, &err), err, "rebuild");
    const size_t n = uih_materialized_records(out);
    const uih_mat_group* g = uih_materialized_group(out, 0);
    const int64_t* ts = nullptr;
    const uint64_t* items = nullptr;
    for (uint32_t k = 0; k < g->ncolumns; k++) {
      if (g->columns[k].trait == kTsTrait) ts = static_cast<const int64_t*>(g->columns[k].values);
      if (g->columns[k].trait == kItemTrait) items = static_cast<const uint64_t*>(g->columns[k].values);
    }
    const uint8_t* flags = uih_materialized_flags(out);
    for (size_t i = 0; i < n; i++) {
      const uint64_t off = g->offsets[i], len = g->lengths[i];
      const uint64_t d = XXH3_64bits_withSeed(items + off, len * 8, XXH3_64bits(ts + off, len * 8));
      if (flags[i] || d != r.digest[from + i][tenant]) {
        fprintf(stderr, "scale_bench: record %zu rebuilt for the %s tenant differs from its snapshot (%s)\n",
                from + i, kTenantNames[tenant], uih_materialized_why(out, i));
        exit(1);
      }
    }
    total.records += st.records;
    total.bytes_read += st.bytes_read;
    total.stripes_read += st.stripes_read;
    total.events += st.events;
    uih_materialized_free(out);
    return n;
  }

  // One pass over every record, two batches in flight.
  void Pass() {
    size_t next = 0, taken = 0;
    for (int k = 0; k < 2 && next < r.bytes.size(); k++, next += kBatch) Submit(next);
    while (taken < r.bytes.size()) {
      taken += Take(taken);
      if (next < r.bytes.size()) {
        Submit(next);
        next += kBatch;
      }
    }
  }
};

// What N reader processes share: a start, a stop, their counts and the
// CPU they used from go to stop (microseconds).
struct Shared {
  std::atomic<int> ready, go, stop;
  std::atomic<uint64_t> records, cpu_us;
};

// N processes rebuilding the mid tenant in a loop from go to stop; while
// `during` runs in this process (or for --train-seconds). Aggregate
// records/s over the window; *cores: the CPU-seconds they used per second
// of it (one process may use more than one core: its worker rebuilds while
// its main thread checks the batch before).
double ManyProcesses(const Config& c, const Records& r, uint32_t n, const std::function<void()>& during, double* window,
                     double* cores = nullptr) {
  auto* sh = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (sh) Shared{};
  std::vector<pid_t> kids;
  for (uint32_t k = 0; k < n; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      Trainer t(c, r, 1);
      sh->ready++;
      while (!sh->go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const double c0 = SelfCpuSeconds();
      const size_t batches = (r.bytes.size() + kBatch - 1) / kBatch;
      for (size_t b = (k * 7) % batches; !sh->stop; b = (b + 1) % batches) {
        t.Submit(b * kBatch);
        sh->records += t.Take(b * kBatch);
      }
      sh->cpu_us += static_cast<uint64_t>((SelfCpuSeconds() - c0) * 1e6);
      _exit(0);
    }
    kids.push_back(pid);
  }
  while (sh->ready < static_cast<int>(n)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  sh->go = 1;
  const double t0 = Seconds();
  const uint64_t r0 = sh->records;
  if (during) during();
  else std::this_thread::sleep_for(std::chrono::duration<double>(c.train_seconds));
  *window = Seconds() - t0;
  const uint64_t done = sh->records - r0;
  sh->stop = 1;
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "scale_bench: a training process failed\n");
      exit(1);
    }
  }
  if (cores) *cores = static_cast<double>(sh->cpu_us) / 1e6 / (Seconds() - t0);  // to the last one's stop
  munmap(sh, sizeof(Shared));
  return static_cast<double>(done) / *window;
}

}  // namespace

void TrainPhases(const Config& c, const Plan& p, std::vector<std::pair<std::string, Child>>& out) {
  const Records r = ReadRecords(c);
  out.emplace_back("train", RunChild(c, "training, one process", [&](Figures& f) {
    f.Set("records", static_cast<double>(r.bytes.size()));
    size_t bytes = 0;
    for (const std::string& b : r.bytes) bytes += b.size();
    f.Set("record_bytes", static_cast<double>(bytes) / static_cast<double>(std::max<size_t>(r.bytes.size(), 1)));
    for (int t = 0; t < 3; t++) {
      Trainer tr(c, r, t);
      for (const char* mode : {"cold", "warm", "open_cold"}) {
        if (std::string(mode) != "warm") bench::Evict(StorePath(c));
        tr.total = {};
        const double t0 = Seconds(), c0 = SelfCpuSeconds();
        tr.Pass();
        const double wall = Seconds() - t0, cpu = SelfCpuSeconds() - c0;
        const std::string k = std::string("train_") + kTenantNames[t] + "_" + mode;
        f.Set(k + "_records_per_s", static_cast<double>(tr.total.records) / wall);
        f.Set(k + "_records_per_cpu_s", static_cast<double>(tr.total.records) / cpu);
        f.Set(k + "_bytes_per_record", static_cast<double>(tr.total.bytes_read) / static_cast<double>(tr.total.records));
        f.Set(k + "_events_per_record", static_cast<double>(tr.total.events) / static_cast<double>(tr.total.records));
      }
    }
  }));
  out.emplace_back("procs", RunChild(c, "training, many processes", [&](Figures& f) {
    double w = 0, cores1 = 0, coresn = 0;
    f.Set("procs_1_records_per_s", ManyProcesses(c, r, 1, nullptr, &w, &cores1));
    f.Set("procs_n_records_per_s", ManyProcesses(c, r, c.procs, nullptr, &w, &coresn));
    f.Set("procs_1_cores", cores1);
    f.Set("procs_n_cores", coresn);
    f.Set("procs", c.procs);
  }));
  const int64_t day3_through = kStart + static_cast<int64_t>(c.history_days + 3) * kDay;
  out.emplace_back("load_day3", RunChild(c, "day 3 load, training processes reading", [&](Figures& f) {
    double w = 0;
    const double c0 = SelfCpuSeconds();
    f.Set("procs_during_load_records_per_s",
          ManyProcesses(c, r, c.procs, [&] { LoadInto(c, p.day_dirs[2], day3_through, "", "", f); }, &w));
    f.Set("load_wall_s", w);
    f.Set("load_cpu_s", SelfCpuSeconds() - c0);
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    f.Set("load_rss_mb", static_cast<double>(u.ru_maxrss) / 1024);
  }));
}

}  // namespace scale
