// uih_store_verify, the scrub: a whole store reads clean, and every
// damaged file is named with the generation and users it holds.
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "store_fixture.h"
#include "uih/key.h"

namespace uih_test {
namespace {

namespace fs = std::filesystem;

struct Report {
  int rc = UIH_OK;
  std::string message;
  uih_verify_totals totals{};
  std::vector<uih_verify_item> items;  // their strings dangle: copied into paths, kinds, damage, notes
  std::vector<std::string> paths, kinds, damage, notes;
};

Report Verify(const std::string& dir) {
  Report r;
  uih_error err{};
  r.rc = uih_store_verify(
      dir.c_str(),
      [](void* arg, const uih_verify_item* it) {
        auto* out = static_cast<Report*>(arg);
        out->items.push_back(*it);
        out->paths.push_back(it->path);
        out->kinds.push_back(it->kind);
        out->damage.push_back(it->damage && it->counts ? it->damage : "");
        out->notes.push_back(it->note ? it->note : "");
      },
      &r, &r.totals, &err);
  r.message = uih_error_message(&err);
  return r;
}

// Every file under `dir` with its size and modification time: what a
// reader must leave as it found it.
std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> Tree(const fs::path& dir) {
  std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = {e.file_size(), e.last_write_time()};
  return out;
}

// A UihTable file: its magic number, little-endian, ends it.
bool IsGenerationFile(const fs::path& p) {
  const std::string b = ReadFile(p);
  return b.size() >= 8 && b.compare(b.size() - 8, 8, "1lbaTHIU") == 0;  // UIH_TABLE_MAGIC
}

class StoreVerifyTest : public StoreTest {
 protected:
  // Two shards, two days loaded, events appended to both mutable tiers.
  std::string Build() {
    uih_store* s = Init("store", 2);
    uih_error err{};
    std::mt19937_64 rng(7);
    for (int day = 0; day < 2; day++) {
      std::string rows = kHeader;
      for (int i = 0; i < 400; i++)
        rows += std::to_string(1 + rng() % 40) + (i % 3 ? ",a," : ",b,") +
                std::to_string(kBase + day * kDay + static_cast<int64_t>(rng() % kDay)) + "," +
                std::to_string(rng() % 1000) + (i % 3 ? ",1\n" : ",\n");
      const std::string f = dir_ / ("d" + std::to_string(day) + ".csv");
      WriteFile(f, rows);
      EXPECT_EQ(Load(s, {f}, kBase + (day + 1) * kDay, 0, &err), UIH_OK) << uih_error_message(&err);
    }
    for (uint64_t user = 1; user <= 40; user++) {
      uint32_t shard = uih_shard_of(user, 2);
      uih_mutable* m = MutableOf(s, shard);
      uih_batch* b = nullptr;
      EXPECT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 2), 4, nullptr, 0, &b, &err), UIH_OK);
      const int tsc = uih_batch_column_index(b, 1), itemc = uih_batch_column_index(b, 2);
      for (int i = 0; i < 3; i++) {
        uint32_t row;
        EXPECT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
        uih_column_set_bits(&b->columns[tsc], row, static_cast<uint64_t>(kBase + 2 * kDay + user * 1000 + i));
        uih_column_set_bits(&b->columns[itemc], row, user * 10 + i);
      }
      EXPECT_EQ(uih_mutable_append(m, user, b, 0, &err), UIH_OK) << uih_error_message(&err);
      uih_batch_free(b);
    }
    uih_store_close(s);
    return dir_ / "store";
  }
};

TEST_F(StoreVerifyTest, AWholeStoreReadsCleanAndNothingIsWritten) {
  const std::string st = Build();
  const auto before = Tree(st);
  Report r = Verify(st);
  ASSERT_EQ(r.rc, UIH_OK) << r.message;
  EXPECT_EQ(Tree(st), before) << "a scrub writes nothing";
  EXPECT_EQ(r.totals.damaged, 0u);
  EXPECT_EQ(r.totals.items, r.items.size());

  // Every table file of every shard and mutable tier was read, and every
  // stripe of the live generations: as many as their records count.
  for (const auto& e : fs::recursive_directory_iterator(st))
    if (e.path().extension() == ".sst") {
      const std::string rel = fs::relative(e.path(), st).string();
      EXPECT_NE(std::find(r.paths.begin(), r.paths.end(), rel), r.paths.end()) << rel;
    }
  // Each live generation counted as reads see it: its record's stripes.
  // The second day's load is a layer above the first's files, which both
  // generations hold (linked): each file is read once.
  uih_store* s = Open(st, 1);
  ASSERT_NE(s, nullptr);
  uint64_t stripes = 0;
  uih_error err{};
  size_t generations = 0, linked = 0;
  for (uint32_t shard = 0; shard < 2; shard++) {
    uih_generation gens[8];
    size_t n;
    uint32_t current;
    ASSERT_EQ(uih_store_generations(s, shard, gens, 8, &n, &current, &err), UIH_OK);
    for (size_t i = 0; i < n; i++) {
      stripes += gens[i].stripes;
      for (size_t k = 0; k < r.items.size(); k++)
        if (r.kinds[k] == "generation" && r.items[k].shard == shard && r.items[k].generation == gens[i].generation) {
          EXPECT_EQ(r.items[k].entries, gens[i].stripes) << r.paths[k];
          generations++;
        }
    }
    uih_generation_layout lay{};
    ASSERT_EQ(uih_store_generation_layout(s, shard, 0, &lay, &err), UIH_OK);
    EXPECT_EQ(lay.layers, 2u) << "shard " << shard << ": the second day a layer above the first";
  }
  uih_store_close(s);
  EXPECT_EQ(generations, 4u);
  for (const std::string& note : r.notes) linked += note.find("linked into") != std::string::npos;
  EXPECT_GT(linked, 0u);
  EXPECT_GT(stripes, 0u);
  EXPECT_GT(r.totals.stripes, 0u);
  EXPECT_LT(r.totals.stripes, stripes) << "the first day's stripes read once, not once per generation";
  EXPECT_GT(r.totals.lists, 0u) << "the mutable tiers were read";
  EXPECT_GE(r.totals.records, 2u * 2 * 2) << "generation records, current, format, schema...";
}

