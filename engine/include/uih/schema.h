/* uihstore — schemas: feature groups and their traits.
 *
 * A schema file is JSON. It declares the feature groups of a store; each
 * group declares its traits (typed per-event fields) with stable numeric ids:
 *
 *   {
 *     "name": "feed",                  identifier, [A-Za-z_][A-Za-z0-9_]*
 *     "version": 2,                    1.., grows with every change
 *     "user_ids": "string",            optional: "integer" (the default) or "string"
 *     "groups": [{
 *       "name": "engagement",          identifier, unique
 *       "id": 1,                       0..65535, unique; part of every key
 *       "stripe_events": 256,          1..65536 events per stripe (default 256)
 *       "traits": [
 *         {"name": "ts", "id": 1, "type": "timestamp", "unit": "ms", "input": "rfc3339"},
 *         {"name": "item_id", "id": 2, "type": "id", "input": "string"},
 *         {"name": "event_type", "id": 3, "type": "category",
 *          "categories": ["impression", "click", "like"]},
 *         {"name": "watch_ms", "id": 4, "type": "uint32", "compression": "zstd"},
 *         {"name": "liked", "id": 5, "type": "flag", "added_in": 2},
 *         {"name": "score", "id": 6, "type": "float32", "dropped_in": 2}
 *       ]
 *     }]
 *   }
 *
 * Trait fields: "name" (identifier, unique among active traits of the group;
 * "user_id", "group" and "ts" are reserved for the input columns except as
 * the name of the timestamp trait, "uih_arrival" for the system trait),
 * "id" (1..65534, unique in the group, never reused; 65535 is the system
 * trait's), "type" (timestamp, id, int64, uint32, float32, category,
 * flag), and optionally "encodings" (the stripe encodings the codec may pick
 * from, each applicable to the type), "compression" (auto, none, lz4, zstd;
 * auto: the codec tries LZ4 and ZSTD on payloads of 32 bytes or more,
 * but for bit-packed ones under 256 bytes; lz4 or zstd: that one, tried
 * from 32 bytes; either way kept only where it saves the encoder's
 * min_compression_gain; a stripe encoded like an earlier one tries the
 * compression its columns have),
 * "categories" (category only: the vocabulary, code i = categories[i]),
 * "added_in" and "dropped_in" (schema versions), "unit" (timestamp only:
 * "s", "ms" or "us", the unit stored values count) and "input" (how input
 * files spell the values, uih_input: an id trait's "integer" or "string"; a
 * timestamp's "s", "ms", "us" or "rfc3339", which needs a "unit"; absent:
 * integers as they are stored). Every group has exactly one
 * active timestamp trait: the event time. It cannot be dropped and no trait
 * of its group has an earlier "added_in", so every stripe the group ever
 * stored has its column. Unknown fields are errors.
 *
 * String ids ("user_ids": "string", an id trait's "input": "string") are
 * stored as uih_hash_id of their UTF-8 bytes (uih/key.h): every program that
 * names a user or an item by its string hashes it the same way. A load
 * refuses two different strings with one hash.
 *
 * Evolution: a new version may add traits (new ids, "added_in" = the new
 * version) and drop traits (keep the entry, set "dropped_in"): stored stripes
 * name their columns by trait id, so old data stays readable.
 * uih_schema_check_evolution() verifies that one file is a valid successor of
 * another.
 *
 * A loaded schema is immutable and may be shared by any number of threads.
 * Every pointer it hands out is valid until uih_schema_free().
 */
#ifndef UIH_SCHEMA_H
#define UIH_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Trait types. Numbers are stored on disk: fixed forever. */
typedef enum uih_type {
  UIH_TYPE_TIMESTAMP = 1, /* int64, the event time (unit chosen by the user) */
  UIH_TYPE_ID = 2,        /* uint64, e.g. item ids */
  UIH_TYPE_INT64 = 3,
  UIH_TYPE_UINT32 = 4,
  UIH_TYPE_FLOAT32 = 5,   /* IEEE 754 binary32, stored bit-exact (NaN payloads too) */
  UIH_TYPE_CATEGORY = 6,  /* uint32 code, optionally named by the schema's vocabulary */
  UIH_TYPE_FLAG = 7,      /* uint8, 0 or 1 */
} uih_type;

