/* A sort run's block, records grouped by length and laid out byte by byte
 * (run_block.h). */
#include "run_block.h"

#include <inttypes.h>
#include <stdlib.h>

#include "error_internal.h"
#include "mem.h"
#include "radix.h"

/* The records sorted by (length, position): keys[k] = length << 32 |
 * position; offs[j] = where record j's bytes start in the raw form; the
 * third part, by_length's scratch. */
static int reserve(ld_run_block_scratch *s, size_t n, uih_error *err) {
  if (n > s->cap) {
    uint64_t *k = realloc(s->keys, 3 * n * sizeof *k);
    if (!k) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
    s->keys = k;
    s->cap = n;
  }
  return UIH_OK;
}

void ld_run_block_scratch_free(ld_run_block_scratch *s) {
  free(s->keys);
  s->keys = NULL;
  s->cap = 0;
}

/* Orders the keys (positions ascending, as made) by length, then
 * position: radix.h's stable sort on the length bytes that differ — one
 * pass where every length is under 256 bytes, as rows are. `tmp` holds n
 * keys. */
static void by_length(uint64_t *keys, uint64_t *tmp, size_t n) { uih_radix_sort_u64(keys, tmp, n, 32); }

/* Between the records (record j's bytes at raw + offs[j]) and the planes
 * after the lengths, the keys in (length, position) order: to the planes
 * (encoding) or back (decoding). */
static void lay(const uint64_t *keys, const uint64_t *offs, size_t n, uint8_t *raw, uint8_t *planes, int to_planes) {
  uint8_t *p = planes;
  for (size_t a = 0, b; a < n; a = b) {
    const uint32_t l = (uint32_t)(keys[a] >> 32);
    for (b = a; b < n && (uint32_t)(keys[b] >> 32) == l; b++) {}
    const size_t m = b - a;
    for (size_t k = a; k < b; k++) {
      uint8_t *r = raw + offs[(uint32_t)keys[k]], *q = p + (k - a);
      if (to_planes)
        for (uint32_t i = 0; i < l; i++) q[(size_t)i * m] = r[i];
      else
        for (uint32_t i = 0; i < l; i++) r[i] = q[(size_t)i * m];
    }
    p += (size_t)l * m;
  }
}

int ld_run_block_encode(const uint8_t *raw, size_t len, uint8_t *out, ld_run_block_scratch *s, uih_error *err) {
  size_t n = 0;
  for (size_t at = 0; at < len; n++) at += 4u + uih_load_le32(raw + at);
  uih_store_le32(out, (uint32_t)n);
  if (n == 0) return UIH_OK;
  UIH_FORWARD(reserve(s, n, err));
  uint64_t *keys = s->keys, *offs = s->keys + s->cap;
  size_t at = 0;
  for (size_t j = 0; j < n; j++) {
    const uint32_t l = uih_load_le32(raw + at);
    uih_store_le32(out + 4 + 4 * j, l);
    keys[j] = (uint64_t)l << 32 | j;
    offs[j] = at + 4;
    at += 4u + l;
  }
  by_length(keys, s->keys + 2 * s->cap, n);
  lay(keys, offs, n, (uint8_t *)raw, out + 4 + 4 * n, 1); /* raw only read */
  return UIH_OK;
}

int ld_run_block_decode(const uint8_t *in, size_t len, uint32_t min_len, uint8_t *raw, ld_run_block_scratch *s,
                        uih_error *err) {
  if (len < 4) return uih_corruption(err, "the block is %zu bytes, expected at least 4 (its count of records)", len);
  const size_t n = uih_load_le32(in);
  if (n > (len - 4) / 4)
    return uih_corruption(err, "laid-out byte 0: %zu records, more lengths than the block's %zu bytes hold", n, len);
  if (n == 0 && len > 4)
    return uih_corruption(err, "laid-out byte 0: no records, and %zu bytes after the count", len - 4);
  if (n == 0) return UIH_OK;
  UIH_FORWARD(reserve(s, n, err));
  uint64_t *keys = s->keys, *offs = s->keys + s->cap;
  const size_t body = len - 4 - 4 * n;
  uint64_t sum = 0, at = 0;
  for (size_t j = 0; j < n; j++) {
    const uint32_t l = uih_load_le32(in + 4 + 4 * j);
    if (l < min_len)
      return uih_corruption(err, "laid-out byte %zu: a record of %" PRIu32 " bytes, expected at least %" PRIu32,
                            4 + 4 * j, l, min_len);
    sum += l;
    keys[j] = (uint64_t)l << 32 | j;
    offs[j] = at + 4;
    at += 4u + l;
  }
  if (sum != body)
    return uih_corruption(err, "laid-out byte 4: the lengths of its %zu records add up to %" PRIu64
                          " bytes, expected %zu (what follows them)", n, sum, body);
  for (size_t j = 0; j < n; j++) uih_store_le32(raw + offs[j] - 4, (uint32_t)(keys[j] >> 32));
  by_length(keys, s->keys + 2 * s->cap, n);
  lay(keys, offs, n, raw, (uint8_t *)(in + 4 + 4 * n), 0); /* the planes only read */
  return UIH_OK;
}
