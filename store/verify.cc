// uih_store_verify: the scrub an operator runs after a disk incident. It
// reads everything a store holds, read-only, and says which files are
// damaged and what they hold:
//   the descriptor and each shard's .published hint, parsed;
//   each shard's database opened read-only (what every open checks: its
//     write-ahead logs read whole, its block-based tables' properties, its
//     MANIFEST, the store id, the hint against the current generation),
//     then every metadata record read and parsed;
//   every table file of the shard's folder and its mutable tier's: each
//     block or value checksum verified; a live generation's stripes each
//     decoded whole (its own checksum too) under the schema version it was
//     written with and its generation's dictionaries, the key checked
//     against the stripe, and the stripes and events of each generation
//     counted against its record;
//   the mutable tier read whole through its database (what its log replays
//     included): every event list validated, a quarantined one named.
// A table file that does not read is named with the users its keys span
// (the database's record of the file, or its own index) and the
// generation it belongs to; a database that does not open, with RocksDB's
// or our own words (they name the file and the offset).
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mem.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table.h"
#include "store_internal.h"
#include "uih/events.h"
#include "uih/key.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/table.h"

namespace fs = std::filesystem;
using namespace rocksdb;

namespace {

struct Item {
  std::string path, kind, damage, note;
  uint32_t shard = UINT32_MAX, generation = 0;
  uint64_t entries = 0, bytes = 0;
  bool has_users = false;
  uint64_t first_user = 0, last_user = 0;
  bool counts = true;  // damage here matters (not a file the database no longer uses)
  bool linked = false; // another name of a file read under its first: not counted again
};

// What the database says of one of its table files.
struct LiveFile {
  std::string cf;
  uint32_t generation = 0;  // a generation's column family
  std::string smallest, largest;
};

// The users a table's keys span: 18-byte stripe or chunk keys (10-byte
// (user, group) keys in mutable stores made before chunks) begin with the
// user.
bool UserOf(const Slice& key, uint64_t* user) {
  if (key.size() != UIH_KEY_SIZE && key.size() != UIH_KEY_GROUP_PREFIX_SIZE) return false;
  *user = uih_load_be64(reinterpret_cast<const uint8_t*>(key.data()));
  return true;
}

void SpanUsers(Item* it, uint64_t first, uint64_t last) {
  it->has_users = true;
  it->first_user = first;
  it->last_user = last;
}

std::string Words(const uih_error& e) { return uih_error_message(&e); }

// One shard's scrub, with the store opened for it (or not: then files are
// read alone, without schemas to decode their stripes under).
class ShardScrub {
 public:
  ShardScrub(const std::string& dir, uint32_t shard, std::vector<Item>* items)
      : dir_(dir), shard_(shard), items_(items) {}
  ~ShardScrub() {
    for (auto& [k, b] : batches_) uih_batch_free(b);
    uih_stripe_decoder_free(dec_);
    if (mut_ && mut_->owns_db) uih_mutable_close(mut_);
    else if (mut_) uih::FreeMutable(mut_);  // before the database it borrows
    uih_store_close(s_);
  }

  void Run(bool descriptor_ok) {
    const std::string shard_dir = uih::ShardName(shard_), mutable_dir = uih::MutableName(shard_);
    Hint();
    Logs(shard_dir);
    Logs(mutable_dir);
    if (descriptor_ok) Open();
    if (sh_) LiveFiles(sh_->im->db, false);
    if (descriptor_ok) OpenMutable();
    Tables(shard_dir, false);
    Tables(mutable_dir, true);
    if (sh_) {
      Metadata();
      Generations();
    }
    if (mut_) MutableTier(mut_);
  }

 private:
  Item& Add(const std::string& path, const char* kind) {
    items_->emplace_back();
    Item& it = items_->back();
    it.path = path;
    it.kind = kind;
    it.shard = shard_;
    return it;
  }

  void Hint() {
    uint32_t g;
    uint64_t bytes;
    const uih::HintState state = uih::ReadHint(dir_, shard_, &g, &bytes);
    if (state == uih::HintState::kNone) return;  // none yet (or removed: the next load writes it)
    Item& it = Add(uih::PublishedName(shard_), "hint");
    it.bytes = bytes;
    if (state == uih::HintState::kDamaged)
      it.damage = "not a hint of shard " + std::to_string(shard_) +
                  " (\"uihstore published shard S generation G\"): damaged; it is only a hint, removing it is safe";
    else
      it.entries = 1;
  }