// A byte changed anywhere in a generation's table file (UihTable checks
// every byte of it: a block-based file's footer has padding nothing
// reads): the scrub names that file (with its generation and users) and
// fails; restored, it reads clean again.
TEST_F(StoreVerifyTest, EachDamagedGenerationFileIsNamedWithItsGenerationAndUsers) {
  const std::string st = Build();
  std::vector<fs::path> tables;
  for (const auto& e : fs::recursive_directory_iterator(st))
    if (e.path().extension() == ".sst" && IsGenerationFile(e.path())) tables.push_back(e.path());
  ASSERT_GE(tables.size(), 4u) << "two generations of two shards";
  std::sort(tables.begin(), tables.end());
  std::mt19937_64 rng(3);
  int named_with_users = 0, trials = 0;
  for (const fs::path& t : tables) {
    const std::string saved = ReadFile(t);
    const std::string rel = fs::relative(t, st).string();
    for (int k = 0; k < 12; k++, trials++) {
      const uint64_t at = rng() % saved.size();
      FlipByte(t, at, static_cast<uint8_t>(1 + rng() % 255));
      Report r = Verify(st);
      SCOPED_TRACE(rel + " byte " + std::to_string(at));
      EXPECT_EQ(r.rc, UIH_ERR_CORRUPTION) << "a changed byte is found";
      size_t i = std::find(r.paths.begin(), r.paths.end(), rel) - r.paths.begin();
      ASSERT_LT(i, r.items.size()) << "the file is listed";
      // The file itself is named, or (a byte RocksDB reads at open) the
      // database that will not open names it.
      bool named = !r.damage[i].empty();
      for (size_t j = 0; j < r.items.size() && !named; j++)
        named = r.kinds[j] == "database" && r.damage[j].find(t.filename().string()) != std::string::npos;
      EXPECT_TRUE(named) << r.message;
      if (!r.damage[i].empty() && r.items[i].has_users && r.kinds[i] == "generation table") {
        EXPECT_GT(r.items[i].generation, 0u);
        EXPECT_LE(r.items[i].first_user, r.items[i].last_user);
        named_with_users++;
      }
      WriteFile(t, saved);
    }
  }
  EXPECT_GT(named_with_users, 0);
  Report again = Verify(st);
  EXPECT_EQ(again.rc, UIH_OK) << again.message;
}

// A generation that lost a table file, or a descriptor cut short: named;
// a directory that is no store: UIH_ERR_NOT_FOUND.
TEST_F(StoreVerifyTest, MissingFilesAndADamagedDescriptorAreNamed) {
  const std::string st = Build();
  const std::string desc = ReadFile(st + "/UIHSTORE");
  WriteFile(st + "/UIHSTORE", desc.substr(0, 20));
  Report r = Verify(st);
  EXPECT_EQ(r.rc, UIH_ERR_CORRUPTION);
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.paths[0], "UIHSTORE");
  EXPECT_NE(r.damage[0], "");
  EXPECT_GT(r.totals.stripes, 0u) << "the table files are still read, alone";
  WriteFile(st + "/UIHSTORE", desc);

  fs::path victim;
  for (const auto& e : fs::directory_iterator(st + "/shard-0001"))
    if (e.path().extension() == ".sst" && IsGenerationFile(e.path())) victim = e.path();
  ASSERT_FALSE(victim.empty()) << "shard 1 has generation files";
  fs::rename(victim, dir_ / "aside.sst");
  r = Verify(st);
  EXPECT_EQ(r.rc, UIH_ERR_CORRUPTION);
  EXPECT_NE(r.message.find(victim.stem().string()), std::string::npos) << r.message;
  fs::rename(dir_ / "aside.sst", victim);

  uih_verify_totals t{};
  uih_error err{};
  EXPECT_EQ(uih_store_verify((dir_ / "nothing").c_str(), nullptr, nullptr, &t, &err), UIH_ERR_NOT_FOUND);
  EXPECT_EQ(Verify(st).rc, UIH_OK);
}

}  // namespace
}  // namespace uih_test

