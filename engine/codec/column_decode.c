/* Stripe columns, reading side. Every count, length and code read from the
 * payload is checked before use; a violation is reported as corruption
 * naming the trait. See stripe_format.h for the bytes. */
#include <lz4.h>
#include <stdlib.h>

#include "error_internal.h"
#include "intseq.h"
#include "stripe_internal.h"
#include "types.h"

static int bad(uih_error *err, const stripe_dir_entry *de, const char *what) {
  return uih_corruption(err, "stripe column of trait %u: %s", de->trait_id, what);
}

/* Bits [from, to) of `bits` (at most 64 of them) as one word, bit `from`
 * in bit 0; only the bytes that hold them are read. */
static inline uint64_t bits_word(const uint8_t *bits, size_t from, size_t to) {
  size_t first = from >> 3, last = (to + 7) >> 3; /* bytes [first, last) */
  uint64_t w = 0;
  if (last - first >= 8) memcpy(&w, bits + first, 8);
  else
    for (size_t i = first; i < last; i++) w |= (uint64_t)bits[i] << (8 * (i - first));
  if (last - first == 9) w = w >> (from & 7) | (uint64_t)bits[first + 8] << (64 - (from & 7));
  else w >>= from & 7;
  return to - from >= 64 ? w : w & ((UINT64_C(1) << (to - from)) - 1);
}

/* Number of set bits among bits [from, to) of `bits`: a word at a time,
 * with the CPU's popcnt where it has one (chosen at load time). */
#if defined(__x86_64__)
__attribute__((target_clones("popcnt", "default")))
#endif
static size_t popcount_range(const uint8_t *bits, size_t from, size_t to) {
  size_t c = 0;
  if (from < to && (from & 63)) { /* up to the next word boundary */
    size_t stop = (from | 63) + 1 < to ? (from | 63) + 1 : to;
    c += (size_t)__builtin_popcountll(bits_word(bits, from, stop));
    from = stop;
  }
  for (; from + 64 <= to; from += 64) {
    uint64_t w;
    memcpy(&w, bits + from / 8, 8);
    c += (size_t)__builtin_popcountll(w);
  }
  if (from < to) c += (size_t)__builtin_popcountll(bits_word(bits, from, to));
  return c;
}

/* Stores the indexes of the set bits among bits [from, to) of `bits` to
 * out[0..) in ascending order; returns how many. */
static size_t set_bits_in(const uint8_t *bits, size_t from, size_t to, uint64_t *out) {
  size_t k = 0;
  for (; from < to; from += 64)
    for (uint64_t w = bits_word(bits, from, to - from < 64 ? to : from + 64); w; w &= w - 1)
      out[k++] = from + (size_t)__builtin_ctzll(w);
  return k;
}

/* For a ranged decode: the values of a UIH_SEQ_FOR sequence of k strictly
 * ascending positions (a presence or sparse position list) that lie in
 * [lo, hi). A block's minimum is its first value, so the block headers tell
 * which blocks can hold such positions (those starting below hi whose
 * successor starts above lo): only those are decoded, the others skipped.
 * Stores the positions found to out[0..*count) and how many positions lie
 * below lo to *first; leaves `c` after the sequence. -1 if the bytes are
 * malformed, or the decoded blocks are not consecutive or do not ascend
 * strictly (which a valid list never gives). */
static int positions_in(uih_cursor *c, size_t k, uint64_t lo, uint64_t hi, uint64_t *out,
                        size_t *first, size_t *count) {
  uint64_t blk[UIH_SEQ_BLOCK];
  size_t nblocks = (k + UIH_SEQ_BLOCK - 1) / UIH_SEQ_BLOCK, got = 0, next = SIZE_MAX;
  uint64_t last = 0, prev_min = 0;
  uih_cursor prev = *c;
  *first = 0;
  for (size_t j = 0; j <= nblocks; j++) {
    uint64_t min = UINT64_MAX; /* past the last block: nothing starts */
    if (j < nblocks && uih_seq_peek_min(c, &min) != 0) return c->bad = 1, -1;
    if (j > 0 && prev_min < hi && min > lo) { /* block j - 1 may hold some */
      size_t s = (j - 1) * UIH_SEQ_BLOCK, cnt = k - s < UIH_SEQ_BLOCK ? k - s : UIH_SEQ_BLOCK;
      if (next == SIZE_MAX) *first = s; /* the blocks before are all below lo */
      else if (next != s) return -1;
      /* (a FOR sequence needs no scratch: blk serves as both) */
      if (uih_seq_decode(&prev, cnt, UIH_SEQ_FOR, 0, cnt, blk, blk) != 0) return -1;
      for (size_t i = 0; i < cnt; i++) {
        if ((next != SIZE_MAX || i > 0) && blk[i] <= last) return -1;
        last = blk[i];
        if (blk[i] < lo) *first = s + i + 1;
        else if (blk[i] < hi) out[got++] = blk[i];
      }
      next = s + cnt;
    }
    if (j == nblocks) break;
    prev = *c;
    prev_min = min;
    size_t cnt = k - j * UIH_SEQ_BLOCK < UIH_SEQ_BLOCK ? k - j * UIH_SEQ_BLOCK : UIH_SEQ_BLOCK;
    if (uih_seq_skip(c, cnt, UIH_SEQ_FOR) != 0) return -1;
  }
  *count = got;
  return 0;
}

