// uih_store_repair: accepting a named loss. Every open refuses a
// write-ahead log it cannot replay whole, a missing one, a log that lost
// acknowledged appends (the acknowledged mark), a damaged mark, or a shard
// whose database is older than its .published hint: nothing is lost
// silently, and nothing opens either. A repair is the operator's explicit
// "go on without it", shard by shard:
//   - the evidence first: the databases' logs, MANIFEST, CURRENT and mark
//     copied to DIR/lost/<time>-<folder>/;
//   - a mutable tier opened writable with every whole record of its logs
//     replayed and damaged ones skipped (its merges are a set union: what
//     survives is exactly what was not damaged), its logs' tracking in the
//     MANIFEST not enforced, then flushed, and its mark written again;
//   - a shard's database the same, but replayed only up to the first
//     damage (its metadata's writes depend on each other), its hint
//     written again from what it now holds (a lost publish: its load is to
//     be run again);
//   - what was refused and what was done appended to DIR/REPAIRS (synced),
//     and said to the caller.
// Damage a repair cannot accept (a table file, a MANIFEST, the descriptor)
// is left as it is, and said: restore that shard or load it again.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "follow.h"
#include "store_internal.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"

namespace fs = std::filesystem;
using namespace rocksdb;

namespace {

// Whether an open's refusal is one a repair accepts: a write-ahead log
// that does not replay whole, or is missing, lost acknowledged appends,
// the mark, or a hint ahead of its database.
bool Acceptable(const std::string& why) {
  for (const char* words : {"write-ahead log", "Missing WAL", "were acknowledged", "UIH-ACKED", "was published"})
    if (why.find(words) != std::string::npos) return true;
  return false;
}

std::string Now() {
  char b[32];
  const time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(b, sizeof b, "%Y%m%dT%H%M%SZ", &tm);
  return b;
}

class Repair {
 public:
  Repair(const std::string& dir, uih_repair_fn fn, void* arg) : dir_(dir), fn_(fn), arg_(arg), stamp_(Now()) {}

  int Shard(uint32_t shard, uih_error* err) {
    const std::string mut = uih::MutableName(shard), name = uih::ShardName(shard);
    int rc = HintReadable(shard, err);
    // The mutable tier, by itself.
    std::string why;
    if (rc == UIH_OK && fs::is_directory(dir_ + "/" + mut)) {
      why = MutableRefusal(mut);
      if (!why.empty()) rc = Salvage(mut, true, why, err);
    }
    // The shard's database (and the store id, the hint): as a reader opens it.
    if (rc == UIH_OK) {
      why = ShardRefusal(shard);
      if (!why.empty()) rc = Salvage(name, false, why, err);
      if (rc == UIH_OK && !why.empty() && why.find("was published") != std::string::npos) rc = Rehint(shard, err);
    }
    if (rc != UIH_OK) return rc;
    why = ShardRefusal(shard);
    if (!why.empty())
      return uih_corruption(err, "store %s: shard %u still does not open after the repair: %s", dir_.c_str(), shard,
                            why.c_str());
    if (!repaired_) Say("shard " + std::to_string(shard) + ": opens whole, nothing to repair");
    repaired_ = false;
    return UIH_OK;
  }

 private:
  void Say(const std::string& line) {
    if (fn_) fn_(arg_, line.c_str());
  }

  // A damaged hint: removed (a hint only; the next writable open or load
  // writes it again).
  int HintReadable(uint32_t shard, uih_error* err) {
    const std::string path = dir_ + "/" + uih::PublishedName(shard);
    std::error_code ec;
    if (!fs::exists(path, ec)) return UIH_OK;
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint32_t g;
    if (uih::ParsePublished(text, shard, &g)) return UIH_OK;
    fs::remove(path, ec);
    if (ec) return uih_error_set(err, UIH_ERR_IO, "store %s: removing %s: %s", dir_.c_str(), path.c_str(),
                                 ec.message().c_str());
    return Record(uih::PublishedName(shard), "damaged (not a hint of shard " + std::to_string(shard) + ")",
                  "removed (a hint only: the next load writes it again)", err);
  }

  std::string MutableRefusal(const std::string& mut) {
    uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
    mo.create_if_missing = 0;
    mo.read_only = 1;
    uih_mutable* m = nullptr;
    uih_error e{};
    const int rc = uih::OpenStoreMutable(dir_ + "/" + mut, mo, &m, &e);
    uih_mutable_close(m);
    return rc == UIH_OK ? "" : uih_error_message(&e);
  }

  std::string ShardRefusal(uint32_t shard) {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = 1;
    o.one_shard = 1;
    o.shard = shard;
    o.cache_bytes = 0;
    uih_store* s = nullptr;
    uih_error e{};
    const int rc = uih_store_open(dir_.c_str(), &o, &s, &e);
    uih_store_close(s);
    return rc == UIH_OK ? "" : uih_error_message(&e);
  }

