// The store and the daily loader (uih/store.h, uih/loader.h): a model-based
// test of days of loads against an in-memory model of the stripe rule,
// determinism (spilled, threaded and in-memory loads give the same bytes),
// bad inputs with their messages, and the store's recovery on open.
#include <gtest/gtest.h>
#include <zlib.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "store/store_fixture.h"
#include "file/random_access_file_reader.h"
#include "options/cf_options.h"
#include "rocksdb/db.h"
#include "store_internal.h"
#include "table/block_based/block_based_table_builder.h"
#include "table/meta_blocks.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/store.h"
#include "uih/stripe.h"
#include "uih/table.h"

namespace {

using uih_test::kBase;
using uih_test::kDay;
using uih_test::kHeader;
using uih_test::kSchema;
using uih_test::kSchemaV2;
using uih_test::Scan;
using uih_test::StoreTest;
using uih_test::WriteFile;
using uih_test::WriteGzip;
using uih_test::WriteZstd;

struct Ev {
  int64_t ts;
  uint64_t item;
  int liked;  // -1 absent (always, from schema version 2 on)
  uint32_t arrival;
  int64_t score = -1;  // -1 absent (always, before schema version 2)
  // The loader's order: ts, then the presence bits, then the values (a
  // schema has liked or score, never both).
  auto Order() const { return std::make_tuple(ts, liked >= 0 || score >= 0, item, liked, score); }
  bool SameEvent(const Ev& o) const { return ts == o.ts && item == o.item && liked == o.liked && score == o.score; }
  bool operator==(const Ev& o) const { return SameEvent(o) && arrival == o.arrival; }
};
std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{" << e.ts << "," << e.item << "," << e.liked << "," << e.score << ",gen " << e.arrival << "}";
}

// What a load's --delete names.
struct Deletions {
  std::set<uint64_t> users, items;
  std::set<std::pair<uint64_t, uint64_t>> pairs;
  bool Erases(uint64_t user, const Ev& e) const {
    return users.count(user) || items.count(e.item) || pairs.count({user, e.item});
  }
  bool Empty() const { return users.empty() && items.empty() && pairs.empty(); }
};

using History = std::pair<uint64_t, uint16_t>;  // user, group
using Stripes = std::vector<std::vector<Ev>>;

// The stripe rule of uih/loader.h, spelled out plainly.
struct Model {
  std::map<History, Stripes> h;
  std::map<History, std::vector<bool>> untouched;  // per stripe, after the last load

  static uint32_t StripeEvents(uint16_t group) { return group == 1 ? 4 : 3; }

  static void Cut(const std::vector<Ev>& rows, uint32_t se, Stripes* out) {
    size_t start = 0;
    while (start < rows.size()) {
      size_t end = rows.size() - start <= se ? rows.size() : start + se;
      if (end < rows.size()) {
        while (end > start && rows[end].ts == rows[end - 1].ts) end--;
        if (end == start)  // a burst: every event of the timestamp, one stripe
          while (end < rows.size() && rows[end].ts == rows[start].ts) end++;
      }
      ASSERT_GT(end, start);
      out->emplace_back(rows.begin() + static_cast<long>(start), rows.begin() + static_cast<long>(end));
      start = end;
    }
  }

  // `del`: what the load deletes; `upgrade`: the load brings schema
  // version 2 (group a's stripes are written again without 'liked').
  void Load(const std::map<History, std::vector<Ev>>& day, uint32_t gen, int64_t horizon,
            const Deletions& del = Deletions(), bool upgrade = false) {
    untouched.clear();
    if (upgrade)  // what version 1 stored of 'liked' is gone
      for (auto& [k, stripes] : h)
        for (auto& stripe : stripes)
          for (Ev& e : stripe) e.liked = -1;
    std::set<History> keys;
    for (auto& [k, v] : h) keys.insert(k);
    for (auto& [k, v] : day) keys.insert(k);
    for (const History& k : keys) {
      Stripes& old = h[k];
      std::vector<Ev> fresh;
      auto it = day.find(k);
      if (it != day.end())
        for (Ev e : it->second) {
          bool stored = false;
          for (auto& s : old)
            for (auto& o : s) stored |= o.SameEvent(e);
          for (auto& f : fresh) stored |= f.SameEvent(e);
          if (stored || e.ts < horizon || del.Erases(k.first, e)) continue;
          e.arrival = gen;
          fresh.push_back(e);
        }
      std::sort(fresh.begin(), fresh.end(), [](const Ev& a, const Ev& b) { return a.Order() < b.Order(); });
      std::vector<std::vector<Ev>> assigned(std::max<size_t>(old.size(), 1));
      for (const Ev& e : fresh) {
        size_t i = 0;
        while (i + 1 < old.size() && old[i + 1].front().ts <= e.ts) i++;
        assigned[i].push_back(e);
      }
      Stripes next;
      std::vector<bool> kept;
      if (old.empty() && !fresh.empty()) {
        Cut(fresh, StripeEvents(k.second), &next);
        kept.assign(next.size(), false);
      }
      for (size_t i = 0; i < old.size(); i++) {
        int64_t lo = old[i].front().ts, hi = old[i].back().ts;
        if (hi < horizon && assigned[i].empty()) continue;
        bool hit = false, stale = upgrade && k.second == 1;
        for (const Ev& e : old[i]) hit |= del.Erases(k.first, e);
        if (assigned[i].empty() && lo >= horizon && !hit && !stale) {
          next.push_back(old[i]);
          kept.push_back(true);
          continue;
        }
        // Stored events keep their order; new ones go after the stored
        // ones of their timestamp (rule 4), in their own order.
        std::vector<Ev> rows;
        for (const Ev& e : old[i])
          if (e.ts >= horizon && !del.Erases(k.first, e)) rows.push_back(e);
        for (const Ev& e : assigned[i]) {
          auto at = std::upper_bound(rows.begin(), rows.end(), e.ts, [](int64_t t, const Ev& r) { return t < r.ts; });
          rows.insert(at, e);
        }
        size_t before = next.size();
        Cut(rows, StripeEvents(k.second), &next);
        kept.resize(kept.size() + (next.size() - before), false);
      }
      if (next.empty()) {
        h.erase(k);
      } else {
        old = next;
        untouched[k] = kept;
      }
    }
  }
};

// A row under the header user_id,group,ts,item,liked (version 1) or
// user_id,group,ts,item,score (version 2).
std::string CsvRow(const History& k, const Ev& e, int version = 1) {
  std::string s = std::to_string(k.first) + "," + (k.second == 1 ? "a" : "b") + "," + std::to_string(e.ts) + "," +
                  std::to_string(e.item) + ",";
  if (version == 1 && e.liked >= 0) s += std::to_string(e.liked);
  if (version == 2 && e.score >= 0) s += std::to_string(e.score);
  return s + "\n";
}

// A batch's rows as events (arrival 0 when the batch has no arrival column).
std::vector<Ev> BatchEvents(const uih_batch* b) {
  std::vector<Ev> out;
  int liked = uih_batch_column_index(b, 3), score = uih_batch_column_index(b, 4);
  int arrival = uih_batch_column_index(b, UIH_TRAIT_ARRIVAL);
  for (uint32_t r = 0; r < b->count; r++) {
    Ev e;
    e.score = score >= 0 && uih_column_has(&b->columns[score], r)
                  ? static_cast<int64_t>(uih_column_get_bits(&b->columns[score], r))
                  : -1;
    e.ts = static_cast<int64_t>(uih_column_get_bits(&b->columns[uih_batch_column_index(b, 1)], r));
    e.item = uih_column_get_bits(&b->columns[uih_batch_column_index(b, 2)], r);
    e.liked = liked >= 0 && uih_column_has(&b->columns[liked], r)
                  ? static_cast<int>(uih_column_get_bits(&b->columns[liked], r))
                  : -1;
    e.arrival = arrival >= 0 ? static_cast<uint32_t>(uih_column_get_bits(&b->columns[arrival], r)) : 0;
    out.push_back(e);
  }
  return out;
}

// Item ids spread over 40 bits, as hashed ids are: the loader's value
// dictionaries store the popular ones as ranks.
uint64_t Item(uint64_t r) { return (r * 0x9e3779b97f4aull) & ((1ull << 40) - 1); }

