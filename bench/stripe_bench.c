/* stripe_bench: the stripe codec against row- and column-oriented baselines
 * on generated histories (uih/gen.h), all in one run.
 *
 *   build/release/bench/stripe_bench [--users N] [--seed S] [--shape nine|real]
 *                                    [--ids hashed|dense] [--dicts 1|0]
 *                                    [--coded-gain G] [--schema FILE --group NAME]
 *
 * Prints bytes per event (this codec; fixed-width rows compressed with
 * zstd-3 and with LZ4; each column raw then zstd-3 — all per stripe, the
 * unit a reader fetches — and the whole dataset's rows, sorted by user and
 * time, as one zstd -19 stream, which no reader of one user's window can
 * use), the same per column, decode throughput in values per second on
 * one core (full stripe, 2 of the traits, the last 32 events with the
 * value checksum UihTable verifies off and on; timestamps only; LZ4 rows decompressed and
 * turned into columns, the row format's full decode) and encode
 * throughput. Stripes are encoded as the loader stores them: without a
 * checksum of their own (UihTable has one per value). Shapes: `nine` (default) is bench/stripe_bench.schema.json,
 * the engagement group of examples/feed.schema.json with its float32 trait
 * `score` kept (that file drops it), so every trait type but int64 is
 * measured; `real` mimics public rating logs: bench/stripe_bench.real.
 * schema.json (5 traits: timestamp, Zipf item ids, a 1-5 rating, an item
 * category, a small helpfulness count), short histories (median ~18
 * events, p90 ~70) and timestamps of day granularity stored as seconds. */
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "entropy.h"
#include "stripe_set.h"
#include "uih/uih.h"

#define LAST_N 32

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const uih_error *err) {
  fprintf(stderr, "stripe_bench: %s: %s\n", what, err ? uih_error_message(err) : "failed");
  exit(1);
}

/* Serializes rows [0, count) of `b` as fixed-width little-endian structs. */
/* Counts column c's values for the entropy bound: the timestamp column as
 * deltas from the event before in the stripe (the first is in the stripe's
 * fixed part), other columns as values, "absent" being a value of its own. */
static void count_symbols(const uih_batch *b, uint32_t c, entropy_counter *e) {
  const uih_column *col = &b->columns[c];
  int is_ts = col->trait == b->group->ts;
  for (uint32_t r = is_ts ? 1 : 0; r < b->count; r++) {
    int rc = !uih_column_has(col, r)
                 ? (entropy_add_absent(e), 0)
                 : entropy_add(e, uih_column_get_bits(col, r) - (is_ts ? uih_column_get_bits(col, r - 1) : 0));
    if (rc != 0) die("out of memory", NULL);
  }
}

static size_t rows_of(const uih_batch *b, uint8_t *out) {
  size_t o = 0;
  for (uint32_t r = 0; r < b->count; r++)
    for (uint32_t c = 0; c < b->ncolumns; c++) {
      size_t w = uih_type_width(b->columns[c].trait->type);
      uint64_t v = uih_column_get_bits(&b->columns[c], r);
      memcpy(out + o, &v, w);
      o += w;
    }
  return o;
}

/* Decodes every stripe of `s` into `b` (all events, or the last LAST_N
 * when last_n) for at least `min_s` seconds, three times; returns the best
 * rate in decoded values (events x columns) per second. Best of three keeps
 * a busy neighbour on the 2-core machine from deciding the number. */
static size_t checksum_ones; /* keeps the value checksums computed */

static double decode_rate(uih_stripe_decoder *dec, const stripes *s, uih_batch *b, int last_n,
                          unsigned flags, double min_s) {
  double best = 0;
  uih_error err;
  for (int trial = 0; trial < 3; trial++) {
    uint64_t values = 0;
    double start = now(), elapsed;
    do {
      for (size_t i = 0; i < s->n; i++) {
        uint32_t begin = last_n && s->count[i] > LAST_N ? s->count[i] - LAST_N : 0;
        /* Stripes as the loader stores them have no checksum of their own:
         * verifying is the check UihTable makes of every value it reads. */
        if ((flags & UIH_DECODE_VERIFY_CHECKSUM) && uih_table_value_checksum(s->data[i], s->len[i]) == 1)
          checksum_ones++;
        if (uih_stripe_decode(dec, s->data[i], s->len[i], begin, UIH_DECODE_TO_END, flags, b, &err) != UIH_OK)
          die("decode", &err);
        values += (uint64_t)b->count * b->ncolumns;
      }
      elapsed = now() - start;
    } while (elapsed < min_s);
    double rate = (double)values / elapsed;
    best = rate > best ? rate : best;
  }
  return best;
}

