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
//                           store's id, a check; uih/generation.h); written
//                           last by init, never again; also the file
//                           readers' pins lock (pins.h), so never replaced
//     shard-%04u/           the shard's immutable side: one RocksDB database
//                           (its metadata and its generations)
//     shard-%04u.published  "uihstore published shard S generation G\n": a
//                           hint that followers poll (written after every
//                           publish, by rename; the truth is uih.current)
//     mutable-%04u/         the shard's mutable tier: a mutable store
//                           (uih_mutable_open's layout, below), format 3 on
//     tmp/                  a running load's files (tmp/shard-%04u/ for a
//                           store opened for one shard); what a killed load
//                           left is removed by the next writable open
//
//   Who writes which file (format 3). Three roles run at once on one
//   directory, in any processes, on any machines that share it:
//     loading  (UIH_STORE_ROLE_LOAD, `uih load`): writes shard-%04u/ (it
//              holds that database's LOCK for the load), tmp/, and the
//              .published hint; never opens mutable-%04u/. One per shard.
//     serving  (UIH_STORE_ROLE_SERVE): writes mutable-%04u/ (it holds that
//              database's LOCK for its life: one serving process per shard);
//              opens shard-%04u/ read-only, and again at each publish it
//              notices (the hint, every follow_ms), pinning what it serves.
//              It applies what a publish brings to its mutable tier —
//              the erased users' events deleted, the watermark advanced to
//              the generation's through — in one synced write that records
//              uih.applied, after it serves the generation.
//     training (read_only): writes nothing, pins what it opened.
//   A store opened with UIH_STORE_ROLE_ALL (the default) is loader and
//   server at once, holding both LOCKs: one process does everything.
//   Crashes: a killed loader leaves the previous generation current (the
//   publish is one synced write) and files the next writable open removes;
//   a killed server loses the appends it had not synced (UIH_APPEND_SYNC)
//   and, at its next open, applies what it had not; a killed reader's pins
//   go with its file descriptor. No role waits for another, but for the
//   pins' gate (pins.h), held for an open and a retirement, and a loader's
//   retirement skips generations a server or a reader pins.
//
//   A shard's column families (shard-%04u/)
//     default               its metadata: the keys below
//     uih.gen.%08u          live generation g: key (user, group, first ts of
//                           the stripe), value a stripe (uih/stripe.h);
//                           UihTable files, ingested whole, never written
//                           again, never compacted. Format 4: one or more
//                           layers (uih_store_writer_layer) — the files of
//                           the generation it was loaded onto, hard-linked
//                           and ingested again layer by layer, oldest
//                           first, then the load's own: stripes new or
//                           written again, and deletions of stored keys it
//                           no longer holds; each ingested without writing
//                           its global seqno into the file (it lives in the
//                           MANIFEST), so a shared file is never written
//     uih.mutable           formats 1 and 2 only: the mutable tier, before it
//                           moved to mutable-%04u/
//
//   Metadata (column family default)
//     key                     value
//     uih.format              u32: the format of the shard: 3 when made,
//                             4 from its first layered generation on;
//                             absent in format 1
//     uih.schema/<v:u32>      schema version v: its JSON text as given
//     uih.gen/<g:u32>         generation g's record (UIH_GENERATION_SIZE
//                             bytes, uih/generation.h)
//     uih.dicts/<g:u32>       generation g's value dictionaries
//                             (uih_stripe_context_serialize), when it has any;
//                             written and deleted with its record
//     uih.current             u32: the current generation
//     uih.store_id            u64: the id of the store the shard belongs to
//                             (its descriptor's); written at init, and by a
//                             loader's open of a shard made before it; an
//                             open whose descriptor names another id (or
//                             none) is refused
//     uih.erased/<user:u64>   u32 the generation whose load erased the user,
//                             i64 that load's through (the last erasure);
//                             kept for good, so that no record logged before
//                             it is rebuilt, and so that a mutable tier that
//                             has not applied it yet hides the user's events
//     uih.watermark           formats 1 and 2: the mutable tier's watermark
//     uih.chunk_span          formats 1 and 2: the mutable tier's chunk span
//
//   A mutable store (uih_mutable_open; a store's mutable-%04u/) is a
//   database with the column families default and uih.mutable:
//     uih.mutable             key (user, group, chunk start) (uih_key_encode;
//                             the 10-byte uih_key_group_prefix in stores made
//                             before chunks), value an event list
//                             (uih/events.h), appended by merges
//     default: uih.format     u32 (kMutableFormat, 2)
//              uih.watermark  i64: events below it are the immutable
//                             tier's; compactions drop them
//              uih.chunk_span i64 > 0; absent in stores made before chunks
//              uih.applied    u32: in a store's mutable tier, the newest
//                             generation of its shard whose erasures and
//                             through it has applied (absent: 0)
//   and, beside its database's files, UIH-ACKED (acked.cc): 56 bytes,
//   "UIHACK01", u64 the sequence number of the last write the store
//   acknowledged, u64 that of the last synced one, the machine's boot id
//   (16 bytes, /proc/sys/kernel/random/boot_id), u64 0, u64 XXH3-64 of the
//   48 bytes before. Rewritten in place after every write (not synced:
//   after a power loss it may lag, never lead, what a synced log holds);
//   every open checks that the database holds at least the synced number,
//   and the acknowledged one unless the machine restarted since, so a
//   write-ahead log that lost acknowledged appends (deleted, cut or zeroed
//   whole after its process died — RocksDB tracks only closed logs in the
//   MANIFEST) fails the open instead of reading as a log that never held
//   them; the unsynced appends a restart lost are said. Absent (a store
//   made before it): nothing to check; a writable open creates it.
//
// Format 1 (stores written before uih.format) held the watermark and the
// chunk span as 8 bytes little-endian, two's complement. Format 2 wrote
// them big-endian. Format 3 moved a store's mutable tier out of the
// shard's database into mutable-%04u/, so that a serving process and a
// loading one each hold a LOCK of their own. A writable open of an older
// shard (loading, or a serving open, which takes the shard's LOCK for the
// move alone) moves it: the mutable events, watermark and chunk span
// copied into a new mutable-%04u/ (uih.applied the current generation)
// and synced, then uih.format 3 written to the shard in one synced write
// (the commit, which also deletes the shard's watermark and chunk span: a
// mutable-%04u/ beside an older shard is a move that did not finish and is
// made again), then the shard's uih.mutable dropped. A read-only open reads an older store as it is (reading
// never writes). Format 4 is format 3 whose generations may be layered:
// the publish of a shard's first layered generation writes it, in the
// synced write that makes the generation current. There is no way back: a
// build from before a format does not read it. A format newer than this
// build's is refused.
#pragma once

