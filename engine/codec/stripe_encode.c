/* Stripe writer: header, directory, column payloads, checksum. */
#include <stdlib.h>

#include "error_internal.h"
#include "stripe_internal.h"

int uih_stripe_encoder_create(const uih_stripe_encoder_opts *opts, uih_stripe_encoder **out,
                              uih_error *err) {
  UIH_RETURN_IF(out == NULL, err, UIH_ERR_INVALID_ARGUMENT, "stripe_encoder_create: NULL out");
  *out = NULL;
  uih_stripe_encoder_opts o = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
  if (opts) o = *opts;
  UIH_RETURN_IF(!(o.min_compression_gain >= 0.0 && o.min_compression_gain < 1.0), err,
                UIH_ERR_INVALID_ARGUMENT, "min_compression_gain %g is outside [0, 1)",
                o.min_compression_gain);
  UIH_RETURN_IF(!(o.min_coded_gain >= 0.0 && o.min_coded_gain < 1.0), err, UIH_ERR_INVALID_ARGUMENT,
                "min_coded_gain %g is outside [0, 1)", o.min_coded_gain);
  UIH_RETURN_IF(o.zstd_level < 1 || o.zstd_level > 19, err, UIH_ERR_INVALID_ARGUMENT,
                "zstd_level %d is outside [1, 19]", o.zstd_level);
  uih_stripe_encoder *e = calloc(1, sizeof *e);
  if (e) e->zstd = ZSTD_createCCtx();
  if (!e || !e->zstd) {
    uih_stripe_encoder_free(e);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_encoder_create: out of memory");
  }
  e->opts = o;
  *out = e;
  return UIH_OK;
}

void uih_stripe_encoder_free(uih_stripe_encoder *e) {
  if (!e) return;
  uih_wbuf_free(&e->out);
  uih_wbuf_free(&e->body);
  uih_wbuf_free(&e->payload);
  uih_wbuf_free(&e->cand);
  uih_wbuf_free(&e->best);
  uih_wbuf_free(&e->comp);
  uih_wbuf_free(&e->streams[0]);
  uih_wbuf_free(&e->streams[1]);
  free(e->vals);
  free(e->aux);
  free(e->aux2);
  free(e->scaled);
  free(e->ranks);
  ZSTD_freeCCtx(e->zstd);
  free(e);
}

void uih_stripe_encoder_set_context(uih_stripe_encoder *e, const uih_stripe_context *ctx) {
  if (e) e->ctx = ctx;
}

static int reserve(uih_stripe_encoder *e, size_t n, uih_error *err) {
  if (n <= e->cap) return UIH_OK;
  uint64_t *v = realloc(e->vals, n * sizeof *v);
  if (v) e->vals = v;
  uint64_t *a = v ? realloc(e->aux, n * sizeof *a) : NULL;
  if (a) e->aux = a;
  uint64_t *a2 = a ? realloc(e->aux2, n * sizeof *a2) : NULL;
  if (a2) e->aux2 = a2;
  uint64_t *sc = a2 ? realloc(e->scaled, n * sizeof *sc) : NULL;
  if (sc) e->scaled = sc;
  uint32_t *rk = sc ? realloc(e->ranks, n * sizeof *rk) : NULL;
  if (rk) e->ranks = rk;
  if (!rk) return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory");
  e->cap = n;
  return UIH_OK;
}

/* What the schema does not allow, refused before anything is written: the
 * stripe's schema version is one the group's schema has and every column's
 * trait exists in it; no more events than the group's stripes hold, but
 * for a burst (every event at one timestamp, up to UIH_STRIPE_EVENTS_MAX:
 * uih/stripe.h); every category code inside its vocabulary. */
static int check_batch(const uih_batch *b, uint32_t version, uih_error *err) {
  const uih_group *g = b->group;
  UIH_RETURN_IF(version == 0 || version > g->schema_version, err, UIH_ERR_INVALID_ARGUMENT,
                "stripe encode: schema version %u, the schema of group '%s' has versions 1..%u", version, g->name,
                g->schema_version);
  if (b->count > g->stripe_events) {
    const int64_t *ts = uih_batch_timestamps(b);
    UIH_RETURN_IF(b->count > UIH_STRIPE_EVENTS_MAX || !ts || ts[0] != ts[b->count - 1], err, UIH_ERR_OUT_OF_RANGE,
                  "stripe encode: %u events, group '%s' has stripes of at most %u (stripe_events) but for a "
                  "burst of one timestamp (at most %u events)",
                  b->count, g->name, g->stripe_events, UIH_STRIPE_EVENTS_MAX);
  }
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    const uih_column *col = &b->columns[c];
    const uih_trait *t = col->trait;
    UIH_RETURN_IF(t->added_in > version, err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: trait '%s' (%u) was added in schema version %u, after version %u", t->name,
                  t->id, t->added_in, version);
    UIH_RETURN_IF(t->dropped_in && t->dropped_in <= version, err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: trait '%s' (%u) was dropped in schema version %u; a version-%u stripe cannot "
                  "hold it",
                  t->name, t->id, t->dropped_in, version);
    if (t->type != UIH_TYPE_CATEGORY || t->ncategories == 0) continue;
    const uint32_t *codes = (const uint32_t *)col->values;
    for (uint32_t i = 0; i < b->count; i++)
      UIH_RETURN_IF(uih_column_has(col, i) && codes[i] >= t->ncategories, err, UIH_ERR_OUT_OF_RANGE,
                    "stripe encode: event %u: trait '%s' has category code %u, its vocabulary has %u (0..%u)", i,
                    t->name, codes[i], t->ncategories, t->ncategories - 1);
  }
  return UIH_OK;
}