/* Trailing bits after the first `n` must be zero, so every stripe has one
 * encoding and corruption there is caught. */
static int padding_clean(const uint8_t *bits, size_t n) {
  return uih_bit_tail(bits, n) == 0;
}

/* ---- value encodings: decode values [a, b) of m into out[0..b-a) ---------- */

static int dec_plain(uih_cursor *c, size_t m, size_t a, size_t b, uih_type t, uint64_t *out) {
  if (t == UIH_TYPE_FLAG) {
    size_t nbytes = (m + 7) / 8;
    const uint8_t *p = uih_cursor_take(c, nbytes);
    if (!p || !padding_clean(p, m)) return -1;
    uih_unpack(p, nbytes + uih_cursor_loadable(c), 1, a, b, 0, out);
    return 0;
  }
  size_t w = uih_type_info_of(t)->width;
  const uint8_t *p = uih_cursor_take(c, m * w);
  if (!p) return -1;
  for (size_t k = a; k < b; k++) {
    uint64_t v = 0;
    memcpy(&v, p + k * w, w);
    out[k - a] = v;
  }
  return 0;
}

static int dec_bss(uih_cursor *c, size_t m, size_t a, size_t b, uint64_t *out) {
  const uint8_t *p = uih_cursor_take(c, 4 * m);
  if (!p) return -1;
  for (size_t k = a; k < b; k++)
    out[k - a] = (uint64_t)p[k] | (uint64_t)p[m + k] << 8 | (uint64_t)p[2 * m + k] << 16 |
                 (uint64_t)p[3 * m + k] << 24;
  return 0;
}

/* 1 if v[0..n) ascends strictly (unsigned). Branch-free, so it vectorizes;
 * an AVX2 copy is chosen at load time where the CPU has it. */
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static int ascending(const uint64_t *v, size_t n) {
  int down = 0;
  for (size_t i = 1; i < n; i++) down |= v[i] <= v[i - 1];
  return !down;
}

static int dec_dict(uih_stripe_decoder *d, uih_cursor *c, size_t m, size_t a, size_t b,
                    uih_seq_kind kind, uint64_t *out, uint64_t *blk) {
  uint64_t k = uih_cursor_varint(c);
  if (c->bad || k == 0 || k > m) return -1;
  uint64_t *dict = d->aux;
  if ((a > 0 || b < m) && (b - a) * 16 < k) {
    /* A few codes against a large dictionary: look each one up alone
     * (blocks of the dictionary it does not use are only stepped over). */
    uih_cursor at = *c;
    if (uih_seq_blocks(c, k, dict) != 0) return -1;
    if (uih_seq_decode(c, m, UIH_SEQ_FOR, a, b, out, blk) != 0) return -1;
    for (size_t i = 0; i < b - a; i++)
      if (uih_seq_get(at, k, kind, dict, out[i], &out[i]) != 0) return -1;
    return 0;
  }
  if (uih_seq_decode(c, k, kind, 0, k, dict, blk) != 0) return -1;
  /* Sorted and distinct: one encoding per column; a range need not check. */
  if (a == 0 && b == m && !ascending(dict, k)) return -1;
  if (uih_seq_decode(c, m, UIH_SEQ_FOR, a, b, out, blk) != 0) return -1;
  for (size_t i = 0; i < b - a; i++) {
    if (out[i] >= k) return -1;
    out[i] = dict[out[i]];
  }
  return 0;
}

static int dec_rle(uih_stripe_decoder *d, uih_cursor *c, size_t m, size_t a, size_t b,
                   uih_seq_kind kind, uint64_t *out, uint64_t *blk) {
  uint64_t r = uih_cursor_varint(c);
  if (c->bad || r == 0 || r > m) return -1;
  uint64_t *vals = d->aux, *lens = d->aux2;
  if (a == 0 && b == m) { /* everything: every run checked */
    if (uih_seq_decode(c, r, kind, 0, r, vals, blk) != 0) return -1;
    if (uih_seq_decode(c, r, UIH_SEQ_FOR, 0, r, lens, blk) != 0) return -1;
    size_t pos = 0;
    for (size_t i = 0; i < r; i++) {
      if (lens[i] >= m - pos) return -1; /* runs must end exactly at m */
      size_t end = pos + lens[i] + 1;
      for (size_t k = pos; k < end; k++) out[k] = vals[i];
      pos = end;
    }
    return pos == m ? 0 : -1;
  }
  /* A range: run lengths from the first run until the runs reach b (the
   * rest skipped), then the values of only the runs that cover [a, b). */
  uih_cursor at_vals = *c;
  if (uih_seq_skip(c, r, kind) != 0) return -1;
  if (a >= b) return uih_seq_skip(c, r, UIH_SEQ_FOR);
  size_t pos = 0, first = 0, start = 0, nruns = 0, s = 0; /* runs [first, first + nruns) */
  for (; s < r && pos < b; s += UIH_SEQ_BLOCK) {
    size_t cnt = r - s < UIH_SEQ_BLOCK ? r - s : UIH_SEQ_BLOCK;
    uint64_t run[UIH_SEQ_BLOCK];
    if (uih_seq_decode(c, cnt, UIH_SEQ_FOR, 0, cnt, run, blk) != 0) return -1;
    for (size_t i = 0; i < cnt && pos < b; i++) {
      if (run[i] >= m - pos) return -1; /* runs must end by m */
      size_t end = pos + run[i] + 1;
      if (end > a) {
        if (nruns == 0) first = s + i, start = pos;
        lens[nruns++] = run[i];
      }
      pos = end;
    }
  }
  if (pos < b || (s < r && uih_seq_skip(c, r - s, UIH_SEQ_FOR) != 0)) return -1;
  if (uih_seq_decode(&at_vals, r, kind, first, first + nruns, vals, blk) != 0) return -1;
  for (size_t i = 0; i < nruns; i++) {
    size_t end = start + lens[i] + 1;
    for (size_t k = start > a ? start : a; k < end && k < b; k++) out[k - a] = vals[i];
    start = end;
  }
  return 0;
}

