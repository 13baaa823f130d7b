// uih_store_repair: accepting a named loss. Every open refuses a
// write-ahead log it cannot replay whole, a missing one, a log that lost
// acknowledged appends (the acknowledged mark), a damaged mark, or a shard
// whose database is older than its .published hint: nothing is lost
// silently, and nothing opens either. A repair is the operator's explicit
// "go on without it", shard by shard:
//   - the evidence first: the databases' logs, MANIFEST, CURRENT and mark
//     copied to DIR/lost/<time>-<folder>/;
//   - a mutable tier opened writable with its logs replayed past damage
//     (RocksDB skips a damaged record and the rest of its 32 KB block, and
//     says how many bytes in its LOG: that goes into the record; its merges
//     are a set union, so what survives needs nothing that was dropped),
//     its logs' tracking in the MANIFEST not enforced, then flushed, and
//     its mark written again;
//   - a shard's database the same, but replayed only up to the first
//     damage (its metadata's writes depend on each other), its hint
//     written again from what it now holds (a lost publish: its load is to
//     be run again);
//   - what was refused appended to DIR/REPAIRS (synced) before anything
//     changes, what was done after, each line also said to the caller.
// Damage a repair cannot accept (a table file, a MANIFEST, the descriptor)
// is left as it is, and said: restore that shard or load it again.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "follow.h"
#include "store_internal.h"
#include "uih_plugin/c_api.h"
#include "uih_plugin/logger.h"

namespace fs = std::filesystem;
using namespace rocksdb;

namespace {

// An open's refusal: its code and words ("" and UIH_OK when it opened).
struct Refusal {
  int rc = UIH_OK;
  std::string why;
};

// Whether a refusal is one a repair accepts: damage (not an I/O error or a
// lock held) in a write-ahead log that does not replay whole or is
// missing, one that lost acknowledged appends, the mark, or a hint ahead
// of its database.
bool Acceptable(const Refusal& r) {
  if (r.rc != UIH_ERR_CORRUPTION) return false;
  for (const char* words : {"write-ahead log", "Missing WAL", "were acknowledged", "UIH-ACKED", "was published"})
    if (r.why.find(words) != std::string::npos) return true;
  return false;
}

// Copies `from` into the folder `to` and syncs the copy.
bool CopySynced(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const fs::path dst = to / from.filename();
  if (!fs::copy_file(from, dst, fs::copy_options::overwrite_existing, ec)) return false;
  int fd = open(dst.c_str(), O_RDONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && fsync(fd) == 0;
  if (fd >= 0) close(fd);
  return ok;
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
    Refusal r;
    if (rc == UIH_OK && fs::is_directory(dir_ + "/" + mut)) {
      r = MutableRefusal(mut);
      if (r.rc != UIH_OK) rc = Salvage(mut, true, r, err);
    }
    // The shard's database (and the store id, the hint): as a reader opens it.
    if (rc == UIH_OK) {
      r = ShardRefusal(shard);
      if (r.rc != UIH_OK && r.why.find("was published") != std::string::npos)
        rc = Rehint(shard, r, err);  // the database lost a publish: the hint goes with it
      else if (r.rc != UIH_OK)
        rc = Salvage(name, false, r, err);
    }
    if (rc != UIH_OK) return rc;
    r = ShardRefusal(shard);
    if (r.rc == UIH_OK && fs::is_directory(dir_ + "/" + mut)) r = MutableRefusal(mut);
    if (r.rc != UIH_OK)
      return uih_error_set(err, r.rc, "store %s: shard %u still does not open after the repair: %s", dir_.c_str(),
                           shard, r.why.c_str());
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
    uint32_t g;
    if (uih::ReadHint(dir_, shard, &g, nullptr) != uih::HintState::kDamaged) return UIH_OK;
    std::error_code ec;
    const std::string name = uih::PublishedName(shard);
    int rc = Keep(name, {path}, err);
    if (rc == UIH_OK)
      rc = Record(name, "accepting: it is damaged (not a hint of shard " + std::to_string(shard) +
                            "); removing it (a hint only: the next load writes it again)",
                  err);
    if (rc != UIH_OK) return rc;
    fs::remove(path, ec);
    if (ec) return uih_error_set(err, UIH_ERR_IO, "store %s: removing %s: %s", dir_.c_str(), name.c_str(),
                                 ec.message().c_str());
    return Record(name, "done: removed", err);
  }

  // The refused files, copied to DIR/lost/<time>-<what>/ and synced (files
  // and folders) before anything changes.
  int Keep(const std::string& what, const std::vector<fs::path>& files, uih_error* err) {
    const fs::path to = fs::path(dir_) / "lost" / (stamp_ + "-" + what);
    std::error_code ec;
    fs::create_directories(to, ec);
    for (const fs::path& f : files)
      if (ec || !CopySynced(f, to))
        return uih_error_set(err, UIH_ERR_IO, "store %s: keeping %s in %s: %s", dir_.c_str(), f.filename().c_str(),
                             to.c_str(), ec ? ec.message().c_str() : strerror(errno));
    int rc = uih::SyncDirectory(to.string(), err);
    if (rc == UIH_OK) rc = uih::SyncDirectory(dir_ + "/lost", err);
    return rc == UIH_OK ? uih::SyncDirectory(dir_, err) : rc;
  }

  Refusal MutableRefusal(const std::string& mut) {
    uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
    mo.create_if_missing = 0;
    mo.read_only = 1;
    uih_mutable* m = nullptr;
    uih_error e{};
    Refusal r;
    r.rc = uih::OpenStoreMutable(dir_ + "/" + mut, mo, &m, &e);
    uih_mutable_close(m);
    if (r.rc != UIH_OK) r.why = uih_error_message(&e);
    return r;
  }

  Refusal ShardRefusal(uint32_t shard) {
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.read_only = 1;
    o.one_shard = 1;
    o.shard = shard;
    o.role = UIH_STORE_ROLE_LOAD;  // read-only: the shard's database alone
    uih_store* s = nullptr;
    uih_error e{};
    Refusal r;
    r.rc = uih_store_open(dir_.c_str(), &o, &s, &e);
    uih_store_close(s);
    if (r.rc != UIH_OK) r.why = uih_error_message(&e);
    return r;
  }

  // The database in `sub` opened writable on what its logs still hold,
  // flushed, its mark written again: the loss `r` accepted.
  int Salvage(const std::string& sub, bool is_mutable, const Refusal& r, uih_error* err) {
    if (!Acceptable(r))
      return uih_error_set(err, r.rc == UIH_OK ? UIH_ERR_CORRUPTION : r.rc,
                           "%s: not a loss a repair accepts (it replays write-ahead logs past damage: not damaged "
                           "table files, MANIFESTs, nor I/O errors): restore the folder from a copy, or load the "
                           "shard again; %s",
                           sub.c_str(), r.why.c_str());
    const std::string path = dir_ + "/" + sub;
    std::error_code ec;
    std::vector<fs::path> kept;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      if (e.path().extension() == ".log" || n.rfind("MANIFEST-", 0) == 0 || n == "CURRENT" || n == uih::kAckedFile)
        kept.push_back(e.path());
    }
    int rc = Keep(sub, kept, err);
    if (rc == UIH_OK)
      rc = Record(sub, "accepting: " + r.why + "; the refused files kept in lost/" + stamp_ + "-" + sub, err);
    if (rc != UIH_OK) return rc;
    DBOptions dbo;
    dbo.wal_recovery_mode =
        is_mutable ? WALRecoveryMode::kSkipAnyCorruptedRecords : WALRecoveryMode::kPointInTimeRecovery;
    dbo.track_and_verify_wals_in_manifest = false;
    uih::BoundPreallocation(&dbo);
    auto logger = std::make_shared<uih::LogFile>(path);
    dbo.info_log = logger;
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
    if (!s.ok()) return uih::OpenError(err, path, s, dbo, "opening it for the repair");
    const uint64_t holds = db->GetLatestSequenceNumber();
    s = uih::FlushOut(db, handles);
    rc = s.ok() ? UIH_OK : uih::StatusError(err, path, s, "flushing what the repair kept");
    if (rc == UIH_OK && is_mutable) rc = uih::AckedMark::Reset(path, db, err);
    for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db->Close().PermitUncheckedError();
    delete db;
    if (rc == UIH_OK) rc = DropOlderLogs(path, err);
    if (rc != UIH_OK) return rc;
    const std::string dropped = logger->Report();  // RocksDB's words for what its replay dropped
    return Record(sub,
                  "done: reopened on what its logs still held, through sequence number " + std::to_string(holds) +
                      (dropped.empty() ? "" : " (RocksDB logged: " + dropped + ")"),
                  err);
  }