/* Bytes one value of `type` occupies in an event batch; 0 for unknown types. */
size_t uih_type_width(uih_type type);
/* "timestamp", "id", ...; NULL for unknown types. */
const char *uih_type_name(uih_type type);

/* Stripe encodings a trait may be restricted to (bit flags). Numbers are
 * stored on disk: fixed forever. */
enum {
  UIH_ENC_PLAIN = 1u << 0,  /* fixed-width values */
  UIH_ENC_DELTA = 1u << 1,  /* delta + zigzag + bit-packing */
  UIH_ENC_DELTA2 = 1u << 2, /* delta-of-delta + zigzag + bit-packing */
  UIH_ENC_FOR = 1u << 3,    /* frame of reference + bit-packing */
  UIH_ENC_DICT = 1u << 4,   /* dictionary + bit-packed codes */
  UIH_ENC_RLE = 1u << 5,    /* run-length */
  UIH_ENC_BSS = 1u << 6,    /* byte-stream split (float32) */
  UIH_ENC_SPARSE = 1u << 7, /* presence bitmap / position list + present values */
  UIH_ENC_SHARED = 1u << 8, /* ranks in a value dictionary many stripes share (uih/stripe.h) */
  UIH_ENC_CODED = 1u << 9,  /* the same ranks, entropy-coded by the dictionary's model (uih/stripe.h) */
};
#define UIH_ENC_COUNT 10
/* The encodings that need a value dictionary. */
#define UIH_ENC_DICTIONARY (UIH_ENC_SHARED | UIH_ENC_CODED)

/* "plain", "delta", ... for one UIH_ENC_* bit; NULL otherwise. */
const char *uih_encoding_name(uint32_t encoding);
/* Mask of the encodings that apply to values of `type`. */
uint32_t uih_encodings_for_type(uih_type type);

typedef enum uih_compression {
  UIH_COMPRESS_AUTO = 0, /* the codec decides per column */
  UIH_COMPRESS_NONE = 1,
  UIH_COMPRESS_LZ4 = 2,
  UIH_COMPRESS_ZSTD = 3,
} uih_compression;

/* How input files spell a trait's values (uih_trait.input) or the user ids
 * (uih_schema_user_ids). */
typedef enum uih_input {
  UIH_INPUT_NATIVE = 0,  /* as stored: decimal integers, a category's name or code, ... */
  UIH_INPUT_STRING = 1,  /* ids: any string, stored as its uih_hash_id */
  UIH_INPUT_SECONDS = 2, /* timestamps: integer seconds, milli-, microseconds since */
  UIH_INPUT_MILLIS = 3,  /* 1970-01-01T00:00:00Z, converted to the trait's unit */
  UIH_INPUT_MICROS = 4,
  UIH_INPUT_RFC3339 = 5, /* timestamps: RFC 3339 date-times (2024-01-05T10:00:00.25+01:00) */
} uih_input;

/* The unit a timestamp trait's stored values count (uih_trait.unit). */
typedef enum uih_time_unit {
  UIH_UNIT_NONE = 0, /* not said: integers, stored as they come */
  UIH_UNIT_SECONDS = 1,
  UIH_UNIT_MILLIS = 2,
  UIH_UNIT_MICROS = 3,
} uih_time_unit;

typedef struct uih_trait {
  const char *name;
  uint16_t id;                 /* 1..65535 */
  uih_type type;
  uint32_t encodings;          /* allowed UIH_ENC_* (never 0: defaults to all that apply) */
  uih_compression compression;
  uint32_t added_in;           /* schema version that added it (>= 1) */
  uint32_t dropped_in;         /* schema version that dropped it, 0 if active */
  uint32_t ncategories;        /* category vocabulary size, 0 if none */
  const char *const *categories;
  uih_input input;             /* how inputs spell it (UIH_INPUT_NATIVE unless said) */
  uih_time_unit unit;          /* timestamps: the stored unit (UIH_UNIT_NONE unless said) */
} uih_trait;

