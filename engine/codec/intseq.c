#include "intseq.h"

typedef unsigned __int128 u128;

/* The value at bit `pos`: one unaligned 16-byte load where the run has
 * room, near its end a byte-wise gather of only the bytes the value
 * touches (at most 9). */
static inline uint64_t load_bits(const uint8_t *p, size_t nbytes, size_t pos, unsigned w) {
  size_t byte = pos >> 3;
  unsigned shift = (unsigned)(pos & 7);
  u128 x = 0;
  if (byte + 16 <= nbytes) {
    memcpy(&x, p + byte, 16);
  } else {
    size_t touched = (shift + w + 7) / 8;
    for (size_t i = 0; i < touched && byte + i < nbytes; i++) x |= (u128)p[byte + i] << (8 * i);
  }
  return (uint64_t)(x >> shift) & uih_mask_of(w);
}

/* Unpacking with `w` a compile-time constant (one copy per width, chosen by
 * the switch below, lz4-style): each value is one unaligned 8-byte load, a
 * shift and a mask while the load stays inside the run, then the careful
 * path for the last few values. */
static inline __attribute__((always_inline)) void unpack_w(const uint8_t *p, size_t nbytes,
                                                           const unsigned w, size_t a, size_t b,
                                                           uint64_t base, uint64_t *out) {
  const uint64_t mask = uih_mask_of(w);
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

/* The scalar unpacking of every width. */
static void unpack_scalar(const uint8_t *p, size_t avail, unsigned w, size_t a, size_t b,
                          uint64_t base, uint64_t *out) {
  switch (w) {
    case 0:
      for (size_t k = a; k < b; k++) out[k - a] = base;
      return;
#define UIH_UNPACK_CASE(W) \
  case W: unpack_w(p, avail, W, a, b, base, out); return;
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
    default: unpack_w(p, avail, w, a, b, base, out); return;
  }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* AVX2 shuffles for widths 1..32 (W a compile-time constant, one copy per
 * width): eight values per step from a value index that is a multiple of
 * 8, so each step starts on a byte (8W bits). Each group of four values lies in one
 * 16-byte window (4W + 4 bits <= 16 bytes), loaded once and broadcast to
 * both 128-bit lanes; pshufb moves each value's bytes into its 64-bit lane,
 * a per-lane shift and a mask finish it. No gathers. Only steps whose
 * windows lie inside `avail` run; returns the first value not unpacked. */
#define UIH_SH0(W, g) (((g) * 4 * (W)) & 7)            /* group g's first bit in its window */
#define UIH_SB(W, g, j) ((UIH_SH0(W, g) + (j) * (W)) >> 3) /* value j's first byte there */
#define UIH_IX(W, g, j, t) (char)(UIH_SB(W, g, j) + (t) < 16 ? UIH_SB(W, g, j) + (t) : 0x80)
#define UIH_LANE(W, g, j)                                                                   \
  UIH_IX(W, g, j, 0), UIH_IX(W, g, j, 1), UIH_IX(W, g, j, 2), UIH_IX(W, g, j, 3),           \
      UIH_IX(W, g, j, 4), UIH_IX(W, g, j, 5), UIH_IX(W, g, j, 6), UIH_IX(W, g, j, 7)
#define UIH_SHUF(W, g) \
  _mm256_setr_epi8(UIH_LANE(W, g, 0), UIH_LANE(W, g, 1), UIH_LANE(W, g, 2), UIH_LANE(W, g, 3))
#define UIH_SHIFT(W, g, j) ((UIH_SH0(W, g) + (j) * (W)) & 7)
#define UIH_SHIFTS(W, g) \
  _mm256_setr_epi64x(UIH_SHIFT(W, g, 0), UIH_SHIFT(W, g, 1), UIH_SHIFT(W, g, 2), UIH_SHIFT(W, g, 3))

__attribute__((target("avx2"), always_inline)) static inline __m256i unpack4_avx2(
    const uint8_t *window, __m256i shuf, __m256i shifts, __m256i mask, __m256i vbase) {
  __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)window));
  x = _mm256_and_si256(_mm256_srlv_epi64(_mm256_shuffle_epi8(x, shuf), shifts), mask);
  return _mm256_add_epi64(x, vbase);
}

