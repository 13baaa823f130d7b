/* Bit-packed runs: the writer. See bitpack.h. */
#include "bitpack.h"

/* A word at a time: values gather in a 64-bit accumulator, which is
 * stored (8 bytes, little-endian) each time it fills; the value that
 * overflows it starts the next one. A store never passes the run's end:
 * a full word means 64 of its n*w bits are behind it. */
void uih_pack(uih_wbuf *out, const uint64_t *v, size_t n, unsigned w) {
  size_t nbytes = (n * w + 7) / 8;
  uint8_t *dst = uih_wbuf_zeros(out, nbytes);
  if (!dst || w == 0) return;
  uint64_t acc = 0;
  unsigned bits = 0; /* in acc, < 64 */
  size_t o = 0;
  for (size_t k = 0; k < n; k++) {
    acc |= v[k] << bits;
    if (bits + w < 64) {
      bits += w;
      continue;
    }
    uint8_t le[8];
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)(acc >> (8 * b));
    memcpy(dst + o, le, 8);
    o += 8;
    acc = bits ? v[k] >> (64 - bits) : 0;
    bits = bits + w - 64;
  }
  for (; bits > 0; bits = bits > 8 ? bits - 8 : 0, acc >>= 8) dst[o++] = (uint8_t)acc;
}