// The scanned generation's value dictionaries, parsed (null: none).
using ContextPtr = std::unique_ptr<uih_stripe_context, void (*)(uih_stripe_context*)>;
ContextPtr ScanContext(uih_store* s, uint32_t shard) {
  uih_store_scan* sc = nullptr;
  uih_stripe_context* ctx = nullptr;
  EXPECT_EQ(uih_store_scan_open(s, shard, 0, &sc, nullptr), UIH_OK);
  const uint8_t* p;
  size_t n;
  uih_error err{};
  EXPECT_EQ(uih_store_scan_dicts(sc, &p, &n, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(uih_stripe_context_parse(p, n, 0, &ctx, &err), UIH_OK) << uih_error_message(&err);
  uih_store_scan_close(sc);
  return ContextPtr(ctx, uih_stripe_context_free);
}

std::vector<Ev> DecodeStripe(const uih_schema* schema, uint16_t group, const std::string& bytes,
                             const uih_stripe_context* ctx = nullptr) {
  const uih_group* g = uih_schema_group_by_id(schema, group);
  std::vector<uint16_t> ids;
  for (uint32_t t = 0; t < g->ntraits; t++) ids.push_back(g->traits[t].id);
  ids.push_back(UIH_TRAIT_ARRIVAL);
  uih_batch* b = nullptr;
  uih_stripe_decoder* d = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_batch_create(g, UIH_STRIPE_EVENTS_MAX, ids.data(), static_cast<uint32_t>(ids.size()), &b, &err), UIH_OK);
  EXPECT_EQ(uih_stripe_decoder_create(&d, &err), UIH_OK);
  uih_stripe_decoder_set_context(d, ctx);
  EXPECT_EQ(uih_stripe_decode(d, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, UIH_DECODE_TO_END,
                              UIH_DECODE_VERIFY_CHECKSUM, b, &err),
            UIH_OK)
      << uih_error_message(&err);
  std::vector<Ev> out = BatchEvents(b);
  uih_stripe_decoder_free(d);
  uih_batch_free(b);
  return out;
}

// Days of events — out of order, late, repeated, already stored, a heavy
// user, bursts of one timestamp longer than a stripe (new, at a stored
// stripe's first time, growing a stored burst, with deleted items), an
// empty day, a lookback — through a sequence of loads; after each,
// every history's stripes are exactly the model's (boundaries, order,
// arrival generations), untouched stripes are the previous generation's
// bytes, and reads through the store give the model's events.
class StoreModel : public StoreTest, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(StoreModel, DaysOfLoadsMatchTheStripeRule) {
  const uint32_t nshards = GetParam();
  uih_store* s = Init("store", nshards);
  ASSERT_NE(s, nullptr);
  const uih_schema* schema = uih_store_schema(s);
  Model model;
  std::mt19937_64 rng(42 + nshards);
  std::vector<std::pair<History, Ev>> all;  // every event ever sent
  std::vector<std::map<std::string, std::string>> previous(nshards);
  uint64_t dict_bytes = 0, dicts_built = 0, shared = 0;  // shared: stripes whose item ids are ranks, all days
  std::map<History, std::vector<int64_t>> burst_times;     // the times bursts were sent at
  uint64_t bursts = 0;                                     // stripes holding one, all days
  for (uint32_t day = 0; day < 7; day++) {
    const int version = day >= 5 ? 2 : 1;  // day 5's load brings schema version 2
    std::map<History, std::vector<Ev>> sent;
    std::string text = version == 1 ? "user_id,group,ts,item,liked\n" : "user_id,group,ts,item,score\n";
    auto send = [&](const History& k, const Ev& e) {
      sent[k].push_back(e);
      all.push_back({k, e});
      text += CsvRow(k, e, version);
    };
    int users = day == 3 ? 2 : 40;  // day 3 is nearly empty
    for (int u = 1; u <= users; u++) {
      int n = u == 7 ? 60 : static_cast<int>(rng() % 9);
      for (int i = 0; i < n; i++) {
        History k{static_cast<uint64_t>(u) * 1000003, static_cast<uint16_t>(rng() % 10 < 7 ? 1 : 2)};
        Ev e{kBase + day * kDay + static_cast<int64_t>(rng() % kDay), Item(rng() % 100), -1, 0};
        if (rng() % 8 == 0 && day > 0) e.ts -= static_cast<int64_t>(1 + rng() % day) * kDay;  // late
        if (rng() % 10 == 0) e.ts = kBase + day * kDay + static_cast<int64_t>(rng() % 50);    // crowded times
        if (k.second == 1 && version == 1) e.liked = static_cast<int>(rng() % 3) - 1;
        if (k.second == 1 && version == 2) e.score = rng() % 3 ? static_cast<int64_t>(rng() % 1000) : -1;
        send(k, e);
        if (rng() % 10 == 0) send(k, e);  // repeated within the day
      }
    }
    // Bursts: 4..12 events at one timestamp for users 11 and 12 (stripes
    // hold 4 and 3), at a new time, at the first time of one of their
    // stored stripes, or at a burst sent before (the burst grows); some
    // with the items day 4 deletes.
    for (uint64_t u : {11u, 12u})
      for (uint16_t g : {uint16_t{1}, uint16_t{2}}) {
        if (rng() % 4 == 0 || day == 3) continue;
        History k{u * 1000003, g};
        int64_t at = kBase + day * kDay + static_cast<int64_t>(rng() % kDay);
        auto m = model.h.find(k);
        if (m != model.h.end() && rng() % 3 == 0) at = m->second[rng() % m->second.size()].front().ts;
        else if (!burst_times[k].empty() && rng() % 2) at = burst_times[k][rng() % burst_times[k].size()];
        burst_times[k].push_back(at);
        const int n = 4 + static_cast<int>(rng() % 9);
        for (int i = 0; i < n; i++) {
          Ev e{at, Item(i % 5 == 0 ? 3 : 10 + rng() % 90), -1, 0};
          if (g == 1 && version == 1) e.liked = static_cast<int>(rng() % 2);
          if (g == 1 && version == 2) e.score = static_cast<int64_t>(rng() % 1000);
          send(k, e);
        }
      }
    for (int i = 0; i < 10 && !all.empty(); i++) {  // already stored
      auto [k, e] = all[rng() % all.size()];
      if (version == 2) e.liked = -1;
      send(k, e);
    }
    std::string path = dir_ / ("day" + std::to_string(day) + (day == 1 ? ".csv.gz" : day == 2 ? ".zst" : ".csv"));
    if (day == 1) WriteGzip(path, text);
    else if (day == 2) WriteZstd(path, text);
    else WriteFile(path, text);

    // Day 4 deletes a user, two items everywhere and a (user, item) pair.
    Deletions del;
    std::string del_path = dir_ / "delete.csv";
    if (day == 4) {
      del.users = {5 * 1000003};
      del.items = {Item(3), Item(4)};
      for (auto& [h, stripes] : model.h)
        if (h.first == 9 * 1000003) del.pairs.insert({h.first, stripes.back().back().item});
      std::string d = "user_id,item\n5000015,\n," + std::to_string(Item(3)) + "\n," + std::to_string(Item(4)) + "\n";
      for (auto& [u, item] : del.pairs) d += std::to_string(u) + "," + std::to_string(item) + "\n";
      WriteFile(del_path, d);
    }

    int64_t through = kBase + (day + 1) * kDay;
    int64_t lookback = day >= 5 ? 4 * kDay : 0;
    uih_error err{};
    uih_load_stats st{};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    o.lookback = lookback;
    o.threads = 2;
    if (day == 4) o.deletes = del_path.c_str();
    if (day == 5) {
      o.schema_json = kSchemaV2;
      o.schema_len = strlen(kSchemaV2);
      o.schema_origin = "t2.json";
    }
    const char* in[] = {path.c_str()};
    ASSERT_EQ(uih_load(s, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
    schema = uih_store_schema(s);
    EXPECT_EQ(uih_schema_version(schema), static_cast<uint32_t>(version));
    EXPECT_EQ(st.schema_version, static_cast<uint32_t>(version));
    uint32_t gen = day + 1;
    model.Load(sent, gen, lookback ? through - lookback : INT64_MIN, del, day == 5);
    EXPECT_EQ(st.shards, nshards);
    if (day == 4) {
      EXPECT_GT(st.deleted, 0u);
      EXPECT_EQ(st.delete_users, 1u);
      EXPECT_EQ(st.delete_items, 2u);
    } else {
      EXPECT_EQ(st.deleted, 0u);
    }
    if (day == 5) {
      EXPECT_GT(st.stripes_upgraded, 0u);
    }
    // A load builds a dictionary for a shard's trait that has none (item in
    // groups a and b, from version 2 on score) when its rows repeat values
    // and it pays (uih_value_dict_pays); later loads keep it.
    dicts_built += st.dicts_built;
    EXPECT_LE(dicts_built, 3u * nshards) << "a dictionary is built once per shard and trait";
    EXPECT_GE(st.dict_bytes, dict_bytes) << "dictionaries are kept";
    dict_bytes = st.dict_bytes;

    // The generation, stripe by stripe, against the model.
    std::map<History, Stripes> got;
    std::map<History, std::vector<std::string>> keys;
    uint64_t events = 0;
    for (uint32_t sh = 0; sh < nshards; sh++) {
      auto scan = Scan(s, sh);
      ContextPtr ctx = ScanContext(s, sh);
      for (auto& [k, v] : scan) {
        uih_key key;
        ASSERT_EQ(uih_key_decode(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &key, nullptr), UIH_OK);
        EXPECT_EQ(uih_shard_of(key.user_id, nshards), sh);
        History h{key.user_id, key.group};
        got[h].push_back(DecodeStripe(schema, key.group, v, ctx.get()));
        uih_stripe_column_info item{};
        ASSERT_EQ(uih_stripe_column_at(reinterpret_cast<const uint8_t*>(v.data()), v.size(), 1, &item, nullptr), UIH_OK);
        shared += (item.encoding & UIH_ENC_DICTIONARY) != 0;
        keys[h].push_back(k);
        EXPECT_EQ(got[h].back().front().ts, key.ts) << "a stripe's key is its first event's time";
        const std::vector<Ev>& sp = got[h].back();
        EXPECT_TRUE(sp.size() <= Model::StripeEvents(key.group) || sp.front().ts == sp.back().ts)
            << "only a burst of one timestamp is longer than stripe_events";
        bursts += sp.size() > Model::StripeEvents(key.group);
        events += got[h].back().size();
      }
      // Stripes the model left untouched are the previous generation's bytes.
      for (auto& [h, kept] : model.untouched) {
        if (uih_shard_of(h.first, nshards) != sh || !keys.count(h)) continue;
        for (size_t i = 0; i < kept.size() && i < keys[h].size(); i++)
          if (kept[i]) {
            ASSERT_TRUE(previous[sh].count(keys[h][i])) << "day " << day << " user " << h.first;
            EXPECT_EQ(previous[sh][keys[h][i]], scan[keys[h][i]]) << "an untouched stripe was rewritten";
          }
      }
      previous[sh] = scan;
    }
    ASSERT_EQ(got.size(), model.h.size()) << "day " << day;
    for (auto& [h, stripes] : model.h) {
      ASSERT_TRUE(got.count(h)) << "user " << h.first << " group " << h.second;
      ASSERT_EQ(got[h], stripes) << "day " << day << ": user " << h.first << " group " << h.second;
    }
    EXPECT_EQ(st.events, events);
    uint64_t copied = 0;
    for (auto& [h, kept] : model.untouched) copied += static_cast<uint64_t>(std::count(kept.begin(), kept.end(), true));
    EXPECT_EQ(st.stripes_copied, copied);

    // Reads through the store: the model's events in a window.
    for (auto& [h, stripes] : model.h) {
      std::vector<Ev> flat;
      for (auto& stp : stripes) flat.insert(flat.end(), stp.begin(), stp.end());
      int64_t from = flat[flat.size() / 3].ts, to = flat[2 * flat.size() / 3].ts;
      uih_batch* b = nullptr;
      ASSERT_EQ(uih_store_read(s, h.first, h.second, from, to, UIH_TIER_ALL, 0, &b, &err), UIH_OK)
          << uih_error_message(&err);
      size_t want = static_cast<size_t>(std::count_if(flat.begin(), flat.end(), [&](const Ev& e) { return e.ts >= from && e.ts <= to; }));
      EXPECT_EQ(b->count, want);
      const int64_t* ts = static_cast<const int64_t*>(b->columns[uih_batch_column_index(b, 1)].values);
      EXPECT_TRUE(std::is_sorted(ts, ts + b->count));
      uih_batch_free(b);
    }
  }
  // The generations kept: the current one and the one before (keep = 2).
  for (uint32_t sh = 0; sh < nshards; sh++) {
    uih_generation gens[4];
    size_t n;
    uint32_t cur;
    uih_error err{};
    ASSERT_EQ(uih_store_generations(s, sh, gens, 4, &n, &cur, &err), UIH_OK);
    EXPECT_EQ(cur, 7u);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(gens[0].generation, 6u);
    EXPECT_EQ(gens[1].parent, 6u);
    EXPECT_EQ(gens[1].through, kBase + 7 * kDay);
    EXPECT_EQ(gens[1].horizon, kBase + 3 * kDay);
  }
  EXPECT_GE(shared, 10u) << "stripes with their item ids as ranks";
  EXPECT_GE(bursts, 10u) << "stripes holding a burst";
  // The dictionaries hold values the data has, as columns hold them (item
  // ids; version 2's score).
  std::set<uint64_t> known;
  for (uint64_t r = 0; r < 100; r++) known.insert(Item(r));
  uint32_t all_item_dicts = 0;
  for (uint32_t sh = 0; sh < nshards; sh++) {
    ContextPtr ctx = ScanContext(s, sh);
    uint32_t item_dicts = 0;
    for (size_t i = 0; i < uih_stripe_context_count(ctx.get()); i++) {
      const uih_value_dict* d = uih_stripe_context_at(ctx.get(), i);
      const bool score = uih_value_dict_trait(d) == 4;
      item_dicts += !score && uih_value_dict_entries(d) > 0;
      for (uint32_t r = 0; r < uih_value_dict_entries(d); r++) {
        const uint64_t v = uih_value_dict_value(d, r);
        if (score) {
          EXPECT_LT(v, 1000u) << "shard " << sh << " rank " << r;
        } else {
          EXPECT_TRUE(known.count(v)) << "shard " << sh << " trait " << uih_value_dict_trait(d) << " rank " << r;
        }
      }
    }
    all_item_dicts += item_dicts;
  }
  // (A shard whose few rows make a dictionary cost more than it saves
  // declines one: at least one shard has its items ranked.)
  EXPECT_GE(all_item_dicts, 1u) << "item ids got a dictionary";
  uih_store_close(s);
  // Reopened read-only, the store reads its dictionaries back: every
  // history's events, items included, are the model's.
  uih_store_opts ro = UIH_STORE_OPTS_DEFAULT;
  ro.read_only = 1;
  uih_error err{};
  ASSERT_EQ(uih_store_open((dir_ / "store").c_str(), &ro, &s, &err), UIH_OK) << uih_error_message(&err);
  for (auto& [h, stripes] : model.h) {
    std::vector<Ev> flat;
    for (auto& stp : stripes) flat.insert(flat.end(), stp.begin(), stp.end());
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_store_read(s, h.first, h.second, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK)
        << uih_error_message(&err);
    ASSERT_EQ(b->count, flat.size());
    const uint64_t* items = static_cast<const uint64_t*>(b->columns[uih_batch_column_index(b, 2)].values);
    for (uint32_t r = 0; r < b->count; r++) EXPECT_EQ(items[r], flat[r].item) << "user " << h.first << " row " << r;
    uih_batch_free(b);
  }
  uih_store_close(s);
}

INSTANTIATE_TEST_SUITE_P(Shards, StoreModel, ::testing::Values(1u, 3u));

// The same loads give the same bytes, whether the sort spills (1 MiB of
// memory), reads its files and merges on threads (3: each reader its own
// sorter, the streams reading them all) or holds everything in memory on
// one; and the same load digest (the inputs' digests folded in file order).
TEST_F(StoreTest, LoadsAreDeterministicWhetherSpilledOrNot) {
  std::mt19937_64 rng(7);
  std::vector<std::string> days;
  for (int d = 0; d < 2; d++) {
    const std::string day = dir_ / ("d" + std::to_string(d));
    std::filesystem::create_directories(day);
    std::string first;
    for (int part = 0; part < 5; part++) {
      std::string text = "user_id,group,ts,item,liked\n";
      for (int i = 0; i < 8000; i++) {
        uint64_t user = rng() % 3000;
        text += std::to_string(user) + ",a," + std::to_string(kBase + d * kDay + static_cast<int64_t>(rng() % kDay)) +
                "," + std::to_string(rng() % 100000) + "," + std::to_string(rng() % 2) + "\n";
      }
      if (part == 0) first = text.substr(text.find('\n') + 1, 4000);
      if (part == 3) text += first;  // part 0's lines again: repeats across files, so across readers
      WriteFile(day + "/part" + std::to_string(part) + ".csv", text.substr(0, text.rfind('\n') + 1));
    }
    days.push_back(day);
  }
  uih_store* a = Init("a", 4);
  uih_store* b = Init("b", 4);
  uih_load_stats sa{}, sb{};
  uih_error err{};
  for (int d = 0; d < 2; d++) {
    int64_t through = kBase + (d + 1) * kDay;
    ASSERT_EQ(Load(a, {days[static_cast<size_t>(d)]}, through, 0, &err, size_t{1} << 20, 3, &sa), UIH_OK)
        << uih_error_message(&err);
    ASSERT_EQ(Load(b, {days[static_cast<size_t>(d)]}, through, 0, &err, size_t{256} << 20, 1, &sb), UIH_OK)
        << uih_error_message(&err);
    EXPECT_GE(sa.runs, 3u) << "1 MiB must spill, on each reader";
    EXPECT_EQ(sb.runs, 0u);
    EXPECT_EQ(sa.events_in, sb.events_in);
    EXPECT_EQ(sa.inputs, 5u);
    EXPECT_EQ(sa.input_bytes, sb.input_bytes);
  }
  for (uint32_t sh = 0; sh < 4; sh++) {
    EXPECT_EQ(Scan(a, sh), Scan(b, sh)) << "shard " << sh;
    uih_generation ga[4], gb[4];
    size_t na = 0, nb = 0;
    uint32_t ca = 0, cb = 0;
    ASSERT_EQ(uih_store_generations(a, sh, ga, 4, &na, &ca, &err), UIH_OK);
    ASSERT_EQ(uih_store_generations(b, sh, gb, 4, &nb, &cb, &err), UIH_OK);
    ASSERT_EQ(na, nb);
    EXPECT_EQ(ga[na - 1].inputs_digest, gb[nb - 1].inputs_digest) << "shard " << sh;
  }
  EXPECT_EQ(sa.events, sb.events);
  EXPECT_EQ(sa.duplicates, sb.duplicates);
  EXPECT_GT(sa.duplicates, 0u);
  uih_store_close(a);
  uih_store_close(b);
}

// Files read on threads fail as one thread fails: with the first bad file
// in input order, and its first bad line, however the threads interleave;
// nothing is published.
TEST_F(StoreTest, ALoadReadOnThreadsFailsWithTheFirstBadFilesError) {
  const std::string dir = dir_ / "in";
  std::filesystem::create_directories(dir);
  for (int part = 0; part < 6; part++) {
    std::string text = "user_id,group,ts,item,liked\n";
    for (int i = 0; i < 30000; i++)
      text += std::to_string(i % 500) + ",a," + std::to_string(100 + i) + "," + std::to_string(i) + ",1\n";
    if (part == 2 || part == 4) text += "7,a,notatime,1,1\n";  // part 4's would be met first by a later thread
    if (part == 4) text = "user_id,group,ts,item,liked\n7,a,x,1,1\n" + text.substr(text.find('\n') + 1);
    WriteFile(dir + "/part" + std::to_string(part) + ".csv", text);
  }
  for (uint32_t threads : {1u, 2u, 3u, 6u}) {
    uih_store* s = Init("s" + std::to_string(threads), 2);
    uih_error err{};
    ASSERT_NE(Load(s, {dir}, 1000000, 0, &err, size_t{4} << 20, threads), UIH_OK);
    const std::string msg = uih_error_message(&err);
    EXPECT_NE(msg.find("part2.csv:30002:"), std::string::npos) << threads << " threads: " << msg;
    for (uint32_t sh = 0; sh < 2; sh++) {
      uih_generation g[2];
      size_t n = 0;
      uint32_t cur = 1;
      ASSERT_EQ(uih_store_generations(s, sh, g, 2, &n, &cur, &err), UIH_OK);
      EXPECT_EQ(cur, 0u) << "nothing published";
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ / ("s" + std::to_string(threads))))
      EXPECT_EQ(e.path().filename().string().rfind("sort-", 0), std::string::npos) << "left behind: " << e.path();
    uih_store_close(s);
  }
}

// The UihTable files under `dir` (generations' files; the metadata and the
// mutable tier are BlockBasedTable files): by the magic number ending them.
std::vector<std::string> UihTableFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".sst") continue;
    std::ifstream f(e.path(), std::ios::binary | std::ios::ate);
    uint64_t magic = 0;
    f.seekg(-8, std::ios::end);
    f.read(reinterpret_cast<char*>(&magic), 8);
    if (magic == UIH_TABLE_MAGIC) out.push_back(e.path());
  }
  return out;
}

