/* Entropy bounds for stripe_bench.
 *
 * entropy_counter: the order-0 empirical entropy of a stream of 64-bit
 * symbols, the bits per symbol an ideal coder needs when one model, knowing
 * how often each value occurs in the whole data set, is shared by every
 * stripe. No coder of values one at a time does better on that data (it is
 * a generous bound: the model itself is free), so it tells how much a shared
 * dictionary or frequency table could still save over a self-contained
 * stripe. entropy_self_contained_bits (below): the bound for a stripe that
 * shares nothing. */
#ifndef UIH_BENCH_ENTROPY_H
#define UIH_BENCH_ENTROPY_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct entropy_counter {
  uint64_t *keys;
  uint64_t *counts; /* 0 = empty slot */
  size_t cap, used;
  uint64_t total;  /* symbols counted, absent ones included */
  uint64_t absent; /* of which "no value", a symbol of its own */
} entropy_counter;

static inline size_t entropy_slot(uint64_t k, size_t cap) {
  k ^= k >> 33, k *= UINT64_C(0xff51afd7ed558ccd), k ^= k >> 33; /* murmur3 finalizer */
  return (size_t)k & (cap - 1);
}

/* Counts one occurrence of `k`; returns 0, or -1 if out of memory. */
static inline int entropy_add(entropy_counter *e, uint64_t k) {
  if (2 * (e->used + 1) > e->cap) {
    size_t cap = e->cap ? 2 * e->cap : 1024;
    uint64_t *keys = calloc(cap, sizeof *keys), *counts = calloc(cap, sizeof *counts);
    if (!keys || !counts) {
      free(keys), free(counts);
      return -1;
    }
    for (size_t i = 0; i < e->cap; i++) {
      if (!e->counts[i]) continue;
      size_t j = entropy_slot(e->keys[i], cap);
      while (counts[j]) j = (j + 1) & (cap - 1);
      keys[j] = e->keys[i], counts[j] = e->counts[i];
    }
    free(e->keys), free(e->counts);
    e->keys = keys, e->counts = counts, e->cap = cap;
  }
  size_t j = entropy_slot(k, e->cap);
  while (e->counts[j] && e->keys[j] != k) j = (j + 1) & (e->cap - 1);
  if (!e->counts[j]) e->keys[j] = k, e->used++;
  e->counts[j]++;
  e->total++;
  return 0;
}

static inline void entropy_add_absent(entropy_counter *e) { e->absent++, e->total++; }

/* Bits per symbol: sum over symbols of p * log2(1 / p). */
static inline double entropy_bits(const entropy_counter *e) {
  if (!e->total) return 0;
  double n = (double)e->total, bits = 0;
  for (size_t i = 0; i < e->cap; i++)
    if (e->counts[i]) bits += (double)e->counts[i] * log2(n / (double)e->counts[i]);
  if (e->absent) bits += (double)e->absent * log2(n / (double)e->absent);
  return bits / n;
}

static inline int entropy_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The other bound: what one *self-contained* stripe needs at least for a
 * column of n references to d distinct values, when the values are uniform
 * over a universe of 2^u and nothing is shared between stripes (the
 * generator's item ids: Zipf ranks scrambled by a bijection of [0, 2^40),
 * so without a model of the catalog each distinct id is a uniform 40-bit
 * value, and popularity shows only across stripes):
 *
 *   log2 C(2^u, d)   bits to name the set of d distinct values: every
 *                    d-subset is equally likely, so no coder does better;
 *   + n * H0         the n references to them coded with the stripe's own
 *                    order-0 statistics (H0: its empirical entropy over the
 *                    d values; the counts themselves are free).
 *
 * A coder of values one at a time that sees only this stripe cannot beat
 * the sum. `v` holds the n values and is sorted in place; returns bits. */
static inline double entropy_self_contained_bits(uint64_t *v, size_t n, unsigned u) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, entropy_cmp_u64);
  double set = 0, refs = 0, universe = ldexp(1.0, (int)u);
  size_t d = 0;
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && v[j] == v[i];) j++;
    refs += (double)(j - i) * log2((double)n / (double)(j - i));
    set += log2((universe - (double)d) / (double)(d + 1)); /* C(N, d+1) = C(N, d) (N-d)/(d+1) */
    d++;
  }
  return set + refs;
}

static inline void entropy_free(entropy_counter *e) {
  free(e->keys), free(e->counts);
  *e = (entropy_counter){0};
}

#endif /* UIH_BENCH_ENTROPY_H */