static int dec_sparse(uih_stripe_decoder *d, uih_cursor *c, size_t m, size_t a, size_t b,
                      uih_seq_kind kind, uint64_t *out, uint64_t *blk) {
  uint64_t z = uih_cursor_varint(c);
  uint8_t form = uih_cursor_u8(c);
  if (c->bad || z > m || form > 1) return -1;
  int full = a == 0 && b == m;
  /* The non-zero values [za, zb) are those at positions [a, b): pos[0..zb-za). */
  uint64_t *pos = d->aux;
  size_t za = 0, zb = 0;
  if (form == 0) {
    size_t nbytes = (m + 7) / 8;
    const uint8_t *bits = uih_cursor_take(c, nbytes);
    if (!bits || !padding_clean(bits, m)) return -1;
    if (full) { /* set bits, a 64-bit word at a time (bytes past m are zero-padded) */
      for (size_t wi = 0; wi < nbytes; wi += 8) {
        uint64_t word = 0;
        memcpy(&word, bits + wi, nbytes - wi < 8 ? nbytes - wi : 8);
        if ((size_t)__builtin_popcountll(word) > z - zb) return -1;
        for (; word; word &= word - 1) pos[zb++] = wi * 8 + (size_t)__builtin_ctzll(word);
      }
      if (zb != z) return -1;
    } else { /* the bits before a counted, those of [a, b) listed */
      za = popcount_range(bits, 0, a);
      zb = za + set_bits_in(bits, a, b, pos);
      if (zb > z) return -1;
    }
  } else if (full) {
    if (uih_seq_decode(c, z, UIH_SEQ_FOR, 0, z, pos, blk) != 0) return -1;
    for (size_t i = 0; i < z; i++)
      if (pos[i] >= m || (i > 0 && pos[i] <= pos[i - 1])) return -1;
    zb = z;
  } else {
    size_t cnt = 0;
    if (positions_in(c, z, a, b, pos, &za, &cnt) != 0) return -1;
    zb = za + cnt;
  }
  uint64_t *vals = d->aux2;
  if (uih_seq_decode(c, z, kind, za, zb, vals, blk) != 0) return -1;
  memset(out, 0, (b - a) * sizeof *out);
  for (size_t i = 0; i < zb - za; i++) out[pos[i] - a] = vals[i];
  return 0;
}

/* The encodings that add `bias` and may set *sorted (see
 * uih_seq_decode_biased); the others ignore both. */
#define BIASED_ENCODINGS (UIH_ENC_FOR | UIH_ENC_DELTA | UIH_ENC_DELTA2)

static int dec_values(uih_stripe_decoder *d, uih_cursor *c, const stripe_dir_entry *de, size_t m, size_t a,
                      size_t b, uint64_t bias, uint64_t *out, int *sorted) {
  uint64_t blk[UIH_SEQ_BLOCK];
  const uih_type t = (uih_type)de->type;
  const uint32_t enc = 1u << de->encoding;
  switch (enc) {
    case UIH_ENC_PLAIN: return dec_plain(c, m, a, b, t, out);
    case UIH_ENC_FOR:
    case UIH_ENC_DELTA:
    case UIH_ENC_DELTA2:
      return uih_seq_decode_biased(c, m, stripe_seq_kind(enc, de->version, stripe_type_signed(t)), bias, a, b,
                                   out, blk, sorted);
    case UIH_ENC_DICT: return dec_dict(d, c, m, a, b, for_kind(t), out, blk);
    case UIH_ENC_RLE: return dec_rle(d, c, m, a, b, for_kind(t), out, blk);
    case UIH_ENC_BSS: return dec_bss(c, m, a, b, out);
    case UIH_ENC_SPARSE: return dec_sparse(d, c, m, a, b, for_kind(t), out, blk);
  }
  return -1;
}

/* Values [a, b) of a shared column (stripe_format.h), in the uint64 form:
 * ranks in the dictionary the context holds under the column's id, the
 * others as stored. */
