/* Building a new generation's value dictionaries (dicts.h). */
#include "dicts.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "error_internal.h"
#include "rows.h"
#include "uih/key.h"

/* One trait's values being counted. */
typedef struct counter {
  uint16_t group;
  const uih_trait *trait;
  ld_row_layout layout;
  ld_counts counts;
  uint64_t lo, hi; /* the range of the values counted (in the type's order) */
} counter;

static int counter_add(counter *c, uint64_t v) {
  /* the range in the type's order: int64 compared as signed (sign-flipped) */
  const uint64_t o = c->trait->type == UIH_TYPE_INT64 ? v ^ UINT64_C(0x8000000000000000) : v;
  if (c->counts.total == 0 || o < c->lo) c->lo = o;
  if (c->counts.total == 0 || o > c->hi) c->hi = o;
  return ld_counts_add(&c->counts, v);
}

static int has_dict(const uih_stripe_context *ctx, uint16_t group, uint16_t trait) {
  for (size_t i = 0; i < uih_stripe_context_count(ctx); i++) {
    const uih_value_dict *d = uih_stripe_context_at(ctx, i);
    if (uih_value_dict_group(d) == group && uih_value_dict_trait(d) == trait) return 1;
  }
  return 0;
}

/* The deletion trait's row layout, made once per (group, trait). */
typedef struct del_layout {
  const uih_group *group;
  const uih_trait *trait;
  ld_row_layout layout;
} del_layout;

/* 1 when the load drops row `rec`'s event: before the horizon or deleted. */
static int row_dropped(const ld_dicts_in *in, const uint8_t *rec, uint32_t len, del_layout *dl) {
  if (ld_row_ts(rec) < in->horizon) return 1;
  if (!in->deletes) return 0;
  const uint64_t user = ld_row_user(rec);
  if (ld_deletes_user(in->deletes, user)) return 1;
  const uih_group *g = uih_schema_group_by_id(in->schema, ld_row_group(rec));
  const uih_trait *t = g ? ld_deletes_trait(in->deletes, g, user) : NULL;
  if (!t) return 0;
  if (dl->group != g || dl->trait != t) {
    dl->group = g, dl->trait = t;
    ld_row_layout_of(g, t, &dl->layout);
  }
  uint64_t v;
  return ld_row_value(rec, len, &dl->layout, &v) && ld_deletes_event(in->deletes, user, v);
}

/* Values on their way to their counters, in the order they came: each
 * slot asked of the cache when it joins, counted PENDING values later
 * (tables of millions of slots: a miss each, overlapped this way). */
#define PENDING 16
typedef struct pending {
  counter *c[PENDING];
  uint64_t v[PENDING];
  size_t head, n;
} pending;

static int pending_put(pending *p, counter *c, uint64_t v) {
  int rc = 0;
  if (p->n == PENDING) { /* the oldest is counted first */
    rc = counter_add(p->c[p->head], p->v[p->head]);
    p->head = (p->head + 1) % PENDING;
    p->n--;
  }
  const size_t at = (p->head + p->n++) % PENDING;
  p->c[at] = c, p->v[at] = v;
  ld_counts_prefetch(&c->counts, v);
  return rc;
}

static int pending_drain(pending *p) {
  int rc = 0;
  for (; p->n > 0 && rc == 0; p->n--, p->head = (p->head + 1) % PENDING) rc = counter_add(p->c[p->head], p->v[p->head]);
  return rc;
}

/* Counts every needed trait's values over the shard's rows. */
static int count_rows(const ld_dicts_in *in, counter *cs, size_t n, uih_error *err) {
  ld_stream *st = NULL;
  int rc = ld_stream_open(in->sorter, in->shard, LD_STREAM_KEEP, &st, err);
  const uint8_t *rec = NULL;
  uint32_t len = 0;
  del_layout dl = {0};
  pending p = {.n = 0};
  int full = 0; /* a counter ran out of memory */
  while (rc == UIH_OK && !full && (rc = ld_stream_next(st, &rec, &len, err)) == UIH_OK && rec) {
    if (row_dropped(in, rec, len, &dl)) continue;
    const uint16_t group = ld_row_group(rec);
    for (size_t i = 0; i < n && !full; i++) {
      uint64_t v;
      if (cs[i].group == group && ld_row_value(rec, len, &cs[i].layout, &v)) full = pending_put(&p, &cs[i], v) != 0;
    }
  }
  if (rc == UIH_OK && !full) full = pending_drain(&p) != 0;
  if (rc == UIH_OK && full)
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory counting values");
  ld_stream_close(st);
  return rc;
}

/* A rebuild's pass over the stored stripes: per schema group, a batch of
 * its active traits (NULL until needed; none for a group with nothing to
 * count) and where each counter's trait is in it. */
typedef struct stored_pass {
  const ld_dicts_in *in;
  counter *cs;
  size_t n;
  uih_stripe_decoder *dec;
  uih_batch **batches; /* by schema group index */
  int *column;         /* counter i's column in its group's batch (-1: none) */
  uint64_t unticked;   /* stored events counted since the last tick */
} stored_pass;

