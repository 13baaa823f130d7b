/* Bit-packed runs: the writer. See bitpack.h. */
#include "bitpack.h"

typedef unsigned __int128 u128;

void uih_pack(uih_wbuf *out, const uint64_t *v, size_t n, unsigned w) {
  size_t nbytes = (n * w + 7) / 8;
  uint8_t *dst = uih_wbuf_zeros(out, nbytes);
  if (!dst || w == 0) return;
  u128 acc = 0;
  unsigned bits = 0;
  size_t o = 0;
  for (size_t k = 0; k < n; k++) {
    acc |= (u128)v[k] << bits;
    bits += w;
    while (bits >= 8) {
      dst[o++] = (uint8_t)acc;
      acc >>= 8;
      bits -= 8;
    }
  }
  if (bits) dst[o] = (uint8_t)acc;
}
