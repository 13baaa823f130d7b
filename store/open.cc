// The C API of uih/store.h: opening a store. The descriptor, then each
// shard's database (its column families, its metadata, its generations
// paired with their records) and mutable tier, as the role wants them
// (format.h), then the schema; a writable open also finishes what a
// killed load or server left. Read-only and serving opens pin what they
// open (pins.h); a serving open starts its follower (follow.cc).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rocksdb/write_batch.h"
#include "follow.h"
#include "store_internal.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"
#include "uih_plugin/table.h"

using namespace rocksdb;
namespace fs = std::filesystem;

namespace uih {

ColumnFamilyOptions GenerationCfOptions() {
  // One factory for every generation of the process: no value cache, so
  // nothing in it belongs to a store. Reproducible: the same load gives the
  // same files.
  static const std::shared_ptr<TableFactory> factory = [] {
    UihTableOptions o;
    o.reproducible = true;
    return std::make_shared<UihTableFactory>(o);
  }();
  ColumnFamilyOptions o;
  o.table_factory = factory;
  o.disable_auto_compactions = true;  // ingested as one level, never compacted
  return o;
}

ColumnFamilyOptions ShardCfOptions(const uih_store* s, const std::string& name) {
  if (IsGenerationCf(name)) return GenerationCfOptions();
  if (name == UIH_MUTABLE_CF) {
    uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
    mo.block_cache_bytes = s->opts.block_cache_bytes;
    return MutableCfOptions(mo);
  }
  return ColumnFamilyOptions();
}

}  // namespace uih

namespace {

using uih::Database;
using uih::Generation;
using uih::OpenError;
using uih::SchemaVersion;
using uih::Shard;
using uih::ShardState;
using uih::StatusError;

// ---- a shard --------------------------------------------------------------------

int ReadCurrent(Database* im, uint32_t* current, uih_error* err) {
  bool found;
  *current = 0;
  return uih::ReadMetaU32(im->db, im->meta, im->path, uih::kCurrentKey, current, &found, err);
}

int ReadFormat(Database* im, uih_error* err) {
  bool found;
  im->format = 1;
  int rc = uih::ReadMetaU32(im->db, im->meta, im->path, uih::kFormatKey, &im->format, &found, err);
  if (rc == UIH_OK && found && (im->format < 2 || im->format > uih::kStoreFormat))
    rc = uih_error_set(err, UIH_ERR_NOT_SUPPORTED, "store %s: its format is %u; this build reads formats 1 to %u",
                       im->path.c_str(), im->format, uih::kStoreFormat);
  return rc;
}

int ReadRecords(Database* im, uint32_t shard, std::map<uint32_t, uih_generation>* records, uih_error* err) {
  std::unique_ptr<Iterator> it(im->db->NewIterator(ReadOptions(), im->meta));
  const std::string prefix = uih::kGenerationKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uih_generation g;
    uint32_t key = 0;
    int rc = uih::ParseKeyU32(it->key(), uih::kGenerationKeyPrefix, &key, err);
    if (rc == UIH_OK) rc = uih_generation_decode(uih::U8(it->value()), it->value().size(), &g, err);
    if (rc == UIH_OK && (key != g.generation || g.shard != shard))
      rc = uih_corruption(err, "generation record %u of shard %u is stored under key %s", g.generation, g.shard,
                          it->key().ToString(true).c_str());
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", im->path.c_str());
    (*records)[g.generation] = g;
  }
  if (!it->status().ok()) return StatusError(err, im->path, it->status(), "reading the generation records");
  return UIH_OK;
}

int ReadErased(Database* im, std::map<uint64_t, uih::Erasure>* erased, uih_error* err) {
  std::unique_ptr<Iterator> it(im->db->NewIterator(ReadOptions(), im->meta));
  const std::string prefix = uih::kErasedKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uint64_t user = 0;
    uih::Erasure e;
    int rc = uih::ParseKeyU64(it->key(), uih::kErasedKeyPrefix, &user, err);
    if (rc == UIH_OK) rc = uih::ParseErasedValue(it->value(), it->key(), &e, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", im->path.c_str());
    (*erased)[user] = e;
  }
  if (!it->status().ok()) return StatusError(err, im->path, it->status(), "reading the erased users");
  return UIH_OK;
}

