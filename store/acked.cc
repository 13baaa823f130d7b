// The acknowledged mark of a mutable store (format.h: UIH-ACKED): what a
// write-ahead log that vanished whole would otherwise take with it
// silently. RocksDB tracks closed logs in the MANIFEST, not the one a
// killed process was writing; deleted or zeroed after the process died,
// that log reads as the log of a process that stopped before those
// appends. The mark, a file beside the database, holds the sequence
// number of the last write the store acknowledged, of the last one synced,
// and the machine's boot id; every open checks that the database holds at
// least that much: all of it, or, after the machine restarted, what was
// synced (unsynced appends survive the process, not the machine: that loss
// is said, as a torn log tail is).
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "store_internal.h"
#include "mem.h"

namespace uih {

namespace {

constexpr char kMagic[8] = {'U', 'I', 'H', 'A', 'C', 'K', '0', '1'};
// magic, acknowledged (u64), synced (u64), boot id (16 bytes), check (XXH3
// 64 of the 48 bytes before)
constexpr size_t kSize = 56;

// This boot of the machine (the kernel's boot_id, its 32 hex digits as 16
// bytes; zeros when unknown).
std::array<uint8_t, 16> BootId() {
  std::array<uint8_t, 16> id{};
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (!f) return id;
  char text[64] = "";
  const bool got = fgets(text, sizeof text, f) != nullptr;
  fclose(f);
  size_t n = 0;
  for (const char* p = text; got && *p && n < 32; p++) {
    const int v = isdigit(static_cast<unsigned char>(*p)) ? *p - '0'
                  : (*p >= 'a' && *p <= 'f')              ? *p - 'a' + 10
                                                          : -1;
    if (v < 0) continue;  // the dashes
    id[n / 2] = static_cast<uint8_t>(id[n / 2] << 4 | v);
    n++;
  }
  if (n != 32) id.fill(0);
  return id;
}

void Encode(uint64_t acked, uint64_t synced, const std::array<uint8_t, 16>& boot, uint8_t out[kSize]) {
  memcpy(out, kMagic, 8);
  uih_store_be64(out + 8, acked);
  uih_store_be64(out + 16, synced);
  memcpy(out + 24, boot.data(), 16);
  uih_store_be64(out + 40, 0);
  uih_store_be64(out + 48, XXH3_64bits(out, 48));
}

}  // namespace

int AckedMark::Read(const std::string& dir, uih_error* err) {
  dir_ = dir;
  boot_ = BootId();
  present_ = false;
  const std::string path = dir + "/" + kAckedFile;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return UIH_OK;  // a store made before the mark (a writable open writes it)
  if (fd < 0)
    return uih_error_set(err, UIH_ERR_IO, "mutable store %s: cannot open %s: %s", dir.c_str(), kAckedFile,
                         strerror(errno));
  uint8_t b[kSize + 1];
  ssize_t n = 0;
  const char* wrong = nullptr;
  // A reader's pread may meet the owner's pwrite half done: it reads again.
  for (int attempt = 0; attempt < 5; attempt++) {
    n = pread(fd, b, sizeof b, 0);
    wrong = n < 0                                         ? "it does not read"
            : n != static_cast<ssize_t>(kSize)            ? "its size is wrong"
            : memcmp(b, kMagic, 8) != 0                   ? "it does not begin with \"UIHACK01\""
            : uih_load_be64(b + 48) != XXH3_64bits(b, 48) ? "its check does not match its bytes"
                                                          : nullptr;
    if (!wrong) break;
  }
  const int e = errno;
  close(fd);
  if (wrong)
    return uih_corruption(err,
                          "mutable store %s: %s is damaged: %s (%zd bytes%s%s; expected %zu: \"UIHACK01\", the last "
                          "acknowledged and synced sequence numbers, a boot id, a check); it says how much the "
                          "write-ahead log must hold, and `uih repair` writes it again",
                          dir.c_str(), kAckedFile, wrong, n, n < 0 ? ": " : "", n < 0 ? strerror(e) : "", kSize);
  present_ = true;
  acked_ = uih_load_be64(b + 8);
  synced_ = uih_load_be64(b + 16);
  std::array<uint8_t, 16> boot;
  memcpy(boot.data(), b + 24, 16);
  same_boot_ = boot == boot_ && boot != std::array<uint8_t, 16>{};
  return UIH_OK;
}

int AckedMark::Check(rocksdb::DB* db, bool writable, std::string* recovered, bool* lost, uih_error* err) {
  *lost = false;
  const uint64_t holds = db->GetLatestSequenceNumber();
  if (present_ && (holds < synced_ || (holds < acked_ && same_boot_))) {
    *lost = true;
    return uih_corruption(err,
                          "mutable store %s: writes through sequence number %" PRIu64 " were acknowledged (through %" PRIu64
                          " synced), but the database holds only through %" PRIu64
                          ": its write-ahead log lost acknowledged appends (%s); `uih repair` accepts the loss and "
                          "records it",
                          dir_.c_str(), acked_, synced_, holds,
                          holds < synced_ ? "synced ones: a log damaged, cut or deleted"
                                          : "in this boot of the machine, so not a power loss: a log deleted, cut or "
                                            "zeroed after its process stopped");
  }
  if (present_ && holds < acked_) {  // the machine restarted: unsynced appends are not kept across that
    char said[320];
    snprintf(said, sizeof said,
             "%sthe machine restarted: %" PRIu64 " unsynced acknowledged writes (sequence numbers %" PRIu64 "..%" PRIu64
             ") did not reach the disk (unsynced appends survive the process, not the machine)",
             recovered->empty() ? "" : "; ", acked_ - holds, holds + 1, acked_);
    *recovered += said;
  }
  if (!writable) return UIH_OK;
  // The owner starts from what the database holds, in this boot: written
  // whole and durably (a mark is never found empty), then kept open to be
  // advanced in place.
  int rc = Rewrite(dir_, holds, boot_, err);
  if (rc != UIH_OK) return rc;
  const std::string path = dir_ + "/" + kAckedFile;
  fd_ = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0)
    return uih_error_set(err, UIH_ERR_IO, "mutable store %s: cannot open %s: %s", dir_.c_str(), kAckedFile,
                         strerror(errno));
  acked_w_.store(holds, std::memory_order_release);
  synced_w_.store(holds, std::memory_order_release);
  return UIH_OK;
}

