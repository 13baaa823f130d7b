// Online to offline, model-based: what inference saw is what training
// rebuilds. Eight days of a store's life: each day, in time order, events are
// appended to the mutable tier (some of them late, below the watermark, some
// in bursts of one timestamp, requested at exactly that timestamp),
// snapshots are taken at random moments with random specs and their
// records logged, and at the day's end the day is loaded; on the way, one
// load changes the schema (group a drops 'liked' and gains 'score'),
// one erases a user, one rebuilds the value dictionaries (every stripe
// encoded again) and one scrubs an item. After every load, every record
// logged so far rebuilds to exactly the sequences its snapshot returned, or
// is a flagged mismatch exactly when the erasure or the scrub took events
// of its immutable part away; never a different sequence silently. At the
// end, random projections (groups, shorter lengths, trait subsets) of the
// records, in random batches through a materializer, are exactly the
// corresponding slices of what inference saw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "store/store_fixture.h"
#include "uih/key.h"
#include "uih/materialize.h"
#include "uih/store.h"

namespace {

using uih_test::kBase;
using uih_test::kDay;
using uih_test::kSchemaV2;
using uih_test::StoreTest;
using uih_test::WriteFile;

enum : uint16_t { kTs = 1, kItem = 2, kLiked = 3, kScore = 4 };

// An event of either schema version: absent values are -1.
struct Ev {
  int64_t ts;
  uint64_t item;
  int64_t liked = -1, score = -1;
  bool operator==(const Ev& o) const {
    return ts == o.ts && item == o.item && liked == o.liked && score == o.score;
  }
};
std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{" << e.ts << "," << e.item << "," << e.liked << "," << e.score << "}";
}

std::vector<Ev> Events(const uih_batch* b) {
  std::vector<Ev> out;
  auto get = [&](uint16_t trait, uint32_t r) -> int64_t {
    int c = uih_batch_column_index(b, trait);
    if (c < 0 || !uih_column_has(&b->columns[c], r)) return -1;
    return static_cast<int64_t>(uih_column_get_bits(&b->columns[c], r));
  };
  for (uint32_t r = 0; r < b->count; r++)
    out.push_back({get(kTs, r), static_cast<uint64_t>(get(kItem, r)), get(kLiked, r), get(kScore, r)});
  return out;
}

// Group gi of a materialized batch as per-record event lists; a trait not
// projected reads as absent.
std::vector<std::vector<Ev>> Sequences(const uih_materialized* m, uint32_t gi) {
  const uih_mat_group* g = uih_materialized_group(m, gi);
  std::vector<std::vector<Ev>> out(uih_materialized_records(m));
  auto get = [&](uint16_t trait, uint64_t r) -> int64_t {
    for (uint32_t c = 0; c < g->ncolumns; c++) {
      const uih_mat_column& col = g->columns[c];
      if (col.trait != trait) continue;
      uint64_t v = 0;
      memcpy(&v, static_cast<const uint8_t*>(col.values) + r * uih_type_width(static_cast<uih_type>(col.type)),
             uih_type_width(static_cast<uih_type>(col.type)));
      if (!col.present[r]) {
        EXPECT_EQ(0u, v) << "an absent value is zeroed (trait " << trait << ", row " << r << ")";
        return -1;
      }
      return static_cast<int64_t>(v);
    }
    return -1;
  };
  for (size_t i = 0; i < out.size(); i++)
    for (uint64_t r = g->offsets[i]; r < g->offsets[i] + g->lengths[i]; r++)
      out[i].push_back({get(kTs, r), static_cast<uint64_t>(get(kItem, r)), get(kLiked, r), get(kScore, r)});
  return out;
}

// What a projection keeps of an event.
Ev Project(Ev e, const std::set<uint16_t>& traits) {
  if (!traits.count(kTs)) e.ts = -1;
  if (!traits.count(kItem)) e.item = static_cast<uint64_t>(-1);
  if (!traits.count(kLiked)) e.liked = -1;
  if (!traits.count(kScore)) e.score = -1;
  return e;
}

