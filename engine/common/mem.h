/* Integers as bytes, spelled once for every module (the engine's, and the
 * loader, store and materializer through uih::internal): loads and stores of
 * fixed-width integers at any alignment and in either byte order, and LEB128
 * varints. memcpy keeps the fixed-width ones legal on unaligned pointers;
 * compilers turn each into a single (byte-swapped) move. Which order a
 * format uses is drawn with it: keys, whose bytes must sort as their
 * numbers, and the store's metadata (store/format.h) are big-endian; the
 * stripe, table and record formats are little-endian. */
#ifndef UIH_MEM_H
#define UIH_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "uihstore's helpers assume a little-endian host"
#endif

static inline uint16_t uih_load_be16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return __builtin_bswap16(v);
}
static inline uint32_t uih_load_be32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return __builtin_bswap32(v);
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
static inline void uih_store_be32(uint8_t *p, uint32_t v) {
  v = __builtin_bswap32(v);
  memcpy(p, &v, sizeof v);
}
static inline void uih_store_be64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, sizeof v);
}

/* `n` (0..8) big-endian bytes: the low n bytes of v. */
static inline uint64_t uih_load_be(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}
static inline void uih_store_be(uint8_t *p, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static inline uint32_t uih_load_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline uint64_t uih_load_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void uih_store_le32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }
static inline void uih_store_le64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof v); }

/* An unsigned LEB128 varint of at most UIH_VARINT_MAX bytes: writes `v` to
 * out and returns its length. (uih_cursor_varint reads one.) */
#define UIH_VARINT_MAX 10
static inline size_t uih_varint_put(uint8_t out[UIH_VARINT_MAX], uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  out[n++] = (uint8_t)v;
  return n;
}
/* The bytes uih_varint_put spends on v. */
static inline size_t uih_varint_len(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) n++;
  return n;
}

#endif /* UIH_MEM_H */
