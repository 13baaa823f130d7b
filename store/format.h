// What a store's shard database holds (uih/store.h draws it): the metadata
// keys of its default column family, the names and options of its
// generations' column families.
#pragma once

#include <cstdint>
#include <string>

#include "rocksdb/env.h"
#include "rocksdb/options.h"
#include "uih/error.h"

namespace uih {

inline constexpr const char kDescriptorFile[] = "UIHSTORE";
inline constexpr const char kCurrentKey[] = "uih.current";
inline constexpr const char kGenerationKeyPrefix[] = "uih.gen/";
inline constexpr const char kSchemaKeyPrefix[] = "uih.schema/";
inline constexpr const char kErasedKeyPrefix[] = "uih.erased/";
inline constexpr const char kDictsKeyPrefix[] = "uih.dicts/";
inline constexpr const char kGenerationCfPrefix[] = "uih.gen.";
inline constexpr const char kWatermarkKey[] = "uih.watermark";
inline constexpr const char kChunkSpanKey[] = "uih.chunk_span";

// The big-endian numbers of the keys and values below.
inline void AppendBE32(std::string* s, uint32_t v) {
  for (int i = 3; i >= 0; i--) s->push_back(static_cast<char>(v >> (8 * i)));
}
inline uint32_t LoadBE32(const char* p) {
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | u[3];
}
inline void AppendBE64(std::string* s, uint64_t v) {
  AppendBE32(s, static_cast<uint32_t>(v >> 32));
  AppendBE32(s, static_cast<uint32_t>(v));
}
inline uint64_t LoadBE64(const char* p) { return uint64_t{LoadBE32(p)} << 32 | LoadBE32(p + 4); }
// A signed value as an unsigned one that orders the same (the sign bit
// flipped), and back.
inline uint64_t ToOrdered(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }
inline int64_t FromOrdered(uint64_t u) {
  const uint64_t v = u ^ (uint64_t{1} << 63);
  return v <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(v)
                                               : -static_cast<int64_t>(~v) - 1;  // no implementation-defined cast
}

// "uih.gen/" + 4 bytes big-endian; "uih.schema/" + 4 bytes big-endian.
std::string GenerationKey(uint32_t generation);
// A generation's value dictionaries (uih/stripe.h: what its stripes' shared
// columns name, as uih_stripe_context_serialize writes them), written with
// its record when it has any: "uih.dicts/" + 4 bytes big-endian.
std::string DictsKey(uint32_t generation);
std::string SchemaKey(uint32_t version);
// A user erased from the shard, kept for as long as the shard lives, so
// that records logged before the erasure are never rebuilt: the key
// "uih.erased/" + the user id, 8 bytes big-endian; the value the
// generation that erased them, 4 bytes, and that load's through, 8 bytes
// with the sign bit flipped, big-endian (the last erasure of a user).
std::string ErasedKey(uint64_t user);
std::string ErasedValue(uint32_t generation, int64_t through);
// "uih.gen.%08u", and back (false for any other name).
std::string GenerationCfName(uint32_t generation);
bool ParseGenerationCfName(const std::string& name, uint32_t* generation);
inline bool IsGenerationCf(const std::string& name) {
  uint32_t g;
  return ParseGenerationCfName(name, &g);
}

// A generation's column family: UihTable files, ingested, never compacted.
rocksdb::ColumnFamilyOptions GenerationCfOptions();

// UIH_ERR_NOT_FOUND for a path that holds no store (a store, or a mutable
// store), saying why: "not a uihstore store: PATH: why".
inline int NotAStore(uih_error* err, const char* path, const std::string& why) {
  return uih_error_set(err, UIH_ERR_NOT_FOUND, "not a uihstore store: %s: %s", path, why.c_str());
}

}  // namespace uih
