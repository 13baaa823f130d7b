// The loader's external sort (loader/sort.h) against std::sort of the same
// records: every shard's stream is its records in memcmp order, each
// repeated record once, whether they stayed in memory or were spilled to
// many runs; a shard's last stream gives the runs' disk back and is its
// last; a block laid out by length (run_block.h) reads back as it was
// written; and a damaged run — a block's header past its shard's part, a
// frame that does not decompress or whose checksum differs, and inside a
// block whose checksum is right (a bug's bytes): more lengths than the
// block holds, a length below the least, lengths that do not add up, a
// record of another shard, records out of order; a run cut short — is an
// error naming the run and the offset, never a wrong stream.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

extern "C" {
#include "run_block.h"
#include "sort.h"
}

namespace {

using Rec = std::vector<uint8_t>;

// A record of `shard` with random bytes after it (at least `min` bytes).
Rec Random(std::mt19937_64& rng, uint16_t shard, uint32_t min) {
  Rec r(min + rng() % 24);
  r[0] = static_cast<uint8_t>(shard >> 8);
  r[1] = static_cast<uint8_t>(shard);
  for (size_t i = 2; i < r.size(); i++) r[i] = static_cast<uint8_t>(rng() % 4);  // small alphabet: repeats
  return r;
}

std::vector<Rec> Stream(ld_sorter* s, uint32_t shard, int* rc, std::string* msg, int mode = LD_STREAM_KEEP) {
  ld_stream* st = nullptr;
  uih_error err{};
  std::vector<Rec> out;
  *rc = ld_stream_open(s, shard, mode, &st, &err);
  for (;;) {
    const uint8_t* rec = nullptr;
    uint32_t len = 0;
    if (*rc == UIH_OK) *rc = ld_stream_next(st, &rec, &len, &err);
    if (*rc != UIH_OK || rec == nullptr) break;
    out.emplace_back(rec, rec + len);
  }
  *msg = uih_error_message(&err);
  ld_stream_close(st);
  return out;
}

class SortTest : public ::testing::Test {
 protected:
  uih_test::TempDir dir_;
};

// Whether the file system under `dir` gives back a punched range (the
// sorter punches where it can), and its block size.
bool Punches(const std::string& dir, uint64_t* block) {
  const std::string path = dir + "/punch-probe";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  std::vector<char> bytes(size_t{1} << 20, 'x');
  struct stat before {}, after {};
  bool ok = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) && fsync(fd) == 0 &&
            fstat(fd, &before) == 0 &&
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes.size())) == 0 &&
            fstat(fd, &after) == 0 && after.st_blocks < before.st_blocks;
  *block = static_cast<uint64_t>(before.st_blksize);
  close(fd);
  unlink(path.c_str());
  return ok;
}

// The disk the run files under `dir` take (allocated blocks).
uint64_t RunDisk(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st {};
    if (e.path().filename().string().rfind("run-", 0) == 0 && stat(e.path().c_str(), &st) == 0)
      n += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return n;
}

