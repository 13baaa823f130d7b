/* Shared between the stripe encoder and decoder. */
#ifndef UIH_STRIPE_INTERNAL_H
#define UIH_STRIPE_INTERNAL_H

#include <zstd.h>

#include "cursor.h"
#include "intseq.h"
#include "prefix_code.h"
#include "stripe_format.h"
#include "uih/stripe.h"
#include "wbuf.h"

/* One entry of a coded column's decode table (prefix_code.h), packed in a
 * word so that the decode loop's chain (bits -> entry -> shift) is a load
 * and a shift: the symbol under the next PC_MAX_LEN bits of a stream
 * takes `shift` bits with its raw bits (the low byte: shifts use it as
 * it is), its code is `len` bits, and it stands for rank base + its `raw`
 * bits, or for a value not in the dictionary (escape). */
typedef uint64_t dict_sym;
#define DICT_SYM(shift, len, raw, escape, base)                                                        \
  ((uint64_t)(shift) | (uint64_t)(len) << 8 | (uint64_t)(raw) << 16 | (uint64_t)(escape) << 24 |         \
   (uint64_t)(base) << 32)
static inline unsigned dict_sym_shift(dict_sym e) { return (unsigned)(e & 63); }
static inline unsigned dict_sym_len(dict_sym e) { return (unsigned)(e >> 8) & 255; }
static inline unsigned dict_sym_raw(dict_sym e) { return (unsigned)(e >> 16) & 255; }
static inline unsigned dict_sym_escape(dict_sym e) { return (unsigned)(e >> 24) & 1; }
static inline uint32_t dict_sym_base(dict_sym e) { return (uint32_t)(e >> 32); }

/* The symbols of a dictionary's model (stripe_format.h): ranks below
 * DICT_DIRECT are symbols of their own; the others go by buckets, bucket j
 * holding the ranks r with r - direct + 1 in [2^j, 2^(j+1)), told apart by
 * j raw bits; the last symbol is the escape. */
#define DICT_DIRECT 256u
static inline uint32_t dict_direct(uint32_t k) { return k < DICT_DIRECT ? k : DICT_DIRECT; }
static inline uint32_t dict_symbols(uint32_t k) {
  return k == 0 ? 0 : dict_direct(k) + uih_bits(k - dict_direct(k)) + 1;
}
/* Rank r's symbol and raw bits (*raw of them, value *bits). */
static inline uint32_t dict_symbol_of(uint32_t direct, uint32_t r, unsigned *raw, uint32_t *bits) {
  if (r < direct) {
    *raw = 0, *bits = 0;
    return r;
  }
  uint32_t x = r - direct + 1;
  unsigned j = uih_bits(x) - 1;
  *raw = j, *bits = x - (UINT32_C(1) << j);
  return direct + j;
}

/* A value dictionary (uih/stripe.h): values in rank order, the serialized
 * form, and for encoders an index from value to rank (open addressing,
 * slots hold rank + 1, 0 is empty; NULL unless built). Version 2 adds an
 * entropy model, a prefix code over the symbols above (nsym 0: none). */
struct uih_value_dict {
  uint16_t group, trait_id;
  uih_type type;
  uint32_t count, id;
  uint64_t *values; /* column bits, rank order */
  uih_wbuf bytes;
  uint64_t *keys;
  uint32_t *slots;
  size_t mask;
  unsigned shift;
  uint32_t direct, nsym; /* the model: direct ranks, symbols (escape last) */
  uint8_t *lens;         /* nsym code lengths */
  uint16_t *codes;       /* nsym codes, bit-reversed */
  dict_sym *table;       /* PC_TABLE_SIZE entries */
  double hit_bits;       /* when built: bits a counted hit takes coded, on average (uih_value_dict_pays) */
};

struct uih_stripe_context {
  uih_value_dict **dicts;
  size_t n, cap;
};

/* The rank of `v` in an indexed dictionary: 1 and *rank, or 0 if absent. */
int value_dict_rank(const uih_value_dict *d, uint64_t v, uint32_t *rank);
/* The ranks of v[0..m), values of type t as the encoder widens them
 * (stripe_to_u64), into ranks[0..m) (`absent` for those not held); returns
 * how many are held. */
size_t value_dict_rank_all(const uih_value_dict *d, const uint64_t *v, size_t m, uih_type t, uint32_t *ranks,
                           uint32_t absent);
/* The dictionary of a group's trait with id `id` in `ctx` (NULL: none). */
const uih_value_dict *stripe_context_find(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                          uint32_t id);
/* The indexed dictionary an encoder uses for a group's trait: the last one
 * added for it with that type; NULL if none. */
const uih_value_dict *stripe_context_encoding(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                              uih_type type);
/* The dictionary with a model whose id's low 16 bits are `id16` (a coded
 * column names its dictionary by them); NULL if none. */
const uih_value_dict *stripe_context_find_coded(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                                uint16_t id16);

struct uih_stripe_encoder {
  uih_stripe_encoder_opts opts;
  const uih_stripe_context *ctx; /* dictionaries the shared encoding may use */
  uih_wbuf out;     /* the stripe being built */
  uih_wbuf body;    /* the column payloads, before the header is known */
  uih_wbuf payload; /* one column's presence + values, uncompressed */
  uih_wbuf cand;    /* a candidate value encoding */
  uih_wbuf best;    /* the smallest candidate so far */
  uih_wbuf comp;    /* a compressed payload */
  uih_wbuf streams[2]; /* a coded block's two streams of prefix codes */
  uint64_t *vals;   /* the column's present values, mapped to uint64 */
  uint64_t *aux;    /* per-encoding temporaries */
  uint64_t *aux2;
  uint64_t *scaled; /* (value - base) / step of a column with a common step */
  uint32_t *ranks;  /* the column's values' ranks in its dictionary (column_encode.c) */
  uih_type type;    /* the column being encoded */
  uint16_t group;   /* and its group */
  size_t cap;       /* entries in vals/aux/aux2/scaled/ranks */
  ZSTD_CCtx *zstd;
};

