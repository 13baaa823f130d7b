/* Integer sequences: the bit-packed building blocks of every stripe column.
 * Values are uint64; callers map signed types to an order-preserving
 * unsigned form first (uih_order_u64, x ^ 2^63).
 *
 * Packed runs are common/bitpack.h's (w = 0 stores nothing: every value
 * equals the minimum); this module adds readers that unpack many values at
 * once (AVX2 where the CPU has it).
 *
 * FOR sequence of n values, in blocks of UIH_SEQ_BLOCK values:
 *
 *     per block:  varint  min           the base the values are stored
 *                                       above: the block's smallest value,
 *                                       or 0 (a writer's choice when that is
 *                                       shorter; never when the first value
 *                                       is the smallest, so an ascending
 *                                       block's is its first value); in a
 *                                       signed sequence, zigzag(min ^ 2^63)
 *                 u8      w             low bits per (value - min)
 *                 u8      x             exceptions: values wider than w
 *                 bytes   packed        ceil(cnt*w/8): the low w bits of each
 *       if x > 0: u8      xw            high bits per exception (>= 1)
 *                 x bytes positions     ascending, < cnt
 *                 bytes   packed        ceil(x*xw/8): (value - min) >> w
 *
 * (Patched frame of reference: w is chosen per block to minimize its size,
 * so a few outliers, such as the gaps between sessions, do not widen every
 * value of the block.)
 *
 * A signed sequence holds sign-flipped int64 values (x ^ 2^63), so small
 * magnitudes of either sign keep short minimums.
 *
 * DELTA sequence (order 1) of n values, per block:
 *
 *                 anchor                first value of the block
 *                 signed FOR block of the cnt-1 deltas v[k]-v[k-1], each ^ 2^63
 *
 * DELTA2 (order 2) adds the block's first delta v[1]-v[0] after the anchor
 * (if cnt >= 2) and packs the cnt-2 deltas of deltas. Anchors come in two
 * forms. The first (UIH_SEQ_DELTA, UIH_SEQ_DELTA2: stripe formats 1 and 2)
 * stores both as u64, LE. The varint form (the _VARINT kinds: stripe format
 * 3) stores the anchor as a varint of the value, or in a _SIGNED kind
 * (sign-flipped int64 values) of zigzag(value ^ 2^63), and the first delta
 * as a varint of zigzag(delta as int64): a stripe's scaled timestamps start
 * at 0 and take one byte where the u64 took eight. Anchors make every
 * block decodable on its own, so decoding values [a, b) unpacks only the
 * blocks that hold them; the others
 * are stepped over by their headers, whose widths and counts give each
 * block's length.
 */
#ifndef UIH_INTSEQ_H
#define UIH_INTSEQ_H

#include <stddef.h>
#include <stdint.h>

#include "bitpack.h"
#include "cursor.h"
#include "wbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_SEQ_BLOCK 128

/* Unpacks values [a, b) of a packed run of width w at `p`, adding `base` to
 * each: out[k - a] = base + value k. `avail` is how many bytes may be read
 * from `p`: at least the run's ceil(b*w/8), more lets more values take the
 * single-load path (the extra bits are masked off). */
void uih_unpack(const uint8_t *p, size_t avail, unsigned w, size_t a, size_t b, uint64_t base,
                uint64_t *out);

/* Turns the AVX2 paths (unpacking, delta prefix sums) on (the default where
 * the CPU has AVX2) or off, so tests can compare them with the scalar paths.
 * Returns 1 if AVX2 is in use afterwards. Not thread-safe: for tests. */
int uih_intseq_set_simd(int enabled);

/* Sequence kinds: FOR of unsigned or of sign-flipped values; DELTA and
 * DELTA2 with u64 anchors; the same with varint anchors, of unsigned or of
 * sign-flipped values. */
