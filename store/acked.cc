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

int AckedMark::Read(const std::string& dir, bool writable, uih_error* err) {
  dir_ = dir;
  boot_ = BootId();
  const std::string path = dir + "/" + kAckedFile;
  int fd = open(path.c_str(), (writable ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT && !writable) return UIH_OK;  // a store made before the mark
  if (fd < 0)
    return uih_error_set(err, UIH_ERR_IO, "mutable store %s: cannot open %s: %s", dir.c_str(), kAckedFile,
                         strerror(errno));
  uint8_t b[kSize + 1];
  ssize_t n = 0;
  bool ok = false;
  // A reader's pread may meet the owner's pwrite half done: it reads again.
  for (int attempt = 0; attempt < (writable ? 1 : 5) && !ok; attempt++) {
    n = pread(fd, b, sizeof b, 0);
    ok = n == static_cast<ssize_t>(kSize) && memcmp(b, kMagic, 8) == 0 && uih_load_be64(b + 48) == XXH3_64bits(b, 48);
  }
  if (!ok && !(n == 0 && writable)) {  // empty: created by an open that stopped before writing it
    close(fd);
    return uih_corruption(err,
                          "mutable store %s: %s is damaged (%zd bytes, expected %zu: \"UIHACK01\", sequence numbers, "
                          "a boot id, a check): it says how much the write-ahead log must hold; `uih repair` writes "
                          "it again",
                          dir.c_str(), kAckedFile, n, kSize);
  }
  if (ok) {
    acked_ = uih_load_be64(b + 8);
    synced_ = uih_load_be64(b + 16);
    std::array<uint8_t, 16> boot;
    memcpy(boot.data(), b + 24, 16);
    same_boot_ = boot == boot_ && boot != std::array<uint8_t, 16>{};
  }
  written_.store(acked_, std::memory_order_release);
  written_synced_ = synced_;
  if (writable)
    fd_ = fd;
  else
    close(fd);
  return UIH_OK;
}

int AckedMark::Check(rocksdb::DB* db, std::string* recovered, uih_error* err) {
  const uint64_t holds = db->GetLatestSequenceNumber();
  if (holds < synced_ || (holds < acked_ && same_boot_))
    return uih_corruption(err,
                          "mutable store %s: writes through sequence number %" PRIu64 " were acknowledged (%" PRIu64
                          " of them synced), but the database holds only through %" PRIu64
                          ": its write-ahead log lost acknowledged appends (%s); `uih repair` accepts the loss and "
                          "records it",
                          dir_.c_str(), acked_, synced_, holds,
                          holds < synced_ ? "synced ones: a log damaged, cut or deleted"
                                          : "in this boot of the machine, so not a power loss: a log deleted, cut or "
                                            "zeroed after its process stopped");
  if (holds < acked_) {  // the machine restarted: unsynced appends are not kept across that (uih/mutable.h)
    char said[320];
    snprintf(said, sizeof said,
             "%sthe machine restarted: %" PRIu64 " unsynced acknowledged writes (sequence numbers %" PRIu64 "..%" PRIu64
             ") did not reach the disk (unsynced appends survive the process, not the machine)",
             recovered->empty() ? "" : "; ", acked_ - holds, holds + 1, acked_);
    *recovered += said;
  }
  Advance(holds, holds >= synced_);
  return UIH_OK;
}

void AckedMark::Advance(uint64_t seq, bool synced) {
  if (fd_ < 0 || (seq <= written_.load(std::memory_order_acquire) && !synced)) return;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t acked = std::max(seq, written_.load(std::memory_order_relaxed));
  uint64_t sync_seq = synced ? std::max(seq, written_synced_) : written_synced_;
  if (acked == written_.load(std::memory_order_relaxed) && sync_seq == written_synced_) return;
  uint8_t b[kSize];
  Encode(acked, sync_seq, boot_, b);
  // In place, not synced: the mark may lag behind a power loss (a weaker
  // check, never a false one); 56 bytes at offset 0 are written whole.
  if (pwrite(fd_, b, kSize, 0) != static_cast<ssize_t>(kSize)) return;
  written_.store(acked, std::memory_order_release);
  written_synced_ = sync_seq;
}

int AckedMark::Reset(const std::string& dir, rocksdb::DB* db, uih_error* err) {
  uint8_t b[kSize];
  const uint64_t holds = db->GetLatestSequenceNumber();
  Encode(holds, holds, BootId(), b);
  return WriteFileDurably(dir, kAckedFile, std::string(reinterpret_cast<char*>(b), kSize), err);
}

AckedMark::~AckedMark() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace uih
