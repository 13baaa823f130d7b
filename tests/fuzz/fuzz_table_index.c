/* Fuzz target: the UihTable index decoder. The input's last 8 bytes are
 * replaced by the XXH3 of the rest, so mutations get past the checksum and
 * reach the structural validation; the first 8 bytes choose the data size.
 * An index either fails to open or can be walked both ways (backwards
 * with and without a backstep, alike) and sought, staying inside the data
 * section, its keys strictly increasing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "uih/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_entry(const uih_table_cursor *a, const uih_table_cursor *b) {
  return a->pos == b->pos && a->at == b->at && a->voff == b->voff && a->vlen == b->vlen && a->trailer == b->trailer &&
         a->klen == b->klen && (a->klen == 0 || memcmp(a->key, b->key, a->klen) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 + 16) return 0;
  uint64_t data_size;
  memcpy(&data_size, data, 8);
  data_size %= 1u << 20;
  size_t n = size - 8;
  uint8_t *idx_bytes = malloc(n);
  if (!idx_bytes) return 0;
  memcpy(idx_bytes, data + 8, n);
  uint64_t sum = XXH3_64bits(idx_bytes, n - 8);
  memcpy(idx_bytes + n - 8, &sum, 8);

  uih_table_index *idx = NULL;
  uih_error err;
  int rc = uih_table_index_open(idx_bytes, n, data_size, &idx, &err);
  free(idx_bytes);
  if (rc != UIH_OK) {
    if (idx != NULL || err.code != rc || err.msg[0] == '\0') abort();
    return 0;
  }
  uih_table_cursor c;
  if (uih_table_cursor_init(&c, idx, NULL) != UIH_OK) abort();
  uint64_t count = 0, prev_end = 0, prev_trailer = 0;
  uint8_t *prev_key = malloc(uih_table_index_max_key(idx) + 1);
  size_t prev_klen = 0;
  if (!prev_key) abort();
  for (uih_table_cursor_first(&c); uih_table_cursor_valid(&c); uih_table_cursor_next(&c)) {
    if (c.voff != prev_end || c.voff + c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE > data_size) abort();
    /* Keys strictly increasing, in internal-key order. */
    if (count > 0 && uih_table_compare(prev_key, prev_klen, prev_trailer, c.key, c.klen, c.trailer) >= 0) abort();
    memcpy(prev_key, c.key, c.klen);
    prev_klen = c.klen;
    prev_trailer = c.trailer;
    prev_end = c.voff + c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    count++;
  }
  free(prev_key);
  if (count != uih_table_index_entries(idx) || (count > 0 && prev_end != data_size)) abort();
  /* Backwards with a backstep (the reverse scan's run memory), entry for
   * entry what plain steps back give. */
  uih_table_cursor probe;
  if (uih_table_cursor_init(&probe, idx, NULL) != UIH_OK) abort();
  uih_table_backstep *back = uih_table_backstep_create(idx);
  uih_table_cursor_last(&probe);
  for (uih_table_cursor_last(&c); uih_table_cursor_valid(&c);
       uih_table_cursor_prev_with(&c, back), uih_table_cursor_prev(&probe)) {
    if (!uih_table_cursor_valid(&probe) || !same_entry(&c, &probe)) abort();
    count--;
  }
  if (count != 0 || uih_table_cursor_valid(&probe)) abort();
  uih_table_backstep_free(back);
  /* Seeking to each of the first entries' keys finds it. */
  uih_table_cursor_first(&c);
  for (int i = 0; i < 8 && uih_table_cursor_valid(&c); i++, uih_table_cursor_next(&c)) {
    uih_table_cursor_seek(&probe, c.key, c.klen, c.trailer);
    if (probe.pos != c.pos) abort();
    uih_table_cursor_seek_prev(&probe, c.key, c.klen, c.trailer);
    if (probe.pos != c.pos) abort();
  }
  uih_table_cursor_free(&probe);
  uih_table_cursor_free(&c);
  uih_table_index_free(idx);
  return 0;
}
