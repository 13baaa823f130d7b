/* Stripe columns, writing side: presence, the smallest value encoding, and
 * optional compression. See stripe_format.h for the bytes. */
#include <lz4.h>
#include <stdlib.h>

#include "error_internal.h"
#include "intseq.h"
#include "radix.h"
#include "stripe_internal.h"

/* ---- value encodings: each appends its form of vals[0..m) to `out` -------- */

static void enc_plain(uih_wbuf *out, const uint64_t *v, size_t m, uih_type t) {
  size_t w = uih_type_width(t);
  if (t == UIH_TYPE_FLAG) {
    uih_pack(out, v, m, 1);
    return;
  }
  uint8_t *dst = uih_wbuf_zeros(out, m * w);
  if (!dst) return;
  for (size_t k = 0; k < m; k++) memcpy(dst + k * w, &v[k], w); /* little-endian low bytes */
}

static void enc_bss(uih_wbuf *out, const uint64_t *v, size_t m) {
  uint8_t *dst = uih_wbuf_zeros(out, 4 * m);
  if (!dst) return;
  for (size_t k = 0; k < m; k++)
    for (size_t b = 0; b < 4; b++) dst[b * m + k] = (uint8_t)(v[k] >> (8 * b));
}

/* Sorts v[0..m) ascending with tmp[0..m) as scratch: insertion sort when
 * short, else common/radix.h's. */
static void sort_u64(uint64_t *v, uint64_t *tmp, size_t m) {
  if (m <= 32) {
    for (size_t i = 1; i < m; i++) {
      uint64_t x = v[i];
      size_t j = i;
      for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
      v[j] = x;
    }
    return;
  }
  uih_radix_sort_u64(v, tmp, m, 0);
}

/* Binary search in the sorted distinct values. */
static uint64_t dict_code(const uint64_t *dict, size_t k, uint64_t v) {
  size_t lo = 0, hi = k;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (dict[mid] <= v) lo = mid;
    else hi = mid;
  }
  return lo;
}

static void enc_dict(uih_wbuf *out, const uint64_t *v, size_t m, uih_seq_kind kind, uint64_t *dict,
                     uint64_t *codes) {
  memcpy(dict, v, m * sizeof *v);
  sort_u64(dict, codes, m); /* codes is scratch until the codes are made */
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (k == 0 || dict[i] != dict[k - 1]) dict[k++] = dict[i];
  for (size_t i = 0; i < m; i++) codes[i] = dict_code(dict, k, v[i]);
  uih_wbuf_varint(out, k);
  uih_seq_encode(out, dict, k, kind);
  uih_seq_encode(out, codes, m, UIH_SEQ_FOR);
}

static void enc_rle(uih_wbuf *out, const uint64_t *v, size_t m, uih_seq_kind kind, uint64_t *vals,
                    uint64_t *lens) {
  size_t r = 0;
  for (size_t i = 0; i < m; i++) {
    if (r > 0 && vals[r - 1] == v[i]) {
      lens[r - 1]++;
    } else {
      vals[r] = v[i];
      lens[r++] = 0; /* stored as length - 1 */
    }
  }
  uih_wbuf_varint(out, r);
  uih_seq_encode(out, vals, r, kind);
  uih_seq_encode(out, lens, r, UIH_SEQ_FOR);
}

static void enc_sparse(uih_wbuf *out, const uint64_t *v, size_t m, uih_seq_kind kind, uint64_t *pos,
                       uint64_t *nz) {
  size_t z = 0;
  for (size_t i = 0; i < m; i++)
    if (v[i] != 0) {
      pos[z] = i;
      nz[z++] = v[i];
    }
  uih_wbuf_varint(out, z);
  /* Positions as bits or as a list, whichever is smaller. */
  size_t bitmap_bytes = (m + 7) / 8;
  size_t before = out->len;
  uih_wbuf_u8(out, 1);
  uih_seq_encode(out, pos, z, UIH_SEQ_FOR);
  if (out->len - before - 1 > bitmap_bytes) {
    out->len = before;
    uih_wbuf_u8(out, UIH_SEQ_FOR);
    uint8_t *bits = uih_wbuf_zeros(out, bitmap_bytes);
    for (size_t i = 0; bits && i < z; i++) uih_bit_set(bits, pos[i]);
  }
  uih_seq_encode(out, nz, z, kind);
}

