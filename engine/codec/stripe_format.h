/* The stripe: up to 65,536 events of one user in one feature group, stored
 * column by column as one RocksDB value. Integers are little-endian,
 * varints LEB128. Most users have short histories (a median of tens of
 * events), so the fixed part is kept small: format version 3 spends
 * about 11 bytes plus 3 per column on it; versions 2 (12 plus 4) and 1 (24
 * plus 4 or 5, always a checksum), written before, are still read.
 *
 * Format version 3 is version 2 (below) with three changes:
 *
 *   - the first byte holds the version in bits 0-3 (3) and the flags in
 *     bits 4-7 (bit 4: a checksum ends the stripe; bits 5-7 zero), and no
 *     flags byte follows: the group id is at offset 1;
 *   - a directory entry is
 *       u8     bits 0-3 trait type, 4-5 compression, 6-7 presence (as in 2)
 *       u8     bits 0-3 value encoding, bit 4 scaled, bits 5-7 a step s:
 *              the trait id is the previous entry's + s (the first
 *              entry's: s - 1); s = 0: a varint trait id follows
 *       [varint trait id, if s = 0]
 *       varint payload length
 *     so columns of consecutive trait ids spend no byte on their ids;
 *   - DELTA and DELTA2 sequences store their anchors as varints (intseq.h:
 *     the value, or zigzag(value ^ 2^63) in int64 and unscaled timestamp
 *     columns; the first delta as zigzag), where version 2 spent a u64 on
 *     each; and the group's timestamp column may be scaled with a step of
 *     1 (its values stored less the header's min timestamp, which it
 *     does not store), so its anchors and minimums count from 0.
 *
 * Format version 2:
 *
 *   offset  size  field
 *   ------  ----  ------------------------------------------------------
 *   0          1  format version (2); a version-1 stripe starts with
 *                 'U' (0x55), so the first byte tells the formats apart
 *   1          1  flags: bit 0 a checksum ends the stripe; bits 1-7 zero.
 *                 A stripe stored where every value has a checksum of its
 *                 own (UihTable, snapshot records) leaves it out
 *   2          .  varint feature group id
 *              .  varint zigzag(min timestamp): the first event's
 *              .  varint event count n (1..65536)
 *              .  varint column count c
 *              .  varint schema version the writer used
 *              .  varint max timestamp - min timestamp (as uint64)
 *              .  column directory, c entries in ascending trait id order:
 *                   varint trait id
 *                   u8     bits 0-3 trait type (uih_type)
 *                          bits 4-5 compression (0 none, 1 lz4, 2 zstd)
 *                          bits 6-7 presence (0 all, 1 none, 2 bitmap, 3 list)
 *                   u8     bits 0-3 value encoding (UIH_ENC_* bit index)
 *                          bit  4   scaled (below)
 *                          bits 5-7 zero
 *                   varint payload length
 *              .  column payloads, contiguous, in directory order: a
 *                 column's offset is the sum of the lengths before it
 *   len - 4    4  if flags bit 0: low 32 bits of XXH3-64 of [0, len - 4)
 *
 * Format version 1 (read, no longer written):
 *
 *   0          4  magic "UIHS"
 *   4          1  format version (1)
 *   5          1  flags (0)
 *   6          2  feature group id
 *   8          8  min timestamp (int64)
 *   16         .  varint n, varint c, varint schema version, varint span
 *              .  directory: varint trait id, u8 type, u8 bits 0-2
 *                 encoding, bits 3-4 compression, bits 5-6 presence, bit 7
 *                 zero, varint payload length
 *              .  payloads
 *   len - 4    4  low 32 bits of XXH3-64 of [0, len - 4), always
 *
 * A column payload (after decompression; a compressed payload is
 * `varint raw_length` + the LZ4 block or ZSTD frame), the same in every
 * format but for what format 3 changed (above) and what format 1 lacks:
 *
 *   presence  all:    nothing; every event has a value
 *             none:   nothing; no event has a value (and no values follow)
 *             bitmap: ceil(n/8) bytes, bit i = event i has a value
 *             list:   varint k, FOR sequence of the k event positions
 *   scaled    (versions 2 and 3, encodings for, delta and delta2 of integer
 *             types and timestamps) varint step g >= 2 (>= 1 in the
 *             timestamp column of version 3) and, except in the
 *             group's timestamp column whose base is the header's min
 *             timestamp, varint base b (of int64 and timestamps the zigzag
 *             of the signed value, x ^ 2^63 of the form the sequence
 *             works in): the sequence below holds
 *             (v - b) / g for each value v, which is b + g * it (mod 2^64).
 *             Day-granular timestamps kept in seconds, prices in cents
 *             that are whole dollars: the common step is stored once.
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
 *             shared: (formats 2 and 3) u32 id of the value dictionary used,
 *                     varint h (1..m) values found in it, if h < m
 *                     ceil(m/8) bytes of bits (bit i: value i was found),
 *                     FOR sequence of the h ranks, FOR sequence of the
 *                     m - h other values
 *             coded:  (formats 2 and 3) u16, the low 16 bits of the id of the
 *                     value dictionary used (which must have a model),
 *                     varint o (0..m-1) values not in it ("escaped"),
 *                     FOR sequence of those o values, then per block of
 *                     128 values (the last may be shorter):
 *                       if more than one block: varint escapes in it
 *                       varint bytes of stream 0
 *                       unless the last block: varint bytes of stream 1
 *                       stream 0: the prefix codes of the block's values
 *                                 at even positions (0, 2, ...)
 *                       stream 1: those at odd positions; the last
 *                                 block's runs to the payload's end
 *                     A reader requires stream 0 to be 1 byte or more,
 *                     stream 1 empty exactly when its block holds one
 *                     value, a block's escapes to be no more than its
 *                     values and all of them to sum to o. (The last
 *                     stream running to the end, bytes appended to a
 *                     payload are found by a decode of its last block.)
 *                     A stream is LSB-first bits, zero-padded to a byte:
 *                     per value the code of its symbol under the
 *                     dictionary's model and, for a bucket, its raw bits
 *                     (below); an escape takes the next escaped value.
 *                     Two streams let a decoder follow two chains of
 *                     table lookups at once.
 *
 * A value dictionary (serialized; its values are one trait's, most frequent
 * first, and a value's rank is its position):
 *
 *   0          4  magic "UIHV"
 *   4          1  version (2; version 1, still read, has no model)
 *   5          1  trait type (id, int64, uint32 or category)
 *   6          2  feature group id
 *   8          2  trait id
 *   10         .  varint entry count K (0..2^24; 0: the trait was
 *                 counted and a dictionary declined, so no stripe names it)
 *              .  FOR sequence of the K values (signed for int64)
 *              .  version 2, K > 0: the model, S code lengths (1..11) in
 *                 ceil(S/2) bytes, low nibble first, padding zero
 *   len - 4    4  low 32 bits of XXH3-64 of [0, len - 4): also the id
 *                 shared columns name it by
 *
 * The model (prefix_code.h) is a complete canonical prefix code of at most
 * 11 bits over S = D + B + 1 symbols: D = min(K, 256) ranks below D are
 * symbols of their own; a rank r >= D is symbol D + j with x = r - D + 1 in
 * [2^j, 2^(j+1)), followed by j raw bits holding x - 2^j (B = bits of K - D
 * buckets); the last symbol is the escape. The loader builds it from the
 * counts the dictionary was ranked by (each symbol counted once more, so
 * every rank stays encodable).
 *
 * Values are mapped to uint64 before encoding: int64 and timestamps as
 * x ^ 2^63 (so unsigned order is signed order), float32 as its bit pattern,
 * the rest as they are. FOR sequences of int64 and timestamp values (the
 * for encoding, dictionary, run and sparse values) are signed sequences;
 * positions, codes and run lengths are unsigned ones (see intseq.h), and
 * so are scaled sequences, whose values are never below their base.
 */