TEST_F(SortTest, StreamsAreEachShardsRecordsInOrderOnceInMemoryOrSpilled) {
  // In memory; many tiny runs; and runs of many blocks, with records
  // longer than a block (each its own).
  for (size_t memory : {size_t{1} << 26, size_t{4096}, size_t{1} << 20}) {
    std::mt19937_64 rng(memory);
    const uint32_t shards = 3;
    ld_sorter* s = nullptr;
    uih_error err{};
    ASSERT_EQ(ld_sorter_create(dir_.path().c_str(), memory, shards, 6, &s, &err), UIH_OK) << uih_error_message(&err);
    std::vector<Rec> all;
    const int n = memory == (size_t{1} << 20) ? 80000 : 5000;
    for (int i = 0; i < n; i++) {
      Rec r = Random(rng, static_cast<uint16_t>(rng() % shards), 6);
      if (memory == (size_t{1} << 20) && i % 20000 == 7) r.resize(200000 + i, 1);
      ASSERT_EQ(ld_sorter_add(s, r.data(), static_cast<uint32_t>(r.size()), &err), UIH_OK);
      all.push_back(r);
    }
    ASSERT_EQ(ld_sorter_finish(s, &err), UIH_OK);
    EXPECT_EQ(ld_sorter_runs(s) > 0, memory < (size_t{1} << 26)) << "the small budgets spill";
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    // Each shard read twice, the second time its last: the same records.
    const uint64_t disk = RunDisk(dir_.path());
    for (uint32_t sh = 0; sh < shards; sh++) {
      std::vector<Rec> want;
      for (const Rec& r : all)
        if (r[0] * 256 + r[1] == static_cast<int>(sh)) want.push_back(r);
      for (int mode : {LD_STREAM_KEEP, LD_STREAM_LAST}) {
        int rc;
        std::string msg;
        EXPECT_EQ(Stream(s, sh, &rc, &msg, mode), want) << "shard " << sh << " mode " << mode;
        EXPECT_EQ(rc, UIH_OK) << msg;
      }
      int rc;
      std::string msg;
      Stream(s, sh, &rc, &msg);
      EXPECT_EQ(rc, UIH_ERR_INVALID_ARGUMENT) << "a stream after the shard's last";
      EXPECT_NE(msg.find("after its last"), std::string::npos) << msg;
    }
    // Every part read the last time is punched out of its run: what is
    // left is at most the file system blocks the parts' edges share.
    uint64_t block = 0;
    if (ld_sorter_runs(s) > 0 && memory == (size_t{1} << 20) && Punches(dir_.path(), &block)) {
      const uint64_t left = RunDisk(dir_.path());
      EXPECT_LT(left, disk / 2);
      EXPECT_LE(left, ld_sorter_runs(s) * (shards + 1) * 2 * block) << "of " << disk << " bytes";
    }
    // Nothing more of a sorter whose shards had their last streams.
    EXPECT_EQ(ld_sorter_finish(s, &err), UIH_ERR_INVALID_ARGUMENT);
    uint8_t shorter[5] = {0, 0, 1, 2, 3};
    EXPECT_EQ(ld_sorter_add(s, shorter, 5, &err), UIH_ERR_INVALID_ARGUMENT) << "below min_len";
    ld_sorter_free(s);
  }
}

