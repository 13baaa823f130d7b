/* uihstore — the stripe codec.
 *
 * A stripe holds up to 65,536 events of one user in one feature group as
 * one RocksDB value, column by column. Each trait's column gets the
 * encoding that is smallest for its actual values (among those the schema
 * allows: plain, delta, delta-of-delta, frame of reference, dictionary,
 * run-length, byte-stream split, sparse), optionally LZ4 or ZSTD on top when
 * that pays, and a directory entry so a reader finds any column without
 * touching the others. The format is drawn in engine/codec/stripe_format.h.
 *
 * Decoding is selective (only the traits of the output batch), can cover a
 * range of events [begin, end), verifies an XXH3 checksum on request, and
 * treats its input as untrusted: any bytes give UIH_OK with valid output or
 * an error, never a crash.
 *
 * Encoders and decoders keep scratch memory between calls: create one per
 * thread and reuse it; after warm-up a call allocates nothing.
 */
#ifndef UIH_STRIPE_H
#define UIH_STRIPE_H

#include <stddef.h>
#include <stdint.h>

#include "uih/batch.h"
#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- encoding -------------------------------------------------------------- */

typedef struct uih_stripe_encoder_opts {
  /* Keep LZ4/ZSTD output only if it is at most (1 - min_gain) of the raw
   * column, and the shared encoding (ranks in a value dictionary, slower to
   * decode) only if it is at most that of the best encoding that needs no
   * dictionary; 0.1 means "at least 10% smaller". In [0, 1). */
  double min_compression_gain;
  int zstd_level;     /* 1..19 */
  int no_compression; /* 1: never try LZ4/ZSTD (the columns' own encodings still compete) */
  int fast;           /* 1: no competition at all: each column is encoded once, in the encoding
                         one pass over its values estimates smallest (frame of reference, delta,
                         runs or sparse when allowed), never compressed. 4-5x faster encodes,
                         somewhat larger stripes, decoded like any: for encodes on a request's
                         path, e.g. snapshot records */
  int no_checksum;    /* 1: no checksum of the stripe's own (4 bytes less), for stripes kept
                         where every value already has one: UihTable files, snapshot records */
  /* Keep a coded column (prefix codes against a value dictionary's model:
   * the smallest form of skewed values, and the slowest to decode) only if
   * it is at most (1 - min_coded_gain) of the best encoding that needs no
   * dictionary. 0.2 by default: on the real-shaped bench it gives up 2.3%
   * of the density (against 0.1) for 11% faster full decodes
   * (bench/README). In [0, 1). */
  double min_coded_gain;
} uih_stripe_encoder_opts;

#define UIH_STRIPE_ENCODER_OPTS_DEFAULT {0.10, 3, 0, 0, 0, 0.20}

typedef struct uih_stripe_encoder uih_stripe_encoder;

/* `opts` NULL means UIH_STRIPE_ENCODER_OPTS_DEFAULT. */
int uih_stripe_encoder_create(const uih_stripe_encoder_opts *opts, uih_stripe_encoder **out,
                              uih_error *err);
void uih_stripe_encoder_free(uih_stripe_encoder *enc); /* NULL is fine */

/* Encodes the events of `batch` (1..group->stripe_events of them, or a
 * burst: up to UIH_STRIPE_EVENTS_MAX events all of one timestamp;
 * timestamps present and non-decreasing; every column of the batch is
 * stored) as a stripe of schema version `schema_version`, which must be one
 * of its group's schema's versions (1..group->schema_version) in which
 * every column's trait exists; category codes must lie in their
 * vocabulary. Anything else is refused, naming what was expected
 * (UIH_ERR_INVALID_ARGUMENT, UIH_ERR_OUT_OF_RANGE): the schema allows
 * nothing else, and a reader's batch sized by the group holds no more. On success
 * *out and *out_len give the stripe; the bytes belong to `enc` and stay
 * valid until its next encode or its free. Encoding the same batch twice
 * gives the same bytes. */