__attribute__((target("avx2"), always_inline)) static inline size_t unpack_shuf_w(
    const uint8_t *p, size_t avail, const unsigned W, size_t a, size_t b, uint64_t base,
    uint64_t *out) {
  const __m256i shuf0 = UIH_SHUF(W, 0), shuf1 = UIH_SHUF(W, 1);
  const __m256i shifts0 = UIH_SHIFTS(W, 0), shifts1 = UIH_SHIFTS(W, 1);
  const __m256i mask = _mm256_set1_epi64x((long long)uih_mask_of(W));
  const __m256i vbase = _mm256_set1_epi64x((long long)base);
  const size_t half = (4 * W) >> 3; /* the second group's window, in bytes from the first's */
  size_t o = a * W / 8;             /* the step's first byte */
  if (o + half + 16 > avail) return a;
  /* Steps whose windows fit: the last starts at most at avail - half - 16. */
  size_t fit = (avail - half - 16 - o) / W + 1, steps = (b - a) / 8;
  steps = steps < fit ? steps : fit;
  uint64_t *dst = out;
  for (size_t i = 0; i < steps; i++, o += W, dst += 8) {
    _mm256_storeu_si256((__m256i *)(void *)dst, unpack4_avx2(p + o, shuf0, shifts0, mask, vbase));
    _mm256_storeu_si256((__m256i *)(void *)(dst + 4), unpack4_avx2(p + o + half, shuf1, shifts1, mask, vbase));
  }
  size_t k = a + 8 * steps;
  if (k < b && b - k < 8 && steps < fit) { /* the last few values: masked stores */
    __m256i left = _mm256_set1_epi64x((long long)(b - k));
    __m256i lanes0 = _mm256_cmpgt_epi64(left, _mm256_setr_epi64x(0, 1, 2, 3));
    __m256i lanes1 = _mm256_cmpgt_epi64(left, _mm256_setr_epi64x(4, 5, 6, 7));
    _mm256_maskstore_epi64((long long *)(void *)dst, lanes0, unpack4_avx2(p + o, shuf0, shifts0, mask, vbase));
    _mm256_maskstore_epi64((long long *)(void *)(dst + 4), lanes1,
                           unpack4_avx2(p + o + half, shuf1, shifts1, mask, vbase));
    k = b;
  }
  return k;
}

/* Widths 33..56 the same way, two values to a 16-byte window (2W + 7 bits
 * fit in 15 bytes): eight values per step, four windows, two registers. */
#define UIH_WSH0(W, g) (((g) * 2 * (W)) & 7) /* window g's first bit */
#define UIH_WSB(W, g, j) ((UIH_WSH0(W, g) + (j) * (W)) >> 3)
#define UIH_WLANE(W, g, j)                                                                  \
  (char)UIH_WSB(W, g, j), (char)(UIH_WSB(W, g, j) + 1), (char)(UIH_WSB(W, g, j) + 2),       \
      (char)(UIH_WSB(W, g, j) + 3), (char)(UIH_WSB(W, g, j) + 4), (char)(UIH_WSB(W, g, j) + 5), \
      (char)(UIH_WSB(W, g, j) + 6), (char)(UIH_WSB(W, g, j) + 7)
#define UIH_WSHUF(W, g) /* windows g (low half) and g + 1 (high half) */ \
  _mm256_setr_epi8(UIH_WLANE(W, g, 0), UIH_WLANE(W, g, 1), UIH_WLANE(W, g + 1, 0), UIH_WLANE(W, g + 1, 1))
#define UIH_WSHIFT(W, g, j) ((UIH_WSH0(W, g) + (j) * (W)) & 7)
#define UIH_WSHIFTS(W, g) \
  _mm256_setr_epi64x(UIH_WSHIFT(W, g, 0), UIH_WSHIFT(W, g, 1), UIH_WSHIFT(W, g + 1, 0), UIH_WSHIFT(W, g + 1, 1))

__attribute__((target("avx2"), always_inline)) static inline __m256i unpack4_wide_avx2(
    const uint8_t *lo, const uint8_t *hi, __m256i shuf, __m256i shifts, __m256i mask, __m256i vbase) {
  __m256i x = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)lo)),
      _mm_loadu_si128((const __m128i *)(const void *)hi), 1);
  x = _mm256_and_si256(_mm256_srlv_epi64(_mm256_shuffle_epi8(x, shuf), shifts), mask);
  return _mm256_add_epi64(x, vbase);
}

__attribute__((target("avx2"), always_inline)) static inline size_t unpack_wide_w(
    const uint8_t *p, size_t avail, const unsigned W, size_t a, size_t b, uint64_t base,
    uint64_t *out) {
  const __m256i shuf0 = UIH_WSHUF(W, 0), shuf1 = UIH_WSHUF(W, 2);
  const __m256i shifts0 = UIH_WSHIFTS(W, 0), shifts1 = UIH_WSHIFTS(W, 2);
  const __m256i mask = _mm256_set1_epi64x((long long)uih_mask_of(W));
  const __m256i vbase = _mm256_set1_epi64x((long long)base);
  const size_t w1 = (2 * W) >> 3, w2 = (4 * W) >> 3, w3 = (6 * W) >> 3; /* windows' bytes */
  size_t o = a * W / 8;
  if (o + w3 + 16 > avail) return a;
  size_t fit = (avail - w3 - 16 - o) / W + 1, steps = (b - a) / 8;
  steps = steps < fit ? steps : fit;
  uint64_t *dst = out;
  for (size_t i = 0; i < steps; i++, o += W, dst += 8) {
    _mm256_storeu_si256((__m256i *)(void *)dst, unpack4_wide_avx2(p + o, p + o + w1, shuf0, shifts0, mask, vbase));
    _mm256_storeu_si256((__m256i *)(void *)(dst + 4),
                        unpack4_wide_avx2(p + o + w2, p + o + w3, shuf1, shifts1, mask, vbase));
  }
  size_t k = a + 8 * steps;
  if (k < b && b - k < 8 && steps < fit) { /* the last few values: masked stores */
    __m256i left = _mm256_set1_epi64x((long long)(b - k));
    __m256i lanes0 = _mm256_cmpgt_epi64(left, _mm256_setr_epi64x(0, 1, 2, 3));
    __m256i lanes1 = _mm256_cmpgt_epi64(left, _mm256_setr_epi64x(4, 5, 6, 7));
    _mm256_maskstore_epi64((long long *)(void *)dst, lanes0,
                           unpack4_wide_avx2(p + o, p + o + w1, shuf0, shifts0, mask, vbase));
    _mm256_maskstore_epi64((long long *)(void *)(dst + 4), lanes1,
                           unpack4_wide_avx2(p + o + w2, p + o + w3, shuf1, shifts1, mask, vbase));
    k = b;
  }
  return k;
}

