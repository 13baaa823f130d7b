/* Bit-packed runs: value k of a run of width w (0..64) occupies bits
 * [k*w, k*w + w) of a little-endian bit stream of ceil(n*w/8) bytes (w = 0
 * stores nothing). The stripe codec's integer sequences (codec/intseq.h,
 * with vectorized readers) and the UihTable index's numeric layout
 * (table/table_numeric.h) are built on it. */
#ifndef UIH_BITPACK_H
#define UIH_BITPACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bits.h"
#include "wbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline uint64_t uih_mask_of(unsigned w) { return w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1; }

/* Packs v[0..n) at width w (each value must fit) after `out`'s end. */
void uih_pack(uih_wbuf *out, const uint64_t *v, size_t n, unsigned w);

/* Value k of a run of width w at `p`, read with one unaligned 8-byte load
 * (and one more byte when the value straddles it): the 9 bytes from the
 * value's first byte must be readable, so the run needs UIH_PACK_PAD bytes
 * of readable padding after it. */
#define UIH_PACK_PAD 16
static inline uint64_t uih_pack_get_padded(const uint8_t *p, unsigned w, uint64_t k) {
  if (w == 0) return 0;
  uint64_t bit = k * w, lo;
  const uint8_t *q = p + (bit >> 3);
  unsigned sh = (unsigned)(bit & 7);
  memcpy(&lo, q, 8);
  lo >>= sh;
  if (sh + w > 64) lo |= (uint64_t)q[8] << (64 - sh);
  return lo & uih_mask_of(w);
}

#ifdef __cplusplus
}
#endif
#endif /* UIH_BITPACK_H */
