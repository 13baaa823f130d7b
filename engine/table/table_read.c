/* The read path below RocksDB's DB layer: spans, read outcomes, value
 * checks and read windows (uih/table.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "bits.h"
#include "error_internal.h"
#include "uih/table.h"

/* Moves to entry `pos` and returns where it starts in the data section
 * (the section's end when past the last). */
static uint64_t data_offset(uih_table_cursor *c, uint64_t pos) {
  uih_table_cursor_goto(c, pos);
  return uih_table_cursor_valid(c) ? c->voff : uih_table_index_data_size(c->idx);
}

void uih_table_span_keys(uih_table_cursor *c, const uint8_t *lo, size_t lolen, const uint8_t *hi,
                         size_t hilen, uih_table_span *out) {
  uint64_t first = 0, end = uih_table_index_entries(c->idx);
  if (lo) {
    uih_table_cursor_seek(c, lo, lolen, UIH_TABLE_TRAILER_FIRST);
    first = c->pos;
  }
  if (hi) {
    uih_table_cursor_seek(c, hi, hilen, UIH_TABLE_TRAILER_FIRST);
    end = c->pos > first ? c->pos : first;
  }
  out->first = first;
  out->end = end;
  out->offset = data_offset(c, first);
  out->length = data_offset(c, end) - out->offset; /* the cursor ends at `end` */
}

void uih_table_span_key(uih_table_cursor *c, const uint8_t *ukey, size_t uklen, uih_table_span *out) {
  out->first = c->pos;
  out->offset = uih_table_cursor_valid(c) ? c->voff : uih_table_index_data_size(c->idx);
  uint64_t end_off = out->offset;
  while (uih_table_cursor_valid(c) && c->klen == uklen && (uklen == 0 || memcmp(c->key, ukey, uklen) == 0)) {
    end_off = c->voff + c->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    uih_table_cursor_next(c);
  }
  out->end = c->pos;
  out->length = end_off - out->offset;
}

int uih_table_read_status(const uih_io_req *r, uih_error *err) {
  if (r->result < 0)
    return uih_error_set(err, UIH_ERR_IO, "reading bytes [%" PRIu64 ", %" PRIu64 "): %s", r->offset,
                         r->offset + r->len, strerror((int)-r->result));
  if ((uint64_t)r->result != r->len)
    return uih_corruption(err,
                          "the file ends at byte %" PRIu64 ", before bytes [%" PRIu64 ", %" PRIu64
                          ") its index names (truncated?)",
                          r->offset + (uint64_t)r->result, r->offset, r->offset + r->len);
  return UIH_OK;
}

int uih_table_value_check(const uint8_t *bytes, uint32_t vlen, uint64_t voff, uih_error *err) {
  uint32_t stored;
  memcpy(&stored, bytes + vlen, sizeof stored);
  if (UIH_LIKELY(uih_checksum32(bytes, vlen) == stored)) return UIH_OK;
  return uih_corruption(err, "value checksum mismatch at data offset %" PRIu64 " (%" PRIu32 " bytes)", voff,
                        vlen);
}

uint64_t uih_table_window_next(uint64_t prev, uint64_t max) {
  if (max == 0) max = 1;
  if (prev == 0) return UIH_TABLE_FIRST_WINDOW < max ? UIH_TABLE_FIRST_WINDOW : max;
  return prev < max / 2 ? 2 * prev : max;
}
