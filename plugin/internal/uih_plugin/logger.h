// RocksDB's info LOG for the databases uihstore opens.
//
// RocksDB's own file logger writes through a WritableFileWriter, which
// after one failed write asserts on the next (RocksDB 7.8.3; Debian builds
// it with assertions on): on a full disk the first log line that cannot be
// written takes the process down with the line after it. LogFile writes
// with stdio and drops what it cannot write, so a full disk fails the
// operation that needed the space, with its message, and nothing else.
#pragma once

#include <sys/time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>

#include "rocksdb/env.h"

namespace uih {

// A logger that writes nothing: a read-only open creates no LOG file.
class SilentLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// DIR/LOG, appended to; at open, a LOG past 64 MiB becomes LOG.old (the
// one before it is dropped). Lines RocksDB's way: local time, thread, text.
class LogFile : public rocksdb::Logger {
 public:
  explicit LogFile(const std::string& dir) {
    std::error_code ec;
    const std::string path = dir + "/LOG";
    if (std::filesystem::file_size(path, ec) > (uint64_t{64} << 20) && !ec)
      std::filesystem::rename(path, path + ".old", ec);
    f_ = fopen(path.c_str(), "a");
  }
  ~LogFile() override {
    if (f_) fclose(f_);
  }
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (!f_) return;
    timeval now;
    gettimeofday(&now, nullptr);
    struct tm t;
    localtime_r(&now.tv_sec, &t);
    std::lock_guard<std::mutex> lock(mu_);
    fprintf(f_, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %lx ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour,
            t.tm_min, t.tm_sec, static_cast<long>(now.tv_usec), static_cast<unsigned long>(gettid()));
    vfprintf(f_, format, ap);
    fputc('\n', f_);
    fflush(f_);  // a failed write loses this line; the next ones try again
    clearerr(f_);
  }

 private:
  std::mutex mu_;
  FILE* f_ = nullptr;
};

}  // namespace uih
