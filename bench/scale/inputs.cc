// The scale run's inputs: `uih gen`'s generator, two groups, written
// straight into daily zstd-compressed loader-input CSV files in bounded
// memory (one compressor per open file, one user's batch at a time).
//
// Users are heavy-tailed: engagement events per user are Pareto (alpha
// 1.2, scale 10: median ~18) capped at 10^6, so at 200 M events about a
// hundred users have 10^5 and more; search events are Pareto with scale 3,
// capped at 10^5. Two threads generate, each half of the users (its own
// seeds) into files of its own: DIR/input/history/ holds the first
// history_days days (one load), DIR/input/dayK/ day history_days + K - 1.
// An event goes to the file of its day, or with probability 1/50 to the
// next day's (a late event) when that is a daily file; events after the
// last day (sessions running over) are left out. The second day
// comes with a deletion list: every 2,000th user and 5 items seen in the
// inputs. A second run with the same settings keeps the files
// (DIR/input/plan.txt says what they hold).
#include <zstd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "../check.h"
#include "../files.h"
#include "scale.h"
#include "uih/csv.h"
#include "uih/gen.h"
#include "uih/schema.h"

namespace scale {
namespace {

namespace fs = std::filesystem;
using bench::Check;

// A FILE* whose bytes are zstd-compressed into a file (fopencookie).
struct ZstdFile {
  FILE* out = nullptr;
  ZSTD_CCtx* cx = nullptr;
  std::vector<char> buf = std::vector<char>(ZSTD_CStreamOutSize());