// Raises `a` to `v`; true when it moved.
static bool RaiseTo(std::atomic<uint64_t>* a, uint64_t v) {
  uint64_t cur = a->load(std::memory_order_relaxed);
  while (v > cur)
    if (a->compare_exchange_weak(cur, v, std::memory_order_acq_rel)) return true;
  return false;
}

void AckedMark::Advance(uint64_t acked, uint64_t synced) {
  if (fd_ < 0) return;
  const bool moved = RaiseTo(&acked_w_, acked) | RaiseTo(&synced_w_, synced);
  if (!moved) return;
  uint8_t b[kSize];
  Encode(acked_w_.load(std::memory_order_acquire), synced_w_.load(std::memory_order_acquire), boot_, b);
  // In place, not synced, without a lock: two writers racing may leave the
  // older of their values (the mark lags: a weaker check, never a false
  // one); a 56-byte write at offset 0 lands whole.
  (void)!pwrite(fd_, b, kSize, 0);
}

int AckedMark::Rewrite(const std::string& dir, uint64_t holds, const std::array<uint8_t, 16>& boot, uih_error* err) {
  uint8_t b[kSize];
  Encode(holds, holds, boot, b);
  return WriteFileDurably(dir, kAckedFile, std::string(reinterpret_cast<char*>(b), kSize), err);
}

int AckedMark::Reset(const std::string& dir, rocksdb::DB* db, uih_error* err) {
  return Rewrite(dir, db->GetLatestSequenceNumber(), BootId(), err);
}

AckedMark::~AckedMark() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace uih
