// UihTable's value cache: verified values of a table's entries, keyed by
// (reader, value offset), in a rocksdb::Cache that a factory's tables share
// (UihTableOptions::cache_size or ::cache). Only verified values go in, so
// a hit needs no checksum.
#pragma once

#include <cstdint>

#include "rocksdb/cache.h"
#include "rocksdb/slice.h"

namespace uih {

class ValueCache {
 public:
  // `cache` may be null (no cache: every call but enabled() must not be made).
  explicit ValueCache(rocksdb::Cache* cache);

  bool enabled() const { return cache_ != nullptr; }
  rocksdb::Cache* cache() const { return cache_; }

  // The entry of the value at `voff`, or null. Release what is returned.
  rocksdb::Cache::Handle* Lookup(uint64_t voff) const;
  bool Contains(uint64_t voff) const;
  // Inserts a copy of a verified value; returns its handle (null when the
  // cache refused it), which the caller releases.
  rocksdb::Cache::Handle* Insert(uint64_t voff, const rocksdb::Slice& value) const;
  // Inserts a copy of a verified value and lets it go.
  void Fill(uint64_t voff, const rocksdb::Slice& value) const;
  // The value behind a handle: valid until the handle is released.
  rocksdb::Slice Value(rocksdb::Cache::Handle* h) const;
  void Release(rocksdb::Cache::Handle* h) const { cache_->Release(h); }
  // A Cleanable cleanup releasing `handle` of `cache` (arguments: the
  // rocksdb::Cache*, the handle).
  static void ReleaseHandle(void* cache, void* handle);

 private:
  rocksdb::Slice Key(uint64_t voff, char* buf) const;

  rocksdb::Cache* cache_;
  uint64_t id_;  // this reader's values in a shared cache
};

}  // namespace uih