/* The rank in `d` of each of vals[0..m), or NOT_HELD, in e->ranks: the
 * lookups the shared and the coded forms both take, done once a column.
 * Returns how many values `d` holds. */
#define NOT_HELD UINT32_MAX
static size_t rank_values(uih_stripe_encoder *e, const uih_value_dict *d, const uint64_t *v, size_t m, uih_type t) {
  return value_dict_rank_all(d, v, m, t, e->ranks, NOT_HELD);
}

/* The shared form (stripe_format.h) against dictionary `d`, whose ranks of
 * the m values are in e->ranks (h of them held, h >= 1): its id, how many
 * values it holds, which ones (a bitmap, unless all), their ranks, then
 * the others. */
static void enc_shared(uih_stripe_encoder *e, uih_wbuf *out, const uih_value_dict *d, const uint64_t *v, size_t m,
                       size_t h, uih_type t) {
  uint64_t *ranks = e->aux, *others = e->aux2;
  uih_wbuf_u32(out, d->id);
  uih_wbuf_varint(out, h);
  if (h < m) {
    uint8_t *bits = uih_wbuf_zeros(out, (m + 7) / 8);
    for (size_t k = 0; bits && k < m; k++)
      if (e->ranks[k] != NOT_HELD) uih_bit_set(bits, k);
  }
  size_t r = 0, o = 0;
  for (size_t k = 0; k < m; k++) {
    if (e->ranks[k] != NOT_HELD) ranks[r++] = e->ranks[k];
    else others[o++] = v[k];
  }
  uih_seq_encode(out, ranks, h, UIH_SEQ_FOR);
  uih_seq_encode(out, others, o, for_kind(t));
}

/* The coded form (stripe_format.h) against dictionary `d`, which has a
 * model, the ranks of the m values in e->ranks (h of them held, h >= 1):
 * the values it does not hold, then per block of UIH_SEQ_BLOCK values two
 * streams of prefix codes (even and odd positions: a decoder follows two
 * chains of bits at once). Returns 0, or -1 when out of memory. */
static int enc_coded(uih_stripe_encoder *e, uih_wbuf *out, const uih_value_dict *d, const uint64_t *v, size_t m,
                     size_t h, uih_type t) {
  uint64_t *others = e->aux2;
  size_t o = 0;
  for (size_t k = 0; k < m; k++)
    if (e->ranks[k] == NOT_HELD) others[o++] = v[k];
  uih_wbuf_u16(out, (uint16_t)d->id);
  uih_wbuf_varint(out, m - h);
  uih_seq_encode(out, others, o, for_kind(t));
  const uint32_t esc = d->nsym - 1;
  const size_t nblocks = (m + UIH_SEQ_BLOCK - 1) / UIH_SEQ_BLOCK;
  for (size_t b = 0; b < nblocks; b++) {
    const size_t start = b * UIH_SEQ_BLOCK, stop = start + UIH_SEQ_BLOCK < m ? start + UIH_SEQ_BLOCK : m;
    pc_writer w[2] = {{.out = &e->streams[0]}, {.out = &e->streams[1]}};
    uih_wbuf_reset(&e->streams[0]);
    uih_wbuf_reset(&e->streams[1]);
    e->streams[0].count_only = e->streams[1].count_only = out->count_only; /* measured with it */
    size_t misses = 0;
    for (size_t k = start; k < stop; k++) {
      pc_writer *s = &w[(k - start) & 1];
      if (e->ranks[k] == NOT_HELD) {
        pc_put(s, d->codes[esc], d->lens[esc]);
        misses++;
        continue;
      }
      unsigned raw;
      uint32_t bits, sym = dict_symbol_of(d->direct, e->ranks[k], &raw, &bits);
      pc_put(s, d->codes[sym], d->lens[sym]);
      pc_put(s, bits, raw);
    }
    pc_flush(&w[0]);
    pc_flush(&w[1]);
    if (nblocks > 1) uih_wbuf_varint(out, misses);
    uih_wbuf_varint(out, e->streams[0].len);
    if (b + 1 < nblocks) uih_wbuf_varint(out, e->streams[1].len); /* the last runs to the end */
    uih_wbuf_put(out, e->streams[0].data, e->streams[0].len);
    uih_wbuf_put(out, e->streams[1].data, e->streams[1].len);
  }
  return e->streams[0].oom || e->streams[1].oom ? -1 : 0;
}
#undef NOT_HELD