// Reads of the immutable tier go to the generation's files directly (one
// index search, one read per file). Differential: with files rolled over
// every 2 KiB, so that file boundaries cut histories, every window —
// random ones, ones starting or ending exactly at a stripe's first event,
// empty and whole ones — equals the scanned stripes decoded and filtered.
TEST_F(StoreTest, ImmutableReadsEqualTheStripesWhereverFilesCutHistories) {
  std::mt19937_64 rng(5);
  std::string text = "user_id,group,ts,item,liked\n";
  for (int i = 0; i < 6000; i++) {
    bool a = rng() % 3;
    text += std::to_string(rng() % 40) + (a ? ",a," : ",b,") + std::to_string(kBase + static_cast<int64_t>(rng() % 100000)) +
            "," + std::to_string(rng() % 1000) + "," + (a && rng() % 2 ? "1" : "") + "\n";
  }
  uih_error err{};
  std::string path = dir_ / "store";
  uih_store* s = nullptr;
  ASSERT_NO_FATAL_FAILURE(LoadInSmallFiles(text, 2, 2048, &s));
  // Each history's stripes from the scan: (first ts, events).
  std::map<std::pair<uint64_t, uint16_t>, std::vector<std::pair<int64_t, std::vector<Ev>>>> hist;
  for (uint32_t sh = 0; sh < 2; sh++)
    for (auto& [k, v] : Scan(s, sh)) {
      uih_key key;
      ASSERT_EQ(uih_key_decode(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &key, nullptr), UIH_OK);
      hist[{key.user_id, key.group}].push_back({key.ts, DecodeStripe(uih_store_schema(s), key.group, v)});
    }
  EXPECT_GT(UihTableFiles(path).size(), 10u) << "histories cut by file boundaries";
  uint64_t windows = 0;
  for (auto& [h, stripes] : hist) {
    std::vector<std::pair<int64_t, int64_t>> w = {{INT64_MIN, INT64_MAX}, {INT64_MAX, INT64_MAX}, {5, 4}};
    for (auto& [start, evs] : stripes) {
      w.push_back({start, start});
      w.push_back({start, INT64_MAX});
      w.push_back({INT64_MIN, start - 1});
      w.push_back({start + 1, evs.back().ts});
    }
    for (int i = 0; i < 8; i++) {
      int64_t a = kBase + static_cast<int64_t>(rng() % 100000), b = kBase + static_cast<int64_t>(rng() % 100000);
      w.push_back({std::min(a, b), std::max(a, b)});
    }
    for (auto [from, to] : w) {
      std::vector<Ev> want;
      for (auto& st : stripes)
        for (auto& e : st.second)
          if (e.ts >= from && e.ts <= to) want.push_back(e);
      const uih_group* g = uih_schema_group_by_id(uih_store_schema(s), h.second);
      std::vector<uint16_t> ids;
      for (uint32_t t = 0; t < g->ntraits; t++) ids.push_back(g->traits[t].id);
      ids.push_back(UIH_TRAIT_ARRIVAL);  // the arrival generation too
      uih_batch* b = nullptr;
      ASSERT_EQ(uih_batch_create(g, 8, ids.data(), static_cast<uint32_t>(ids.size()), &b, &err), UIH_OK);
      ASSERT_EQ(uih_store_read(s, h.first, h.second, from, to, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK)
          << uih_error_message(&err);
      ASSERT_EQ(BatchEvents(b), want) << "user " << h.first << " group " << h.second << " [" << from << ", " << to
                                      << "]";
      uih_batch_free(b);
      windows++;
    }
  }
  EXPECT_GT(windows, 1000u);
  uih_store_close(s);
}

// Table files of `dir` this process holds open (its descriptors' targets,
// each file once: a UihTable reader holds two, one for batched reads).
size_t OpenTableFiles(const std::string& dir) {
  std::set<std::string> open;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind(dir, 0) == 0 && target.size() > 4 && target.compare(target.size() - 4, 4, ".sst") == 0)
      open.insert(target);
  }
  return open.size();
}