// Every shard's stream of `s`, and the repeats its streams dropped.
std::vector<Rec> AllStreams(ld_sorter* s, uint32_t shards, uint64_t* repeats) {
  std::vector<Rec> out;
  *repeats = 0;
  for (uint32_t sh = 0; sh < shards; sh++) {
    ld_stream* st = nullptr;
    uih_error err{};
    EXPECT_EQ(ld_stream_open(s, sh, LD_STREAM_KEEP, &st, &err), UIH_OK) << uih_error_message(&err);
    for (;;) {
      const uint8_t* rec = nullptr;
      uint32_t len = 0;
      EXPECT_EQ(ld_stream_next(st, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
      if (!rec) break;
      out.emplace_back(rec, rec + len);
    }
    *repeats += ld_stream_repeats(st);
    ld_stream_close(st);
  }
  return out;
}

size_t RunFiles(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    n += e.path().filename().string().rfind("run-", 0) == 0;
  return n;
}

// Sorters filled on their own (as the loader's reading threads fill
// theirs) and adopted by one: its streams are every record of all of them
// in order, repeats across sorters once (and counted), whether a part
// spilled or stayed in memory; beyond the fan-in, runs are merged first,
// and the streams are the same. Adopting an unfinished sorter is refused.
TEST_F(SortTest, AdoptedSortersAndTheFanInStreamAsOneSort) {
  for (size_t fan_in : {size_t{256}, size_t{3}}) {
    const std::string dir = dir_.path() + "/f" + std::to_string(fan_in);
    std::mt19937_64 rng(fan_in);
    const uint32_t shards = 2;
    const size_t memory[3] = {4096, size_t{1} << 26, 8192};  // spills, stays in memory, spills
    ld_sorter* s[3] = {};
    uih_error err{};
    std::vector<Rec> all;
    for (int k = 0; k < 3; k++) {
      ASSERT_EQ(ld_sorter_create(dir.c_str(), memory[k], shards, 6, &s[k], &err), UIH_OK);
      ld_sorter_set_fan_in(s[k], fan_in);
      for (int i = 0; i < 3000; i++) {
        Rec r = Random(rng, static_cast<uint16_t>(rng() % shards), 6);
        if (i % 7 == 0 && !all.empty()) r = all[rng() % all.size()];  // a repeat, often another sorter's
        ASSERT_EQ(ld_sorter_add(s[k], r.data(), static_cast<uint32_t>(r.size()), &err), UIH_OK);
        all.push_back(r);
      }
    }
    ASSERT_EQ(ld_sorter_adopt(s[0], s[1], &err), UIH_ERR_INVALID_ARGUMENT) << "s[1] is not finished";
    s[1] = nullptr;  // freed by the refusal
    ASSERT_EQ(ld_sorter_finish(s[0], &err), UIH_OK);
    ASSERT_EQ(ld_sorter_finish(s[2], &err), UIH_OK);
    ASSERT_EQ(ld_sorter_adopt(s[0], s[2], &err), UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(ld_sorter_finish(s[0], &err), UIH_OK) << uih_error_message(&err);
    all.erase(all.begin() + 3000, all.begin() + 6000);  // s[1]'s records went with it
    EXPECT_GT(ld_sorter_runs(s[0]), 6u);
    if (fan_in == 3) {
      EXPECT_LE(RunFiles(dir), 3u) << "merged down to the fan-in";
    }
    std::vector<Rec> want = all;
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());  // shard first: streams in shard order
    uint64_t repeats = 0;
    EXPECT_EQ(AllStreams(s[0], shards, &repeats), want);
    EXPECT_EQ(repeats, all.size() - want.size()) << "every repeat dropped once and counted, merged or not";
    ld_sorter_free(s[0]);
    EXPECT_EQ(RunFiles(dir), 0u) << "every run removed, the adopted sorter's too";
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "and their folders";
  }
}

// A run's first block (sort.c: laid-out length, stored length, XXH3 of the
// laid-out bytes, a zstd frame): its laid-out bytes, and the run with them
// replaced — compressed again under a right checksum, as a bug would write
// them, in the block's stored length (a tighter frame, then a skippable one).
uint32_t Le32(const std::string& b, size_t at) {
  uint32_t v;
  memcpy(&v, b.data() + at, 4);
  return v;
}
std::string FirstBlock(const std::string& run) {
  std::string raw(Le32(run, 0), '\0');
  EXPECT_EQ(ZSTD_decompress(raw.data(), raw.size(), run.data() + 16, Le32(run, 4)), raw.size());
  return raw;
}
std::string WithFirstBlock(const std::string& run, const std::string& raw) {
  const uint32_t stored = Le32(run, 4);
  std::string frame(ZSTD_compressBound(raw.size()), '\0');
  frame.resize(ZSTD_compress(frame.data(), frame.size(), raw.data(), raw.size(), 19));
  if (stored < frame.size() + 8) {
    ADD_FAILURE() << "no room for a skippable frame: the block is too small to rewrite";
    return run;
  }
  const uint32_t magic = 0x184D2A50, pad = static_cast<uint32_t>(stored - frame.size() - 8);
  frame += std::string(reinterpret_cast<const char*>(&magic), 4) + std::string(reinterpret_cast<const char*>(&pad), 4) +
           std::string(pad, '\0');
  std::string h = run.substr(0, 16);
  const uint64_t sum = XXH3_64bits(raw.data(), raw.size());
  const uint32_t rl = static_cast<uint32_t>(raw.size());
  memcpy(h.data(), &rl, 4);
  memcpy(h.data() + 8, &sum, 8);
  return h + frame + run.substr(16 + stored);
}

// Spills every record of shard 0 and 1 into runs, then damages `run` (its
// bytes) with `damage` and reads shard 0's stream.
void Damaged(const std::string& dir, const std::function<void(std::string&)>& damage, const char* expect) {
  std::mt19937_64 rng(11);
  ld_sorter* s = nullptr;
  uih_error err{};
  ASSERT_EQ(ld_sorter_create(dir.c_str(), 8192, 2, 8, &s, &err), UIH_OK);
  for (int i = 0; i < 600; i++) {
    Rec r = Random(rng, static_cast<uint16_t>(i % 2), 8);
    ASSERT_EQ(ld_sorter_add(s, r.data(), static_cast<uint32_t>(r.size()), &err), UIH_OK);
  }
  ASSERT_EQ(ld_sorter_finish(s, &err), UIH_OK);
  ASSERT_GT(ld_sorter_runs(s), 1u);
  std::string run;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "run-000000") run = e.path().string();
  ASSERT_FALSE(run.empty());
  std::string bytes = uih_test::ReadFile(run);
  damage(bytes);
  uih_test::WriteFile(run, bytes);
  int rc;
  std::string msg;
  Stream(s, 0, &rc, &msg);
  EXPECT_NE(rc, UIH_OK) << expect;
  EXPECT_NE(msg.find(run), std::string::npos) << msg;
  EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  ld_sorter_free(s);
}

// Damages the laid-out bytes of the run's first block, written back whole.
std::function<void(std::string&)> InBlock(const std::function<void(std::string&)>& damage) {
  return [damage](std::string& run) {
    std::string laid = FirstBlock(run);
    damage(laid);
    run = WithFirstBlock(run, laid);
  };
}

// Damages the records of the run's first block (each a u32 LE length and
// its bytes), laid out again as the sorter lays them out.
std::function<void(std::string&)> InRecords(const std::function<void(std::string&)>& damage) {
  return InBlock([damage](std::string& laid) {
    ld_run_block_scratch sc{};
    uih_error err{};
    std::string raw(laid.size() - 4, '\0');
    ASSERT_EQ(ld_run_block_decode(reinterpret_cast<const uint8_t*>(laid.data()), laid.size(), 0,
                                  reinterpret_cast<uint8_t*>(raw.data()), &sc, &err), UIH_OK);
    damage(raw);
    ASSERT_EQ(ld_run_block_encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(),
                                  reinterpret_cast<uint8_t*>(laid.data()), &sc, &err), UIH_OK);
    ld_run_block_scratch_free(&sc);
  });
}