__attribute__((target("avx2"))) static size_t unpack_shuf_avx2(const uint8_t *p, size_t avail,
                                                               unsigned w, size_t a, size_t b,
                                                               uint64_t base, uint64_t *out) {
  switch (w) {
#define UIH_SHUF_CASE(W) \
  case W: return unpack_shuf_w(p, avail, W, a, b, base, out);
    UIH_SHUF_CASE(1) UIH_SHUF_CASE(2) UIH_SHUF_CASE(3) UIH_SHUF_CASE(4)
    UIH_SHUF_CASE(5) UIH_SHUF_CASE(6) UIH_SHUF_CASE(7) UIH_SHUF_CASE(8)
    UIH_SHUF_CASE(9) UIH_SHUF_CASE(10) UIH_SHUF_CASE(11) UIH_SHUF_CASE(12)
    UIH_SHUF_CASE(13) UIH_SHUF_CASE(14) UIH_SHUF_CASE(15) UIH_SHUF_CASE(16)
    UIH_SHUF_CASE(17) UIH_SHUF_CASE(18) UIH_SHUF_CASE(19) UIH_SHUF_CASE(20)
    UIH_SHUF_CASE(21) UIH_SHUF_CASE(22) UIH_SHUF_CASE(23) UIH_SHUF_CASE(24)
    UIH_SHUF_CASE(25) UIH_SHUF_CASE(26) UIH_SHUF_CASE(27) UIH_SHUF_CASE(28)
    UIH_SHUF_CASE(29) UIH_SHUF_CASE(30) UIH_SHUF_CASE(31) UIH_SHUF_CASE(32)
#undef UIH_SHUF_CASE
#define UIH_WIDE_CASE(W) \
  case W: return unpack_wide_w(p, avail, W, a, b, base, out);
    UIH_WIDE_CASE(33) UIH_WIDE_CASE(34) UIH_WIDE_CASE(35) UIH_WIDE_CASE(36)
    UIH_WIDE_CASE(37) UIH_WIDE_CASE(38) UIH_WIDE_CASE(39) UIH_WIDE_CASE(40)
    UIH_WIDE_CASE(41) UIH_WIDE_CASE(42) UIH_WIDE_CASE(43) UIH_WIDE_CASE(44)
    UIH_WIDE_CASE(45) UIH_WIDE_CASE(46) UIH_WIDE_CASE(47) UIH_WIDE_CASE(48)
    UIH_WIDE_CASE(49) UIH_WIDE_CASE(50) UIH_WIDE_CASE(51) UIH_WIDE_CASE(52)
    UIH_WIDE_CASE(53) UIH_WIDE_CASE(54) UIH_WIDE_CASE(55) UIH_WIDE_CASE(56)
#undef UIH_WIDE_CASE
  }
  return a;
}

/* AVX2 for widths 1..56 where the shuffle windows would run past `avail`:
 * four values per step, each an 8-byte gather at its byte offset, shifted
 * by its bit offset and masked (one load covers a value). Only the values
 * whose load stays inside `avail`; returns the first value it did not
 * unpack, for the scalar code to finish. */
