#include "intseq.h"

typedef unsigned __int128 u128;

static inline uint64_t mask_of(unsigned w) { return w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1; }

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

/* The value at bit `pos`: one unaligned 16-byte load where the run has
 * room, a byte-wise gather near its end. */
static inline uint64_t load_bits(const uint8_t *p, size_t nbytes, size_t pos, unsigned w) {
  size_t byte = pos >> 3;
  unsigned shift = (unsigned)(pos & 7);
  u128 x = 0;
  if (byte + 16 <= nbytes) {
    memcpy(&x, p + byte, 16);
  } else {
    for (size_t i = 0; i < 16 && byte + i < nbytes; i++) x |= (u128)p[byte + i] << (8 * i);
  }
  return (uint64_t)(x >> shift) & mask_of(w);
}

/* Unpacking with `w` a compile-time constant (one copy per width, chosen by
 * the switch below, lz4-style): each value is one unaligned 8-byte load, a
 * shift and a mask while the load stays inside the run, then the careful
 * path for the last few values. */
static inline __attribute__((always_inline)) void unpack_w(const uint8_t *p, size_t nbytes,
                                                           const unsigned w, size_t a, size_t b,
                                                           uint64_t base, uint64_t *out) {
  const uint64_t mask = mask_of(w);
  size_t k = a;
  if (w <= 56 && nbytes >= 8) {
    size_t safe = (nbytes - 8) * 8 / w + 1; /* values whose 8-byte load fits */
    size_t stop = b < safe ? b : safe;
    for (; k < stop; k++) {
      uint64_t x;
      memcpy(&x, p + ((k * w) >> 3), 8);
      out[k - a] = base + ((x >> ((k * w) & 7)) & mask);
    }
  }
  for (; k < b; k++) out[k - a] = base + load_bits(p, nbytes, k * w, w);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* AVX2: four values per step, each an 8-byte gather at its byte offset,
 * shifted by its bit offset and masked. For w <= 56 (one load covers a
 * value) and only the values whose load stays inside `avail`; returns the
 * first value it did not unpack, for the scalar code to finish. */
__attribute__((target("avx2"))) static size_t unpack_avx2(const uint8_t *p, size_t avail,
                                                          unsigned w, size_t a, size_t b,
                                                          uint64_t base, uint64_t *out) {
  if (avail < 8) return a;
  size_t safe = (avail - 8) * 8 / w + 1; /* values whose 8-byte load fits */
  size_t stop = b < safe ? b : safe;
  const __m256i vbase = _mm256_set1_epi64x((long long)base);
  const __m256i vmask = _mm256_set1_epi64x((long long)mask_of(w));
  const __m256i seven = _mm256_set1_epi64x(7);
  const __m256i step = _mm256_set1_epi64x((long long)(4 * (uint64_t)w));
  __m256i bit = _mm256_setr_epi64x((long long)(a * w), (long long)((a + 1) * w),
                                   (long long)((a + 2) * w), (long long)((a + 3) * w));
  size_t k = a;
  for (; k + 4 <= stop; k += 4) {
    __m256i x = _mm256_i64gather_epi64((const long long *)(const void *)p, _mm256_srli_epi64(bit, 3), 1);
    x = _mm256_and_si256(_mm256_srlv_epi64(x, _mm256_and_si256(bit, seven)), vmask);
    _mm256_storeu_si256((__m256i *)(void *)(out + (k - a)), _mm256_add_epi64(x, vbase));
    bit = _mm256_add_epi64(bit, step);
  }
  return k;
}

static int simd_disabled;

static int have_avx2(void) {
  static int cached = -1;
  if (cached < 0) cached = __builtin_cpu_supports("avx2") ? 1 : 0;
  return cached && !simd_disabled;
}
#endif

int uih_intseq_set_simd(int enabled) {
#if defined(__x86_64__)
  simd_disabled = !enabled;
  return enabled && __builtin_cpu_supports("avx2");
#else
  (void)enabled;
  return 0;
#endif
}

void uih_unpack(const uint8_t *p, size_t avail, unsigned w, size_t a, size_t b, uint64_t base,
                uint64_t *out) {
  size_t nbytes = avail;
#if defined(__x86_64__)
  if (w > 0 && w <= 56 && b - a >= 8 && have_avx2()) {
    size_t done = unpack_avx2(p, avail, w, a, b, base, out);
    out += done - a;
    a = done;
  }
#endif
  switch (w) {
    case 0:
      for (size_t k = a; k < b; k++) out[k - a] = base;
      return;
#define UIH_UNPACK_CASE(W) \
  case W: unpack_w(p, nbytes, W, a, b, base, out); return;
    UIH_UNPACK_CASE(1) UIH_UNPACK_CASE(2) UIH_UNPACK_CASE(3) UIH_UNPACK_CASE(4)
    UIH_UNPACK_CASE(5) UIH_UNPACK_CASE(6) UIH_UNPACK_CASE(7) UIH_UNPACK_CASE(8)
    UIH_UNPACK_CASE(9) UIH_UNPACK_CASE(10) UIH_UNPACK_CASE(11) UIH_UNPACK_CASE(12)
    UIH_UNPACK_CASE(13) UIH_UNPACK_CASE(14) UIH_UNPACK_CASE(15) UIH_UNPACK_CASE(16)
    UIH_UNPACK_CASE(17) UIH_UNPACK_CASE(18) UIH_UNPACK_CASE(19) UIH_UNPACK_CASE(20)
    UIH_UNPACK_CASE(21) UIH_UNPACK_CASE(22) UIH_UNPACK_CASE(23) UIH_UNPACK_CASE(24)
    UIH_UNPACK_CASE(25) UIH_UNPACK_CASE(26) UIH_UNPACK_CASE(27) UIH_UNPACK_CASE(28)
    UIH_UNPACK_CASE(29) UIH_UNPACK_CASE(30) UIH_UNPACK_CASE(31) UIH_UNPACK_CASE(32)
    UIH_UNPACK_CASE(40) UIH_UNPACK_CASE(48)
#undef UIH_UNPACK_CASE
    default: unpack_w(p, nbytes, w, a, b, base, out); return;
  }
}

/* ---- FOR blocks ----------------------------------------------------------- */

/* The stored form of a block minimum. */
static uint64_t min_store(uint64_t lo, int is_signed) {
  if (!is_signed) return lo;
  uint64_t s = lo ^ UIH_SIGN64; /* the two's-complement bits of the signed value */
  return (s << 1) ^ (0 - (s >> 63)); /* zigzag */
}
static uint64_t min_load(uint64_t z, int is_signed) {
  if (!is_signed) return z;
  return ((z >> 1) ^ (0 - (z & 1))) ^ UIH_SIGN64;
}

/* Bytes a block costs with low width `w`, given how many values need each
 * bit length (hist[b] = values with uih_bits(v - min) == b). */
static size_t block_cost(const size_t hist[65], size_t cnt, unsigned w, unsigned hw) {
  size_t nexc = 0;
  for (unsigned b = w + 1; b <= 64; b++) nexc += hist[b];
  size_t cost = (cnt * w + 7) / 8;
  if (nexc) cost += 1 + nexc + (nexc * (hw - w) + 7) / 8;
  return cost;
}

static void block_encode(uih_wbuf *out, const uint64_t *v, size_t cnt, int is_signed,
                         uint64_t *tmp) {
  uint64_t lo = v[0];
  for (size_t k = 1; k < cnt; k++) lo = v[k] < lo ? v[k] : lo;
  size_t hist[65] = {0};
  unsigned hw = 0;
  for (size_t k = 0; k < cnt; k++) {
    tmp[k] = v[k] - lo;
    unsigned b = uih_bits(tmp[k]);
    hist[b]++;
    hw = b > hw ? b : hw;
  }
  /* Patched FOR: the low width minimizing the block's size; values wider
   * than it become exceptions that store their high bits apart. Ties go to
   * the wider width (fewer exceptions, faster decoding). */
  unsigned w = hw;
  size_t best = block_cost(hist, cnt, hw, hw);
  for (unsigned cand = 0; cand < hw; cand++) {
    size_t cost = block_cost(hist, cnt, cand, hw);
    if (cost < best) best = cost, w = cand;
  }
  size_t nexc = 0;
  for (unsigned b = w + 1; b <= hw; b++) nexc += hist[b];
  uih_wbuf_varint(out, min_store(lo, is_signed));
  uih_wbuf_u8(out, (uint8_t)w);
  uih_wbuf_u8(out, (uint8_t)nexc);
  uint64_t high[UIH_SEQ_BLOCK];
  uint8_t pos[UIH_SEQ_BLOCK];
  size_t e = 0;
  uint64_t low_mask = mask_of(w);
  for (size_t k = 0; k < cnt && nexc; k++)
    if (uih_bits(tmp[k]) > w) {
      pos[e] = (uint8_t)k;
      high[e++] = tmp[k] >> w;
      tmp[k] &= low_mask;
    }
  uih_pack(out, tmp, cnt, w);
  if (nexc) {
    uih_wbuf_u8(out, (uint8_t)(hw - w));
    uih_wbuf_put(out, pos, nexc);
    uih_pack(out, high, nexc, hw - w);
  }
}

/* Reads one FOR block of `cnt` values and stores values [a, b) of it, each
 * plus `bias`. */
static int block_decode(uih_cursor *c, size_t cnt, int is_signed, uint64_t bias, size_t a,
                        size_t b, uint64_t *out) {
  uint64_t lo = min_load(uih_cursor_varint(c), is_signed) + bias;
  unsigned w = uih_cursor_u8(c);
  size_t nexc = uih_cursor_u8(c);
  if (c->bad || w > 64 || nexc > cnt || (nexc && w == 64)) return c->bad = 1, -1;
  size_t nbytes = (cnt * w + 7) / 8;
  const uint8_t *p = uih_cursor_take(c, nbytes);
  if (!p) return -1;
  /* Bytes after the run but before the cursor's end may be loaded (and
   * masked off): most values then take the one-load path. */
  if (a < b) uih_unpack(p, nbytes + uih_cursor_left(c), w, a, b, lo, out);
  if (nexc == 0) return 0;
  unsigned xw = uih_cursor_u8(c);
  const uint8_t *pos = uih_cursor_take(c, nexc);
  size_t xbytes = (nexc * xw + 7) / 8;
  const uint8_t *xp = uih_cursor_take(c, xbytes);
  /* Exceptions have high bits (xw >= 1) that fit above w. */
  if (!pos || !xp || xw == 0 || xw > 64 - w) return c->bad = 1, -1;
  for (size_t i = 0; i < nexc; i++)
    if (pos[i] >= cnt || (i > 0 && pos[i] <= pos[i - 1])) return c->bad = 1, -1;
  if (a >= b) return 0;
  uint64_t high[UIH_SEQ_BLOCK];
  uih_unpack(xp, xbytes + uih_cursor_left(c), xw, 0, nexc, 0, high);
  for (size_t i = 0; i < nexc; i++)
    if (pos[i] >= a && pos[i] < b) out[pos[i] - a] += high[i] << w;
  return 0;
}

/* ---- sequences ------------------------------------------------------------ */

void uih_seq_encode(uih_wbuf *out, const uint64_t *v, size_t n, uih_seq_kind kind) {
  int order = kind == UIH_SEQ_DELTA ? 1 : kind == UIH_SEQ_DELTA2 ? 2 : 0;
  uint64_t res[UIH_SEQ_BLOCK], tmp[UIH_SEQ_BLOCK];
  for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
    size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
    const uint64_t *blk = v + s;
    if (order == 0) {
      block_encode(out, blk, cnt, kind == UIH_SEQ_FOR_SIGNED, tmp);
      continue;
    }
    uih_wbuf_u64(out, blk[0]);
    size_t skip = 1;
    if (order == 2 && cnt >= 2) {
      uih_wbuf_u64(out, blk[1] - blk[0]);
      skip = 2;
    }
    if (cnt <= skip) continue;
    for (size_t k = skip; k < cnt; k++) {
      uint64_t d = blk[k] - blk[k - 1];
      if (order == 2) d -= blk[k - 1] - blk[k - 2];
      res[k - skip] = d ^ UIH_SIGN64;
    }
    block_encode(out, res, cnt - skip, 1, tmp);
  }
}

