// What the benchmarks measure of files and the process's writes: shared by
// materialize_bench and fatrow_bench.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>

namespace bench {

// --cold: every file under `dir` out of the page cache (written back
// first), so that the next pass reads from the device.
inline void Evict(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    int fd = open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    (void)fdatasync(fd);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

// Bytes of the regular files under `dir`, as they are now, each file once
// by its inode: a file renamed while the walk runs (a load's files moving
// out of tmp/ as it publishes) is not counted twice.
// `allocated`: the disk the files take (their blocks, as du counts them:
// a punched hole takes none, a preallocated tail does) instead of their sizes.
inline uint64_t BytesUnder(const std::string& dir, bool allocated = false) {
  std::unordered_set<uint64_t> seen;
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && seen.insert(st.st_ino).second)
      n += allocated ? static_cast<uint64_t>(st.st_blocks) * 512 : static_cast<uint64_t>(st.st_size);
  }
  return n;
}
inline uint64_t DiskUnder(const std::string& dir) { return BytesUnder(dir, true); }

// Bytes this process (every thread of it) has handed to write(2) and
// friends so far: /proc/self/io's wchar. Differences of it are what a
// phase wrote, background threads (flushes, compactions) included.
inline uint64_t BytesWritten() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t v = 0;
  while (io >> key >> v)
    if (key == "wchar:") return v;
  return 0;
}

}  // namespace bench