__attribute__((target("avx2"))) static size_t unpack_gather_avx2(const uint8_t *p, size_t avail,
                                                                 unsigned w, size_t a, size_t b,
                                                                 uint64_t base, uint64_t *out) {
  if (avail < 8) return a;
  size_t safe = (avail - 8) * 8 / w + 1; /* values whose 8-byte load fits */
  size_t stop = b < safe ? b : safe;
  const __m256i vbase = _mm256_set1_epi64x((long long)base);
  const __m256i vmask = _mm256_set1_epi64x((long long)uih_mask_of(w));
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

/* 4 x int64 inclusive prefix sum within a register: [a, a+b, a+b+c, a+b+c+d]. */
__attribute__((target("avx2"), always_inline)) static inline __m256i scan4_avx2(__m256i x) {
  x = _mm256_add_epi64(x, _mm256_slli_si256(x, 8)); /* [a, a+b, c, c+d] */
  __m256i low = _mm256_permute4x64_epi64(x, 0x50);  /* [., ., a+b, a+b] */
  return _mm256_add_epi64(x, _mm256_blend_epi32(_mm256_setzero_si256(), low, 0xf0));
}

/* One step of prefix_avx2 on the four inputs `x`: returns the values,
 * updates the carries (broadcast) and ors the deltas into *seen. `lanes`
 * marks the inputs that exist (all but in the last, partial step). */
__attribute__((target("avx2"), always_inline)) static inline __m256i prefix_step_avx2(
    __m256i x, const int order, __m256i lanes, __m256i *cv, __m256i *cd, __m256i *seen) {
  /* The carries advance by the step's own total (its last scanned lane),
   * so the chain from step to step is one add, not an add and a permute. */
  if (order == 2) { /* x becomes the first-order deltas */
    __m256i s = scan4_avx2(x);
    x = _mm256_add_epi64(s, *cd);
    *cd = _mm256_add_epi64(*cd, _mm256_permute4x64_epi64(s, 0xff));
    x = _mm256_and_si256(x, lanes); /* past the end they would stand still, not at zero */
  }
  *seen = _mm256_or_si256(*seen, x);
  __m256i s = scan4_avx2(x);
  __m256i y = _mm256_add_epi64(s, *cv);
  *cv = _mm256_add_epi64(*cv, _mm256_permute4x64_epi64(s, 0xff));
  return y;
}

/* The prefix sums of a delta block, four values per step: for i in [0, m),
 * d1 += in[i] (order 2; order 1 takes d1 = in[i]), v += d1, dst[i] = v,
 * with *v and *d1 carried in and out. The last partial step uses masked
 * loads and stores. `dst` may be `in` (each step reads before it writes).
 *
 * Returns 0 only if the values never decrease as int64 (counting *v on
 * entry as dst[-1]), found without a compare per value: if every delta is
 * below 2^56 (so non-negative) and m <= UIH_SEQ_BLOCK, the deltas sum to
 * less than 2^63, so the running sum wraps past INT64_MAX at most once,
 * and it did iff the last value is below the first. Deltas that large are
 * reported as a decrease: a false alarm only makes the caller check order
 * itself. */
__attribute__((target("avx2"), always_inline)) static inline int prefix_avx2(
    const uint64_t *in, size_t m, const int order, uint64_t *v, uint64_t *d1, uint64_t *dst) {
  const int64_t start = (int64_t)*v;
  __m256i cv = _mm256_set1_epi64x((long long)*v), cd = _mm256_set1_epi64x((long long)*d1);
  __m256i seen = _mm256_setzero_si256();
  const __m256i all = _mm256_set1_epi64x(-1);
  size_t i = 0;
  for (; i + 8 <= m; i += 8) { /* two steps per iteration: half the loop overhead */
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(in + i + 4));
    /* (order 1 ignores `lanes`; order 2's and with all ones folds away) */
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), prefix_step_avx2(x0, order, all, &cv, &cd, &seen));
    _mm256_storeu_si256((__m256i *)(void *)(dst + i + 4), prefix_step_avx2(x1, order, all, &cv, &cd, &seen));
  }
  if (i + 4 <= m) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), prefix_step_avx2(x, order, all, &cv, &cd, &seen));
    i += 4;
  }
  if (i < m) { /* masked-off inputs load as zeros: the sums stand still */
    __m256i lanes = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(m - i)), _mm256_setr_epi64x(0, 1, 2, 3));
    __m256i x = _mm256_maskload_epi64((const long long *)(const void *)(in + i), lanes);
    _mm256_maskstore_epi64((long long *)(void *)(dst + i), lanes, prefix_step_avx2(x, order, lanes, &cv, &cd, &seen));
  }
  *v = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(cv));
  *d1 = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(cd));
  int small = _mm256_testz_si256(seen, _mm256_set1_epi64x((long long)0xff00000000000000ull));
  return !(small && m <= UIH_SEQ_BLOCK && (int64_t)*v >= start);
}

