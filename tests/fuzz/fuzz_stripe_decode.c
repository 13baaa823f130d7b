/* Fuzz target: decoding untrusted stripe bytes. Any input must give an
 * error with a message, or a batch; never a crash, hang or out-of-bounds
 * read. Ranged and projected decodes run whether or not the full decode
 * succeeded, and must agree with it where both succeed. A full success
 * implies theirs; the converse does not hold: a range skips the blocks it
 * does not need by their headers and leaves their contents unchecked, so
 * it may succeed on a stripe whose full decode fails there (the checksum
 * is what catches such corruption). The decoder holds the fixture's value
 * dictionaries, so shared columns that name one of them decode too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_fixture.h"
#include "uih/stripe.h"

/* The directory read in one pass says what the header check and the
 * entry-at-a-time reads say. */
static void directory_agrees(const uint8_t *buf, size_t size) {
  uih_stripe_info info, again;
  uih_stripe_column_info cols[8], one;
  uih_error err;
  const int rc = uih_stripe_read_info(buf, size, &info, NULL);
  if (uih_stripe_read_columns(buf, size, &again, cols, 8, &err) != rc) abort();
  if (rc != UIH_OK) return;
  if (memcmp(&info, &again, sizeof info) != 0) abort();
  for (uint32_t i = 0; i < info.ncolumns && i < 8; i++)
    if (uih_stripe_column_at(buf, size, i, &one, NULL) != UIH_OK || one.trait_id != cols[i].trait_id ||
        one.type != cols[i].type || one.encoding != cols[i].encoding || one.compression != cols[i].compression ||
        one.bytes != cols[i].bytes || one.presence != cols[i].presence || one.scaled != cols[i].scaled ||
        one.events != info.count || cols[i].events != info.count)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uih_stripe_decoder *dec;
static uih_batch *full, *part, *proj;

static void setup(void) {
  const uih_group *g = fuzz_stripe_group();
  const uint16_t ids[] = {3, 7};
  if (uih_stripe_decoder_create(&dec, NULL) != UIH_OK ||
      (uih_stripe_decoder_set_context(dec, fuzz_stripe_context()), 0) ||
      uih_batch_create(g, UIH_STRIPE_EVENTS_MAX, NULL, 0, &full, NULL) != UIH_OK ||
      uih_batch_create(g, UIH_STRIPE_EVENTS_MAX, NULL, 0, &part, NULL) != UIH_OK ||
      uih_batch_create(g, UIH_STRIPE_EVENTS_MAX, ids, 2, &proj, NULL) != UIH_OK)
    abort();
}

static void same_rows(const uih_batch *a, uint32_t a_begin, const uih_batch *b) {
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    int ac = uih_batch_column_index(a, b->columns[c].trait->id);
    for (uint32_t r = 0; r < b->count; r++)
      if (uih_column_get_bits(&a->columns[ac], a_begin + r) != uih_column_get_bits(&b->columns[c], r) ||
          uih_column_has(&a->columns[ac], a_begin + r) != uih_column_has(&b->columns[c], r))
        abort();
  }
}

/* What every decode that succeeds promises: its timestamps are all there,
 * in order. */
static void timestamps_valid(uih_batch *b) {
  uih_column *ts = uih_batch_ts_column(b);
  const int64_t *v = uih_column_i64(ts);
  for (uint32_t r = 0; r < b->count; r++)
    if (!uih_column_has(ts, r) || (r > 0 && v[r] < v[r - 1])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dec) setup();
  /* Point the stripe at the fixture's group so decoding gets past that
   * check: format 1's u16 at offset 6, format 2's varint at offset 2,
   * format 3's at offset 1. */
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  if (size >= 8 && buf[0] == 'U') buf[6] = 1, buf[7] = 0;
  else if (size >= 3 && buf[0] == 2) buf[2] = 1;
  else if (size >= 2) buf[1] = 1;

  uih_error err;
  int rc = uih_stripe_decode(dec, buf, size, 0, UIH_DECODE_TO_END, 0, full, &err);
  if (rc != UIH_OK && (err.code != rc || err.msg[0] == '\0')) abort();
  directory_agrees(buf, size);
  /* The ranges: the middle, the last 32 events and the last one. */
  uih_stripe_info info;
  uint32_t n = rc == UIH_OK ? full->count
                            : uih_stripe_read_info(buf, size, &info, NULL) == UIH_OK ? info.count : 0;
  const uint32_t ranges[3][2] = {{n / 3, n - n / 4}, {n > 32 ? n - 32 : 0, n}, {n ? n - 1 : 0, n}};
  for (int i = 0; n && i < 3; i++) {
    int prc = uih_stripe_decode(dec, buf, size, ranges[i][0], ranges[i][1], 0, part, &err);
    if (prc != UIH_OK && (err.code != prc || err.msg[0] == '\0')) abort();
    if (rc == UIH_OK && prc != UIH_OK) abort();
    if (rc == UIH_OK) same_rows(full, ranges[i][0], part);
    if (prc == UIH_OK) timestamps_valid(part);
  }
  uint32_t tail = n > 40 ? n - 40 : 0;
  int jrc = uih_stripe_decode(dec, buf, size, tail, n, 0, proj, &err);
  if (rc == UIH_OK && jrc != UIH_OK) abort();
  if (rc == UIH_OK) same_rows(full, tail, proj);
  if (rc == UIH_OK && uih_stripe_decode(dec, buf, size, 0, n, 0, proj, &err) != UIH_OK) abort();
  if (rc == UIH_OK) same_rows(full, 0, proj);
  (void)uih_stripe_decode(dec, buf, size, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, full, &err);
  free(buf);
  return 0;
}