  void Logs(const std::string& sub) {
    std::error_code ec;
    if (!fs::is_directory(dir_ + "/" + sub, ec)) return;
    uint64_t bytes = 0, n = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ + "/" + sub, ec))
      if (e.path().extension() == ".log") bytes += e.file_size(ec), n++;
    Item& it = Add(sub, "write-ahead logs");
    it.bytes = bytes;
    it.entries = n;
    DBOptions dbo;
    uih::StrictRecovery(&dbo);
    std::string torn;
    uih_error err{};
    if (uih::CheckWriteAheadLogs(dir_ + "/" + sub, dbo, &torn, &err) != UIH_OK) it.damage = Words(err);
    if (!torn.empty()) it.note = "recovered at open: " + torn;
  }

  // The shard's database alone (its mutable tier is opened by itself,
  // below), as readers open it.
  void Open() {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = 1;
    o.role = UIH_STORE_ROLE_LOAD;
    o.one_shard = 1;
    o.shard = shard_;
    o.cache_bytes = 0;
    uih_error err{};
    Item& it = Add(uih::ShardName(shard_), "database");
    if (uih_store_open(dir_.c_str(), &o, &s_, &err) != UIH_OK) {
      it.damage = "does not open: " + Words(err);
      return;
    }
    sh_ = s_->shards[shard_].get();
    it.entries = sh_->gens.size();
    it.note = "current generation " + std::to_string(sh_->current) + ", live";
    for (auto& [g, gen] : sh_->gens) it.note += " " + std::to_string(g);
    if (!sh_->recovered.empty()) it.note += "; recovered at open: " + sh_->recovered;
  }

  void LiveFiles(DB* db, bool in_mutable) {
    std::vector<LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
    for (const LiveFileMetaData& f : files) {
      LiveFile& lf = (in_mutable ? live_mutable_ : live_shard_)[fs::path(f.name).filename().string()];
      lf.cf = f.column_family_name;
      uih::ParseGenerationCfName(f.column_family_name, &lf.generation);
      lf.smallest = f.smallestkey;
      lf.largest = f.largestkey;
    }
  }

  // Every table file of `sub`, each read whole.
  void Tables(const std::string& sub, bool in_mutable) {
    std::error_code ec;
    std::vector<fs::path> ssts;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ + "/" + sub, ec))
      if (e.path().extension() == ".sst") ssts.push_back(e.path());
    std::sort(ssts.begin(), ssts.end());
    const auto& live = in_mutable ? live_mutable_ : live_shard_;
    for (const fs::path& p : ssts) {
      const std::string name = p.filename().string();
      const uint64_t size = fs::file_size(p, ec);
      const bool uih_table = uih::TableMagicOf(p.string(), size) == UIH_TABLE_MAGIC;
      const auto found = live.find(name);
      const bool mutable_cf = in_mutable || (found != live.end() && found->second.cf == UIH_MUTABLE_CF);
      Item& it = Add(sub + "/" + name, uih_table ? "generation table" : mutable_cf ? "mutable table" : "metadata table");
      it.bytes = size;
      const LiveFile* lf = nullptr;
      if (in_mutable ? mut_ != nullptr : sh_ != nullptr) {  // the database opened: it says which files it uses
        if (found == live.end()) {
          it.counts = false;
          it.note = "not part of the database (a leftover a writable open deletes)";
        } else {
          lf = &found->second;
          it.generation = lf->generation;
          uint64_t a, b;
          if (UserOf(lf->smallest, &a) && UserOf(lf->largest, &b)) SpanUsers(&it, a, b);
        }
      }
      struct stat sb;
      const bool statted = uih_table && stat(p.c_str(), &sb) == 0;
      if (statted) {  // a layered generation shares its base's files: each read once
        const auto id = std::make_pair(static_cast<uint64_t>(sb.st_dev), static_cast<uint64_t>(sb.st_ino));
        const auto seen = seen_.find(id);
        // Another name of a file read under a live generation's name; a
        // leftover's name (read, but counting nowhere) does not stand in
        // for a live one.
        if (seen != seen_.end() && (*items_)[seen->second.item].counts && (*items_)[seen->second.item].generation) {
          const Item& first = (*items_)[seen->second.item];
          it.entries = first.entries;
          it.damage = first.damage;
          it.bytes = 0;
          it.linked = true;
          if (it.note.empty()) it.note = "the same file as " + first.path + " (linked into two generations): read once";
          if (!it.has_users && first.has_users) SpanUsers(&it, first.first_user, first.last_user);
          if (auto gen = LiveGeneration(lf); gen && first.damage.empty()) {
            Counted& c = counted_[gen->number()];
            c.stripes += first.entries;
            c.events += seen->second.events;
          }
          continue;
        }
        const size_t index = items_->size() - 1;
        UihTable(p.string(), lf, &it);
        seen_[id] = {index, file_events_};
      } else if (uih_table) {
        UihTable(p.string(), lf, &it);
      } else {
        BlockTable(p.string(), mutable_cf, &it);
      }
    }
  }

  std::shared_ptr<uih::Generation> LiveGeneration(const LiveFile* lf) const {
    if (!lf || !lf->generation) return nullptr;
    auto g = sh_->gens.find(lf->generation);
    return g == sh_->gens.end() ? nullptr : g->second;
  }

  // A UihTable file: every value's checksum (the iterator verifies each),
  // and, for a live generation's, every stripe decoded whole.
  void UihTable(const std::string& path, const LiveFile* lf, Item* it) {
    Options o;
    o.table_factory = std::make_shared<uih::UihTableFactory>();
    SstFileReader reader(o);
    Status st = reader.Open(path);
    if (!st.ok()) {
      it->damage = "does not open: " + uih::StatusWords(st);
      return;
    }
    file_events_ = 0;
    std::shared_ptr<uih::Generation> gen = LiveGeneration(lf);
    ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    ro.readahead_size = 4 << 20;
    std::unique_ptr<Iterator> i(reader.NewIterator(ro));
    std::string last;
    uint64_t first_user = 0, user = 0;
    for (i->SeekToFirst(); i->Valid(); i->Next()) {
      uih_key key;
      uih_error err{};
      if (uih_key_decode(reinterpret_cast<const uint8_t*>(i->key().data()), i->key().size(), &key, &err) != UIH_OK) {
        it->damage = "entry " + std::to_string(it->entries) + ": " + Words(err);
        return;
      }
      if (it->entries == 0) first_user = key.user_id;
      user = key.user_id;
      if (Stripe(key, i->value(), gen.get(), &err) != UIH_OK) {
        it->damage = "the stripe of user " + std::to_string(key.user_id) + " group " + std::to_string(key.group) +
                     " at " + std::to_string(key.ts) + ": " + Words(err);
        return;
      }
      last = i->key().ToString();
      it->entries++;
    }
    if (!i->status().ok()) {
      it->damage = (last.empty() ? std::string("its first stripe") : "the stripe after " + KeyWords(last)) +
                   " does not read: " + uih::StatusWords(i->status());
      return;
    }
    if (!it->has_users && it->entries) SpanUsers(it, first_user, user);
    if (gen) {
      Counted& c = counted_[gen->number()];
      c.stripes += it->entries;
      c.events += file_events_;
    }
  }

  static std::string KeyWords(const std::string& k) {
    uih_key key;
    if (uih_key_decode(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &key, nullptr) != UIH_OK)
      return "key " + Slice(k).ToString(true);
    return "user " + std::to_string(key.user_id) + " group " + std::to_string(key.group) + " at " +
           std::to_string(key.ts);
  }

  // One stripe: its header against its key; under a generation this store
  // opened, decoded whole (its own checksum verified) under its schema
  // version and the generation's dictionaries.
  int Stripe(const uih_key& key, const Slice& v, const uih::Generation* gen, uih_error* err) {
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    uih_stripe_info info{};
    int rc = uih_stripe_read_info(b, v.size(), &info, err);
    if (rc != UIH_OK) return rc;
    if (info.group != key.group || info.min_ts != key.ts)
      return uih_corruption(err, "the stripe holds group %u from %" PRId64 ", its key says group %u from %" PRId64,
                            info.group, info.min_ts, key.group, key.ts);
    file_events_ += info.count;
    if (!gen) return UIH_OK;
    uih_batch** batch = nullptr;
    rc = Batch(info.schema_version, info.group, info.count, &batch, err);
    if (rc != UIH_OK) return rc;
    if (!dec_ && (rc = uih_stripe_decoder_create(&dec_, err)) != UIH_OK) return rc;
    uih_stripe_decoder_set_context(dec_, gen->dicts());
    return uih_stripe_decode(dec_, b, v.size(), 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, *batch, err);
  }

  // A batch of every trait of `group` in schema version `version`, for at
  // least `count` events.
  int Batch(uint32_t version, uint16_t group, uint32_t count, uih_batch*** out, uih_error* err) {
    uih_batch*& b = batches_[{version, group}];
    if (!b) {
      const uih_schema* schema;
      int rc = uih::SchemaAt(s_, version, &schema, err);
      if (rc != UIH_OK) return rc;
      const uih_group* g = uih_schema_group_by_id(schema, group);
      if (!g) return uih_corruption(err, "group %u is not in schema version %u", group, version);
      rc = uih_batch_create(g, std::max<uint32_t>(count, 1), nullptr, 0, &b, err);
      if (rc != UIH_OK) return rc;
    }
    *out = &b;
    return b->capacity >= count ? UIH_OK : uih_batch_reserve(&b, count, err);
  }

  // A block-based table: every block's checksum, then its keys (the users
  // they span); a mutable tier's merged by its own operator.
  void BlockTable(const std::string& path, bool in_mutable, Item* it) {
    Options o;
    if (in_mutable) {
      uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
      o = Options(DBOptions(), uih::MutableCfOptions(mo));
    }
    // RocksDB parses a properties block before verifying it, and a damaged
    // one can trip an assert (check_files.cc): verified first, by itself.
    uih_error err{};
    if (uih::CheckTablePropertiesOf(path, it->bytes, &err) != UIH_OK) {
      it->damage = Words(err);
      return;
    }
    SstFileReader reader(o);
    Status st = reader.Open(path);
    if (st.ok()) st = reader.VerifyChecksum();
    if (!st.ok()) {
      it->damage = uih::StatusWords(st);
      return;
    }
    it->entries = reader.GetTableProperties()->num_entries;
    if (it->has_users || !in_mutable) return;
    ReadOptions ro;
    std::unique_ptr<Iterator> i(reader.NewIterator(ro));
    uint64_t a, b;
    i->SeekToFirst();
    if (!i->Valid() || !UserOf(i->key(), &a)) return;
    i->SeekToLast();
    if (i->Valid() && UserOf(i->key(), &b)) SpanUsers(it, a, b);
  }

  // Every metadata record, read through the database and parsed.
  void Metadata() {
    Item& it = Add(uih::ShardName(shard_), "metadata");
    uih::Database* im = sh_->im.get();
    std::unique_ptr<Iterator> i(im->db->NewIterator(ReadOptions(), im->meta));
    for (i->SeekToFirst(); i->Valid(); i->Next()) {
      uih_error err{};
      if (Record(im, i->key(), i->value(), &err) != UIH_OK) {
        it.damage = "record " + i->key().ToString() + ": " + Words(err);
        return;
      }
      it.entries++;
    }
    if (!i->status().ok()) it.damage = "after " + std::to_string(it.entries) + " records: " + uih::StatusWords(i->status());
  }

  static bool Under(const Slice& key, const char* prefix) { return key.starts_with(prefix); }

  int Record(uih::Database* im, const Slice& key, const Slice& v, uih_error* err) {
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    uint32_t n;
    if (Under(key, uih::kSchemaKeyPrefix)) {
      int rc = uih::ParseKeyU32(key, uih::kSchemaKeyPrefix, &n, err);
      uih_schema* schema = nullptr;
      if (rc == UIH_OK) rc = uih_schema_parse(v.data(), v.size(), key.ToString().c_str(), &schema, err);
      uih_schema_free(schema);
      return rc;
    }
    if (Under(key, uih::kGenerationKeyPrefix)) {
      uih_generation g;
      int rc = uih::ParseKeyU32(key, uih::kGenerationKeyPrefix, &n, err);
      if (rc == UIH_OK) rc = uih_generation_decode(b, v.size(), &g, err);
      if (rc == UIH_OK && g.generation != n)
        rc = uih_corruption(err, "the record is generation %u's", g.generation);
      return rc;
    }
    if (Under(key, uih::kDictsKeyPrefix)) {
      uih_stripe_context* ctx = nullptr;
      int rc = uih::ParseKeyU32(key, uih::kDictsKeyPrefix, &n, err);
      if (rc == UIH_OK) rc = uih_stripe_context_parse(b, v.size(), 0, &ctx, err);
      uih_stripe_context_free(ctx);
      return rc;
    }
    if (Under(key, uih::kErasedKeyPrefix)) {
      uih::Erasure e;
      uint64_t user;
      int rc = uih::ParseKeyU64(key, uih::kErasedKeyPrefix, &user, err);
      return rc == UIH_OK ? uih::ParseErasedValue(v, key, &e, err) : rc;
    }
    const std::string k = key.ToString();
    if (k == uih::kFormatKey || k == uih::kCurrentKey) return uih::ParseU32Value(v, k.c_str(), &n, err);
    if (k == uih::kStoreIdKey) {
      uint64_t id;
      return uih::ParseU64Value(v, k.c_str(), &id, err);
    }
    int64_t i64;
    if (k == uih::kWatermarkKey || k == uih::kChunkSpanKey)
      return uih::ParseI64Value(v, im->format, k.c_str(), &i64, err);
    return UIH_OK;  // a key of a newer build, or a user's own: not ours to judge
  }

  // Each live generation's stripes and events, as its files held them,
  // against its record.
  void Generations() {
    for (auto& [g, gen] : sh_->gens) {
      const uih_generation& r = gen->record();
      const Counted& files = counted_[g];
      bool whole = true;  // every file of it read without damage
      for (const Item& it : *items_)
        if (it.shard == shard_ && it.generation == g && !it.damage.empty()) whole = false;
      Item& it = Add(uih::ShardName(shard_) + "/" + uih::GenerationCfName(g), "generation");
      it.generation = g;
      it.entries = files.stripes;
      if (!whole) {
        it.note = "its damaged files are named above";
        continue;
      }
      const bool layered = gen->Layers().size() > 1;
      Counted merged;
      if (layered) {  // its files' entries replace and delete one another: counted as reads see them
        std::string damage;
        merged = CountMerged(*gen, &damage);
        if (!damage.empty()) {
          it.damage = damage;
          continue;
        }
        it.entries = merged.stripes;
      }
      const Counted& c = layered ? merged : files;
      if (c.stripes != r.stripes || c.events != r.events ||
          (layered && (c.bytes != r.bytes || c.histories != r.histories))) {
        // A layered generation's bytes and histories are counted too (a load may derive them).
        auto words = [&](uint64_t stripes, uint64_t events, uint64_t bytes, uint64_t histories) {
          std::string w = std::to_string(stripes) + " stripes of " + std::to_string(events) + " events";
          if (layered) w += " in " + std::to_string(bytes) + " bytes of " + std::to_string(histories) + " histories";
          return w;
        };
        it.damage = std::string("its ") + (layered ? "layers" : "files") + " hold " +
                    words(c.stripes, c.events, c.bytes, c.histories) + ", its record says " +
                    words(r.stripes, r.events, r.bytes, r.histories) + ": a table file is missing or foreign";
      }
    }
  }

  // The mutable tier (format 3: its own database) opened read-only by
  // itself, so that its damage and the shard database's are told apart;
  // an older shard's tier is its database's column family, read with it.
  void OpenMutable() {
    const std::string path = dir_ + "/" + uih::MutableName(shard_);
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      uih_error err{};
      if (sh_ && sh_->im->legacy_mutable &&
          uih::AdoptMutable(sh_->path, nullptr, sh_->im->db, sh_->im->legacy_mutable, sh_->im->meta, &mut_, &err) !=
              UIH_OK) {
        mut_ = nullptr;
        Add(uih::ShardName(shard_) + "/" UIH_MUTABLE_CF, "mutable tier").damage = "does not open: " + Words(err);
      }
      return;
    }
    uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
    mo.create_if_missing = 0;
    mo.read_only = 1;
    uih_error err{};
    if (uih::OpenStoreMutable(path, mo, &mut_, &err) != UIH_OK) {
      mut_ = nullptr;
      Add(uih::MutableName(shard_), "mutable tier").damage = "does not open: " + Words(err);
      return;
    }
    LiveFiles(mut_->db, true);
  }

  // The mutable tier read whole through its database: every list valid.
  void MutableTier(uih_mutable* m) {
    if (!m) return;
    Item& it = Add(uih::MutableName(shard_), "mutable tier");
    ReadOptions ro;
    ro.fill_cache = false;
    std::unique_ptr<Iterator> i(m->db->NewIterator(ro, m->events));
    uint64_t users = 0, prev = 0, first = 0, user = 0;
    for (i->SeekToFirst(); i->Valid(); i->Next()) {
      uih_events_info info{};
      uih_error err{};
      const bool got = UserOf(i->key(), &user);
      int rc = uih_events_read_info(reinterpret_cast<const uint8_t*>(i->value().data()), i->value().size(), &info, &err);
      if (rc == UIH_OK && info.quarantined) {
        char reason[256] = "";
        uih_slice in;
        uih_events_quarantined(reinterpret_cast<const uint8_t*>(i->value().data()), i->value().size(), 0, &in, reason,
                               sizeof reason, nullptr);
        rc = uih_corruption(&err, "quarantined (%u inputs kept): %s", info.count, reason);
      }
      if (rc != UIH_OK) {
        it.damage = "the list of " + (got ? KeyWords(i->key().ToString()) : "key " + i->key().ToString(true)) + ": " +
                    Words(err);
        return;
      }
      if (got && (it.entries == 0 || user != prev)) users++, prev = user;
      if (it.entries == 0) first = user;
      it.entries++;
    }
    if (!i->status().ok()) {
      it.damage = "after " + std::to_string(it.entries) + " lists: " + uih::StatusWords(i->status());
      return;
    }
    if (it.entries) SpanUsers(&it, first, user);
    it.note = std::to_string(users) + " users";
    int64_t wm;
    int has;
    uih_error err{};
    if (uih::ReadWatermark(m, &wm, &has, &err) != UIH_OK) it.damage = Words(err);
  }

  struct Counted {
    uint64_t stripes = 0, events = 0;
    uint64_t bytes = 0, histories = 0;  // counted for layered generations only
  };

  // A layered generation's stripes and events as a read sees them: its
  // column family read through the database, which merges the layers.
  Counted CountMerged(const uih::Generation& gen, std::string* damage) {
    Counted c;
    ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    ro.readahead_size = 4 << 20;
    std::unique_ptr<Iterator> i(gen.db()->NewIterator(ro, gen.cf()));
    std::string history;  // the (user, group) prefix of the stripes counted last
    for (i->SeekToFirst(); i->Valid(); i->Next()) {
      uih_stripe_info info{};
      uih_error err{};
      if (uih_stripe_read_info(reinterpret_cast<const uint8_t*>(i->value().data()), i->value().size(), &info, &err) !=
          UIH_OK) {
        *damage = "the stripe at " + KeyWords(i->key().ToString()) + ": " + Words(err);
        return c;
      }
      c.stripes++;
      c.events += info.count;
      c.bytes += i->value().size();
      if (i->key().size() < UIH_KEY_GROUP_PREFIX_SIZE || history.size() != UIH_KEY_GROUP_PREFIX_SIZE ||
          memcmp(history.data(), i->key().data(), UIH_KEY_GROUP_PREFIX_SIZE) != 0) {
        c.histories++;
        history.assign(i->key().data(), std::min<size_t>(i->key().size(), UIH_KEY_GROUP_PREFIX_SIZE));
      }
    }
    if (!i->status().ok()) *damage = "its layers do not read: " + uih::StatusWords(i->status());
    return c;
  }

  const std::string dir_;
  const uint32_t shard_;
  std::vector<Item>* items_;
  uih_store* s_ = nullptr;
  uih::Shard* sh_ = nullptr;
  uih_mutable* mut_ = nullptr;  // the shard's mutable tier, read-only
  std::map<std::string, LiveFile> live_shard_, live_mutable_;
  std::map<uint32_t, Counted> counted_;
  uint64_t file_events_ = 0;
  struct Seen {
    size_t item;      // in items_
    uint64_t events;  // the stripes' events
  };
  std::map<std::pair<uint64_t, uint64_t>, Seen> seen_;  // UihTable files read, by (device, inode)
  std::map<std::pair<uint32_t, uint16_t>, uih_batch*> batches_;
  uih_stripe_decoder* dec_ = nullptr;
};

