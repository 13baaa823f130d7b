/* Prefix codes (canonical Huffman) over small alphabets: the entropy model a
 * value dictionary carries for the `coded` encoding (stripe_format.h).
 *
 * Codes are at most PC_MAX_LEN bits and complete (every PC_MAX_LEN-bit
 * string starts with exactly one code), so one table lookup of PC_MAX_LEN
 * bits decodes any symbol. A code is stored as its lengths alone; the
 * canonical assignment (shorter codes first, then by symbol) gives the bits.
 * Bit streams are least significant bit first, so codes are written
 * bit-reversed and read with a mask. */
#ifndef UIH_PREFIX_CODE_H
#define UIH_PREFIX_CODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PC_MAX_LEN 11
#define PC_TABLE_SIZE (1u << PC_MAX_LEN)
#define PC_MAX_SYMBOLS 512

/* Lengths of a complete prefix code for n (2..PC_MAX_SYMBOLS) symbols
 * with these frequencies (each at least 1), none longer than PC_MAX_LEN:
 * Huffman's, with the frequencies halved until it fits. Deterministic
 * (ties go to the lower symbol). Returns 0, or -1 if n is out of range or a
 * frequency is 0. */
int pc_lengths(const uint64_t *freq, size_t n, uint8_t *len);

/* The canonical codes of n lengths, bit-reversed for LSB-first streams.
 * Returns 0, or -1 unless every length is in [1, PC_MAX_LEN] and the code
 * is complete (the lengths of untrusted bytes are checked here). */
int pc_codes(const uint8_t *len, size_t n, uint16_t *code);

/* LSB-first bits into a write buffer, four bytes at a time. */
typedef struct pc_writer {
  uih_wbuf *out;
  uint64_t acc;
  unsigned n; /* bits in acc, < 32 between calls */
} pc_writer;

/* Appends the low `bits` (<= 32) bits of v. */
static inline void pc_put(pc_writer *w, uint64_t v, unsigned bits) {
  w->acc |= (v & ((UINT64_C(1) << bits) - 1)) << w->n;
  w->n += bits;
  if (w->n >= 32) {
    const uint8_t le[4] = {(uint8_t)w->acc, (uint8_t)(w->acc >> 8), (uint8_t)(w->acc >> 16), (uint8_t)(w->acc >> 24)};
    uih_wbuf_put(w->out, le, 4);
    w->acc >>= 32;
    w->n -= 32;
  }
}

/* The bits left, the last byte padded with zero bits. */
static inline void pc_flush(pc_writer *w) {
  for (; w->n > 0; w->n = w->n > 8 ? w->n - 8 : 0, w->acc >>= 8) uih_wbuf_u8(w->out, (uint8_t)w->acc);
  w->acc = 0;
}

/* LSB-first bits out of `len` bytes at p: past them it reads zeros and
 * counts them, so a stream that needed more bits than it has is found
 * afterwards (pc_reader_used). Bytes up to `loadable` (>= len) may be
 * loaded 8 at a time and masked off (a stream inside a larger buffer);
 * none past it is touched. */
typedef struct pc_reader {
  const uint8_t *p;
  size_t len, loadable;
  uint64_t acc;
  unsigned n;     /* bits in acc */
  size_t fetched; /* bytes loaded into acc, including zeros past len */
} pc_reader;

static inline pc_reader pc_reader_make(const uint8_t *p, size_t len, size_t loadable) {
  pc_reader r = {p, len, loadable < len ? len : loadable, 0, 0, 0};
  return r;
}

/* At least 56 bits in acc afterwards. */
static inline void pc_refill(pc_reader *r) {
  if (r->fetched + 8 <= r->loadable) {
    uint64_t w;
    memcpy(&w, r->p + r->fetched, 8); /* little-endian hosts (the engine's byte order) */
    if (r->fetched + 8 > r->len) /* keep the bytes below len only */
      w = r->fetched >= r->len ? 0 : w & ((UINT64_C(1) << (8 * (r->len - r->fetched))) - 1);
    r->acc |= w << r->n;
    r->fetched += (63 - r->n) >> 3;
    r->n |= 56;
    return;
  }
  while (r->n <= 56) {
    uint64_t byte = r->fetched < r->len ? r->p[r->fetched] : 0;
    r->acc |= byte << r->n;
    r->n += 8;
    r->fetched++;
  }
}

static inline uint64_t pc_take(pc_reader *r, unsigned bits) {
  uint64_t v = r->acc & ((UINT64_C(1) << bits) - 1);
  r->acc >>= bits;
  r->n -= bits;
  return v;
}

/* Bits consumed so far. */
static inline size_t pc_reader_used(const pc_reader *r) { return 8 * r->fetched - r->n; }

#ifdef __cplusplus
}
#endif
#endif /* UIH_PREFIX_CODE_H */