/* LZ4 rows: every stripe's rows decompressed and scattered into per-column
 * arrays (what a columnar consumer of rows must do), for at least `min_s`
 * seconds, best of three; values (events x columns) per second. */
static double lz4_rows_rate(const stripes *z, const uih_batch *shape, size_t row_width, double min_s) {
  uint8_t *rows = malloc((size_t)shape->capacity * row_width);
  if (!rows) die("out of memory", NULL);
  uih_batch *out = NULL;
  uih_error err;
  if (uih_batch_create(shape->group, shape->capacity, NULL, 0, &out, &err) != UIH_OK) die("batch", &err);
  double best = 0;
  for (int trial = 0; trial < 3; trial++) {
    uint64_t values = 0;
    double start = now(), elapsed;
    do {
      for (size_t i = 0; i < z->n; i++) {
        const int raw = (int)((size_t)z->count[i] * row_width);
        if (LZ4_decompress_safe((const char *)z->data[i], (char *)rows, (int)z->len[i], raw) != raw)
          die("lz4 rows", NULL);
        for (uint32_t c = 0, at = 0; c < out->ncolumns; c++) {
          const size_t w = uih_type_width(out->columns[c].trait->type);
          uint8_t *dst = out->columns[c].values;
          for (uint32_t r = 0; r < z->count[i]; r++) memcpy(dst + r * w, rows + r * row_width + at, w);
          at += (uint32_t)w;
        }
        values += (uint64_t)z->count[i] * out->ncolumns;
      }
      elapsed = now() - start;
    } while (elapsed < min_s);
    double rate = (double)values / elapsed;
    best = rate > best ? rate : best;
  }
  uih_batch_free(out);
  free(rows);
  return best;
}

static void decode_report(const char *title, uih_stripe_decoder *dec, const stripes *s, uih_batch *all,
                          uih_batch *two, uih_batch *ts_only) {
  const unsigned verify = UIH_DECODE_VERIFY_CHECKSUM;
  double full = decode_rate(dec, s, all, 0, 0, 0.4), full_v = decode_rate(dec, s, all, 0, verify, 0.4);
  double sel = decode_rate(dec, s, two, 0, 0, 0.4), sel_v = decode_rate(dec, s, two, 0, verify, 0.4);
  double last = decode_rate(dec, s, all, 1, 0, 0.4), last_v = decode_rate(dec, s, all, 1, verify, 0.4);
  double tsr = decode_rate(dec, s, ts_only, 0, 0, 0.4);
  double full_ev = full / all->ncolumns, sel_ev = sel / 2, sel_v_ev = sel_v / 2;
  printf("\ndecode, %s: values per second on one core (values = events x traits decoded)\n", title);
  printf("  %-40s %8.1f M values/s  (%.1f M events/s)\n", "full stripe, checksum off", full / 1e6, full_ev / 1e6);
  printf("  %-40s %8.1f M values/s\n", "full stripe, checksum verified", full_v / 1e6);
  printf("  %-40s %8.1f M values/s  (%.1f M events/s, %.2fx full per event)\n", "2 of the traits (ts, item_id)",
         sel / 1e6, sel_ev / 1e6, sel_ev / full_ev);
  printf("  %-40s %8.1f M values/s  (%.1f M events/s, %.2fx full verified per event)\n",
         "2 of the traits, checksum verified", sel_v / 1e6, sel_v_ev / 1e6, sel_v_ev / (full_v / all->ncolumns));
  printf("  %-40s %8.1f M values/s\n", "last 32 events of each stripe", last / 1e6);
  printf("  %-40s %8.1f M values/s\n", "last 32 events, checksum verified", last_v / 1e6);
  printf("  %-40s %8.1f M values/s\n", "timestamps only (delta + unpack)", tsr / 1e6);
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* What a shape changes in the generated events: timestamps kept as the
 * day in seconds, item ids renumbered densely (their rank among the
 * distinct ids, as public logs number their items: `--ids dense`). */
typedef struct shape_fix {
  int day_granular;
  const uint64_t *ids; /* sorted distinct item ids, or NULL */
  size_t nids;
} shape_fix;

static void apply_fix(const shape_fix *f, uih_batch *b) {
  const int ts = uih_batch_column_index(b, b->group->ts->id);
  const uih_trait *it = uih_group_trait_by_name(b->group, "item_id");
  const int item = it ? uih_batch_column_index(b, it->id) : -1;
  for (uint32_t r = 0; r < b->count; r++) {
    if (f->day_granular) {
      const int64_t ms = (int64_t)uih_column_get_bits(&b->columns[ts], r);
      uih_column_set_bits(&b->columns[ts], r, (uint64_t)(ms / 86400000 * 86400));
    }
    if (f->ids && item >= 0 && uih_column_has(&b->columns[item], r)) {
      const uint64_t v = uih_column_get_bits(&b->columns[item], r);
      size_t lo = 0, hi = f->nids;
      while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (f->ids[mid] <= v) lo = mid;
        else hi = mid;
      }
      uih_column_set_bits(&b->columns[item], r, lo);
    }
  }
}

