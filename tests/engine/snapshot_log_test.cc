// Snapshot logs (uih/snapshot.h): records come back by number; a cut is
// named; damaged copies of a log never show a record under another's number
// and never lose one without saying so; repair cuts exactly a torn tail; a
// sealed log is closed; format-1 logs still read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uih/snapshot.h"

namespace {

class SnapshotLogTest : public ::testing::Test {
 protected:
  uih_error err_{};

  // A record that decodes: user `user`, request time `ts`, one group with
  // no events.
  static std::string Record(uint64_t user, int64_t ts) {
    uih_snapshot_record r{};
    r.store = 7;
    r.user_id = user;
    r.request_ts = ts;
    r.schema_version = 1;
    r.ngroups = 1;
    r.groups[0].group = 1;
    std::string buf(uih_snapshot_record_size(&r), '\0');
    size_t len = 0;
    EXPECT_EQ(uih_snapshot_record_encode(&r, reinterpret_cast<uint8_t*>(buf.data()), buf.size(), &len, nullptr), UIH_OK);
    buf.resize(len);
    return buf;
  }

  static std::string Bytes(FILE* f) {
    fflush(f);
    fseek(f, 0, SEEK_END);
    std::string bytes(static_cast<size_t>(ftell(f)), '\0');
    rewind(f);
    EXPECT_EQ(fread(bytes.data(), 1, bytes.size(), f), bytes.size());
    return bytes;
  }

  // Writes `recs` as a log (sealed when asked); their frames' offsets.
  std::string Log(const std::vector<std::string>& recs, bool sealed, std::vector<uint64_t>* offsets = nullptr) {
    FILE* f = tmpfile();
    EXPECT_NE(f, nullptr);
    for (size_t i = 0; i < recs.size(); i++) {
      fseek(f, 0, SEEK_END);
      if (offsets) offsets->push_back(ftell(f) == 0 ? 8 : static_cast<uint64_t>(ftell(f)));
      EXPECT_EQ(uih_snapshot_log_write(f, i, reinterpret_cast<const uint8_t*>(recs[i].data()), recs[i].size(), &err_),
                UIH_OK);
    }
    uint64_t n = 0;
    if (sealed) {
      EXPECT_EQ(uih_snapshot_log_seal(f, "t.log", &n, &err_), UIH_OK) << uih_error_message(&err_);
      EXPECT_EQ(n, recs.size());
    }
    std::string bytes = Bytes(f);
    fclose(f);
    return bytes;
  }

  struct Read {
    std::vector<std::pair<uint64_t, std::string>> records;  // number, bytes
    std::vector<uint64_t> offsets;
    std::vector<std::string> damage;
    bool sealed = false;
    int rc = UIH_OK;  // the first error's
  };