static void enc_values(uih_stripe_encoder *e, uih_wbuf *out, uint32_t enc, const uint64_t *v,
                       size_t m, uih_type t) {
  switch (enc) {
    case UIH_ENC_PLAIN: enc_plain(out, v, m, t); break;
    case UIH_ENC_FOR: uih_seq_encode(out, v, m, for_kind(t)); break;
    case UIH_ENC_DELTA:
    case UIH_ENC_DELTA2:
      uih_seq_encode(out, v, m, stripe_seq_kind(enc, UIH_STRIPE_VERSION, stripe_type_signed(t)));
      break;
    case UIH_ENC_DICT: enc_dict(out, v, m, for_kind(t), e->aux, e->aux2); break;
    case UIH_ENC_RLE: enc_rle(out, v, m, for_kind(t), e->aux, e->aux2); break;
    case UIH_ENC_BSS: enc_bss(out, v, m); break;
    case UIH_ENC_SPARSE: enc_sparse(out, v, m, for_kind(t), e->aux, e->aux2); break;
  }
}

/* The encoding a fast encoder uses (uih_stripe_encoder_opts.fast): the
 * smallest by an estimate from one pass over the values — bits per value
 * of frame of reference (their range), of delta (the deltas' range), of
 * runs and of the non-zero values — among those `allowed`; dictionaries,
 * delta-of-delta and byte-stream split are not estimated, and used only
 * when nothing else is allowed. Ties go to the lowest-numbered encoding. */
static uint32_t fast_encoding(const uint64_t *v, size_t m, uih_type t, uint32_t allowed) {
  uint64_t lo = v[0], hi = v[0];
  int64_t dlo = 0, dhi = 0;
  size_t runs = 1, nonzero = v[0] != 0;
  for (size_t i = 1; i < m; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
    int64_t d = (int64_t)(v[i] - v[i - 1]);
    if (i == 1 || d < dlo) dlo = d;
    if (i == 1 || d > dhi) dhi = d;
    runs += v[i] != v[i - 1];
    nonzero += v[i] != 0;
  }
  const uint64_t range_bits = uih_bits(hi - lo), pos_bits = uih_bits(m);
  uint64_t cost[UIH_ENC_COUNT] = {0};
  uint32_t estimated = 0;
  cost[0] = (uint64_t)m * 8 * uih_type_width(t), estimated |= UIH_ENC_PLAIN;
  cost[1] = 64 + (uint64_t)m * uih_bits((uint64_t)dhi - (uint64_t)dlo), estimated |= UIH_ENC_DELTA;
  cost[3] = (uint64_t)m * range_bits, estimated |= UIH_ENC_FOR;
  cost[5] = (uint64_t)runs * (range_bits + pos_bits), estimated |= UIH_ENC_RLE;
  cost[7] = (uint64_t)nonzero * (range_bits + pos_bits) + 8, estimated |= UIH_ENC_SPARSE;
  uint32_t best = 0;
  for (uint32_t k = 0, enc = 1; k < UIH_ENC_COUNT; k++, enc <<= 1)
    if ((allowed & estimated & enc) && (best == 0 || cost[k] < cost[stripe_enc_id(best)])) best = enc;
  return best ? best : (allowed & -allowed);
}

