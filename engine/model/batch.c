#include "uih/batch.h"

#include <stdlib.h>

#include "error_internal.h"
#include "types.h"

#define ALIGN 64u

static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }
static size_t bitmap_words(uint32_t capacity) { return ((size_t)capacity + 63) / 64; }

static int cmp_column(const void *a, const void *b) {
  const uih_column *x = a, *y = b;
  return (x->trait->id > y->trait->id) - (x->trait->id < y->trait->id);
}

int uih_batch_create(const uih_group *group, uint32_t capacity, const uint16_t *trait_ids,
                     uint32_t ntrait_ids, uih_batch **out, uih_error *err) {
  UIH_RETURN_IF(group == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_create: NULL argument");
  *out = NULL;
  UIH_RETURN_IF(capacity == 0 || capacity > UIH_BATCH_EVENTS_MAX, err, UIH_ERR_OUT_OF_RANGE,
                "batch capacity %u is outside [1, %u]", capacity, UIH_BATCH_EVENTS_MAX);

  uint32_t ncols = trait_ids ? ntrait_ids : uih_group_active_count(group);
  UIH_RETURN_IF(trait_ids && ntrait_ids == 0, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_create: empty trait selection for group '%s'", group->name);
  for (uint32_t i = 0; trait_ids && i < ntrait_ids; i++) {
    UIH_RETURN_IF(uih_group_trait_by_id(group, trait_ids[i]) == NULL, err, UIH_ERR_NOT_FOUND,
                  "group '%s' has no trait with id %u", group->name, trait_ids[i]);
    for (uint32_t j = 0; j < i; j++)
      UIH_RETURN_IF(trait_ids[j] == trait_ids[i], err, UIH_ERR_INVALID_ARGUMENT,
                    "trait id %u selected twice", trait_ids[i]);
  }

  /* Layout of the single allocation: header, column table, then per column
   * its values and its bitmap, each 64-byte aligned. */
  size_t head = align_up(sizeof(uih_batch) + ncols * sizeof(uih_column));
  size_t bitmap = align_up(bitmap_words(capacity) * sizeof(uint64_t));
  size_t total = head;
  for (uint32_t t = 0, c = 0; c < ncols; t++) {
    const uih_trait *tr = trait_ids ? uih_group_trait_by_id(group, trait_ids[c])
                                    : &group->traits[t];
    if (!trait_ids && !uih_trait_active(tr)) continue;
    total += align_up((size_t)capacity * uih_type_width(tr->type)) + bitmap;
    c++;
  }
  uint8_t *mem = aligned_alloc(ALIGN, total);
  UIH_RETURN_IF(mem == NULL, err, UIH_ERR_NO_MEMORY, "batch_create: cannot allocate %zu bytes",
                total);
  memset(mem, 0, total);

  uih_batch *b = (uih_batch *)mem;
  b->group = group;
  b->capacity = capacity;
  b->ncolumns = ncols;
  b->columns = (uih_column *)(mem + sizeof(uih_batch));
  size_t off = head;
  for (uint32_t t = 0, c = 0; c < ncols; t++) {
    const uih_trait *tr = trait_ids ? uih_group_trait_by_id(group, trait_ids[c])
                                    : &group->traits[t];
    if (!trait_ids && !uih_trait_active(tr)) continue;
    uih_column *col = &b->columns[c++];
    col->trait = tr;
    col->values = mem + off;
    off += align_up((size_t)capacity * uih_type_width(tr->type));
    col->present = (uint64_t *)(mem + off);
    off += bitmap;
  }
  qsort(b->columns, ncols, sizeof *b->columns, cmp_column);
  *out = b;
  return UIH_OK;
}

void uih_batch_free(uih_batch *b) { free(b); }

int uih_batch_reserve(uih_batch **batch, uint32_t capacity, uih_error *err) {
  UIH_RETURN_IF(batch == NULL || *batch == NULL, err, UIH_ERR_INVALID_ARGUMENT, "batch_reserve: NULL batch");
  uih_batch *old = *batch;
  if (capacity <= old->capacity) return UIH_OK;
  uint16_t ids[UIH_TRAITS_MAX];
  for (uint32_t c = 0; c < old->ncolumns; c++) ids[c] = old->columns[c].trait->id;
  uih_batch *nb = NULL;
  UIH_FORWARD(uih_batch_create(old->group, capacity, ids, old->ncolumns, &nb, err));
  for (uint32_t c = 0; c < old->ncolumns; c++) {
    const uih_column *from = &old->columns[c];
    uih_column *to = &nb->columns[c];
    memcpy(to->values, from->values, (size_t)old->count * uih_type_width(from->trait->type));
    memcpy(to->present, from->present, bitmap_words(old->count) * sizeof(uint64_t));
  }
  nb->count = old->count;
  free(old);
  *batch = nb;
  return UIH_OK;
}

void uih_batch_clear(uih_batch *b) {
  if (b->count == 1) { /* a reader's one-event batch, cleared at every line: no calls */
    for (uint32_t c = 0; c < b->ncolumns; c++) {
      uih_column *col = &b->columns[c];
      switch (uih_type_info_of(col->trait->type)->width) {
        case 8: ((uint64_t *)col->values)[0] = 0; break;
        case 4: ((uint32_t *)col->values)[0] = 0; break;
        case 1: ((uint8_t *)col->values)[0] = 0; break;
        default: break;
      }
      col->present[0] = 0;
    }
    b->count = 0;
    return;
  }
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    uih_column *col = &b->columns[c];
    memset(col->values, 0, (size_t)b->count * uih_type_width(col->trait->type));
    memset(col->present, 0, bitmap_words(b->count) * sizeof(uint64_t));
  }
  b->count = 0;
}

int uih_batch_append(uih_batch *b, uint32_t *row, uih_error *err) {
  UIH_RETURN_IF(b->count >= b->capacity, err, UIH_ERR_OUT_OF_RANGE,
                "batch for group '%s' is full (%u events)", b->group->name, b->capacity);
  /* Rows past `count` are kept zero by create/clear, so the new row is
   * already all-absent. */
  *row = b->count++;
  return UIH_OK;
}

/* ORs bits [from, from + n) of `src` into `dst` at bit `at`, 64 at a time.
 * Every word touched holds one of those bits, so none is past either
 * bitmap's end. */
static void or_bits(uint64_t *dst, uint32_t at, const uint64_t *src, uint32_t from, uint32_t n) {
  while (n > 0) {
    const uint32_t sb = from & 63, take = n < 64 ? n : 64;
    uint64_t word = src[from >> 6] >> sb;
    if (sb && 64 - sb < take) word |= src[(from >> 6) + 1] << (64 - sb);
    if (take < 64) word &= (UINT64_C(1) << take) - 1;
    const uint32_t db = at & 63;
    dst[at >> 6] |= word << db;
    if (db && db + take > 64) dst[(at >> 6) + 1] |= word >> (64 - db);
    at += take;
    from += take;
    n -= take;
  }
}

int uih_batch_copy_rows(uih_batch *dst, const uih_batch *src, uint32_t from, uint32_t to, uih_error *err) {
  UIH_RETURN_IF(dst == NULL || src == NULL || from > to || to > src->count, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_copy_rows: rows [%u, %u) of a batch of %u", from, to, src ? src->count : 0);
  UIH_RETURN_IF(dst->group->id != src->group->id, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_copy_rows: group '%s' into a batch of group '%s'", src->group->name, dst->group->name);
  const uint32_t n = to - from, at = dst->count;
  UIH_RETURN_IF(n > dst->capacity - at, err, UIH_ERR_OUT_OF_RANGE,
                "batch_copy_rows: %u rows into a batch with room for %u", n, dst->capacity - at);
  for (uint32_t c = 0; c < src->ncolumns; c++) {
    const uih_column *s = &src->columns[c];
    int d = c < dst->ncolumns && dst->columns[c].trait->id == s->trait->id ? (int)c
                                                                          : uih_batch_column_index(dst, s->trait->id);
    if (d < 0) continue;
    uih_column *t = &dst->columns[d];
    const size_t w = uih_type_width(s->trait->type);
    /* Absent values are zero in both, so the values copy whole. */
    memcpy((uint8_t *)t->values + (size_t)at * w, (const uint8_t *)s->values + (size_t)from * w, (size_t)n * w);
    or_bits(t->present, at, s->present, from, n);
  }
  dst->count += n;
  return UIH_OK;
}

int uih_batch_column_index(const uih_batch *b, uint16_t trait_id) {
  uint32_t lo = 0, hi = b->ncolumns;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    uint16_t id = b->columns[mid].trait->id;
    if (id == trait_id) return (int)mid;
    if (id < trait_id) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

uih_column *uih_batch_ts_column(uih_batch *b) {
  int i = uih_batch_column_index(b, b->group->ts->id);
  return i < 0 ? NULL : &b->columns[i];
}

const int64_t *uih_batch_timestamps(const uih_batch *b) {
  int i = uih_batch_column_index(b, b->group->ts->id);
  return i < 0 ? NULL : (const int64_t *)b->columns[i].values;
}

/* Whether `b` has exactly the columns `ids` (NULL: the group's active
 * traits) would give it. */
static int same_columns(const uih_batch *b, const uih_group *g, const uint16_t *ids, uint32_t nids) {
  if (ids == NULL) {
    if (b->ncolumns != uih_group_active_count(g)) return 0;
    for (uint32_t i = 0; i < b->ncolumns; i++)
      if (!uih_trait_active(b->columns[i].trait)) return 0;
    return 1;
  }
  if (b->ncolumns != nids || nids > UIH_TRAITS_MAX + 1) return 0;
  uint32_t same = 0; /* ids in the batch's own order (ascending), as callers mostly give them */
  while (same < nids && b->columns[same].trait->id == ids[same]) same++;
  if (same == nids) return 1;
  uint64_t seen[(UIH_TRAITS_MAX + 1 + 63) / 64] = {0};
  for (uint32_t i = 0; i < nids; i++) {
    const int c = uih_batch_column_index(b, ids[i]);
    if (c < 0 || (seen[c >> 6] >> (c & 63) & 1)) return 0; /* not a column, or an id named twice */
    seen[c >> 6] |= UINT64_C(1) << (c & 63);
  }
  return 1; /* each column named once: the same set */
}

int uih_batch_prepare(uih_batch **batch, const uih_group *group, const uint16_t *trait_ids, uint32_t ntrait_ids,
                      uint32_t capacity, uih_error *err) {
  UIH_RETURN_IF(batch == NULL || group == NULL, err, UIH_ERR_INVALID_ARGUMENT, "batch_prepare: NULL argument");
  if (capacity == 0) capacity = 1;
  uih_batch *b = *batch;
  if (b != NULL && b->group == group && same_columns(b, group, trait_ids, ntrait_ids)) {
    uih_batch_clear(b);
    return uih_batch_reserve(batch, capacity, err);
  }
  uih_batch *made = NULL;
  UIH_FORWARD(uih_batch_create(group, capacity, trait_ids, ntrait_ids, &made, err));
  uih_batch_free(b);
  *batch = made;
  return UIH_OK;
}

void uih_column_set_bits(uih_column *c, uint32_t row, uint64_t bits) {
  uih_type_store(c->values, c->trait->type, row, bits);
  uih_column_mark(c, row);
}

uint64_t uih_column_get_bits(const uih_column *c, uint32_t row) {
  switch (uih_type_info_of(c->trait->type)->width) {
    case 8: return ((const uint64_t *)c->values)[row];
    case 4: return ((const uint32_t *)c->values)[row];
    default: return ((const uint8_t *)c->values)[row];
  }
}

int uih_batch_copy_row(uih_batch *dst, const uih_batch *src, uint32_t row, uih_error *err) {
  UIH_RETURN_IF(dst == NULL || src == NULL || row >= src->count, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_copy_row: no row %u in the source", row);
  UIH_RETURN_IF(dst->group->id != src->group->id, err, UIH_ERR_INVALID_ARGUMENT,
                "batch_copy_row: group '%s' into a batch of group '%s'", src->group->name,
                dst->group->name);
  uint32_t at;
  UIH_FORWARD(uih_batch_append(dst, &at, err));
  for (uint32_t c = 0; c < src->ncolumns; c++) {
    const uih_column *from = &src->columns[c];
    if (!uih_column_has(from, row)) continue;
    /* same selection (the common case): same index, no search */
    int d = c < dst->ncolumns && dst->columns[c].trait->id == from->trait->id
                ? (int)c
                : uih_batch_column_index(dst, from->trait->id);
    if (d >= 0) uih_column_set_bits(&dst->columns[d], at, uih_column_get_bits(from, row));
  }
  return UIH_OK;
}