// RocksDB's own table readers (scans: loads) are bounded: a scan of a whole
// generation of many files leaves at most the table cache's 10 open per
// shard (split in RocksDB's default 64 cache shards, each kept one: every
// file's index stayed), and a read-only open opens 2 at most.
TEST_F(StoreTest, AScanOfAGenerationOfManyFilesLeavesAtMostTenOpen) {
  std::mt19937_64 rng(9);
  std::string text = "user_id,group,ts,item,liked\n";
  for (int i = 0; i < 8000; i++)
    text += std::to_string(rng() % 400) + ",a," + std::to_string(kBase + static_cast<int64_t>(rng() % 100000)) + "," +
            std::to_string(rng() % 1000) + ",1\n";
  uih_error err{};
  std::string path = dir_ / "store";
  uih_store* s = nullptr;
  ASSERT_NO_FATAL_FAILURE(LoadInSmallFiles(text, 1, 1024, &s));
  uih_store_close(s);
  const size_t files = UihTableFiles(path).size();
  ASSERT_GT(files, 40u);
  for (bool ro : {true, false}) {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = ro;
    ASSERT_EQ(uih_store_open(path.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
    const std::string shard = path + "/shard-0000/";
    EXPECT_LE(OpenTableFiles(shard), 2u) << (ro ? "read-only" : "writable") << " open";
    EXPECT_GE(Scan(s, 0).size(), files) << "every file holds stripes";
    const size_t after = OpenTableFiles(shard);
    EXPECT_GE(after, 3u) << "the scan opened files through RocksDB";
    EXPECT_LE(after, 10u) << "of " << files << " files, after a scan";
    uih_store_close(s);
  }
}

// A damaged value in a generation's file: the read fails with Corruption
// naming the file and the offset; other users' reads still work.
TEST_F(StoreTest, AnImmutableReadOfADamagedStripeNamesTheFile) {
  std::string day = dir_ / "day.csv";
  WriteFile(day, "user_id,group,ts,item,liked\n1,a,100,5,1\n1,a,101,6,0\n2,a,100,7,1\n");
  uih_store* s = Init("store", 1);
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
  std::vector<std::string> files = UihTableFiles(dir_ / "store");
  ASSERT_EQ(files.size(), 1u);
  const std::string& sst = files[0];
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    char c;
    f.seekg(2);
    f.get(c);
    f.seekp(2);
    f.put(static_cast<char>(c ^ 0x10));  // inside user 1's stripe: the first value of the file
  }
  s = Open(dir_ / "store");
  uih_batch* b = nullptr;
  EXPECT_EQ(uih_store_read(s, 1, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find(sst), std::string::npos) << uih_error_message(&err);
  EXPECT_NE(std::string(uih_error_message(&err)).find("offset"), std::string::npos) << uih_error_message(&err);
  ASSERT_EQ(uih_store_read(s, 2, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(b->count, 1u);
  uih_batch_free(b);
  uih_store_close(s);
}

// Progress: every phase reports, its counts never go back, each ends at
// its total (read: the input files' bytes as stored, compressed or not;
// merge: the events written; publish: the shards), and an ETA is -1 or a
// time left.
TEST_F(StoreTest, ProgressCountsEachPhaseToItsTotal) {
  std::mt19937_64 rng(11);
  std::string plain = "user_id,group,ts,item,liked\n", packed = plain;
  for (int i = 0; i < 150000; i++) {
    std::string line = std::to_string(rng() % 5000) + ",a," + std::to_string(kBase + static_cast<int64_t>(rng() % kDay)) +
                       "," + std::to_string(rng() % 100000) + ",1\n";
    (i % 2 ? plain : packed) += line;
  }
  std::string a = dir_ / "a.csv", b = dir_ / "b.csv.zst";
  WriteFile(a, plain);
  WriteZstd(b, packed);
  struct Seen {
    std::map<std::string, std::vector<uih_load_progress>> by_phase;
  } seen;
  uih_store* s = Init("store", 2);
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = kBase + kDay;
  o.threads = 2;
  o.progress = [](const uih_load_progress* p, void* arg) {
    static_cast<Seen*>(arg)->by_phase[p->phase].push_back(*p);
  };
  o.progress_arg = &seen;
  const char* in[] = {a.c_str(), b.c_str()};
  uih_load_stats st{};
  uih_error err{};
  ASSERT_EQ(uih_load(s, in, 2, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  const uint64_t stored = std::filesystem::file_size(a) + std::filesystem::file_size(b);
  ASSERT_EQ(seen.by_phase.size(), 3u);
  for (auto& [phase, reports] : seen.by_phase) {
    SCOPED_TRACE(phase);
    ASSERT_FALSE(reports.empty());
    for (size_t i = 0; i < reports.size(); i++) {
      const uih_load_progress& p = reports[i];
      EXPECT_LE(p.done, p.total);
      EXPECT_TRUE(p.eta == -1 || p.eta >= 0) << p.eta;
      if (i > 0) {
        EXPECT_GE(p.done, reports[i - 1].done);
        EXPECT_GE(p.events, reports[i - 1].events);
      }
    }
    const uih_load_progress& last = reports.back();
    if (phase == "read") {
      EXPECT_GT(reports.size(), 2u) << "reports while reading, not only at the end";
      EXPECT_EQ(last.total, stored);
      EXPECT_EQ(last.done, stored);
      EXPECT_EQ(last.events, st.events_in);
    } else if (phase == "merge") {
      EXPECT_GT(reports.size(), 3u) << "reports within shards, and one as each ends";
      EXPECT_EQ(last.events, st.events);
      EXPECT_EQ(last.total, st.events_in) << "a first load: the new events";
      int ended = 0;
      for (auto& p : reports) ended += p.shard >= 0;
      EXPECT_EQ(ended, 2);
    } else {
      EXPECT_EQ(phase, "publish");
      ASSERT_EQ(reports.size(), 2u);
      EXPECT_EQ(last.done, 2u);
      EXPECT_EQ(last.total, 2u);
    }
  }
  // A dictionary rebuild's merge counts the stored events, then writes them:
  // both in its progress, which still ends at its total.
  seen.by_phase.clear();
  o.rebuild_dicts = 1;
  uih_load_stats rb{};
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, &rb, &err), UIH_OK) << uih_error_message(&err);
  const auto& merge = seen.by_phase["merge"];
  ASSERT_FALSE(merge.empty());
  for (size_t i = 1; i < merge.size(); i++) EXPECT_GE(merge[i].done, merge[i - 1].done);
  EXPECT_GT(merge.size(), 6u) << "reports while counting too";
  EXPECT_EQ(merge.back().events, 2 * rb.events);
  EXPECT_EQ(merge.back().done, merge.back().total);
  EXPECT_EQ(merge.back().total, 2 * st.events);
  uih_store_close(s);
}

// Bad input: the exact place and reason, and nothing published.
struct BadInput {
  const char* name;
  std::string text;  // the file's content ("" : no file is written)
  int kind;          // 0 plain, 1 gzip bytes as given, 2 zstd truncated
  int64_t through;
  const char* message;  // a part of the message that must appear
};

class LoadBadInput : public StoreTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(LoadBadInput, FailsWithItsMessageAndPublishesNothing) {
  const BadInput& c = GetParam();
  uih_store* s = Init("store", 2);
  std::string good = dir_ / "good.csv";
  WriteFile(good, "user_id,group,ts,item,liked\n1,a,100,5,1\n2,b,100,6,\n");
  uih_error err{};
  ASSERT_EQ(Load(s, {good}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  std::string path = dir_ / c.name;
  if (c.kind == 0) WriteFile(path, c.text);
  if (c.kind == 1) WriteFile(path, c.text);
  if (c.kind == 2) {
    WriteZstd(path, c.text);
    std::string z;
    std::ifstream in(path, std::ios::binary);
    z.assign(std::istreambuf_iterator<char>(in), {});
    WriteFile(path, z.substr(0, z.size() - 6));
  }
  ASSERT_NE(Load(s, {path}, c.through, 0, &err), UIH_OK);
  std::string msg = uih_error_message(&err);
  EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  for (uint32_t sh = 0; sh < 2; sh++) {
    uint32_t cur;
    size_t n;
    ASSERT_EQ(uih_store_generations(s, sh, nullptr, 0, &n, &cur, &err), UIH_OK);
    EXPECT_EQ(cur, 1u) << "nothing was published";
  }
  uih_store_close(s);
  // Nothing of the failed load is left behind.
  std::error_code ec;
  EXPECT_TRUE(!std::filesystem::exists(dir_ / "store/tmp") || std::filesystem::is_empty(dir_ / "store/tmp", ec));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LoadBadInput,
    ::testing::Values(
        BadInput{"late.csv", kHeader + "1,a,200,5,\n1,a,5000,6,\n", 0, 5000,
                 "late.csv:3: ts 5000 is at or past the load's through 5000"},
        BadInput{"field.csv", kHeader + "1,a,200,x5,\n", 0, 5000, "field.csv:2: column 'item'"},
        BadInput{"group.csv", kHeader + "1,zz,200,5,\n", 0, 5000, "group.csv:2: column 'group'"},
        BadInput{"flag.csv", kHeader + "1,b,200,5,1\n", 0, 5000, "flag.csv:2: column 'liked' has a value"},
        BadInput{"fields.csv", kHeader + "1,a,200\n", 0, 5000, "fields.csv:2: 3 fields, the header has 5"},
        BadInput{"header.csv", "user_id,group,ts,uih_arrival\n1,a,1,1\n", 0, 5000, "uih_arrival"},
        BadInput{"crowd.csv",
                 [] {  // a burst one stripe cannot hold (a burst of 4 in stripes of 3 is one stripe)
                   std::string text = kHeader;
                   for (int i = 0; i <= UIH_STRIPE_EVENTS_MAX; i++) text += "1,b,300," + std::to_string(i) + ",\n";
                   return text;
                 }(),
                 0, 5000,
                 "65537 events at timestamp 300 in group 'b': a burst of one timestamp is one stripe, and a stripe "
                 "holds at most 65536 events"},
        BadInput{"back.csv", kHeader + "1,a,200,5,\n", 0, 999, "is before shard"},
        BadInput{"bad.gz", std::string("\x1f\x8b\x08\x00garbage-not-deflate", 24), 1, 5000, "corrupt gzip data"},
        BadInput{"cut.zst", kHeader + "1,a,200,5,\n1,a,201,5,\n1,a,202,5,\n", 2, 5000, "truncated zstd data"}),
    [](const ::testing::TestParamInfo<BadInput>& i) {
      std::string n = i.param.name;
      std::replace(n.begin(), n.end(), '.', '_');
      return n;
    });

// RFC 4180 records (quotes doubled inside quoted fields).
std::vector<std::vector<std::string>> ParseCsv(const std::string& t) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < t.size(); i++) {
    char c = t[i];
    if (quoted) {
      if (c == '"' && i + 1 < t.size() && t[i + 1] == '"') field += '"', i++;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rec.push_back(field);
      field.clear();
    } else if (c == '\n') {
      rec.push_back(field);
      field.clear();
      out.push_back(rec);
      rec.clear();
    } else {
      field += c;
    }
  }
  return out;
}

// --rejects: every bad line goes to the rejects file (file, line, reason,
// the line verbatim) and the load goes on; the store then holds exactly
// what a load of only the good lines gives. Without it the first bad line
// fails the load.
TEST_F(StoreTest, RejectsCollectExactlyTheBadLines) {
  std::mt19937_64 rng(5);
  const std::vector<std::string> bad = {"1,a,200",         "x,a,200,5,",      "1,zz,200,5,", "1,a,,5,",
                                        "1,b,200,5,1",     "1,a,200,-5,",     "1,a,5000,5,", "1,a,200,5\"x,",
                                        "1,a,200,\"5\n\",", "1,a,9999999,5,"};
  std::string text = kHeader, good = kHeader;
  std::vector<std::pair<int, std::string>> want;  // line, text
  std::string path = dir_ / "mixed.csv";
  int line = 2;
  for (int i = 0; i < 300; i++) {
    if (rng() % 4 == 0) {
      const std::string& b = bad[rng() % bad.size()];
      text += b + "\n";
      want.push_back({line, b});
      line += 1 + static_cast<int>(std::count(b.begin(), b.end(), '\n'));
    } else {
      std::string g = std::to_string(rng() % 50) + (rng() % 2 ? ",a," : ",b,") + std::to_string(100 + rng() % 4000) +
                      "," + std::to_string(rng() % 100) + ",\n";
      text += g;
      good += g;
      line++;
    }
  }
  WriteFile(path, text);
  std::string good_path = dir_ / "good.csv", rejects = dir_ / "rejects.csv";
  WriteFile(good_path, good);
  uih_store* a = Init("a", 2);
  uih_store* b = Init("b", 2);
  uih_error err{};
  EXPECT_NE(Load(a, {path}, 5000, 0, &err), UIH_OK) << "strict: the first bad line fails the load";
  EXPECT_EQ(std::string(uih_error_message(&err)).rfind(path + ":", 0), 0u) << uih_error_message(&err);
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = 5000;
  o.rejects = rejects.c_str();
  const char* in[] = {path.c_str()};
  uih_load_stats st{};
  ASSERT_EQ(uih_load(a, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  ASSERT_EQ(Load(b, {good_path}, 5000, 0, &err), UIH_OK) << uih_error_message(&err);
  for (uint32_t sh = 0; sh < 2; sh++) EXPECT_EQ(Scan(a, sh), Scan(b, sh));
  // The rejects file: the header, then per bad line its place, a reason and
  // the line itself, in input order.
  std::ifstream f(rejects, std::ios::binary);
  auto got = ParseCsv(std::string((std::istreambuf_iterator<char>(f)), {}));
  ASSERT_EQ(got.size(), want.size() + 1);
  EXPECT_EQ(got[0], (std::vector<std::string>{"file", "line", "reason", "record"}));
  for (size_t i = 0; i < want.size(); i++) {
    const auto& r = got[i + 1];
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0], path);
    EXPECT_EQ(r[1], std::to_string(want[i].first));
    EXPECT_EQ(r[3], want[i].second);
    EXPECT_FALSE(r[2].empty());
    EXPECT_EQ(r[2].find(path), std::string::npos) << "the place has its own columns: " << r[2];
  }
  EXPECT_EQ(st.rejected, want.size());
  EXPECT_GT(want.size(), 20u);
  uih_store_close(a);
  uih_store_close(b);
}

// Deletions reach the mutable tier for erased users (in the publishing
// write) and count exactly; a rerun of the same load changes nothing.
TEST_F(StoreTest, AnErasedUserLosesBothTiersAndARerunIsANoOp) {
  uih_store* s = Init("store", 2);
  std::string day = dir_ / "d.csv", del = dir_ / "del.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n1,b,110,6,\n2,a,100,7,\n2,a,120,8,0\n3,a,130,8,\n");
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  // the mutable tier above the through: events of users 1 and 2
  for (uint64_t user : {1, 2}) {
    uih_mutable* m = uih_test::MutableOf(s, uih_shard_of(user, 2));
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 1), 1, nullptr, 0, &b, &err), UIH_OK);
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, 5000);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, 9);
    ASSERT_EQ(uih_mutable_append(m, user, b, 0, &err), UIH_OK) << uih_error_message(&err);
    uih_batch_free(b);
  }
  WriteFile(del, "user_id,item\n1,\n,8\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = 2000;
  o.deletes = del.c_str();
  uih_load_stats st{};
  const char* in[] = {day.c_str()};
  ASSERT_EQ(uih_load(s, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  // user 1: two stored events and their two new copies; item 8: the same for users 2 and 3
  EXPECT_EQ(st.deleted, 8u);
  auto count = [&](uint64_t user, uint16_t group, unsigned tier) {
    uih_batch* b = nullptr;
    EXPECT_EQ(uih_store_read(s, user, group, INT64_MIN, INT64_MAX, tier, 0, &b, &err), UIH_OK) << uih_error_message(&err);
    uint32_t n = b ? b->count : 0;
    uih_batch_free(b);
    return n;
  };
  EXPECT_EQ(count(1, 1, UIH_TIER_ALL), 0u);
  EXPECT_EQ(count(1, 2, UIH_TIER_ALL), 0u);
  EXPECT_EQ(count(2, 1, UIH_TIER_IMMUTABLE), 1u) << "item 8 scrubbed, item 7 kept";
  EXPECT_EQ(count(2, 1, UIH_TIER_MUTABLE), 1u) << "only erased users leave the mutable tier";
  EXPECT_EQ(count(3, 1, UIH_TIER_ALL), 0u);
  // The same load again: every shard has it already.
  uint32_t cur;
  size_t n;
  ASSERT_EQ(uih_load(s, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.shards_skipped, 2u);
  EXPECT_EQ(st.shards, 0u);
  ASSERT_EQ(uih_store_generations(s, 0, nullptr, 0, &n, &cur, &err), UIH_OK);
  EXPECT_EQ(cur, 2u);
  uih_store_close(s);
}

namespace {

// Runs `f` on the default column family of the RocksDB database at `db_dir`
// (every column family opened with the options the store gives it).
void WithDb(const std::string& db_dir, const std::function<void(rocksdb::DB*, rocksdb::ColumnFamilyHandle*)>& f) {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), db_dir, &names).ok());
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  for (auto& n : names)
    cfs.emplace_back(n, uih::IsGenerationCf(n) ? uih::GenerationCfOptions()
                        : n == UIH_MUTABLE_CF  ? uih::MutableCfOptions(mo)
                                               : rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), db_dir, cfs, &hs, &db).ok());
  f(db, hs[std::find(names.begin(), names.end(), rocksdb::kDefaultColumnFamilyName) - names.begin()]);
  for (auto* h : hs) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  delete db;
}

// The metadata of a store's shard 0.
void WithMeta(const std::string& dir, const std::function<void(rocksdb::DB*, rocksdb::ColumnFamilyHandle*)>& f) {
  WithDb(dir + "/shard-0000", f);
}

// Every file under `dir`, with its size and modification time.
std::string FilesOf(const std::filesystem::path& dir) {
  std::string out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    out += e.path().string() + " " + std::to_string(e.is_regular_file() ? e.file_size() : 0) + " " +
           std::to_string(e.last_write_time().time_since_epoch().count()) + "\n";
  return out;
}

}  // namespace