static int dec_shared(uih_stripe_decoder *d, uih_cursor *c, const stripe_dir_entry *de, size_t m, size_t a,
                      size_t b, uint64_t *out, uih_error *err) {
  uih_type t = (uih_type)de->type;
  uint32_t id = uih_cursor_u32(c);
  uint64_t h = uih_cursor_varint(c);
  if (c->bad || h == 0 || h > m) return bad(err, de, "shared values have a truncated header or an impossible count");
  const uih_value_dict *dict = stripe_context_find(d->ctx, d->group, de->trait_id, id);
  if (!dict)
    return uih_error_set(err, UIH_ERR_NOT_FOUND,
                         "stripe column of trait %u is encoded against value dictionary %08x, which the "
                         "decoder's context %s", de->trait_id, id, d->ctx ? "does not hold" : "(none) cannot give");
  if (dict->type != t) return bad(err, de, "its value dictionary holds values of another type");
  /* Which values are ranks: all, or a bitmap; those of [a, b) are ranks
   * [ha, hb) and others [a - ha, b - hb). */
  const uint8_t *bits = NULL;
  size_t ha = a, hb = b;
  if (h < m) {
    bits = uih_cursor_take(c, (m + 7) / 8);
    if (!bits || !padding_clean(bits, m) || popcount_range(bits, 0, m) != h)
      return bad(err, de, "shared values' bitmap is truncated or does not count its ranks");
    ha = popcount_range(bits, 0, a);
    hb = ha + popcount_range(bits, a, b);
  }
  uint64_t blk[UIH_SEQ_BLOCK], *ranks = d->aux, *others = d->aux2;
  if (uih_seq_decode(c, h, UIH_SEQ_FOR, ha, hb, ranks, blk) != 0 ||
      uih_seq_decode(c, m - h, for_kind(t), a - ha, b - hb, others, blk) != 0 || c->bad)
    return bad(err, de, "values are truncated or malformed");
  uint64_t over = 0;
  for (size_t i = 0; i < hb - ha; i++) over |= ranks[i] >= dict->count;
  if (over) return bad(err, de, "a rank lies past the end of its value dictionary");
  /* Ranks to values (the dictionary holds column bits; out is in the
   * uint64 form), merged with the others 64 values at a time: whole words
   * of ranks or of others are plain loops. */
  const uint64_t flip = stripe_to_u64(t, 0), *values = dict->values;
  if (!bits) {
    for (size_t i = 0; i < b - a; i++) out[i] = values[ranks[i]] ^ flip;
    return UIH_OK;
  }
  size_t r = 0, o = 0;
  for (size_t k = a; k < b;) {
    size_t stop = (k | 63) + 1 < b ? (k | 63) + 1 : b;
    uint64_t w = bits_word(bits, k, stop), full = stop - k == 64 ? ~UINT64_C(0) : (UINT64_C(1) << (stop - k)) - 1;
    if (w == full) {
      for (; k < stop; k++) out[k - a] = values[ranks[r++]] ^ flip;
    } else if (w == 0) {
      for (; k < stop; k++) out[k - a] = others[o++];
    } else {
      for (; k < stop; k++, w >>= 1) out[k - a] = (w & 1) ? values[ranks[r++]] ^ flip : others[o++];
    }
  }
  return UIH_OK;
}

/* A coded block's stream of prefix codes, checked once read: `used` bits
 * in `len` bytes, the rest of the last byte zero. */
static int stream_done(const pc_reader *r, const uint8_t *bits, size_t len) {
  size_t used = pc_reader_used(r);
  if ((used + 7) / 8 != len) return -1;
  return (used & 7) && (bits[len - 1] >> (used & 7)) != 0 ? -1 : 0;
}

/* One value of a coded block from `r`: the entry under its next bits, the
 * rank it gives, the value (clamped loads and a mask rather than branches:
 * escapes are four in ten values of hashed ids). `with_raw` and
 * `with_escapes` are constants in each caller (lz4-style directives): a
 * dictionary of at most 256 entries has no raw bits and no rank past its
 * end, a block without escapes needs no escaped value (one read anyway
 * still counts, and fails the block). */
static inline __attribute__((always_inline)) uint64_t
coded_value(pc_reader *r, const dict_sym *tab, const uint64_t *values, uint32_t last, const uint64_t *others,
            size_t *esc, uint32_t *over, const int with_raw, const int with_escapes) {
  if (r->n < PC_MAX_LEN + 24) pc_refill(r); /* a code and up to 24 raw bits */
  const dict_sym e = tab[r->acc & (PC_TABLE_SIZE - 1)];
  uint32_t rank = dict_sym_base(e);
  if (with_raw) rank += (uint32_t)((r->acc >> dict_sym_len(e)) & ((UINT64_C(1) << dict_sym_raw(e)) - 1));
  r->acc >>= dict_sym_shift(e); /* one shift past the code and its raw bits */
  r->n -= dict_sym_shift(e);
  const uint64_t escape = dict_sym_escape(e);
  *esc += escape;
  uint64_t hit;
  if (with_raw) { /* a bucket's raw bits may reach past the last rank */
    *over |= rank > last;
    hit = values[rank < last ? rank : last];
  } else { /* every rank a symbol of its own, below the entries (an escape's reads rank 0) */
    hit = values[rank];
  }
  if (!with_escapes) return hit;
  const uint64_t miss = others[*esc - escape], keep = 0 - escape;
  return (hit & ~keep) | (miss & keep);
}