  bool Pump(ZSTD_inBuffer* in, ZSTD_EndDirective end) {
    for (;;) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      size_t left = ZSTD_compressStream2(cx, &o, in, end);
      if (ZSTD_isError(left) || fwrite(buf.data(), 1, o.pos, out) != o.pos) return false;
      if (end == ZSTD_e_end ? left == 0 : in->pos == in->size) return true;
    }
  }
  static ssize_t Write(void* c, const char* b, size_t n) {
    ZSTD_inBuffer in{b, n, 0};
    return static_cast<ZstdFile*>(c)->Pump(&in, ZSTD_e_continue) ? static_cast<ssize_t>(n) : -1;
  }
  static int Close(void* c) {
    auto* z = static_cast<ZstdFile*>(c);
    ZSTD_inBuffer in{nullptr, 0, 0};
    bool ok = z->Pump(&in, ZSTD_e_end);
    ok = fclose(z->out) == 0 && ok;
    ZSTD_freeCCtx(z->cx);
    delete z;
    return ok ? 0 : EOF;
  }
};

FILE* OpenZstd(const std::string& path) {
  auto* z = new ZstdFile;
  z->out = fopen(path.c_str(), "wb");
  z->cx = ZSTD_createCCtx();
  if (!z->out || !z->cx) {
    fprintf(stderr, "scale_bench: creating %s: %s\n", path.c_str(), strerror(errno));
    exit(1);
  }
  ZSTD_CCtx_setParameter(z->cx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(z->cx, ZSTD_c_windowLog, 18);  // 66 open files per thread: small windows
  cookie_io_functions_t io{nullptr, ZstdFile::Write, nullptr, ZstdFile::Close};
  FILE* f = fopencookie(z, "w", io);
  setvbuf(f, nullptr, _IOFBF, 1 << 16);
  return f;
}

std::string Key(const Config& c) {
  std::ostringstream k;
  k << "events=" << c.events << " users=" << c.users << " seed=" << c.seed << " history_days=" << c.history_days
    << " days=" << c.days << " format=3";
  return k.str();
}

const char* GroupName(uint16_t g) { return g == kEngagement ? "engagement" : "search"; }

// One thread's half of the users, both groups, into its own files.
struct HalfOut {
  uint64_t events = 0, history = 0, beyond = 0;
  std::vector<uint64_t> day, late;
  int64_t max_ts = INT64_MIN;
  std::vector<uint64_t> items;  // a few item ids seen, for the deletion list
};

void WriteHalf(const Config& c, const uih_schema* schema, const Plan& p, uint32_t h, HalfOut* out) {
  const uint32_t total_days = c.history_days + c.days;
  out->day.assign(c.days, 0);
  out->late.assign(c.days, 0);
  std::mt19937_64 rng(c.seed * 1000003 + h);
  uih_error err{};
  for (uint16_t gid : {kEngagement, kSearch}) {
    const uih_group* g = uih_schema_group_by_id(schema, gid);
    GenSpec sp = Spec(c, gid, h, p.half);
    uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
    o.seed = sp.seed;
    o.users = p.half;
    o.first_user_id = sp.first_user;
    o.start_ts = kStart;
    o.days = total_days;
    o.activity_scale = sp.scale;
    o.max_events = sp.max_events;
    o.session_gap_s = sp.gap_s;
    uih_gen* gen = nullptr;
    Check(uih_gen_create(g, &o, &gen, &err), err, "generator");
    uih_batch* b = nullptr;
    Check(uih_batch_create(g, g->stripe_events, nullptr, 0, &b, &err), err, "batch");
    // Files: the history days', then the daily ones.
    std::vector<FILE*> files(total_days);
    for (uint32_t d = 0; d < total_days; d++) {
      char name[64];
      snprintf(name, sizeof name, "part%u-%s-day%03u.csv.zst", h, GroupName(gid), d);
      std::string path = d < c.history_days ? p.history_dir + "/" + name : p.day_dirs[d - c.history_days] + "/" + name;
      files[d] = OpenZstd(path);
      Check(uih_csv_write_header(files[d], b, &err), err, "writing a header");
    }
    const int ts_col = uih_batch_column_index(b, kTsTrait);
    const int item_col = uih_batch_column_index(b, kItemTrait);
    for (;;) {
      uint64_t user;
      Check(uih_gen_next(gen, &user, b, &err), err, "generator");
      if (b->count == 0) break;
      for (uint32_t r = 0; r < b->count; r++) {
        const int64_t ts = static_cast<int64_t>(uih_column_get_bits(&b->columns[ts_col], r));
        if (ts >= kStart + static_cast<int64_t>(total_days) * kDay) {  // sessions running past the last day
          out->beyond++;
          continue;
        }
        uint32_t d = static_cast<uint32_t>(std::max<int64_t>((ts - kStart) / kDay, 0));
        if (d + 1 >= c.history_days && d + 1 < total_days && rng() % 50 == 0) {
          d++;
          out->late[d - c.history_days]++;
        }
        Check(uih_csv_write_row(files[d], user, b, r, &err), err, "writing a row");
        if (d < c.history_days) out->history++;
        else out->day[d - c.history_days]++;
        out->max_ts = std::max(out->max_ts, ts);
        out->events++;
        if (gid == kEngagement && item_col >= 0 && out->items.size() < 5 && user % 9973 == 7 && r == 0)
          out->items.push_back(uih_column_get_bits(&b->columns[item_col], r));
      }
    }
    for (FILE* f : files)
      if (fclose(f) != 0) {
        fprintf(stderr, "scale_bench: writing the inputs failed (disk full?)\n");
        exit(1);
      }
    uih_batch_free(b);
    uih_gen_free(gen);
  }
}

void SavePlan(const std::string& path, const std::string& key, const Plan& p) {
  std::ofstream f(path);
  f << key << "\n" << p.users << " " << p.half << " " << p.events << " " << p.history_events << " " << p.max_ts << " "
    << p.input_bytes << " " << p.seconds << " " << p.beyond << "\n";
  for (size_t d = 0; d < p.day_events.size(); d++) f << p.day_events[d] << " " << p.late[d] << "\n";
  f << p.erased.size();
  for (uint64_t u : p.erased) f << " " << u;
  f << "\n";
}

bool LoadPlan(const std::string& path, const std::string& key, Plan* p, uint32_t days) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line) || line != key) return false;
  f >> p->users >> p->half >> p->events >> p->history_events >> p->max_ts >> p->input_bytes >> p->seconds >> p->beyond;
  p->day_events.assign(days, 0);
  p->late.assign(days, 0);
  for (uint32_t d = 0; d < days; d++) f >> p->day_events[d] >> p->late[d];
  size_t n = 0;
  f >> n;
  p->erased.assign(n, 0);
  for (auto& u : p->erased) f >> u;
  return static_cast<bool>(f);
}

}  // namespace

GenSpec Spec(const Config& c, uint16_t group, uint32_t h, uint64_t half) {
  const uint64_t seed = c.seed * 7919 + h * 31 + group;
  // Gaps inside a session: 2 s for feed impressions, 10 s for searches, so
  // that the heaviest users' events fit the days.
  return group == kEngagement ? GenSpec{seed, 1 + h * half, 10.0, 1000000, 2.0}
                              : GenSpec{seed, 1 + h * half, 3.0, 100000, 10.0};
}