TEST_F(SortTest, ADamagedRunIsAnErrorNamingItNeverAWrongStream) {
  // The disk's damage: a bit of the frame, the header's lengths, the run cut short.
  Damaged(dir_.path() + "/f", [](std::string& b) { b[b.size() / 4] ^= 0x10; }, "at offset 0:");
  Damaged(dir_.path() + "/g", [](std::string& b) { b[6] = '\x7f'; }, "(what the shard's part of the run holds)");
  Damaged(dir_.path() + "/h", [](std::string& b) { b[0] ^= 1; }, "at offset 0: the block does not decompress");
  Damaged(dir_.path() + "/i", [](std::string& b) { b[8] ^= 1; }, "at offset 0: the block's checksum differs");
  Damaged(dir_.path() + "/e", [](std::string& b) { b.resize(b.size() / 2); }, "the run ends");
  // Inside a block whose checksum holds: more records than it has lengths for.
  Damaged(dir_.path() + "/a", InBlock([](std::string& b) { b[3] = '\x7f'; }),
          "block at offset 0, laid-out byte 0: 2130706");
  // The first record's length below the records' least.
  Damaged(dir_.path() + "/b", InBlock([](std::string& b) { b[4] = 1, b[5] = b[6] = b[7] = 0; }),
          "block at offset 0, laid-out byte 4: a record of 1 bytes, expected at least 8");
  // Lengths that do not add up to the bytes after them.
  Damaged(dir_.path() + "/j", InBlock([](std::string& b) { b[4] = static_cast<char>(b[4] + 1); }), "add up to");
  // The first record's shard byte: shard 1's record in shard 0's part.
  Damaged(dir_.path() + "/c", InRecords([](std::string& b) { b[5] = 1; }), "a record of shard 1 in shard 0's part");
  // The second record's bytes: smaller than the first's.
  Damaged(dir_.path() + "/d", InRecords([](std::string& b) {
            const uint32_t first = static_cast<uint8_t>(b[0]) | static_cast<uint8_t>(b[1]) << 8;
            for (size_t i = 4 + first + 4 + 2; i < 4 + first + 4 + 8; i++) b[i] = 0;
            for (size_t i = 4 + 2; i < 4 + 8; i++) b[i] = 3;
          }),
          "out of order");
}

}  // namespace