/* dec_coded_block's loop, specialized by the caller's constants. */
static inline __attribute__((always_inline)) int
coded_block_run(const uih_value_dict *dict, pc_reader *r0, pc_reader *r1, size_t count, const uint64_t *others,
                uint64_t *tmp, size_t *esc, const int with_raw, const int with_escapes) {
  const dict_sym *tab = dict->table;
  const uint64_t *values = dict->values;
  const uint32_t last = dict->count - 1; /* a dictionary with a model has entries */
  uint32_t over = 0;
  size_t k = 0;
  for (; k + 1 < count; k += 2) {
    tmp[k] = coded_value(r0, tab, values, last, others, esc, &over, with_raw, with_escapes);
    tmp[k + 1] = coded_value(r1, tab, values, last, others, esc, &over, with_raw, with_escapes);
  }
  if (k < count) tmp[k] = coded_value(r0, tab, values, last, others, esc, &over, with_raw, with_escapes);
  return over ? -1 : 0;
}

/* One block of a coded column: its `count` values into tmp[0..count),
 * even positions from stream 0 and odd ones from stream 1, decoded side by
 * side (two chains of dependent loads instead of one); escapes take
 * `others` in order, which has room for `count` of them (a value past the
 * block's escapes may be loaded and dropped). Values are in the
 * dictionary's form: the caller adds the type's flip. Checks the block
 * whole: escapes against `misses`, each stream's bits against its length,
 * ranks against the dictionary. */
static int dec_coded_block(const uih_value_dict *dict, const uint8_t *const bits[2], const size_t len[2],
                           const size_t loadable[2], size_t count, size_t misses, const uint64_t *others,
                           uint64_t *tmp) {
  pc_reader r0 = pc_reader_make(bits[0], len[0], loadable[0]), r1 = pc_reader_make(bits[1], len[1], loadable[1]);
  size_t esc = 0;
  int rc;
  if (dict->count > DICT_DIRECT)
    rc = misses ? coded_block_run(dict, &r0, &r1, count, others, tmp, &esc, 1, 1)
                : coded_block_run(dict, &r0, &r1, count, others, tmp, &esc, 1, 0);
  else
    rc = misses ? coded_block_run(dict, &r0, &r1, count, others, tmp, &esc, 0, 1)
                : coded_block_run(dict, &r0, &r1, count, others, tmp, &esc, 0, 0);
  if (rc != 0 || esc != misses || stream_done(&r0, bits[0], len[0]) != 0) return -1;
  return count > 1 ? stream_done(&r1, bits[1], len[1]) : (len[1] == 0 ? 0 : -1);
}

/* A coded block's header and streams (stripe_format.h). */
typedef struct coded_block {
  const uint8_t *bits[2];
  size_t len[2], loadable[2];
  size_t misses;
} coded_block;

/* Reads block i (of nblocks, of a column of m values with o escaped) at `c`:
 * 0, or -1 if it is truncated or impossible. */
static int coded_block_read(uih_cursor *c, size_t i, size_t nblocks, size_t m, size_t o, coded_block *blk) {
  const size_t count = i + 1 < nblocks ? UIH_SEQ_BLOCK : m - i * UIH_SEQ_BLOCK;
  uint64_t misses = nblocks > 1 ? uih_cursor_varint(c) : o, len0 = uih_cursor_varint(c);
  uint64_t len1 = i + 1 < nblocks ? uih_cursor_varint(c) : 0;
  const uint8_t *s0 = c->bad || len0 > uih_cursor_left(c) ? NULL : uih_cursor_take(c, (size_t)len0);
  if (i + 1 == nblocks) len1 = uih_cursor_left(c); /* the last stream runs to the end */
  const uint8_t *s1 = !s0 || len1 > uih_cursor_left(c) ? NULL : uih_cursor_take(c, (size_t)len1);
  if (!s0 || !s1 || misses > count || len0 == 0 || (count > 1) != (len1 > 0)) return -1;
  blk->bits[0] = s0, blk->bits[1] = s1;
  blk->len[0] = (size_t)len0, blk->len[1] = (size_t)len1;
  blk->loadable[0] = (size_t)(c->over - s0), blk->loadable[1] = (size_t)(c->over - s1);
  blk->misses = (size_t)misses;
  return 0;
}

/* Values [a, b) of a coded column (stripe_format.h), in the uint64 form.
 * The block headers are read twice: once for all blocks (their lengths
 * lead to the values the dictionary does not hold before and inside
 * [a, b), and their escape counts are checked against the total), then
 * from the first block holding [a, b): only those blocks are decoded,
 * whole, and only their escaped values. */
