/* The loader's rows (rows.h). */
#include "rows.h"

#include <string.h>

#include "bits.h"
#include "error_internal.h"
#include "mem.h"
#include "types.h"

/* A value column: neither the timestamp nor the arrival generation. */
static int is_value(const uih_batch *b, uint32_t c) {
  const uih_trait *t = b->columns[c].trait;
  return t != b->group->ts && t->id != UIH_TRAIT_ARRIVAL;
}

static uint64_t to_stored(const uih_trait *t, uint64_t bits) {
  return t->type == UIH_TYPE_INT64 || t->type == UIH_TYPE_TIMESTAMP ? bits ^ UIH_SIGN64 : bits;
}

size_t ld_row_max(const uih_group *g) {
  size_t n = 0, bytes = 0;
  for (uint32_t i = 0; i < g->ntraits; i++) {
    const uih_trait *t = &g->traits[i];
    if (!uih_trait_active(t) || t == g->ts) continue;
    n++;
    bytes += uih_type_width(t->type);
  }
  return LD_ROW_HEAD + (n + 7) / 8 + bytes;
}

size_t ld_row_encode(uint16_t shard, uint64_t user, const uih_batch *b, uint32_t row, uint8_t *out) {
  uih_store_be16(out, shard);
  uih_store_be64(out + 2, user);
  uih_store_be16(out + 10, b->group->id);
  uih_store_be64(out + 12, uih_order_u64(uih_batch_timestamps(b)[row]));
  uint32_t nv = 0;
  for (uint32_t c = 0; c < b->ncolumns; c++) nv += (uint32_t)is_value(b, c);
  uint8_t *presence = out + LD_ROW_HEAD;
  memset(presence, 0, (nv + 7) / 8);
  uint8_t *p = presence + (nv + 7) / 8;
  uint32_t v = 0;
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    if (!is_value(b, c)) continue;
    const uih_column *col = &b->columns[c];
    if (uih_column_has(col, row)) {
      presence[v >> 3] |= (uint8_t)(1u << (v & 7));
      unsigned w = (unsigned)uih_type_info_of(col->trait->type)->width;
      uih_store_be(p, to_stored(col->trait, uih_column_get_bits(col, row)), w);
      p += w;
    }
    v++;
  }
  return (size_t)(p - out);
}

int ld_row_append(const uint8_t *rec, uint32_t len, uint32_t arrival, uih_batch *out, uih_error *err) {
  uint32_t nv = 0;
  for (uint32_t c = 0; c < out->ncolumns; c++) nv += (uint32_t)is_value(out, c);
  const uint32_t pbytes = (nv + 7) / 8;
  if (len < LD_ROW_HEAD + pbytes || ld_row_group(rec) != out->group->id)
    return uih_corruption(err, "loader row: %u bytes of group %u, expected at least %u of group %u",
                         len, ld_row_group(rec), LD_ROW_HEAD + pbytes, out->group->id);
  uint32_t row;
  int rc = uih_batch_append(out, &row, err);
  if (rc != UIH_OK) return rc;
  const uint8_t *presence = rec + LD_ROW_HEAD, *p = presence + pbytes, *end = rec + len;
  uint32_t v = 0;
  for (uint32_t c = 0; c < out->ncolumns; c++) {
    uih_column *col = &out->columns[c];
    if (col->trait == out->group->ts) {
      uih_column_set_bits(col, row, uih_load_be64(rec + 12) ^ UIH_SIGN64);
    } else if (col->trait->id == UIH_TRAIT_ARRIVAL) {
      uih_column_set_bits(col, row, arrival);
    } else {
      if (presence[v >> 3] >> (v & 7) & 1) {
        unsigned w = (unsigned)uih_type_info_of(col->trait->type)->width;
        if ((size_t)(end - p) < w) break;
        uih_column_set_bits(col, row, to_stored(col->trait, uih_load_be(p, w)));
        p += w;
      }
      v++;
    }
  }
  if (p != end || v != nv) {
    out->count--; /* leave the batch as it was */
    for (uint32_t c = 0; c < out->ncolumns; c++) {
      uih_column *col = &out->columns[c];
      col->present[row >> 6] &= ~(UINT64_C(1) << (row & 63));
      memset((uint8_t *)col->values + (size_t)row * uih_type_width(col->trait->type), 0,
             uih_type_width(col->trait->type));
    }
    return uih_corruption(err, "loader row: %u bytes do not match the %u value columns of group %u",
                         len, nv, out->group->id);
  }
  return UIH_OK;
}

void ld_row_layout_of(const uih_group *g, const uih_trait *t, ld_row_layout *out) {
  /* value columns in ascending trait id, as batches order them */
  out->nv = 0;
  out->target = UINT32_MAX;
  out->flip = to_stored(t, 0);
  int prev = -1;
  for (;;) {
    const uih_trait *next = NULL;
    for (uint32_t i = 0; i < g->ntraits; i++) {
      const uih_trait *c = &g->traits[i];
      if (!uih_trait_active(c) || c == g->ts || (int)c->id <= prev) continue;
      if (!next || c->id < next->id) next = c;
    }
    if (!next) return;
    if (next == t) out->target = out->nv;
    out->width[out->nv++] = (uint8_t)uih_type_width(next->type);
    prev = next->id;
  }
}

int ld_row_value(const uint8_t *rec, uint32_t len, const ld_row_layout *l, uint64_t *bits) {
  const uint32_t pbytes = (l->nv + 7) / 8;
  if (l->target >= l->nv || len < LD_ROW_HEAD + pbytes) return 0;
  const uint8_t *presence = rec + LD_ROW_HEAD;
  if (!(presence[l->target >> 3] >> (l->target & 7) & 1)) return 0;
  size_t at = LD_ROW_HEAD + pbytes;
  for (uint32_t v = 0; v < l->target; v++)
    if (presence[v >> 3] >> (v & 7) & 1) at += l->width[v];
  if (at + l->width[l->target] > len) return 0;
  *bits = uih_load_be(rec + at, l->width[l->target]) ^ l->flip;
  return 1;
}
