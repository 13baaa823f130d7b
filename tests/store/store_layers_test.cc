// Layered generations: a day's load written as a layer of the stripes it
// changed above the files of the generation before (uih/loader.h,
// "Layers"), against the same days loaded whole. Both stores must hold the
// same stripes, byte for byte, and read the same events, day after day,
// through late events, new users older than every stored event, the
// lookback, deletions and the return to one layer.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "store/store_fixture.h"
#include "test_util.h"
#include "uih/key.h"
#include "uih/loader.h"
#include "uih/store.h"
#include "uih/stripe.h"

namespace uih_test {
namespace {

namespace fs = std::filesystem;

// Every column of a batch: trait, presence and value of each event.
std::string Events(const uih_batch* b) {
  std::string out = std::to_string(b->count) + ":";
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    const uih_column& col = b->columns[c];
    out += "|" + std::to_string(col.trait->id);
    for (uint32_t r = 0; r < b->count; r++)
      out += uih_column_has(&col, r) ? "," + std::to_string(uih_column_get_bits(&col, r)) : ",-";
  }
  return out;
}

// What the tests of the growing-stripe rule share: a schema of one group
// (128 events a stripe, a uint32 trait v free among four encodings,
// uncompressed), an encoder for fresh competitions, and column v's
// directory entry in a stripe.
using TimedValues = std::vector<std::pair<int64_t, uint32_t>>;  // (ts, v), in time order
struct StripeRule {
  static constexpr char kJson[] = R"({"name": "g", "version": 1, "groups": [
    {"name": "a", "id": 1, "stripe_events": 128, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"},
      {"name": "v", "id": 2, "type": "uint32", "encodings": ["plain", "for", "delta", "rle"],
       "compression": "none"}]}]})";
  uih_schema* schema = nullptr;
  const uih_group* g = nullptr;
  uih_stripe_encoder* enc = nullptr;

  StripeRule() {
    uih_error err{};
    EXPECT_EQ(uih_schema_parse(kJson, strlen(kJson), "g.json", &schema, &err), UIH_OK) << uih_error_message(&err);
    g = schema ? uih_schema_group_by_id(schema, 1) : nullptr;
    EXPECT_EQ(uih_stripe_encoder_create(nullptr, &enc, &err), UIH_OK);
  }
  ~StripeRule() {
    uih_stripe_encoder_free(enc);
    uih_schema_free(schema);
  }
  // Column v's entry in `stripe`'s directory (its `events`: the stripe's).
  static uih_stripe_column_info ColumnV(const uint8_t* p, size_t n) {
    uih_error err{};
    uih_stripe_info info{};
    uih_stripe_column_info cols[4];
    EXPECT_EQ(uih_stripe_read_columns(p, n, &info, cols, 4, &err), UIH_OK) << uih_error_message(&err);
    for (uint32_t c = 0; c < info.ncolumns && c < 4; c++)
      if (cols[c].trait_id == 2) {
        EXPECT_EQ(cols[c].events, info.count);
        return cols[c];
      }
    ADD_FAILURE() << "no column v";
    return uih_stripe_column_info{};
  }
  static uih_stripe_column_info ColumnV(const std::string& stripe) {
    return ColumnV(reinterpret_cast<const uint8_t*>(stripe.data()), stripe.size());
  }
  // Column v as a competition over events [a, b) of `ev` stores it.
  uih_stripe_column_info Competed(const TimedValues& ev, size_t a, size_t b) {
    uih_error err{};
    uih_batch* batch = nullptr;
    EXPECT_EQ(uih_batch_create(g, static_cast<uint32_t>(b - a), nullptr, 0, &batch, &err), UIH_OK);
    for (size_t i = a; i < b; i++) {
      uint32_t row;
      EXPECT_EQ(uih_batch_append(batch, &row, &err), UIH_OK);
      uih_column_set_bits(&batch->columns[uih_batch_column_index(batch, 1)], row, static_cast<uint64_t>(ev[i].first));
      uih_column_set_bits(&batch->columns[uih_batch_column_index(batch, 2)], row, ev[i].second);
    }
    const uint8_t* p = nullptr;
    size_t n = 0;
    EXPECT_EQ(uih_stripe_encode(enc, batch, 1, &p, &n, &err), UIH_OK) << uih_error_message(&err);
    uih_batch_free(batch);
    return ColumnV(p, n);
  }
};

