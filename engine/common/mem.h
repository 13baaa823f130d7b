/* Loads and stores of fixed-width integers at any alignment and byte order.
 * memcpy keeps them legal on unaligned pointers; compilers turn each into a
 * single (byte-swapped) move. */
#ifndef UIH_MEM_H
#define UIH_MEM_H

#include <stdint.h>
#include <string.h>

static inline uint16_t uih_load_be16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return __builtin_bswap16(v);
}
static inline uint64_t uih_load_be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return __builtin_bswap64(v);
}
static inline void uih_store_be16(uint8_t *p, uint16_t v) {
  v = __builtin_bswap16(v);
  memcpy(p, &v, sizeof v);
}
static inline void uih_store_be64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, sizeof v);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "uihstore's helpers assume a little-endian host"
#endif

#endif /* UIH_MEM_H */
