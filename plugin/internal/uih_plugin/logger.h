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
#include <vector>

#include "rocksdb/env.h"

namespace uih {

// Keeps the last few lines RocksDB logs at WARN and above, so that an open
// that fails can say what RocksDB saw (which log file, which offset) even
// when nothing is written (a read-only open's SilentLogger).
class ReportingLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level >= rocksdb::InfoLogLevel::WARN_LEVEL && level < rocksdb::InfoLogLevel::HEADER_LEVEL) {
      va_list copy;
      va_copy(copy, ap);
      char line[512];
      vsnprintf(line, sizeof line, format, copy);
      va_end(copy);
      std::lock_guard<std::mutex> lock(report_mu_);
      if (report_.size() == 4) report_.erase(report_.begin());
      report_.push_back(line);
    }
    rocksdb::Logger::Logv(level, format, ap);
  }
  // The lines kept, oldest first, joined by "; " (empty: none).
  std::string Report() {
    std::lock_guard<std::mutex> lock(report_mu_);
    std::string out;
    for (const std::string& l : report_) out += (out.empty() ? "" : "; ") + l;
    return out;
  }

 private:
  std::mutex report_mu_;
  std::vector<std::string> report_;
};

// A logger that writes nothing: a read-only open creates no LOG file.
class SilentLogger : public ReportingLogger {
 public:
  using ReportingLogger::Logv;
  void Logv(const char*, va_list) override {}
};

// DIR/LOG, appended to; at open, a LOG past 64 MiB becomes LOG.old (the
// one before it is dropped). Lines RocksDB's way: local time, thread, text.
class LogFile : public ReportingLogger {
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
  using ReportingLogger::Logv;
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