/* The batch for stripes of group `id`, made the first time (*out NULL: a
 * group with nothing to count). */
static int group_batch(stored_pass *p, uint16_t id, uint32_t count, uih_batch **out, uih_error *err) {
  const uih_schema *schema = p->in->schema;
  *out = NULL;
  uint32_t gi = 0;
  while (gi < uih_schema_group_count(schema) && uih_schema_group_at(schema, gi)->id != id) gi++;
  if (gi == uih_schema_group_count(schema))
    return uih_corruption(err, "a stripe of group %u, which the schema does not have", id);
  if (!p->batches[gi]) {
    const uih_group *g = uih_schema_group_at(schema, gi);
    int counted = 0;
    for (size_t i = 0; i < p->n; i++) counted |= p->cs[i].group == id;
    if (!counted) return UIH_OK;
    uint16_t ids[UIH_TRAITS_MAX];
    uint32_t k = 0;
    for (uint32_t t = 0; t < g->ntraits; t++)
      if (uih_trait_active(&g->traits[t])) ids[k++] = g->traits[t].id;
    int rc = uih_batch_create(g, count, ids, k, &p->batches[gi], err);
    if (rc != UIH_OK) return rc;
    for (size_t i = 0; i < p->n; i++)
      if (p->cs[i].group == id) p->column[i] = uih_batch_column_index(p->batches[gi], p->cs[i].trait->id);
  }
  uih_batch_clear(p->batches[gi]);
  int rc = count > p->batches[gi]->capacity ? uih_batch_reserve(&p->batches[gi], count, err) : UIH_OK;
  if (rc == UIH_OK) *out = p->batches[gi];
  return rc;
}

/* Counts `user`'s stripe `val`: the values of its events the load keeps. */
static int count_stripe(stored_pass *p, uint64_t user, const uint8_t *val, size_t vlen, uih_error *err) {
  const ld_dicts_in *in = p->in;
  uih_stripe_info info;
  uih_batch *b = NULL;
  int rc = uih_stripe_read_info(val, vlen, &info, err);
  if (rc == UIH_OK && (p->unticked += info.count) >= ((uint64_t)1 << 16) && in->tick) {
    in->tick(in->tick_arg, p->unticked);
    p->unticked = 0;
  }
  if (rc != UIH_OK || info.max_ts < in->horizon || (in->deletes && ld_deletes_user(in->deletes, user)))
    return rc; /* wholly expired or erased: nothing kept */
  if ((rc = group_batch(p, info.group, info.count, &b, err)) != UIH_OK || !b) return rc;
  rc = uih_stripe_decode(p->dec, val, vlen, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, b, err);
  const uih_trait *dt = in->deletes ? ld_deletes_trait(in->deletes, b->group, user) : NULL;
  const int64_t *ts = uih_batch_timestamps(b); /* group_batch's batches hold every trait */
  const int del = dt ? uih_batch_column_index(b, dt->id) : -1;
  for (uint32_t r = 0; rc == UIH_OK && r < b->count; r++) {
    if (ts[r] < in->horizon ||
        (del >= 0 && uih_column_has(&b->columns[del], r) &&
         ld_deletes_event(in->deletes, user, uih_column_get_bits(&b->columns[del], r))))
      continue;
    for (size_t i = 0; rc == UIH_OK && i < p->n; i++) {
      const int c = p->cs[i].group == info.group ? p->column[i] : -1;
      if (c >= 0 && uih_column_has(&b->columns[c], r) &&
          counter_add(&p->cs[i], uih_column_get_bits(&b->columns[c], r)) != 0)
        rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory counting values");
    }
  }
  return rc;
}

/* Counts every needed trait's values over the base generation's stripes. */
static int count_stored(const ld_dicts_in *in, counter *cs, size_t n, uih_error *err) {
  const uint32_t ngroups = uih_schema_group_count(in->schema);
  stored_pass p = {.in = in, .cs = cs, .n = n, .batches = calloc(ngroups ? ngroups : 1, sizeof *p.batches),
                   .column = malloc(n * sizeof *p.column)};
  int rc = p.batches && p.column ? uih_stripe_decoder_create(&p.dec, err)
                                 : uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory");
  for (size_t i = 0; rc == UIH_OK && i < n; i++) p.column[i] = -1;
  if (rc == UIH_OK) uih_stripe_decoder_set_context(p.dec, in->stored_ctx);
  const uint8_t *key = NULL, *val = NULL;
  size_t klen = 0, vlen = 0;
  while (rc == UIH_OK && (rc = uih_store_scan_next(in->stored, &key, &klen, &val, &vlen, err)) == UIH_OK && key) {
    uih_key k;
    if ((rc = uih_key_decode(key, klen, &k, err)) != UIH_OK) break;
    rc = count_stripe(&p, k.user_id, val, vlen, err);
    if (rc != UIH_OK)
      uih_error_prefix(err, "counting the stored values: user %" PRIu64 " group %u stripe at ts %" PRId64 ": ",
                       k.user_id, k.group, k.ts);
  }
  if (rc == UIH_OK && p.unticked && in->tick) in->tick(in->tick_arg, p.unticked);
  for (uint32_t g = 0; p.batches && g < ngroups; g++) uih_batch_free(p.batches[g]);
  free(p.batches);
  free(p.column);
  uih_stripe_decoder_free(p.dec);
  return rc;
}