class StoreLayersTest : public StoreTest {
 protected:
  static constexpr uint32_t kShards = 2;

  uih_store* Make(const std::string& name, uint64_t file_bytes) {
    const std::string path = dir_ / name;
    uih_error err{};
    EXPECT_EQ(uih_store_init(path.c_str(), kSchema, strlen(kSchema), "t.json", kShards, &err), UIH_OK);
    uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
    so.file_bytes = file_bytes;  // small files: a layer of several, histories cut by file boundaries
    uih_store* s = nullptr;
    EXPECT_EQ(uih_store_open(path.c_str(), &so, &s, &err), UIH_OK) << uih_error_message(&err);
    return s;
  }

  // One day of events for users 1..80 (day 0: a history of 20 days):
  // most in the day, some late (any earlier day), some far older than
  // every stored event (a history's first stripe changes its key).
  std::string Day(std::mt19937_64& rng, int day) {
    std::string rows = kHeader;
    const int n = day == 0 ? 4000 : 60 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; i++) {
      const uint64_t user = 1 + rng() % 80;
      int64_t ts = day == 0 ? kBase - static_cast<int64_t>(rng() % (20 * kDay))
                            : kBase + day * kDay + static_cast<int64_t>(rng() % kDay);
      const uint64_t kind = rng() % 20;
      if (kind == 0 && day > 0) ts = kBase + static_cast<int64_t>(rng() % (static_cast<uint64_t>(day) * kDay));
      if (kind == 1 && day > 0) ts = kBase - 20 * kDay - static_cast<int64_t>(rng() % (10 * kDay));
      const bool a = rng() % 3 != 0;  // group b has no 'liked'
      rows += std::to_string(user) + (a ? ",a," : ",b,") + std::to_string(ts) + "," + std::to_string(rng() % 50) +
              (a && rng() % 2 ? ",1\n" : ",\n");
    }
    return rows;
  }

  // Two stores of StripeRule's schema, one shard each: stores[0] loaded
  // layered, stores[1] written whole.
  void OpenRulePair(uih_store* stores[2]) {
    uih_error err{};
    for (int w = 0; w < 2; w++) {
      const std::string path = dir_ / (w ? "whole" : "layered");
      ASSERT_EQ(uih_store_init(path.c_str(), StripeRule::kJson, strlen(StripeRule::kJson), "g.json", 1, &err), UIH_OK)
          << uih_error_message(&err);
      stores[w] = Open(path);
      ASSERT_NE(stores[w], nullptr);
    }
  }

  int LoadDay(uih_store* s, const std::string& file, int64_t through, int64_t lookback, const std::string& deletes,
              int rewrite, uih_load_stats* st, uih_error* err) {
    const char* in[] = {file.c_str()};
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    o.lookback = lookback;
    o.rewrite = rewrite;
    o.deletes = deletes.empty() ? nullptr : deletes.c_str();
    return uih_load(s, in, 1, &o, st, err);
  }

  // Both stores hold the same stripes (through RocksDB's merge of the
  // layers) and read the same events (through GenerationFiles' merge).
  void ExpectSame(uih_store* layered, uih_store* whole, const std::string& when) {
    SCOPED_TRACE(when);
    for (uint32_t sh = 0; sh < kShards; sh++) EXPECT_TRUE(Scan(layered, sh) == Scan(whole, sh)) << "shard " << sh;
    uih_error err{};
    for (uint64_t user = 1; user <= 80; user++)
      for (uint16_t group = 1; group <= 2; group++)
        for (const auto& [from, to] : std::vector<std::pair<int64_t, int64_t>>{
                 {INT64_MIN, INT64_MAX}, {kBase + 2 * kDay + 1, kBase + 4 * kDay}, {kBase - 9 * kDay, kBase + kDay / 2}}) {
          uih_batch *a = nullptr, *b = nullptr;
          ASSERT_EQ(uih_store_read(layered, user, group, from, to, UIH_TIER_IMMUTABLE, 0, &a, &err), UIH_OK)
              << uih_error_message(&err);
          ASSERT_EQ(uih_store_read(whole, user, group, from, to, UIH_TIER_IMMUTABLE, 0, &b, &err), UIH_OK)
              << uih_error_message(&err);
          EXPECT_EQ(Events(a), Events(b)) << "user " << user << " group " << group << " [" << from << ", " << to << "]";
          uih_batch_free(a);
          uih_batch_free(b);
        }
  }

  uih_generation_layout Layout(uih_store* s, uint32_t shard) {
    uih_generation_layout lay{};
    uih_error err{};
    EXPECT_EQ(uih_store_generation_layout(s, shard, 0, &lay, &err), UIH_OK) << uih_error_message(&err);
    return lay;
  }
};