  // Reads `bytes` as a log, going on past damage as a training job under
  // --on-mismatch flag does.
  Read ReadAll(const std::string& bytes) {
    Read out;
    FILE* m = bytes.empty() ? tmpfile() : fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
    EXPECT_NE(m, nullptr);
    uih_snapshot_log* l = nullptr;
    out.rc = uih_snapshot_log_open(m, "t.log", &l, &err_);
    if (out.rc != UIH_OK) {
      out.damage.push_back(uih_error_message(&err_));
      fclose(m);
      return out;
    }
    for (int guard = 0; guard < 100000; guard++) {
      const uint8_t* rec;
      size_t len;
      uint64_t off;
      const int rc = uih_snapshot_log_next(l, &rec, &len, &off, &err_);
      if (rc != UIH_OK) {
        EXPECT_EQ(rc, UIH_ERR_CORRUPTION) << uih_error_message(&err_);
        if (out.rc == UIH_OK) out.rc = rc;
        out.damage.push_back(uih_error_message(&err_));
        continue;
      }
      if (!rec) break;
      out.records.emplace_back(uih_snapshot_log_number(l), std::string(reinterpret_cast<const char*>(rec), len));
      out.offsets.push_back(off);
    }
    out.sealed = uih_snapshot_log_sealed(l);
    uih_snapshot_log_close(l);
    fclose(m);
    return out;
  }
};

// Records written come back with their numbers and frame offsets; a log cut
// anywhere gives the whole records before the cut, then an error naming the
// record and its offset (or a clean end when the cut falls between two); the
// in-memory index agrees, with users and request times; a writer appending
// to a file opened "ab" numbers on from the log's last record.
TEST_F(SnapshotLogTest, RecordsComeBackByNumberAndACutIsNamed) {
  std::vector<std::string> recs;
  std::vector<uint64_t> offsets;
  const std::string path = ::testing::TempDir() + "/append.log";
  remove(path.c_str());
  for (int i = 0; i < 20; i++) {
    recs.push_back(Record(1000 + i, 5000 + i));
    FILE* f = fopen(path.c_str(), "ab");  // a new open each time: numbers come from the file
    ASSERT_NE(f, nullptr);
    fseek(f, 0, SEEK_END);
    offsets.push_back(ftell(f) == 0 ? 8 : static_cast<uint64_t>(ftell(f)));
    ASSERT_EQ(uih_snapshot_log_append(f, reinterpret_cast<const uint8_t*>(recs[i].data()), recs[i].size(), &err_),
              UIH_OK)
        << uih_error_message(&err_);
    fclose(f);
  }
  FILE* f = fopen(path.c_str(), "rb");
  const std::string bytes = Bytes(f);
  fclose(f);
  ASSERT_EQ(bytes.compare(0, 8, "UIHSLOG2"), 0);
  for (size_t cut = 0; cut <= bytes.size(); cut++) {
    const std::string part = bytes.substr(0, cut);
    Read r = ReadAll(part);
    if (cut > 0 && cut < 8) {
      ASSERT_EQ(r.rc, UIH_ERR_CORRUPTION);
      EXPECT_NE(r.damage[0].find("t.log: not a snapshot log"), std::string::npos);
      continue;
    }
    const size_t n = r.records.size();
    ASSERT_LE(n, recs.size());
    for (size_t i = 0; i < n; i++) {
      EXPECT_EQ(r.records[i].first, i);
      EXPECT_EQ(r.records[i].second, recs[i]);
      EXPECT_EQ(r.offsets[i], offsets[i]);
    }
    const bool between =
        std::find(offsets.begin(), offsets.end(), cut) != offsets.end() || cut == bytes.size() || cut == 0;
    EXPECT_FALSE(r.sealed);
    if (between) {
      EXPECT_EQ(r.rc, UIH_OK) << "cut at " << cut;
      const size_t want = cut == 0                ? 0
                          : cut == bytes.size() ? recs.size()
                                                : static_cast<size_t>(std::find(offsets.begin(), offsets.end(), cut) -
                                                                      offsets.begin());
      EXPECT_EQ(n, want) << "cut at " << cut;
    } else {
      ASSERT_EQ(r.rc, UIH_ERR_CORRUPTION) << "cut at " << cut;
      ASSERT_EQ(r.damage.size(), 1u);
      EXPECT_NE(r.damage[0].find("t.log: record " + std::to_string(n) + " at byte " + std::to_string(offsets[n])),
                std::string::npos)
          << r.damage[0];
    }
    std::vector<uint64_t> ioff(recs.size()), ilen(recs.size()), users(recs.size());
    std::vector<int64_t> ts(recs.size());
    size_t count = 99;
    uih_error ierr{};
    const int rc = uih_snapshot_log_index(reinterpret_cast<const uint8_t*>(part.data()), cut, "t.log", ioff.data(),
                                          ilen.data(), users.data(), ts.data(), recs.size(), &count, &ierr);
    if (!between) {
      EXPECT_EQ(rc, UIH_ERR_CORRUPTION) << "cut at " << cut;
      EXPECT_EQ(std::string(ierr.msg), r.damage[0]);
      continue;
    }
    ASSERT_EQ(rc, UIH_OK) << ierr.msg;
    ASSERT_EQ(count, n);
    for (size_t i = 0; i < n; i++) {
      EXPECT_EQ(part.substr(ioff[i], ilen[i]), recs[i]);
      EXPECT_EQ(users[i], 1000 + i);
      EXPECT_EQ(ts[i], static_cast<int64_t>(5000 + i));
    }
  }
}

// Thousands of damaged copies of logs, sealed and not: every record read is
// the one written under that number, numbers only grow, and a record is
// missing only with an error saying so — except the records after a clean
// cut at a frame's end, where the log then reads as not sealed (so a
// reader of a closed log, which needs the seal, sees the loss). The index
// agrees: whole, or refused.
TEST_F(SnapshotLogTest, DamageNeverShowsARecordUnderAnotherNumberNorLosesOneSilently) {
  std::mt19937_64 rng(41);
  int detected = 0, trials = 0;
  for (int trial = 0; trial < 3000; trial++) {
    const bool sealed = trial % 2;
    std::vector<std::string> recs;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; i++) {
      std::string r(1 + rng() % (trial % 7 == 0 ? 3000 : 200), '\0');
      for (char& c : r) c = static_cast<char>(rng() % 4 == 0 ? 'U' : rng());  // sync-like bytes in records too
      recs.push_back(r);
    }
    const std::string good = Log(recs, sealed);
    std::string bad = good;
    const size_t body = bad.size() - 8;
    auto at = [&] { return 8 + static_cast<size_t>(rng() % body); };
    const char* kind = "";
    switch (rng() % 7) {
      case 0: {
        kind = "flip";
        for (int k = 1 + static_cast<int>(rng() % 8); k > 0; k--) bad[at()] ^= static_cast<char>(1 + rng() % 255);
        break;
      }
      case 1: {
        kind = "zero a page";
        const size_t from = at(), to = std::min(bad.size(), from + 1 + rng() % 4096);
        std::fill(bad.begin() + static_cast<long>(from), bad.begin() + static_cast<long>(to), '\0');
        break;
      }
      case 2: {
        kind = "delete";
        const size_t from = at();
        bad.erase(from, 1 + rng() % 300);
        break;
      }
      case 3: {
        kind = "insert garbage";
        std::string g(1 + rng() % 300, '\0');
        for (char& c : g) c = static_cast<char>(rng());
        bad.insert(at(), g);
        break;
      }
      case 4: {
        kind = "duplicate";
        const size_t from = at(), len = 1 + rng() % 400;
        bad.insert(at(), bad.substr(from, len));
        break;
      }
      case 5: {
        kind = "truncate";
        bad.resize(at());
        break;
      }
      default: {
        kind = "append garbage";
        std::string g(1 + rng() % 64, '\0');
        for (char& c : g) c = static_cast<char>(rng());
        bad += g;
        break;
      }
    }
    if (bad == good) continue;  // zeros over zeros
    trials++;
    const Read r = ReadAll(bad);
    SCOPED_TRACE(std::string(kind) + ", trial " + std::to_string(trial) + (sealed ? ", sealed" : ""));
    uint64_t last = 0;
    std::vector<bool> seen(recs.size());
    for (size_t i = 0; i < r.records.size(); i++) {
      const auto& [number, bytes] = r.records[i];
      ASSERT_LT(number, recs.size());
      ASSERT_EQ(bytes, recs[number]) << "record " << number << " is not what was written under its number";
      if (i) {
        ASSERT_GT(number, last);
      }
      last = number;
      seen[number] = true;
    }
    const bool all = std::count(seen.begin(), seen.end(), true) == static_cast<long>(recs.size());
    if (r.damage.empty()) {
      // Silent only where nothing is lost, or an unsealed log ends early on a frame boundary.
      if (!(all && r.sealed == sealed)) {  // a reader that needs the seal sees it missing
        ASSERT_FALSE(r.sealed) << "a log lost records without an error, and still reads as sealed";
        for (size_t i = 0; i < r.records.size(); i++) ASSERT_EQ(r.records[i].first, i) << "a gap without an error";
      }
    } else {
      detected++;
    }
    size_t count = 0;
    const int rc = uih_snapshot_log_index(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), "t.log", nullptr,
                                          nullptr, nullptr, nullptr, 0, &count, nullptr);
    EXPECT_EQ(rc == UIH_OK, r.damage.empty());
    if (rc == UIH_OK) {
      EXPECT_EQ(count, r.records.size());
    }
    // Read past damage in memory: the streaming reader's records, numbers,
    // damage and seal exactly.
    std::vector<uint64_t> offs(r.records.size() + 1), lens(offs.size()), nums(offs.size());
    std::vector<std::string> said;
    int in_sealed = -1;
    const int lossy = uih_snapshot_log_index_past_damage(
        reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), "t.log", offs.data(), lens.data(), nums.data(),
        nullptr, nullptr, offs.size(), &count, &in_sealed,
        [](void* arg, const char* what) { static_cast<std::vector<std::string>*>(arg)->push_back(what); }, &said,
        &err_);
    if (lossy != UIH_OK) {  // not a log at all (its magic damaged): the streaming reader's open failed too
      EXPECT_EQ(lossy, UIH_ERR_CORRUPTION);
      EXPECT_TRUE(r.records.empty() && r.damage.size() == 1) << uih_error_message(&err_);
      continue;
    }
    ASSERT_EQ(count, r.records.size());
    for (size_t i = 0; i < count; i++) {
      EXPECT_EQ(nums[i], r.records[i].first);
      EXPECT_EQ(bad.substr(offs[i], lens[i]), r.records[i].second);
    }
    EXPECT_EQ(said, r.damage);
    EXPECT_EQ(in_sealed == 1, r.sealed);
  }
  EXPECT_GT(trials, 2500);
  EXPECT_GT(detected, trials * 8 / 10) << "most damage is reported";
}

