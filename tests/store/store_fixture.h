// What the store tests share: the schemas (version 1 and a successor),
// file writers for every input compression, a shard's generation as a map,
// and a fixture that makes, opens and loads stores.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "uih/loader.h"
#include "uih/store.h"

namespace uih_test {

inline const char kSchema[] = R"({"name": "t", "version": 1, "groups": [
  {"name": "a", "id": 1, "stripe_events": 4, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"},
    {"name": "liked", "id": 3, "type": "flag"}]},
  {"name": "b", "id": 2, "stripe_events": 3, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"}]}]})";

// Version 2: group a drops 'liked' and adds 'score'.
inline const char kSchemaV2[] = R"({"name": "t", "version": 2, "groups": [
  {"name": "a", "id": 1, "stripe_events": 4, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"},
    {"name": "liked", "id": 3, "type": "flag", "dropped_in": 2},
    {"name": "score", "id": 4, "type": "uint32", "added_in": 2}]},
  {"name": "b", "id": 2, "stripe_events": 3, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp"},
    {"name": "item", "id": 2, "type": "id"}]}]})";

inline constexpr int64_t kDay = 86400000;
inline constexpr int64_t kBase = 1700000000000;

inline const std::string kHeader = "user_id,group,ts,item,liked\n";


// Shard `shard`'s mutable tier (null, and a test failure, if the store
// has none for it).
inline uih_mutable* MutableOf(uih_store* s, uint32_t shard) {
  uih_mutable* m = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_mutable(s, shard, &m, &err), UIH_OK) << uih_error_message(&err);
  return m;
}

inline void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
}

inline void WriteZstd(const std::string& path, const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  out.resize(n);
  WriteFile(path, out);
}

// What is left of an open scan, as (key -> stripe bytes).
inline std::map<std::string, std::string> Drain(uih_store_scan* sc) {
  std::map<std::string, std::string> out;
  uih_error err{};
  for (;;) {
    const uint8_t *k, *v;
    size_t kl, vl;
    EXPECT_EQ(uih_store_scan_next(sc, &k, &kl, &v, &vl, &err), UIH_OK) << uih_error_message(&err);
    if (k == nullptr) break;
    out[std::string(reinterpret_cast<const char*>(k), kl)] = std::string(reinterpret_cast<const char*>(v), vl);
  }
  return out;
}

// One shard's generation as (key -> stripe bytes).
inline std::map<std::string, std::string> Scan(uih_store* s, uint32_t shard) {
  uih_store_scan* sc = nullptr;
  uih_error err{};
  EXPECT_EQ(uih_store_scan_open(s, shard, 0, &sc, &err), UIH_OK) << uih_error_message(&err);
  std::map<std::string, std::string> out = sc ? Drain(sc) : std::map<std::string, std::string>{};
  uih_store_scan_close(sc);
  return out;
}

class StoreTest : public ::testing::Test {
 protected:
  uih_store* Init(const std::string& name, uint32_t shards) {
    uih_error err{};
    std::string path = dir_ / name;
    EXPECT_EQ(uih_store_init(path.c_str(), kSchema, strlen(kSchema), "t.json", shards, &err), UIH_OK)
        << uih_error_message(&err);
    return Open(path);
  }
  uih_store* Open(const std::string& path, int read_only = 0) {
    uih_error err{};
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = read_only;
    uih_store* s = nullptr;
    EXPECT_EQ(uih_store_open(path.c_str(), &o, &s, &err), UIH_OK) << uih_error_message(&err);
    return s;
  }
  int Load(uih_store* s, std::vector<std::string> files, int64_t through, int64_t lookback = 0,
           uih_error* err = nullptr, size_t memory = size_t{64} << 20, uint32_t threads = 1,
           uih_load_stats* st = nullptr) {
    std::vector<const char*> in;
    for (auto& f : files) in.push_back(f.c_str());
    uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
    o.through = through;
    o.lookback = lookback;
    o.memory = memory;
    o.threads = threads;
    uih_error local{};
    return uih_load(s, in.data(), in.size(), &o, st, err ? err : &local);
  }
  // A store of `shards` in dir_/store holding `csv` as one day's load
  // (through kBase + kDay), its table files rolled over every `file_bytes`
  // so that file boundaries cut histories; left open in *out.
  void LoadInSmallFiles(const std::string& csv, uint32_t shards, uint64_t file_bytes, uih_store** out) {
    const std::string day = dir_ / "day.csv", path = dir_ / "store";
    WriteFile(day, csv);
    uih_error err{};
    ASSERT_EQ(uih_store_init(path.c_str(), kSchema, strlen(kSchema), "t.json", shards, &err), UIH_OK);
    uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
    so.file_bytes = file_bytes;
    ASSERT_EQ(uih_store_open(path.c_str(), &so, out, &err), UIH_OK) << uih_error_message(&err);
    ASSERT_EQ(Load(*out, {day}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  }
  // A store of one shard with `rows` loaded through 1000 (serve_test.cc).
  std::string OneDay(const std::string& rows);
  // A load of `file` through `through` into `s` that erases `user`
  // (serve_test.cc).
  int LoadErasing(uih_store* s, const std::string& file, int64_t through, uint64_t user, uih_error* err);
  uih_test::TempDir dir_;
};


}  // namespace uih_test
