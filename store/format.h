// What a store writes, drawn in one place (as SQLite's btreeInt.h draws its
// pages): the files of its directory, the column families of a shard, and
// every key and value of a shard's metadata. Every integer in those keys
// and values is big-endian, and a signed one has its sign bit flipped, so
// that keys sort as their numbers. What the values hold beyond integers is
// drawn where it is encoded: stripes in uih/stripe.h, generation records
// and the descriptor in uih/generation.h, event lists in uih/events.h, keys
// of both tiers in uih/key.h.
//
//   DIR/
//     UIHSTORE              the descriptor (text: format, shard count, the
//                           store's id); written last by init
//     shard-%04u/           one RocksDB database per shard
//     tmp/                  a running load's files (tmp/shard-%04u/ for a
//                           store opened for one shard); what a killed load
//                           left is removed by the next writable open
//
//   A shard's column families
//     default               its metadata: the keys below
//     uih.mutable           the mutable tier: key (user, group, chunk start)
//                           (uih_key_encode; the 10-byte uih_key_group_prefix
//                           in stores made before chunks), value an event
//                           list (uih/events.h), appended by merges
//     uih.gen.%08u          live generation g: key (user, group, first ts of
//                           the stripe), value a stripe (uih/stripe.h);
//                           UihTable files, ingested whole, never written
//                           again, never compacted
//
//   Metadata (column family default)
//     key                     value
//     uih.format              u32: the format of the values below (2);
//                             absent in format 1
//     uih.schema/<v:u32>      schema version v: its JSON text as given
//     uih.gen/<g:u32>         generation g's record (UIH_GENERATION_SIZE
//                             bytes, uih/generation.h)
//     uih.dicts/<g:u32>       generation g's value dictionaries
//                             (uih_stripe_context_serialize), when it has any;
//                             written and deleted with its record
//     uih.current             u32: the current generation
//     uih.erased/<user:u64>   u32 the generation whose load erased the user,
//                             i64 that load's through (the last erasure);
//                             kept for good, so that no record logged before
//                             it is rebuilt
//     uih.watermark           i64: the mutable tier's watermark
//     uih.chunk_span          i64 > 0: the mutable tier's chunk span; absent
//                             in stores made before chunks (span 0)
//
//   A standalone mutable store (uih_mutable_open) is a database with the
//   column families default and uih.mutable and the keys uih.format,
//   uih.watermark and uih.chunk_span.
//
// Format 1 (stores written before uih.format) held the watermark and the
// chunk span as 8 bytes little-endian, two's complement. A writable open
// rewrites them in format 2 and writes uih.format, in one synced write; a
// read-only open reads them as they are (reading never writes). There is
// no way back: a build from before uih.format does not look for it, and
// would read format 2's values as little-endian. A format newer than this
// build's is refused.
#pragma once

#include <cstdint>
#include <string>

#include "rocksdb/slice.h"
#include "uih/error.h"
#include "uih_store/view.h"  // Erasure

namespace uih {

inline constexpr uint32_t kStoreFormat = 2;

inline constexpr const char kDescriptorFile[] = "UIHSTORE";
inline constexpr const char kGenerationCfPrefix[] = "uih.gen.";

inline constexpr const char kFormatKey[] = "uih.format";
inline constexpr const char kSchemaKeyPrefix[] = "uih.schema/";
inline constexpr const char kGenerationKeyPrefix[] = "uih.gen/";
inline constexpr const char kDictsKeyPrefix[] = "uih.dicts/";
inline constexpr const char kCurrentKey[] = "uih.current";
inline constexpr const char kErasedKeyPrefix[] = "uih.erased/";
inline constexpr const char kWatermarkKey[] = "uih.watermark";
inline constexpr const char kChunkSpanKey[] = "uih.chunk_span";

// ---- keys --------------------------------------------------------------------

std::string SchemaKey(uint32_t version);
std::string GenerationKey(uint32_t generation);
std::string DictsKey(uint32_t generation);
std::string ErasedKey(uint64_t user);
// The number after `prefix` in `key` (a key found under it): corruption
// naming the key when it is not `prefix` and 4 (u32) or 8 (u64) bytes.
int ParseKeyU32(const rocksdb::Slice& key, const char* prefix, uint32_t* n, uih_error* err);
int ParseKeyU64(const rocksdb::Slice& key, const char* prefix, uint64_t* n, uih_error* err);

// ---- values ------------------------------------------------------------------

std::string U32Value(uint32_t v);
std::string I64Value(int64_t v);
// The value `v` of key `key`, checked: corruption naming the key, its
// length and what was expected. A format-1 i64 is read little-endian.
int ParseU32Value(const rocksdb::Slice& v, const char* key, uint32_t* out, uih_error* err);
int ParseI64Value(const rocksdb::Slice& v, uint32_t format, const char* key, int64_t* out, uih_error* err);

std::string ErasedValue(const Erasure& e);
int ParseErasedValue(const rocksdb::Slice& v, const rocksdb::Slice& key, Erasure* out, uih_error* err);

// ---- names -------------------------------------------------------------------

// "shard-%04u"
std::string ShardName(uint32_t shard);
// "uih.gen.%08u", and back (false for any other name, and for generation 0).
std::string GenerationCfName(uint32_t generation);
bool ParseGenerationCfName(const std::string& name, uint32_t* generation);
inline bool IsGenerationCf(const std::string& name) {
  uint32_t g;
  return ParseGenerationCfName(name, &g);
}

}  // namespace uih