__attribute__((target("avx2"))) static int prefix1_avx2(const uint64_t *in, size_t m, uint64_t *v,
                                                        uint64_t *dst) {
  uint64_t unused = 0;
  return prefix_avx2(in, m, 1, v, &unused, dst);
}
__attribute__((target("avx2"))) static int prefix2_avx2(const uint64_t *in, size_t m, uint64_t *v,
                                                        uint64_t *d1, uint64_t *dst) {
  return prefix_avx2(in, m, 2, v, d1, dst);
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

/* uih_unpack, inlined where a block is decoded. */
static inline __attribute__((always_inline)) void unpack_any(const uint8_t *p, size_t avail,
                                                             unsigned w, size_t a, size_t b,
                                                             uint64_t base, uint64_t *out) {
#if defined(__x86_64__)
  if (w > 0 && w <= 56 && b - a >= 4 && have_avx2()) {
    size_t k0 = (a + 7) & ~(size_t)7; /* the shuffle steps start on a byte */
    k0 = k0 < b ? k0 : b;
    if (k0 > a) unpack_scalar(p, avail, w, a, k0, base, out);
    size_t done = unpack_shuf_avx2(p, avail, w, k0, b, base, out + (k0 - a));
    out += done - a;
    a = done;
    if (b - a >= 8) {
      done = unpack_gather_avx2(p, avail, w, a, b, base, out);
      out += done - a;
      a = done;
    }
  }
#endif
  if (a < b) unpack_scalar(p, avail, w, a, b, base, out);
}

void uih_unpack(const uint8_t *p, size_t avail, unsigned w, size_t a, size_t b, uint64_t base,
                uint64_t *out) {
  unpack_any(p, avail, w, a, b, base, out);
}

/* 1 if pos[0..n) ascend strictly (n >= 1); `room` bytes from `pos` may be
 * read. SSE2 compares sixteen neighbours at a time where room allows. */
static int positions_ascend(const uint8_t *pos, size_t n, size_t room) {
  size_t i = 0;
#if defined(__x86_64__)
  const __m128i flip = _mm_set1_epi8((char)0x80); /* unsigned order as signed */
  for (; i + 1 < n && i + 17 <= room; i += 16) {
    __m128i prev = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(pos + i)), flip);
    __m128i next = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(pos + i + 1)), flip);
    unsigned up = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(next, prev));
    unsigned pairs = n - 1 - i < 16 ? (1u << (n - 1 - i)) - 1 : 0xffffu;
    if ((up & pairs) != pairs) return 0;
  }
#else
  (void)room;
#endif
  unsigned down = 0;
  for (i = i ? i : 1; i < n; i++) down |= pos[i] <= pos[i - 1];
  return !down;
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

/* Bytes a block costs with low width `w`, given nexc values wider than w
 * (exceptions) whose high bits take hw - w bits each. */
static size_t block_cost(size_t nexc, size_t cnt, unsigned w, unsigned hw) {
  size_t cost = (cnt * w + 7) / 8;
  if (nexc) cost += 1 + nexc + (nexc * (hw - w) + 7) / 8;
  return cost;
}

/* uih_bits without a branch: the widths of a block's values are counted in
 * a loop that a mispredicted zero would stall. */
static inline unsigned width_of(uint64_t x) {
  return 64u - (unsigned)__builtin_clzll(x | 1) - (x == 0);
}

