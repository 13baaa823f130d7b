/* A growable set of encoded stripes (copies) with their event counts, for
 * the stripe benchmarks (stripe_bench, stripe_count). */
#ifndef UIH_BENCH_STRIPE_SET_H
#define UIH_BENCH_STRIPE_SET_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct stripes {
  uint8_t **data;
  size_t *len;
  uint32_t *count; /* events in each stripe */
  size_t n, cap;
} stripes;

/* Adds a copy of p[0, len); returns 0, or -1 if out of memory. */
static inline int stripes_add(stripes *s, const uint8_t *p, size_t len, uint32_t count) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 1024;
    uint8_t **data = realloc(s->data, cap * sizeof *data);
    if (data) s->data = data;
    size_t *lens = realloc(s->len, cap * sizeof *lens);
    if (lens) s->len = lens;
    uint32_t *counts = realloc(s->count, cap * sizeof *counts);
    if (counts) s->count = counts;
    if (!data || !lens || !counts) return -1;
    s->cap = cap;
  }
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  memcpy(copy, p, len);
  s->data[s->n] = copy;
  s->len[s->n] = len;
  s->count[s->n++] = count;
  return 0;
}

static inline void stripes_free(stripes *s) {
  for (size_t i = 0; i < s->n; i++) free(s->data[i]);
  free(s->data);
  free(s->len);
  free(s->count);
  memset(s, 0, sizeof *s);
}

#endif /* UIH_BENCH_STRIPE_SET_H */