class O2OTest : public StoreTest {
 public:
  // A load of `file` ("" none) through `through`, with a deletions file or a new schema.
  int LoadDay(uih_store* s, const std::string& file, int64_t through, const char* deletes, const char* schema,
              uih_error* err) {
    const char* in[] = {file.c_str()};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    o.deletes = deletes;
    if (schema) {
      o.schema_json = schema;
      o.schema_len = strlen(schema);
      o.schema_origin = "v2.json";
    }
    return uih_load(s, file.empty() ? nullptr : in, file.empty() ? 0 : 1, &o, nullptr, err);
  }
};

struct Logged {
  std::string bytes;
  uint64_t user;
  int64_t request;
  std::map<uint16_t, std::vector<Ev>> seen;      // per group of its spec
  std::map<uint16_t, uint32_t> immutable;        // per group: events of its immutable part
  bool lost = false;                             // an erasure or a scrub took some of them since
  bool erased = false;                           // its user was erased since: nothing of it comes back
};

class Life {
 public:
  static constexpr uint64_t kUsers = 24;
  static constexpr int kDays = 8;
  std::mt19937_64 rng{2026};
  std::vector<Logged> logs;
  uint32_t version = 1;
  size_t bursts = 0;  // appended so far

  explicit Life(O2OTest* t, uih_store* s, std::string dir) : t_(t), s_(s), dir_(std::move(dir)) {}

  // One day: appends, late appends and snapshots in time order, then its load.
  void Day(int d, uih_snapshotter* sn) {
    const int64_t start = kBase + d * kDay, end = start + kDay;
    struct Act {
      int64_t at;
      int kind;  // 0 append, 1 late append, 2 snapshot
      uint64_t user;
      uint16_t group;
    };
    std::vector<Act> acts;
    for (int i = 0; i < 500; i++) acts.push_back({start + static_cast<int64_t>(Rand(kDay)), 0, Rand(kUsers), Rand(3) ? uint16_t{1} : uint16_t{2}});
    if (d > 0)
      for (int i = 0; i < 40; i++) acts.push_back({start + static_cast<int64_t>(Rand(kDay)), 1, Rand(kUsers), Rand(3) ? uint16_t{1} : uint16_t{2}});
    for (int i = 0; i < 100; i++) acts.push_back({start + static_cast<int64_t>(Rand(kDay)), 2, Rand(kUsers), 0});
    std::stable_sort(acts.begin(), acts.end(), [](const Act& a, const Act& b) { return a.at < b.at; });
    std::string csv = version == 1 ? "user_id,group,ts,item,liked\n" : "user_id,group,ts,item,score\n";
    for (const Act& a : acts) {
      if (a.kind == 2) {
        Snapshot(sn, a.user, a.at);
        continue;
      }
      // A burst: 3..10 events of one history at this very moment, maybe a
      // request at exactly their timestamp (windows cut inside bursts).
      if (a.kind == 0 && Rand(12) == 0 && used_.insert({a.user, a.group, a.at}).second) {
        const int n = 3 + static_cast<int>(Rand(8));
        for (int k = 0; k < n; k++) {
          Ev e{a.at, Rand(400)};
          if (a.group == 1 && Rand(2)) (version == 1 ? e.liked : e.score) = version == 1 ? Rand(2) : Rand(100000);
          Append(a.user, a.group, e);
          csv += Row(a.user, a.group, e);
        }
        bursts++;
        if (Rand(2)) Snapshot(sn, a.user, a.at);
        continue;
      }
      // Otherwise distinct timestamps per history.
      int64_t ts;
      do ts = a.kind == 0 ? a.at - static_cast<int64_t>(Rand(static_cast<uint64_t>(std::min<int64_t>(1000, a.at - start + 1)))) : kBase + static_cast<int64_t>(Rand(static_cast<uint64_t>(d * kDay)));
      while (!used_.insert({a.user, a.group, ts}).second || ts < kBase);
      Ev e{ts, Rand(400)};
      if (a.group == 1 && Rand(2)) (version == 1 ? e.liked : e.score) = version == 1 ? Rand(2) : Rand(100000);
      Append(a.user, a.group, e);
      csv += Row(a.user, a.group, e);
    }
    const std::string file = dir_ + "/day" + std::to_string(d) + ".csv";
    WriteFile(file, csv);
    uih_error err{};
    ASSERT_EQ(t_->LoadDay(s_, file, end, nullptr, nullptr, &err), UIH_OK) << uih_error_message(&err);
  }

