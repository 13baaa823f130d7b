// uih_table_bench: UihTable against BlockBasedTable (defaults, and tuned
// with a bloom filter and a pinned index) on UIH-shaped data, same data,
// same run.
//
//   build/release/bench/uih_table_bench [--users N] [--seconds S] [--dir D]
//   UIH_BENCH_MMAP=1       allow_mmap_reads for every table
//   UIH_BENCH_NO_VERIFY=1  reads skip checksum verification
//
// Generates histories (uih/gen.h), cuts them into 256-event stripes encoded
// with the stripe codec, keyed (user, group, stripe start); writes the same
// sorted stripes with SstFileWriter for each table format and ingests them;
// then, on one thread, times point reads of random stripes and range reads
// of the last K stripes of random users (iterate_upper_bound set to the
// end of the user's group, as the materializer reads), and prints ops/s,
// ratios to BlockBasedTable, bytes read from the file system per operation
// (RocksDB's IOStatsContext::bytes_read: what the table asked the OS for,
// whether the page cache had it or not), file sizes and index memory. The
// files are in the OS page cache (read back once after ingestion).
// UihTable runs with its defaults (the numeric index it picks for UIH keys,
// no value cache: the OS page cache serves reads), with an 8 MiB value
// cache (BlockBasedTable's default block cache budget), and with the
// generic prefix index; PlainTable runs beside them (mmap reads and a hash
// of the 10-byte user + group prefix, as PlainTable requires; it cannot be
// ingested in 7.8.3, so it is loaded with puts and a full compaction).
// Range reads of K stripes pick among the users that have at least K.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/iostats_context.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "uih/uih.h"
#include "uih_plugin/table.h"

using namespace rocksdb;

namespace {

struct Stripe {
  std::string key, value;
};

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "uih_table_bench: %s\n", what.c_str());
  exit(1);
}

// Sorted stripes of generated users, and each user's key prefix and count.
struct Data {
  std::vector<Stripe> stripes;
  struct User {
    std::string prefix;  // user + group
    size_t first, count;
  };
  std::vector<User> users;
  // Indexes into `users` of the users with at least k stripes, per k.
  std::vector<size_t> with_at_least(size_t k) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < users.size(); i++)
      if (users[i].count >= k) out.push_back(i);
    return out;
  }
  uint64_t raw_bytes = 0;
};

Data Generate(uint64_t users) {
  uih_error err{};
  uih_schema* schema = nullptr;
  if (uih_schema_load(UIH_SOURCE_DIR "/examples/feed.schema.json", &schema, &err)) Die(err.msg);
  const uih_group* g = uih_schema_group_by_name(schema, "engagement");
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = users;
  uih_gen* gen = nullptr;
  uih_batch* b = nullptr;
  uih_stripe_encoder* enc = nullptr;
  if (uih_gen_create(g, &o, &gen, &err) || uih_batch_create(g, g->stripe_events, nullptr, 0, &b, &err) ||
      uih_stripe_encoder_create(nullptr, &enc, &err))
    Die(err.msg);
  Data d;
  uint64_t user = 0, last_user = UINT64_MAX;
  for (;;) {
    if (uih_gen_next(gen, &user, b, &err)) Die(err.msg);
    if (b->count == 0) break;
    const uint8_t* p;
    size_t len;
    if (uih_stripe_encode(enc, b, uih_schema_version(schema), &p, &len, &err)) Die(err.msg);
    uih_key k{user, g->id, uih_column_i64(uih_batch_ts_column(b))[0]};
    uint8_t kb[UIH_KEY_SIZE];
    uih_key_encode(&k, kb);
    if (user != last_user) {
      d.users.push_back({std::string(reinterpret_cast<char*>(kb), UIH_KEY_GROUP_PREFIX_SIZE), d.stripes.size(), 0});
      last_user = user;
    }
    d.users.back().count++;
    d.stripes.push_back({std::string(reinterpret_cast<char*>(kb), UIH_KEY_SIZE),
                         std::string(reinterpret_cast<const char*>(p), len)});
    d.raw_bytes += len + UIH_KEY_SIZE;
  }
  uih_stripe_encoder_free(enc);
  uih_batch_free(b);
  uih_gen_free(gen);
  uih_schema_free(schema);
  return d;  // generated in (user, ts) order: already sorted
}

struct Variant {
  const char* name;
  std::shared_ptr<TableFactory> table;
  bool plain = false;  // PlainTable: mmap reads, prefix hash, loaded by puts
  std::unique_ptr<DB> db;
  uint64_t file_bytes = 0;
  uint64_t index_bytes = 0;
};

// One operation of a workload: a point read (k == 0) or the last k stripes
// of one of `users` (indexes of users with at least k stripes), read with
// the upper bound at the end of the user's group. Returns how many values
// it found.
// Every read verifies checksums (RocksDB's default) unless
// UIH_BENCH_NO_VERIFY is set: PlainTable has none to verify.
ReadOptions BenchReadOptions() {
  static const bool verify = getenv("UIH_BENCH_NO_VERIFY") == nullptr;
  ReadOptions ro;
  ro.verify_checksums = verify;
  return ro;
}