// Opens the shard's database with every column family it has, each with
// its options; the generations' handles are returned by number.
int OpenDatabase(uih_store* s, Shard* sh, bool ro, Database* im,
                 std::map<uint32_t, ColumnFamilyHandle*>* gen_cfs, uih_error* err) {
  im->path = sh->path;
  DBOptions dbo;
  if (ro) dbo.info_log = std::make_shared<uih::SilentLogger>();
  else dbo.info_log = std::make_shared<uih::LogFile>(sh->path);
  if (!ro) uih::BoundPreallocation(&dbo);  // a read-only open writes nothing
  uih::StrictRecovery(&dbo);  // the metadata's log too: a damaged one never drops a publish silently
  // RocksDB's own table readers serve scans (loads) and open as those reach
  // a file: by default (-1) it would open every generation file at the
  // open, holding a second copy of each index beside the one the store's
  // reads use (GenerationFiles) and a second descriptor — memory and files
  // that grew with the store. 20 is the least RocksDB takes: a table cache
  // of 10 readers, of which it still opens (and keeps) a quarter at the
  // open, 2 (5 at 32: at 202 M events, 0.22 -> 0.12 s and 109 -> 87 MB for an
  // open and one read). One shard of it, so that 10 is a bound: split in
  // 64 (the default), each shard keeps one reader, and a scan of a whole
  // generation leaves every file's index cached. A scan holds one per layer.
  dbo.max_open_files = 20;
  dbo.table_cache_numshardbits = 0;
  // Nor does the open read the properties of the files it opens no reader
  // for, to weigh compactions the generations never have: RocksDB would
  // read them with its own parser, not the UihTable reader, which verifies
  // them first, and a damaged count there (a layer's deletions) trips
  // VersionStorageInfo::GetAverageValueSize's assert (Debian keeps asserts).
  dbo.skip_stats_update_on_db_open = true;
  std::vector<std::string> names;
  Status st = DB::ListColumnFamilies(dbo, sh->path, &names);
  if (!st.ok()) return StatusError(err, sh->path, st, "opening shard %u", sh->index);
  std::vector<ColumnFamilyDescriptor> cfs;
  for (const std::string& name : names) cfs.emplace_back(name, uih::ShardCfOptions(s, name));
  std::vector<ColumnFamilyHandle*> handles;
  int rc = uih::CheckTableProperties(sh->path, err);
  if (rc == UIH_OK) rc = uih::CheckWriteAheadLogs(sh->path, dbo, &im->recovered, err);
  if (rc != UIH_OK) return rc;
  // A read-only open races the shard's loader, whose flushes and
  // compactions delete files (and obsolete write-ahead logs the MANIFEST
  // still names) between RocksDB's reading of the MANIFEST and of them: a
  // file gone is looked for again; one gone for good fails the last try.
  for (int attempt = 0;; attempt++) {
    st = ro ? DB::OpenForReadOnly(dbo, sh->path, cfs, &handles, &im->db)
            : DB::Open(dbo, sh->path, cfs, &handles, &im->db);
    const std::string why = st.ToString();
    const bool gone = st.IsPathNotFound() || why.find("No such file or directory") != std::string::npos ||
                      why.find("Missing WAL") != std::string::npos;
    if (st.ok() || !ro || !gone || attempt == 20) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + attempt));
  }
  if (!st.ok()) return OpenError(err, sh->path, st, dbo, "opening shard %u", sh->index);
  im->writable = !ro;
  // Generations' handles wait in `others` (closed with the database) until
  // they are paired with their records.
  for (ColumnFamilyHandle* h : handles) {
    uint32_t g;
    if (h->GetName() == kDefaultColumnFamilyName) im->meta = h;
    else if (h->GetName() == UIH_MUTABLE_CF) im->legacy_mutable = h;
    else im->others.push_back(h);
    if (uih::ParseGenerationCfName(h->GetName(), &g)) (*gen_cfs)[g] = h;
  }
  return ReadFormat(im, err);
}