typedef enum uih_seq_kind {
  UIH_SEQ_FOR = 0,
  UIH_SEQ_FOR_SIGNED,
  UIH_SEQ_DELTA,
  UIH_SEQ_DELTA2,
  UIH_SEQ_DELTA_VARINT,
  UIH_SEQ_DELTA_VARINT_SIGNED,
  UIH_SEQ_DELTA2_VARINT,
  UIH_SEQ_DELTA2_VARINT_SIGNED,
} uih_seq_kind;

/* The delta kind of `order` (1 or 2) whose anchors a stripe of format
 * `version` writes, for values `is_signed` (sign-flipped int64) or not. */
static inline uih_seq_kind uih_seq_delta_kind(int order, unsigned version, int is_signed) {
  if (version < 3) return order == 1 ? UIH_SEQ_DELTA : UIH_SEQ_DELTA2;
  return (uih_seq_kind)((order == 1 ? UIH_SEQ_DELTA_VARINT : UIH_SEQ_DELTA2_VARINT) + (is_signed ? 1 : 0));
}

void uih_seq_encode(uih_wbuf *out, const uint64_t *v, size_t n, uih_seq_kind kind);

/* Reads a sequence of n values written by uih_seq_encode(kind) from `c`
 * (advancing past all of it) and stores values [a, b) to out[0..b-a).
 * Blocks holding none of [a, b) are skipped as uih_seq_skip() does, so the
 * cost is that of the blocks of [a, b) plus O(1) per other block; only a
 * decode of [0, n) validates every block in full. `scratch` holds
 * UIH_SEQ_BLOCK values. Returns 0, or -1 if the bytes are malformed (c->bad
 * is set then too). */
int uih_seq_decode(uih_cursor *c, size_t n, uih_seq_kind kind, size_t a, size_t b, uint64_t *out,
                   uint64_t *scratch);

/* uih_seq_decode with what the stripe reader does next fused in:
 * out[k - a] = value k + `bias` (mod 2^64; a bias of 2^63 turns the
 * unsigned form of an int64 back into its bits, as x ^ 2^63 = x + 2^63),
 * and, if `sorted` is not NULL, *sorted = 1 when out[0..b-a) was verified
 * never to decrease as int64. *sorted = 0 says nothing (only the AVX2 delta
 * paths check, in passing): the caller checks order itself then. */
int uih_seq_decode_biased(uih_cursor *c, size_t n, uih_seq_kind kind, uint64_t bias, size_t a,
                          size_t b, uint64_t *out, uint64_t *scratch, int *sorted);

/* Advances `c` past a sequence of n values written by uih_seq_encode(kind),
 * reading only block headers: O(1) per block. Each block's widths, counts
 * and length are checked as a decode checks them (so a sequence that
 * decodes is skipped to the same byte), its packed values and exception
 * positions are not. Returns 0, or -1 (c->bad set) if a header is
 * malformed or a block runs past the end. */
int uih_seq_skip(uih_cursor *c, size_t n, uih_seq_kind kind);

/* The minimum stored in the header of the UIH_SEQ_FOR block at `c`,
 * without advancing `c`: of an ascending sequence, the block's first value.
 * Returns 0, or -1 if the header is truncated or malformed. */
int uih_seq_peek_min(const uih_cursor *c, uint64_t *min);

/* Random access to a FOR sequence (UIH_SEQ_FOR or UIH_SEQ_FOR_SIGNED: no
 * anchors, the same block layout) of n values: uih_seq_blocks() steps over
 * it as uih_seq_skip() does and stores where each of its
 * ceil(n / UIH_SEQ_BLOCK) blocks starts, counted from c->p on entry, to
 * at[]; uih_seq_get(), given a copy of that entry cursor and the kind,
 * decodes value i alone (and validates its block). Both return 0 or -1. */
int uih_seq_blocks(uih_cursor *c, size_t n, uint64_t *at);
int uih_seq_get(uih_cursor start, size_t n, uih_seq_kind kind, const uint64_t *at, size_t i,
                uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif /* UIH_INTSEQ_H */