// A writer killed mid-record leaves a torn tail: repair cuts exactly it (or
// a torn magic), says which number comes next, and a record appended
// afterwards reads back after the whole ones. Damage before the tail is
// refused and the file left alone.
TEST_F(SnapshotLogTest, RepairCutsATornTailSoLaterAppendsStayReadable) {
  std::vector<std::string> recs;
  for (int i = 0; i < 6; i++) recs.push_back(Record(i + 1, i));
  std::vector<uint64_t> offsets;
  const std::string bytes = Log(recs, false, &offsets);
  const std::string extra = Record(99, 99);
  const std::string path = ::testing::TempDir() + "/repair.log";
  for (size_t cut = 0; cut <= bytes.size(); cut++) {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_EQ(fwrite(bytes.data(), 1, cut, f), cut);
    fclose(f);
    f = fopen(path.c_str(), "a+b");
    uint64_t records = 99, dropped = 99;
    ASSERT_EQ(uih_snapshot_log_repair(f, "r.log", &records, &dropped, &err_), UIH_OK)
        << "cut " << cut << ": " << uih_error_message(&err_);
    size_t whole = 0;
    while (whole < offsets.size() && (whole + 1 < offsets.size() ? offsets[whole + 1] : bytes.size()) <= cut) whole++;
    const uint64_t good = cut < 8 ? 0 : whole < offsets.size() ? offsets[whole] : bytes.size();
    EXPECT_EQ(records, whole) << "cut " << cut;
    EXPECT_EQ(dropped, cut - good) << "cut " << cut;
    ASSERT_EQ(uih_snapshot_log_write(f, records, reinterpret_cast<const uint8_t*>(extra.data()), extra.size(), &err_),
              UIH_OK);
    const Read r = ReadAll(Bytes(f));
    fclose(f);
    ASSERT_TRUE(r.damage.empty()) << "cut " << cut << ": " << r.damage[0];
    ASSERT_EQ(r.records.size(), whole + 1);
    for (size_t i = 0; i < whole; i++) EXPECT_EQ(r.records[i].second, recs[i]);
    EXPECT_EQ(r.records[whole].first, whole);
    EXPECT_EQ(r.records[whole].second, extra);
  }
  // A damaged frame header in the middle: damage, not a torn tail.
  std::string bad = bytes;
  bad[offsets[2]] = 'X';
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bad.data(), 1, bad.size(), f);
  fclose(f);
  f = fopen(path.c_str(), "a+b");
  uint64_t records, dropped;
  EXPECT_EQ(uih_snapshot_log_repair(f, "r.log", &records, &dropped, &err_), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err_)).find("r.log: bytes " + std::to_string(offsets[2]) + ".."),
            std::string::npos)
      << uih_error_message(&err_);
  EXPECT_NE(std::string(uih_error_message(&err_)).find("record 2 is lost"), std::string::npos);
  EXPECT_NE(std::string(uih_error_message(&err_)).find("not a torn tail, so nothing is cut"), std::string::npos);
  fseek(f, 0, SEEK_END);
  EXPECT_EQ(static_cast<size_t>(ftell(f)), bad.size());
  fclose(f);
}

