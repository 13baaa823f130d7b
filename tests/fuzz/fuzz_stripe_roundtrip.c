/* Fuzz target: encode -> decode. The input drives a batch (event count,
 * per-column value shapes and presence, values a common step apart);
 * encoding it twice must give the same bytes, and decoding must give the
 * batch back exactly — with every encoding competing, with a fast encoder
 * (one estimated encoding per column), without the stripe's own checksum
 * (the same bytes, less the checksum and its flag), and with value
 * dictionaries at hand (the fixture's, for values below 300 or so); and
 * written like a stripe (uih_stripe_encode_like): like itself, the same
 * bytes; like a directory the input makes up, the same events. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_fixture.h"
#include "uih/stripe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct src {
  const uint8_t *p;
  size_t n, i;
} src;

static uint64_t take(src *s, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned k = 0; k < bytes; k++) v |= (uint64_t)(s->i < s->n ? s->p[s->i++] : 0) << (8 * k);
  return v;
}

static uih_stripe_encoder *enc, *fast, *bare, *shared;
static uih_stripe_decoder *dec;
static uih_batch *in, *out;

/* Decodes `stripe` and checks it holds `in`'s n events exactly. */
static void same_events(const uint8_t *stripe, size_t len, uint32_t n) {
  uih_error err;
  if (uih_stripe_decode(dec, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, out, &err) != UIH_OK)
    abort();
  if (out->count != n) abort();
  for (uint32_t c = 0; c < in->ncolumns; c++)
    for (uint32_t i = 0; i < n; i++)
      if (uih_column_has(&in->columns[c], i) != uih_column_has(&out->columns[c], i) ||
          uih_column_get_bits(&in->columns[c], i) != uih_column_get_bits(&out->columns[c], i))
        abort();
}

/* Encodes `in` twice with `e` (the same bytes) and decodes it back; the
 * first encoding is left in *stripe, *stripe_len (the caller frees it). */
static void roundtrip(uih_stripe_encoder *e, uint32_t n, uint8_t **stripe, size_t *stripe_len) {
  const uint8_t *p;
  size_t len;
  uih_error err;
  if (uih_stripe_encode(e, in, 1, &p, &len, &err) != UIH_OK) abort();
  uint8_t *first = malloc(len);
  if (!first) abort();
  memcpy(first, p, len);
  if (uih_stripe_encode(e, in, 1, &p, &len, &err) != UIH_OK || memcmp(first, p, len) != 0) abort();
  same_events(first, len, n);
  *stripe = first;
  *stripe_len = len;
}

/* `stripe` (of `e`) written again like itself is the same bytes; written
 * like a directory of the input's making, the same events. */
