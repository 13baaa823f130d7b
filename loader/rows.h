/* The loader's rows: one event as a sort record, so that memcmp order is
 * (shard, user, group, ts, trait values) and byte equality is exact
 * duplication (the arrival generation is not part of it).
 *
 *   offset size
 *        0    2 shard, big-endian
 *        2    8 user id, big-endian
 *       10    2 group id, big-endian
 *       12    8 ts, sign bit flipped, big-endian
 *       20    p presence: a bit per value column (the group's active traits
 *               but the timestamp, ascending id), least significant first,
 *               p = ceil(columns / 8)
 *     20+p    . each present value at its type's width, big-endian (int64
 *               sign bit flipped, float32 as its bits)
 */
#ifndef UIH_LOADER_ROWS_H
#define UIH_LOADER_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "bits.h"
#include "mem.h"
#include "uih/batch.h"
#include "uih/key.h"
#include "uih/error.h"

#define LD_ROW_HISTORY 12 /* shard, user, group: the bytes one history's rows share */
#define LD_ROW_HEAD 20    /* every row has at least these bytes (the sorter checks) */

/* The largest row of group `g`. */
size_t ld_row_max(const uih_group *g);

/* Writes event `row` of `b` (a batch of the group's active traits, and
 * maybe the arrival generation, which is left out) to `out`
 * (ld_row_max bytes); returns its length. */
size_t ld_row_encode(uint16_t shard, uint64_t user, const uih_batch *b, uint32_t row, uint8_t *out);

/* Appends the event of row `rec` to `out` (a batch of the same group with
 * its active traits and UIH_TRAIT_ARRIVAL), with arrival generation
 * `arrival`. UIH_ERR_CORRUPTION when the row does not fit the group. */
int ld_row_append(const uint8_t *rec, uint32_t len, uint32_t arrival, uih_batch *out, uih_error *err);

/* Where one trait's value sits in a group's rows. */
typedef struct ld_row_layout {
  uint32_t nv;                   /* value columns */
  uint32_t target;               /* the trait's value column */
  uint64_t flip;                 /* what the row xors the trait's bits with (int64: the sign bit) */
  uint8_t width[UIH_TRAITS_MAX]; /* each value column's width */
} ld_row_layout;

/* The layout of group `g`'s rows for trait `t` (an active value trait of g). */
void ld_row_layout_of(const uih_group *g, const uih_trait *t, ld_row_layout *out);
/* 1 and *bits (the value's bits as a batch column holds them) when row
 * `rec` (`len` bytes) has a value of the layout's trait, 0 when it has none
 * or the row does not fit the layout. */
int ld_row_value(const uint8_t *rec, uint32_t len, const ld_row_layout *l, uint64_t *bits);

static inline uint16_t ld_row_shard(const uint8_t *rec) { return uih_load_be16(rec); }
static inline uint64_t ld_row_user(const uint8_t *rec) { return uih_load_be64(rec + 2); }
static inline uint16_t ld_row_group(const uint8_t *rec) { return uih_load_be16(rec + 10); }
static inline int64_t ld_row_ts(const uint8_t *rec) { return uih_order_i64(uih_load_be64(rec + 12)); }
/* The 10 bytes a row's (user, group) takes, which are the key prefix of its
 * history (uih_key_group_prefix): rows and stripe keys compare by them. */
static inline const uint8_t *ld_row_history(const uint8_t *rec) { return rec + 2; }
_Static_assert(LD_ROW_HISTORY - 2 == UIH_KEY_GROUP_PREFIX_SIZE, "a row's (user, group) is its history's key prefix");

#endif /* UIH_LOADER_ROWS_H */