/* ---- presence ------------------------------------------------------------- */

static uint8_t enc_presence(uih_stripe_encoder *e, const uih_column *col, uint32_t n, size_t m) {
  if (m == n) return PRESENCE_ALL;
  if (m == 0) return PRESENCE_NONE;
  size_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (uih_column_has(col, i)) e->aux[k++] = i;
  uih_wbuf_reset(&e->cand);
  uih_wbuf_varint(&e->cand, k);
  uih_seq_encode(&e->cand, e->aux, k, UIH_SEQ_FOR);
  size_t bitmap_bytes = (n + 7) / 8;
  if (e->cand.len < bitmap_bytes) {
    uih_wbuf_put(&e->payload, e->cand.data, e->cand.len);
    return PRESENCE_LIST;
  }
  uint8_t *bits = uih_wbuf_zeros(&e->payload, bitmap_bytes);
  if (bits) memcpy(bits, col->present, bitmap_bytes); /* little-endian words = LSB-first bytes */
  if (bits && (n & 7)) bits[bitmap_bytes - 1] &= (uint8_t)((1u << (n & 7)) - 1);
  return PRESENCE_BITMAP;
}

/* ---- compression ---------------------------------------------------------- */

/* Compresses e->payload into e->comp with `algo`; returns the stored size or
 * SIZE_MAX when the algorithm failed. */
static size_t try_compress(uih_stripe_encoder *e, int algo) {
  const uih_wbuf *raw = &e->payload;
  uih_wbuf_reset(&e->comp);
  uih_wbuf_varint(&e->comp, raw->len);
  size_t bound = algo == STRIPE_COMPRESS_LZ4 ? (size_t)LZ4_compressBound((int)raw->len)
                                             : ZSTD_compressBound(raw->len);
  if (!uih_wbuf_reserve(&e->comp, bound)) return SIZE_MAX;
  uint8_t *dst = e->comp.data + e->comp.len;
  size_t got;
  if (algo == STRIPE_COMPRESS_LZ4) {
    int r = LZ4_compress_default((const char *)raw->data, (char *)dst, (int)raw->len, (int)bound);
    got = r > 0 ? (size_t)r : SIZE_MAX;
  } else {
    got = ZSTD_compressCCtx(e->zstd, dst, bound, raw->data, raw->len, e->opts.zstd_level);
    if (ZSTD_isError(got)) got = SIZE_MAX;
  }
  if (got == SIZE_MAX) return SIZE_MAX;
  e->comp.len += got;
  return e->comp.len;
}

/* Bit-packed payloads (those of every encoding but plain and byte-stream
 * split, with their presence bytes) shorter than this are not offered to
 * a compressor the schema leaves to the codec (UIH_COMPRESS_AUTO): packing
 * strips what LZ4 and ZSTD find, and each try pays a compressor's setup.
 * (A stripe encoded like an earlier one tries what its column has: none
 * stays none until the stripe competes again.) Of 465,633 tries in a 10 M-event
 * scale_bench run one paid (4 bytes); stripe_bench's two data sets encode
 * to the same sizes without them, 1.3-1.4x faster; smooth synthetic
 * sequences (tests/engine/data/stripe_v1) lose 0.5% (bench/README.md,
 * "Compression tried where it can pay"). */
#define PACKED_COMPRESS_MIN 256