static int dec_coded(uih_stripe_decoder *d, uih_cursor *c, const stripe_dir_entry *de, size_t m, size_t a,
                     size_t b, uint64_t *out, uih_error *err) {
  uih_type t = (uih_type)de->type;
  uint16_t id = uih_cursor_u16(c);
  uint64_t o = uih_cursor_varint(c);
  if (c->bad || o >= m) return bad(err, de, "coded values have a truncated header or escape every value");
  const uih_value_dict *dict = stripe_context_find_coded(d->ctx, d->group, de->trait_id, id);
  if (!dict)
    return uih_error_set(err, UIH_ERR_NOT_FOUND,
                         "stripe column of trait %u is coded against a value dictionary whose id ends in %04x, "
                         "which the decoder's context %s", de->trait_id, id,
                         d->ctx ? "does not hold" : "(none) cannot give");
  if (dict->type != t) return bad(err, de, "its value dictionary holds values of another type");
  /* The escaped values come first: step over them, decode the needed ones
   * once the blocks say which. */
  uih_cursor at_others = *c;
  if (uih_seq_skip(c, o, for_kind(t)) != 0) return bad(err, de, "escaped values are truncated or malformed");
  const size_t nblocks = (m + UIH_SEQ_BLOCK - 1) / UIH_SEQ_BLOCK;
  const size_t first = a / UIH_SEQ_BLOCK, last = b > a ? (b - 1) / UIH_SEQ_BLOCK + 1 : first;
  uih_cursor at_first = *c;
  size_t sum = 0, oa = 0, ob = 0;
  for (size_t i = 0; i < nblocks; i++) {
    coded_block blk;
    if (i == first) at_first = *c;
    if (coded_block_read(c, i, nblocks, m, o, &blk) != 0)
      return bad(err, de, "a coded block's header is truncated or impossible");
    if (i < first) oa += blk.misses;
    if (i < last) ob += blk.misses;
    sum += blk.misses;
  }
  if (sum != o) return bad(err, de, "coded blocks do not count the escaped values");
  uint64_t scratch[UIH_SEQ_BLOCK], tmp[UIH_SEQ_BLOCK], *others = d->aux2;
  if (uih_seq_decode(&at_others, o, for_kind(t), oa, ob, others, scratch) != 0)
    return bad(err, de, "escaped values are truncated or malformed");
  /* Both kinds of value in the dictionary's form (column bits), turned
   * into the uint64 form as they are copied out. */
  const uint64_t flip = stripe_to_u64(t, 0);
  if (flip)
    for (size_t i = 0; i < ob - oa; i++) others[i] ^= flip;
  size_t taken = 0;
  for (size_t i = first; i < last; i++) {
    coded_block blk;
    if (coded_block_read(&at_first, i, nblocks, m, o, &blk) != 0) /* (read above: it cannot fail now) */
      return bad(err, de, "a coded block's header is truncated or impossible");
    const size_t k0 = i * UIH_SEQ_BLOCK, k1 = k0 + UIH_SEQ_BLOCK < m ? k0 + UIH_SEQ_BLOCK : m;
    const size_t lo = k0 > a ? k0 : a, hi = k1 < b ? k1 : b;
    /* A whole block of a type without a flip goes straight to `out`. */
    uint64_t *dst = !flip && lo == k0 && hi == k1 ? out + (k0 - a) : tmp;
    /* others[taken, taken + k1 - k0) lies inside the decoder's array (taken
     * <= k0, k1 <= m); more escapes than the block counts fail after it */
    if (dec_coded_block(dict, blk.bits, blk.len, blk.loadable, k1 - k0, blk.misses, others + taken, dst) != 0)
      return bad(err, de, "a coded block is malformed (its codes, ranks, escapes or lengths)");
    taken += blk.misses;
    if (dst == tmp)
      for (size_t k = lo; k < hi; k++) out[k - a] = tmp[k - k0] ^ flip;
  }
  return UIH_OK;
}

/* out[i] = base + step * out[i] (mod 2^64) for i < n: the multiples back
 * to values. An AVX2 copy is chosen at load time where the CPU has it (four
 * 64-bit products from 32-bit multiplies a vector). */
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static void scale_up(uint64_t *out, size_t n, uint64_t base, uint64_t step) {
  for (size_t i = 0; i < n; i++) out[i] = base + step * out[i];
}

/* Values [a, b) of a scaled column (stripe_format.h): its step and base,
 * then an unsigned sequence of (value - base) / step, turned back into
 * base + step * it, plus `bias` (the sign flip, when the caller fuses it).
 * `ts_base` is the stripe's min timestamp (uint64 form) in the group's
 * timestamp column, which does not store its base; NULL in the others. */
