/* Bounded frequent-value counts (counts.h). */
#include "counts.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t v, size_t cap) {
  return (size_t)((v * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
}

/* Moves the held values into a fresh table of `cap` slots, each count
 * less `minus` (those left at 0 dropped). */
static int rehash(ld_counts *c, size_t cap, uint64_t minus) {
  uint64_t *keys = calloc(cap, sizeof *keys), *counts = calloc(cap, sizeof *counts);
  if (!keys || !counts) {
    free(keys), free(counts);
    return -1;
  }
  size_t used = 0;
  for (size_t i = 0; i < c->cap; i++) {
    if (c->counts[i] <= minus) continue;
    size_t s = slot_of(c->keys[i], cap);
    while (counts[s]) s = (s + 1) & (cap - 1);
    keys[s] = c->keys[i];
    counts[s] = c->counts[i] - minus;
    used++;
  }
  free(c->keys), free(c->counts);
  c->keys = keys, c->counts = counts, c->cap = cap, c->used = used;
  return 0;
}

static void swap(uint64_t *a, size_t i, size_t j) {
  uint64_t t = a[i];
  a[i] = a[j], a[j] = t;
}

/* The k-th smallest (from 0) of a[0, n), n > k: quickselect with a median
 * of three and a three-way partition (counts repeat a lot: most are 1). */
static uint64_t select_kth(uint64_t *a, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* a[lo, hi) holds it */
  while (hi - lo > 1) {
    uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    const uint64_t p = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
    size_t lt = lo, i = lo, gt = hi; /* [lo, lt) < p, [lt, i) == p, [gt, hi) > p */
    while (i < gt) {
      if (a[i] < p) swap(a, lt++, i++);
      else if (a[i] > p) swap(a, i, --gt);
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return p;
  }
  return a[lo];
}

/* Frees at least half the held slots: every count less the median one. */
static int prune(ld_counts *c) {
  if (c->used == 0) return 0;
  uint64_t *held = malloc(c->used * sizeof *held);
  if (!held) return -1;
  size_t n = 0;
  for (size_t i = 0; i < c->cap; i++)
    if (c->counts[i] && n < c->used) held[n++] = c->counts[i];
  const uint64_t t = n ? select_kth(held, n, (n - 1) / 2) : 0;
  free(held);
  if (rehash(c, c->cap, t) != 0) return -1;
  c->subtracted += t;
  return 0;
}

int ld_counts_add(ld_counts *c, uint64_t v) {
  if (c->cap) {
    size_t s = slot_of(v, c->cap);
    while (c->counts[s] && c->keys[s] != v) s = (s + 1) & (c->cap - 1);
    if (c->counts[s]) {
      c->counts[s]++;
      c->total++;
      return 0;
    }
  }
  /* A value not held: room for it first. */
  if (c->used >= c->max && prune(c) != 0) return -1;
  if (2 * (c->used + 1) > c->cap && rehash(c, c->cap ? 2 * c->cap : 1024, 0) != 0) return -1;
  size_t s = slot_of(v, c->cap);
  while (c->counts[s]) s = (s + 1) & (c->cap - 1);
  c->keys[s] = v;
  c->counts[s] = 1;
  c->used++;
  c->total++;
  return 0;
}

void ld_counts_prefetch(const ld_counts *c, uint64_t v) {
  if (!c->cap) return;
  const size_t s = slot_of(v, c->cap);
  __builtin_prefetch(&c->keys[s]);
  __builtin_prefetch(&c->counts[s]);
}

uint64_t ld_counts_get(const ld_counts *c, uint64_t v) {
  if (!c->cap) return 0;
  size_t s = slot_of(v, c->cap);
  while (c->counts[s] && c->keys[s] != v) s = (s + 1) & (c->cap - 1);
  return c->counts[s];
}

void ld_counts_free(ld_counts *c) {
  free(c->keys), free(c->counts);
  c->keys = c->counts = NULL;
  c->cap = c->used = 0;
}