int uih_stripe_encode(uih_stripe_encoder *enc, const uih_batch *batch, uint32_t schema_version,
                      const uint8_t **out, size_t *out_len, uih_error *err);

/* uih_stripe_encode(), each column stored as `like` (nlike entries in
 * ascending trait id order: the directory of an earlier stripe, from
 * uih_stripe_read_columns) stored the same trait: only the encodings its
 * entry names (a directory's names one; those the column allows), scaled
 * if it was and the values still share a step, and that compression alone
 * (kept only if it saves min_compression_gain). A column `like` lacks, one
 * whose trait or encoder can have none of those encodings now, one whose
 * values they cannot take (a value outside the dictionary), and one they
 * store in more than 9/8 of the entry's bytes per event (when its `events`
 * is known) compete in full. For a stripe written again with a few more
 * events: the competition it won stands, at a fraction of its cost, while
 * it holds up. A fast encoder ignores `like`. */
struct uih_stripe_column_info;
int uih_stripe_encode_like(uih_stripe_encoder *enc, const uih_batch *batch, uint32_t schema_version,
                           const struct uih_stripe_column_info *like, uint32_t nlike, const uint8_t **out,
                           size_t *out_len, uih_error *err);

/* ---- inspecting ------------------------------------------------------------ */

typedef struct uih_stripe_info {
  uint32_t version;        /* format version (1, 2 or 3) */
  uint16_t group;          /* feature group id */
  uint32_t count;          /* events */
  uint32_t ncolumns;
  uint32_t schema_version;
  int64_t min_ts, max_ts;
  int checksum;            /* 1 if the stripe ends with a checksum of its own */
} uih_stripe_info;

/* How a column records which events have a value. Numbers are stored on
 * disk: fixed forever. */
typedef enum uih_presence {
  UIH_PRESENCE_ALL = 0,    /* every event has one: nothing stored */
  UIH_PRESENCE_NONE = 1,   /* no event has one: nothing stored, no values */
  UIH_PRESENCE_BITMAP = 2, /* one bit per event */
  UIH_PRESENCE_LIST = 3,   /* the ascending positions of the events that have one */
} uih_presence;

typedef struct uih_stripe_column_info {
  uint16_t trait_id;
  uih_type type;
  uint32_t encoding;    /* one UIH_ENC_* flag */
  uih_compression compression; /* UIH_COMPRESS_NONE, _LZ4 or _ZSTD */
  uint32_t bytes;       /* stored payload bytes */
  uih_presence presence;
  int scaled;           /* 1: the values are stored as multiples of a common step (formats 2 and 3) */
  uint32_t events;      /* events of the stripe it describes (0: not known) */
} uih_stripe_column_info;

/* Validates the header and directory of `len` bytes (not the checksum, not
 * the payloads) and describes them. Errors: UIH_ERR_CORRUPTION with the
 * offending offset, UIH_ERR_NOT_SUPPORTED for an unknown format version. */
int uih_stripe_read_info(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_error *err);

/* uih_stripe_read_info() that also describes the directory, in the same
 * one pass: cols[i] for each i < min(info->ncolumns, cap) (cols may be
 * NULL when cap is 0). */
int uih_stripe_read_columns(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_stripe_column_info *cols,
                            uint32_t cap, uih_error *err);

/* Directory entry `i` (< info.ncolumns) of a stripe that passed
 * uih_stripe_read_info(); every entry at once: uih_stripe_read_columns(). */
int uih_stripe_column_at(const uint8_t *buf, size_t len, uint32_t i, uih_stripe_column_info *col,
                         uih_error *err);

/* ---- decoding -------------------------------------------------------------- */

typedef struct uih_stripe_decoder uih_stripe_decoder;

int uih_stripe_decoder_create(uih_stripe_decoder **out, uih_error *err);
void uih_stripe_decoder_free(uih_stripe_decoder *dec); /* NULL is fine */