  // The database in `sub` opened writable on what its logs still hold,
  // flushed, its mark written again: the loss `why` accepted.
  int Salvage(const std::string& sub, bool is_mutable, const std::string& why, uih_error* err) {
    if (!Acceptable(why))
      return uih_corruption(err,
                            "store %s: %s: %s; not a loss a repair accepts (it replays write-ahead logs, not damaged "
                            "table files or MANIFESTs): restore the folder from a copy, or load the shard again",
                            dir_.c_str(), sub.c_str(), why.c_str());
    const std::string path = dir_ + "/" + sub, evidence = dir_ + "/lost/" + stamp_ + "-" + sub;
    std::error_code ec;
    fs::create_directories(evidence, ec);
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      if (e.path().extension() == ".log" || n.rfind("MANIFEST-", 0) == 0 || n == "CURRENT" || n == uih::kAckedFile)
        fs::copy_file(e.path(), evidence + "/" + n, fs::copy_options::overwrite_existing, ec);
      if (ec) return uih_error_set(err, UIH_ERR_IO, "store %s: keeping %s in %s: %s", dir_.c_str(), n.c_str(),
                                   evidence.c_str(), ec.message().c_str());
    }
    DBOptions dbo;
    dbo.wal_recovery_mode =
        is_mutable ? WALRecoveryMode::kSkipAnyCorruptedRecords : WALRecoveryMode::kPointInTimeRecovery;
    dbo.track_and_verify_wals_in_manifest = false;
    dbo.info_log = std::make_shared<uih::LogFile>(path);
    std::vector<std::string> names;
    Status s = DB::ListColumnFamilies(dbo, path, &names);
    if (!s.ok()) return uih::StatusError(err, path, s, "listing its column families for the repair");
    std::vector<ColumnFamilyDescriptor> cfs;
    uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
    for (const std::string& n : names)
      cfs.emplace_back(n, uih::IsGenerationCf(n) ? uih::GenerationCfOptions()
                          : n == UIH_MUTABLE_CF  ? uih::MutableCfOptions(mo)
                                                 : ColumnFamilyOptions());
    std::vector<ColumnFamilyHandle*> handles;
    DB* db = nullptr;
    s = DB::Open(dbo, path, cfs, &handles, &db);
    if (!s.ok()) return uih::StatusError(err, path, s, "opening it for the repair%s", uih::Logged(dbo).c_str());
    const uint64_t holds = db->GetLatestSequenceNumber();
    s = uih::FlushOut(db, handles);
    int rc = s.ok() ? UIH_OK : uih::StatusError(err, path, s, "flushing what the repair kept");
    if (rc == UIH_OK && is_mutable) rc = uih::AckedMark::Reset(path, db, err);
    for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db->Close().PermitUncheckedError();
    delete db;
    if (rc != UIH_OK) return rc;
    char done[160];
    snprintf(done, sizeof done, "accepted: reopened on what its logs still hold (through sequence number %" PRIu64
             "); the refused files kept in lost/%s-%s",
             holds, stamp_.c_str(), sub.c_str());
    return Record(sub, why, done, err);
  }

  // The hint names the generation the shard now holds as current.
  int Rehint(uint32_t shard, uih_error* err) {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.one_shard = 1;
    o.shard = shard;
    o.role = UIH_STORE_ROLE_LOAD;
    const std::string path = dir_ + "/" + uih::PublishedName(shard);
    std::error_code ec;
    fs::remove(path, ec);  // a writable open writes it again from the database
    uih_store* s = nullptr;
    int rc = uih_store_open(dir_.c_str(), &o, &s, err);
    uih_store_close(s);
    if (rc != UIH_OK) return rc;
    return Record(uih::PublishedName(shard), "named a publish the database lost",
                  "written again from the database's current generation: run that load again", err);
  }

  // One line in DIR/REPAIRS, synced, and said.
  int Record(const std::string& what, const std::string& why, const std::string& done, uih_error* err) {
    const std::string line = stamp_ + " " + what + ": " + done + ". It was refused: " + why;
    repaired_ = true;
    Say(line);
    const std::string path = dir_ + "/REPAIRS";
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    const std::string text = line + "\n";
    const bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                    fsync(fd) == 0;
    const int e = errno;
    if (fd >= 0) close(fd);
    if (!ok) return uih_error_set(err, UIH_ERR_IO, "store %s: recording the repair in %s: %s", dir_.c_str(),
                                  path.c_str(), strerror(e));
    return uih::SyncDirectory(dir_, err);
  }

  const std::string dir_;
  uih_repair_fn fn_;
  void* arg_;
  const std::string stamp_;
  bool repaired_ = false;
};

int RepairStore(const char* dir_arg, int one_shard, uint32_t shard, uih_repair_fn fn, void* arg, uih_error* err) {
  if (dir_arg == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_repair: NULL argument");
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // The descriptor is not a loss to accept: without it, which shards and
  // which store is not known.
  std::ifstream in(dir + "/" + uih::kDescriptorFile, std::ios::binary);
  if (!in) return uih::NotAStore(err, dir_arg, "no UIHSTORE descriptor in it");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t shards;
  uint64_t id;
  int rc = uih_store_descriptor_parse(text.data(), text.size(), &shards, &id, err);
  if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: %s (not repairable: restore it): ", dir.c_str(),
                                        uih::kDescriptorFile);
  if (one_shard && shard >= shards)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_repair: %s: shard %u, the store has %u", dir.c_str(), shard,
                         shards);
  Repair r(dir, fn, arg);
  for (uint32_t i = 0; i < shards; i++) {
    if (one_shard && i != shard) continue;
    rc = r.Shard(i, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

}  // namespace

extern "C" int uih_store_repair(const char* dir, int one_shard, uint32_t shard, uih_repair_fn fn, void* arg,
                                uih_error* err) {
  return uih::CallC(err, "uih_store_repair", [&] { return RepairStore(dir, one_shard, shard, fn, arg, err); });
}