// An older store opens: tests/store/data/format2_store.tar.gz, written by a
// build of format 2 (its mutable tier inside each shard's database), and
// the same store taken back to format 1 (no uih.format; the watermark and
// chunk span little-endian). A read-only open reads it as it is and writes
// nothing; a writable open moves each shard's mutable tier into
// mutable-NNNN/ (format 3): the shard keeps neither watermark nor span, the
// new database has both as they were, and every user's events of each tier
// read back the same throughout. A format newer than this build's is
// refused, and a value of the wrong size is a corruption naming its key.
TEST_F(StoreTest, OlderFormatsOpenAndAWritableOpenMovesTheMutableTier) {
  const std::string fixture = UIH_SOURCE_DIR "/tests/store/data/format2_store.tar.gz";
  const int64_t kWatermark = 1700300000000, kSpan = 3600000;
  for (int format : {2, 1}) {
    SCOPED_TRACE("format " + std::to_string(format));
    const std::filesystem::path root = dir_ / ("f" + std::to_string(format)), st = root / "st";
    std::filesystem::create_directories(root);
    ASSERT_EQ(std::system(("tar xzf " + fixture + " -C " + root.string() + " st").c_str()), 0);
    auto events = [&](uih_store* s, unsigned tier) {
      std::vector<int64_t> ts;
      for (uint64_t user : {1, 2, 3, 7, 8, 13, 21, 40})
        for (uint16_t group : {1, 2}) {
          uih_batch* out = nullptr;
          uih_error e{};
          EXPECT_EQ(uih_store_read(s, user, group, INT64_MIN, INT64_MAX, tier, 0, &out, &e), UIH_OK)
              << uih_error_message(&e);
          if (out) ts.insert(ts.end(), uih_batch_timestamps(out), uih_batch_timestamps(out) + out->count);
          ts.push_back(-1);  // between users
          uih_batch_free(out);
        }
      return ts;
    };
    uih_store* ro = Open(st, 1);
    ASSERT_NE(ro, nullptr);
    const std::vector<int64_t> all = events(ro, UIH_TIER_ALL), mut = events(ro, UIH_TIER_MUTABLE);
    uih_store_close(ro);
    ASSERT_GT(all.size(), 100u);
    auto le = [](int64_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); };
    if (format == 1)
      for (const char* shard : {"shard-0000", "shard-0001"})
        WithDb(st / shard, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
          ASSERT_TRUE(db->Delete({}, meta, uih::kFormatKey).ok());
          ASSERT_TRUE(db->Put({}, meta, uih::kWatermarkKey, le(kWatermark)).ok());
          ASSERT_TRUE(db->Put({}, meta, uih::kChunkSpanKey, le(kSpan)).ok());
        });
    // What a move killed before its commit left: a mutable-0000/ beside a
    // shard of the older format, which the next move makes again.
    std::filesystem::create_directories(st / "mutable-0000");
    WriteFile(st / "mutable-0000" / "CURRENT", "MANIFEST-000099\n");
    const std::string before = FilesOf(st);
    ro = Open(st, 1);
    ASSERT_NE(ro, nullptr);
    int64_t wm = 0;
    int has = 0;
    uih_error err{};
    ASSERT_EQ(uih_mutable_watermark(uih_test::MutableOf(ro, 0), &wm, &has, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(has, 1);
    EXPECT_EQ(wm, kWatermark);
    EXPECT_EQ(uih_mutable_chunk_span(uih_test::MutableOf(ro, 1)), kSpan);
    EXPECT_EQ(events(ro, UIH_TIER_ALL), all);
    EXPECT_EQ(events(ro, UIH_TIER_MUTABLE), mut);
    uih_store_close(ro);
    EXPECT_EQ(FilesOf(st), before) << "a read-only open writes nothing";

    uih_store* s = Open(st);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(events(s, UIH_TIER_ALL), all);
    EXPECT_EQ(events(s, UIH_TIER_MUTABLE), mut);
    for (uint32_t shard : {0u, 1u}) {
      ASSERT_EQ(uih_mutable_watermark(uih_test::MutableOf(s, shard), &wm, &has, &err), UIH_OK);
      EXPECT_EQ(wm, kWatermark);
      EXPECT_EQ(uih_mutable_chunk_span(uih_test::MutableOf(s, shard)), kSpan);
    }
    uih_store_close(s);
    EXPECT_TRUE(std::filesystem::exists(st / "mutable-0000" / "CURRENT"));
    WithMeta(st, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
      std::string v;
      ASSERT_TRUE(db->Get({}, meta, uih::kFormatKey, &v).ok());
      EXPECT_EQ(v, uih::U32Value(3));
      EXPECT_TRUE(db->Get({}, meta, uih::kWatermarkKey, &v).IsNotFound());
      EXPECT_TRUE(db->Get({}, meta, uih::kChunkSpanKey, &v).IsNotFound());
      uint64_t id = 0;
      ASSERT_TRUE(db->Get({}, meta, uih::kStoreIdKey, &v).ok()) << "a loader's open records the store id";
      ASSERT_EQ(uih::ParseU64Value(v, uih::kStoreIdKey, &id, nullptr), UIH_OK);
      EXPECT_NE(id, 0u);
      std::vector<std::string> names;
      ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), st / "shard-0000", &names).ok());
      EXPECT_EQ(std::count(names.begin(), names.end(), UIH_MUTABLE_CF), 0) << "the shard's uih.mutable dropped";
    });
    // What a move killed after its commit left: the shard's uih.mutable, which
    // a read-only open leaves alone and the next writable open drops.
    WithMeta(st, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle*) {
      rocksdb::ColumnFamilyHandle* h = nullptr;
      uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
      ASSERT_TRUE(db->CreateColumnFamily(uih::MutableCfOptions(mo), UIH_MUTABLE_CF, &h).ok());
      ASSERT_TRUE(db->Put({}, h, "stale", "bytes").ok());
      ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    });
    ro = Open(st, 1);
    ASSERT_NE(ro, nullptr);
    EXPECT_EQ(events(ro, UIH_TIER_ALL), all);
    uih_store_close(ro);
    s = Open(st);  // and again, now format 3
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(events(s, UIH_TIER_ALL), all);
    uih_store_close(s);
    {
      std::vector<std::string> names;
      ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), st / "shard-0000", &names).ok());
      EXPECT_EQ(std::count(names.begin(), names.end(), UIH_MUTABLE_CF), 0) << "the stale uih.mutable dropped";
    }
    if (format == 2) continue;
    WithMeta(st, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
      ASSERT_TRUE(db->Put({}, meta, uih::kFormatKey, uih::U32Value(uih::kStoreFormat + 1)).ok());
    });
    uih_store* bad = nullptr;
    EXPECT_EQ(uih_store_open(st.c_str(), nullptr, &bad, &err), UIH_ERR_NOT_SUPPORTED);
    EXPECT_NE(std::string(uih_error_message(&err))
                  .find("its format is " + std::to_string(uih::kStoreFormat + 1) + "; this build reads formats 1 to " +
                        std::to_string(uih::kStoreFormat)),
              std::string::npos)
        << uih_error_message(&err);
    WithMeta(st, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
      ASSERT_TRUE(db->Put({}, meta, uih::kFormatKey, uih::U32Value(3)).ok());
    });
    WithDb(st / "mutable-0000", [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
      ASSERT_TRUE(db->Put({}, meta, uih::kWatermarkKey, "seven").ok());
    });
    EXPECT_EQ(uih_store_open(st.c_str(), nullptr, &bad, &err), UIH_ERR_CORRUPTION);
    EXPECT_NE(std::string(uih_error_message(&err)).find("metadata key 'uih.watermark' holds 5 bytes, expected 8"),
              std::string::npos)
        << uih_error_message(&err);
  }
}

// A publish leaves nothing to the shard's write-ahead log: its switch is
// flushed into a table file, so a log deleted after it loses nothing. A log
// that does hold metadata (a loader killed between its switch and that
// flush; here written straight to the database) damaged in its middle
// fails every open — writable and read-only — naming the log file, instead
// of opening on what came before the damage.
TEST_F(StoreTest, ADamagedShardLogFailsTheOpenNamingIt) {
  namespace fs = std::filesystem;
  uih_store* s = Init("store", 1);
  uih_error err{};
  for (int day = 0; day < 3; day++) {
    const std::string f = dir_ / ("d" + std::to_string(day) + ".csv");
    WriteFile(f, kHeader + std::to_string(day + 1) + ",a," + std::to_string(100 + day * 1000) + ",5,1\n");
    ASSERT_EQ(Load(s, {f}, 1000 + day * 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  }
  auto events = [&](uih_store* st) {
    std::vector<int64_t> ts;
    const uint16_t group = uih_schema_group_by_name(uih_store_schema(st), "a")->id;
    for (uint64_t u = 1; u <= 3; u++) {
      uih_batch* b = nullptr;
      EXPECT_EQ(uih_store_read(st, u, group, INT64_MIN, INT64_MAX, UIH_TIER_ALL, 0, &b, &err), UIH_OK);
      if (b) ts.insert(ts.end(), uih_batch_timestamps(b), uih_batch_timestamps(b) + b->count);
      uih_batch_free(b);
    }
    return ts;
  };
  const std::vector<int64_t> before = events(s);
  ASSERT_EQ(before.size(), 3u);
  uih_store_close(s);
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "store/shard-0000"))
    if (e.path().extension() == ".log") fs::remove(e.path());
  ASSERT_NE(s = Open(dir_ / "store", 1), nullptr) << "every publish is in table files";
  EXPECT_EQ(events(s), before);
  uih_store_close(s);
  WithMeta(dir_ / "store", [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    for (int i = 0; i < 40; i++) ASSERT_TRUE(db->Put({}, meta, "test." + std::to_string(i), std::string(20, 'x')).ok());
  });  // closed without a flush: in the log alone
  const fs::path log = uih_test::LargestLog(dir_ / "store/shard-0000");
  ASSERT_FALSE(log.empty());
  const uintmax_t size = fs::file_size(log);
  ASSERT_GT(size, 1000u) << "the writes are in the log";
  uih_test::FlipByte(log, size / 2);
  for (int ro : {1, 0}) {
    SCOPED_TRACE(ro ? "read-only" : "writable");
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = ro;
    uih_store* bad = nullptr;
    EXPECT_EQ(uih_store_open((dir_ / "store").c_str(), &o, &bad, &err), UIH_ERR_CORRUPTION);
    EXPECT_NE(std::string(uih_error_message(&err)).find("write-ahead log " + log.filename().string() + " is damaged at byte"),
              std::string::npos)
        << uih_error_message(&err);
    uih_store_close(bad);
  }
}

// A serving process killed while writing a record leaves its mutable
// tier's log with a torn tail: the next open drops that record alone and
// says so (uih_store_recovered, and the LOG of a writable open); every
// acknowledged append before it is there.
TEST_F(StoreTest, ATornLogTailIsRecoveredAndSaid) {
  namespace fs = std::filesystem;
  uih_store* s = Init("store", 1);
  uih_error err{};
  uih_mutable* m = uih_test::MutableOf(s, 0);
  const fs::path st = dir_ / "store", image = dir_ / "killed", mark = dir_ / "mark29";
  for (int k = 0; k < 30; k++) {  // one log record each
    // The acknowledged mark before the last append: what a process killed
    // while writing that append leaves (it was never acknowledged).
    if (k == 29) fs::copy_file(st / "mutable-0000/UIH-ACKED", mark);
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 1), 1, nullptr, 0, &b, &err), UIH_OK);
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(5000 + k));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, 9);
    ASSERT_EQ(uih_mutable_append(m, 7, b, 0, &err), UIH_OK) << uih_error_message(&err);
    uih_batch_free(b);
  }
  EXPECT_STREQ(uih_store_recovered(s, 0), "");
  // The directory as the kill leaves it (the appends in the log alone), its
  // last record cut short, and the mark of what was acknowledged before it.
  fs::copy(st, image, fs::copy_options::recursive);
  fs::copy_file(mark, image / "mutable-0000/UIH-ACKED", fs::copy_options::overwrite_existing);
  uih_store_close(s);
  fs::remove_all(st);
  fs::rename(image, st);
  const fs::path log = uih_test::LargestLog(st / "mutable-0000");
  ASSERT_FALSE(log.empty());
  fs::resize_file(log, fs::file_size(log) - 3);
  for (int ro : {1, 0}) {
    SCOPED_TRACE(ro ? "read-only" : "writable");
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = ro;
    ASSERT_EQ(uih_store_open(st.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
    const std::string said = uih_store_recovered(s, 0);
    EXPECT_NE(said.find("its mutable tier's " + log.filename().string() + ": a torn tail of"), std::string::npos) << said;
    uih_batch* out = nullptr;
    ASSERT_EQ(uih_store_read(s, 7, 1, INT64_MIN, INT64_MAX, UIH_TIER_ALL, 0, &out, &err), UIH_OK);
    EXPECT_EQ(out ? out->count : 0u, 29u) << "every record but the torn last one";
    uih_batch_free(out);
    uih_store_close(s);
    if (ro) continue;
    const std::string logged = uih_test::ReadFile(st / "mutable-0000/LOG");
    EXPECT_NE(logged.find("uihstore: write-ahead log " + log.filename().string() + ": a torn tail"), std::string::npos);
  }
  ASSERT_EQ(uih_store_open(st.c_str(), nullptr, &s, &err), UIH_OK);
  EXPECT_STREQ(uih_store_recovered(s, 0), "") << "the writable open flushed it: nothing left to recover";
  uih_store_close(s);
}

// A shard whose database is older than its .published hint (a publish
// lost to a damaged MANIFEST or log, or a damaged hint) is refused, by
// writable and read-only opens alike, naming both; without the hint, or
// with a hint that is not newer, it opens.
TEST_F(StoreTest, ADatabaseOlderThanItsPublishedHintIsRefused) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  const std::string f = dir_ / "d.csv";
  WriteFile(f, kHeader + "1,a,100,5,1\n");
  ASSERT_EQ(Load(s, {f}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
  const std::string hint = dir_ / ("store/" + uih::PublishedName(0));
  EXPECT_EQ(uih_test::ReadFile(hint), uih::PublishedText(0, 1));
  WriteFile(hint, uih::PublishedText(0, 2));
  for (int ro : {1, 0}) {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = ro;
    EXPECT_EQ(uih_store_open((dir_ / "store").c_str(), &o, &s, &err), UIH_ERR_CORRUPTION);
    EXPECT_NE(std::string(uih_error_message(&err))
                  .find("shard 0's database says generation 1 is current, but generation 2 was published (" +
                        uih::PublishedName(0) + ")"),
              std::string::npos)
        << uih_error_message(&err);
  }
  std::filesystem::remove(hint);
  ASSERT_NE(s = Open(dir_ / "store"), nullptr) << "without the hint it opens, and writes it again";
  uih_store_close(s);
  EXPECT_EQ(uih_test::ReadFile(hint), uih::PublishedText(0, 1));
}

// A damaged properties block of one of RocksDB's own (block-based) table
// files in a shard — which RocksDB parses before verifying it, and whose
// damaged restart count trips an assert that kills the process in Debian's
// build — fails every open cleanly, naming the file.
TEST_F(StoreTest, ADamagedTablePropertiesBlockFailsTheOpenInsteadOfAborting) {
  namespace fs = std::filesystem;
  uih_store* s = Init("store", 1);
  uih_error err{};
  for (int day = 0; day < 3; day++) {
    const std::string f = dir_ / ("d" + std::to_string(day) + ".csv");
    WriteFile(f, kHeader + std::to_string(day + 1) + ",a," + std::to_string(100 + day * 1000) + ",5,1\n");
    ASSERT_EQ(Load(s, {f}, 1000 + day * 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  }
  uih_store_close(s);
  int damaged = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "store/shard-0000")) {
    if (e.path().extension() != ".sst") continue;
    const uint64_t size = fs::file_size(e.path());
    std::unique_ptr<rocksdb::RandomAccessFileReader> reader;
    ASSERT_TRUE(rocksdb::RandomAccessFileReader::Create(rocksdb::FileSystem::Default(), e.path().string(),
                                                        rocksdb::FileOptions(), &reader, nullptr)
                    .ok());
    rocksdb::BlockHandle props;
    const rocksdb::ImmutableOptions io;
    if (!rocksdb::FindMetaBlockInFile(reader.get(), size, rocksdb::kBlockBasedTableMagicNumber, io,
                                      rocksdb::kPropertiesBlockName, &props)
             .ok())
      continue;  // a UihTable file (a generation's)
    reader.reset();
    // The block's last byte: the high byte of its restart count, whose top
    // bit says "a hash index follows".
    const std::string saved = uih_test::ReadFile(e.path());
    uih_test::FlipByte(e.path(), props.offset() + props.size() - 1, 0x80);
    for (int ro : {1, 0}) {
      SCOPED_TRACE(e.path().filename().string() + (ro ? " read-only" : " writable"));
      uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
      o.read_only = ro;
      uih_store* bad = nullptr;
      EXPECT_EQ(uih_store_open((dir_ / "store").c_str(), &o, &bad, &err), UIH_ERR_CORRUPTION);
      EXPECT_NE(std::string(uih_error_message(&err))
                    .find("table file " + e.path().filename().string() + ": its properties block does not verify"),
                std::string::npos)
          << uih_error_message(&err);
      uih_store_close(bad);
    }
    // The scrub reads every table file by itself: the same block is
    // verified before RocksDB parses it (the long damage run found this).
    uih_verify_totals t{};
    EXPECT_EQ(uih_store_verify((dir_ / "store").c_str(), nullptr, nullptr, &t, &err), UIH_ERR_CORRUPTION);
    EXPECT_NE(std::string(uih_error_message(&err)).find("its properties block does not verify"), std::string::npos)
        << uih_error_message(&err);
    WriteFile(e.path(), saved);
    damaged++;
  }
  EXPECT_GT(damaged, 0) << "the shard has block-based table files (its metadata's)";
  ASSERT_NE(s = Open(dir_ / "store"), nullptr) << "whole again, it opens";
  uih_store_close(s);
}

// A store keeps whom its loads erased, with the generation and through of
// the erasure, in each shard's metadata; a damaged entry is refused at open
// by name.
TEST_F(StoreTest, AStoreRemembersWhomItErasedAndRefusesADamagedEntry) {
  uih_store* s = Init("store", 1);
  std::string day = dir_ / "d.csv", del = dir_ / "del.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n2,a,100,7,\n");
  WriteFile(del, "user_id\n1\n");
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = 2000;
  o.deletes = del.c_str();
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
  WithMeta(dir_ / "store", [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::ErasedKey(1), &v).ok());
    EXPECT_EQ(v, uih::ErasedValue({2, 2000}));
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::ErasedKey(2), &v).IsNotFound());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, uih::ErasedKey(9), "short").ok());
  });
  uih_store* bad = nullptr;
  EXPECT_EQ(uih_store_open((dir_ / "store").c_str(), nullptr, &bad, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("erasure key"), std::string::npos) << uih_error_message(&err);
  EXPECT_EQ(bad, nullptr);
}