static int dec_scaled(uih_cursor *c, const stripe_dir_entry *de, size_t m, size_t a, size_t b,
                      const uint64_t *ts_base, uint64_t bias, uint64_t *out, int *sorted, uih_error *err) {
  uint64_t step = uih_cursor_varint(c);
  uint64_t base = ts_base ? *ts_base : stripe_base_of((uih_type)de->type, uih_cursor_varint(c));
  /* Format 3 lets the timestamp column take a step of 1 (stripe_format.h). */
  if (c->bad || step < (ts_base && de->version >= 3 ? 1u : 2u))
    return bad(err, de, "scaled values have a truncated header or a step below 2 (1 in a timestamp column)");
  uih_seq_kind kind = stripe_seq_kind(1u << de->encoding, de->version, 0);
  uint64_t blk[UIH_SEQ_BLOCK];
  int up = 0; /* the multiples were verified never to decrease (as int64) */
  if (step == 1) { /* (format 3's timestamps) the base is a bias: no second pass */
    if (uih_seq_decode_biased(c, m, kind, base + bias, a, b, out, blk, &up) != 0 || c->bad)
      return bad(err, de, "values are truncated or malformed");
    *sorted = up; /* the outputs themselves were verified */
    return UIH_OK;
  }
  if (uih_seq_decode_biased(c, m, kind, 0, a, b, out, blk, &up) != 0 || c->bad)
    return bad(err, de, "values are truncated or malformed");
  /* Multiples in int64 order, the first not negative, are in unsigned
   * order too, and stay ordered scaled unless base + step * the last (the
   * largest) wraps. */
  *sorted = up && b > a && out[0] <= (uint64_t)INT64_MAX && out[b - a - 1] <= (UINT64_MAX - base) / step;
  scale_up(out, b - a, base + bias, step); /* mod 2^64, as encoded */
  return UIH_OK;
}

/* ---- decompression ---------------------------------------------------------- */

/* Largest raw payload a column of n events can have: presence, plus values
 * in the largest encoding (dict: two full sequences), plus block headers. */
static size_t raw_limit(uint32_t n) { return (size_t)n * 2 * 8 + (size_t)n / 4 * 22 + 4096; }

/* Bytes after a decompressed payload that wide loads may touch (masked
 * off), so its last values need not be read byte by byte. */
#define RAW_SLACK 64

static int decompress(uih_stripe_decoder *d, const stripe_dir_entry *de, const uint8_t *p,
                      uint32_t n, uih_cursor *out, uih_error *err) {
  uih_cursor c = uih_cursor_make(p, de->length);
  uint64_t raw = uih_cursor_varint(&c);
  if (c.bad || raw == 0 || raw > raw_limit(n)) return bad(err, de, "compressed length is implausible");
  if (raw > d->raw_cap) {
    uint8_t *grown = realloc(d->raw, raw + RAW_SLACK);
    if (!grown) return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe decode: out of memory");
    memset(grown + raw, 0, RAW_SLACK); /* below it every byte gets decompressed into */
    d->raw = grown;
    d->raw_cap = raw;
  }
  size_t src_len = uih_cursor_left(&c);
  size_t got;
  if (de->compression == STRIPE_COMPRESS_LZ4) {
    int r = LZ4_decompress_safe((const char *)c.p, (char *)d->raw, (int)src_len, (int)raw);
    got = r < 0 ? SIZE_MAX : (size_t)r;
  } else {
    got = ZSTD_decompressDCtx(d->zstd, d->raw, raw, c.p, src_len);
    if (ZSTD_isError(got)) got = SIZE_MAX;
  }
  if (got != raw) return bad(err, de, "compressed payload does not decompress to its stated length");
  *out = uih_cursor_make_slack(d->raw, raw, RAW_SLACK);
  return UIH_OK;
}

/* ---- the column -------------------------------------------------------------- */

/* Every row has a value: typed loops the compiler vectorizes, one range
 * check per column, presence bits set a word at a time. 8-byte values were
 * decoded in place; `flip` is what they still need xor-ed in. */
static int scatter_all(const stripe_dir_entry *de, uih_type t, const uint64_t *v, uint32_t rows,
                       uint64_t limit, uint64_t flip, uih_column *col, uih_error *err) {
  uint64_t high = 0;
  switch (uih_type_info_of(t)->width) {
    case 8: {
      uint64_t *dst = col->values;
      if (flip)
        for (uint32_t r = 0; r < rows; r++) dst[r] ^= flip;
      break;
    }
    case 4: {
      uint32_t *dst = col->values;
      for (uint32_t r = 0; r < rows; r++) {
        high |= v[r];
        dst[r] = (uint32_t)v[r];
      }
      break;
    }
    default: {
      uint8_t *dst = col->values;
      for (uint32_t r = 0; r < rows; r++) {
        high |= v[r];
        dst[r] = (uint8_t)v[r];
      }
      break;
    }
  }
  if (high > limit) return bad(err, de, "a value does not fit the trait's type");
  memset(col->present, 0xff, (rows / 64) * sizeof(uint64_t));
  if (rows % 64) col->present[rows / 64] = (UINT64_C(1) << (rows % 64)) - 1;
  return UIH_OK;
}

void stripe_clear_rows(uih_column *col, uint32_t from, uint32_t to) {
  if (from >= to) return;
  size_t w = uih_type_info_of(col->trait->type)->width;
  memset((uint8_t *)col->values + (size_t)from * w, 0, (size_t)(to - from) * w);
  /* Presence: a mask for the first and the last word, zeros between. */
  uint32_t fw = from >> 6, lw = (to - 1) >> 6;
  uint64_t head = ~UINT64_C(0) << (from & 63), tail = ~UINT64_C(0) >> (63 - ((to - 1) & 63));
  if (fw == lw) {
    col->present[fw] &= ~(head & tail);
    return;
  }
  col->present[fw] &= ~head;
  memset(col->present + fw + 1, 0, (size_t)(lw - fw - 1) * sizeof(uint64_t));
  col->present[lw] &= ~tail;
}

