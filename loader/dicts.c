/* Building a new generation's value dictionaries (dicts.h). */
#include "dicts.h"

#include <stdlib.h>
#include <string.h>

#include "rows.h"

/* A count per distinct value: open addressing over a power-of-two table
 * kept at most half full, key 0 told apart by a flag of its own. */
typedef struct counter {
  uint16_t group;
  const uih_trait *trait;
  ld_row_layout layout;
  uint64_t *keys, *counts; /* counts[i] == 0: slot i is empty */
  size_t cap, used;
  uint64_t values, lo, hi; /* every value counted, and their range (in the type's order) */
} counter;

static int counter_grow(counter *c) {
  size_t cap = c->cap ? 2 * c->cap : 1024;
  uint64_t *keys = calloc(cap, sizeof *keys), *counts = calloc(cap, sizeof *counts);
  if (!keys || !counts) {
    free(keys), free(counts);
    return -1;
  }
  for (size_t i = 0; i < c->cap; i++) {
    if (!c->counts[i]) continue;
    size_t s = (size_t)((c->keys[i] * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
    while (counts[s]) s = (s + 1) & (cap - 1);
    keys[s] = c->keys[i];
    counts[s] = c->counts[i];
  }
  free(c->keys), free(c->counts);
  c->keys = keys, c->counts = counts, c->cap = cap;
  return 0;
}

static int counter_add(counter *c, uint64_t v) {
  /* the range in the type's order: int64 compared as signed (sign-flipped) */
  const uint64_t o = c->trait->type == UIH_TYPE_INT64 ? v ^ UINT64_C(0x8000000000000000) : v;
  if (c->values == 0 || o < c->lo) c->lo = o;
  if (c->values == 0 || o > c->hi) c->hi = o;
  c->values++;
  if (2 * (c->used + 1) > c->cap && c->used < LD_DICT_MAX_COUNTED && counter_grow(c) != 0) return -1;
  size_t s = (size_t)((v * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (c->cap - 1);
  while (c->counts[s] && c->keys[s] != v) s = (s + 1) & (c->cap - 1);
  if (c->counts[s]) {
    c->counts[s]++;
  } else if (c->used < LD_DICT_MAX_COUNTED) {
    c->keys[s] = v;
    c->counts[s] = 1;
    c->used++;
  }
  return 0;
}

/* How often `v` was counted (0: not counted). */
static uint64_t counter_get(const counter *c, uint64_t v) {
  if (!c->cap) return 0;
  size_t s = (size_t)((v * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (c->cap - 1);
  while (c->counts[s] && c->keys[s] != v) s = (s + 1) & (c->cap - 1);
  return c->counts[s];
}

static int has_dict(const uih_stripe_context *ctx, uint16_t group, uint16_t trait) {
  for (size_t i = 0; i < uih_stripe_context_count(ctx); i++) {
    const uih_value_dict *d = uih_stripe_context_at(ctx, i);
    if (uih_value_dict_group(d) == group && uih_value_dict_trait(d) == trait) return 1;
  }
  return 0;
}

/* Counts every needed trait's values over the shard's rows. */
static int count_rows(ld_sorter *sorter, uint32_t shard, counter *cs, size_t n, uih_error *err) {
  ld_stream *st = NULL;
  int rc = ld_stream_open(sorter, shard, &st, err);
  const uint8_t *rec = NULL;
  uint32_t len = 0;
  while (rc == UIH_OK && (rc = ld_stream_next(st, &rec, &len, err)) == UIH_OK && rec) {
    const uint16_t group = ld_row_group(rec);
    for (size_t i = 0; i < n && rc == UIH_OK; i++) {
      uint64_t v;
      if (cs[i].group == group && ld_row_value(rec, len, &cs[i].layout, &v) && counter_add(&cs[i], v) != 0)
        rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory counting values");
    }
  }
  ld_stream_close(st);
  return rc;
}

int ld_dicts_build(const uih_schema *schema, uint32_t shard, const uint8_t *base, size_t base_len, ld_sorter *sorter,
                   uih_stripe_context **out, ld_dict_stats *stats, uih_error *err) {
  memset(stats, 0, sizeof *stats);
  uih_stripe_context *ctx = NULL;
  int rc = uih_stripe_context_parse(base, base_len, UIH_VALUE_DICT_INDEX, &ctx, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "the base generation's ");
    return rc;
  }
  /* The shareable traits without a dictionary. */
  size_t n = 0, cap = 0;
  counter *cs = NULL;
  for (uint32_t gi = 0; rc == UIH_OK && gi < uih_schema_group_count(schema); gi++) {
    const uih_group *g = uih_schema_group_at(schema, gi);
    for (uint32_t ti = 0; ti < g->ntraits; ti++) {
      const uih_trait *t = &g->traits[ti];
      if (!uih_trait_active(t) || t == g->ts || !(t->encodings & UIH_ENC_DICTIONARY) || has_dict(ctx, g->id, t->id))
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
      cs[n] = (counter){.group = g->id, .trait = t};
      ld_row_layout_of(g, t, &cs[n].layout);
      n++;
    }
  }
  if (rc == UIH_OK && n > 0) rc = count_rows(sorter, shard, cs, n, err);
  for (size_t i = 0; rc == UIH_OK && i < n; i++) {
    uih_value_dict *d = NULL;
    if (cs[i].used == 0) continue;
    /* The values counted and how often, out of the table. */
    uint64_t *keys = malloc(cs[i].used * sizeof *keys), *counts = malloc(cs[i].used * sizeof *counts);
    if (!keys || !counts) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value dictionaries: out of memory");
    size_t k = 0;
    for (size_t j = 0; rc == UIH_OK && j < cs[i].cap; j++)
      if (cs[i].counts[j]) keys[k] = cs[i].keys[j], counts[k++] = cs[i].counts[j];
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
      hits += counter_get(&cs[i], uih_value_dict_value(d, r));
    if (rc == UIH_OK && !uih_value_dict_pays(d, hits, cs[i].values, cs[i].hi - cs[i].lo)) {
      uih_value_dict_free(d); /* (values already as dense as their ranks): */
      stats->declined++;      /* judged on enough values, its mark instead, so later loads do not count again */
      if (cs[i].values >= LD_DICT_JUDGED) {
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
  for (size_t i = 0; i < n; i++) free(cs[i].keys), free(cs[i].counts);
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