static int pick_compression(uih_stripe_encoder *e, uih_compression hint, uint32_t enc) {
  size_t raw = e->payload.len;
  if (hint == UIH_COMPRESS_NONE || raw < 32 || e->opts.no_compression || e->opts.fast) return STRIPE_COMPRESS_NONE;
  if (hint == UIH_COMPRESS_AUTO && raw < PACKED_COMPRESS_MIN && !(enc & (UIH_ENC_PLAIN | UIH_ENC_BSS)))
    return STRIPE_COMPRESS_NONE;
  double limit = (double)raw * (1.0 - e->opts.min_compression_gain);
  int best = STRIPE_COMPRESS_NONE, last = STRIPE_COMPRESS_NONE;
  size_t best_len = raw;
  for (int algo = STRIPE_COMPRESS_LZ4; algo <= STRIPE_COMPRESS_ZSTD; algo++) {
    if (hint == UIH_COMPRESS_LZ4 && algo != STRIPE_COMPRESS_LZ4) continue;
    if (hint == UIH_COMPRESS_ZSTD && algo != STRIPE_COMPRESS_ZSTD) continue;
    size_t len = try_compress(e, algo);
    last = len == SIZE_MAX ? STRIPE_COMPRESS_NONE : algo;
    if (len != SIZE_MAX && (double)len <= limit && len < best_len) {
      best = algo;
      best_len = len;
    }
  }
  /* The winner left in e->comp, unless the loop ended on another. */
  if (best != last && best != STRIPE_COMPRESS_NONE && try_compress(e, best) == SIZE_MAX) return STRIPE_COMPRESS_NONE;
  return best;
}

/* ---- the column ------------------------------------------------------------ */

/* Stein's binary method: shifts and subtractions where Euclid's divides
 * (a 64-bit division costs tens of cycles). gcd(0, b) = b. */
static uint64_t gcd(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return a | b;
  const int shift = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    const uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    a = lo;
    b = hi - lo;
  } while (b);
  return a << shift;
}

/* The largest step g >= 2 that every value's distance from the smallest is
 * a multiple of, with the smallest in *base; 0 when there is none (all
 * values equal, or no common step). */
static uint64_t common_step(const uint64_t *v, size_t m, uint64_t *base) {
  uint64_t lo, hi;
  uih_min_max(v, m, &lo, &hi);
  *base = lo;
  if (hi == lo) return 0;
  uint64_t g = 0;
  for (size_t k = 0; k < m && g != 1; k++) g = gcd(v[k] - lo, g);
  return g >= 2 ? g : 0;
}

/* The scaled form of a value encoding (stripe_format.h): the step, the base
 * unless the stripe's min timestamp is it, then the (value - base) / step
 * in e->scaled as an unsigned sequence. */
static void enc_scaled(uih_stripe_encoder *e, uih_wbuf *out, uint32_t enc, size_t m, uint64_t step,
                       uint64_t base, int is_ts) {
  uih_wbuf_varint(out, step);
  if (!is_ts) uih_wbuf_varint(out, stripe_base_code(e->type, base));
  uih_seq_encode(out, e->scaled, m, stripe_seq_kind(enc, UIH_STRIPE_VERSION, 0));
}

/* The common step of e->vals[0..m) (0: none) and e->scaled, the values as
 * multiples of it from *base. The timestamp column's base is the header's
 * min timestamp, stored already: a step of 1 makes its anchors and
 * minimums count from 0. */
static uint64_t scale(uih_stripe_encoder *e, size_t m, int is_ts, uint64_t *base) {
  uint64_t step = common_step(e->vals, m, base);
  if (step == 0 && is_ts) step = 1;
  if (step == 0) return 0;
  /* Every distance is a multiple of step = 2^z * d (d odd), so dividing is
   * exact: shift out 2^z, multiply by d's inverse mod 2^64 (Newton's
   * iteration, each step doubling the correct low bits from d's 3). */
  const int z = __builtin_ctzll(step);
  const uint64_t d = step >> z;
  uint64_t inv = d;
  for (int i = 0; i < 5; i++) inv *= 2 - d * inv;
  const uint64_t lo = *base;
  for (size_t k = 0; k < m; k++) e->scaled[k] = ((e->vals[k] - lo) >> z) * inv;
  return step;
}

