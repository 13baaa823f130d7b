#include "uih_plugin/status.h"

#include <cstdarg>
#include <cstdio>

namespace uih {

rocksdb::Status ToStatus(int code, const char* msg) {
  const rocksdb::Slice m(msg != nullptr ? msg : uih_strerror(code));
  switch (code) {
    case UIH_OK:
      return rocksdb::Status::OK();
    case UIH_ERR_CORRUPTION:
      return rocksdb::Status::Corruption(m);
    case UIH_ERR_IO:
      return rocksdb::Status::IOError(m);
    case UIH_ERR_NOT_FOUND:
      return rocksdb::Status::NotFound(m);
    case UIH_ERR_NOT_SUPPORTED:
      return rocksdb::Status::NotSupported(m);
    case UIH_ERR_NO_MEMORY:
      return rocksdb::Status::MemoryLimit(m);
    case UIH_ERR_INVALID_ARGUMENT:
    case UIH_ERR_SCHEMA:
    case UIH_ERR_PARSE:
    case UIH_ERR_TYPE_MISMATCH:
    case UIH_ERR_OUT_OF_RANGE:
    case UIH_ERR_INCOMPATIBLE:
      return rocksdb::Status::InvalidArgument(m);
    case UIH_ERR_INTERNAL:
      return rocksdb::Status::Aborted(m);
    default:
      // A code this build does not know (newer engine): never report OK.
      return rocksdb::Status::Aborted("uihstore error ", std::to_string(code) + ": " + m.ToString());
  }
}

rocksdb::Status TableCorruption(const std::string& what) { return rocksdb::Status::Corruption("UihTable: " + what); }

int TableCorruption(uih_error* err, const char* fmt, ...) {
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return uih_error_set(err, UIH_ERR_CORRUPTION, "%s", msg);
}

int FromStatus(const rocksdb::Status& s) {
  if (s.ok()) return UIH_OK;
  if (s.IsCorruption()) return UIH_ERR_CORRUPTION;
  if (s.IsNotFound()) return UIH_ERR_NOT_FOUND;
  if (s.IsNotSupported()) return UIH_ERR_NOT_SUPPORTED;
  if (s.IsMemoryLimit()) return UIH_ERR_NO_MEMORY;
  if (s.IsInvalidArgument()) return UIH_ERR_INVALID_ARGUMENT;
  return UIH_ERR_IO;  // IOError, and anything else RocksDB says went wrong underneath
}

}  // namespace uih
