// pins.h: generations pinned by read-only stores, as byte-range
// locks on the store's descriptor file.
#include "pins.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace uih {

namespace {

constexpr off_t kGate = 0;

off_t PinByte(uint32_t shard, uint32_t generation) {
  return static_cast<off_t>(1 + (uint64_t{shard} << 32) + generation);
}

struct flock Range(short type, off_t at) {
  struct flock l;
  memset(&l, 0, sizeof l);
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  return l;
}

}  // namespace

Pins::~Pins() {
  if (fd_ >= 0) close(fd_);  // and with it every lock this store held
}

int Pins::Open(const std::string& descriptor, bool writer, uih_error* err) {
  path_ = descriptor;
  fd_ = open(descriptor.c_str(), (writer ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd_ < 0)
    return uih_error_set(err, UIH_ERR_IO, "store: %s: opening it to pin generations: %s", descriptor.c_str(),
                         strerror(errno));
  return UIH_OK;
}

int Pins::Enter(bool exclusive, uih_error* err) {
  std::lock_guard<std::mutex> lock(mu_);  // the other threads of this store wait here
  if (gate_ > 0 && (exclusive_ || !exclusive)) {  // held already, as strongly as wanted
    gate_++;
    return UIH_OK;
  }
  struct flock l = Range(exclusive ? F_WRLCK : F_RDLCK, kGate);
  int r;
  do r = fcntl(fd_, F_OFD_SETLKW, &l);
  while (r != 0 && errno == EINTR);
  if (r != 0)
    return uih_error_set(err, UIH_ERR_IO, "store: %s: locking the readers' gate: %s", path_.c_str(), strerror(errno));
  gate_++;
  exclusive_ = exclusive_ || exclusive;
  return UIH_OK;
}

void Pins::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  if (gate_ == 0 || --gate_ > 0) return;
  exclusive_ = false;
  struct flock l = Range(F_UNLCK, kGate);
  (void)fcntl(fd_, F_OFD_SETLK, &l);
}

int Pins::Pin(uint32_t shard, uint32_t generation, uih_error* err) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t& n = held_[(uint64_t{shard} << 32) | generation];
  if (n++ > 0) return UIH_OK;
  struct flock l = Range(F_RDLCK, PinByte(shard, generation));
  int r;
  do r = fcntl(fd_, F_OFD_SETLKW, &l);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int e = errno;
    held_.erase((uint64_t{shard} << 32) | generation);
    return uih_error_set(err, UIH_ERR_IO, "store: %s: pinning shard %u's generation %u: %s", path_.c_str(), shard,
                         generation, strerror(e));
  }
  return UIH_OK;
}

void Pins::Unpin(uint32_t shard, uint32_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find((uint64_t{shard} << 32) | generation);
  if (it == held_.end() || --it->second > 0) return;
  held_.erase(it);
  struct flock l = Range(F_UNLCK, PinByte(shard, generation));
  (void)fcntl(fd_, F_OFD_SETLK, &l);
}

int Pins::Pinned(uint32_t shard, uint32_t generation, bool* pinned, uih_error* err) const {
  struct flock l = Range(F_WRLCK, PinByte(shard, generation));
  if (fcntl(fd_, F_OFD_GETLK, &l) != 0)
    return uih_error_set(err, UIH_ERR_IO, "store: %s: asking whether shard %u's generation %u is pinned: %s",
                         path_.c_str(), shard, generation, strerror(errno));
  *pinned = l.l_type != F_UNLCK;
  return UIH_OK;
}

}  // namespace uih