typedef struct uih_group {
  const char *name;
  uint16_t id;
  uint32_t stripe_events;      /* 1..UIH_STRIPE_EVENTS_MAX */
  uint32_t ntraits;            /* all traits, active and dropped */
  const uih_trait *traits;     /* sorted by id */
  const uih_trait *ts;         /* the active timestamp trait */
  uint32_t schema_version;     /* the version of the schema it belongs to */
} uih_group;

#define UIH_STRIPE_EVENTS_DEFAULT 256
#define UIH_STRIPE_EVENTS_MAX 65536
#define UIH_TRAITS_MAX 1024
#define UIH_NAME_MAX 64

typedef struct uih_schema uih_schema;

/* Parses and validates `len` bytes of JSON. `origin` names the input in
 * error messages (a file name; NULL gives "<schema>"). On success *out owns
 * a new schema; free it with uih_schema_free(). Errors: UIH_ERR_PARSE (not
 * JSON: line and column), UIH_ERR_SCHEMA (field path and what was expected),
 * UIH_ERR_NO_MEMORY. */
int uih_schema_parse(const char *json, size_t len, const char *origin,
                     uih_schema **out, uih_error *err);

/* Reads the file at `path` and parses it like uih_schema_parse(); also
 * UIH_ERR_IO when the file cannot be read. */
int uih_schema_load(const char *path, uih_schema **out, uih_error *err);

void uih_schema_free(uih_schema *schema); /* NULL is fine */

const char *uih_schema_name(const uih_schema *schema);
uint32_t uih_schema_version(const uih_schema *schema);
/* How inputs spell user ids: UIH_INPUT_NATIVE (unsigned 64-bit integers)
 * or UIH_INPUT_STRING (any string, the user id its uih_hash_id). */
uih_input uih_schema_user_ids(const uih_schema *schema);
uint32_t uih_schema_group_count(const uih_schema *schema);
/* Groups in ascending id order; NULL if i is out of range. */
const uih_group *uih_schema_group_at(const uih_schema *schema, uint32_t i);
const uih_group *uih_schema_group_by_id(const uih_schema *schema, uint16_t id);
const uih_group *uih_schema_group_by_name(const uih_schema *schema, const char *name);

/* The arrival generation: a system trait every group has without declaring
 * it. The immutable tier stores with each event the generation that first
 * stored it (uint32, constant over long runs, so it costs almost nothing),
 * so a snapshot can exclude events loaded after it. It is not in a group's
 * `traits`, not found by name, not in default batches (NULL trait ids), and
 * not a CSV column: ask for it by id, UIH_TRAIT_ARRIVAL. */
#define UIH_TRAIT_ARRIVAL 65535
#define UIH_TRAIT_ARRIVAL_NAME "uih_arrival"

/* Lookups inside a group; NULL when absent. By id also finds the system
 * trait (UIH_TRAIT_ARRIVAL); by name finds active declared traits only. */
const uih_trait *uih_group_trait_by_id(const uih_group *group, uint16_t id);
const uih_trait *uih_group_trait_by_name(const uih_group *group, const char *name);
/* Number of active (not dropped) traits. */
uint32_t uih_group_active_count(const uih_group *group);

static inline int uih_trait_active(const uih_trait *t) { return t->dropped_in == 0; }

/* Checks that `newer` is a valid successor of `older`: a higher version,
 * the same user ids, every group kept with its id, every trait kept with
 * its id, name, type, input and unit (dropping is allowed, reviving a dropped trait is not), new traits marked
 * added_in a version after `older`'s. UIH_ERR_INCOMPATIBLE names the first
 * violation. */
int uih_schema_check_evolution(const uih_schema *older, const uih_schema *newer,
                               uih_error *err);

#ifdef __cplusplus
}
#endif
#endif /* UIH_SCHEMA_H */
