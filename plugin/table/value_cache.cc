#include "value_cache.h"

#include <atomic>
#include <string>

#include "util/coding.h"

namespace uih {

using namespace rocksdb;

namespace {
uint64_t NextId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}
void DeleteValue(const Slice&, void* value) { delete static_cast<std::string*>(value); }
}  // namespace

ValueCache::ValueCache(Cache* cache) : cache_(cache), id_(cache ? NextId() : 0) {}

Slice ValueCache::Key(uint64_t voff, char* buf) const {
  EncodeFixed64(buf, id_);
  EncodeFixed64(buf + 8, voff);
  return Slice(buf, 16);
}

Cache::Handle* ValueCache::Lookup(uint64_t voff) const {
  char key[16];
  return cache_->Lookup(Key(voff, key));
}

bool ValueCache::Contains(uint64_t voff) const {
  Cache::Handle* h = Lookup(voff);
  if (h) cache_->Release(h);
  return h != nullptr;
}

Cache::Handle* ValueCache::Insert(uint64_t voff, const Slice& value) const {
  char key[16];
  auto* copy = new std::string(value.data(), value.size());
  Cache::Handle* h = nullptr;
  if (!cache_->Insert(Key(voff, key), copy, copy->size() + sizeof(std::string), &DeleteValue, &h).ok())
    return nullptr;  // the cache deleted the copy
  return h;
}

void ValueCache::Fill(uint64_t voff, const Slice& value) const {
  Cache::Handle* h = Insert(voff, value);
  if (h) cache_->Release(h);
}

Slice ValueCache::Value(Cache::Handle* h) const { return Slice(*static_cast<std::string*>(cache_->Value(h))); }

void ValueCache::ReleaseHandle(void* cache, void* handle) {
  static_cast<Cache*>(cache)->Release(static_cast<Cache::Handle*>(handle));
}

}  // namespace uih
