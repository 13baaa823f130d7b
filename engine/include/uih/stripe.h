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
   * column; 0.1 means "at least 10% smaller". In [0, 1). */
  double min_compression_gain;
  int zstd_level;     /* 1..19 */
  int no_compression; /* 1: never try LZ4/ZSTD (the columns' own encodings still compete) */
  int fast;           /* 1: no competition at all: each column is encoded once, in the encoding
                         one pass over its values estimates smallest (frame of reference, delta,
                         runs or sparse when allowed), never compressed. 4-5x faster encodes,
                         somewhat larger stripes, decoded like any: for encodes on a request's
                         path, e.g. snapshot records */
} uih_stripe_encoder_opts;

#define UIH_STRIPE_ENCODER_OPTS_DEFAULT {0.10, 3, 0, 0}

typedef struct uih_stripe_encoder uih_stripe_encoder;

/* `opts` NULL means UIH_STRIPE_ENCODER_OPTS_DEFAULT. */
int uih_stripe_encoder_create(const uih_stripe_encoder_opts *opts, uih_stripe_encoder **out,
                              uih_error *err);
void uih_stripe_encoder_free(uih_stripe_encoder *enc); /* NULL is fine */

/* Encodes the events of `batch` (1..group->stripe_events of them,
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

/* ---- inspecting ------------------------------------------------------------ */

typedef struct uih_stripe_info {
  uint32_t version;        /* format version */
  uint16_t group;          /* feature group id */
  uint32_t count;          /* events */
  uint32_t ncolumns;
  uint32_t schema_version;
  int64_t min_ts, max_ts;
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
} uih_stripe_column_info;

/* Validates the header and directory of `len` bytes (not the checksum, not
 * the payloads) and describes them. Errors: UIH_ERR_CORRUPTION with the
 * offending offset, UIH_ERR_NOT_SUPPORTED for an unknown format version. */
int uih_stripe_read_info(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_error *err);

/* Directory entry `i` (< info.ncolumns) of a stripe that passed
 * uih_stripe_read_info(). */
int uih_stripe_column_at(const uint8_t *buf, size_t len, uint32_t i, uih_stripe_column_info *col,
                         uih_error *err);

/* ---- decoding -------------------------------------------------------------- */

typedef struct uih_stripe_decoder uih_stripe_decoder;

int uih_stripe_decoder_create(uih_stripe_decoder **out, uih_error *err);
void uih_stripe_decoder_free(uih_stripe_decoder *dec); /* NULL is fine */

enum {
  UIH_DECODE_VERIFY_CHECKSUM = 1 << 0, /* check the XXH3 over the whole stripe first */
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

#ifdef __cplusplus
}
#endif
#endif /* UIH_STRIPE_H */