// A live generation: its record and column family paired, its dictionaries
// read.
int AddGeneration(const std::shared_ptr<Database>& im, const uih_generation& record, ColumnFamilyHandle* h,
                  ShardState* out, uih_error* err) {
  auto gen = std::make_shared<Generation>(record, im);
  gen->set_cf(h);
  im->others.erase(std::find(im->others.begin(), im->others.end(), h));
  out->gens[record.generation] = gen;
  std::string dicts;
  bool found;
  char what[64];
  snprintf(what, sizeof what, "generation %u's value dictionaries", record.generation);
  int rc = uih::GetMeta(im->db, im->meta, im->path, uih::DictsKey(record.generation), what, &dicts, &found, err);
  if (rc != UIH_OK) return rc;
  rc = gen->SetDicts(dicts, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "store %s: ", im->path.c_str());
}

// Pairs records with column families. A column family without a record (a
// load killed before it published, or a retirement half done) is dropped; a
// record without one is removed, unless it is the current generation's,
// which cannot be. A read-only open leaves both as they are.
int PairGenerations(bool ro, const std::map<uint32_t, ColumnFamilyHandle*>& gen_cfs,
                    const std::map<uint32_t, uih_generation>& records, ShardState* out, uih_error* err) {
  const std::shared_ptr<Database>& im = out->im;
  for (auto& [g, h] : gen_cfs) {
    auto rec = records.find(g);
    if (rec != records.end()) {
      int rc = AddGeneration(im, rec->second, h, out, err);
      if (rc != UIH_OK) return rc;
      continue;
    }
    im->others.erase(std::find(im->others.begin(), im->others.end(), h));
    Status st;
    if (!ro) st = im->db->DropColumnFamily(h);
    im->db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (!st.ok()) return StatusError(err, im->path, st, "dropping the unpublished generation %u", g);
  }
  for (auto& [g, rec] : records) {
    if (out->gens.count(g)) continue;
    if (g == out->current)
      return uih_corruption(err, "store %s: the current generation %u has no column family %s", im->path.c_str(), g,
                            uih::GenerationCfName(g).c_str());
    if (ro) continue;
    Status st = uih::DeleteGenerationRecord(im.get(), g);
    if (!st.ok()) return StatusError(err, im->path, st, "removing the record of retired generation %u", g);
  }
  if (out->current != 0 && !out->gens.count(out->current))
    return uih_corruption(err, "store %s: the current generation %u has no record", im->path.c_str(), out->current);
  return UIH_OK;
}

// A shard of format 3 that still has uih.mutable (a move killed after its
// commit) drops it.
int DropMovedMutable(Database* im, bool ro, uih_error* err) {
  if (im->legacy_mutable == nullptr || im->format < uih::kFormatOwnMutable || ro) return UIH_OK;
  Status st = im->db->DropColumnFamily(im->legacy_mutable);
  im->db->DestroyColumnFamilyHandle(im->legacy_mutable).PermitUncheckedError();
  im->legacy_mutable = nullptr;
  return st.ok() ? UIH_OK : StatusError(err, im->path, st, "dropping the mutable tier it moved to its own database");
}