static int cmp_u64(const void *a, const void *b);

/* Every item id of the dataset, sorted and distinct. */
static uint64_t *item_ids(const uih_group *g, const uih_gen_opts *o, size_t *n) {
  uih_error err = {0};
  uih_gen *gen = NULL;
  uih_batch *b = NULL;
  if (uih_gen_create(g, o, &gen, &err) || uih_batch_create(g, g->stripe_events, NULL, 0, &b, &err)) die("ids", &err);
  const uih_trait *it = uih_group_trait_by_name(g, "item_id");
  if (!it) die("--ids dense: the group has no item_id trait", NULL);
  const int item = uih_batch_column_index(b, it->id);
  uint64_t *ids = NULL, user;
  size_t k = 0, cap = 0;
  for (;;) {
    if (uih_gen_next(gen, &user, b, &err) != UIH_OK) die("generate", &err);
    if (b->count == 0) break;
    for (uint32_t r = 0; r < b->count; r++) {
      if (!uih_column_has(&b->columns[item], r)) continue;
      if (k == cap && !(ids = realloc(ids, (cap = cap ? 2 * cap : 4096) * sizeof *ids))) die("out of memory", NULL);
      ids[k++] = uih_column_get_bits(&b->columns[item], r);
    }
  }
  qsort(ids, k, sizeof *ids, cmp_u64);
  size_t d = 0;
  for (size_t i = 0; i < k; i++)
    if (d == 0 || ids[d - 1] != ids[i]) ids[d++] = ids[i];
  *n = d;
  uih_batch_free(b);
  uih_gen_free(gen);
  return ids;
}

/* What the loader does for a generation: one pass over all the data
 * counting each shareable column's values (id, int64, uint32, category),
 * then a value dictionary per column of the values seen at least twice
 * (at most 2^20). Returns the context; *dict_bytes gets their serialized
 * size, which the density figures include. */
