// uihstore RocksDB glue — the one place where engine error codes become
// rocksdb::Status values, and back.
#pragma once

#include <rocksdb/status.h>

#include <string>

#include "uih/error.h"

namespace uih {

// Maps an engine code and message to the Status RocksDB callers expect:
// corruption -> Corruption, I/O -> IOError, not found -> NotFound,
// not supported -> NotSupported, out of memory -> MemoryLimit, and every
// input or schema problem -> InvalidArgument. The message is copied.
rocksdb::Status ToStatus(int code, const char* msg);

inline rocksdb::Status ToStatus(const uih_error& e) {
  return ToStatus(e.code, uih_error_message(&e));
}

// Every corruption the plugin finds becomes an error here: a Status
// "UihTable: WHAT", or UIH_ERR_CORRUPTION in `err` for callers of the
// engine's style. A debugger stops on `break uih::TableCorruption` as on the
// engine's uih_corruption, which the plugin cannot call: built inside
// RocksDB's tree too, it sees only the installed engine.
rocksdb::Status TableCorruption(const std::string& what);
int TableCorruption(uih_error* err, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The other way, for the C API over RocksDB: Corruption, NotFound,
// NotSupported, MemoryLimit and InvalidArgument map to their codes, every
// other failure to UIH_ERR_IO.
int FromStatus(const rocksdb::Status& s);

}  // namespace uih