// The shard's mutable tier, as the role wants it: its own database (format
// 3), or, read-only, the column family of an older shard.
int OpenMutable(uih_store* s, Shard* sh, bool ro, uih_error* err) {
  if (s->opts.role == UIH_STORE_ROLE_LOAD) return UIH_OK;  // a serving process owns it (read-only: not asked for)
  Database* im = sh->im.get();
  if (im->format < uih::kFormatOwnMutable) {
    if (im->legacy_mutable == nullptr)
      return uih_corruption(err, "store %s: the shard (format %u) has no column family %s", sh->path.c_str(),
                            im->format, UIH_MUTABLE_CF);
    return uih::AdoptMutable(sh->path, nullptr, im->db, im->legacy_mutable, im->meta, &sh->mut, err);
  }
  struct stat st;
  if (stat(sh->mutable_path.c_str(), &st) != 0)
    return uih_corruption(err, "store %s: shard %u's mutable tier %s is missing (%s)", s->dir.c_str(), sh->index,
                          sh->mutable_path.c_str(), strerror(errno));
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  mo.create_if_missing = 0;
  mo.read_only = ro;
  mo.block_cache_bytes = s->opts.block_cache_bytes;
  int rc = uih::OpenStoreMutable(sh->mutable_path, mo, &sh->mut, err);
  if (rc == UIH_OK && !ro) {
    size_t open = 0;
    for (uint32_t i = 0; i < s->shards.size(); i++) open += !s->opts.one_shard || i == s->opts.shard;
    uih::EnableCache(sh->mut, s->opts.cache_bytes / open);
  }
  const std::string why = rc == UIH_OK ? "" : uih_error_message(err);
  const bool here = why.find("lock hold by current process") != std::string::npos;  // RocksDB's words
  if (rc != UIH_OK && !ro && (here || why.find("While lock file") != std::string::npos)) {
    return uih_error_set(err, rc,
                         "store %s: shard %u's mutable tier is owned by another store %s (one store serves each "
                         "shard: it holds the tier's LOCK): %s",
                         s->dir.c_str(), sh->index, here ? "of this process" : "of another process", why.c_str());
  }
  return rc;
}

// The shard belongs to the store its descriptor names: the id it recorded
// is the descriptor's. A loader records it in a shard made before shards
// did (a read-only or serving open never writes).
int CheckStoreId(uih_store* s, const Shard* sh, Database* im, bool ro, uih_error* err) {
  std::string v;
  bool found;
  int rc = uih::GetMeta(im->db, im->meta, im->path, uih::kStoreIdKey, "the store id", &v, &found, err);
  uint64_t id = 0;
  if (rc == UIH_OK && found) rc = uih::ParseU64Value(v, uih::kStoreIdKey, &id, err);
  if (rc != UIH_OK) return rc;
  if (found && id != s->id) {
    char named[40] = "no id line";
    if (s->id) snprintf(named, sizeof named, "store %016" PRIx64, s->id);
    return uih_corruption(err,
                          "store %s: its UIHSTORE descriptor names %s, but shard %u belongs to store %016" PRIx64
                          ": the descriptor is damaged (cut short?) or belongs to another store",
                          s->dir.c_str(), named, sh->index, id);
  }
  if (found || ro || s->id == 0) return UIH_OK;
  WriteOptions wo;
  wo.sync = true;
  Status st = im->db->Put(wo, im->meta, uih::kStoreIdKey, uih::U64Value(s->id));
  return st.ok() ? UIH_OK : StatusError(err, im->path, st, "recording the store id");
}

}  // namespace

namespace uih {

int ReadShard(uih_store* s, Shard* sh, bool ro, ShardState* out, uih_error* err) {
  out->im = std::make_shared<Database>();
  std::map<uint32_t, ColumnFamilyHandle*> gen_cfs;
  std::map<uint32_t, uih_generation> records;
  int rc = OpenDatabase(s, sh, ro, out->im.get(), &gen_cfs, err);
  if (rc == UIH_OK) rc = DropMovedMutable(out->im.get(), ro, err);
  if (rc == UIH_OK) rc = ReadCurrent(out->im.get(), &out->current, err);
  if (rc == UIH_OK) rc = ReadRecords(out->im.get(), sh->index, &records, err);
  if (rc == UIH_OK) rc = ReadErased(out->im.get(), &out->erased, err);
  if (rc == UIH_OK) rc = PairGenerations(ro, gen_cfs, records, out, err);
  return rc;
}

}  // namespace uih

