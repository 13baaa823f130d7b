/* Bit-level facts every module uses, spelled once: the order-preserving
 * int64 <-> uint64 map, zigzag, bitmaps of bits, bit widths, and the 32-bit
 * checksum of values, stripes and event lists. */
#ifndef UIH_BITS_H
#define UIH_BITS_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

/* Flipping the sign bit maps int64 order onto uint64 order (keys, index
 * columns, stripe values, event rows): x ^ 2^63, which is also x + 2^63. */
#define UIH_SIGN64 UINT64_C(0x8000000000000000)

static inline uint64_t uih_order_u64(int64_t v) { return (uint64_t)v ^ UIH_SIGN64; }
/* The inverse, without implementation-defined conversions: values below
 * 2^63 map to negative numbers. */
static inline int64_t uih_order_i64(uint64_t u) {
  u ^= UIH_SIGN64;
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* Zigzag: small magnitudes of either sign as small unsigned numbers (for
 * varints), and back. */
static inline uint64_t uih_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); }
static inline int64_t uih_unzigzag64(uint64_t z) {
  uint64_t u = (z >> 1) ^ (0 - (z & 1));
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* Bit i of a bitmap stored as bytes, least significant bit first (the
 * on-disk presence bitmaps). */
static inline int uih_bit_get(const uint8_t *map, size_t i) { return (map[i >> 3] >> (i & 7)) & 1; }
static inline void uih_bit_set(uint8_t *map, size_t i) { map[i >> 3] |= (uint8_t)(1u << (i & 7)); }
/* The bits of a bitmap of n bits past the last one: 0 when there are none
 * or they are clear (a canonical bitmap has them clear). */
static inline unsigned uih_bit_tail(const uint8_t *map, size_t n) {
  return (n & 7) ? (unsigned)(map[n >> 3] >> (n & 7)) : 0u;
}

/* The smallest and largest of v[0..n) (n >= 1), four at a time: one
 * running minimum waits on its last compare each value, four overlap. */
static inline void uih_min_max(const uint64_t *v, size_t n, uint64_t *min, uint64_t *max) {
  uint64_t lo[4] = {v[0], v[0], v[0], v[0]}, hi[4] = {v[0], v[0], v[0], v[0]};
  size_t k = 1;
  for (; k + 4 <= n; k += 4)
    for (unsigned j = 0; j < 4; j++) {
      lo[j] = v[k + j] < lo[j] ? v[k + j] : lo[j];
      hi[j] = v[k + j] > hi[j] ? v[k + j] : hi[j];
    }
  for (; k < n; k++) {
    lo[0] = v[k] < lo[0] ? v[k] : lo[0];
    hi[0] = v[k] > hi[0] ? v[k] : hi[0];
  }
  for (unsigned j = 1; j < 4; j++) {
    lo[0] = lo[j] < lo[0] ? lo[j] : lo[0];
    hi[0] = hi[j] > hi[0] ? hi[j] : hi[0];
  }
  *min = lo[0];
  *max = hi[0];
}

/* Bits needed to represent `v` (0 for 0). */
static inline unsigned uih_bits(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }

/* Low 32 bits of XXH3-64: the checksum of a UihTable value, a stripe and an
 * event list. */
static inline uint32_t uih_checksum32(const void *p, size_t n) { return (uint32_t)XXH3_64bits(p, n); }

#endif /* UIH_BITS_H */