namespace {

// The laid-out block of random records (lengths 0..40, some lengths
// repeated, in any order; a record longer than the rest now and then,
// lengths of one and two bytes): laid out as run_block.h says, read back,
// the same records; cut short, or with a length changed, an error, never
// records that were not written.
TEST(RunBlockTest, ABlockLaidOutByLengthReadsBackAsItWasWritten) {
  std::mt19937_64 rng(5);
  ld_run_block_scratch sc{};
  for (int round = 0; round < 300; round++) {
    std::string raw;
    const int n = static_cast<int>(rng() % 200);
    for (int i = 0; i < n; i++) {
      uint32_t len = static_cast<uint32_t>(rng() % 4 == 0 ? rng() % 41 : 20 + rng() % 3);
      if (rng() % 97 == 0) len = 3000;
      if (rng() % 89 == 0) len = 256 + static_cast<uint32_t>(rng() % 3) * 256 + static_cast<uint32_t>(rng() % 2);
      raw.append(reinterpret_cast<const char*>(&len), 4);
      for (uint32_t k = 0; k < len; k++) raw.push_back(static_cast<char>(rng() % 5));
    }
    uih_error err{};
    std::string laid(raw.size() + 4, '\0');
    ASSERT_EQ(ld_run_block_encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(),
                                  reinterpret_cast<uint8_t*>(laid.data()), &sc, &err), UIH_OK);
    // The layout run_block.h states, made here: the count, the lengths in
    // record order, then per length (ascending), byte i of each of its
    // records (in record order) together.
    std::vector<std::pair<uint32_t, size_t>> recs;  // (length, offset of its bytes)
    for (size_t at = 0; at < raw.size();) {
      uint32_t len;
      std::memcpy(&len, raw.data() + at, 4);
      recs.emplace_back(len, at + 4);
      at += 4 + len;
    }
    std::string want(4, '\0');
    const uint32_t count = static_cast<uint32_t>(recs.size());
    std::memcpy(want.data(), &count, 4);
    for (const auto& r : recs) want.append(reinterpret_cast<const char*>(&r.first), 4);
    std::vector<size_t> order(recs.size());
    for (size_t j = 0; j < order.size(); j++) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return recs[a].first < recs[b].first; });
    for (size_t a = 0, b; a < order.size(); a = b) {
      for (b = a; b < order.size() && recs[order[b]].first == recs[order[a]].first; b++) {}
      for (uint32_t i = 0; i < recs[order[a]].first; i++)
        for (size_t k = a; k < b; k++) want.push_back(raw[recs[order[k]].second + i]);
    }
    EXPECT_EQ(want, laid) << "round " << round;
    std::string back(raw.size(), '\0');
    ASSERT_EQ(ld_run_block_decode(reinterpret_cast<const uint8_t*>(laid.data()), laid.size(), 0,
                                  reinterpret_cast<uint8_t*>(back.data()), &sc, &err), UIH_OK)
        << uih_error_message(&err);
    EXPECT_EQ(back, raw) << "round " << round;
    if (n > 0) {
      EXPECT_EQ(ld_run_block_decode(reinterpret_cast<const uint8_t*>(laid.data()), laid.size() - 1, 0,
                                    reinterpret_cast<uint8_t*>(back.data()), &sc, &err), UIH_ERR_CORRUPTION)
          << "cut short";
      std::string bad = laid;
      bad[4 + 4 * (rng() % n)] ^= 1;
      EXPECT_EQ(ld_run_block_decode(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), 0,
                                    reinterpret_cast<uint8_t*>(back.data()), &sc, &err), UIH_ERR_CORRUPTION)
          << "a length changed";
    }
  }
  ld_run_block_scratch_free(&sc);
}

}  // namespace