namespace {

// The database of the shard as the role opens it: read-only for readers
// and servers, which then pin what they hold (inside the gate, pins.h:
// PinShard);
// writable for loaders. A shard of an older format is first brought to
// format 3 by any open but a reader's (format.h).
int OpenShard(uih_store* s, uint32_t index, uih_error* err) {
  auto owned = std::make_unique<Shard>();
  Shard* sh = owned.get();
  sh->index = index;
  sh->path = s->dir + "/" + uih::ShardName(index);
  sh->mutable_path = s->dir + "/" + uih::MutableName(index);
  s->shards[index] = std::move(owned);  // closed with the store from here on
  const bool ro = s->opts.read_only || s->opts.role == UIH_STORE_ROLE_SERVE;
  // The hint before the database: a loader writes it after its publish is
  // durable, so the database's current generation is never older than it.
  const uint32_t hinted = uih::ReadPublished(s, index);
  ShardState state;
  int rc;
  for (int attempt = 0;; attempt++) {
    rc = uih::ReadShard(s, sh, ro, &state, err);
    // A read-only open that raced the loader's flush (its MANIFEST read
    // before, the log holding the switch deleted after) sees the database
    // as it was before the publish the hint names: it looks again.
    if (rc != UIH_OK || !ro || hinted <= state.current || attempt == 20) break;
    state = ShardState{};
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + attempt));
  }
  if (rc == UIH_OK && !s->opts.read_only && state.im->format < uih::kFormatOwnMutable) {
    state = ShardState{};  // closed: the move opens it writable
    rc = uih::MoveMutable(s, sh, err);
    if (rc == UIH_OK) rc = uih::ReadShard(s, sh, ro, &state, err);
  }
  if (rc == UIH_OK) rc = CheckStoreId(s, sh, state.im.get(), ro, err);
  if (rc == UIH_OK && hinted > state.current)
    rc = uih_corruption(err,
                        "store %s: shard %u's database says generation %u is current, but generation %u was published "
                        "(%s): the database lost a publish (a damaged MANIFEST or write-ahead log?), or that hint "
                        "file is damaged (it is only a hint: removed, the next load writes it again)",
                        s->dir.c_str(), index, state.current, hinted, uih::PublishedName(index).c_str());
  if (rc != UIH_OK) return rc;
  if (ro) rc = uih::PinShard(s, index, &state, err);
  if (rc != UIH_OK) return rc;
  sh->im = std::move(state.im);
  sh->gens = std::move(state.gens);
  sh->current = state.current;
  sh->erased = std::move(state.erased);
  sh->any_erased.store(!sh->erased.empty(), std::memory_order_release);
  rc = OpenMutable(s, sh, s->opts.read_only != 0, err);
  if (!sh->im->recovered.empty()) sh->recovered = "its database's " + sh->im->recovered;
  const std::string mut = sh->mut ? uih::MutableRecovered(sh->mut) : "";
  if (!mut.empty()) sh->recovered += (sh->recovered.empty() ? "its mutable tier's " : "; its mutable tier's ") + mut;
  return rc;
}

// ---- the store ----------------------------------------------------------------

// Reads the descriptor: how many shards, and the store's id.
int ReadDescriptor(uih_store* s, const char* dir, uint32_t* nshards, uih_error* err) {
  struct stat st;
  if (stat(dir, &st) != 0)
    return uih::NotAStore(err, dir, errno == ENOENT ? "it does not exist" : strerror(errno));
  if (!S_ISDIR(st.st_mode)) return uih::NotAStore(err, dir, "it is not a directory");
  return uih::ReadDescriptorFile(s->dir, nshards, &s->id, nullptr, err);
}

