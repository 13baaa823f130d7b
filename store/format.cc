// The store's keys, values and names (format.h): encoded big-endian, and
// parsed from untrusted bytes through the cursor, each failure a corruption
// naming the key.
#include "format.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "bits.h"
#include "cursor.h"
#include "error_internal.h"
#include "mem.h"

namespace uih {

namespace {

std::string Bytes(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

uih_cursor CursorOf(const rocksdb::Slice& s) {
  return uih_cursor_make(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// The bytes after `prefix` in `key`, when the key has the prefix and that many.
bool After(const rocksdb::Slice& key, const char* prefix, size_t n, uih_cursor* c) {
  const size_t p = strlen(prefix);
  if (key.size() != p + n || memcmp(key.data(), prefix, p) != 0) return false;
  *c = CursorOf(key);
  uih_cursor_skip(c, p);
  return true;
}

}  // namespace

std::string SchemaKey(uint32_t version) { return kSchemaKeyPrefix + U32Value(version); }
std::string GenerationKey(uint32_t generation) { return kGenerationKeyPrefix + U32Value(generation); }
std::string DictsKey(uint32_t generation) { return kDictsKeyPrefix + U32Value(generation); }
std::string ErasedKey(uint64_t user) {
  uint8_t b[8];
  uih_store_be64(b, user);
  return kErasedKeyPrefix + Bytes(b, sizeof b);
}

int ParseKeyU32(const rocksdb::Slice& key, const char* prefix, uint32_t* n, uih_error* err) {
  uih_cursor c;
  if (!After(key, prefix, 4, &c))
    return uih_corruption(err, "metadata key %s is not %s and 4 bytes", key.ToString(true).c_str(), prefix);
  *n = uih_load_be32(uih_cursor_take(&c, 4));
  return UIH_OK;
}

int ParseKeyU64(const rocksdb::Slice& key, const char* prefix, uint64_t* n, uih_error* err) {
  uih_cursor c;
  if (!After(key, prefix, 8, &c))
    return uih_corruption(err, "metadata key %s is not %s and 8 bytes", key.ToString(true).c_str(), prefix);
  *n = uih_load_be64(uih_cursor_take(&c, 8));
  return UIH_OK;
}

std::string U32Value(uint32_t v) {
  uint8_t b[4];
  uih_store_be32(b, v);
  return Bytes(b, sizeof b);
}

std::string U64Value(uint64_t v) {
  uint8_t b[8];
  uih_store_be64(b, v);
  return Bytes(b, sizeof b);
}

std::string I64Value(int64_t v) {
  uint8_t b[8];
  uih_store_be64(b, uih_order_u64(v));
  return Bytes(b, sizeof b);
}

int ParseU32Value(const rocksdb::Slice& v, const char* key, uint32_t* out, uih_error* err) {
  uih_cursor c = CursorOf(v);
  const uint8_t* p = uih_cursor_take(&c, 4);
  if (p == nullptr || uih_cursor_left(&c) != 0)
    return uih_corruption(err, "metadata key '%s' holds %zu bytes, expected 4 (u32, big-endian)", key, v.size());
  *out = uih_load_be32(p);
  return UIH_OK;
}

int ParseU64Value(const rocksdb::Slice& v, const char* key, uint64_t* out, uih_error* err) {
  uih_cursor c = CursorOf(v);
  const uint8_t* p = uih_cursor_take(&c, 8);
  if (p == nullptr || uih_cursor_left(&c) != 0)
    return uih_corruption(err, "metadata key '%s' holds %zu bytes, expected 8 (u64, big-endian)", key, v.size());
  *out = uih_load_be64(p);
  return UIH_OK;
}

int ParseI64Value(const rocksdb::Slice& v, uint32_t format, const char* key, int64_t* out, uih_error* err) {
  uih_cursor c = CursorOf(v);
  const uint8_t* p = uih_cursor_take(&c, 8);
  if (p == nullptr || uih_cursor_left(&c) != 0)
    return uih_corruption(err, "metadata key '%s' holds %zu bytes, expected 8 (i64, %s)", key, v.size(),
                          format >= 2 ? "big-endian, sign bit flipped" : "little-endian: format 1");
  if (format >= 2) *out = uih_order_i64(uih_load_be64(p));
  else memcpy(out, p, sizeof *out);  // two's complement, little-endian, as format 1 wrote it
  return UIH_OK;
}

std::string ErasedValue(const Erasure& e) { return U32Value(e.generation) + I64Value(e.through); }

int ParseErasedValue(const rocksdb::Slice& v, const rocksdb::Slice& key, Erasure* out, uih_error* err) {
  uih_cursor c = CursorOf(v);
  const uint8_t* p = uih_cursor_take(&c, 12);
  if (p == nullptr || uih_cursor_left(&c) != 0)
    return uih_corruption(err, "erasure key %s holds %zu bytes, expected 12 (generation u32, through i64)",
                          key.ToString(true).c_str(), v.size());
  out->generation = uih_load_be32(p);
  out->through = uih_order_i64(uih_load_be64(p + 4));
  if (out->generation == 0)
    return uih_corruption(err, "erasure key %s names generation 0", key.ToString(true).c_str());
  return UIH_OK;
}

std::string ShardName(uint32_t shard) {
  char name[32];
  snprintf(name, sizeof name, "shard-%04u", shard);
  return name;
}

std::string MutableName(uint32_t shard) {
  char name[32];
  snprintf(name, sizeof name, "mutable-%04u", shard);
  return name;
}

std::string PublishedName(uint32_t shard) { return ShardName(shard) + ".published"; }

std::string PublishedText(uint32_t shard, uint32_t generation) {
  char text[80];
  snprintf(text, sizeof text, "uihstore published shard %u generation %u\n", shard, generation);
  return text;
}

bool ParsePublished(const std::string& text, uint32_t shard, uint32_t* generation) {
  unsigned s = 0, g = 0;
  int end = 0;
  if (sscanf(text.c_str(), "uihstore published shard %u generation %u\n%n", &s, &g, &end) != 2) return false;
  if (s != shard || static_cast<size_t>(end) != text.size()) return false;
  *generation = g;
  return true;
}

std::string GenerationCfName(uint32_t generation) {
  char name[32];
  snprintf(name, sizeof name, "%s%08u", kGenerationCfPrefix, generation);
  return name;
}

bool ParseGenerationCfName(const std::string& name, uint32_t* generation) {
  const size_t n = strlen(kGenerationCfPrefix);
  if (name.size() != n + 8 || name.compare(0, n, kGenerationCfPrefix) != 0) return false;
  uint32_t g = 0;
  for (size_t i = n; i < name.size(); i++) {
    if (name[i] < '0' || name[i] > '9') return false;
    g = g * 10 + static_cast<uint32_t>(name[i] - '0');
  }
  *generation = g;
  return g != 0;
}

}  // namespace uih