std::vector<uint32_t> EngagementCounts(const Config& c, const Plan& p) {
  uih_error err{};
  uih_schema* schema = nullptr;
  Check(uih_schema_load(c.schema.c_str(), &schema, &err), err, "schema");
  std::vector<uint32_t> n(p.users);
  for (uint32_t h = 0; h < 2; h++) {
    GenSpec sp = Spec(c, kEngagement, h, p.half);
    uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
    o.seed = sp.seed;
    o.users = p.half;
    o.activity_scale = sp.scale;
    o.max_events = sp.max_events;
    o.session_gap_s = sp.gap_s;
    uih_gen* gen = nullptr;
    Check(uih_gen_create(uih_schema_group_by_id(schema, kEngagement), &o, &gen, &err), err, "generator");
    for (uint64_t i = 0; i < p.half; i++) n[h * p.half + i] = uih_gen_user_events(gen, i);
    uih_gen_free(gen);
  }
  uih_schema_free(schema);
  return n;
}

Plan Generate(const Config& c) {
  Plan p;
  const std::string in = c.dir + "/input";
  p.history_dir = in + "/history";
  for (uint32_t d = 0; d < c.days; d++) p.day_dirs.push_back(in + "/day" + std::to_string(d + 1));
  p.deletes = in + "/day2-deletes.csv";
  const std::string key = Key(c);
  if (LoadPlan(in + "/plan.txt", key, &p, c.days)) {
    printf("inputs: kept from an earlier run with the same settings (%s)\n", in.c_str());
    return p;
  }
  fs::remove_all(in);
  fs::create_directories(p.history_dir);
  for (auto& d : p.day_dirs) fs::create_directories(d);
  uih_error err{};
  uih_schema* schema = nullptr;
  Check(uih_schema_load(c.schema.c_str(), &schema, &err), err, "schema");
  // Users per half: as many as the events asked for need (both groups).
  if (c.users) {
    p.half = (c.users + 1) / 2;
  } else {
    uih_gen *ge = nullptr, *gs = nullptr;
    for (uint16_t gid : {kEngagement, kSearch}) {
      GenSpec sp = Spec(c, gid, 0, 0);
      uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
      o.seed = sp.seed;
      o.users = UINT32_MAX;
      o.activity_scale = sp.scale;
      o.max_events = sp.max_events;
      o.session_gap_s = sp.gap_s;
      Check(uih_gen_create(uih_schema_group_by_id(schema, gid), &o, gid == kEngagement ? &ge : &gs, &err), err,
            "generator");
    }
    uint64_t total = 0;
    while (2 * total < c.events) {
      total += uih_gen_user_events(ge, p.half) + uih_gen_user_events(gs, p.half);
      p.half++;
    }
    uih_gen_free(ge);
    uih_gen_free(gs);
  }
  p.users = 2 * p.half;
  const double t0 = Seconds();
  HalfOut halves[2];
  std::thread t1([&] { WriteHalf(c, schema, p, 1, &halves[1]); });
  WriteHalf(c, schema, p, 0, &halves[0]);
  t1.join();
  p.seconds = Seconds() - t0;
  p.day_events.assign(c.days, 0);
  p.late.assign(c.days, 0);
  p.max_ts = INT64_MIN;
  for (auto& h : halves) {
    p.events += h.events;
    p.history_events += h.history;
    for (uint32_t d = 0; d < c.days; d++) p.day_events[d] += h.day[d], p.late[d] += h.late[d];
    p.max_ts = std::max(p.max_ts, h.max_ts);
    p.beyond += h.beyond;
  }
  // The second day's deletion list: users and items.
  std::ofstream del(p.deletes);
  del << "user_id,item_id\n";
  for (uint64_t u = 1000; u <= p.users; u += 2000) {
    del << u << ",\n";
    p.erased.push_back(u);
  }
  for (auto& h : halves)
    for (uint64_t item : h.items) del << "," << item << "\n";
  del.close();
  p.input_bytes = bench::BytesUnder(in);
  SavePlan(in + "/plan.txt", key, p);
  uih_schema_free(schema);
  return p;
}

}  // namespace scale