TEST_F(StoreLayersTest, DayAfterDayALayeredStoreHoldsAndReadsWhatOneWrittenWholeDoes) {
  uih_store* layered = Make("layered", 600);
  uih_store* whole = Make("whole", 600);
  ASSERT_TRUE(layered && whole);
  std::mt19937_64 rng(11);
  uih_error err{};
  uint32_t layers_seen = 1;
  bool back_to_one = false;
  for (int day = 0; day < 10; day++) {
    const std::string file = dir_ / ("day" + std::to_string(day) + ".csv");
    WriteFile(file, Day(rng, day));
    std::string deletes;
    if (day == 6) {  // deletions: the load writes whole, so nothing they name stays on disk
      deletes = dir_ / "deletes.csv";
      WriteFile(deletes, "user_id,item\n7,\n,13\n");
    }
    const int64_t through = kBase + (day + 1) * kDay;
    const int64_t lookback = day >= 8 ? 25 * kDay : 0;  // the lookback drops whole stripes and parts of them
    uih_load_stats sl{}, sw{};
    ASSERT_EQ(LoadDay(layered, file, through, lookback, deletes, 0, &sl, &err), UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(LoadDay(whole, file, through, lookback, deletes, 1, &sw, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(sw.shards_layered, 0u);
    EXPECT_EQ(sl.events, sw.events);
    EXPECT_EQ(sl.stripes, sw.stripes);
    EXPECT_EQ(sl.histories, sw.histories);
    EXPECT_EQ(sl.bytes, sw.bytes);
    EXPECT_EQ(sl.expired, sw.expired);
    EXPECT_EQ(sl.stripes_copied, sw.stripes_copied);
    EXPECT_EQ(sl.stripes_written, sw.stripes_written);
    for (uint32_t sh = 0; sh < kShards; sh++) {
      const uih_generation_layout lay = Layout(layered, sh);
      EXPECT_EQ(Layout(whole, sh).layers, 1u);
      EXPECT_GE(lay.layers, 1u);
      EXPECT_LE(lay.layers, UIH_LOAD_LAYERS_MAX) << "day " << day;
      if (day == 0 || day == 6) {
        EXPECT_EQ(lay.layers, 1u) << "day " << day << ": written whole";
      }
      if (lay.layers > layers_seen) layers_seen = lay.layers;
      if (day > 0 && day != 6 && lay.layers == 1) back_to_one = true;
    }
    if (day == 0 || day == 6) {
      EXPECT_EQ(sl.shards_layered, 0u) << "day " << day;
    }
    ExpectSame(layered, whole, "day " + std::to_string(day));
  }
  EXPECT_GE(layers_seen, 3u) << "loads layered one above another";
  EXPECT_TRUE(back_to_one) << "past UIH_LOAD_LAYERS_MAX layers, or a fifth of the oldest, a load writes whole";

  // Both verify clean, and a reopened store (read-only, as a trainer opens
  // it) reads the same.
  uih_store_close(layered);
  uih_store_close(whole);
  uih_verify_totals t{};
  EXPECT_EQ(uih_store_verify((dir_ / "layered").c_str(), nullptr, nullptr, &t, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(uih_store_verify((dir_ / "whole").c_str(), nullptr, nullptr, &t, &err), UIH_OK) << uih_error_message(&err);
  layered = Open(dir_ / "layered", 1);
  whole = Open(dir_ / "whole", 1);
  ExpectSame(layered, whole, "reopened read-only");
  uih_store_close(layered);
  uih_store_close(whole);
}

// A layered generation shares its base's files: retiring the base (keep =
// 1) removes the base's names only, and what the layers share stays and
// reads. The shard's format is 4 from its first layered generation on.
TEST_F(StoreLayersTest, RetiringTheGenerationALayerSharesLeavesItsFiles) {
  const std::string path = dir_ / "store";
  uih_error err{};
  ASSERT_EQ(uih_store_init(path.c_str(), kSchema, strlen(kSchema), "t.json", 1, &err), UIH_OK);
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.keep = 1;
  uih_store* s = nullptr;
  ASSERT_EQ(uih_store_open(path.c_str(), &so, &s, &err), UIH_OK);
  std::mt19937_64 rng(5);
  std::map<std::string, std::string> before;
  for (int day = 0; day < 3; day++) {
    const std::string file = dir_ / ("day" + std::to_string(day) + ".csv");
    WriteFile(file, Day(rng, day));
    uih_load_stats st{};
    ASSERT_EQ(LoadDay(s, file, kBase + (day + 1) * kDay, 0, "", 0, &st, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(st.shards_layered, day == 0 ? 0u : 1u);
    size_t n;
    uint32_t current;
    uih_generation gens[4];
    ASSERT_EQ(uih_store_generations(s, 0, gens, 4, &n, &current, &err), UIH_OK);
    EXPECT_EQ(n, 1u) << "keep = 1: the generation below the layer retired";
    EXPECT_EQ(Layout(s, 0).layers, static_cast<uint32_t>(day + 1));
  }
  before = Scan(s, 0);
  EXPECT_FALSE(before.empty());
  uih_store_close(s);
  uih_verify_totals t{};
  EXPECT_EQ(uih_store_verify(path.c_str(), nullptr, nullptr, &t, &err), UIH_OK) << uih_error_message(&err);
  size_t ssts = 0;
  for (const auto& e : fs::directory_iterator(path + "/shard-0000")) ssts += e.path().extension() == ".sst";
  EXPECT_GE(ssts, 3u) << "the three layers' files, under the one live generation's names";
  s = Open(path, 1);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(Scan(s, 0) == before);
  uih_store_close(s);
  // Format 4 (big-endian, store/format.h): what an older build refuses.
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  ASSERT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path + "/shard-0000",
                                           {{rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()}}, &hs,
                                           &db)
                  .ok());
  std::string v;
  EXPECT_TRUE(db->Get({}, hs[0], "uih.format", &v).ok());
  EXPECT_EQ(v, std::string("\0\0\0\4", 4));
  EXPECT_TRUE(db->DestroyColumnFamilyHandle(hs[0]).ok());
  delete db;
}

// Through the writer's API: a layer per publish, each replacing one
// stripe with itself, up to the most a generation has (6: RocksDB's level
// 0 stays free); a seventh is refused by name, and the generation reads
// the same throughout. A deletion needs a layer to delete from.
TEST_F(StoreLayersTest, AGenerationHasAtMostSixLayers) {
  uih_store* s = Make("store", 1 << 20);
  ASSERT_NE(s, nullptr);
  std::mt19937_64 rng(3);
  const std::string file = dir_ / "day0.csv";
  WriteFile(file, Day(rng, 0));
  uih_error err{};
  ASSERT_EQ(LoadDay(s, file, kBase + kDay, 0, "", 0, nullptr, &err), UIH_OK) << uih_error_message(&err);
  const std::map<std::string, std::string> before = Scan(s, 0);
  ASSERT_FALSE(before.empty());
  const auto& [key, value] = *std::next(before.begin(), static_cast<std::ptrdiff_t>(before.size() / 2));
  for (uint32_t layers = 1;; layers++) {
    EXPECT_EQ(Layout(s, 0).layers, layers);
    uih_store_writer* w = nullptr;
    ASSERT_EQ(uih_store_writer_open(s, 0, &w, &err), UIH_OK) << uih_error_message(&err);
    const uint8_t* k = reinterpret_cast<const uint8_t*>(key.data());
    if (layers == 1) {
      EXPECT_EQ(uih_store_writer_delete(w, k, key.size(), &err), UIH_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(uih_error_message(&err)).find("nothing below it to delete from"), std::string::npos);
    }
    const int rc = uih_store_writer_layer(w, &err);
    if (layers == 6) {
      EXPECT_EQ(rc, UIH_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(uih_error_message(&err)).find("has 6 layers, the most a generation has"),
                std::string::npos)
          << uih_error_message(&err);
      uih_store_writer_abort(w);
      break;
    }
    ASSERT_EQ(rc, UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(uih_store_writer_add(w, k, key.size(), reinterpret_cast<const uint8_t*>(value.data()), value.size(), &err),
              UIH_OK);
    uih_generation gens[4];
    size_t n;
    uint32_t current;
    ASSERT_EQ(uih_store_generations(s, 0, gens, 4, &n, &current, &err), UIH_OK);
    uih_generation g = gens[n - 1];
    const uint8_t* dicts = nullptr;
    size_t dicts_len = 0;
    uih_store_scan* sc = nullptr;
    ASSERT_EQ(uih_store_scan_open(s, 0, 0, &sc, &err), UIH_OK);
    ASSERT_EQ(uih_store_scan_dicts(sc, &dicts, &dicts_len, &err), UIH_OK);
    ASSERT_EQ(uih_store_writer_set_dicts(w, dicts, dicts_len, &err), UIH_OK);
    uih_store_scan_close(sc);
    ASSERT_EQ(uih_store_writer_publish(w, &g, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_TRUE(Scan(s, 0) == before) << "layer " << layers + 1;
  }
  uih_store_close(s);
  uih_verify_totals t{};
  EXPECT_EQ(uih_store_verify((dir_ / "store").c_str(), nullptr, nullptr, &t, &err), UIH_OK) << uih_error_message(&err);
}

// A stripe that gains events day after day keeps the encodings it won (no
// new competition: uih_stripe_encode_like), each column while it takes no
// more than 9/8 of the bytes per event it took stored; a column that grows
// past that competes again, the whole stripe competes when its size passes
// a power of four, and a stripe its history has grown past (not the last)
// competes whole, its final form (loader/merge.c, write_stripe); layered
// or written whole alike. Users switch at random between values one apart
// (delta wins), random ones (frame of reference), a narrow band and runs;
// each day's stripes are checked against a fresh competition over the same
// events: an encoding changes only to the competition's choice, a column
// that grew past 9/8 per event or a stripe past a power of four holds the
// competition's choice, and the rule both holds encodings a competition
// would change and changes them.
TEST_F(StoreLayersTest, AGrowingStripeKeepsItsEncodingsWhileTheyHoldUp) {
  StripeRule rule;
  ASSERT_NE(rule.g, nullptr);
  uih_store* stores[2] = {};
  ASSERT_NO_FATAL_FAILURE(OpenRulePair(stores));
  uih_error err{};
  // Users 1..24 gain 6 events a day; user 25 gains 30 and outgrows its
  // stripes: random values (frame of reference) for two days, then one
  // value over and over, which frame of reference holds at fewer bytes per
  // event than it did (so it is kept), but run-length holds better still:
  // its first stripe competes when the history grows past it.
  constexpr uint64_t kUsers = 25;
  std::mt19937_64 rng(5);
  std::map<uint64_t, TimedValues> events;
  std::map<uint64_t, int> regime;
  std::map<uint64_t, uih_stripe_column_info> before;  // each light user's column v, the day before
  int changed = 0, grown = 0, held = 0, complete = 0, quadrupled = 0;
  for (int day = 0; day < 12; day++) {
    std::string rows = "user_id,group,ts,v\n";
    for (uint64_t u = 1; u <= kUsers; u++) {
      auto& ev = events[u];
      if (day == 0 || rng() % 2) regime[u] = static_cast<int>(rng() % 4);
      if (u == kUsers) regime[u] = day < 2 ? 1 : 4;
      const int n = day == 0 ? 40 : u == kUsers ? 30 : 6;
      for (int i = 0; i < n; i++) {
        const uint32_t last = ev.empty() ? 1000 : ev.back().second;
        uint32_t v = 0;
        switch (regime[u]) {
          case 0: v = last + 1; break;
          case 1: v = static_cast<uint32_t>(rng() % (1u << 20)); break;
          case 2: v = 5000 + static_cast<uint32_t>(rng() % 16); break;
          case 3: v = rng() % 8 ? last : static_cast<uint32_t>(rng() % 64); break;
          default: v = 7; break;
        }
        const int64_t ts = kBase + day * kDay + i * 1000 + static_cast<int64_t>(u);
        ev.emplace_back(ts, v);
        rows += std::to_string(u) + ",a," + std::to_string(ts) + "," + std::to_string(v) + "\n";
      }
    }
    const std::string file = dir_ / ("g" + std::to_string(day) + ".csv");
    WriteFile(file, rows);
    std::map<std::string, std::string> gen[2];
    for (int w = 0; w < 2; w++) {
      uih_load_stats st{};
      ASSERT_EQ(LoadDay(stores[w], file, kBase + (day + 1) * kDay, 0, "", w, &st, &err), UIH_OK)
          << uih_error_message(&err);
      gen[w] = Scan(stores[w], 0);
    }
    ASSERT_TRUE(gen[0] == gen[1]) << "day " << day << ": layered or whole, the same stripes";
    std::map<uint64_t, std::vector<std::string>> stripes;  // each user's, in key order
    for (const auto& [key, value] : gen[0]) {
      uih_key k{};
      ASSERT_EQ(uih_key_decode(reinterpret_cast<const uint8_t*>(key.data()), key.size(), &k, &err), UIH_OK);
      stripes[k.user_id].push_back(value);
    }
    for (uint64_t u = 1; u <= kUsers; u++) {
      SCOPED_TRACE("day " + std::to_string(day) + ", user " + std::to_string(u));
      const auto& ev = events[u];
      const auto& st = stripes[u];
      if (u == kUsers) {  // every stripe but the last holds 128 events and competed whole
        ASSERT_EQ(st.size(), (ev.size() + 127) / 128);
        for (size_t i = 0; i + 1 < st.size(); i++, complete++) {
          const uih_stripe_column_info got = StripeRule::ColumnV(st[i]), want = rule.Competed(ev, 128 * i, 128 * (i + 1));
          EXPECT_EQ(got.encoding, want.encoding) << "stripe " << i;
          EXPECT_EQ(got.bytes, want.bytes) << "stripe " << i;
        }
        continue;
      }
      ASSERT_EQ(st.size(), 1u) << "fewer events than a stripe holds";
      const uih_stripe_column_info now = StripeRule::ColumnV(st[0]), want = rule.Competed(ev, 0, ev.size());
      if (day == 0) {
        EXPECT_EQ(now.encoding, want.encoding) << "a new stripe competes";
      } else {
        const uih_stripe_column_info& was = before[u];
        const bool grew = uint64_t{now.bytes} * was.events * 8 > uint64_t{was.bytes} * now.events * 9;
        auto quarter = [](uint32_t x) { return (64 - __builtin_clzll(x) + 1) / 2; };  // x > 0
        if (quarter(was.events) != quarter(now.events)) {
          EXPECT_EQ(now.encoding, want.encoding) << was.events << " -> " << now.events << " events: competed";
          quadrupled++;
        }
        if (now.encoding != was.encoding) {
          EXPECT_EQ(now.encoding, want.encoding) << "changed, but not to the competition's choice";
          changed++;
        }
        if (grew) {
          EXPECT_EQ(now.encoding, want.encoding) << "past 9/8 of its bytes per event without a competition";
          grown++;
        }
        held += now.encoding == was.encoding && want.encoding != was.encoding;
      }
      before[u] = now;
    }
  }
  EXPECT_GT(changed, 10) << "the kept encodings never gave way";
  EXPECT_GT(held, 10) << "the rule never held an encoding against a competition: it always competes";
  EXPECT_GT(grown, 10);
  EXPECT_GE(complete, 3);
  EXPECT_EQ(quadrupled, 24) << "each light user passes 64 events once";
  for (uih_store* s : stores) uih_store_close(s);
}

// A stripe in the middle of a history is in its final form: when late
// events come into it, it competes whole, not kept like the stored one as
// a history's last stripe would be (loader/merge.c, cut's `tail`). Here
// the first stripe holds 100 random values (frame of reference), a burst
// of one timestamp cut it short of 128; then 28 late events of one value,
// one after the other, come into it: frame of reference would hold them at the
// same bytes per event (so a kept encoding would stay), but run-length
// wins the competition.
TEST_F(StoreLayersTest, AStripeGainingLateEventsInTheMiddleOfItsHistoryCompetesWhole) {
  StripeRule rule;
  ASSERT_NE(rule.g, nullptr);
  uih_error err{};
  std::mt19937_64 rng(11);
  TimedValues first;  // the first stripe's events
  std::string days[3] = {"user_id,group,ts,v\n", "user_id,group,ts,v\n", "user_id,group,ts,v\n"};
  for (int i = 0; i < 100; i++) {
    const uint32_t v = static_cast<uint32_t>(rng() % (1u << 20));
    first.emplace_back(kBase + i * 1000, v);
    days[0] += "1,a," + std::to_string(kBase + i * 1000) + "," + std::to_string(v) + "\n";
  }
  for (int i = 0; i < 40; i++)  // a burst: one stripe of its own, the first cut before it at 100
    days[1] += "1,a," + std::to_string(kBase + kDay + 5) + "," + std::to_string(rng() % 1000) + "\n";
  const int64_t late = kBase + 50 * 1000 + 500;  // between the 51st and the 52nd (an identical row is a duplicate)
  for (int i = 0; i < 28; i++) {
    days[2] += "1,a," + std::to_string(late + i) + ",12345\n";
    first.insert(first.begin() + 51 + i, {late + i, 12345u});
  }
  uih_store* stores[2] = {};
  ASSERT_NO_FATAL_FAILURE(OpenRulePair(stores));
  uih_stripe_column_info stored{};
  std::map<std::string, std::string> gen[2];
  for (int day = 0; day < 3; day++) {
    const std::string file = dir_ / ("late" + std::to_string(day) + ".csv");
    WriteFile(file, days[day]);
    for (int w = 0; w < 2; w++) {
      uih_load_stats st{};
      ASSERT_EQ(LoadDay(stores[w], file, kBase + (day + 2) * kDay, 0, "", w, &st, &err), UIH_OK)
          << uih_error_message(&err);
      gen[w] = Scan(stores[w], 0);
    }
    ASSERT_TRUE(gen[0] == gen[1]) << "day " << day << ": layered or whole, the same stripes";
    if (day == 1) {
      ASSERT_EQ(gen[0].size(), 2u);
      stored = StripeRule::ColumnV(gen[0].begin()->second);
      ASSERT_EQ(stored.events, 100u) << "the burst cut the first stripe at 100 events";
    }
  }
  ASSERT_EQ(gen[0].size(), 2u);
  const uih_stripe_column_info got = StripeRule::ColumnV(gen[0].begin()->second);
  ASSERT_EQ(got.events, 128u);
  const uih_stripe_column_info want = rule.Competed(first, 0, first.size());
  ASSERT_NE(want.encoding, stored.encoding) << "the data must make a kept encoding differ from a competition's";
  EXPECT_EQ(got.encoding, want.encoding) << "the middle stripe kept its encoding";
  EXPECT_EQ(got.bytes, want.bytes);
  for (uih_store* s : stores) uih_store_close(s);
}

}  // namespace
}  // namespace uih_test