// A schema change is checked against the store's and stored with the
// generation: a non-successor and a changed text under a taken version
// are refused, publishing nothing; reopened, the store has version 2.
TEST_F(StoreTest, ASchemaChangeIsCheckedAndStoredWithItsGeneration) {
  uih_store* s = Init("store", 2);
  std::string day = dir_ / "d.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n2,b,110,6,\n");
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, 1000, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = 2000;
  const char* in[] = {day.c_str()};
  std::string retyped = kSchemaV2;  // not a successor: a trait changes its type
  const std::string item = "\"id\": 2, \"type\": \"id\"";
  retyped.replace(retyped.find(item), item.size(), "\"id\": 2, \"type\": \"uint32\"");
  std::string no_version = kSchema;  // a change without a new version
  no_version.replace(no_version.find("\"liked\""), 7, "\"like\"");
  for (const std::string& bad : {no_version, retyped}) {
    o.schema_json = bad.c_str();
    o.schema_len = bad.size();
    o.schema_origin = "new.json";
    EXPECT_EQ(uih_load(s, in, 1, &o, nullptr, &err), UIH_ERR_INCOMPATIBLE);
    EXPECT_EQ(std::string(uih_error_message(&err)).rfind("new.json", 0), 0u) << uih_error_message(&err);
  }
  ASSERT_EQ(uih_schema_version(uih_store_schema(s)), 1u);
  uih_store_close(s);
  s = Open(dir_ / "store");
  o.schema_json = kSchemaV2;
  o.schema_len = strlen(kSchemaV2);
  std::string day2 = dir_ / "d2.csv";
  WriteFile(day2, "user_id,group,ts,item,score\n1,a,1500,5,77\n");
  const char* in2[] = {day2.c_str()};
  uih_load_stats st{};
  ASSERT_EQ(uih_load(s, in2, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.schema_version, 2u);
  uih_store_close(s);
  s = Open(dir_ / "store");
  ASSERT_EQ(uih_schema_version(uih_store_schema(s)), 2u);
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_store_read(s, 1, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK);
  ASSERT_EQ(b->count, 2u);
  int score = uih_batch_column_index(b, 4);
  ASSERT_GE(score, 0);
  EXPECT_FALSE(uih_column_has(&b->columns[score], 0)) << "stored before version 2";
  EXPECT_EQ(uih_column_get_bits(&b->columns[score], 1), 77u);
  EXPECT_LT(uih_batch_column_index(b, 3), 0) << "'liked' is dropped";
  uih_batch_free(b);
  uih_store_close(s);
}

// Deletion files: each malformed one fails the load with its place and
// what was expected, before anything is written.
TEST_F(StoreTest, BadDeletionFilesAreNamed) {
  struct Case {
    std::string text, message;
  } cases[] = {
      {"", "del.csv: empty, expected a header"},
      {"user\n1\n", "del.csv:1: column 1 'user' is neither user_id nor an active id trait"},
      {"user_id,liked\n1,1\n", "del.csv:1: column 2 'liked' is neither user_id nor an active id trait"},
      {"user_id,user_id\n1,1\n", "del.csv:1: two user_id columns"},
      {"user_id,item,x\n1,1,1\n", "del.csv:1: a header of 3 columns"},
      {"user_id\n-1\n", "del.csv:2: column 'user_id': expected an unsigned 64-bit integer, got '-1'"},
      {"user_id\n\n\n18446744073709551616\n", "del.csv:4: column 'user_id': expected an unsigned 64-bit integer"},
      {"item\n1\n2,3\n", "del.csv:3: 2 fields, the header has 1"},
      {"user_id,item\n,\n", "del.csv:2: both fields empty"},
      {"user_id,item\n1,x\n", "del.csv:2: column 'item': expected an unsigned 64-bit integer or nothing, got 'x'"},
      {"user_id\n\"1\n", "del.csv:2: malformed CSV at the end"},
      {"user_id\n1\"2\n", "del.csv:2: malformed CSV"},
  };
  uih_store* s = Init("store", 1);
  std::string day = dir_ / "d.csv", del = dir_ / "del.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = 1000;
  o.deletes = del.c_str();
  const char* in[] = {day.c_str()};
  for (const Case& c : cases) {
    WriteFile(del, c.text);
    uih_error err{};
    EXPECT_EQ(uih_load(s, in, 1, &o, nullptr, &err), UIH_ERR_PARSE) << c.text;
    std::string msg = uih_error_message(&err);
    EXPECT_NE(msg.find(c.message), std::string::npos) << "file: " << c.text << "\nmessage: " << msg;
  }
  uint32_t cur;
  size_t n;
  uih_error err{};
  ASSERT_EQ(uih_store_generations(s, 0, nullptr, 0, &n, &cur, &err), UIH_OK);
  EXPECT_EQ(cur, 0u);
  uih_store_close(s);
}

// An input that is the rejects file (it would be overwritten) or the
// deletions file (it would be read as events) is refused, before anything
// is written.
TEST_F(StoreTest, AnInputThatIsTheRejectsOrDeletionsFileIsRefused) {
  uih_store* s = Init("store", 1);
  std::filesystem::create_directories(dir_ / "in");
  std::string day = dir_ / "in/day.csv", side = dir_ / "in/side.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n");
  WriteFile(side, "user_id\n1\n");
  std::string in_dir = dir_ / "in";
  const char* in[] = {in_dir.c_str()};
  for (int which = 0; which < 2; which++) {
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = 1000;
    (which ? o.deletes : o.rejects) = side.c_str();
    uih_error err{};
    EXPECT_EQ(uih_load(s, in, 1, &o, nullptr, &err), UIH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(uih_error_message(&err)).rfind("load: input " + side + " is the " +
                                                          (which ? "deletions" : "rejects") + " file", 0),
              0u)
        << uih_error_message(&err);
  }
  std::ifstream f(side);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "user_id\n1\n") << "left as it was";
  uih_store_close(s);
}

// A load run shard by shard (--shard, as a batch engine runs it) gives
// what one load of every shard gives, with the through derived from all
// the events.
TEST_F(StoreTest, ALoadShardByShardEqualsOneLoad) {
  std::mt19937_64 rng(9);
  std::string text = kHeader;
  for (int i = 0; i < 3000; i++)
    text += std::to_string(rng() % 300) + ",a," + std::to_string(kBase + static_cast<int64_t>(rng() % kDay)) + "," +
            std::to_string(rng() % 1000) + ",\n";
  std::string day = dir_ / "day.csv";
  WriteFile(day, text);
  uih_store* a = Init("a", 3);
  uih_store* b = Init("b", 3);
  const char* in[] = {day.c_str()};
  uih_error err{};
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.lookback = kDay / 2;
  ASSERT_EQ(uih_load(a, in, 1, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  for (int32_t sh = 2; sh >= 0; sh--) {
    o.shard = sh;
    ASSERT_EQ(uih_load(b, in, 1, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  }
  for (uint32_t sh = 0; sh < 3; sh++) {
    EXPECT_EQ(Scan(a, sh), Scan(b, sh)) << "shard " << sh;
    uih_generation ga[2], gb[2];
    size_t n;
    uint32_t cur;
    ASSERT_EQ(uih_store_generations(a, sh, ga, 2, &n, &cur, &err), UIH_OK);
    ASSERT_EQ(uih_store_generations(b, sh, gb, 2, &n, &cur, &err), UIH_OK);
    EXPECT_EQ(ga[0].through, gb[0].through);
    EXPECT_EQ(ga[0].inputs_digest, gb[0].inputs_digest) << "the same load";
  }
  uih_store_close(a);
  uih_store_close(b);
}

TEST_F(StoreTest, AMissingInputIsNamed) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  std::string missing = dir_ / "nope.csv";
  ASSERT_EQ(Load(s, {missing}, 1000, 0, &err), UIH_ERR_NOT_FOUND);
  EXPECT_EQ(std::string(uih_error_message(&err)), "input " + missing + ": No such file or directory");
  uih_store_close(s);
}

TEST_F(StoreTest, OpenRefusesWhatIsNotAStore) {
  uih_error err{};
  uih_store* s = nullptr;
  std::string missing = dir_ / "missing";
  EXPECT_EQ(uih_store_open(missing.c_str(), nullptr, &s, &err), UIH_ERR_NOT_FOUND);
  EXPECT_EQ(std::string(uih_error_message(&err)), "not a uihstore store: " + missing + ": it does not exist");
  EXPECT_EQ(uih_store_open(dir_.path().c_str(), nullptr, &s, &err), UIH_ERR_NOT_FOUND);
  EXPECT_EQ(std::string(uih_error_message(&err)),
            "not a uihstore store: " + dir_.path() + ": no UIHSTORE descriptor in it");
  // init refuses a directory with something in it, and leaves it alone
  WriteFile(dir_ / "keep.txt", "x");
  EXPECT_EQ(uih_store_init(dir_.path().c_str(), kSchema, strlen(kSchema), "t.json", 1, &err), UIH_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "keep.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "shard-0000"));
}

// Each store gets a random id in its descriptor, which is checked: every
// cut and every changed byte of it is refused, and so is a descriptor that
// names another store or none (its shards record the id). Format-1
// descriptors (no check line; stores made before ids had no id line) still
// parse.
TEST_F(StoreTest, TheDescriptorNamesItsStoreAndIsChecked) {
  uih_store* a = Init("a", 1);
  uih_store* b = Init("b", 1);
  ASSERT_TRUE(a && b);
  const uint64_t ida = uih_store_id(a), idb = uih_store_id(b);
  EXPECT_NE(ida, 0u);
  EXPECT_NE(ida, idb);
  uih_store_close(a);
  uih_store_close(b);
  auto read = [&](const char* name) {
    std::ifstream in(dir_ / (std::string(name) + "/UIHSTORE"));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string text = read("a");
  char line[32];
  snprintf(line, sizeof line, "id %016" PRIx64 "\n", ida);
  EXPECT_EQ(text.substr(0, 40), std::string("uihstore 2\nshards 1\n") + line);
  EXPECT_EQ(text.size(), 40u + 15u) << text;

  struct Case {
    std::string text;
    int rc;
    const char* message;
  } cases[] = {
      {"uihstore 1\nshards 1\n", UIH_OK, ""},
      {"uihstore 1\nshards 1\nid 00000000000000ff\n", UIH_OK, ""},
      {"uihstore 1\nshards 1\nid 0000000000000000\n", UIH_ERR_CORRUPTION, "line 3: expected 'id'"},
      {"uihstore 1\nshards 1\nid 00000000000000FF\n", UIH_ERR_CORRUPTION, "line 3: expected 'id'"},
      {"uihstore 1\nshards 1\nid 12345\n", UIH_ERR_CORRUPTION, "line 3: expected 'id'"},
      {"uihstore 1\nshards 1\nid 00000000000000ff\nx\n", UIH_ERR_CORRUPTION, "line 4: expected the end"},
      {"uihstore 2\nshards 1\n", UIH_ERR_CORRUPTION, "line 3: expected 'id' and 16 hex digits (lowercase, not all 0): the descriptor is cut short"},
      {"uihstore 2\nshards 1\nid 00000000000000ff\n", UIH_ERR_CORRUPTION, "line 4: expected 'check' and 8 hex digits (lowercase): the descriptor is cut short"},
      {"uihstore 2\nshards 1\nid 00000000000000ff\ncheck 00000000\n", UIH_ERR_CORRUPTION, "line 4: check 00000000, but lines 1..3 give"},
      {"uihstore 3\nshards 1\n", UIH_ERR_NOT_SUPPORTED, "format 3, this build reads formats 1 and 2"},
  };
  for (const Case& c : cases) {
    uint32_t shards = 0;
    uint64_t id = 7;
    uih_error err{};
    EXPECT_EQ(uih_store_descriptor_parse(c.text.data(), c.text.size(), &shards, &id, &err), c.rc) << c.text;
    if (c.rc == UIH_OK) {
      EXPECT_EQ(id, c.text.find("ff") != std::string::npos ? 0xffu : 0u) << c.text;
    } else {
      EXPECT_NE(std::string(uih_error_message(&err)).find(c.message), std::string::npos) << uih_error_message(&err);
    }
  }
  char again[96];
  ASSERT_EQ(uih_store_descriptor_write(1, ida, again, sizeof again), text.size());
  EXPECT_EQ(std::string(again), text);

  // Every cut and every changed byte: the open is refused, and says why.
  uih_store* s = nullptr;
  auto refused = [&](const std::string& t, const std::string& what) {
    WriteFile(dir_ / "a/UIHSTORE", t);
    uih_error err{};
    const int rc = uih_store_open((dir_ / "a").c_str(), nullptr, &s, &err);
    EXPECT_NE(rc, UIH_OK) << what;
    if (rc == UIH_OK) uih_store_close(s);
    else EXPECT_NE(std::string(uih_error_message(&err)).find("UIHSTORE"), std::string::npos) << uih_error_message(&err);
  };
  for (size_t cut = 0; cut < text.size(); cut++) refused(text.substr(0, cut), "cut at " + std::to_string(cut));
  for (size_t at = 0; at < text.size(); at++)
    for (int bit = 0; bit < 8; bit++) {
      std::string t = text;
      t[at] = static_cast<char>(t[at] ^ (1 << bit));
      refused(t, "byte " + std::to_string(at) + " bit " + std::to_string(bit));
    }
  // A format-1 descriptor: with the store's id it opens; cut before its id
  // line, or another store's, it names the shard that says otherwise.
  WriteFile(dir_ / "a/UIHSTORE", std::string("uihstore 1\nshards 1\n") + line);
  uih_error err{};
  ASSERT_EQ(uih_store_open((dir_ / "a").c_str(), nullptr, &s, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(uih_store_id(s), ida);
  uih_store_close(s);
  WriteFile(dir_ / "a/UIHSTORE", "uihstore 1\nshards 1\n");
  EXPECT_EQ(uih_store_open((dir_ / "a").c_str(), nullptr, &s, &err), UIH_ERR_CORRUPTION);
  char want[160];
  snprintf(want, sizeof want, "UIHSTORE descriptor names no id line, but shard 0 belongs to store %016" PRIx64, ida);
  EXPECT_NE(std::string(uih_error_message(&err)).find(want), std::string::npos) << uih_error_message(&err);
  WriteFile(dir_ / "a/UIHSTORE", read("b"));
  EXPECT_EQ(uih_store_open((dir_ / "a").c_str(), nullptr, &s, &err), UIH_ERR_CORRUPTION);
  snprintf(want, sizeof want, "names store %016" PRIx64 ", but shard 0 belongs to store %016" PRIx64, idb, ida);
  EXPECT_NE(std::string(uih_error_message(&err)).find(want), std::string::npos) << uih_error_message(&err);
  WriteFile(dir_ / "a/UIHSTORE", text);
  ASSERT_EQ(uih_store_open((dir_ / "a").c_str(), nullptr, &s, &err), UIH_OK) << uih_error_message(&err);
  uih_store_close(s);
}

// A load killed after it created its generation's column family but before
// it published: the next open drops the orphan and keeps the current one.
TEST_F(StoreTest, OpenDropsAGenerationThatWasNeverPublished) {
  uih_store* s = Init("store", 1);
  std::string day = dir_ / "d.csv";
  WriteFile(day, kHeader + "1,a,100,5,1\n");
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, 1000, 0, &err), UIH_OK);
  uih_store_close(s);
  {  // what the killed load left: a column family for generation 2, no record
    rocksdb::DB* db = nullptr;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    std::vector<std::string> names;
    std::string shard = dir_ / "store/shard-0000";
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), shard, &names).ok());
    for (auto& n : names) cfs.emplace_back(n, uih::IsGenerationCf(n) ? uih::GenerationCfOptions() : rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> hs;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), shard, cfs, &hs, &db).ok());
    rocksdb::ColumnFamilyHandle* orphan;
    ASSERT_TRUE(db->CreateColumnFamily(uih::GenerationCfOptions(), uih::GenerationCfName(2), &orphan).ok());
    hs.push_back(orphan);
    for (auto* h : hs) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    delete db;
  }
  std::filesystem::create_directories(dir_ / "store/tmp/shard-0000.gen-00000002");
  s = Open(dir_ / "store");
  ASSERT_NE(s, nullptr);
  uint32_t cur;
  size_t n;
  ASSERT_EQ(uih_store_generations(s, 0, nullptr, 0, &n, &cur, &err), UIH_OK);
  EXPECT_EQ(cur, 1u);
  EXPECT_EQ(n, 1u);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "store/tmp"));
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_store_read(s, 1, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK);
  EXPECT_EQ(b->count, 1u);
  uih_batch_free(b);
  // and the next load builds generation 2 again
  ASSERT_EQ(Load(s, {day}, 2000, 0, &err), UIH_OK) << uih_error_message(&err);
  ASSERT_EQ(uih_store_generations(s, 0, nullptr, 0, &n, &cur, &err), UIH_OK);
  EXPECT_EQ(cur, 2u);
  uih_store_close(s);
}

