/* The stripe: up to 65,536 events of one user in one feature group, stored
 * column by column as one RocksDB value. Format version 1; integers are
 * little-endian, varints LEB128. Most users have short histories, so the
 * fixed part is kept small (about 20 bytes plus 4 or 5 per column).
 *
 *   offset  size  field
 *   ------  ----  ------------------------------------------------------
 *   0          4  magic "UIHS"
 *   4          1  format version (1); readers reject other versions
 *   5          1  flags (0)
 *   6          2  feature group id
 *   8          8  min timestamp (int64): the first event's
 *   16         .  varint event count n (1..65536)
 *              .  varint column count c
 *              .  varint schema version the writer used
 *              .  varint max timestamp - min timestamp (as uint64)
 *              .  column directory, c entries in ascending trait id order:
 *                   varint trait id
 *                   u8     trait type (uih_type)
 *                   u8     bits 0-2 value encoding (UIH_ENC_* bit index)
 *                          bits 3-4 compression (0 none, 1 lz4, 2 zstd)
 *                          bits 5-6 presence (0 all, 1 none, 2 bitmap, 3 list)
 *                          bit  7   0
 *                   varint payload length
 *              .  column payloads, contiguous, in directory order: a
 *                 column's offset is the sum of the lengths before it
 *   len - 4    4  low 32 bits of XXH3-64 of bytes [0, len - 4)
 *
 * A column payload (after decompression; a compressed payload is
 * `varint raw_length` + the LZ4 block or ZSTD frame):
 *
 *   presence  all:    nothing; every event has a value
 *             none:   nothing; no event has a value (and no values follow)
 *             bitmap: ceil(n/8) bytes, bit i = event i has a value
 *             list:   varint k, FOR sequence of the k event positions
 *   values    the m present values in event order, by encoding:
 *             plain:  m * width bytes (flag: ceil(m/8) bytes of bits)
 *             for:    FOR sequence            (see intseq.h)
 *             delta:  DELTA sequence
 *             delta2: DELTA2 sequence
 *             dict:   varint k, FOR sequence of the k sorted distinct
 *                     values, FOR sequence of m codes
 *             rle:    varint r, FOR sequence of r run values, FOR
 *                     sequence of r (run length - 1)
 *             bss:    float32 byte-stream split: 4 planes of m bytes
 *             sparse: varint z (values != 0), u8 form, then form 0:
 *                     ceil(m/8) bytes of bits, or form 1: FOR sequence
 *                     of z positions; then FOR sequence of the z values
 *
 * Values are mapped to uint64 before encoding: int64 and timestamps as
 * x ^ 2^63 (so unsigned order is signed order), float32 as its bit pattern,
 * the rest as they are. FOR sequences of int64 and timestamp values (the
 * for encoding, dictionary, run and sparse values) are signed sequences;
 * positions, codes and run lengths are unsigned ones (see intseq.h).
 */
#ifndef UIH_STRIPE_FORMAT_H
#define UIH_STRIPE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define UIH_STRIPE_MAGIC 0x53484955u /* "UIHS" read as little-endian u32 */
#define UIH_STRIPE_VERSION 1
#define UIH_STRIPE_FIXED_SIZE 16 /* magic .. min timestamp */
#define UIH_STRIPE_CHECKSUM_SIZE 4

/* The same numbers as uih_presence (uih/stripe.h). */
enum { PRESENCE_ALL = 0, PRESENCE_NONE = 1, PRESENCE_BITMAP = 2, PRESENCE_LIST = 3 };
enum { STRIPE_COMPRESS_NONE = 0, STRIPE_COMPRESS_LZ4 = 1, STRIPE_COMPRESS_ZSTD = 2 };

/* One directory entry, decoded; `offset` (from the first payload byte) is
 * computed from the lengths. */
typedef struct stripe_dir_entry {
  uint16_t trait_id;
  uint8_t type, encoding, compression, presence;
  uint32_t length;
  size_t offset;
} stripe_dir_entry;

static inline uint8_t stripe_dir_codes(const stripe_dir_entry *de) {
  return (uint8_t)(de->encoding | de->compression << 3 | de->presence << 5);
}

#endif /* UIH_STRIPE_FORMAT_H */