// Opens the shards; a read-only or serving store opens them inside the
// gate, so that no writer retires what it pins in between (pins.h).
int OpenShards(uih_store* s, uint32_t nshards, uih_error* err) {
  const bool pins = s->opts.read_only || s->opts.role == UIH_STORE_ROLE_SERVE;
  int rc = s->pins.Open(s->dir + "/" + uih::kDescriptorFile, !s->opts.read_only, err);
  if (rc != UIH_OK) return rc;
  std::optional<uih::PinGate> gate;
  if (pins) {
    gate.emplace(&s->pins, false, err);
    if (gate->rc() != UIH_OK) return gate->rc();
  }
  for (uint32_t i = 0; i < nshards; i++) {
    if (s->opts.one_shard && i != s->opts.shard) continue;
    rc = OpenShard(s, i, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

// The store's schema: the newest version any of its open shards holds,
// given to every mutable tier.
int ReadSchema(uih_store* s, uih_error* err) {
  uint32_t best = 0;
  std::string json;
  for (auto& sh : s->shards) {
    if (!sh) continue;
    std::string j;
    int rc = uih::ReadNewestSchema(sh->im.get(), &sh->schema_version, &j, err);
    if (rc != UIH_OK) return rc;
    if (sh->schema_version > best) best = sh->schema_version, json = j;
  }
  const std::string origin = s->dir + ": schema version " + std::to_string(best);
  SchemaVersion& newest = s->schemas[best];
  newest.json = json;
  int rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &newest.schema, err);
  if (rc != UIH_OK) return rc;
  s->schema = newest.schema;
  for (auto& sh : s->shards)
    if (sh && sh->mut) uih::SetMutableSchema(sh->mut, s->schema);
  return UIH_OK;
}

// What a killed load or server left: the mutable tier catches up with
// the current generation (its owner's job), the .published hints are
// rewritten (a loader's; one killed before writing its hint), and a
// loader's temporary files go.
int Recover(uih_store* s, uih_error* err) {
  for (auto& sh : s->shards) {
    if (!sh) continue;
    int rc = sh->mut ? uih::ApplyPublished(sh.get(), true, err) : UIH_OK;
    if (rc != UIH_OK) return rc;
    uih_error ignored{};  // a hint: the open goes on without it (the next publish writes it again)
    if (s->opts.role != UIH_STORE_ROLE_SERVE) (void)uih::WritePublished(s, sh.get(), &ignored);
  }
  if (s->opts.role == UIH_STORE_ROLE_SERVE) return UIH_OK;
  std::error_code ec;
  fs::remove_all(s->tmp, ec);
  if (s->opts.one_shard) fs::create_directory(s->dir + "/tmp", ec);  // the parent of this shard's
  return UIH_OK;
}

int Open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  if (dir == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: NULL argument");
  *out = nullptr;
  auto s = std::make_unique<uih_store>();
  s->dir = dir;
  while (s->dir.size() > 1 && s->dir.back() == '/') s->dir.pop_back();
  s->opts = UIH_STORE_OPTS_DEFAULT;
  if (opts) s->opts = *opts;
  if (!s->opts.one_shard) s->opts.shard = 0;
  // A store of one shard keeps its temporary files apart: removing them
  // never touches another shard's running load.
  s->tmp = s->dir + "/tmp";
  if (s->opts.one_shard) s->tmp += "/" + uih::ShardName(s->opts.shard);
  if (s->opts.keep == 0) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: keep must be at least 1");
  if (s->opts.role > UIH_STORE_ROLE_SERVE)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_open: role %u, expected 0 (all), 1 (load) or 2 (serve)",
                         s->opts.role);
  uint32_t nshards = 0;
  int rc = ReadDescriptor(s.get(), dir, &nshards, err);
  if (rc != UIH_OK) return rc;
  if (s->opts.one_shard && s->opts.shard >= nshards)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_open: %s: shard %u, the store has %u (0..%u)", dir,
                         s->opts.shard, nshards, nshards - 1);
  s->shards.resize(nshards);
  rc = OpenShards(s.get(), nshards, err);
  if (rc == UIH_OK) rc = ReadSchema(s.get(), err);
  if (rc == UIH_OK && !s->opts.read_only) rc = Recover(s.get(), err);
  if (rc == UIH_OK && !s->opts.read_only && s->opts.role == UIH_STORE_ROLE_SERVE && s->opts.follow_ms > 0)
    s->follower = std::make_unique<uih::Follower>(s.get(), s->opts.follow_ms);
  if (rc != UIH_OK) return rc;
  *out = s.release();
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_open(const char* dir, const uih_store_opts* opts, uih_store** out, uih_error* err) {
  return uih::CallC(err, "uih_store_open", [&] { return Open(dir, opts, out, err); });
}

void uih_store_close(uih_store* s) {
  uih::CallCVoid([&] { delete s; });
}

}  // extern "C"