#ifndef UIH_STRIPE_FORMAT_H
#define UIH_STRIPE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define UIH_STRIPE_VERSION 3 /* written */
#define UIH_STRIPE_V1_MAGIC 0x53484955u /* "UIHS" read as little-endian u32 */
#define UIH_STRIPE_V1_FIXED_SIZE 16     /* magic .. min timestamp */
#define UIH_STRIPE_MIN_SIZE 7           /* version 3: its first byte and six one-byte varints */
#define UIH_STRIPE_CHECKSUM_SIZE 4
#define UIH_STRIPE_FLAG_CHECKSUM 1u     /* version 2: the flags byte; version 3: bits 4-7 of the first */
#define STRIPE_DIR_STEP_MAX 7           /* version 3: the largest trait id step a directory entry holds */
#define STRIPE_DIR_ENTRY_MIN 3          /* the fewest bytes a directory entry takes (4 before version 3) */

/* The same numbers as uih_presence (uih/stripe.h). */
enum { PRESENCE_ALL = 0, PRESENCE_NONE = 1, PRESENCE_BITMAP = 2, PRESENCE_LIST = 3 };
enum { STRIPE_COMPRESS_NONE = 0, STRIPE_COMPRESS_LZ4 = 1, STRIPE_COMPRESS_ZSTD = 2 };

/* One directory entry, decoded; `offset` (from the first payload byte) is
 * computed from the lengths. */
typedef struct stripe_dir_entry {
  uint16_t trait_id;
  uint8_t type, encoding, compression, presence, scaled;
  uint8_t version; /* the stripe's format version: how its sequences store their anchors */
  uint32_t length;
  size_t offset;
} stripe_dir_entry;

#endif /* UIH_STRIPE_FORMAT_H */