  // After the repair's flush every log but the newest (the one its open
  // began) holds nothing needed; RocksDB would delete them at its next
  // writable open, but every open reads each log whole first, so the
  // refused ones (kept in lost/) go now.
  int DropOlderLogs(const std::string& path, uih_error* err) {
    std::vector<fs::path> logs;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".log") logs.push_back(e.path());
    std::sort(logs.begin(), logs.end());
    for (size_t i = 0; i + 1 < logs.size(); i++)
      if (!fs::remove(logs[i], ec) && ec)
        return uih_error_set(err, UIH_ERR_IO, "store %s: removing the log %s the repair replayed: %s", dir_.c_str(),
                             logs[i].c_str(), ec.message().c_str());
    return uih::SyncDirectory(path, err);
  }

  // The database lost a publish its hint names (a damaged MANIFEST or
  // log): the hint is written again from the generation the database
  // holds; the lost generation's load is to be run again.
  int Rehint(uint32_t shard, const Refusal& r, uih_error* err) {
    const std::string name = uih::PublishedName(shard), path = dir_ + "/" + name;
    int rc = Keep(name, {path}, err);
    if (rc == UIH_OK)
      rc = Record(name, "accepting: " + r.why + "; writing it again from the database (run that load again)", err);
    if (rc != UIH_OK) return rc;
    std::error_code ec;
    fs::remove(path, ec);  // a writable open writes it again from the database
    uih_store_opts o = UIH_STORE_OPTS_DEFAULT;
    o.one_shard = 1;
    o.shard = shard;
    o.role = UIH_STORE_ROLE_LOAD;
    uih_store* s = nullptr;
    rc = uih_store_open(dir_.c_str(), &o, &s, err);
    uih_store_close(s);
    return rc == UIH_OK ? Record(name, "done: written again", err) : rc;
  }

  // One line in DIR/REPAIRS, synced, and said.
  int Record(const std::string& what, const std::string& text, uih_error* err) {
    const std::string line = stamp_ + " " + what + ": " + text;
    repaired_ = true;
    Say(line);
    const std::string path = dir_ + "/REPAIRS";
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    const std::string out = line + "\n";
    const bool ok = fd >= 0 && write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) &&
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
  uint32_t shards;
  uint64_t id;
  int rc = uih::ReadDescriptorFile(dir, &shards, &id, nullptr, err);
  if (rc == UIH_ERR_CORRUPTION) return UIH_PREFIXED(rc, err, "store %s (the descriptor is not repairable: restore it): ",
                                                    dir.c_str());
  if (rc != UIH_OK) return rc;
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