#include <cstdint>
#include <string>

#include "rocksdb/slice.h"
#include "uih/error.h"
#include "uih_store/view.h"  // Erasure

namespace uih {

// The newest format this build reads and writes.
inline constexpr uint32_t kStoreFormat = 4;
// The format of a mutable store's values (uih_mutable_open; a store's
// mutable-%04u/): 2, as a format-2 store's shard wrote them; uih.applied,
// which older builds do not read, changes nothing they do read.
inline constexpr uint32_t kMutableFormat = 2;
// The first format whose mutable tier has a database of its own: what a
// store is made with, and what a move writes.
inline constexpr uint32_t kFormatOwnMutable = 3;
// The first format whose generations may be layered.
inline constexpr uint32_t kFormatLayered = 4;
// The most layers a generation may have: RocksDB ingests a layer that
// meets stored keys one level above the layer below, and of its seven
// levels L0 stays free (files there may overlap: GenerationFiles reads a
// layer as files that do not).
inline constexpr uint32_t kLayersMax = 6;

inline constexpr const char kDescriptorFile[] = "UIHSTORE";
inline constexpr const char kAckedFile[] = "UIH-ACKED";
inline constexpr const char kGenerationCfPrefix[] = "uih.gen.";

inline constexpr const char kFormatKey[] = "uih.format";
inline constexpr const char kSchemaKeyPrefix[] = "uih.schema/";
inline constexpr const char kGenerationKeyPrefix[] = "uih.gen/";
inline constexpr const char kDictsKeyPrefix[] = "uih.dicts/";
inline constexpr const char kCurrentKey[] = "uih.current";
inline constexpr const char kErasedKeyPrefix[] = "uih.erased/";
inline constexpr const char kWatermarkKey[] = "uih.watermark";
inline constexpr const char kChunkSpanKey[] = "uih.chunk_span";
inline constexpr const char kAppliedKey[] = "uih.applied";
inline constexpr const char kStoreIdKey[] = "uih.store_id";

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
std::string U64Value(uint64_t v);
std::string I64Value(int64_t v);
// The value `v` of key `key`, checked: corruption naming the key, its
// length and what was expected. A format-1 i64 is read little-endian.
int ParseU32Value(const rocksdb::Slice& v, const char* key, uint32_t* out, uih_error* err);
int ParseU64Value(const rocksdb::Slice& v, const char* key, uint64_t* out, uih_error* err);
int ParseI64Value(const rocksdb::Slice& v, uint32_t format, const char* key, int64_t* out, uih_error* err);

std::string ErasedValue(const Erasure& e);
int ParseErasedValue(const rocksdb::Slice& v, const rocksdb::Slice& key, Erasure* out, uih_error* err);

// ---- names -------------------------------------------------------------------

// "shard-%04u", "mutable-%04u", "shard-%04u.published"
std::string ShardName(uint32_t shard);
std::string MutableName(uint32_t shard);
std::string PublishedName(uint32_t shard);
// The hint's text for (shard, generation), and back: false when `text` is
// not one.
std::string PublishedText(uint32_t shard, uint32_t generation);
bool ParsePublished(const std::string& text, uint32_t shard, uint32_t* generation);
// "uih.gen.%08u", and back (false for any other name, and for generation 0).
std::string GenerationCfName(uint32_t generation);
bool ParseGenerationCfName(const std::string& name, uint32_t* generation);
inline bool IsGenerationCf(const std::string& name) {
  uint32_t g;
  return ParseGenerationCfName(name, &g);
}

}  // namespace uih
