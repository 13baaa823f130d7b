/* The stripe: up to 65,536 events of one user in one feature group, stored
 * column by column as one RocksDB value. Format version 1; all integers
 * little-endian.
 *
 *   offset        size  field
 *   ------------  ----  ----------------------------------------------------
 *   0                4  magic "UIHS"
 *   4                1  format version (1); readers reject other versions
 *   5                1  flags (0)
 *   6                2  feature group id
 *   8                4  event count n (1..65536)
 *   12               2  column count c
 *   14               2  reserved (0)
 *   16               4  schema version the writer used
 *   20               4  reserved (0)
 *   24               8  min timestamp (int64)
 *   32               8  max timestamp (int64)
 *   40          16 * c  column directory, ascending trait id:
 *                         +0  u16 trait id
 *                         +2  u8  trait type (uih_type)
 *                         +3  u8  value encoding (UIH_STRIPE_ENC_*)
 *                         +4  u8  compression (0 none, 1 lz4, 2 zstd)
 *                         +5  u8  presence (0 all, 1 none, 2 bitmap, 3 list)
 *                         +6  u16 reserved (0)
 *                         +8  u32 payload offset from the stripe's start
 *                         +12 u32 payload length
 *   40 + 16c         .  column payloads, contiguous, in directory order
 *   len - 8          8  XXH3-64 of bytes [0, len - 8)
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

#include <stdint.h>

#define UIH_STRIPE_MAGIC 0x53484955u /* "UIHS" read as little-endian u32 */
#define UIH_STRIPE_VERSION 1
#define UIH_STRIPE_HEADER_SIZE 40
#define UIH_STRIPE_DIR_ENTRY_SIZE 16
#define UIH_STRIPE_CHECKSUM_SIZE 8

enum { PRESENCE_ALL = 0, PRESENCE_NONE = 1, PRESENCE_BITMAP = 2, PRESENCE_LIST = 3 };
enum { STRIPE_COMPRESS_NONE = 0, STRIPE_COMPRESS_LZ4 = 1, STRIPE_COMPRESS_ZSTD = 2 };

/* One directory entry, decoded. */
typedef struct stripe_dir_entry {
  uint16_t trait_id;
  uint8_t type, encoding, compression, presence;
  uint32_t offset, length;
} stripe_dir_entry;

#endif /* UIH_STRIPE_FORMAT_H */
