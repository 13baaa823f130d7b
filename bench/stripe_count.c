/* stripe_count: a fixed amount of stripe decoding, for instruction counts
 * (callgrind, perf stat) where stripe_bench's timed loops are useless.
 *
 *   build/release/bench/stripe_count MODE [--users N] [--reps R] [--full-stripes 1]
 *
 *   MODE  full      all traits of every stripe
 *         two       event_ts and item_id of every stripe
 *         ts        event_ts of every stripe
 *         last      all traits of the last 32 events of every stripe
 *         long      event_ts re-packed into full 65,536-event stripes (as
 *                   stripe_bench; needs --users 1600 or more)
 *         longlast  all traits re-packed into full 65,536-event stripes,
 *                   the last 256 events of each (same --users)
 *
 * --full-stripes 1 keeps only the stripes that hold the group's 256 events
 * (stripe_bench's second decode report). Same data as stripe_bench
 * (bench/stripe_bench.schema.json, group engagement, seed 1). Prints the
 * values decoded (events x traits); count only the decoding with
 *
 *   valgrind --tool=callgrind --toggle-collect='decode_all*' \
 *            build/release/bench/stripe_count long --users 2000
 *
 * and divide the total Ir by that number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_set.h"
#include "uih/uih.h"

#define LAST_N 32
#define LONG_LAST_N 256

static void die(const char *what, const uih_error *err) {
  fprintf(stderr, "stripe_count: %s: %s\n", what, err ? uih_error_message(err) : "failed");
  exit(1);
}

/* The measured part (callgrind --toggle-collect='decode_all*'): decodes every
 * stripe of `s` into `out` `reps` times, all of it or (last > 0) only its
 * last `last` events; returns the values decoded. */