  // Every record of an erased user logged so far is a mismatch from now
  // on, under every projection, and comes back empty; records whose
  // immutable part held a scrubbed item lose events: their rebuilds must
  // be mismatches from now on.
  void Erase(uint64_t user, int64_t through) {
    const std::string file = dir_ + "/erase.csv";
    WriteFile(file, "user_id\n" + std::to_string(user) + "\n");
    uih_error err{};
    ASSERT_EQ(t_->LoadDay(s_, "", through, file.c_str(), nullptr, &err), UIH_OK) << uih_error_message(&err);
    for (Logged& l : logs)
      if (l.user == user) l.lost = l.erased = true;
  }
  void Scrub(uint64_t item, int64_t through) {
    const std::string file = dir_ + "/scrub.csv";
    WriteFile(file, "item\n" + std::to_string(item) + "\n");
    uih_error err{};
    ASSERT_EQ(t_->LoadDay(s_, "", through, file.c_str(), nullptr, &err), UIH_OK) << uih_error_message(&err);
    for (Logged& l : logs)
      for (auto& [g, n] : l.immutable)
        for (uint32_t k = 0; k < n; k++) l.lost |= l.seen[g][k].item == item;
  }
  // The value of `key` (user, item) found most often in the logged records' immutable parts.
  template <typename Key>
  uint64_t Busiest(Key key) const {
    std::map<uint64_t, size_t> n;
    for (const Logged& l : logs)
      for (auto& [g, len] : l.immutable)
        for (uint32_t k = 0; k < len; k++) n[key(l, g, k)]++;
    return std::max_element(n.begin(), n.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  }
  // Every dictionary built again from the whole history and every stripe
  // written again: no record may notice.
  void RebuildDictionaries(int64_t through) {
    uih_error err{};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    o.rebuild_dicts = 1;
    uih_load_stats st{};
    ASSERT_EQ(uih_load(s_, nullptr, 0, &o, &st, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(st.stripes_copied, 0u);
    EXPECT_GT(st.stripes_written, 0u);
  }
  void ChangeSchema(int64_t through) {
    uih_error err{};
    ASSERT_EQ(t_->LoadDay(s_, "", through, nullptr, kSchemaV2, &err), UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(uih_schema_version(uih_store_schema(s_)), 2u);
    version = 2;
  }

  // Every record logged so far, rebuilt whole: what its snapshot returned
  // (in the traits the schema still has), or a flagged mismatch exactly
  // when it lost events.
  void CheckAll(uih_mismatch_policy policy) {
    uih_projection p{};
    p.ngroups = 2;
    p.groups[0] = {1, 64, 0, {}};
    p.groups[1] = {2, 64, 0, {}};
    p.on_mismatch = policy;
    std::vector<const uint8_t*> ptrs;
    std::vector<size_t> lens;
    size_t lost = 0;
    for (const Logged& l : logs) {
      ptrs.push_back(reinterpret_cast<const uint8_t*>(l.bytes.data()));
      lens.push_back(l.bytes.size());
      lost += l.lost;
    }
    uih_materialized* m = nullptr;
    uih_materialize_stats st{};
    uih_error err{};
    if (policy == UIH_MISMATCH_FAIL && lost > 0) {
      ASSERT_EQ(uih_materialize(s_, ptrs.data(), lens.data(), ptrs.size(), &p, &m, &st, &err), UIH_ERR_CORRUPTION);
      size_t first = 0;
      while (!logs[first].lost) first++;
      EXPECT_NE(std::string(uih_error_message(&err)).find("record " + std::to_string(first) + " "), std::string::npos)
          << uih_error_message(&err);
      return;
    }
    ASSERT_EQ(uih_materialize(s_, ptrs.data(), lens.data(), ptrs.size(), &p, &m, &st, &err), UIH_OK)
        << uih_error_message(&err);
    EXPECT_EQ(st.mismatches, lost);
    const std::set<uint16_t> traits = version == 1 ? std::set<uint16_t>{kTs, kItem, kLiked}
                                                   : std::set<uint16_t>{kTs, kItem, kScore};
    const uint8_t* flags = uih_materialized_flags(m);
    for (uint32_t gi = 0; gi < 2; gi++) {
      const uint16_t g = p.groups[gi].group;
      std::vector<std::vector<Ev>> got = Sequences(m, gi);
      for (size_t i = 0; i < logs.size(); i++) {
        SCOPED_TRACE("record " + std::to_string(i) + " user " + std::to_string(logs[i].user) + " group " +
                     std::to_string(g));
        ASSERT_EQ((flags[i] & UIH_RECORD_MISMATCH) != 0, logs[i].lost);
        ASSERT_EQ((flags[i] & UIH_RECORD_ERASED) != 0, logs[i].erased);
        if (logs[i].erased) {
          EXPECT_TRUE(got[i].empty());
          continue;
        }
        auto it = logs[i].seen.find(g);
        if (it == logs[i].seen.end()) {
          EXPECT_TRUE(flags[i] & UIH_RECORD_NO_GROUP);
          EXPECT_TRUE(got[i].empty());
          continue;
        }
        std::vector<Ev> want;
        for (const Ev& e : it->second) want.push_back(Project(e, traits));
        if (!logs[i].lost) {
          EXPECT_EQ(got[i], want);
        } else if (policy == UIH_MISMATCH_SKIP) {
          EXPECT_TRUE(got[i].empty());
        }
      }
    }
    uih_materialized_free(m);
  }

  // Random projections in random batches, through a materializer: each
  // record's group is the newest max_length of what inference saw, in the
  // projected traits.
  void CheckProjections(int rounds) {
    const std::vector<uint16_t> active = {kTs, kItem, kScore};
    for (int round = 0; round < rounds; round++) {
      uih_projection p{};
      p.ngroups = 1 + Rand(2);
      p.on_mismatch = UIH_MISMATCH_SKIP;
      p.layout = Rand(2) ? UIH_LAYOUT_JAGGED : UIH_LAYOUT_SHARED;
      const uint16_t first = Rand(2) ? 1 : 2;
      for (uint32_t gi = 0; gi < p.ngroups; gi++) {
        uih_projection_group& pg = p.groups[gi];
        pg.group = gi == 0 ? first : static_cast<uint16_t>(3 - first);
        pg.max_length = 1 + static_cast<uint32_t>(Rand(Rand(2) ? 8 : 60));
        std::vector<uint16_t> pool = active;
        if (pg.group == 2) pool.pop_back();  // b has no score
        std::shuffle(pool.begin(), pool.end(), rng);
        pg.ntraits = Rand(pool.size() + 1);  // 0: every active trait
        for (uint32_t t = 0; t < pg.ntraits; t++) pg.traits[t] = pool[t];
      }
      std::vector<size_t> order(logs.size());
      for (size_t i = 0; i < order.size(); i++) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      uih_materializer_opts o = UIH_MATERIALIZER_OPTS_DEFAULT;
      o.threads = 1 + Rand(3);
      o.each_record = Rand(4) == 0;
      uih_materializer* mz = nullptr;
      uih_error err{};
      ASSERT_EQ(uih_materializer_create(s_, &p, &o, &mz, &err), UIH_OK) << uih_error_message(&err);
      std::vector<std::vector<size_t>> batches;
      for (size_t at = 0; at < order.size();) {
        size_t n = std::min(order.size() - at, 1 + Rand(90));
        batches.emplace_back(order.begin() + at, order.begin() + at + n);
        std::vector<const uint8_t*> ptrs;
        std::vector<size_t> lens;
        for (size_t i : batches.back()) {
          ptrs.push_back(reinterpret_cast<const uint8_t*>(logs[i].bytes.data()));
          lens.push_back(logs[i].bytes.size());
        }
        ASSERT_EQ(uih_materializer_submit(mz, ptrs.data(), lens.data(), n, &err), UIH_OK) << uih_error_message(&err);
        at += n;
      }
      for (const std::vector<size_t>& batch : batches) {
        uih_materialized* m = nullptr;
        uih_materialize_stats st{};
        ASSERT_EQ(uih_materializer_next(mz, &m, &st, &err), UIH_OK) << uih_error_message(&err);
        const uint8_t* flags = uih_materialized_flags(m);
        for (uint32_t gi = 0; gi < p.ngroups; gi++) {
          const uih_projection_group& pg = p.groups[gi];
          std::set<uint16_t> traits(pg.traits, pg.traits + pg.ntraits);
          if (traits.empty()) traits = pg.group == 1 ? std::set<uint16_t>{kTs, kItem, kScore} : std::set<uint16_t>{kTs, kItem};
          std::vector<std::vector<Ev>> got = Sequences(m, gi);
          for (size_t k = 0; k < batch.size(); k++) {
            const Logged& l = logs[batch[k]];
            SCOPED_TRACE("round " + std::to_string(round) + " record " + std::to_string(batch[k]) + " group " +
                         std::to_string(pg.group) + " max " + std::to_string(pg.max_length));
            auto it = l.seen.find(pg.group);
            std::vector<Ev> want;
            if (it != l.seen.end() && !(flags[k] & UIH_RECORD_MISMATCH)) {
              const std::vector<Ev>& s = it->second;
              for (size_t j = s.size() > pg.max_length ? s.size() - pg.max_length : 0; j < s.size(); j++)
                want.push_back(Project(s[j], traits));
            }
            // A mismatch only where the record lost events (a short
            // projection may not reach them).
            if (flags[k] & UIH_RECORD_MISMATCH) {
              EXPECT_TRUE(l.lost);
            }
            EXPECT_EQ((flags[k] & UIH_RECORD_ERASED) != 0, l.erased);
            ASSERT_EQ(got[k], want);
          }
        }
        uih_materialized_free(m);
      }
      uih_materializer_free(mz);
    }
  }

 private:
  uint64_t Rand(uint64_t n) { return n ? rng() % n : 0; }

  // The event's line of the day's CSV.
  static std::string Row(uint64_t user, uint16_t group, const Ev& e) {
    return std::to_string(user) + (group == 1 ? ",a," : ",b,") + std::to_string(e.ts) + "," + std::to_string(e.item) +
           "," + (e.liked >= 0 ? std::to_string(e.liked) : e.score >= 0 ? std::to_string(e.score) : "") + "\n";
  }

  void Append(uint64_t user, uint16_t group, const Ev& e) {
    const uih_schema* schema = uih_store_schema(s_);
    uih_batch* b = nullptr;
    uih_error err{};
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(schema, group), 1, nullptr, 0, &b, &err), UIH_OK);
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    auto set = [&](uint16_t trait, int64_t v) {
      int c = uih_batch_column_index(b, trait);
      if (v < 0) return;
      ASSERT_GE(c, 0) << trait;
      uih_column_set_bits(&b->columns[c], row, static_cast<uint64_t>(v));
    };
    set(kTs, e.ts);
    set(kItem, static_cast<int64_t>(e.item));
    set(kLiked, e.liked);
    set(kScore, e.score);
    ASSERT_EQ(uih_mutable_append(uih_test::MutableOf(s_, uih_shard_of(user, uih_store_shards(s_))), user, b, 0, &err),
              UIH_OK)
        << uih_error_message(&err);
    uih_batch_free(b);
  }

  void Snapshot(uih_snapshotter* sn, uint64_t user, int64_t at) {
    uih_snapshot_spec spec{};
    spec.ngroups = 1 + static_cast<uint32_t>(Rand(2));
    spec.groups[0] = {static_cast<uint16_t>(1 + Rand(2)), 1 + static_cast<uint32_t>(Rand(Rand(2) ? 6 : 48))};
    spec.groups[1] = {static_cast<uint16_t>(3 - spec.groups[0].group), 1 + static_cast<uint32_t>(Rand(30))};
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    uih_error err{};
    ASSERT_EQ(uih_snapshot(sn, user, at, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
    Logged l{std::string(reinterpret_cast<const char*>(rec), len), user, at, {}, {}, false};
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(rec, len, &r, &err), UIH_OK) << uih_error_message(&err);
    for (uint32_t k = 0; k < spec.ngroups; k++) l.seen[spec.groups[k].group] = Events(seqs[k]);
    for (uint32_t k = 0; k < r.ngroups; k++) l.immutable[r.groups[k].group] = r.groups[k].length;
    logs.push_back(std::move(l));
  }

  O2OTest* t_;
  uih_store* s_;
  std::string dir_;
  std::set<std::tuple<uint64_t, uint16_t, int64_t>> used_;
};


TEST_F(O2OTest, EveryRecordRebuildsToWhatInferenceSawThroughDaysOfLoadsDeletionsAndASchemaChange) {
  uih_store* s = Init("store", 2);
  ASSERT_NE(s, nullptr);
  uih_snapshotter* sn = nullptr;
  uih_error err{};
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  Life life(this, s, dir_.path());
  for (int d = 0; d < Life::kDays; d++) {
    SCOPED_TRACE("day " + std::to_string(d));
    ASSERT_NO_FATAL_FAILURE(life.Day(d, sn));
    const int64_t through = kBase + (d + 1) * kDay;
    if (d == 1) {
      ASSERT_NO_FATAL_FAILURE(life.ChangeSchema(through));
    } else if (d == 2) {
      ASSERT_NO_FATAL_FAILURE(life.Erase(life.Busiest([](const Logged& l, uint16_t, uint32_t) { return l.user; }), through));
    } else if (d == 3) {
      ASSERT_NO_FATAL_FAILURE(life.RebuildDictionaries(through));
    } else if (d == 4) {
      ASSERT_NO_FATAL_FAILURE(life.Scrub(life.Busiest([](const Logged& l, uint16_t g, uint32_t k) { return l.seen.at(g)[k].item; }), through));
    }
    ASSERT_NO_FATAL_FAILURE(life.CheckAll(d % 3 == 0 ? UIH_MISMATCH_FLAG : d % 3 == 1 ? UIH_MISMATCH_SKIP
                                                                                      : UIH_MISMATCH_FAIL));
  }
  ASSERT_NO_FATAL_FAILURE(life.CheckAll(UIH_MISMATCH_FLAG));
  size_t lost = 0, with_immutable = 0;
  for (const Logged& l : life.logs) {
    lost += l.lost;
    for (auto& [g, n] : l.immutable) with_immutable += n > 0;
  }
  EXPECT_GT(lost, 20u) << "the erasure and the scrub reached records";
  EXPECT_LT(lost, life.logs.size() / 4);
  EXPECT_GT(with_immutable, life.logs.size() / 2) << "most records read the immutable tier";
  EXPECT_GT(life.bursts, 100u) << "bursts of one timestamp, some requested at it";
  ASSERT_NO_FATAL_FAILURE(life.CheckProjections(6));
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

}  // namespace