/* 1 when candidate `enc` of vals[0..m) is longer than their frame of
 * reference, for certain: a run-length form without a repeat holds that
 * same sequence of the values (for_kind) and the run lengths besides, a
 * sparse form without a zero holds it and the positions. */
static int outgrown_by_for(uint32_t enc, const uint64_t *v, size_t m) {
  if (enc == UIH_ENC_RLE) {
    for (size_t k = 1; k < m; k++)
      if (v[k] == v[k - 1]) return 0;
    return 1;
  }
  if (enc == UIH_ENC_SPARSE) {
    for (size_t k = 0; k < m; k++)
      if (v[k] == 0) return 0;
    return 1;
  }
  return 0;
}

/* Candidate `enc` (`scaled`: its scaled form) of e->vals[0..m) into `out`.
 * Returns 0, or -1 when it cannot take the values: a dictionary form
 * holding none of them (*held: how many the dictionary holds, SIZE_MAX
 * until ranked), or a coded one out of memory. */
static int candidate(uih_stripe_encoder *e, uih_wbuf *out, uint32_t enc, int scaled, const uih_value_dict *dict,
                     size_t *held, size_t m, uint64_t step, uint64_t base, int is_ts) {
  if (enc & UIH_ENC_DICTIONARY) { /* (a dictionary: the column allows these forms only with one) */
    if (*held == SIZE_MAX) *held = rank_values(e, dict, e->vals, m, e->type);
    if (*held == 0) return -1; /* the form needs a value it holds */
    if (enc == UIH_ENC_CODED) return enc_coded(e, out, dict, e->vals, m, *held, e->type);
    enc_shared(e, out, dict, e->vals, m, *held, e->type);
  } else if (scaled) {
    enc_scaled(e, out, enc, m, step, base, is_ts);
  } else {
    enc_values(e, out, enc, e->vals, m, e->type);
  }
  return 0;
}