static uih_stripe_context *build_dicts(const uih_group *g, const uih_gen_opts *o, const shape_fix *fix,
                                       size_t *dict_bytes) {
  uih_error err = {0};
  uih_gen *gen = NULL;
  uih_batch *b = NULL;
  uih_stripe_context *ctx = NULL;
  if (uih_gen_create(g, o, &gen, &err) || uih_batch_create(g, g->stripe_events, NULL, 0, &b, &err) ||
      uih_stripe_context_create(&ctx, &err))
    die("dictionaries", &err);
  uint64_t **vals = calloc(b->ncolumns, sizeof *vals);
  size_t *n = calloc(b->ncolumns, sizeof *n), *cap = calloc(b->ncolumns, sizeof *cap);
  if (!vals || !n || !cap) die("out of memory", NULL);
  uint64_t user;
  for (;;) {
    if (uih_gen_next(gen, &user, b, &err) != UIH_OK) die("generate", &err);
    if (b->count == 0) break;
    apply_fix(fix, b);
    for (uint32_t c = 0; c < b->ncolumns; c++) {
      if (!(uih_encodings_for_type(b->columns[c].trait->type) & UIH_ENC_SHARED)) continue;
      for (uint32_t r = 0; r < b->count; r++) {
        if (!uih_column_has(&b->columns[c], r)) continue;
        if (n[c] == cap[c]) {
          cap[c] = cap[c] ? 2 * cap[c] : 4096;
          vals[c] = realloc(vals[c], cap[c] * sizeof **vals);
          if (!vals[c]) die("out of memory", NULL);
        }
        vals[c][n[c]++] = uih_column_get_bits(&b->columns[c], r);
      }
    }
  }
  *dict_bytes = 0;
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    if (!n[c]) continue;
    qsort(vals[c], n[c], sizeof **vals, cmp_u64);
    uint64_t *counts = malloc(n[c] * sizeof *counts);
    if (!counts) die("out of memory", NULL);
    size_t k = 0;
    for (size_t i = 0; i < n[c]; i++) {
      if (k && vals[c][k - 1] == vals[c][i]) {
        counts[k - 1]++;
      } else {
        vals[c][k] = vals[c][i];
        counts[k++] = 1;
      }
    }
    uih_value_dict *d = NULL;
    const uih_trait *t = b->columns[c].trait;
    int rc = uih_value_dict_build(g->id, t->id, t->type, vals[c], counts, k, 2, 1u << 20, &d, &err);
    if (rc == UIH_ERR_NOT_FOUND) { /* nothing repeats */
      free(counts);
      continue;
    }
    if (rc != UIH_OK) die("value dictionary", &err);
    /* Kept as the loader keeps it: if it is likely to pay (values sorted
     * above: their range is the last minus the first, int64 as unsigned
     * bits here, which only the nine-trait shape's none has). */
    uint64_t hits = 0; /* the entries' counts, each looked up among the sorted distinct values */
    for (uint32_t r = 0; r < uih_value_dict_entries(d); r++) {
      const uint64_t v = uih_value_dict_value(d, r);
      size_t lo = 0, hi = k;
      while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (vals[c][mid] <= v) lo = mid;
        else hi = mid;
      }
      hits += counts[lo];
    }
    free(counts);
    if (!uih_value_dict_pays(d, hits, n[c], vals[c][k - 1] - vals[c][0])) {
      printf("value dictionary of %-14s declined: it would not pay (%u entries)\n", t->name, uih_value_dict_entries(d));
      uih_value_dict_free(d);
      continue;
    }
    const uint8_t *p;
    size_t len;
    uih_value_dict_bytes(d, &p, &len);
    *dict_bytes += len;
    printf("value dictionary of %-14s %8u entries, %9zu bytes\n", t->name, uih_value_dict_entries(d), len);
    if (uih_stripe_context_add(ctx, d, &err) != UIH_OK) die("context", &err);
  }
  for (uint32_t c = 0; c < b->ncolumns; c++) free(vals[c]);
  free(vals), free(n), free(cap);
  uih_batch_free(b);
  uih_gen_free(gen);
  return ctx;
}

