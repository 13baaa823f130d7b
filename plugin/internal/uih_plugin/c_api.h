// The firewall between C callers and the C++ behind the C API of
// libuih_rocksdb (uih/store.h, uih/mutable.h, uih/materialize.h): an
// extern "C" function runs its body through CallC, so no exception crosses
// into C. As RocksDB's db/c.cc keeps its C API in the library that
// implements it. And the one owner of an engine batch in C++ code.
#pragma once

#include <exception>
#include <new>

#include "uih/batch.h"
#include "uih/error.h"

namespace uih {

// Runs `body` (returning a uih error code) and returns its result; an
// exception becomes an error in `err`: bad_alloc UIH_ERR_NO_MEMORY, any
// other UIH_ERR_INTERNAL naming `what` (the entry point) and the
// exception's message.
template <class F>
int CallC(uih_error* err, const char* what, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", what);
  } catch (const std::exception& e) {
    return uih_error_set(err, UIH_ERR_INTERNAL, "%s: unexpected C++ exception: %s", what, e.what());
  } catch (...) {
    return uih_error_set(err, UIH_ERR_INTERNAL, "%s: unexpected C++ exception", what);
  }
}

// For entry points that cannot report (destructors: close, free): an
// exception is swallowed, as a C caller could do nothing with it.
template <class F>
void CallCVoid(F&& body) noexcept {
  try {
    body();
  } catch (...) {
  }
}

// Owns an engine batch (freed with it). `b` is the pointer itself, so that
// calls which grow or replace a batch (uih_batch_prepare, uih_batch_reserve,
// uih_mutable_read) take &owner.b.
struct BatchPtr {
  uih_batch* b = nullptr;
  BatchPtr() = default;
  BatchPtr(const BatchPtr&) = delete;
  BatchPtr& operator=(const BatchPtr&) = delete;
  ~BatchPtr() { uih_batch_free(b); }
};

}  // namespace uih
