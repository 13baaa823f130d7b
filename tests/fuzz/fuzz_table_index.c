/* Fuzz target: the UihTable index decoder. The input's last 8 bytes are
 * replaced by the XXH3 of the rest, so mutations get past the checksum and
 * reach the structural validation; the first 8 bytes choose the data size.
 * An index either fails to open or can be walked both ways and sought,
 * staying inside the data section. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "uih/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
  uint64_t count = 0, prev_end = 0;
  for (uih_table_cursor_first(&c); uih_table_cursor_valid(&c); uih_table_cursor_next(&c)) {
    if (c.voff != prev_end || c.voff + c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE > data_size) abort();
    prev_end = c.voff + c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    count++;
  }
  if (count != uih_table_index_entries(idx) || (count > 0 && prev_end != data_size)) abort();
  for (uih_table_cursor_last(&c); uih_table_cursor_valid(&c); uih_table_cursor_prev(&c)) count--;
  if (count != 0) abort();
  /* Seeking to each of the first entries' keys finds it. */
  uih_table_cursor probe;
  if (uih_table_cursor_init(&probe, idx, NULL) != UIH_OK) abort();
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