int stripe_column_decode(uih_stripe_decoder *d, const stripe_dir_entry *de, const uint8_t *p,
                         size_t slack, uint32_t n, uint32_t begin, uint32_t end, uint32_t dirty,
                         uih_column *col, const uint64_t *ts_base, int *sorted, uih_error *err) {
  if (sorted) *sorted = 0;
  uih_cursor c = uih_cursor_make_slack(p, de->length, slack);
  if (de->compression != STRIPE_COMPRESS_NONE) UIH_FORWARD(decompress(d, de, p, n, &c, err));
  uih_type t = (uih_type)de->type;

  /* Presence: m values in all; rows [begin, end) hold values [ra, rb). */
  size_t m, ra, rb;
  const uint8_t *bits = NULL;
  const uint64_t *list = NULL; /* LIST: positions of values [ra, rb), from list[0] */
  switch (de->presence) {
    case PRESENCE_ALL: m = n, ra = begin, rb = end; break;
    case PRESENCE_NONE: m = ra = rb = 0; break;
    case PRESENCE_BITMAP: /* one pass: the counts below begin, below end, in all */
      bits = uih_cursor_take(&c, (n + 7) / 8);
      if (!bits || !padding_clean(bits, n))
        return bad(err, de, "presence bitmap is truncated or padded with ones");
      ra = popcount_range(bits, 0, begin);
      rb = ra + popcount_range(bits, begin, end);
      m = rb + popcount_range(bits, end, n);
      if (m == 0 || m == n) return bad(err, de, "presence bitmap is all zeros or all ones");
      break;
    default: { /* PRESENCE_LIST */
      m = uih_cursor_varint(&c);
      if (c.bad || m == 0 || m >= n) return bad(err, de, "presence list has an impossible length");
      list = d->pos;
      if (begin > 0 || end < n) { /* a range: only the blocks that can hold it */
        size_t cnt = 0;
        if (positions_in(&c, m, begin, end, d->pos, &ra, &cnt) != 0)
          return bad(err, de, c.bad ? "presence list is truncated"
                                    : "presence list is not strictly increasing");
        rb = ra + cnt;
        break;
      }
      uint64_t blk[UIH_SEQ_BLOCK];
      if (uih_seq_decode(&c, m, UIH_SEQ_FOR, 0, m, d->pos, blk) != 0)
        return bad(err, de, "presence list is truncated");
      for (size_t i = 0; i < m; i++)
        if (d->pos[i] >= n || (i > 0 && d->pos[i] <= d->pos[i - 1]))
          return bad(err, de, "presence list is not strictly increasing below the event count");
      ra = 0, rb = m;
      break;
    }
  }

  /* Dense 8-byte columns decode straight into the batch, and sequences
   * there add the sign flip of signed types as they go (a bias: x ^ 2^63 =
   * x + 2^63) and may verify order in passing. */
  int direct = de->presence == PRESENCE_ALL && uih_type_info_of(t)->width == 8;
  int fused = direct && ((1u << de->encoding) & BIASED_ENCODINGS);
  uint64_t flip = stripe_from_u64(t, 0);
  uint64_t *vals = direct ? (uint64_t *)col->values : d->vals;
  int in_order = 0;
  if (m > 0 && de->scaled) {
    UIH_FORWARD(dec_scaled(&c, de, m, ra, rb, ts_base, fused ? flip : 0, vals, &in_order, err));
  } else if (m > 0 && (1u << de->encoding) == UIH_ENC_SHARED) {
    UIH_FORWARD(dec_shared(d, &c, de, m, ra, rb, vals, err));
  } else if (m > 0 && (1u << de->encoding) == UIH_ENC_CODED) {
    UIH_FORWARD(dec_coded(d, &c, de, m, ra, rb, vals, err));
  } else if (m > 0 && (dec_values(d, &c, de, m, ra, rb, fused ? flip : 0, vals, &in_order) != 0 ||
                       c.bad)) {
    return bad(err, de, "values are truncated or malformed");
  }
  if (uih_cursor_left(&c) != 0) return bad(err, de, "payload has trailing bytes");

  /* Scatter values [ra, rb) to their rows, checking they fit the type. */
  uint64_t limit = t == UIH_TYPE_FLAG ? 1 : uih_type_info_of(t)->width == 4 ? UINT32_MAX : UINT64_MAX;
  if (de->presence == PRESENCE_ALL) {
    if (sorted) *sorted = fused && in_order;
    return scatter_all(de, t, vals, end - begin, limit, fused ? 0 : flip, col, err);
  }
  stripe_clear_rows(col, 0, dirty);
  size_t j = 0;
  for (uint32_t i = begin; i < end && j < rb - ra; i++) {
    if (bits && !uih_bit_get(bits, i)) continue;
    if (list && list[j] != i) continue;
    uint64_t v = stripe_from_u64(t, d->vals[j++]);
    if (v > limit) return bad(err, de, "a value does not fit the trait's type");
    uih_column_set_bits(col, i - begin, v);
  }
  return UIH_OK;
}
