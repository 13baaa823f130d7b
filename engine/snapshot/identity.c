/* Event identities and their chain (uih/snapshot.h): the timestamp and the
 * group's active id-typed traits of each event, hashed newest first. */
/* The hash inlined: it runs once per event served and rebuilt, on a
 * dozen to a few dozen bytes, where a call into the shared library costs
 * as much as the hash. Same algorithm, same values. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "mem.h"
#include "uih/schema.h"
#include "uih/snapshot.h"

uint32_t uih_snapshot_identity_columns(const uih_group *version, const uih_batch *b, int *cols, uint32_t cap) {
  const uih_group *g = version ? version : b->group;
  uint32_t n = 0;
  if (n < cap) cols[n] = uih_batch_column_index(b, g->ts->id);
  n++;
  for (uint32_t i = 0; i < g->ntraits; i++) {
    const uih_trait *t = &g->traits[i];
    if (!uih_trait_active(t) || t->type != UIH_TYPE_ID) continue;
    if (n < cap) cols[n] = uih_batch_column_index(b, t->id);
    n++;
  }
  return n;
}

/* A column's value as uih_column_get_bits gives it; timestamps and ids,
 * the columns identities read, without the call. */
static inline uint64_t value_bits(const uih_column *c, uint32_t row) {
  const uih_type t = c->trait->type;
  if (t == UIH_TYPE_TIMESTAMP || t == UIH_TYPE_ID) return ((const uint64_t *)c->values)[row];
  return uih_column_get_bits(c, row);
}

uint64_t uih_snapshot_identity_next(uint64_t h, const uih_batch *b, const int *cols, uint32_t ncols, uint32_t row) {
  /* ts as 8 little-endian bytes, then per id trait a presence byte and,
   * when present, 8 little-endian bytes; hashed with seed h, in pieces of
   * up to sizeof buf (each piece's hash seeds the next) for wide groups. */
  uint8_t buf[8 + 9 * 32];
  size_t n = 0;
  for (uint32_t i = 0; i < ncols; i++) {
    if (n + 9 > sizeof buf) {
      h = XXH3_64bits_withSeed(buf, n, h);
      n = 0;
    }
    const uih_column *c = cols[i] >= 0 ? &b->columns[cols[i]] : NULL;
    const int has = c && uih_column_has(c, row);
    if (i > 0) {
      buf[n++] = (uint8_t)has;
      if (!has) continue;
    }
    uih_store_le64(buf + n, c ? value_bits(c, row) : 0);
    n += 8;
  }
  return XXH3_64bits_withSeed(buf, n, h);
}

void uih_snapshot_chain_start(uih_snapshot_chain *c, const uih_group *version, const uih_batch *like) {
  c->ncols = uih_snapshot_identity_columns(version, like, c->cols, 1 + UIH_TRAITS_MAX);
  c->n = 0;
  c->h = 0;
  c->cp_length = c->next = 0; /* a part of 0 events has no checkpoint */
}

/* Which of g's checks is at checkpoint n, or -1. */
static int check_at(const uih_snapshot_group *g, uint32_t n) {
  uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
  const uint32_t ncp = uih_snapshot_checkpoints(g->length, cp);
  for (uint32_t i = 0; i < ncp; i++)
    if (cp[i] == n) return (int)i;
  return -1;
}

int uih_snapshot_chain_verify(const uih_snapshot_chain *c, const uih_snapshot_group *g) {
  const int at = check_at(g, c->n);
  return at >= 0 && g->check[at] == (uint32_t)c->h;
}

uint32_t uih_snapshot_group_check(const uih_snapshot_group *g, uint32_t n) {
  const int at = check_at(g, n);
  return at >= 0 ? g->check[at] : 0;
}