struct uih_stripe_decoder {
  const uih_stripe_context *ctx; /* dictionaries shared columns name */
  uint16_t group;                /* of the stripe being decoded */
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

/* The types whose values are signed (int64 and timestamps). */
static inline int stripe_type_signed(uih_type t) { return t == UIH_TYPE_TIMESTAMP || t == UIH_TYPE_INT64; }

/* Maps a column value to the uint64 domain the encodings work in, and back. */
static inline uint64_t stripe_to_u64(uih_type t, uint64_t bits) {
  return stripe_type_signed(t) ? bits ^ UIH_SIGN64 : bits;
}
static inline uint64_t stripe_from_u64(uih_type t, uint64_t u) { return stripe_to_u64(t, u); }

/* FOR sequences of signed types' values keep their minimums short. */
static inline uih_seq_kind for_kind(uih_type t) { return stripe_type_signed(t) ? UIH_SEQ_FOR_SIGNED : UIH_SEQ_FOR; }

/* The sequence kind of values in encoding `enc` (UIH_ENC_FOR, _DELTA or
 * _DELTA2) in a stripe of format `version`: of sign-flipped int64 values if
 * `is_signed` (int64 and timestamps stored as they are; scaled values are
 * unsigned). Format 3 writes delta anchors as varints (intseq.h). */
static inline uih_seq_kind stripe_seq_kind(uint32_t enc, unsigned version, int is_signed) {
  if (enc == UIH_ENC_FOR) return is_signed ? UIH_SEQ_FOR_SIGNED : UIH_SEQ_FOR;
  return uih_seq_delta_kind(enc == UIH_ENC_DELTA ? 1 : 2, version, is_signed);
}

/* The encodings that may store their values scaled (as multiples of a
 * common step above a base), and the types whose values may be. */
#define SCALED_ENCODINGS (UIH_ENC_FOR | UIH_ENC_DELTA | UIH_ENC_DELTA2)
static inline int stripe_type_scales(uih_type t) { return t != UIH_TYPE_FLOAT32 && t != UIH_TYPE_FLAG; }

/* A scaled column's base as stored: int64 and timestamp bases (uint64
 * form) as the zigzag of their signed value, so small magnitudes of either
 * sign take a byte or two; the others as they are. */
static inline uint64_t stripe_base_code(uih_type t, uint64_t base) {
  return stripe_type_signed(t) ? uih_zigzag64(uih_order_i64(base)) : base;
}
static inline uint64_t stripe_base_of(uih_type t, uint64_t code) {
  return stripe_type_signed(t) ? uih_order_u64(uih_unzigzag64(code)) : code;
}

/* The directory entry's two code bytes in format 2 (stripe_format.h);
 * format 3 adds the id step in bits 5-7 of the second. */
static inline uint8_t stripe_dir_layout(const stripe_dir_entry *de) {
  return (uint8_t)(de->type | de->compression << 4 | de->presence << 6);
}
static inline uint8_t stripe_dir_values(const stripe_dir_entry *de) {
  return (uint8_t)(de->encoding | de->scaled << 4);
}

/* Appends the column's payload (presence + best value encoding, compressed
 * when that pays) to enc->body and fills everything in `de` but the offset.
 * `is_ts`: the column is its group's timestamp column, whose scaled values
 * take the stripe's min timestamp as their base without storing it.
 * `like` (NULL: none): how an earlier stripe stored the trait; its
 * encoding and compression alone are tried when the column can have them
 * (uih_stripe_encode_like). */
int stripe_column_encode(uih_stripe_encoder *enc, const uih_column *col, uint32_t n, int is_ts,
                         const uih_stripe_column_info *like, stripe_dir_entry *de, uih_error *err);

/* Decodes rows [begin, end) of the column described by `de` (payload bytes
 * at `p`, followed by `slack` more bytes of the same buffer that may be
 * loaded and masked off) into `col`, rows 0..end-begin. Rows [0, dirty) of
 * `col` may hold old values: they are overwritten or cleared. If `sorted`
 * is not NULL,
 * *sorted = 1 says the decoded rows are all present and verified never to
 * decrease as int64 (found in passing by the delta decoder); 0 says nothing. */
int stripe_column_decode(uih_stripe_decoder *dec, const stripe_dir_entry *de, const uint8_t *p,
                         size_t slack, uint32_t n, uint32_t begin, uint32_t end, uint32_t dirty,
                         uih_column *col, const uint64_t *ts_base, int *sorted, uih_error *err);

/* Zeroes values and presence bits of rows [from, to) of `col`. */
void stripe_clear_rows(uih_column *col, uint32_t from, uint32_t to);

/* Grows the decoder's value arrays to `n` entries (no-op when large enough). */
int stripe_decoder_reserve(uih_stripe_decoder *dec, size_t n);
/* Grows the decoder's directory array to `n` entries (likewise). */
int stripe_decoder_reserve_dir(uih_stripe_decoder *dec, size_t n);

#endif /* UIH_STRIPE_INTERNAL_H */