static void block_encode(uih_wbuf *out, const uint64_t *v, size_t cnt, int is_signed,
                         uint64_t *tmp) {
  uint64_t lo, hi;
  uih_min_max(v, cnt, &lo, &hi);
  /* How many values take each width above lo: counts fit a byte (cnt <=
   * UIH_SEQ_BLOCK), and two tables take alternate values, so a run of one
   * width does not wait on its own last count. */
  _Static_assert(UIH_SEQ_BLOCK <= 255, "block widths are counted in bytes");
  const unsigned hw = uih_bits(hi - lo); /* the widest value is hi's */
  typedef uint8_t zero16 __attribute__((vector_size(16)));
  union {
    zero16 v[9];
    uint8_t at[72][2];
  } counts;
  for (unsigned j = 0; j <= hw / 8; j++) counts.v[j] = (zero16){0}; /* widths 0..hw alone */
  uint8_t(*hist)[2] = counts.at;
  size_t i = 0;
  for (; i + 1 < cnt; i += 2) {
    hist[width_of(v[i] - lo)][0]++;
    hist[width_of(v[i + 1] - lo)][1]++;
  }
  if (i < cnt) hist[width_of(v[i] - lo)][0]++;
  if (!out->count_only)
    for (i = 0; i < cnt; i++) tmp[i] = v[i] - lo;
  /* Patched FOR: the low width minimizing the block's size; values wider
   * than it become exceptions that store their high bits apart. A tie with
   * the full width goes to it (no exceptions, faster decoding); other ties
   * to the narrowest width. */
  unsigned w = hw;
  size_t nexc = 0, best = SIZE_MAX, best_exc = 0;
  unsigned best_w = hw;
  /* Downwards from hw, the values wider than cand accumulate. */
  size_t wider = 0;
  for (unsigned cand = hw; cand-- > 0;) {
    wider += (size_t)hist[cand + 1][0] + hist[cand + 1][1];
    size_t cost = block_cost(wider, cnt, cand, hw);
    if (cost <= best) best = cost, best_w = cand, best_exc = wider;
  }
  if (best < block_cost(0, cnt, hw, hw)) w = best_w, nexc = best_exc;
  /* A base of zero (0 in a signed sequence) instead of the smallest value
   * when every value fits the same width above it and it takes fewer varint
   * bytes: random wide values, such as hashed ids, gain nothing from their
   * minimum but its five or six bytes. Not when the first value is the
   * smallest, so an ascending block keeps its first value there (a ranged
   * decode of a position list finds its blocks by it). */
  const uint64_t zero = is_signed ? UIH_SIGN64 : 0;
  if (nexc == 0 && v[0] != lo && lo > zero && (hw == 64 || ((hi - zero) >> hw) == 0) &&
      uih_varint_len(min_store(zero, is_signed)) < uih_varint_len(min_store(lo, is_signed))) {
    for (size_t k = 0; k < cnt && !out->count_only; k++) tmp[k] = v[k] - zero;
    lo = zero;
  }
  if (out->count_only) { /* its length alone: the header and block_cost's bytes */
    out->len += uih_varint_len(min_store(lo, is_signed)) + 2 + block_cost(nexc, cnt, w, hw);
    return;
  }
  uih_wbuf_varint(out, min_store(lo, is_signed));
  uih_wbuf_u8(out, (uint8_t)w);
  uih_wbuf_u8(out, (uint8_t)nexc);
  uint64_t high[UIH_SEQ_BLOCK];
  uint8_t pos[UIH_SEQ_BLOCK];
  size_t e = 0;
  uint64_t low_mask = uih_mask_of(w);
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
  /* Bytes after the run that the cursor may load (masked off): most
   * values then take the one-load path. */
  if (a < b) unpack_any(p, nbytes + uih_cursor_loadable(c), w, a, b, lo, out);
  if (nexc == 0) return 0;
  unsigned xw = uih_cursor_u8(c);
  size_t room = uih_cursor_loadable(c); /* bytes readable from the positions on */
  const uint8_t *pos = uih_cursor_take(c, nexc);
  size_t xbytes = (nexc * xw + 7) / 8;
  const uint8_t *xp = uih_cursor_take(c, xbytes);
  /* Exceptions have high bits (xw >= 1) that fit above w. */
  if (!pos || !xp || xw == 0 || xw > 64 - w) return c->bad = 1, -1;
  /* Positions ascend strictly, so they are below cnt iff the last is. */
  if (!positions_ascend(pos, nexc, room) || pos[nexc - 1] >= cnt) return c->bad = 1, -1;
  if (a >= b) return 0;
  if (a == 0 && b == cnt && xw <= 56 && uih_cursor_loadable(c) >= 8) {
    /* The whole block, so every position is in range; each exception's
     * high bits are one 8-byte load inside the cursor. */
    const uint64_t xmask = uih_mask_of(xw);
    size_t bit = 0;
    for (size_t i = 0; i < nexc; i++, bit += xw) {
      uint64_t x;
      memcpy(&x, xp + (bit >> 3), 8);
      out[pos[i]] += ((x >> (bit & 7)) & xmask) << w;
    }
    return 0;
  }
  /* Part of the block: only the exceptions at positions [a, b), found in
   * the ascending positions, have their high bits unpacked. */
  size_t i0 = 0, i1;
  while (i0 < nexc && pos[i0] < a) i0++;
  for (i1 = i0; i1 < nexc && pos[i1] < b;) i1++;
  uint64_t high[UIH_SEQ_BLOCK];
  uih_unpack(xp, xbytes + uih_cursor_loadable(c), xw, i0, i1, 0, high);
  for (size_t i = i0; i < i1; i++) out[pos[i] - a] += high[i - i0] << w;
  return 0;
}

/* Skips one FOR block of `cnt` values: reads its header, checks the widths
 * and counts exactly as block_decode does and that its bytes are there, so
 * the cursor lands where block_decode would leave it; the packed values
 * are not unpacked and the exception positions not validated. */
static int block_skip(uih_cursor *c, size_t cnt) {
  const uint8_t *p = uih_cursor_peek(c, 10);
  uint64_t head;
  if (p && (memcpy(&head, p, 8), (~head & UINT64_C(0x8080808080808080)) != 0)) {
    /* The usual header, peeked at in place (as dir_next does): a minimum
     * of at most 8 varint bytes, which is always well-formed, then w and x. */
    size_t len = (size_t)__builtin_ctzll(~head & UINT64_C(0x8080808080808080)) / 8 + 1;
    unsigned w = p[len];
    size_t nexc = p[len + 1];
    if (w > 64 || nexc > cnt || (nexc && w == 64)) return c->bad = 1, -1;
    len += 2 + (cnt * w + 7) / 8;
    if (nexc) {
      const uint8_t *q = uih_cursor_peek(c, len + 1);
      unsigned xw = q ? q[len] : 0;
      if (xw == 0 || xw > 64 - w) return c->bad = 1, -1;
      len += 1 + nexc + (nexc * xw + 7) / 8;
    }
    return uih_cursor_take(c, len) ? 0 : -1;
  }
  (void)uih_cursor_varint(c);
  unsigned w = uih_cursor_u8(c);
  size_t nexc = uih_cursor_u8(c);
  if (c->bad || w > 64 || nexc > cnt || (nexc && w == 64)) return c->bad = 1, -1;
  if (!uih_cursor_take(c, (cnt * w + 7) / 8)) return -1;
  if (nexc == 0) return 0;
  unsigned xw = uih_cursor_u8(c);
  if (c->bad || xw == 0 || xw > 64 - w) return c->bad = 1, -1;
  return uih_cursor_take(c, nexc + (nexc * xw + 7) / 8) ? 0 : -1;
}

