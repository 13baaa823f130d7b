/* A count per distinct 64-bit value, in bounded memory: what the loader's
 * value dictionaries are ranked by (dicts.c).
 *
 * Up to `max` distinct values are counted exactly. When a value not held
 * arrives with `max` held, the table is pruned as in Misra and Gries'
 * frequent-items algorithm, in batch: with t the median held count, every
 * count drops by t and the values left at 0 go, so at least half the slots
 * free up for the values to come. Over a stream of N values the held counts
 * are then underestimates by at most 2N / max in all (the sum of the t
 * subtracted), so every value seen more than 2N / max times is held, and
 * the most frequent ones keep their order to within that — whatever order
 * the values come in. The result depends only on the stream: deterministic.
 *
 * Open addressing over a power-of-two table kept at most half full; key 0
 * is an ordinary key (a slot is empty when its count is 0). */
#ifndef UIH_LOADER_COUNTS_H
#define UIH_LOADER_COUNTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ld_counts {
  size_t max;              /* distinct values held at most (>= 2); set before the first add */
  uint64_t *keys, *counts; /* counts[i] == 0: slot i is empty */
  size_t cap, used;
  uint64_t total;          /* values added */
  uint64_t subtracted;     /* the sum of the t pruning took off each held count */
} ld_counts;

/* Counts one occurrence of `v`; 0, or -1 if out of memory (nothing lost). */
int ld_counts_add(ld_counts *c, uint64_t v);
/* Asks the cache for the slot `v` would take (a hint: the table may
 * change before `v` is added), so a caller adding a stream of values can
 * have the next few on their way while it adds the current one. */
void ld_counts_prefetch(const ld_counts *c, uint64_t v);
/* The held count of `v` (0: not held). */
uint64_t ld_counts_get(const ld_counts *c, uint64_t v);
void ld_counts_free(ld_counts *c);

#endif /* UIH_LOADER_COUNTS_H */
