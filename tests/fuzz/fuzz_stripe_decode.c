/* Fuzz target: decoding untrusted stripe bytes. Any input must give an
 * error with a message, or a batch; full, ranged and projected decodes
 * must agree with each other. Never a crash, hang or out-of-bounds read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_fixture.h"
#include "uih/stripe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uih_stripe_decoder *dec;
static uih_batch *full, *part, *proj;

static void setup(void) {
  const uih_group *g = fuzz_stripe_group();
  const uint16_t ids[] = {3, 7};
  if (uih_stripe_decoder_create(&dec, NULL) != UIH_OK ||
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dec) setup();
  /* Point the stripe at the fixture's group so decoding gets past that check. */
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  if (size >= 8) buf[6] = 1, buf[7] = 0;

  uih_error err;
  int rc = uih_stripe_decode(dec, buf, size, 0, UIH_DECODE_TO_END, 0, full, &err);
  if (rc != UIH_OK && (err.code != rc || err.msg[0] == '\0')) abort();
  if (rc == UIH_OK) {
    uint32_t n = full->count;
    uint32_t a = n / 3, b = n - n / 4;
    if (uih_stripe_decode(dec, buf, size, a, b, 0, part, &err) != UIH_OK) abort();
    same_rows(full, a, part);
    if (uih_stripe_decode(dec, buf, size, 0, n, 0, proj, &err) != UIH_OK) abort();
    same_rows(full, 0, proj);
  }
  (void)uih_stripe_decode(dec, buf, size, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, full, &err);
  free(buf);
  return 0;
}