/* ---- sequence kinds and anchors ------------------------------------------- */

/* What a kind is made of: its order (0 FOR, 1 DELTA, 2 DELTA2) and how its
 * anchors are stored (below). */
enum { ANCHOR_U64 = 0, ANCHOR_VARINT, ANCHOR_VARINT_SIGNED };
static int seq_order(uih_seq_kind kind) {
  switch (kind) {
    case UIH_SEQ_DELTA:
    case UIH_SEQ_DELTA_VARINT:
    case UIH_SEQ_DELTA_VARINT_SIGNED: return 1;
    case UIH_SEQ_DELTA2:
    case UIH_SEQ_DELTA2_VARINT:
    case UIH_SEQ_DELTA2_VARINT_SIGNED: return 2;
    default: return 0;
  }
}
static int seq_anchors(uih_seq_kind kind) {
  switch (kind) {
    case UIH_SEQ_DELTA_VARINT:
    case UIH_SEQ_DELTA2_VARINT: return ANCHOR_VARINT;
    case UIH_SEQ_DELTA_VARINT_SIGNED:
    case UIH_SEQ_DELTA2_VARINT_SIGNED: return ANCHOR_VARINT_SIGNED;
    default: return ANCHOR_U64;
  }
}

/* A block's first value (`is_delta` 0) or first delta (1) in the anchor
 * form `form` (intseq.h). */
static void put_anchor(uih_wbuf *out, uint64_t x, int form, int is_delta) {
  if (form == ANCHOR_U64) uih_wbuf_u64(out, x);
  else if (is_delta) uih_wbuf_varint(out, (x << 1) ^ (0 - (x >> 63))); /* zigzag of x as int64 */
  else uih_wbuf_varint(out, form == ANCHOR_VARINT_SIGNED ? uih_zigzag64(uih_order_i64(x)) : x);
}
static uint64_t get_anchor(uih_cursor *c, int form, int is_delta) {
  if (form == ANCHOR_U64) return uih_cursor_u64(c);
  uint64_t z = uih_cursor_varint(c);
  if (is_delta) return (uint64_t)uih_unzigzag64(z);
  return form == ANCHOR_VARINT_SIGNED ? uih_order_u64(uih_unzigzag64(z)) : z;
}

/* Skips the block of `cnt` values at `c` of a sequence of `order` with
 * anchors in `form`: its anchors, then its FOR block. */
static int seq_block_skip(uih_cursor *c, size_t cnt, int order, int form) {
  if (order == 0) return block_skip(c, cnt);
  size_t skip = order == 2 && cnt >= 2 ? 2 : 1;
  for (size_t k = 0; k < skip; k++) (void)get_anchor(c, form, k);
  if (c->bad) return -1;
  return cnt > skip ? block_skip(c, cnt - skip) : 0;
}

/* ---- sequences ------------------------------------------------------------ */