int uih_seq_decode(uih_cursor *c, size_t n, uih_seq_kind kind, size_t a, size_t b, uint64_t *out,
                   uint64_t *scratch) {
  int order = kind == UIH_SEQ_DELTA ? 1 : kind == UIH_SEQ_DELTA2 ? 2 : 0;
  for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
    size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
    /* The part of [a, b) inside this block, relative to the block. */
    size_t lo = a > s ? a - s : 0;
    size_t hi = b < s + cnt ? (b > s ? b - s : 0) : cnt;
    if (lo > hi) lo = hi;
    uint64_t *dst = lo < hi ? out + (s + lo - a) : NULL; /* only written when lo < hi */
    if (order == 0) {
      if (block_decode(c, cnt, kind == UIH_SEQ_FOR_SIGNED, 0, lo, hi, dst) != 0) return -1;
      continue;
    }
    uint64_t anchor = uih_cursor_u64(c);
    size_t skip = 1;
    uint64_t d0 = 0;
    if (order == 2 && cnt >= 2) {
      d0 = uih_cursor_u64(c);
      skip = 2;
    }
    if (c->bad) return -1;
    if (cnt <= skip) {
      /* Only anchors: values are the anchor (and anchor + d0). */
      for (size_t k = lo; k < hi; k++) dst[k - lo] = k == 0 ? anchor : anchor + d0;
      continue;
    }
    /* Residuals for positions [skip, hi) are needed to rebuild [lo, hi).
     * They are stored as r = d ^ 2^63, and x ^ 2^63 = x + 2^63 (mod 2^64),
     * so unpacking with base min + 2^63 yields the deltas themselves. */
    size_t need = hi > skip ? hi - skip : 0;
    if (block_decode(c, cnt - skip, 1, UIH_SIGN64, 0, need, scratch) != 0) return -1;
    if (lo >= hi) continue;
    uint64_t val = anchor;
    if (lo == 0) dst[0] = val;
    if (order == 1) {
      size_t k = 1;
      for (; k < lo; k++) val += scratch[k - 1];
      for (; k < hi; k++) {
        val += scratch[k - 1];
        dst[k - lo] = val;
      }
    } else {
      uint64_t delta = d0;
      val += d0; /* k = 1 */
      if (lo <= 1 && hi > 1) dst[1 - lo] = val;
      size_t k = 2;
      for (; k < lo; k++) {
        delta += scratch[k - 2];
        val += delta;
      }
      for (; k < hi; k++) {
        delta += scratch[k - 2];
        val += delta;
        dst[k - lo] = val;
      }
    }
  }
  return c->bad ? -1 : 0;
}
