// The differential harness: the same random workload against a UihTable DB
// and a BlockBasedTable DB, then every read compared. BlockBasedTable is the
// model: whatever it answers, UihTable must answer too.
//   UIH_DIFF_SEEDS=N   run N seeds per test (default 12; the long mode uses more)
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "uih_plugin/registry.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/iostats_context.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/options_util.h"
#include "test_util.h"
#include "uih/key.h"
#include "uih_plugin/table.h"

namespace {

using namespace rocksdb;

int Seeds() {
  const char* s = std::getenv("UIH_DIFF_SEEDS");
  return s && *s ? std::atoi(s) : 12;
}

// A third of the seeds write only UIH-shaped 18-byte keys, with the
// numeric index layout forced on UihTable; the others any keys (prefix).
bool UihKeys(int seed) { return seed % 3 == 2; }

// UihTable with a small value cache (evicting all the time) on odd seeds.
Options BaseOptions(bool uih, int seed = 0) {
  Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = false;
  o.write_buffer_size = 64 << 10;  // small memtables: several files per run
  ConfigOptions cfg;
  cfg.ignore_unsupported_options = false;
  ColumnFamilyOptions cf;
  std::string spec = std::string("merge_operator=stringappend;") +
                     (uih ? std::string("table_factory={id=UihTable;restart_interval=4;readahead_size=4096;cache_size=") +
                                (seed % 2 ? "65536" : "0") +
                                (UihKeys(seed) ? ";index_layout=numeric;index_block_entries=8}" : "}")
                          : "");
  Status s = GetColumnFamilyOptionsFromString(cfg, ColumnFamilyOptions(o), spec, &cf);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return Options(DBOptions(o), cf);
}

// A UIH key (user, group, timestamp): few users and timestamps in a small
// keyspace (overwrites), spread out otherwise; sometimes extreme values.
std::string RandomUihKey(std::mt19937_64& rng, int keyspace) {
  uih_key k;
  if (keyspace > 0) {
    k.user_id = rng() % static_cast<uint64_t>(keyspace / 8 + 1);
    k.group = static_cast<uint16_t>(1 + rng() % 2);
    k.ts = 1700000000000 + static_cast<int64_t>(rng() % 8) * 60000;
  } else {
    k.user_id = rng() % 50 == 0 ? UINT64_MAX - rng() % 2 : rng() % 4096;
    k.group = static_cast<uint16_t>(rng() % 50 == 0 ? 65535 : rng() % 4);
    k.ts = rng() % 50 == 0 ? INT64_MIN : 1700000000000 + static_cast<int64_t>(rng() % 1000000000);
  }
  uint8_t b[UIH_KEY_SIZE];
  uih_key_encode(&k, b);
  return std::string(reinterpret_cast<char*>(b), sizeof b);
}

std::string RandomKey(std::mt19937_64& rng, int keyspace, bool uih_keys = false) {
  if (uih_keys) return RandomUihKey(rng, keyspace);
  if (keyspace > 0) {  // small keyspace: overwrites, deletes of existing keys
    char buf[16];
    snprintf(buf, sizeof buf, "k%05d", static_cast<int>(rng() % static_cast<uint64_t>(keyspace)));
    std::string k = buf;
    if (rng() % 20 == 0) k.push_back('\0');  // binary byte inside a key
    return k;
  }
  size_t len = rng() % 10 == 0 ? 0 : rng() % 7 == 0 ? 50 + rng() % 200 : 1 + rng() % 12;
  std::string k;
  for (size_t i = 0; i < len; i++) k.push_back(static_cast<char>(rng() % 3 ? 'a' + rng() % 4 : rng()));
  return k;
}

std::string RandomValue(std::mt19937_64& rng) {
  size_t len = rng() % 8 == 0 ? 0 : rng() % 4 == 0 ? 1000 + rng() % 5000 : rng() % 64;
  std::string v(len, '\0');
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

class Pair {
 public:
  explicit Pair(int seed) : seed_(seed) { Open(); }
  ~Pair() { ReleaseSnapshots(); }
  // Closes and opens both DBs again: every table is reopened from its file
  // (and an ingested one takes its global seqno from the manifest or from
  // its properties again). Snapshots do not survive it.
  void Reopen() {
    ReleaseSnapshots();
    for (auto& db : db_) db.reset();
    Open();
  }
  DB* uih() { return db_[0].get(); }
  DB* bbt() { return db_[1].get(); }
  DB* db(int i) { return db_[i].get(); }
  const std::string& dir() const { return dir_.path(); }
  int seed() const { return seed_; }
  bool uih_keys() const { return UihKeys(seed_); }

  // Both DBs, same operation, same status code.
  template <class F>
  void Both(F f) {
    Status a = f(uih()), b = f(bbt());
    ASSERT_EQ(b.code(), a.code()) << "uih: " << a.ToString() << " bbt: " << b.ToString();
  }
  void TakeSnapshot() { snaps_.push_back({uih()->GetSnapshot(), bbt()->GetSnapshot()}); }
  std::vector<std::array<const Snapshot*, 2>> snaps_;

 private:
  void Open() {
    for (int i = 0; i < 2; i++) {
      DB* db = nullptr;
      Status s = DB::Open(BaseOptions(i == 0, seed_), dir_ / (i == 0 ? "uih" : "bbt"), &db);
      EXPECT_TRUE(s.ok()) << s.ToString();
      db_[i].reset(db);
    }
  }
  void ReleaseSnapshots() {
    for (auto& s : snaps_)
      for (int i = 0; i < 2; i++) db_[i]->ReleaseSnapshot(s[i]);
    snaps_.clear();
  }

  int seed_;
  uih_test::TempDir dir_;
  std::unique_ptr<DB> db_[2];
};

// Keys of their own for SingleDelete, one per operation number.
std::string UniqueUihKey(int i) {
  uih_key k{static_cast<uint64_t>(i), 9, i};
  uint8_t b[UIH_KEY_SIZE];
  uih_key_encode(&k, b);
  return std::string(reinterpret_cast<char*>(b), sizeof b);
}

// Every UihTable file names its index layout; those of a UIH-key seed
// have the numeric one (forced by the options).
void ExpectLayout(Pair& p) {
  TablePropertiesCollection props;
  ASSERT_TRUE(p.uih()->GetPropertiesOfAllTables(&props).ok());
  for (const auto& [file, tp] : props) {
    auto it = tp->user_collected_properties.find(uih::kIndexLayoutProperty);
    ASSERT_NE(tp->user_collected_properties.end(), it) << file;
    if (p.uih_keys()) {
      EXPECT_EQ("numeric", it->second) << file;
    }
  }
}

// Compares everything a reader can ask, at the latest state and at every
// snapshot.
void CompareAll(Pair& p, std::mt19937_64& rng, const std::vector<std::string>& probe) {
  std::vector<const Snapshot*> views[2] = {{nullptr}, {nullptr}};
  for (auto& s : p.snaps_) views[0].push_back(s[0]), views[1].push_back(s[1]);
  for (size_t v = 0; v < views[0].size(); v++) {
    ReadOptions ro[2];
    for (int i = 0; i < 2; i++) ro[i].snapshot = views[i][v];
    // Get of present and absent keys.
    for (const auto& k : probe) {
      std::string a, b;
      Status sa = p.uih()->Get(ro[0], k, &a), sb = p.bbt()->Get(ro[1], k, &b);
      ASSERT_EQ(sb.code(), sa.code()) << "Get " << Slice(k).ToString(true) << ": " << sa.ToString();
      if (sb.ok()) {
        ASSERT_EQ(b, a) << "Get " << Slice(k).ToString(true) << " sizes " << b.size() << " " << a.size();
      }
    }
    // Batched MultiGet.
    std::vector<Slice> keys(probe.begin(), probe.end());
    std::vector<PinnableSlice> va(keys.size()), vb(keys.size());
    std::vector<Status> sa(keys.size()), sb(keys.size());
    p.uih()->MultiGet(ro[0], p.uih()->DefaultColumnFamily(), keys.size(), keys.data(), va.data(), sa.data());
    p.bbt()->MultiGet(ro[1], p.bbt()->DefaultColumnFamily(), keys.size(), keys.data(), vb.data(), sb.data());
    for (size_t i = 0; i < keys.size(); i++) {
      ASSERT_EQ(sb[i].code(), sa[i].code()) << "MultiGet " << keys[i].ToString(true);
      if (sb[i].ok()) {
        ASSERT_EQ(vb[i].ToString(), va[i].ToString());
      }
    }
    // Full scans, both directions.
    std::unique_ptr<Iterator> ia(p.uih()->NewIterator(ro[0])), ib(p.bbt()->NewIterator(ro[1]));
    size_t n = 0;
    for (ia->SeekToFirst(), ib->SeekToFirst(); ib->Valid(); ia->Next(), ib->Next(), n++) {
      ASSERT_TRUE(ia->Valid()) << "forward scan ends early at " << n << " " << ia->status().ToString();
      ASSERT_EQ(ib->key().ToString(), ia->key().ToString());
      ASSERT_EQ(ib->value().ToString(), ia->value().ToString());
    }
    ASSERT_FALSE(ia->Valid());
    ASSERT_TRUE(ia->status().ok()) << ia->status().ToString();
    n = 0;
    for (ia->SeekToLast(), ib->SeekToLast(); ib->Valid(); ia->Prev(), ib->Prev(), n++) {
      ASSERT_TRUE(ia->Valid()) << "backward scan ends early at " << n << " " << ia->status().ToString();
      ASSERT_EQ(ib->key().ToString(), ia->key().ToString());
      ASSERT_EQ(ib->value().ToString(), ia->value().ToString());
    }
    ASSERT_FALSE(ia->Valid());
    // Bounded scans, as the materializer reads (values past the bound are
    // never read by UihTable unless asked for).
    for (int s = 0; s < 20; s++) {
      std::string lo = probe[rng() % probe.size()], hi = probe[rng() % probe.size()];
      if (hi < lo) std::swap(lo, hi);
      Slice bound(hi);
      ReadOptions bro[2] = {ro[0], ro[1]};
      bro[0].iterate_upper_bound = bro[1].iterate_upper_bound = &bound;
      std::unique_ptr<Iterator> ba(p.uih()->NewIterator(bro[0])), bb(p.bbt()->NewIterator(bro[1]));
      size_t m = 0;
      for (ba->Seek(lo), bb->Seek(lo); bb->Valid(); ba->Next(), bb->Next(), m++) {
        ASSERT_TRUE(ba->Valid()) << "bounded scan ends early at " << m << " " << ba->status().ToString() << " bbt key " << bb->key().ToString(true);
        ASSERT_EQ(bb->key().ToString(), ba->key().ToString());
        ASSERT_EQ(bb->value().ToString(), ba->value().ToString());
      }
      ASSERT_FALSE(ba->Valid());
      ASSERT_TRUE(ba->status().ok()) << ba->status().ToString();
    }
    // Random seeks followed by random walks.
    for (int s = 0; s < 60; s++) {
      std::string t = rng() % 2 ? probe[rng() % probe.size()] : RandomKey(rng, 0, p.uih_keys() && rng() % 4);
      if (rng() % 2) ia->Seek(t), ib->Seek(t);
      else ia->SeekForPrev(t), ib->SeekForPrev(t);
      for (int step = 0; step < 12; step++) {
        ASSERT_EQ(ib->Valid(), ia->Valid()) << "after seek to " << Slice(t).ToString(true);
        if (!ib->Valid()) break;
        ASSERT_EQ(ib->key().ToString(), ia->key().ToString());
        ASSERT_EQ(ib->value().ToString(), ia->value().ToString());
        if (rng() % 3) ia->Next(), ib->Next();
        else ia->Prev(), ib->Prev();
      }
      ASSERT_TRUE(ia->status().ok()) << ia->status().ToString();
    }
  }
}

TEST(UihTableDiff, RandomWritesFlushesSnapshotsAndCompaction) {
  for (int seed = 0; seed < Seeds(); seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    Pair p(seed);
    int keyspace = 200 + static_cast<int>(rng() % 2000);
    std::vector<std::string> probe;
    int ops = 3000 + static_cast<int>(rng() % 3000);
    for (int i = 0; i < ops; i++) {
      std::string k = RandomKey(rng, keyspace, p.uih_keys());
      if (probe.size() < 400 || rng() % 10 == 0) probe.push_back(k);
      switch (rng() % 10) {
        case 0: case 1: p.Both([&](DB* db) { return db->Delete(WriteOptions(), k); }); break;
        case 2: {
          // SingleDelete's contract: one Put since the key was last deleted,
          // no Delete/Merge/overwrite. Keys of their own, each used once.
          std::string sk = p.uih_keys() ? UniqueUihKey(i) : "sd" + std::to_string(i), v = RandomValue(rng);
          p.Both([&](DB* db) { return db->Put(WriteOptions(), sk, v); });
          if (rng() % 4) p.Both([&](DB* db) { return db->SingleDelete(WriteOptions(), sk); });
          probe.push_back(sk);
          break;
        }
        case 3: { std::string v = RandomValue(rng); p.Both([&](DB* db) { return db->Merge(WriteOptions(), k, v); }); break; }
        default: { std::string v = RandomValue(rng); p.Both([&](DB* db) { return db->Put(WriteOptions(), k, v); }); }
      }
      if (rng() % 700 == 0) p.Both([](DB* db) { return db->Flush(FlushOptions()); });
      if (rng() % 1500 == 0) p.TakeSnapshot();
    }
    probe.push_back(RandomKey(rng, 0, p.uih_keys()));  // absent
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    p.Both([](DB* db) { return db->Flush(FlushOptions()); });
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    p.Both([](DB* db) { return db->CompactRange(CompactRangeOptions(), nullptr, nullptr); });
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    EXPECT_TRUE(p.uih()->VerifyChecksum().ok());
    ExpectLayout(p);
  }
}

// Compares everything again after reopening both DBs (files read back
// cold, ingested ones with their global seqno) and after a full
// compaction, then verifies every UihTable checksum.
void CompareAfterReopenAndCompaction(Pair& p, std::mt19937_64& rng, const std::vector<std::string>& probe) {
  p.Reopen();
  ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
  p.Both([](DB* db) { return db->CompactRange(CompactRangeOptions(), nullptr, nullptr); });
  ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
  EXPECT_TRUE(p.uih()->VerifyChecksum().ok());
}

// Writes `data` into `files` sorted files per DB with SstFileWriter
// (UihTable for one DB, BlockBasedTable for the other) and ingests them
// together; a quarter of the keys go to `probe`. Returns the UihTable
// DB's ingestion status (the BlockBasedTable one must agree).
Status IngestBoth(Pair& p, const std::map<std::string, std::string>& data, int files,
                  const IngestExternalFileOptions& ifo, const std::string& tag, std::vector<std::string>* probe) {
  Status st[2];
  size_t per = data.size() / static_cast<size_t>(files) + 1;
  for (int i = 0; i < 2; i++) {
    Options o = BaseOptions(i == 0, p.seed());
    std::vector<std::string> paths;
    auto it = data.begin();
    size_t n = 0;
    for (int f = 0; f < files && it != data.end(); f++) {
      SstFileWriter w(EnvOptions(), o);
      std::string path = p.dir() + "/" + tag + std::to_string(i) + "_" + std::to_string(f) + ".sst";
      EXPECT_TRUE(w.Open(path).ok());
      for (size_t c = 0; c < per && it != data.end(); c++, ++it, ++n) {
        EXPECT_TRUE(w.Put(it->first, it->second).ok());
        if (i == 0 && n % 4 == 0) probe->push_back(it->first);
      }
      EXPECT_TRUE(w.Finish().ok());
      paths.push_back(path);
    }
    st[i] = p.db(i)->IngestExternalFile(paths, ifo);
  }
  EXPECT_EQ(st[1].code(), st[0].code()) << "uih: " << st[0].ToString() << " bbt: " << st[1].ToString();
  return st[0];
}

// Sorted random data written with SstFileWriter (UihTable for one DB,
// BlockBasedTable for the other) and ingested, several files at once.
TEST(UihTableDiff, BulkIngestion) {
  for (int seed = 0; seed < Seeds(); seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(1000 + seed);
    Pair p(seed);
    std::map<std::string, std::string> data;
    size_t n = 1 + rng() % 3000;
    while (data.size() < n) data[RandomKey(rng, 0, p.uih_keys())] = RandomValue(rng);
    int files = 1 + static_cast<int>(rng() % 4);
    std::vector<std::string> probe;
    IngestExternalFileOptions ifo;
    ifo.move_files = seed % 2 == 0;
    ifo.write_global_seqno = seed % 3 == 0;  // 7.8.3 defaults to true; both must work
    Status s = IngestBoth(p, data, files, ifo, "ingest", &probe);
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Writes on top of the ingested level, then an older snapshot's view.
    p.TakeSnapshot();
    for (int i = 0; i < 50; i++) {
      std::string k = probe.empty() || rng() % 2 ? RandomKey(rng, 0, p.uih_keys()) : probe[rng() % probe.size()];
      std::string v = RandomValue(rng);
      bool put = rng() % 2;  // drawn once: both DBs get the same operation
      p.Both([&](DB* db) { return put ? db->Put(WriteOptions(), k, v) : db->Delete(WriteOptions(), k); });
    }
    for (int i = 0; i < 20; i++) probe.push_back(RandomKey(rng, 0, p.uih_keys() && i % 4));
    if (probe.empty()) probe.push_back("");
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    EXPECT_TRUE(p.uih()->VerifyChecksum().ok());
    // Ingested files land in one level, the bottommost.
    ColumnFamilyMetaData meta;
    p.uih()->GetColumnFamilyMetaData(&meta);
    int levels = 0;
    for (const auto& l : meta.levels) levels += !l.files.empty();
    EXPECT_EQ(1, levels);
    EXPECT_FALSE(meta.levels.back().files.empty()) << "not in the bottommost level";
    ExpectLayout(p);
  }
}

// Files ingested over live data and under a snapshot: RocksDB gives them a
// global sequence number above every existing one (written into the file's
// properties with write_global_seqno, else only in the manifest), and the
// reader must show every entry at that number: newer than what it
// overwrites, invisible to the older snapshot. Checked before and after
// reopening (the number then comes back from the manifest or the file) and
// after a compaction rewrites the files with real sequence numbers.
TEST(UihTableDiff, IngestionOverLiveDataTakesAGlobalSeqno) {
  for (int seed = 0; seed < Seeds(); seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(2000 + seed);
    Pair p(seed);
    // No automatic compaction: it would merge the ingested files away
    // (with sequence numbers of their own) before anything reads them.
    p.Both([](DB* db) { return db->SetOptions({{"disable_auto_compactions", "true"}}); });
    const int keyspace = 300;
    std::vector<std::string> probe;
    for (int i = 0; i < 600; i++) {  // live data: flushed files and a memtable
      std::string k = RandomKey(rng, keyspace, p.uih_keys()), v = RandomValue(rng);
      probe.push_back(k);
      switch (rng() % 6) {
        case 0: p.Both([&](DB* db) { return db->Delete(WriteOptions(), k); }); break;
        case 1: p.Both([&](DB* db) { return db->Merge(WriteOptions(), k, v); }); break;
        default: p.Both([&](DB* db) { return db->Put(WriteOptions(), k, v); });
      }
      if (i % 250 == 249) p.Both([](DB* db) { return db->Flush(FlushOptions()); });
    }
    if (seed % 2) p.TakeSnapshot();  // must not see the ingested keys
    // Two ingestions, each over keys that exist: each takes a new number.
    for (int round = 0; round < 2; round++) {
      std::map<std::string, std::string> data;
      size_t n = 1 + rng() % 400;
      while (data.size() < n) data[RandomKey(rng, keyspace, p.uih_keys())] = RandomValue(rng);
      IngestExternalFileOptions ifo;
      ifo.write_global_seqno = (seed + round) % 2 == 0;
      ifo.move_files = seed % 3 == 0;
      const SequenceNumber before = p.uih()->GetLatestSequenceNumber();
      Status s = IngestBoth(p, data, 1 + static_cast<int>(rng() % 3), ifo, "r" + std::to_string(round), &probe);
      ASSERT_TRUE(s.ok()) << s.ToString();
      const SequenceNumber seqno = p.uih()->GetLatestSequenceNumber();
      ASSERT_GT(seqno, before) << "the ingestion took no sequence number: the test tests nothing";
      std::vector<LiveFileMetaData> live;
      p.uih()->GetLiveFilesMetaData(&live);
      int ingested = 0;
      for (const auto& f : live) ingested += f.smallest_seqno == seqno && f.largest_seqno == seqno;
      EXPECT_GE(ingested, 1) << "no file carries the global seqno " << seqno;
      if (round == 0) p.TakeSnapshot();  // sees the first ingestion, not the second
      for (int i = 0; i < 30; i++) {  // writes on top
        std::string k = probe[rng() % probe.size()], v = RandomValue(rng);
        p.Both([&](DB* db) { return db->Put(WriteOptions(), k, v); });
      }
    }
    probe.push_back(RandomKey(rng, 0, p.uih_keys()));  // absent
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    EXPECT_TRUE(p.uih()->VerifyChecksum().ok());
    ASSERT_NO_FATAL_FAILURE(CompareAfterReopenAndCompaction(p, rng, probe));
  }
}

// Files of one key (smallest == largest), the shape RocksDB 7.8.3's
// ingestion handles least well (fixed upstream later): ingested one or two
// at a time, over live data and earlier single-key files of the same key,
// as puts, merges and deletes, under snapshots, with and without
// write_global_seqno. Whatever RocksDB does with BlockBasedTable files
// (accept, refuse, which value wins), it must do with UihTable files.
TEST(UihTableDiff, SingleKeyFilesBehaveAsBlockBasedOnes) {
  for (int seed = 0; seed < Seeds(); seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(3000 + seed);
    Pair p(seed);
    if (seed % 2) p.Both([](DB* db) { return db->SetOptions({{"disable_auto_compactions", "true"}}); });
    std::vector<std::string> keys, probe;
    for (int i = 0; i < 6; i++) keys.push_back(RandomKey(rng, 0, p.uih_keys()));
    for (int i = 0; i < 20; i++) {
      std::string k = keys[rng() % keys.size()], v = RandomValue(rng);
      p.Both([&](DB* db) { return db->Put(WriteOptions(), k, v); });
    }
    if (seed % 3 == 0) p.Both([](DB* db) { return db->Flush(FlushOptions()); });
    int accepted = 0;
    for (int round = 0; round < 12; round++) {
      if (rng() % 4 == 0) p.TakeSnapshot();
      // One file, or two: of different keys, or of the same key.
      int nfiles = rng() % 3 == 0 ? 2 : 1;
      std::string k0 = keys[rng() % keys.size()];
      std::string k1 = rng() % 2 ? k0 : keys[rng() % keys.size()];
      int op = static_cast<int>(rng() % 4);  // put, put, merge, delete
      std::string v0 = RandomValue(rng), v1 = RandomValue(rng);
      IngestExternalFileOptions ifo;
      ifo.write_global_seqno = rng() % 2;
      ifo.move_files = rng() % 2;
      Status st[2];
      for (int i = 0; i < 2; i++) {
        Options o = BaseOptions(i == 0, seed);
        std::vector<std::string> paths;
        for (int f = 0; f < nfiles; f++) {
          SstFileWriter w(EnvOptions(), o);
          std::string path = p.dir() + "/one" + std::to_string(round) + "_" + std::to_string(i) + std::to_string(f) + ".sst";
          ASSERT_TRUE(w.Open(path).ok());
          const std::string& k = f == 0 ? k0 : k1;
          const std::string& v = f == 0 ? v0 : v1;
          Status ws = op == 3 ? w.Delete(k) : op == 2 ? w.Merge(k, v) : w.Put(k, v);
          ASSERT_TRUE(ws.ok()) << ws.ToString();
          ASSERT_TRUE(w.Finish().ok());
          paths.push_back(path);
        }
        if (nfiles == 2 && k1 < k0) std::swap(paths[0], paths[1]);
        st[i] = p.db(i)->IngestExternalFile(paths, ifo);
      }
      ASSERT_EQ(st[1].code(), st[0].code()) << "round " << round << " uih: " << st[0].ToString()
                                            << " bbt: " << st[1].ToString();
      accepted += st[0].ok();
    }
    EXPECT_GT(accepted, 0) << "no single-key file was ingested: the test tests nothing";
    probe = keys;
    probe.push_back(RandomKey(rng, 0, p.uih_keys()));  // absent
    ASSERT_NO_FATAL_FAILURE(CompareAll(p, rng, probe));
    ASSERT_NO_FATAL_FAILURE(CompareAfterReopenAndCompaction(p, rng, probe));
  }
}

// MultiGet reads a batch's values together through uih/io.h (io_uring, or
// pread with use_io_uring=false), around RocksDB's file reader: the batch
// shows in rocksdb.multiget.io.batch.size as RocksDB's own batched reads do,
// and its bytes in IOStatsContext::bytes_read and the read tickers as every
// other read's (benchmarks compare tables by them). Direct I/O and mmap
// reads go through RocksDB's file layer instead, one key at a time. Every
// path returns the same values.
TEST(UihTableDiff, MultiGetBatchesItsReadsAndCountsThem) {
  struct Mode {
    const char* name;
    bool uring, mmap, direct, batched;
  } modes[] = {{"io_uring", true, false, false, true},
               {"pread", false, false, false, true},
               {"mmap", true, true, false, false},
               {"direct", true, false, true, false}};
  std::map<std::string, std::string> data;
  std::mt19937_64 rng(3);
  while (data.size() < 200) data[RandomKey(rng, 0, true)] = std::string(100 + rng() % 900, 'v');
  std::vector<Slice> keys;
  uint64_t total = 0;
  for (const auto& [k, v] : data) {
    keys.emplace_back(k);
    total += v.size();
  }
  std::vector<std::string> absent;
  for (int i = 0; i < 20; i++) absent.push_back(RandomKey(rng, 0, true));
  for (const auto& k : absent) keys.emplace_back(k);

  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    uih_test::TempDir dir;
    Options o = BaseOptions(true, 0);  // no value cache: every value is read
    uih::UihTableOptions to;
    to.use_io_uring = m.uring;
    o.table_factory.reset(new uih::UihTableFactory(to));
    o.allow_mmap_reads = m.mmap;
    o.use_direct_reads = m.direct;
    o.statistics = CreateDBStatistics();
    SstFileWriter w(EnvOptions(), o);
    ASSERT_TRUE(w.Open(dir / "f.sst").ok());
    for (const auto& [k, v] : data) ASSERT_TRUE(w.Put(k, v).ok());
    ASSERT_TRUE(w.Finish().ok());
    DB* db = nullptr;
    Status s = DB::Open(o, dir / "db", &db);
    if (m.direct && s.IsNotSupported()) {
      GTEST_SKIP() << "the test directory's file system has no O_DIRECT: " << s.ToString();
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<DB> guard(db);
    ASSERT_TRUE(db->IngestExternalFile({dir / "f.sst"}, IngestExternalFileOptions()).ok());
    ASSERT_TRUE(o.statistics->Reset().ok());

    std::vector<PinnableSlice> values(keys.size());
    std::vector<Status> st(keys.size());
    uint64_t before = get_iostats_context()->bytes_read;
    db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), keys.data(), values.data(), st.data());
    uint64_t read = get_iostats_context()->bytes_read - before;
    size_t i = 0;
    for (const auto& [k, v] : data) {
      ASSERT_TRUE(st[i].ok()) << st[i].ToString();
      ASSERT_EQ(v, values[i].ToString());
      i++;
    }
    for (; i < keys.size(); i++) ASSERT_TRUE(st[i].IsNotFound()) << st[i].ToString();

    HistogramData batch;
    o.statistics->histogramData(MULTIGET_IO_BATCH_SIZE, &batch);
    if (m.batched) {  // one batch (RocksDB hands a table up to 32 keys at a time)
      EXPECT_GE(batch.count, 1u);
      EXPECT_EQ(data.size(), static_cast<size_t>(batch.sum)) << "one read per key found, none for absent ones";
    } else {
      EXPECT_EQ(0u, batch.count) << "these reads belong to RocksDB's file layer";
    }
    // The ingested file sits in the last level: its reads are that ticker's.
    uint64_t ticked = o.statistics->getTickerCount(LAST_LEVEL_READ_BYTES);
    EXPECT_GE(read, total);
    if (!m.direct) {  // direct reads are rounded out to whole sectors
      EXPECT_LE(read, total + data.size() * (UIH_TABLE_VALUE_CHECKSUM_SIZE + 64));
    }
    if (!m.mmap) {  // RocksDB ticks no read bytes for mmap reads
      EXPECT_EQ(ticked, read);
    }
  }
}

}  // namespace