int stripe_column_encode(uih_stripe_encoder *e, const uih_column *col, uint32_t n, int is_ts,
                         const uih_stripe_column_info *like, stripe_dir_entry *de, uih_error *err) {
  const uih_trait *t = col->trait;
  /* The present values, widened (signed types with their sign bit
   * flipped, so they order as unsigned): the width's loop chosen once. */
  size_t m = 0;
  const uint64_t flip = stripe_to_u64(t->type, 0);
  switch (uih_type_width(t->type)) {
    case 8: {
      const uint64_t *x = col->values;
      for (uint32_t i = 0; i < n; i++)
        if (uih_column_has(col, i)) e->vals[m++] = x[i] ^ flip;
      break;
    }
    case 4: {
      const uint32_t *x = col->values;
      for (uint32_t i = 0; i < n; i++)
        if (uih_column_has(col, i)) e->vals[m++] = x[i] ^ flip;
      break;
    }
    default: {
      const uint8_t *x = col->values;
      for (uint32_t i = 0; i < n; i++)
        if (uih_column_has(col, i)) e->vals[m++] = x[i] ^ flip;
    }
  }

  uih_wbuf_reset(&e->payload);
  de->trait_id = t->id;
  de->type = (uint8_t)t->type;
  de->presence = enc_presence(e, col, n, m);

  /* Every allowed encoding competes on the actual values; ties go to the
   * lowest-numbered one, so the result is deterministic. Float columns
   * compete on their size as stored, after the compression step: byte-stream
   * split is plain's size until compressed, and gains only there (it puts
   * the bytes that repeat, signs and exponents, side by side). Bit-packed
   * integer encodings already strip what a compressor would find, so other
   * types compare raw sizes and compress once, which keeps encoding cheap. */
  uint32_t allowed = t->encodings & uih_encodings_for_type(t->type);
  if (allowed == 0) allowed = uih_encodings_for_type(t->type);
  /* The shared form needs a dictionary of the trait; a fast encoder's
   * stripes stand alone. */
  const uih_value_dict *dict = e->opts.fast ? NULL : stripe_context_encoding(e->ctx, e->group, t->id, t->type);
  if (!dict) allowed &= ~UIH_ENC_DICTIONARY; /* (the schema allows another: see schema_json.c) */
  /* The coded form needs a model, and names its dictionary by 16 bits of
   * its id: a decoder takes the first dictionary of the trait with a model
   * and those bits in the context, which must be this one. */
  if (dict && (!dict->nsym || stripe_context_find_coded(e->ctx, e->group, t->id, (uint16_t)dict->id) != dict))
    allowed &= ~UIH_ENC_CODED;
  /* Like an earlier stripe: its encodings alone (those this column allows;
   * scaled as it was, when the values still have a step) and its
   * compression alone; if they cannot take these values after all (one of
   * them is not in the dictionary), the full competition below. */
  const uint32_t every = allowed;
  uih_compression squeeze = t->compression; /* what pick_compression may try */
  int want_scaled = -1;                     /* -1: either */
  if (like && !e->opts.fast && (allowed & like->encoding)) {
    allowed &= like->encoding; /* (a directory's entry names one; a caller's may name more) */
    want_scaled = like->scaled;
    if (squeeze != UIH_COMPRESS_NONE) squeeze = like->compression;
  }
  int stored = t->type == UIH_TYPE_FLOAT32 && squeeze != UIH_COMPRESS_NONE;
  size_t presence_len = e->payload.len, best_len = 0, alone_len = 0;
  uint32_t best = 0;
  int best_scaled = 0;
  /* Values a common step apart (day-granular timestamps in seconds, whole
   * dollars in cents) may also be stored as multiples of it. */
  uint64_t base = 0, step = 0;
  size_t held = SIZE_MAX; /* values the dictionary holds, once ranked (rank_values) */
  int best_counted = 0;   /* the best candidate was measured, not written */
  const int may_scale = (m > 1 || (m == 1 && is_ts)) && stripe_type_scales(t->type);
  const int stepped = may_scale && (allowed & SCALED_ENCODINGS);
  e->type = t->type;
  if (stepped) step = scale(e, m, is_ts, &base);
  uih_wbuf_reset(&e->best);
  if (e->opts.fast && m > 0) { /* one encoding, chosen by estimate: no competition */
    best = fast_encoding(e->vals, m, t->type, allowed);
    /* Scaled when the bits it saves outweigh the step and base it stores. */
    size_t cost = uih_varint_len(step) + (is_ts ? 0 : uih_varint_len(stripe_base_code(t->type, base)));
    best_scaled = step && (best & SCALED_ENCODINGS) && (m * (uih_bits(step) - 1) / 8 > cost || is_ts);
    if (best_scaled) enc_scaled(e, &e->best, best, m, step, base, is_ts);
    else enc_values(e, &e->best, best, e->vals, m, t->type);
    allowed = 0; /* the loop below has nothing to try */
  }
  for (int pass = 0; pass < 2 && m > 0 && best == 0; pass++) {
    int for_measured = 0; /* frame of reference measured in this pass, before compression */
    if (pass == 1) { /* like's encoding could not take the values: everything competes */
      if (allowed == every || e->cand.oom) break;
      allowed = every;
      want_scaled = -1;
      squeeze = t->compression;
      stored = t->type == UIH_TYPE_FLOAT32 && squeeze != UIH_COMPRESS_NONE;
      alone_len = 0;
      if (!stepped && may_scale && (allowed & SCALED_ENCODINGS)) step = scale(e, m, is_ts, &base);
    }
    for (uint32_t enc = 1; enc < (1u << UIH_ENC_COUNT); enc <<= 1) {
      if (!(allowed & enc)) continue;
      const int can_scale = step && (enc & SCALED_ENCODINGS);
      for (int scaled = 0; scaled <= can_scale; scaled++) {
        if (want_scaled >= 0 && scaled != (want_scaled && can_scale)) continue;
        if (for_measured && outgrown_by_for(enc, e->vals, m)) continue; /* it cannot win, nor lower alone_len */
        uih_wbuf_reset(&e->cand);
        /* Measured, not written, when more than one competes and the
         * size before compression decides: the winner is written once. */
        e->cand.count_only = !stored && want_scaled < 0;
        const int took = candidate(e, &e->cand, enc, scaled, dict, &held, m, step, base, is_ts);
        e->cand.count_only = 0;
        if (took != 0) continue;
        if (e->cand.oom) break;
        for_measured |= enc == UIH_ENC_FOR && !scaled && !stored;
        size_t len = e->cand.len;
        if (stored) { /* presence + this candidate, compressed if that pays */
          e->payload.len = presence_len;
          uih_wbuf_put(&e->payload, e->cand.data, e->cand.len);
          len = pick_compression(e, squeeze, enc) == STRIPE_COMPRESS_NONE ? e->payload.len : e->comp.len;
        }
        /* Ranks decode slower than values stored as they are (a lookup each,
         * often a cache miss), prefix codes slower still (a chain of table
         * lookups): the shared form must save min_compression_gain over the
         * best of the others, as compression must, the coded form
         * min_coded_gain (tried after them: their bits are the highest). */
        if (enc & UIH_ENC_DICTIONARY) {
          const double gain = enc == UIH_ENC_CODED ? e->opts.min_coded_gain : e->opts.min_compression_gain;
          if (alone_len != 0 && (double)len > (double)alone_len * (1.0 - gain)) continue;
        } else if (alone_len == 0 || len < alone_len) {
          alone_len = len;
        }
        if (best == 0 || len < best_len) {
          best_counted = !stored && want_scaled < 0;
          if (!best_counted) {
            uih_wbuf tmp = e->best;
            e->best = e->cand;
            e->cand = tmp;
          }
          best = enc;
          best_scaled = scaled;
          best_len = len;
        }
      }
    }
  }
  if (best_counted) { /* the winner, written (it took the values measured: only memory can fail it now) */
    uih_wbuf_reset(&e->best);
    if (candidate(e, &e->best, best, best_scaled, dict, &held, m, step, base, is_ts) != 0)
      return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory in column %u", t->id);
  }
  if (best == 0) { /* no values (or none an encoding could take): the first that needs no dictionary */
    const uint32_t alone = every & ~UIH_ENC_DICTIONARY;
    UIH_RETURN_IF(alone == 0, err, UIH_ERR_INVALID_ARGUMENT,
                  "stripe encode: trait %u allows only encodings that need a value dictionary (shared, coded)", t->id);
    best = UIH_ENC_PLAIN & alone ? UIH_ENC_PLAIN : (alone & -alone);
  }
  de->encoding = (uint8_t)stripe_enc_id(best);
  de->scaled = (uint8_t)best_scaled;
  e->payload.len = presence_len;
  uih_wbuf_put(&e->payload, e->best.data, e->best.len);
  if (e->payload.oom || e->cand.oom || e->best.oom)
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory in column %u", t->id);

  int algo = pick_compression(e, squeeze, best);
  const uih_wbuf *src = algo == STRIPE_COMPRESS_NONE ? &e->payload : &e->comp;
  de->compression = (uint8_t)algo;
  de->length = (uint32_t)src->len;
  uih_wbuf_put(&e->body, src->data, src->len);
  UIH_RETURN_IF(e->body.oom, err, UIH_ERR_NO_MEMORY, "stripe encode: out of memory");
  return UIH_OK;
}