static void like_roundtrip(uih_stripe_encoder *e, src *s, uint32_t n, const uint8_t *stripe, size_t stripe_len) {
  uih_stripe_column_info own[16], made[16];
  uih_stripe_info info;
  const uint8_t *p;
  size_t len;
  uih_error err;
  if (uih_stripe_read_columns(stripe, stripe_len, &info, own, 16, &err) != UIH_OK || info.ncolumns > 16) abort();
  if (uih_stripe_encode_like(e, in, 1, own, info.ncolumns, &p, &len, &err) != UIH_OK || len != stripe_len ||
      memcmp(p, stripe, len) != 0)
    abort();
  uint32_t nmade = 0;
  for (uint32_t c = 0; c < info.ncolumns; c++) {
    const uint64_t pick = take(s, 1);
    if (pick & 1) continue;
    made[nmade] = own[c];
    made[nmade].encoding = (pick & 0x80) ? (uint32_t)take(s, 2) & ((1u << UIH_ENC_COUNT) - 1) /* several */
                                         : 1u << ((pick >> 1) % UIH_ENC_COUNT);
    made[nmade].compression = (uih_compression)(UIH_COMPRESS_NONE + (pick >> 4) % 3);
    made[nmade].scaled = (int)((pick >> 6) & 1);
    nmade++;
  }
  if (uih_stripe_encode_like(e, in, 1, made, nmade, &p, &len, &err) != UIH_OK) abort();
  same_events(p, len, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!enc) {
    const uih_group *g = fuzz_stripe_group();
    uih_stripe_encoder_opts fo = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
    fo.fast = 1;
    uih_stripe_encoder_opts bo = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
    bo.no_checksum = 1;
    if (uih_stripe_encoder_create(NULL, &enc, NULL) != UIH_OK || uih_stripe_encoder_create(&fo, &fast, NULL) != UIH_OK ||
        uih_stripe_encoder_create(&bo, &bare, NULL) != UIH_OK || uih_stripe_encoder_create(NULL, &shared, NULL) != UIH_OK ||
        uih_stripe_decoder_create(&dec, NULL) != UIH_OK ||
        uih_batch_create(g, 4096, NULL, 0, &in, NULL) != UIH_OK ||
        uih_batch_create(g, 4096, NULL, 0, &out, NULL) != UIH_OK)
      abort();
    uih_stripe_encoder_set_context(shared, fuzz_stripe_context());
    uih_stripe_decoder_set_context(dec, fuzz_stripe_context());
  }
  src s = {data, size, 0};
  uint32_t n = 1 + (uint32_t)(take(&s, 2) % 4096);
  uih_batch_clear(in);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    if (uih_batch_append(in, &row, NULL) != UIH_OK) abort();
  }
  for (uint32_t c = 0; c < in->ncolumns; c++) {
    uih_column *col = &in->columns[c];
    int is_ts = col->trait == in->group->ts;
    uint8_t mode = (uint8_t)take(&s, 1);
    uint64_t value = take(&s, 8), step = take(&s, 2);
    /* Mode bit 2: every value a multiple of a common step (timestamps: of a day). */
    uint64_t unit = (mode & 0x04) ? (is_ts ? 86400 : (step | 2)) : 1;
    for (uint32_t i = 0; i < n; i++) {
      /* Mode bits: presence pattern, then how values move. */
      if (!is_ts && (mode & 3) == 1) continue;                     /* all absent */
      if (!is_ts && (mode & 3) == 2 && (i * 7919u + mode) % 5 == 0) continue;
      if (!is_ts && (mode & 3) == 3 && (i * 104729u + mode) % 17 != 0) continue;
      if (s.i < s.n && (mode & 0x10)) value = take(&s, (mode >> 5) + 1); /* input-driven */
      else if (mode & 0x08) value += step;                          /* ramps */
      uint64_t v = value * unit;
      if (uih_type_width(col->trait->type) == 4) v &= 0xffffffffu;
      if (col->trait->type == UIH_TYPE_FLAG) v &= 1;
      if (is_ts) v = (uint64_t)(int64_t)(i == 0 ? (int64_t)(value >> 2) : uih_column_i64(col)[i - 1] +
                                         (int64_t)((step & 0xfff) * unit));
      uih_column_set_bits(col, i, v);
    }
  }
  uint8_t *with, *without, *quick;
  size_t with_len, without_len, quick_len;
  roundtrip(enc, n, &with, &with_len);
  roundtrip(fast, n, &quick, &quick_len);
  roundtrip(bare, n, &without, &without_len);
  uint8_t *with_dicts;
  size_t with_dicts_len;
  roundtrip(shared, n, &with_dicts, &with_dicts_len);
  like_roundtrip(shared, &s, n, with_dicts, with_dicts_len);
  like_roundtrip(enc, &s, n, with, with_len);
  free(with_dicts);
  /* The stripe without its checksum is the one with it, less the checksum
   * and its flag (format 3: bit 4 of the first byte, the version below). */
  if (without_len + 4 != with_len || with[0] != 0x13 || without[0] != 0x03 ||
      memcmp(with + 1, without + 1, without_len - 1) != 0)
    abort();
  free(with);
  free(without);
  free(quick);
  return 0;
}