int main(int argc, char **argv) {
  const char *schema_path = UIH_SOURCE_DIR "/bench/stripe_bench.schema.json", *group_name = "engagement";
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  o.users = 20000;
  int day_granular = 0, use_dicts = 1, dense_ids = 0;
  uih_stripe_encoder_opts stored = UIH_STRIPE_ENCODER_OPTS_DEFAULT; /* as the loader writes them */
  stored.no_checksum = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--users")) o.users = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--seed")) o.seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--dicts")) use_dicts = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--coded-gain")) stored.min_coded_gain = strtod(argv[i + 1], NULL);
    else if (!strcmp(argv[i], "--ids") && !strcmp(argv[i + 1], "dense")) dense_ids = 1;
    else if (!strcmp(argv[i], "--ids") && !strcmp(argv[i + 1], "hashed")) dense_ids = 0;
    else if (!strcmp(argv[i], "--schema")) schema_path = argv[i + 1];
    else if (!strcmp(argv[i], "--group")) group_name = argv[i + 1];
    else if (!strcmp(argv[i], "--shape") && !strcmp(argv[i + 1], "real")) {
      schema_path = UIH_SOURCE_DIR "/bench/stripe_bench.real.schema.json";
      group_name = "ratings";
      day_granular = 1;
      o.watch_median = 1.5; /* helpfulness: mostly 0-3 votes */
      o.watch_sigma = 1.2;
    } else if (!strcmp(argv[i], "--shape") && !strcmp(argv[i + 1], "nine")) {
    } else {
      fprintf(stderr, "usage: stripe_bench [--users N] [--seed S] [--shape nine|real] [--ids hashed|dense] [--dicts 1|0]\n"
                      "                    [--coded-gain G] [--schema FILE --group NAME]\n");
      return 2;
    }
  }
  uih_error err = {0};
  uih_schema *schema;
  if (uih_schema_load(schema_path, &schema, &err) != UIH_OK) die("schema", &err);
  const uih_group *g = uih_schema_group_by_name(schema, group_name);
  if (!g) die("no such group", NULL);
  uih_gen *gen = NULL;
  uih_batch *b = NULL;
  uih_stripe_encoder *enc = NULL;
  uih_stripe_decoder *dec = NULL;
  uih_stripe_encoder *alone = NULL; /* the same stripes without the dictionaries */
  if (uih_gen_create(g, &o, &gen, &err) || uih_batch_create(g, g->stripe_events, NULL, 0, &b, &err) ||
      uih_stripe_encoder_create(&stored, &enc, &err) || uih_stripe_encoder_create(&stored, &alone, &err) ||
      uih_stripe_decoder_create(&dec, &err))
    die("setup", &err);
  shape_fix fix = {day_granular, NULL, 0};
  uint64_t *ids = dense_ids ? item_ids(g, &o, &fix.nids) : NULL;
  fix.ids = ids;
  size_t dict_bytes = 0;
  uih_stripe_context *ctx = use_dicts ? build_dicts(g, &o, &fix, &dict_bytes) : NULL;
  uih_stripe_encoder_set_context(enc, ctx);
  uih_stripe_decoder_set_context(dec, ctx);

  uint32_t ncols = b->ncolumns;
  size_t row_width = 0;
  for (uint32_t c = 0; c < ncols; c++) row_width += uih_type_width(b->columns[c].trait->type);
  uint8_t *rows = malloc((size_t)g->stripe_events * row_width);
  size_t zcap = ZSTD_compressBound((size_t)g->stripe_events * row_width);
  uint8_t *z = malloc(zcap);
  uint64_t *col_codec = calloc(ncols, sizeof *col_codec), *col_zstd = calloc(ncols, sizeof *col_zstd);
  uint32_t *enc_seen = calloc(ncols, sizeof *enc_seen);
  /* item_id's bound for self-contained stripes (entropy.h), per stripe */
  const uih_trait *item_trait = uih_group_trait_by_name(g, "item_id");
  int item_col = item_trait ? uih_batch_column_index(b, item_trait->id) : -1;
  uint64_t *item_vals = malloc((size_t)g->stripe_events * sizeof *item_vals);
  double item_self_bits = 0;
  unsigned id_bits = 40; /* the item ids' universe: 2^40 hashed, the catalog dense */
  while (ids && id_bits > 1 && (1ull << (id_bits - 1)) >= fix.nids) id_bits--;
  entropy_counter *col_entropy = calloc(ncols, sizeof *col_entropy);
  ZSTD_CCtx *zc = ZSTD_createCCtx();
  if (!rows || !z || !col_codec || !col_zstd || !enc_seen || !col_entropy || !zc || !item_vals)
    die("out of memory", NULL);

  /* Generate, encode (timed), and compress the baselines. */
  stripes s = {0}, lz4_rows = {0};
  uint64_t events = 0, codec_bytes = 0, alone_bytes = 0, row_zstd = 0, row_lz4 = 0, colz_bytes = 0;
  uint8_t *all_rows = NULL; /* every row, in user and time order, for the whole-dataset stream */
  size_t all_len = 0, all_cap = 0;
  double encode_s = 0;
  uint64_t user;
  for (;;) {
    if (uih_gen_next(gen, &user, b, &err) != UIH_OK) die("generate", &err);
    if (b->count == 0) break;
    apply_fix(&fix, b);
    const uint8_t *p;
    size_t len;
    double t0 = now();
    if (uih_stripe_encode(enc, b, uih_schema_version(schema), &p, &len, &err) != UIH_OK) die("encode", &err);
    encode_s += now() - t0;
    if (stripes_add(&s, p, len, b->count) != 0) die("out of memory", NULL);
    const uint8_t *ap;
    size_t alen;
    if (uih_stripe_encode(alone, b, uih_schema_version(schema), &ap, &alen, &err) != UIH_OK) die("encode", &err);
    alone_bytes += alen;
    events += b->count;
    codec_bytes += len;
    for (uint32_t c = 0; c < ncols; c++) {
      uih_stripe_column_info ci;
      if (uih_stripe_column_at(p, len, c, &ci, &err) != UIH_OK) die("column info", &err);
      col_codec[c] += ci.bytes;
      enc_seen[c] |= ci.encoding;
      size_t raw = (size_t)b->count * uih_type_width(b->columns[c].trait->type);
      size_t zl = ZSTD_compressCCtx(zc, z, zcap, b->columns[c].values, raw, 3);
      col_zstd[c] += zl;
      colz_bytes += zl;
      count_symbols(b, c, &col_entropy[c]);
    }
    if (item_col >= 0) {
      size_t k = 0;
      for (uint32_t r = 0; r < b->count; r++)
        if (uih_column_has(&b->columns[item_col], r)) item_vals[k++] = uih_column_get_bits(&b->columns[item_col], r);
      item_self_bits += entropy_self_contained_bits(item_vals, k, id_bits);
    }
    size_t rl = rows_of(b, rows);
    row_zstd += ZSTD_compressCCtx(zc, z, zcap, rows, rl, 3);
    const int l4 = LZ4_compress_default((const char *)rows, (char *)z, (int)rl, (int)zcap);
    row_lz4 += (uint64_t)l4;
    if (l4 <= 0 || stripes_add(&lz4_rows, z, (size_t)l4, b->count) != 0) die("lz4 rows", NULL);
    if (all_len + rl > all_cap) {
      all_cap = 2 * (all_len + rl);
      uint8_t *grown = realloc(all_rows, all_cap);
      if (!grown) die("out of memory", NULL);
      all_rows = grown;
    }
    memcpy(all_rows + all_len, rows, rl);
    all_len += rl;
  }
  /* The whole dataset as one zstd -19 stream. */
  size_t whole_cap = ZSTD_compressBound(all_len);
  uint8_t *whole = malloc(whole_cap);
  if (!whole) die("out of memory", NULL);
  double t19 = now();
  size_t whole_len = ZSTD_compress(whole, whole_cap, all_rows, all_len, 19);
  t19 = now() - t19;
  if (ZSTD_isError(whole_len)) die("zstd -19", NULL);
  free(whole), free(all_rows);
  double ev = (double)events;
  printf("data: %llu events of %llu users, group '%s', %u traits, %zu stripes of <= %u events\n\n",
         (unsigned long long)events, (unsigned long long)o.users, g->name, ncols, s.n, g->stripe_events);
  printf("bytes per event (per stripe, as stored)\n");
  printf("  %-36s %8.2f   (stripes %.2f + value dictionaries %.2f)\n", "uih stripe codec",
         (double)(codec_bytes + dict_bytes) / ev, (double)codec_bytes / ev, (double)dict_bytes / ev);
  printf("  %-36s %8.2f   (no dictionaries: %.2fx the bytes)\n", "uih stripe codec, stripes alone",
         (double)alone_bytes / ev, (double)alone_bytes / (double)(codec_bytes + dict_bytes));
  const uint64_t stripe_bytes = codec_bytes;
  codec_bytes += dict_bytes; /* the comparisons below count the dictionaries */
  printf("  %-36s %8.2f   codec is %.2fx smaller\n", "rows (fixed-width) + zstd-3", (double)row_zstd / ev,
         (double)row_zstd / (double)codec_bytes);
  printf("  %-36s %8.2f   codec is %.2fx smaller\n", "rows (fixed-width) + lz4", (double)row_lz4 / ev,
         (double)row_lz4 / (double)codec_bytes);
  printf("  %-36s %8.2f   codec is %.2fx smaller\n", "each column raw + zstd-3", (double)colz_bytes / ev,
         (double)colz_bytes / (double)codec_bytes);
  printf("  %-36s %8.2f   codec is %.2fx smaller (one stream, %.1f s to compress: not randomly readable)\n",
         "whole dataset's rows + zstd -19", (double)whole_len / ev, (double)whole_len / (double)codec_bytes, t19);
  printf("  %-36s %8.2f\n", "rows uncompressed", (double)row_width);
  printf("\nper column: bytes per event (encodings chosen)\n");
  for (uint32_t c = 0; c < ncols; c++) {
    char encs[96] = "";
    size_t n = 0;
    for (uint32_t e = 1; e < (1u << UIH_ENC_COUNT); e <<= 1)
      if (enc_seen[c] & e) n += (size_t)snprintf(encs + n, sizeof encs - n, "%s%s", n ? "," : "", uih_encoding_name(e));
    printf("  %-16s %-9s codec %7.3f   raw+zstd %7.3f   (%s)\n", b->columns[c].trait->name,
           uih_type_name(b->columns[c].trait->type), (double)col_codec[c] / ev, (double)col_zstd[c] / ev, encs);
  }
  /* How far a shared model could go: see entropy.h. */
  printf("\nper column: bytes per event, codec vs order-0 entropy with one model for all stripes\n");
  double payload = 0, bound = 0;
  for (uint32_t c = 0; c < ncols; c++) {
    double h = entropy_bits(&col_entropy[c]) * (double)col_entropy[c].total / 8 / ev;
    printf("  %-16s codec %7.3f   entropy %7.3f   (%zu distinct%s)\n", b->columns[c].trait->name,
           (double)col_codec[c] / ev, h, col_entropy[c].used + (col_entropy[c].absent ? 1 : 0),
           b->columns[c].trait == g->ts ? " deltas" : " values");
    payload += (double)col_codec[c] / ev;
    bound += h;
  }
  printf("  %-16s codec %7.3f   entropy %7.3f\n", "all columns", payload, bound);
  printf("  %-16s codec %7.3f   (header and directory)\n", "fixed per stripe", (double)stripe_bytes / ev - payload);
  printf("  %-16s codec %7.3f   (each entry once for all stripes)\n", "dictionaries", (double)dict_bytes / ev);
  if (item_col >= 0) {
    /* What a stripe that shares nothing must pay for item_id (ids as
     * uniform 40-bit values: see entropy.h), next to the shared-model
     * bounds of the other columns (generous) and the fixed part. */
    const entropy_counter *ie = &col_entropy[item_col];
    double self = item_self_bits / 8 / ev, all_self = bound - entropy_bits(ie) * (double)ie->total / 8 / ev + self;
    printf("  %-16s self-contained %7.3f (per stripe log2 C(2^%u, d) + n H0); all columns %.3f, + fixed %.2f\n",
           "item_id", self, id_bits, all_self, all_self + (double)stripe_bytes / ev - payload);
    /* The bound of any coder, one shared model included: the columns'
     * order-0 entropies (the generator draws traits independently) and
     * the set of distinct item ids named once (a dictionary or the
     * stream's own first mentions cannot do it in fewer bits). */
    const double universe = ids ? (double)fix.nids : ldexp(1.0, (int)id_bits);
    double set = 0;
    for (size_t d = 0; d < ie->used; d++) set += log2((universe - (double)d) / (double)(d + 1));
    printf("  %-16s bound   %7.3f (all columns' entropy + log2 C(%s, %zu) naming the distinct item ids once), "
           "+ fixed %.2f\n", "any coder", bound + set / 8 / ev, ids ? "catalog" : "2^40", ie->used,
           bound + set / 8 / ev + (double)stripe_bytes / ev - payload);
  }
  printf("  2x smaller than rows + zstd-3 would be %.2f bytes per event\n", (double)row_zstd / ev / 2);

  /* Decoding: one core, values decoded per second. */
  const uint16_t two[] = {g->ts->id, uih_group_trait_by_name(g, "item_id") ? uih_group_trait_by_name(g, "item_id")->id
                                                                          : b->columns[1].trait->id};
  uih_batch *proj = NULL, *ts_only = NULL;
  if (uih_batch_create(g, g->stripe_events, two, 2, &proj, &err) ||
      uih_batch_create(g, g->stripe_events, two, 1, &ts_only, &err))
    die("projection", &err);
  decode_report("all stripes", dec, &s, b, proj, ts_only);
  {
    size_t row_width_all = 0;
    for (uint32_t c = 0; c < b->ncolumns; c++) row_width_all += uih_type_width(b->columns[c].trait->type);
    const double lz4 = lz4_rows_rate(&lz4_rows, b, row_width_all, 0.4);
    const double full = decode_rate(dec, &s, b, 0, 0, 0.4);
    printf("  %-40s %8.1f M values/s  (the codec's full decode is %.2fx it)\n", "lz4 rows -> columns, all stripes",
           lz4 / 1e6, full / lz4);
  }
  stripes full_only = {0};
  for (size_t i = 0; i < s.n; i++)
    if (s.count[i] == g->stripe_events && stripes_add(&full_only, s.data[i], s.len[i], s.count[i]) != 0)
      die("out of memory", NULL);
  if (full_only.n) {
    char title[96];
    snprintf(title, sizeof title, "the %zu stripes holding %u events", full_only.n, g->stripe_events);
    decode_report(title, dec, &full_only, b, proj, ts_only);
  }
  /* Long stripes: every timestamp of the generated data in stripes of the
   * format's maximum, 65,536 events, so the per-stripe costs vanish and the
   * delta + bit-unpacking loop is what is measured. */
  {
    /* The same group with the longest stripes (the encoder holds a group to
     * its stripe_events). */
    uih_group long_group = *g;
    long_group.stripe_events = UIH_STRIPE_EVENTS_MAX;
    const uint16_t ts_id[] = {g->ts->id};
    uih_batch *big = NULL, *big_out = NULL;
    if (uih_batch_create(&long_group, UIH_STRIPE_EVENTS_MAX, ts_id, 1, &big, &err) ||
        uih_batch_create(&long_group, UIH_STRIPE_EVENTS_MAX, ts_id, 1, &big_out, &err))
      die("long stripes", &err);
    stripes longs = {0};
    int64_t *tsv = uih_column_i64(&big->columns[0]);
    for (size_t i = 0; i < s.n; i++) {
      /* Re-decode each stripe's timestamps and append them, shifted so the
       * long stripe stays ordered like one busy user's history. */
      if (uih_stripe_decode(dec, s.data[i], s.len[i], 0, UIH_DECODE_TO_END, 0, ts_only, &err)) die("decode", &err);
      const int64_t *src = uih_column_i64(&ts_only->columns[0]);
      for (uint32_t r = 0; r < ts_only->count; r++) {
        uint32_t row;
        if (big->count == big->capacity) {
          const uint8_t *p;
          size_t len;
          if (uih_stripe_encode(enc, big, 1, &p, &len, &err)) die("encode", &err);
          if (stripes_add(&longs, p, len, big->count) != 0) die("out of memory", NULL);
          uih_batch_clear(big);
        }
        uih_batch_append(big, &row, NULL);
        int64_t prev = row ? tsv[row - 1] : src[0];
        int64_t step = r ? src[r] - src[r - 1] : 1000;
        uih_column_set_bits(&big->columns[0], row, (uint64_t)(prev + (step > 0 ? step : 0)));
      }
    }
    double rate = decode_rate(dec, &longs, big_out, 0, 0, 0.4);
    printf("\ndecode of timestamps in %zu stripes of %u events (delta + bit-unpacking, per-stripe costs amortized)\n"
           "  %-40s %8.1f M values/s\n", longs.n, UIH_STRIPE_EVENTS_MAX, "timestamps only", rate / 1e6);
    stripes_free(&longs);
    uih_batch_free(big), uih_batch_free(big_out);
  }

  printf("\nencode: %.2f M events/s on one core (all encodings tried per column)\n", ev / encode_s / 1e6);

  stripes_free(&full_only);
  stripes_free(&s);
  stripes_free(&lz4_rows);
  free(rows), free(z);
  free(col_codec), free(col_zstd), free(enc_seen), free(item_vals);
  for (uint32_t c = 0; c < ncols; c++) entropy_free(&col_entropy[c]);
  free(col_entropy);
  ZSTD_freeCCtx(zc);
  uih_batch_free(proj), uih_batch_free(ts_only), uih_batch_free(b);
  uih_stripe_encoder_free(enc), uih_stripe_decoder_free(dec), uih_gen_free(gen), uih_schema_free(schema);
  uih_stripe_encoder_free(alone);
  uih_stripe_context_free(ctx);
  free(ids);
  return 0;
}
