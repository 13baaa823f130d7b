/* Shared between the stripe encoder and decoder. */
#ifndef UIH_STRIPE_INTERNAL_H
#define UIH_STRIPE_INTERNAL_H

#include <zstd.h>

#include "cursor.h"
#include "intseq.h"
#include "stripe_format.h"
#include "uih/stripe.h"
#include "wbuf.h"

struct uih_stripe_encoder {
  uih_stripe_encoder_opts opts;
  uih_wbuf out;     /* the stripe being built */
  uih_wbuf body;    /* the column payloads, before the header is known */
  uih_wbuf payload; /* one column's presence + values, uncompressed */
  uih_wbuf cand;    /* a candidate value encoding */
  uih_wbuf best;    /* the smallest candidate so far */
  uih_wbuf comp;    /* a compressed payload */
  uint64_t *vals;   /* the column's present values, mapped to uint64 */
  uint64_t *aux;    /* per-encoding temporaries */
  uint64_t *aux2;
  size_t cap;       /* entries in vals/aux/aux2 */
  ZSTD_CCtx *zstd;
};

struct uih_stripe_decoder {
  uint64_t *vals, *aux, *aux2; /* decoded values and per-encoding temporaries */
  uint64_t *pos;               /* positions of a presence list */
  size_t cap;
  stripe_dir_entry *dir; /* the stripe's directory, parsed once per decode */
  size_t dir_cap;
  uint8_t *raw; /* a decompressed payload, then zeros or older bytes */
  size_t raw_cap; /* payload bytes raw holds; RAW_SLACK more are allocated */
  ZSTD_DCtx *zstd;
};

/* Value encodings as stored: the bit index of the UIH_ENC_* flag. */
static inline unsigned stripe_enc_id(uint32_t flag) { return (unsigned)__builtin_ctz(flag); }

/* Maps a column value to the uint64 domain the encodings work in, and back. */
static inline uint64_t stripe_to_u64(uih_type t, uint64_t bits) {
  return (t == UIH_TYPE_TIMESTAMP || t == UIH_TYPE_INT64) ? bits ^ UIH_SIGN64 : bits;
}
static inline uint64_t stripe_from_u64(uih_type t, uint64_t u) { return stripe_to_u64(t, u); }

/* FOR sequences of signed types' values keep their minimums short. */
static inline uih_seq_kind for_kind(uih_type t) {
  return (t == UIH_TYPE_TIMESTAMP || t == UIH_TYPE_INT64) ? UIH_SEQ_FOR_SIGNED : UIH_SEQ_FOR;
}

/* Appends the column's payload (presence + best value encoding, compressed
 * when that pays) to enc->body and fills everything in `de` but the offset. */
int stripe_column_encode(uih_stripe_encoder *enc, const uih_column *col, uint32_t n,
                         stripe_dir_entry *de, uih_error *err);

/* Decodes rows [begin, end) of the column described by `de` (payload bytes
 * at `p`, followed by `slack` more bytes of the same buffer that may be
 * loaded and masked off) into `col`, rows 0..end-begin. Rows [0, dirty) of
 * `col` may hold old values: they are overwritten or cleared. If `sorted`
 * is not NULL,
 * *sorted = 1 says the decoded rows are all present and verified never to
 * decrease as int64 (found in passing by the delta decoder); 0 says nothing. */
int stripe_column_decode(uih_stripe_decoder *dec, const stripe_dir_entry *de, const uint8_t *p,
                         size_t slack, uint32_t n, uint32_t begin, uint32_t end, uint32_t dirty,
                         uih_column *col, int *sorted, uih_error *err);

/* Zeroes values and presence bits of rows [from, to) of `col`. */
void stripe_clear_rows(uih_column *col, uint32_t from, uint32_t to);

/* Grows the decoder's value arrays to `n` entries (no-op when large enough). */
int stripe_decoder_reserve(uih_stripe_decoder *dec, size_t n);
/* Grows the decoder's directory array to `n` entries (likewise). */
int stripe_decoder_reserve_dir(uih_stripe_decoder *dec, size_t n);

#endif /* UIH_STRIPE_INTERNAL_H */
