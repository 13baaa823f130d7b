/* The UihTable index's numeric layout: writer and block reader. Format in
 * uih/table.h, helpers in table_numeric.h. */
#include <stdlib.h>

#include "cursor.h"
#include "mem.h"
#include "table_numeric.h"
#include "uih/table.h"

/* Widths a column may have: g is 16 bits, value lengths 32. */
static const uint8_t max_width[UIH_NUM_COLUMNS] = {64, 16, 64, 64, 32};

int uih_num_writer_init(uih_num_writer *w, uint32_t block) {
  memset(w, 0, sizeof *w);
  w->block = block;
  w->col = malloc(sizeof(uint64_t) * UIH_NUM_COLUMNS * block);
  return w->col ? 0 : -1;
}

void uih_num_writer_free(uih_num_writer *w) {
  free(w->col);
  uih_wbuf_free(&w->blocks);
  uih_wbuf_free(&w->offsets);
  memset(w, 0, sizeof *w);
}

void uih_num_writer_add(uih_num_writer *w, const uint8_t key[UIH_KEY_SIZE], uint64_t trailer,
                        uint32_t vlen, uint64_t voff) {
  if (w->count == 0) w->voff0 = voff;
  uint32_t k = w->count;
  w->col[UIH_NUM_U * w->block + k] = uih_load_be64(key);
  w->col[UIH_NUM_G * w->block + k] = uih_load_be16(key + 8);
  w->col[UIH_NUM_T * w->block + k] = uih_load_be64(key + 10);
  w->col[UIH_NUM_TRAILER * w->block + k] = trailer;
  w->col[UIH_NUM_LEN * w->block + k] = vlen;
  if (++w->count == w->block) uih_num_writer_finish(w);
}

void uih_num_writer_finish(uih_num_writer *w) {
  uint32_t n = w->count;
  if (n == 0) return;
  uih_wbuf *o = &w->blocks;
  if (o->len > UINT32_MAX) w->too_big = 1;
  uih_wbuf_u32(&w->offsets, (uint32_t)o->len);
  uint64_t base[UIH_NUM_COLUMNS];
  uint8_t width[UIH_NUM_COLUMNS];
  for (int c = 0; c < UIH_NUM_COLUMNS; c++) {
    uint64_t *v = w->col + (size_t)c * w->block, lo = v[0], hi = v[0];
    for (uint32_t k = 1; k < n; k++) {
      lo = v[k] < lo ? v[k] : lo;
      hi = v[k] > hi ? v[k] : hi;
    }
    base[c] = lo;
    width[c] = (uint8_t)uih_bits(hi - lo);
    for (uint32_t k = 0; k < n; k++) v[k] -= lo;
  }
  uih_wbuf_put(o, width, sizeof width);
  uih_wbuf_u64(o, base[UIH_NUM_U]);
  uih_wbuf_u16(o, (uint16_t)base[UIH_NUM_G]);
  uih_wbuf_u64(o, base[UIH_NUM_T]);
  uih_wbuf_varint(o, base[UIH_NUM_TRAILER]);
  uih_wbuf_varint(o, base[UIH_NUM_LEN]);
  uih_wbuf_varint(o, w->voff0);
  for (int c = 0; c < UIH_NUM_COLUMNS; c++) uih_pack(o, w->col + (size_t)c * w->block, n, width[c]);
  if (o->oom || w->offsets.oom) w->oom = 1;
  w->count = 0;
}

int uih_num_block_parse(const uint8_t *p, size_t len, uint32_t count, uih_num_block *b) {
  uih_cursor c = uih_cursor_make(p, len);
  const uint8_t *w = uih_cursor_take(&c, UIH_NUM_COLUMNS);
  b->base[UIH_NUM_U] = uih_cursor_u64(&c);
  b->base[UIH_NUM_G] = uih_cursor_u16(&c);
  b->base[UIH_NUM_T] = uih_cursor_u64(&c);
  b->base[UIH_NUM_TRAILER] = uih_cursor_varint(&c);
  b->base[UIH_NUM_LEN] = uih_cursor_varint(&c);
  b->voff0 = uih_cursor_varint(&c);
  if (c.bad || count == 0) return -1;
  b->count = count;
  for (int k = 0; k < UIH_NUM_COLUMNS; k++) {
    if (w[k] > max_width[k]) return -1;
    b->w[k] = w[k];
    b->col[k] = uih_cursor_take(&c, ((uint64_t)count * w[k] + 7) / 8);
  }
  return c.bad || uih_cursor_left(&c) ? -1 : 0;
}

static inline uint64_t field(const uih_num_block *b, int c, uint32_t i) {
  return uih_pack_get_padded(b->col[c], b->w[c], i);
}

void uih_num_entry(const uih_num_block *b, uint32_t i, uint8_t key[UIH_KEY_SIZE],
                   uint64_t *trailer, uint32_t *vlen) {
  uih_store_be64(key, b->base[UIH_NUM_U] + field(b, UIH_NUM_U, i));
  uih_store_be16(key + 8, (uint16_t)(b->base[UIH_NUM_G] + field(b, UIH_NUM_G, i)));
  uih_store_be64(key + 10, b->base[UIH_NUM_T] + field(b, UIH_NUM_T, i));
  *trailer = b->base[UIH_NUM_TRAILER] + field(b, UIH_NUM_TRAILER, i);
  *vlen = (uint32_t)(b->base[UIH_NUM_LEN] + field(b, UIH_NUM_LEN, i));
}

int uih_num_entry_checked(const uih_num_block *b, uint32_t i, uint8_t key[UIH_KEY_SIZE],
                          uint64_t *trailer, uint32_t *vlen) {
  static const uint64_t limit[UIH_NUM_COLUMNS] = {UINT64_MAX, UINT16_MAX, UINT64_MAX, UINT64_MAX,
                                                  UINT32_MAX};
  for (int c = 0; c < UIH_NUM_COLUMNS; c++)
    if (b->base[c] > limit[c] || field(b, c, i) > limit[c] - b->base[c]) return -1;
  uih_num_entry(b, i, key, trailer, vlen);
  return 0;
}

uint64_t uih_num_voff(const uih_num_block *b, uint32_t i) {
  uint64_t sum = 0;
  for (uint32_t k = 0; k < i; k++) sum += field(b, UIH_NUM_LEN, k);
  return b->voff0 + sum + (uint64_t)i * (b->base[UIH_NUM_LEN] + UIH_TABLE_VALUE_CHECKSUM_SIZE);
}