int ld_dicts_build(const ld_dicts_in *in, uih_stripe_context **out, ld_dict_stats *stats, uih_error *err) {
  memset(stats, 0, sizeof *stats);
  const uih_schema *schema = in->schema;
  const int rebuild = in->stored != NULL;
  uih_stripe_context *ctx = NULL;
  int rc = rebuild ? uih_stripe_context_create(&ctx, err)
                   : uih_stripe_context_parse(in->base, in->base_len, UIH_VALUE_DICT_INDEX, &ctx, err);
  if (rc != UIH_OK) {
    if (!rebuild) uih_error_prefix(err, "the base generation's ");
    return rc;
  }
  /* The shareable traits without a dictionary (a rebuild: every one). */
  size_t n = 0, cap = 0;
  counter *cs = NULL;
  for (uint32_t gi = 0; rc == UIH_OK && gi < uih_schema_group_count(schema); gi++) {
    const uih_group *g = uih_schema_group_at(schema, gi);
    for (uint32_t ti = 0; ti < g->ntraits; ti++) {
      const uih_trait *t = &g->traits[ti];
      if (!uih_trait_active(t) || t == g->ts || !(t->encodings & UIH_ENC_DICTIONARY) ||
          (!rebuild && has_dict(ctx, g->id, t->id)))
        continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 8;
        counter *grown = realloc(cs, cap * sizeof *cs);
        if (!grown) {
          rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory");
          break;
        }
        cs = grown;
      }
      cs[n] = (counter){.group = g->id, .trait = t, .counts = {.max = LD_DICT_MAX_COUNTED}};
      ld_row_layout_of(g, t, &cs[n].layout);
      n++;
    }
  }
  if (rc == UIH_OK && n > 0 && rebuild) rc = count_stored(in, cs, n, err);
  if (rc == UIH_OK && n > 0) rc = count_rows(in, cs, n, err);
  for (size_t i = 0; rc == UIH_OK && i < n; i++) {
    uih_value_dict *d = NULL;
    const ld_counts *ct = &cs[i].counts;
    if (ct->used == 0) continue;
    /* The values counted and how often, out of the table. */
    uint64_t *keys = malloc(ct->used * sizeof *keys), *counts = malloc(ct->used * sizeof *counts);
    if (!keys || !counts) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory");
    size_t k = 0;
    for (size_t j = 0; rc == UIH_OK && j < ct->cap; j++)
      if (ct->counts[j]) keys[k] = ct->keys[j], counts[k++] = ct->counts[j];
    if (rc == UIH_OK)
      rc = uih_value_dict_build(cs[i].group, cs[i].trait->id, cs[i].trait->type, keys, counts, k, LD_DICT_MIN_COUNT,
                                LD_DICT_MAX_ENTRIES, &d, err);
    free(keys), free(counts);
    if (rc == UIH_ERR_NOT_FOUND) { /* no value repeats: nothing to share */
      rc = UIH_OK;
      continue;
    }
    uint64_t hits = 0;
    for (uint32_t r = 0; rc == UIH_OK && r < uih_value_dict_entries(d); r++)
      hits += ld_counts_get(ct, uih_value_dict_value(d, r));
    if (rc == UIH_OK && !uih_value_dict_pays(d, hits, ct->total, cs[i].hi - cs[i].lo)) {
      uih_value_dict_free(d); /* (values already as dense as their ranks): */
      stats->declined++;      /* judged on enough values, its mark instead, so later loads do not count again */
      if (ct->total >= LD_DICT_JUDGED) {
        rc = uih_value_dict_declined(cs[i].group, cs[i].trait->id, cs[i].trait->type, &d, err);
        if (rc == UIH_OK) rc = uih_stripe_context_add(ctx, d, err);
      }
      continue;
    }
    if (rc == UIH_OK) {
      stats->built++;
      stats->entries += uih_value_dict_entries(d);
      rc = uih_stripe_context_add(ctx, d, err);
    }
  }
  for (size_t i = 0; i < n; i++) ld_counts_free(&cs[i].counts);
  free(cs);
  for (size_t i = 0; rc == UIH_OK && i < uih_stripe_context_count(ctx); i++) {
    const uint8_t *p;
    size_t len;
    uih_value_dict_bytes(uih_stripe_context_at(ctx, i), &p, &len);
    stats->bytes += len;
  }
  if (rc != UIH_OK) {
    uih_stripe_context_free(ctx);
    return rc;
  }
  *out = ctx;
  return UIH_OK;
}