/* Checks the timestamps and returns their range. */
static int check_ts(const uih_batch *b, int64_t *lo, int64_t *hi, uih_error *err) {
  const uih_column *ts = NULL;
  for (uint32_t c = 0; c < b->ncolumns; c++)
    if (b->columns[c].trait == b->group->ts) ts = &b->columns[c];
  UIH_RETURN_IF(ts == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "stripe encode: the batch has no column for the timestamp trait '%s'",
                b->group->ts->name);
  const int64_t *v = (const int64_t *)ts->values;
  for (uint32_t i = 0; i < b->count; i++) {
    UIH_RETURN_IF(!uih_column_has(ts, i), err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: event %u has no timestamp", i);
    UIH_RETURN_IF(i > 0 && v[i] < v[i - 1], err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: event %u (ts %lld) is earlier than event %u (ts %lld); "
                  "a stripe's events are in timestamp order", i, (long long)v[i], i - 1,
                  (long long)v[i - 1]);
  }
  *lo = v[0];
  *hi = v[b->count - 1];
  return UIH_OK;
}

int uih_stripe_encode(uih_stripe_encoder *e, const uih_batch *b, uint32_t schema_version,
                      const uint8_t **out, size_t *out_len, uih_error *err) {
  return uih_stripe_encode_like(e, b, schema_version, NULL, 0, out, out_len, err);
}

int uih_stripe_encode_like(uih_stripe_encoder *e, const uih_batch *b, uint32_t schema_version,
                           const uih_stripe_column_info *like, uint32_t nlike, const uint8_t **out, size_t *out_len,
                           uih_error *err) {
  UIH_RETURN_IF(!e || !b || !out || !out_len || (nlike && !like), err, UIH_ERR_INVALID_ARGUMENT,
                "stripe_encode: NULL argument");
  UIH_RETURN_IF(b->count == 0, err, UIH_ERR_INVALID_ARGUMENT, "stripe encode: empty batch");
  UIH_FORWARD(check_batch(b, schema_version, err));
  int64_t min_ts = 0, max_ts = 0;
  UIH_FORWARD(check_ts(b, &min_ts, &max_ts, err));
  UIH_FORWARD(reserve(e, b->count, err));

  /* Payloads first: the directory needs their lengths. Batch columns are in
   * ascending trait id order, as the directory must be. */
  uih_wbuf *o = &e->out;
  uih_wbuf_reset(o);
  uih_wbuf_reset(&e->body);
  const int checksum = !e->opts.no_checksum;
  e->group = b->group->id;
  uih_wbuf_u8(o, UIH_STRIPE_VERSION | (checksum ? UIH_STRIPE_FLAG_CHECKSUM : 0) << 4);
  uih_wbuf_varint(o, b->group->id);
  uih_wbuf_varint(o, uih_zigzag64(min_ts));
  uih_wbuf_varint(o, b->count);
  uih_wbuf_varint(o, b->ncolumns);
  uih_wbuf_varint(o, schema_version);
  uih_wbuf_varint(o, (uint64_t)max_ts - (uint64_t)min_ts);
  int prev_id = -1;
  uint32_t l = 0; /* like's entry of the column, if any: both ascend by trait id */
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    stripe_dir_entry de = {0};
    int is_ts = b->columns[c].trait == b->group->ts;
    const uint16_t id = b->columns[c].trait->id;
    while (l < nlike && like[l].trait_id < id) l++;
    const uih_stripe_column_info *lc = l < nlike && like[l].trait_id == id ? &like[l] : NULL;
    const size_t at = e->body.len;
    UIH_FORWARD(stripe_column_encode(e, &b->columns[c], b->count, is_ts, lc, &de, err));
    if (lc && lc->events && (uint64_t)de.length * lc->events * 8 > (uint64_t)lc->bytes * b->count * 9) {
      /* The kept encoding takes more than 9/8 of the bytes per event it
       * took: the values changed character, the column competes again. */
      e->body.len = at;
      de = (stripe_dir_entry){0};
      UIH_FORWARD(stripe_column_encode(e, &b->columns[c], b->count, is_ts, NULL, &de, err));
    }
    /* The id as a step from the previous one when the step fits 3 bits
     * (batch columns ascend by trait id: uih_batch_create sorts them). */
    int gap = de.trait_id - prev_id;
    UIH_RETURN_IF(gap <= 0, err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: column %u (trait %u) does not follow trait %d in ascending order", c,
                  de.trait_id, prev_id);
    unsigned step = gap <= STRIPE_DIR_STEP_MAX ? (unsigned)gap : 0;
    uih_wbuf_u8(o, stripe_dir_layout(&de));
    uih_wbuf_u8(o, (uint8_t)(stripe_dir_values(&de) | step << 5));
    if (step == 0) uih_wbuf_varint(o, de.trait_id);
    uih_wbuf_varint(o, de.length);
    prev_id = de.trait_id;
  }
  uih_wbuf_put(o, e->body.data, e->body.len);
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory");
  UIH_RETURN_IF(o->len > UINT32_MAX - UIH_STRIPE_CHECKSUM_SIZE, err, UIH_ERR_OUT_OF_RANGE,
                "stripe encode: stripe exceeds 4 GiB");
  if (checksum) uih_wbuf_u32(o, uih_checksum32(o->data, o->len));
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory");
  *out = o->data;
  *out_len = o->len;
  return UIH_OK;
}