// The descriptor: how many shards, or, damaged, the shard folders found.
Item Descriptor(const std::string& dir, uint32_t* shards) {
  Item it;
  it.path = uih::kDescriptorFile;
  it.kind = "descriptor";
  uint64_t id;
  uih_error err{};
  if (uih::ReadDescriptorFile(dir, shards, &id, &it.bytes, &err) == UIH_OK) {
    it.entries = 1;
    char note[64];
    snprintf(note, sizeof note, "store %016" PRIx64 ", %u shards", id, *shards);
    it.note = note;
    return it;
  }
  it.damage = Words(err);
  *shards = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    unsigned k;
    char tail;
    if (e.is_directory() && sscanf(n.c_str(), "shard-%4u%c", &k, &tail) == 1 && n.size() == 10)
      *shards = std::max(*shards, k + 1);
  }
  it.note = "shards found: " + std::to_string(*shards);
  return it;
}

int Verify(const char* dir_arg, uih_verify_fn fn, void* arg, uih_verify_totals* totals, uih_error* err) {
  if (dir_arg == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_verify: NULL argument");
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return uih::NotAStore(err, dir_arg, "it is not a directory");
  if (!fs::exists(dir + "/" + uih::kDescriptorFile, ec)) return uih::NotAStore(err, dir_arg, "no UIHSTORE descriptor in it");
  std::vector<Item> items;
  uint32_t shards = 0;
  items.push_back(Descriptor(dir, &shards));
  const bool descriptor_ok = items[0].damage.empty();
  for (uint32_t i = 0; i < shards; i++) ShardScrub(dir, i, &items).Run(descriptor_ok);

  uih_verify_totals t{};
  std::string first;
  for (const Item& it : items) {
    t.items++;
    t.bytes += it.bytes;
    if (!it.damage.empty() && it.counts && !it.linked) {  // a file linked into two generations is one file
      t.damaged++;
      if (first.empty()) first = it.path + ": " + it.damage;
    }
    if (it.kind == "generation table" && it.counts && !it.linked) t.stripes += it.entries;
    if (it.kind == "mutable tier") t.lists += it.entries;
    if (it.kind == "metadata") t.records += it.entries;
    if (!fn) continue;
    uih_verify_item v{};
    v.path = it.path.c_str();
    v.kind = it.kind.c_str();
    v.shard = it.shard;
    v.generation = it.generation;
    v.entries = it.entries;
    v.bytes = it.bytes;
    v.has_users = it.has_users;
    v.first_user = it.first_user;
    v.last_user = it.last_user;
    v.damage = it.damage.empty() ? nullptr : it.damage.c_str();
    v.counts = it.counts;
    v.note = it.note.empty() ? nullptr : it.note.c_str();
    fn(arg, &v);
  }
  if (totals) *totals = t;
  if (t.damaged == 0) return UIH_OK;
  return uih_corruption(err, "store %s: %" PRIu64 " of %" PRIu64 " checked are damaged; the first: %s", dir.c_str(),
                        t.damaged, t.items, first.c_str());
}

}  // namespace

extern "C" int uih_store_verify(const char* dir, uih_verify_fn fn, void* arg, uih_verify_totals* totals,
                                uih_error* err) {
  return uih::CallC(err, "uih_store_verify", [&] { return Verify(dir, fn, arg, totals, err); });
}