enum {
  UIH_DECODE_VERIFY_CHECKSUM = 1 << 0, /* check the XXH3 over the whole stripe first, if the
                                          stripe has one (uih_stripe_info.checksum); one
                                          without leaves that to what stores it */
};

#define UIH_DECODE_TO_END UINT32_MAX

/* Decodes events [begin, end) of the stripe in `buf` into `out` (end may be
 * UIH_DECODE_TO_END): afterwards out->count = end - begin and row r of each
 * column holds event begin + r. Only the columns of `out` are read (its trait
 * selection is the projection); a trait the stripe does not have (written
 * before the trait was added) comes back absent. `out` must belong to the
 * stripe's group, have capacity for the range, and ask each trait with the
 * type the stripe stored (else UIH_ERR_TYPE_MISMATCH). A range past the
 * stripe's events is UIH_ERR_OUT_OF_RANGE, one with begin > end
 * UIH_ERR_INVALID_ARGUMENT. The bytes are only read during the call. On error `out` is left as it was or empty (count 0);
 * either way rows past its count are clear, so it can be reused. */
int uih_stripe_decode(uih_stripe_decoder *dec, const uint8_t *buf, size_t len, uint32_t begin,
                      uint32_t end, unsigned flags, uih_batch *out, uih_error *err);

/* ---- what stripes share: value dictionaries --------------------------------- */

/* A stripe stands alone, but what many stripes have in common can be stated
 * once. A value dictionary holds one trait's most frequent values, the most
 * frequent first; a column of that trait may then store each value found
 * there as its rank (a few bits for a popular item, against the 20-40 its
 * id takes) and the others as they are: the `shared` encoding (UIH_ENC_
 * SHARED, for id, int64, uint32 and category traits). A dictionary of
 * version 2 (built since issue 19's coded columns) also carries a model of how often each rank
 * occurs (a prefix code over ranks), and the `coded` encoding (UIH_ENC_
 * CODED) stores each value as its code: about as many bits as the value's
 * share of the counts says (a 1-5 rating in one or two bits, a popular
 * item in a few). Dictionaries are built from value counts over many
 * stripes (a generation's, by the loader), stored beside them in their
 * serialized form (stripe_format.h), and handed to encoders and decoders
 * in a context. A column names the dictionary it used (shared: by its
 * 32-bit id; coded: by 16 bits of it, the first dictionary of the trait in
 * the context with a model and those 16 bits: an encoder codes a column
 * only against the one a decoder with the same context finds), so a
 * decoder without it fails with UIH_ERR_NOT_FOUND rather than guessing.
 * Decode a coded column with the context it was encoded with, or one that
 * extends it (dictionaries added after): another dictionary of the trait
 * sharing those 16 bits (a chance of 2^-16 each) would decode it wrong. */
typedef struct uih_value_dict uih_value_dict;

#define UIH_VALUE_DICT_MAX (1u << 24) /* entries (0: a declined trait's mark) */

/* Builds the dictionary of trait `trait_id` of feature group `group` from n distinct values (column bits:
 * zero-extended for 4-byte types) and how often each occurs: those counted
 * at least `min_count` times, at most `max_entries` of them, ranked by
 * count (ties: the smaller value first), so the same counts give the same
 * dictionary. UIH_ERR_NOT_FOUND if no value qualifies; a value listed twice
 * or too wide for the type is refused. The result is indexed for encoding. */
int uih_value_dict_build(uint16_t group, uint16_t trait_id, uih_type type, const uint64_t *values, const uint64_t *counts,
                         size_t n, uint64_t min_count, size_t max_entries, uih_value_dict **out, uih_error *err);

enum {
  UIH_VALUE_DICT_INDEX = 1 << 0, /* parse: also index the values, for encoders (about 24 bytes per
                                    entry; decoders need none) */
};

/* A dictionary of no entries for a group's trait: the mark that its values
 * were counted and a dictionary declined (uih_value_dict_pays), which no
 * stripe can use and which keeps a store's later loads from counting them
 * again. */
