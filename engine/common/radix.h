/* A least-significant-digit radix sort of 64-bit keys, a byte at a time,
 * that skips the bytes every key shares (ids of one range differ in a few
 * low bytes, lengths in one): the stripe encoder's dictionary values and
 * the loader's run blocks, sorted by their length field. */
#ifndef UIH_RADIX_H
#define UIH_RADIX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Sorts v[0..n) stably by bits [from, 64) (from a multiple of 8: bits
 * below it keep their order among equal keys); tmp holds n keys. */
static inline void uih_radix_sort_u64(uint64_t *v, uint64_t *tmp, size_t n, unsigned from) {
  uint64_t any = 0, all = ~(uint64_t)0;
  for (size_t i = 0; i < n; i++) any |= v[i], all &= v[i];
  const uint64_t differ = any ^ all;
  uint64_t *src = v, *dst = tmp;
  for (unsigned shift = from; shift < 64; shift += 8) {
    if (((differ >> shift) & 0xff) == 0) continue; /* every key has this byte */
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[(src[i] >> shift) & 0xff]++;
    for (size_t d = 0, sum = 0; d < 256; d++) {
      const size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & 0xff]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v) memcpy(v, src, n * sizeof *v);
}

#endif /* UIH_RADIX_H */
