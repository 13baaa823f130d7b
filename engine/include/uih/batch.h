/* uihstore — event batches: the events of one stripe, column by column.
 *
 * A batch holds up to `capacity` events of one feature group, one column per
 * selected trait. The loader fills batches, the stripe codec encodes and
 * decodes them, the read path hands them to callers. Each column is a plain
 * array of `capacity` values of the trait's width (int64 for timestamp and
 * int64, uint64 for id, uint32 for uint32 and category, the bits of a float
 * for float32, uint8 0/1 for flag), 64-byte aligned, plus a presence bitmap:
 * bit i of `present` is set when event i has a value. Absent values read as
 * zero, so encoders see deterministic bytes.
 *
 *   batch ─┬─ columns[0]  trait "ts"       values: int64[capacity]  present: bits
 *          ├─ columns[1]  trait "item_id"  values: uint64[capacity] present: bits
 *          └─ ...
 *
 * One allocation holds the batch, its column table and every array; nothing
 * is allocated after uih_batch_create(). A batch is not thread-safe; use one
 * per thread. It refers to its group, which must outlive it.
 *
 * Filling: event by event with uih_batch_append and uih_column_set_bits, or
 * column at a time, which is cheaper and allowed: write each column's
 * values[0..n) directly and set its presence bits for the rows that have a
 * value (uih_column_mark), then set count = n. Rows at and past `count`
 * must stay absent and zero, as uih_batch_clear leaves them: encoders and
 * uih_batch_append rely on it.
 */
#ifndef UIH_BATCH_H
#define UIH_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uih/error.h"
#include "uih/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uih_column {
  const uih_trait *trait; /* in the batch's group */
  void *values;           /* capacity * uih_type_width(trait->type) bytes */
  uint64_t *present;      /* (capacity + 63) / 64 words */
} uih_column;

typedef struct uih_batch {
  const uih_group *group;
  uint32_t count;    /* events held, <= capacity */
  uint32_t capacity; /* fixed at creation */
  uint32_t ncolumns;
  uih_column *columns; /* in ascending trait id order */
} uih_batch;

/* The most events a batch holds: a stripe's (UIH_STRIPE_EVENTS_MAX) and a
 * snapshot's longest sequence (UIH_SNAPSHOT_LENGTH_MAX). */
#define UIH_BATCH_EVENTS_MAX (1u << 20)

/* Creates an empty batch for `capacity` (1..UIH_BATCH_EVENTS_MAX) events of
 * `group` with one column per id in `trait_ids` (any order, no repeats; each
 * a trait of the group, dropped traits allowed so old stripes can be read),
 * or, when `trait_ids` is NULL, one column per active trait. *out owns the
 * batch; free it with uih_batch_free(). */
int uih_batch_create(const uih_group *group, uint32_t capacity, const uint16_t *trait_ids,
                     uint32_t ntrait_ids, uih_batch **out, uih_error *err);

void uih_batch_free(uih_batch *batch); /* NULL is fine */

/* Empties the batch (count = 0); values and presence bits are zeroed. */
void uih_batch_clear(uih_batch *batch);

/* Makes *batch hold at least `capacity` (<= UIH_BATCH_EVENTS_MAX) events:
 * when it holds fewer, a new batch of the same group and columns, with the
 * same events, replaces it and the old one is freed (pointers into it, its
 * columns' arrays included, are then invalid). Nothing changes otherwise,
 * or on an error. */
int uih_batch_reserve(uih_batch **batch, uint32_t capacity, uih_error *err);

/* Appends one event with every trait absent and returns its row index in
 * *row. UIH_ERR_OUT_OF_RANGE when the batch is full. */
int uih_batch_append(uih_batch *batch, uint32_t *row, uih_error *err);

/* Appends a copy of event `row` of `src` (same group) to `dst`, trait by
 * trait id: traits `dst` lacks are skipped, traits `src` lacks stay absent.
 * UIH_ERR_OUT_OF_RANGE when `dst` is full. */
int uih_batch_copy_row(uih_batch *dst, const uih_batch *src, uint32_t row, uih_error *err);

/* Appends rows [from, to) of `src` (same group) to `dst` as that many
 * uih_batch_copy_row calls would, column at a time. UIH_ERR_OUT_OF_RANGE
 * (nothing copied) when they do not fit. */
int uih_batch_copy_rows(uih_batch *dst, const uih_batch *src, uint32_t from, uint32_t to, uih_error *err);

/* Makes *batch an empty batch of `group` with the columns `trait_ids`
 * (as uih_batch_create takes them; NULL: every active trait) for at least
 * `capacity` events: the batch there is kept (cleared, grown if need be)
 * when it is of that group with exactly those columns, else it is freed
 * (NULL is fine) once a new one is made. For callers that decode into the
 * same batches call after call: once grown, a batch allocates nothing. On an
 * error *batch is as it was. */
int uih_batch_prepare(uih_batch **batch, const uih_group *group, const uint16_t *trait_ids, uint32_t ntrait_ids,
                      uint32_t capacity, uih_error *err);

/* Index of the column holding trait `trait_id`, or -1. */
int uih_batch_column_index(const uih_batch *batch, uint16_t trait_id);

/* The column of the group's timestamp trait, or NULL if not selected. */
uih_column *uih_batch_ts_column(uih_batch *batch);
/* The batch's timestamps (the values of its group's timestamp trait, one
 * per event), or NULL if the batch does not hold that trait. Valid until
 * the batch is grown, replaced or freed. */
const int64_t *uih_batch_timestamps(const uih_batch *batch);

/* ---- per-value access: inline, no checks beyond what the types give ----- */

static inline int uih_column_has(const uih_column *c, uint32_t row) {
  return (int)((c->present[row >> 6] >> (row & 63)) & 1u);
}
static inline void uih_column_mark(uih_column *c, uint32_t row) {
  c->present[row >> 6] |= UINT64_C(1) << (row & 63);
}
static inline int64_t *uih_column_i64(uih_column *c) { return (int64_t *)c->values; }
static inline float uih_column_get_f32(const uih_column *c, uint32_t row) {
  float f;
  memcpy(&f, (const uint32_t *)c->values + row, sizeof f);
  return f;
}

/* Sets the value of `row` from a 64-bit pattern (int64 and id as is, uint32
 * and category truncated, float32 as its bit pattern in the low 32 bits,
 * flag as 0/1) and marks it present. */
void uih_column_set_bits(uih_column *c, uint32_t row, uint64_t bits);
/* The value of `row` as the same 64-bit pattern (zero when absent). */
uint64_t uih_column_get_bits(const uih_column *c, uint32_t row);

#ifdef __cplusplus
}
#endif
#endif /* UIH_BATCH_H */