int uih_value_dict_declined(uint16_t group, uint16_t trait_id, uih_type type, uih_value_dict **out, uih_error *err);

/* Parses a serialized dictionary (untrusted bytes: checksum, bounds, the
 * values' encoding all checked). Errors: UIH_ERR_CORRUPTION naming what is
 * wrong, UIH_ERR_NOT_SUPPORTED for an unknown version. */
int uih_value_dict_parse(const uint8_t *buf, size_t len, unsigned flags, uih_value_dict **out, uih_error *err);

/* The serialized form (owned by `d`), its id (the checksum it ends with),
 * the group and trait and the number of entries. */
void uih_value_dict_bytes(const uih_value_dict *d, const uint8_t **out, size_t *len);
uint32_t uih_value_dict_id(const uih_value_dict *d);
uint16_t uih_value_dict_group(const uih_value_dict *d);
uint16_t uih_value_dict_trait(const uih_value_dict *d);
uint32_t uih_value_dict_entries(const uih_value_dict *d);
/* Whether `d` is likely to pay for itself on the values it was built from:
 * `values` of them in all, `hits` of them in `d`, spanning `range` (max -
 * min, in the order of the type: int64 as signed); the dictionary's own
 * bytes are paid once. It pays if shared columns would gain: a hit in
 * bits(entries - 1) rather than bits(range), against a bit per value
 * saying which plus 8 * its bytes. Just built (with its model), it also
 * pays if coded columns would: a hit in the bits its model gives on
 * average over the counts it was built from, another value in its escape
 * code and bits(range), plus values / 8 + 8 * its bytes bits, below 80% of
 * bits(range) a value (the encoders' default min_coded_gain is 0.2).
 * Hashed 40-bit ids pay by far; small codes (ratings, categories) pay
 * coded when some are much more frequent than others. */
int uih_value_dict_pays(const uih_value_dict *d, uint64_t hits, uint64_t values, uint64_t range);
/* The value of rank `rank` (< entries; column bits), 0 past the end. */
uint64_t uih_value_dict_value(const uih_value_dict *d, uint32_t rank);
void uih_value_dict_free(uih_value_dict *d); /* NULL is fine */

/* A set of dictionaries: any number per group's trait (a generation may
 * hold stripes written against an older one); encoders use the one added
 * last for a trait among those indexed. Read-only once built: share it
 * between threads' encoders and decoders freely. */
typedef struct uih_stripe_context uih_stripe_context;

int uih_stripe_context_create(uih_stripe_context **out, uih_error *err);
/* Takes `d` (freed on error too); a dictionary already there is not added twice. */
int uih_stripe_context_add(uih_stripe_context *ctx, uih_value_dict *d, uih_error *err);
size_t uih_stripe_context_count(const uih_stripe_context *ctx);
const uih_value_dict *uih_stripe_context_at(const uih_stripe_context *ctx, size_t i);
/* The dictionaries as one value (each as a varint length and its
 * serialized form, in the order added: empty for none), malloc'd for the
 * caller to free; and back (untrusted bytes; `flags` as for
 * uih_value_dict_parse; errors name the dictionary and offset). */
int uih_stripe_context_serialize(const uih_stripe_context *ctx, uint8_t **out, size_t *len, uih_error *err);
int uih_stripe_context_parse(const uint8_t *buf, size_t len, unsigned flags, uih_stripe_context **out,
                             uih_error *err);
void uih_stripe_context_free(uih_stripe_context *ctx); /* NULL is fine */

/* The context an encoder's or decoder's next calls use (NULL: none; a
 * decoder then refuses shared columns). Not owned; it must outlive the
 * calls. A fast encoder never uses one: its stripes stand alone. */
void uih_stripe_encoder_set_context(uih_stripe_encoder *enc, const uih_stripe_context *ctx);
void uih_stripe_decoder_set_context(uih_stripe_decoder *dec, const uih_stripe_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* UIH_STRIPE_H */