int RunOne(Variant& v, const Data& data, int k, const std::vector<size_t>& users, std::mt19937_64& rng,
           std::string* value) {
  if (k == 0) {
    const Stripe& s = data.stripes[rng() % data.stripes.size()];
    return v.db->Get(BenchReadOptions(), s.key, value).ok() ? 1 : 0;
  }
  const auto& u = data.users[users[rng() % users.size()]];
  std::string upper = u.prefix;
  Slice bound(upper);
  ReadOptions ro = BenchReadOptions();
  if (uih_key_prefix_successor(reinterpret_cast<uint8_t*>(&upper[0]), upper.size())) ro.iterate_upper_bound = &bound;
  size_t take = std::min<size_t>(static_cast<size_t>(k), u.count);
  std::unique_ptr<Iterator> it(v.db->NewIterator(ro));
  it->Seek(data.stripes[u.first + u.count - take].key);
  int found = 0;
  for (size_t i = 0; i < take && it->Valid(); i++, it->Next()) found += it->value().size() > 0;
  return found;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t users = 50000;
  double seconds = 2.0;
  std::string dir = "/tmp/uih_table_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--users")) users = strtoull(argv[i + 1], nullptr, 10);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else Die("usage: uih_table_bench [--users N] [--seconds S] [--dir D]");
  }
  Data data = Generate(users);
  printf("data: %zu stripes of %zu users, %.1f MB of keys and stripes\n\n", data.stripes.size(), data.users.size(),
         static_cast<double>(data.raw_bytes) / 1e6);

  BlockBasedTableOptions tuned;
  tuned.filter_policy.reset(NewBloomFilterPolicy(10));
  tuned.cache_index_and_filter_blocks = false;  // index and filter held by the reader: pinned
  constexpr int kVariants = 6, kBbt = 3, kTuned = 4, kPlain = 5;
  Variant variants[kVariants];
  uih::UihTableOptions uopts;  // defaults: numeric index for these keys, no value cache
  variants[0].name = "UihTable (defaults)";
  variants[0].table.reset(new uih::UihTableFactory(uopts));
  variants[1].name = "UihTable, 8 MiB value cache";
  uopts.cache_size = 8 << 20;  // the budget of BlockBasedTable's default block cache
  variants[1].table.reset(new uih::UihTableFactory(uopts));
  variants[2].name = "UihTable, prefix index";
  uopts.cache_size = 0;
  uopts.index_layout = uih::UihTableOptions::IndexLayout::kPrefix;
  variants[2].table.reset(new uih::UihTableFactory(uopts));
  variants[kBbt].name = "BlockBasedTable (defaults)";
  variants[kBbt].table.reset(NewBlockBasedTableFactory());
  variants[kTuned].name = "BlockBasedTable (bloom, pinned index)";
  variants[kTuned].table.reset(NewBlockBasedTableFactory(tuned));
  variants[kPlain].name = "PlainTable (mmap, prefix hash)";
  PlainTableOptions popts;
  popts.user_key_len = UIH_KEY_SIZE;
  variants[kPlain].table.reset(NewPlainTableFactory(popts));
  variants[kPlain].plain = true;

  if (system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) != 0) Die("cannot prepare " + dir);
  for (auto& v : variants) {
    Options o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    o.table_factory = v.table;
    o.compression = kNoCompression;  // stripes are already encoded
    o.allow_mmap_reads = v.plain || getenv("UIH_BENCH_MMAP") != nullptr;
    std::string path = dir + "/" + std::to_string(&v - variants);
    if (v.plain) {  // no ingestion for PlainTable: puts, then one sorted level
      o.prefix_extractor.reset(NewFixedPrefixTransform(UIH_KEY_GROUP_PREFIX_SIZE));
      o.write_buffer_size = 64 << 20;
      DB* db = nullptr;
      if (!DB::Open(o, path, &db).ok()) Die("db open");
      v.db.reset(db);
      for (const auto& s : data.stripes)
        if (!db->Put(WriteOptions(), s.key, s.value).ok()) Die("put");
      if (!db->Flush(FlushOptions()).ok() || !db->CompactRange(CompactRangeOptions(), nullptr, nullptr).ok())
        Die("plain table compaction");
      std::vector<LiveFileMetaData> files;
      db->GetLiveFilesMetaData(&files);
      for (const auto& f : files) v.file_bytes += f.size;
      std::string mem;
      db->GetProperty("rocksdb.estimate-table-readers-mem", &mem);
      v.index_bytes = strtoull(mem.c_str(), nullptr, 10);
      continue;  // compaction output is in the page cache already
    }
    SstFileWriter w(EnvOptions(), o);
    if (!w.Open(path + ".sst").ok()) Die("open sst");
    for (const auto& s : data.stripes)
      if (!w.Put(s.key, s.value).ok()) Die("put");
    ExternalSstFileInfo info;
    if (!w.Finish(&info).ok()) Die("finish");
    v.file_bytes = info.file_size;
    DB* db = nullptr;
    if (!DB::Open(o, path, &db).ok()) Die("db open");
    v.db.reset(db);
    IngestExternalFileOptions ifo;
    ifo.move_files = true;
    Status s = db->IngestExternalFile({path + ".sst"}, ifo);
    if (!s.ok()) Die(s.ToString());
    // SstFileWriter drops what it wrote from the page cache; read the files
    // back once so every table is measured with its file cached by the OS.
    std::vector<LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
    for (const auto& f : files) {
      FILE* in = fopen((f.db_path + f.name).c_str(), "rb");
      if (!in) Die("cannot read back " + f.name);
      static char buf[1 << 16];
      while (fread(buf, 1, sizeof buf, in) > 0) {
      }
      fclose(in);
    }
    std::string mem;
    db->GetProperty("rocksdb.estimate-table-readers-mem", &mem);
    v.index_bytes = strtoull(mem.c_str(), nullptr, 10);
  }

  printf("%-40s %12s %14s %16s\n", "table", "file MB", "reader memory", "memory/stripe");
  for (auto& v : variants)
    printf("%-40s %12.1f %13.1fK %15.2fB\n", v.name, static_cast<double>(v.file_bytes) / 1e6,
           static_cast<double>(v.index_bytes) / 1e3,
           static_cast<double>(v.index_bytes) / static_cast<double>(data.stripes.size()));

  // Workloads: a random stripe by key; the last K stripes of a random user.
  struct Workload {
    const char* name;
    int k;  // 0: point read
  } workloads[] = {{"point read of a random stripe", 0}, {"last 1 stripe of a user", 1},
                   {"last 4 stripes of a user", 4}, {"last 16 stripes of a user", 16}};
  std::vector<size_t> eligible[sizeof workloads / sizeof workloads[0]];
  printf("\nusers read by each workload:");
  for (const auto& w : workloads) {
    eligible[&w - workloads] = data.with_at_least(static_cast<size_t>(std::max(w.k, 1)));
    if (eligible[&w - workloads].empty()) Die(std::string("no user for: ") + w.name + " (use more --users)");
    if (w.k > 0) printf("  last %d: %zu users with >= %d stripes;", w.k, eligible[&w - workloads].size(), w.k);
  }
  printf("\n\n%-34s", "ops/s, one thread");
  for (auto& v : variants) printf(" %22.22s", v.name);
  printf("   UihTable/BBT(defaults)  UihTable/BBT(tuned)  UihTable/Plain\n");
  double read_per_op[sizeof workloads / sizeof workloads[0]][kVariants];
  // Each table runs in short turns, taking turns with the others, so drift
  // in the machine's speed (a shared VM) falls on every table alike; each
  // table continues its own operation stream across its turns.
  constexpr int kTurns = 8;
  for (const auto& w : workloads) {
    const std::vector<size_t>& pool = eligible[&w - workloads];
    double rate[kVariants];
    std::mt19937_64 rngs[kVariants];
    double busy[kVariants] = {};
    uint64_t ops[kVariants] = {}, found[kVariants] = {}, bytes[kVariants] = {};
    std::string value;
    for (int vi = 0; vi < kVariants; vi++) {
      rngs[vi].seed(42);  // same operations for every table
      auto t0 = std::chrono::steady_clock::now();  // warm-up, not counted
      while (Seconds(t0) < seconds / 8)
        for (int batch = 0; batch < 256; batch++) RunOne(variants[vi], data, w.k, pool, rngs[vi], &value);
    }
    for (int turn = 0; turn < kTurns; turn++) {
      for (int vi = 0; vi < kVariants; vi++) {
        uint64_t read0 = get_iostats_context()->bytes_read;
        auto t0 = std::chrono::steady_clock::now();
        while (Seconds(t0) < seconds / kTurns) {
          for (int batch = 0; batch < 256; batch++, ops[vi]++)
            found[vi] += RunOne(variants[vi], data, w.k, pool, rngs[vi], &value);
        }
        busy[vi] += Seconds(t0);
        bytes[vi] += get_iostats_context()->bytes_read - read0;
      }
    }
    for (int vi = 0; vi < kVariants; vi++) {
      if (found[vi] == 0) Die("nothing found");
      rate[vi] = static_cast<double>(ops[vi]) / busy[vi];
      read_per_op[&w - workloads][vi] = static_cast<double>(bytes[vi]) / static_cast<double>(ops[vi]);
    }
    printf("%-34s", w.name);
    for (double r : rate) printf(" %22.0f", r);
    printf("   %22.2fx %19.2fx %14.2fx\n", rate[0] / rate[kBbt], rate[0] / rate[kTuned], rate[0] / rate[kPlain]);
  }
  printf("\n%-34s", "bytes read per op (IOStats)");
  for (auto& v : variants) printf(" %22.22s", v.name);
  printf("\n");
  for (const auto& w : workloads) {
    printf("%-34s", w.name);
    for (double b : read_per_op[&w - workloads]) printf(" %22.0f", b);
    printf("\n");
  }
  printf("(reads of an mmap-ed file are not counted: PlainTable's show as 0)\n");
  return 0;
}
