/* uihstore — generation records: what a shard's metadata says of each
 * immutable generation, the output of one daily load.
 *
 * A shard stores one record per live generation (key "uih.gen/" + the
 * generation as 4 big-endian bytes in its default column family) and names
 * the current one (key "uih.current", the same 4 bytes); the loader writes
 * both in one synced write, which is what publishes a generation. A record
 * is UIH_GENERATION_SIZE bytes, big-endian, checksummed:
 *
 *   offset size field
 *   ------ ---- ------------------------------------------------------------
 *        0    4 magic "UGEN"
 *        4    2 format version (1)
 *        6    2 record size (128)
 *        8    4 generation (>= 1); its column family is "uih.gen.%08u"
 *       12    4 parent: the generation it was built on (0: none)
 *       16    4 schema version its new stripes are written with
 *       20    4 shard
 *       24    8 through (int64, sign bit flipped): every event has ts < through
 *       32    8 horizon (int64, flipped): every event has ts >= horizon
 *                (INT64_MIN: no lookback)
 *       40    8 events stored
 *       48    8 stripes stored
 *       56    8 (user, group) histories stored
 *       64    8 bytes of stripes stored
 *       72    8 events read from the inputs for this shard
 *       80    8 of them new (stored for the first time)
 *       88    8 of them duplicates (already stored, or repeated in the inputs)
 *       96    8 events dropped by the lookback (old and new)
 *      104    8 events erased by deletions
 *      112    8 XXH3-64 of the load that made it: its inputs (their
 *                digests, in order), deletions, schema version, through
 *                and horizon (a rerun of the same load is recognized by it)
 *      120    8 XXH3-64 of bytes [0, 120)
 *   ------ ----
 *      128      UIH_GENERATION_SIZE
 */
#ifndef UIH_GENERATION_H
#define UIH_GENERATION_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_GENERATION_SIZE 128
#define UIH_GENERATION_FORMAT 1

typedef struct uih_generation {
  uint32_t generation, parent, schema_version, shard;
  int64_t through, horizon;
  uint64_t events, stripes, histories, bytes;
  uint64_t events_in, events_new, duplicates, expired, deleted;
  uint64_t inputs_digest;
} uih_generation;

/* Writes the record of `g` to `out`. */
void uih_generation_encode(const uih_generation *g, uint8_t out[UIH_GENERATION_SIZE]);

/* Decodes `len` untrusted bytes. UIH_ERR_CORRUPTION (what is wrong, at
 * which offset) for a wrong size, magic or checksum and for fields that
 * contradict each other; UIH_ERR_NOT_SUPPORTED for a newer format. */
int uih_generation_decode(const uint8_t *buf, size_t len, uih_generation *out, uih_error *err);

/* A store's descriptor: the text file UIHSTORE at the top of its directory,
 * written last by uih_store_init (a directory without it is not a store):
 *
 *   uihstore 2
 *   shards 4
 *   id 9f86d081884c7d65
 *   check 3c1f0a2e
 *
 * The id (16 lowercase hex digits, not all zero; random at init) names the
 * store in the snapshot records logged against it; check is the low 32 bits
 * of XXH3-64 of the three lines above it (with their newlines), in 8
 * lowercase hex digits, so a damaged or cut descriptor is never read as
 * another store. Format 1 ("uihstore 1") has no check line, and stores made
 * before ids existed have no id line (*id 0); the store's shards record
 * the id too (store/format.h), which catches a format-1 descriptor cut
 * before its id.
 *
 * Parses `len` untrusted bytes; UIH_ERR_CORRUPTION naming the line and what
 * was expected, UIH_ERR_NOT_SUPPORTED for a newer format. */
#define UIH_STORE_SHARDS_MAX 4096
int uih_store_descriptor_parse(const char *text, size_t len, uint32_t *shards, uint64_t *id, uih_error *err);
/* The descriptor (format 2) of a store of `shards` shards and id `id` into
 * out; returns its length (snprintf's rule: output cut at `cap`). */
size_t uih_store_descriptor_write(uint32_t shards, uint64_t id, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* UIH_GENERATION_H */