namespace uih_test {
namespace {

std::vector<std::string> Repaired(const std::string& dir, int* rc, std::string* message) {
  std::vector<std::string> lines;
  uih_error err{};
  *rc = uih_store_repair(
      dir.c_str(), 0, 0, [](void* arg, const char* line) { static_cast<std::vector<std::string>*>(arg)->push_back(line); },
      &lines, &err);
  *message = uih_error_message(&err);
  return lines;
}

// A serving process killed after acknowledging appends, its live log then
// deleted: every open refuses the store, naming the loss; uih_store_repair
// accepts it (keeping the refused files, recording it), and the store opens
// with what its logs still held. What a repair cannot accept is named.
TEST_F(StoreVerifyTest, ARepairAcceptsALostLogAndRecordsItButNotDamagedTables) {
  const std::string st = Build();
  uih_store* s = Open(st);
  ASSERT_NE(s, nullptr);
  uih_mutable* m = MutableOf(s, 0);
  uih_error err{};
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 2), 1, nullptr, 0, &b, &err), UIH_OK);
  uint32_t row;
  ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
  uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(kBase + 3 * kDay));
  uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, 77);
  uint64_t user = 1;
  while (uih_shard_of(user, 2) != 0) user++;
  ASSERT_EQ(uih_mutable_append(m, user, b, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_batch_free(b);
  const fs::path image = dir_ / "killed";
  fs::copy(st, image, fs::copy_options::recursive);  // as the kill leaves it
  uih_store_close(s);
  fs::path live;
  for (const auto& e : fs::directory_iterator(image / "mutable-0000"))
    if (e.path().extension() == ".log" && (live.empty() || e.path().filename() > live.filename())) live = e.path();
  ASSERT_FALSE(live.empty());
  fs::remove(live);

  uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
  o.read_only = 1;
  s = nullptr;
  EXPECT_EQ(uih_store_open(image.c_str(), &o, &s, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("were acknowledged"), std::string::npos);
  EXPECT_EQ(Verify(image).rc, UIH_ERR_CORRUPTION) << "the scrub says so too";

  int rc;
  std::string message;
  std::vector<std::string> lines = Repaired(image, &rc, &message);
  ASSERT_EQ(rc, UIH_OK) << message;
  ASSERT_EQ(lines.size(), 3u) << "shard 0's mutable tier: accepting, done; then shard 1: nothing";
  EXPECT_NE(lines[0].find("mutable-0000: accepting: "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("were acknowledged"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("mutable-0000: done: reopened on what its logs still held"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("shard 1: opens whole, nothing to repair"), std::string::npos) << lines[2];
  EXPECT_EQ(ReadFile(image / "REPAIRS"), lines[0] + "\n" + lines[1] + "\n");
  bool kept = false;
  for (const auto& e : fs::recursive_directory_iterator(image / "lost"))
    kept |= e.path().filename() == "UIH-ACKED" && e.path().parent_path().filename().string().find("-mutable-0000") !=
                                                      std::string::npos;
  EXPECT_TRUE(kept) << "the refused tier's mark (and logs, MANIFEST) kept in lost/";
  ASSERT_EQ(uih_store_open(image.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
  uih_batch* out = nullptr;
  ASSERT_EQ(uih_store_read(s, user, 2, INT64_MIN, INT64_MAX, UIH_TIER_MUTABLE, 0, &out, &err), UIH_OK);
  EXPECT_EQ(out->count, 3u) << "the appends the flush at close kept; the one the lost log held is gone";
  uih_batch_free(out);
  uih_store_close(s);
  EXPECT_EQ(Verify(image).rc, UIH_OK);
  lines = Repaired(image, &rc, &message);
  EXPECT_EQ(rc, UIH_OK);
  EXPECT_EQ(lines.size(), 2u) << "nothing to repair in either shard";

  // A damaged generation table: not a loss a repair accepts.
  for (const auto& e : fs::directory_iterator(image / "shard-0000"))
    if (e.path().extension() == ".sst" && IsGenerationFile(e.path())) {
      WriteFile(e.path(), ReadFile(e.path()).substr(0, 100));
      break;
    }
  lines = Repaired(image, &rc, &message);
  EXPECT_EQ(rc, UIH_ERR_CORRUPTION);
  EXPECT_EQ(message.rfind("shard-0000: not a loss a repair accepts", 0), 0u)
      << "the verdict leads, so a long path in RocksDB's words cannot cut it off: " << message;
}

}  // namespace
}  // namespace uih_test
