// How a benchmark stops on a failed call: the program's name, what it was
// doing and the error, then exit 1. Shared by every C++ benchmark.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "rocksdb/status.h"
#include "uih/error.h"

namespace bench {

inline void Check(int rc, const uih_error& err, const char* what) {
  if (rc == UIH_OK) return;
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, uih_error_message(&err));
  exit(1);
}

inline void Check(const rocksdb::Status& st, const char* what) {
  if (st.ok()) return;
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, st.ToString().c_str());
  exit(1);
}

}  // namespace bench