// A sealed log says so; it takes no more records; cut anywhere it no longer
// reads as sealed with all its records; bytes after its seal are damage.
TEST_F(SnapshotLogTest, ASealedLogIsClosed) {
  std::vector<std::string> recs;
  for (int i = 0; i < 5; i++) recs.push_back(Record(i + 1, i));
  const std::string bytes = Log(recs, true);
  Read r = ReadAll(bytes);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_TRUE(r.sealed);
  EXPECT_EQ(r.records.size(), 5u);
  for (size_t cut = 8; cut < bytes.size(); cut++) {
    r = ReadAll(bytes.substr(0, cut));
    EXPECT_FALSE(r.sealed && r.records.size() == 5) << "cut " << cut;
    EXPECT_FALSE(r.sealed) << "cut " << cut;
  }
  r = ReadAll(bytes + "more");
  ASSERT_EQ(r.damage.size(), 1u);
  EXPECT_NE(r.damage[0].find("bytes follow the log's seal, from byte " + std::to_string(bytes.size())),
            std::string::npos)
      << r.damage[0];
  EXPECT_EQ(r.records.size(), 5u);

  const std::string path = ::testing::TempDir() + "/sealed.log";
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  f = fopen(path.c_str(), "a+b");
  uint64_t records = 0, dropped = 0;
  EXPECT_EQ(uih_snapshot_log_repair(f, "s.log", &records, &dropped, &err_), UIH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(uih_error_message(&err_)).find("s.log: sealed (closed) after 5 records; start a new log"),
            std::string::npos)
      << uih_error_message(&err_);
  EXPECT_EQ(uih_snapshot_log_append(f, reinterpret_cast<const uint8_t*>(recs[0].data()), recs[0].size(), &err_),
            UIH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(uih_snapshot_log_seal(f, "s.log", &records, &err_), UIH_OK) << "sealing twice does nothing";
  EXPECT_EQ(records, 5u);
  EXPECT_EQ(Bytes(f), bytes);
  fclose(f);
  // A damaged log is not sealed.
  std::string bad = Log(recs, false);
  bad[bad.size() - 30] ^= 1;
  f = fopen(path.c_str(), "wb");
  fwrite(bad.data(), 1, bad.size(), f);
  fclose(f);
  f = fopen(path.c_str(), "a+b");
  EXPECT_EQ(uih_snapshot_log_seal(f, "s.log", &records, &err_), UIH_ERR_CORRUPTION);
  EXPECT_EQ(Bytes(f), bad);
  fclose(f);
}

// Logs of format 1 (a varint length per record) read as before, numbered by
// position, in both readers; writers refuse to add to them.
TEST_F(SnapshotLogTest, FormatOneLogsStillReadButTakeNoRecords) {
  std::string bytes = "UIHSLOG1";
  std::vector<std::string> recs;
  for (int i = 0; i < 4; i++) {
    recs.push_back(Record(10 + i, i));
    bytes += static_cast<char>(recs.back().size());  // records this small have a one-byte length
    bytes += recs.back();
  }
  ASSERT_LT(recs[0].size(), 128u);
  const Read r = ReadAll(bytes);
  ASSERT_TRUE(r.damage.empty()) << r.damage[0];
  ASSERT_EQ(r.records.size(), 4u);
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(r.records[i].first, i);
    EXPECT_EQ(r.records[i].second, recs[i]);
  }
  size_t count = 0;
  std::vector<uint64_t> users(4);
  ASSERT_EQ(uih_snapshot_log_index(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "old.log", nullptr,
                                   nullptr, users.data(), nullptr, 4, &count, &err_),
            UIH_OK);
  EXPECT_EQ(count, 4u);
  EXPECT_EQ(users[3], 13u);
  const Read cut = ReadAll(bytes.substr(0, bytes.size() - 3));
  ASSERT_EQ(cut.damage.size(), 1u);
  EXPECT_NE(cut.damage[0].find("t.log: record 3 at byte"), std::string::npos) << cut.damage[0];

  const std::string path = ::testing::TempDir() + "/old.log";
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  f = fopen(path.c_str(), "a+b");
  uint64_t records, dropped;
  EXPECT_EQ(uih_snapshot_log_repair(f, "old.log", &records, &dropped, &err_), UIH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(uih_error_message(&err_)).find("old.log: a format-1 snapshot log"), std::string::npos);
  EXPECT_EQ(uih_snapshot_log_append(f, reinterpret_cast<const uint8_t*>(recs[0].data()), recs[0].size(), &err_),
            UIH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Bytes(f), bytes);
  fclose(f);
}

}  // namespace
