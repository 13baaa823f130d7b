/* The event list: events of one (user, feature group) row by row, the
 * mutable tier's value and merge operand. Format version 1; integers are
 * little-endian unless marked BE.
 *
 *   offset  size  field
 *   ------  ----  ------------------------------------------------------
 *   0          1  format version (1); readers reject other versions
 *   1          1  flags: bit 0 quarantined; other bits 0
 *   2          2  feature group id
 *   4          4  n: events (quarantined: inputs kept)
 *   8          2  c: columns (>= 1; quarantined: 0)
 *   10       3*c  columns: u16 trait id, u8 type (uih_type). Column 0 is
 *                 the timestamp; columns 1.. have other types, in strictly
 *                 ascending trait id order
 *   10+3c      .  n rows, canonical order (below)
 *   len - 4    4  low 32 bits of XXH3-64 of bytes [0, len - 4)
 *
 * A row:
 *
 *   8 bytes          timestamp ^ 2^63, BE: memcmp order is time order
 *   ceil((c-1)/8)    presence of columns 1.., bit j-1 = column j has a
 *                    value; bits past c-1 are 0
 *   ...              the present values in column order, at the type's
 *                    width (8: timestamp, id, int64; 4: uint32, category,
 *                    float32 bits; 1: flag, 0 or 1)
 *
 * Canonical order: rows strictly ascending by memcmp of their bytes (a
 * shorter row that is a prefix of a longer one first), so ties on time are
 * broken by content and no two rows are equal.
 *
 * A quarantined list (the merge of malformed inputs) instead holds:
 *
 *   10         2  reason length r, then r bytes of text
 *   12+r       .  n inputs: u32 length, then the input's bytes
 *
 * followed by the same checksum.
 */
#ifndef UIH_EVENTS_FORMAT_H
#define UIH_EVENTS_FORMAT_H

#define UIH_EVENTS_VERSION 1
#define UIH_EVENTS_FLAG_QUARANTINED 0x01u
#define UIH_EVENTS_HEADER_SIZE 10u
#define UIH_EVENTS_COLUMN_SIZE 3u
#define UIH_EVENTS_TS_SIZE 8u
#define UIH_EVENTS_CHECKSUM_SIZE 4u
#define UIH_EVENTS_COLUMNS_MAX 1024u /* = UIH_TRAITS_MAX */
#define UIH_EVENTS_REASON_MAX 400u

#endif /* UIH_EVENTS_FORMAT_H */