// The generation record: round trip, and every damaged byte is refused.
TEST(GenerationRecord, RoundTripsAndRefusesEveryDamagedByte) {
  uih_generation g{3, 2, 1, 0, kBase, kBase - kDay, 1000, 10, 5, 12345, 600, 500, 100, 7, 0, 0x1234};
  uint8_t b[UIH_GENERATION_SIZE];
  uih_generation_encode(&g, b);
  uih_generation back{};
  uih_error err{};
  ASSERT_EQ(uih_generation_decode(b, sizeof b, &back, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(memcmp(&g, &back, sizeof g), 0);
  for (size_t i = 0; i < sizeof b; i++) {
    b[i] ^= 0x10;
    EXPECT_NE(uih_generation_decode(b, sizeof b, &back, &err), UIH_OK) << "byte " << i;
    b[i] ^= 0x10;
  }
  EXPECT_EQ(uih_generation_decode(b, sizeof b - 1, &back, &err), UIH_ERR_CORRUPTION);
  g.parent = 3;  // a parent not older than its generation
  uih_generation_encode(&g, b);
  EXPECT_EQ(uih_generation_decode(b, sizeof b, &back, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("built on 3"), std::string::npos) << uih_error_message(&err);
}

}  // namespace


// A generation's value dictionaries live and die with its record: written
// by the load that built it, carried by the next loads' generations, gone
// from the metadata when the generation retires; damaged, they make the
// store refuse to open, naming the generation, rather than misread ids.
TEST_F(StoreTest, ValueDictionariesGoWithTheirGenerationAndAreChecked) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  {  // An int64 trait (which the loader's rows keep sign-flipped) gets the values as they are.
    const char* schema = R"({"name": "n", "version": 1, "groups": [{"name": "a", "id": 1, "stripe_events": 64,
      "traits": [{"name": "ts", "id": 1, "type": "timestamp"}, {"name": "delta", "id": 2, "type": "int64"}]}]})";
    const std::string path = dir_ / "n", csv = dir_ / "n.csv";
    ASSERT_EQ(uih_store_init(path.c_str(), schema, strlen(schema), "n.json", 1, &err), UIH_OK) << uih_error_message(&err);
    std::string text = "user_id,group,ts,delta\n";
    for (int u = 1; u <= 20; u++)
      for (int i = 0; i < 40; i++)
        text += std::to_string(u) + ",a," + std::to_string(kBase + u * 1000 + i) + "," +
                std::to_string(-(int64_t{1} << 40) * (1 + (u * 3 + i) % 9)) + "\n";
    WriteFile(csv, text);
    uih_store* n = nullptr;
    ASSERT_EQ(uih_store_open(path.c_str(), nullptr, &n, &err), UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(Load(n, {csv}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
    ContextPtr ctx = ScanContext(n, 0);
    ASSERT_EQ(uih_stripe_context_count(ctx.get()), 1u);
    const uih_value_dict* d = uih_stripe_context_at(ctx.get(), 0);
    ASSERT_EQ(uih_value_dict_entries(d), 9u);
    for (uint32_t r = 0; r < 9; r++) {
      const int64_t v = static_cast<int64_t>(uih_value_dict_value(d, r));
      EXPECT_TRUE(v < 0 && v % (int64_t{1} << 40) == 0 && v >= -9 * (int64_t{1} << 40)) << v;
    }
    uint64_t shared = 0;
    for (auto& [k, v] : Scan(n, 0)) {
      uih_stripe_column_info col{};
      ASSERT_EQ(uih_stripe_column_at(reinterpret_cast<const uint8_t*>(v.data()), v.size(), 1, &col, nullptr), UIH_OK);
      shared += (col.encoding & (UIH_ENC_DICTIONARY | UIH_ENC_DICT)) != 0 || col.scaled;
    }
    EXPECT_EQ(shared, 20u) << "every history's deltas: 9 values, ranked, a dictionary or a step";
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_store_read(n, 7, 1, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK);
    ASSERT_EQ(b->count, 40u);
    for (uint32_t i = 0; i < 40; i++)
      EXPECT_EQ(static_cast<int64_t>(uih_column_get_bits(&b->columns[uih_batch_column_index(b, 2)], i)),
                -(int64_t{1} << 40) * (1 + (7 * 3 + i) % 9));
    uih_batch_free(b);
    uih_store_close(n);
  }
  {  // A trait whose dictionary would not pay, judged on enough values, is
     // marked declined (a dictionary of no entries) and not counted again.
    const char* schema = R"({"name": "c", "version": 1, "groups": [{"name": "a", "id": 1, "stripe_events": 256,
      "traits": [{"name": "ts", "id": 1, "type": "timestamp"}, {"name": "code", "id": 2, "type": "uint32"}]}]})";
    const std::string path = dir_ / "c";
    ASSERT_EQ(uih_store_init(path.c_str(), schema, strlen(schema), "c.json", 1, &err), UIH_OK) << uih_error_message(&err);
    uih_store* c = nullptr;
    ASSERT_EQ(uih_store_open(path.c_str(), nullptr, &c, &err), UIH_OK) << uih_error_message(&err);
    for (int day = 0; day < 2; day++) {
      std::string text = "user_id,group,ts,code\n", csv = dir_ / ("c" + std::to_string(day) + ".csv");
      const int per_user = day == 0 ? 3500 : 5;  // 70,000 values on day 0: enough to judge
      for (int u = 1; u <= 20; u++)
        for (int i = 0; i < per_user; i++)
          text += std::to_string(u) + ",a," + std::to_string(kBase + day * kDay + i) + "," + std::to_string((u + i) % 8) + "\n";
      WriteFile(csv, text);
      uih_load_stats st{};
      ASSERT_EQ(Load(c, {csv}, kBase + (day + 1) * kDay, 0, &err, size_t{64} << 20, 1, &st), UIH_OK)
          << uih_error_message(&err);
      EXPECT_EQ(st.dicts_built, 0u);
      EXPECT_EQ(st.dicts_declined, day == 0 ? 1u : 0u) << "day " << day;
      ContextPtr ctx = ScanContext(c, 0);
      ASSERT_EQ(uih_stripe_context_count(ctx.get()), 1u) << "day " << day;
      EXPECT_EQ(uih_value_dict_entries(uih_stripe_context_at(ctx.get(), 0)), 0u);
    }
    uih_store_close(c);
  }
  for (int day = 0; day < 3; day++) {
    std::string text = kHeader, path = dir_ / ("d" + std::to_string(day) + ".csv");
    for (int u = 1; u <= 30; u++)
      for (int i = 0; i < 6; i++)
        text += std::to_string(u) + ",a," + std::to_string(kBase + day * kDay + u * 100 + i) + "," +
                std::to_string(Item(static_cast<uint64_t>((u * 7 + i) % 12))) + ",\n";
    WriteFile(path, text);
    uih_load_stats st{};
    ASSERT_EQ(Load(s, {path}, kBase + (day + 1) * kDay, 0, &err, size_t{64} << 20, 1, &st), UIH_OK)
        << uih_error_message(&err);
    EXPECT_EQ(st.dicts_built, day == 0 ? 1u : 0u) << "day " << day;  // group a's items (b has no rows)
    EXPECT_GT(st.dict_bytes, 0u);
  }
  uih_store_close(s);
  std::string dicts;
  WithMeta(dir_ / "store", [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::DictsKey(1), &v).IsNotFound()) << "retired with generation 1";
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::DictsKey(2), &v).ok());
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::DictsKey(3), &dicts).ok());
    EXPECT_EQ(v, dicts) << "kept as they were";
    std::string bad = dicts;
    bad[bad.size() / 2] ^= 0x20;
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, uih::DictsKey(3), bad).ok());
  });
  uih_store* opened = nullptr;
  EXPECT_EQ(uih_store_open((dir_ / "store").c_str(), nullptr, &opened, &err), UIH_ERR_CORRUPTION);
  const std::string msg = uih_error_message(&err);
  EXPECT_NE(msg.find("generation 3: value dictionaries: "), std::string::npos) << msg;
  EXPECT_EQ(opened, nullptr);
}

namespace {

// A version-1 spelling of dictionary `d`, as stores written before version
// 2 hold them: no model (with at most 256 entries, K + 1 code lengths in
// ceil((K + 1) / 2) bytes before the checksum), version byte 1.
std::string AsVersionOne(const uih_value_dict* d) {
  const uint8_t* p;
  size_t n;
  uih_value_dict_bytes(d, &p, &n);
  EXPECT_LE(uih_value_dict_entries(d), 256u);
  const size_t lens = (uih_value_dict_entries(d) + 2) / 2;
  std::string v(reinterpret_cast<const char*>(p), n - 4 - lens);
  v[4] = 1;
  const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(v.data(), v.size()));
  for (int i = 0; i < 4; i++) v.push_back(static_cast<char>(sum >> (8 * i)));
  return v;
}