void uih_seq_encode(uih_wbuf *out, const uint64_t *v, size_t n, uih_seq_kind kind) {
  const int order = seq_order(kind), form = seq_anchors(kind);
  uint64_t res[UIH_SEQ_BLOCK], tmp[UIH_SEQ_BLOCK];
  for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
    size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
    const uint64_t *blk = v + s;
    if (order == 0) {
      block_encode(out, blk, cnt, kind == UIH_SEQ_FOR_SIGNED, tmp);
      continue;
    }
    put_anchor(out, blk[0], form, 0);
    size_t skip = 1;
    if (order == 2 && cnt >= 2) {
      put_anchor(out, blk[1] - blk[0], form, 1);
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

/* Rebuilds values [lo, hi) of a delta block (order 1 or 2, lo < hi) into
 * dst[0..hi-lo) from its first value, its first delta d0 (order 2) and the
 * unpacked deltas r[k - order] of positions k >= order. With `vec` the sums
 * run in AVX2 and the return value is 0 only if the outputs they computed
 * never decrease as int64 (see prefix_avx2; the predecessor of the first
 * is position lo - 1, stricter than needed when lo > 0: a false alarm only
 * makes the caller check order itself). r[0..lo-order) may be overwritten. */
static int delta_block(uint64_t *r, int order, uint64_t first, uint64_t d0, size_t lo, size_t hi,
                       uint64_t *dst, int vec) {
  uint64_t val = first, delta = d0;
  if (lo == 0) dst[0] = val;
  if (order == 2 && hi > 1) {
    val += d0; /* position 1 */
    if (lo <= 1) dst[1 - lo] = val;
  }
  size_t k = (size_t)order; /* the first position rebuilt from r */
  if (k >= hi) return 0;
#if defined(__x86_64__)
  if (vec) {
    if (lo > k) { /* positions before the range: sums only (written over r) */
      if (order == 1) prefix1_avx2(r, lo - k, &val, r);
      else prefix2_avx2(r, lo - k, &val, &delta, r);
      k = lo;
    }
    const uint64_t *in = r + (k - (size_t)order);
    return order == 1 ? prefix1_avx2(in, hi - k, &val, dst + (k - lo))
                      : prefix2_avx2(in, hi - k, &val, &delta, dst + (k - lo));
  }
#else
  (void)vec;
#endif
  if (order == 1) {
    for (; k < lo; k++) val += r[k - 1];
    for (; k < hi; k++) {
      val += r[k - 1];
      dst[k - lo] = val;
    }
  } else {
    for (; k < lo; k++) {
      delta += r[k - 2];
      val += delta;
    }
    for (; k < hi; k++) {
      delta += r[k - 2];
      val += delta;
      dst[k - lo] = val;
    }
  }
  return 0;
}

int uih_seq_decode_biased(uih_cursor *c, size_t n, uih_seq_kind kind, uint64_t bias, size_t a,
                          size_t b, uint64_t *out, uint64_t *scratch, int *sorted) {
  const int order = seq_order(kind), form = seq_anchors(kind);
#if defined(__x86_64__)
  int vec = order > 0 && have_avx2();
#else
  int vec = 0;
#endif
  /* Order of the outputs across blocks: the last one so far (as int64). */
  int seen = 0, unordered = 0;
  int64_t last = 0;
  if (sorted) *sorted = 0;
  for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK) {
    size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
    /* The part of [a, b) inside this block, relative to the block. */
    size_t lo = a > s ? a - s : 0;
    size_t hi = b < s + cnt ? (b > s ? b - s : 0) : cnt;
    if (lo >= hi) { /* outside [a, b): only its length is needed */
      if (seq_block_skip(c, cnt, order, form) != 0) return -1;
      continue;
    }
    uint64_t *dst = out + (s + lo - a);
    if (order == 0) {
      if (block_decode(c, cnt, kind == UIH_SEQ_FOR_SIGNED, bias, lo, hi, dst) != 0) return -1;
      continue;
    }
    uint64_t first = get_anchor(c, form, 0) + bias;
    size_t skip = 1;
    uint64_t d0 = 0;
    if (order == 2 && cnt >= 2) {
      d0 = get_anchor(c, form, 1);
      skip = 2;
    }
    if (c->bad) return -1;
    if (cnt > skip) {
      /* Residuals for positions [skip, hi) are needed to rebuild [lo, hi).
       * They are stored as r = d ^ 2^63, and x ^ 2^63 = x + 2^63 (mod 2^64),
       * so unpacking with base min + 2^63 yields the deltas themselves. */
      size_t need = hi > skip ? hi - skip : 0;
      if (block_decode(c, cnt - skip, 1, UIH_SIGN64, 0, need, scratch) != 0) return -1;
    }
    unordered |= delta_block(scratch, order, first, d0, lo, hi, dst, vec);
    /* The pairs delta_block leaves to its caller: the block's first output
     * after the previous block's last, position 1 after position 0. */
    unordered |= seen && (int64_t)dst[0] < last;
    unordered |= order == 2 && lo == 0 && hi > 1 && (int64_t)dst[1] < (int64_t)dst[0];
    last = (int64_t)dst[hi - lo - 1];
    seen = 1;
  }
  if (c->bad) return -1;
  if (sorted) *sorted = vec && !unordered;
  return 0;
}

int uih_seq_decode(uih_cursor *c, size_t n, uih_seq_kind kind, size_t a, size_t b, uint64_t *out,
                   uint64_t *scratch) {
  return uih_seq_decode_biased(c, n, kind, 0, a, b, out, scratch, NULL);
}

int uih_seq_skip(uih_cursor *c, size_t n, uih_seq_kind kind) {
  const int order = seq_order(kind), form = seq_anchors(kind);
  for (size_t s = 0; s < n; s += UIH_SEQ_BLOCK)
    if (seq_block_skip(c, n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK, order, form) != 0) return -1;
  return c->bad ? -1 : 0;
}

int uih_seq_peek_min(const uih_cursor *c, uint64_t *min) {
  uih_cursor p = *c;
  *min = uih_cursor_varint(&p);
  return p.bad ? -1 : 0;
}

int uih_seq_blocks(uih_cursor *c, size_t n, uint64_t *at) {
  const uint8_t *start = c->p;
  for (size_t j = 0, s = 0; s < n; j++, s += UIH_SEQ_BLOCK) {
    at[j] = (uint64_t)(c->p - start);
    if (block_skip(c, n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK) != 0) return -1;
  }
  return c->bad ? -1 : 0;
}

int uih_seq_get(uih_cursor start, size_t n, uih_seq_kind kind, const uint64_t *at, size_t i,
                uint64_t *out) {
  size_t j = i / UIH_SEQ_BLOCK, s = j * UIH_SEQ_BLOCK;
  if (i >= n || !uih_cursor_take(&start, at[j])) return -1;
  size_t cnt = n - s < UIH_SEQ_BLOCK ? n - s : UIH_SEQ_BLOCK;
  return block_decode(&start, cnt, kind == UIH_SEQ_FOR_SIGNED, 0, i - s, i - s + 1, out);
}