__attribute__((noinline)) static uint64_t decode_all(uih_stripe_decoder *dec, const stripes *s,
                                                     unsigned reps, uint32_t last, uih_batch *out,
                                                     uint64_t *events) {
  uih_error err;
  uint64_t values = 0;
  for (unsigned r = 0; r < reps; r++)
    for (size_t i = 0; i < s->n; i++) {
      uint32_t begin = last && s->count[i] > last ? s->count[i] - last : 0;
      if (uih_stripe_decode(dec, s->data[i], s->len[i], begin, UIH_DECODE_TO_END, 0, out, &err) != UIH_OK)
        die("decode", &err);
      values += (uint64_t)out->count * out->ncolumns;
      *events += out->count;
    }
  return values;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stripe_count full|two|ts|last|long|longlast [--users N] [--reps R] [--full-stripes 1]\n");
    return 2;
  }
  const char *mode = argv[1];
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 2000;
  unsigned reps = 3;
  int full_stripes = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--users")) o.users = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--reps")) reps = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--full-stripes")) full_stripes = atoi(argv[i + 1]);
    else die("unknown option", NULL);
  }
  uih_error err = {0};
  uih_schema *schema;
  if (uih_schema_load(UIH_SOURCE_DIR "/bench/stripe_bench.schema.json", &schema, &err) != UIH_OK) die("schema", &err);
  const uih_group *g = uih_schema_group_by_name(schema, "engagement");
  if (!g) die("no group 'engagement'", NULL);
  const uih_trait *item = uih_group_trait_by_name(g, "item_id");
  const uint16_t two[] = {g->ts->id, item ? item->id : g->ts->id};
  uih_gen *gen = NULL;
  uih_batch *b = NULL, *out = NULL;
  uih_stripe_encoder *enc = NULL;
  uih_stripe_decoder *dec = NULL;
  if (uih_gen_create(g, &o, &gen, &err) || uih_batch_create(g, g->stripe_events, NULL, 0, &b, &err) ||
      uih_stripe_encoder_create(NULL, &enc, &err) || uih_stripe_decoder_create(&dec, &err))
    die("setup", &err);

  stripes s = {0};
  uint64_t user;
  for (;;) {
    if (uih_gen_next(gen, &user, b, &err) != UIH_OK) die("generate", &err);
    if (b->count == 0) break;
    const uint8_t *p;
    size_t len;
    if (uih_stripe_encode(enc, b, uih_schema_version(schema), &p, &len, &err) != UIH_OK) die("encode", &err);
    if (full_stripes && b->count < g->stripe_events) continue;
    if (stripes_add(&s, p, len, b->count) != 0) die("out of memory", NULL);
  }

  uint32_t last = 0;
  if (!strcmp(mode, "long") || !strcmp(mode, "longlast")) {
    /* Every event (long: its timestamp only) re-packed, as stripe_bench
     * does, into stripes of 65,536 events, timestamps shifted so each
     * stripe stays ordered like one busy user's history. */
    int all = !strcmp(mode, "longlast");
    const uint16_t *ids = all ? NULL : two;
    uint32_t nids = all ? 0 : 1;
    uih_batch *big = NULL, *src = NULL;
    /* The same group with the longest stripes (the encoder holds a group
     * to its stripe_events). */
    static uih_group long_group;
    long_group = *g;
    long_group.stripe_events = UIH_STRIPE_EVENTS_MAX;
    if (uih_batch_create(&long_group, UIH_STRIPE_EVENTS_MAX, ids, nids, &big, &err) ||
        uih_batch_create(&long_group, UIH_STRIPE_EVENTS_MAX, ids, nids, &out, &err) ||
        uih_batch_create(g, g->stripe_events, ids, nids, &src, &err))
      die("long stripes", &err);
    stripes longs = {0};
    uih_column *big_ts = uih_batch_ts_column(big);
    int64_t *tsv = uih_column_i64(big_ts);
    for (size_t i = 0; i < s.n; i++) {
      if (uih_stripe_decode(dec, s.data[i], s.len[i], 0, UIH_DECODE_TO_END, 0, src, &err))
        die("decode", &err);
      const int64_t *from = uih_column_i64(uih_batch_ts_column(src));
      for (uint32_t r = 0; r < src->count; r++) {
        if (uih_batch_copy_row(big, src, r, &err) != UIH_OK) die("copy", &err);
        uint32_t row = big->count - 1;
        int64_t prev = row ? tsv[row - 1] : from[0];
        int64_t step = r ? from[r] - from[r - 1] : 1000;
        uih_column_set_bits(big_ts, row, (uint64_t)(prev + (step > 0 ? step : 0)));
        if (big->count == big->capacity) { /* full stripes only: every decode does the same work */
          const uint8_t *p;
          size_t len;
          if (uih_stripe_encode(enc, big, uih_schema_version(schema), &p, &len, &err)) die("encode", &err);
          if (stripes_add(&longs, p, len, big->count) != 0) die("out of memory", NULL);
          uih_batch_clear(big);
        }
      }
    }
    if (longs.n == 0) die("too few events for one 65,536-event stripe: raise --users", NULL);
    uih_batch_free(big), uih_batch_free(src);
    stripes_free(&s);
    s = longs;
    if (all) last = LONG_LAST_N;
  } else if (!strcmp(mode, "full") || !strcmp(mode, "last")) {
    if (uih_batch_create(g, g->stripe_events, NULL, 0, &out, &err)) die("batch", &err);
    if (!strcmp(mode, "last")) last = LAST_N;
  } else if (!strcmp(mode, "two") || !strcmp(mode, "ts")) {
    if (uih_batch_create(g, g->stripe_events, two, !strcmp(mode, "two") ? 2 : 1, &out, &err)) die("batch", &err);
  } else {
    die("unknown mode", NULL);
  }

  uint64_t events = 0, values = decode_all(dec, &s, reps, last, out, &events);
  printf("%s: %zu stripes, %llu decodes, %llu events, %llu values decoded\n", mode, s.n,
         (unsigned long long)s.n * reps, (unsigned long long)events, (unsigned long long)values);

  stripes_free(&s);
  uih_batch_free(out), uih_batch_free(b);
  uih_stripe_encoder_free(enc), uih_stripe_decoder_free(dec), uih_gen_free(gen), uih_schema_free(schema);
  return 0;
}