// `user`'s events of `group` in the immutable tier, in time order.
std::vector<Ev> ReadUser(uih_store* s, uint64_t user, uint16_t group) {
  uih_batch* b = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_read(s, user, group, INT64_MIN, INT64_MAX, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK)
      << uih_error_message(&err);
  std::vector<Ev> out = BatchEvents(b);
  uih_batch_free(b);
  return out;
}

// Every event of users 1..n of group a, in key order.
std::vector<Ev> ReadAll(uih_store* s, int n) {
  std::vector<Ev> all;
  for (int u = 1; u <= n; u++)
    for (const Ev& e : ReadUser(s, static_cast<uint64_t>(u), 1)) all.push_back(e);
  return all;
}

}  // namespace

// A load with rebuild_dicts counts every shareable trait over the whole
// history and encodes every stripe again: the new generation holds one
// fresh (version-2) dictionary per trait, ranked by the whole history's
// counts, names no old one (its stripes decode with the new context alone)
// and reads back exactly what the store held — also where stripes named a
// version-1 dictionary, as a store written before version 2 holds them.
TEST_F(StoreTest, RebuiltDictionariesRankTheWholeHistoryAndReplaceOldOnes) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  constexpr int kUsers = 30;
  // Day d's events: 8 per user of group a, items of catalog `first`..+11,
  // the low ones most often.
  auto day_file = [&](int day, uint64_t first, int per_user) {
    std::string text = kHeader, path = dir_ / ("r" + std::to_string(day) + ".csv");
    for (int u = 1; u <= kUsers; u++)
      for (int i = 0; i < per_user; i++)
        text += std::to_string(u) + ",a," + std::to_string(kBase + day * kDay + u * 100 + i) + "," +
                std::to_string(Item(first + static_cast<uint64_t>(std::min((u + i) % 12, (u * i) % 12)))) + ",\n";
    WriteFile(path, text);
    return path;
  };
  uih_load_stats st{};
  ASSERT_EQ(Load(s, {day_file(0, 0, 8)}, kBase + kDay, 0, &err, size_t{64} << 20, 1, &st), UIH_OK)
      << uih_error_message(&err);
  ASSERT_EQ(st.dicts_built, 1u);
  uih_store_close(s);
  // Generation 1 also gets a version-1 dictionary of item, over another
  // catalog: as the last of the trait's, it encodes the next load's stripes.
  std::set<uint64_t> second;
  for (uint64_t r = 1000; r < 1012; r++) second.insert(Item(r));
  WithMeta(dir_ / "store", [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, uih::DictsKey(1), &v).ok());
    std::vector<uint64_t> values(second.begin(), second.end()), counts(values.size(), 2);
    uih_value_dict* d = nullptr;
    ASSERT_EQ(uih_value_dict_build(1, 2, UIH_TYPE_ID, values.data(), counts.data(), values.size(), 1, 256, &d, &err),
              UIH_OK)
        << uih_error_message(&err);
    const std::string old = AsVersionOne(d);
    uih_value_dict_free(d);
    for (size_t n = old.size(); n; n >>= 7) v.push_back(static_cast<char>((n & 127) | (n > 127 ? 128 : 0)));
    v += old;
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, uih::DictsKey(1), v).ok());
  });
  s = Open(dir_ / "store");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(Load(s, {day_file(1, 1000, 20)}, kBase + 2 * kDay, 0, &err, size_t{64} << 20, 1, &st), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(st.dicts_built, 0u) << "carried forward";
  {
    ContextPtr ctx = ScanContext(s, 0);
    ASSERT_EQ(uih_stripe_context_count(ctx.get()), 2u);
    uint64_t shared = 0;
    for (auto& [k, v] : Scan(s, 0)) {
      uih_stripe_column_info col{};
      ASSERT_EQ(uih_stripe_column_at(reinterpret_cast<const uint8_t*>(v.data()), v.size(), 1, &col, nullptr), UIH_OK);
      shared += col.encoding == UIH_ENC_SHARED;
    }
    EXPECT_GT(shared, 0u) << "stripes that name the version-1 dictionary";
  }
  const std::vector<Ev> before = ReadAll(s, kUsers);
  const size_t stripes = Scan(s, 0).size();

  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.rebuild_dicts = 1;
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.through, kBase + 2 * kDay) << "no inputs: where the store stands";
  EXPECT_EQ(st.stripes_copied, 0u);
  EXPECT_EQ(st.stripes_written, stripes);
  EXPECT_EQ(st.events_new, 0u);
  EXPECT_EQ(st.dicts_built, 1u) << "item of group a (b has no rows)";
  ContextPtr ctx = ScanContext(s, 0);
  ASSERT_EQ(uih_stripe_context_count(ctx.get()), 1u) << "nothing carried forward";
  const uih_value_dict* d = uih_stripe_context_at(ctx.get(), 0);
  const uint8_t* p;
  size_t n;
  uih_value_dict_bytes(d, &p, &n);
  EXPECT_EQ(p[4], 2) << "a dictionary of version 2";
  ASSERT_GT(uih_value_dict_entries(d), 12u) << "both catalogs' repeated items";
  EXPECT_TRUE(second.count(uih_value_dict_value(d, 0))) << "day 1's items, 20 a user, outnumber day 0's 8";
  uint64_t coded = 0;
  for (auto& [k, v] : Scan(s, 0)) {
    uih_key key;
    ASSERT_EQ(uih_key_decode(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &key, nullptr), UIH_OK);
    EXPECT_FALSE(DecodeStripe(uih_store_schema(s), key.group, v, ctx.get()).empty());
    uih_stripe_column_info col{};
    ASSERT_EQ(uih_stripe_column_at(reinterpret_cast<const uint8_t*>(v.data()), v.size(), 1, &col, nullptr), UIH_OK);
    coded += col.encoding == UIH_ENC_CODED;
  }
  EXPECT_GT(coded, 0u) << "the model codes item ids";
  const std::vector<Ev> after = ReadAll(s, kUsers);
  EXPECT_EQ(after, before);

  uih_load_stats again{};
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, &again, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(again.shards_skipped, 1u) << "the same rebuild again: a rerun";
  EXPECT_EQ(again.shards, 0u);
  // Without a rebuild, the next load carries the rebuilt dictionary forward.
  ASSERT_EQ(Load(s, {day_file(2, 0, 4)}, kBase + 3 * kDay, 0, &err, size_t{64} << 20, 1, &st), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(st.dicts_built, 0u);
  ContextPtr later = ScanContext(s, 0);
  ASSERT_EQ(uih_stripe_context_count(later.get()), 1u);
  EXPECT_EQ(uih_value_dict_id(uih_stripe_context_at(later.get(), 0)), uih_value_dict_id(d));
  // A rebuild with deletions counts none of what they erase: the scrubbed
  // item, the most frequent, leaves the dictionary with its events.
  const uint64_t scrubbed = uih_value_dict_value(d, 0);
  const std::string del = dir_ / "del.csv";
  WriteFile(del, "item\n" + std::to_string(scrubbed) + "\n");
  o.deletes = del.c_str();
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_GT(st.deleted, 0u);
  ContextPtr cleaned = ScanContext(s, 0);
  ASSERT_EQ(uih_stripe_context_count(cleaned.get()), 1u);
  const uih_value_dict* c = uih_stripe_context_at(cleaned.get(), 0);
  EXPECT_GT(uih_value_dict_entries(c), 0u);
  for (uint32_t r = 0; r < uih_value_dict_entries(c); r++) EXPECT_NE(uih_value_dict_value(c, r), scrubbed) << r;
  for (const Ev& e : ReadAll(s, kUsers)) EXPECT_NE(e.item, scrubbed);
  uih_store_close(s);
}

// The rows a load counts to build a dictionary are those it keeps: an item
// its deletions scrub and events before the lookback's horizon are not in
// the dictionary, however often they come.
TEST_F(StoreTest, DictionariesCountOnlyTheEventsALoadKeeps) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  std::string text = kHeader;
  for (int u = 1; u <= 20; u++)
    for (int i = 0; i < 12; i++) {
      const int64_t ts = kBase + (i < 4 ? 0 : 5 * kDay) + u * 100 + i;  // the first 4 expire
      const uint64_t item = i < 4 ? Item(500) : i % 2 ? Item(600) : Item(i % 5);  // 600 is scrubbed
      text += std::to_string(u) + ",a," + std::to_string(ts) + "," + std::to_string(item) + ",\n";
    }
  const std::string csv = dir_ / "k.csv", del = dir_ / "del.csv";
  WriteFile(csv, text);
  WriteFile(del, "item\n" + std::to_string(Item(600)) + "\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = kBase + 6 * kDay;
  o.lookback = 3 * kDay;
  o.deletes = del.c_str();
  const char* in[] = {csv.c_str()};
  uih_load_stats st{};
  ASSERT_EQ(uih_load(s, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.expired, 80u);
  EXPECT_EQ(st.deleted, 80u);
  ASSERT_EQ(st.dicts_built, 1u);
  ContextPtr ctx = ScanContext(s, 0);
  ASSERT_EQ(uih_stripe_context_count(ctx.get()), 1u);
  const uih_value_dict* d = uih_stripe_context_at(ctx.get(), 0);
  std::set<uint64_t> values;
  for (uint32_t r = 0; r < uih_value_dict_entries(d); r++) values.insert(uih_value_dict_value(d, r));
  EXPECT_EQ(values, (std::set<uint64_t>{Item(0), Item(1), Item(3), Item(4)})) << "the kept events' items alone";
  uih_store_close(s);
}

// A rebuild that also loads a day, with deletions and a lookback, over two
// groups: each group's dictionary holds exactly the values seen twice or
// more among the events the new generation keeps — stored or new — and
// every history reads back as the model's kept events.
TEST_F(StoreTest, ARebuildWithInputsCountsWhatTheGenerationKeeps) {
  uih_store* s = Init("store", 1);
  uih_error err{};
  struct E {
    uint64_t user;
    uint16_t group;
    int64_t ts;
    uint64_t item;
  };
  std::vector<E> all;
  auto write = [&](const std::string& name, int day, uint64_t a_first, int a_per, int b_per) {
    std::string text = kHeader;
    for (uint64_t u = 1; u <= 12; u++) {
      for (int i = 0; i < a_per; i++)  // user 5's first two: an item of their own (expired, in a kept stripe)
        all.push_back({u, 1, kBase + day * kDay + static_cast<int64_t>(u) * 100 + i,
                       u == 5 && day == 0 && i < 2 ? Item(77) : Item(a_first + (u % 5 + static_cast<uint64_t>(i) % 3))});
      for (int i = 0; i < b_per; i++) all.push_back({u, 2, kBase + day * kDay + static_cast<int64_t>(u) * 100 + 50 + i,
                                                     Item(100 + (u + static_cast<uint64_t>(i)) % 4)});
    }
    for (size_t k = all.size() - 12 * static_cast<size_t>(a_per + b_per); k < all.size(); k++)
      text += std::to_string(all[k].user) + "," + (all[k].group == 1 ? "a," : "b,") + std::to_string(all[k].ts) +
              "," + std::to_string(all[k].item) + ",\n";
    WriteFile(dir_ / name, text);
    return std::string(dir_ / name);
  };
  const std::string day0 = write("w0.csv", 0, 0, 10, 6);
  ASSERT_EQ(Load(s, {day0}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  const std::string day1 = write("w1.csv", 1, 200, 5, 3);
  // Erase user 7, user 8's item 3, item 101 everywhere; the lookback drops
  // day 0's events of users 1..4 and two of user 5 (in a stripe it keeps).
  const std::string del = dir_ / "wdel.csv";
  WriteFile(del, "user_id,item\n7,\n8," + std::to_string(Item(3)) + "\n," + std::to_string(Item(101)) + "\n");
  const int64_t through = kBase + 2 * kDay, horizon = kBase + 502;
  auto kept = [&](const E& e) {
    return e.ts >= horizon && e.user != 7 && !(e.user == 8 && e.item == Item(3)) && e.item != Item(101);
  };
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = through;
  o.lookback = through - horizon;
  o.deletes = del.c_str();
  o.rebuild_dicts = 1;
  const char* in[] = {day1.c_str()};
  uih_load_stats st{};
  ASSERT_EQ(uih_load(s, in, 1, &o, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.stripes_copied, 0u);
  EXPECT_EQ(st.dicts_built, 2u) << "item of group a and of group b";
  std::map<uint16_t, std::map<uint64_t, int>> counts;
  for (const E& e : all)
    if (kept(e)) counts[e.group][e.item]++;
  ContextPtr ctx = ScanContext(s, 0);
  ASSERT_EQ(uih_stripe_context_count(ctx.get()), 2u);
  for (size_t i = 0; i < 2; i++) {
    const uih_value_dict* d = uih_stripe_context_at(ctx.get(), i);
    ASSERT_EQ(uih_value_dict_trait(d), 2);
    // Ranked by count, then value (uih_value_dict_build): the exact counts show.
    std::vector<std::pair<int, uint64_t>> want;
    for (auto& [item, n] : counts[uih_value_dict_group(d)])
      if (n >= 2) want.emplace_back(-n, item);
    std::sort(want.begin(), want.end());
    std::vector<std::pair<int, uint64_t>> got;
    for (uint32_t r = 0; r < uih_value_dict_entries(d); r++) {
      const uint64_t v = uih_value_dict_value(d, r);
      got.emplace_back(-counts[uih_value_dict_group(d)][v], v);
    }
    EXPECT_EQ(got, want) << "group " << uih_value_dict_group(d);
  }
  for (uint16_t g = 1; g <= 2; g++)
    for (uint64_t u = 1; u <= 12; u++) {
      std::vector<std::pair<int64_t, uint64_t>> want, got;
      for (const E& e : all)
        if (e.user == u && e.group == g && kept(e)) want.emplace_back(e.ts, e.item);
      for (const Ev& e : ReadUser(s, u, g)) got.emplace_back(e.ts, e.item);
      EXPECT_EQ(got, want) << "user " << u << " group " << g;
    }
  uih_store_close(s);
}
