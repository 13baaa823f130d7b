/* Value dictionaries and stripe contexts: what many stripes share, stated
 * once (uih/stripe.h). A dictionary is one trait's most frequent values in
 * rank order; its serialized form, drawn in stripe_format.h, is what a
 * store keeps. Parsing treats the bytes as untrusted. */
#include <stdlib.h>

#include "error_internal.h"
#include "stripe_internal.h"
#include "types.h"

#define DICT_MAGIC 0x56484955u /* "UIHV", little-endian */
#define DICT_VERSION 2 /* written; version 1 (no model) is still read */
#define DICT_FIXED_SIZE 10 /* magic, version, type, group id, trait id */

/* ---- the encoder's index: value -> rank ----------------------------------- */

static size_t slot_of(uint64_t v, unsigned shift) {
  return (size_t)((v * UINT64_C(0x9e3779b97f4a7c15)) >> shift);
}

/* Open addressing over a power-of-two table at most half full: keys and
 * rank + 1 (0 marks an empty slot). -1 if out of memory or if a value is
 * listed twice (a dictionary the encoder could not use deterministically). */
static int build_index(uih_value_dict *d) {
  unsigned bits = 1;
  while (((size_t)1 << bits) < 2 * d->count) bits++;
  size_t cap = (size_t)1 << bits;
  d->keys = calloc(cap, sizeof *d->keys);
  d->slots = calloc(cap, sizeof *d->slots);
  if (!d->keys || !d->slots) return -1;
  d->shift = 64 - bits;
  d->mask = cap - 1;
  for (uint32_t r = 0; r < d->count; r++) {
    size_t s = slot_of(d->values[r], d->shift);
    while (d->slots[s]) {
      if (d->keys[s] == d->values[r]) return -1;
      s = (s + 1) & d->mask;
    }
    d->keys[s] = d->values[r];
    d->slots[s] = r + 1;
  }
  return 0;
}

int value_dict_rank(const uih_value_dict *d, uint64_t v, uint32_t *rank) {
  for (size_t s = slot_of(v, d->shift); d->slots[s]; s = (s + 1) & d->mask)
    if (d->keys[s] == v) {
      *rank = d->slots[s] - 1;
      return 1;
    }
  return 0;
}

/* Lookups this far ahead have their slots on the way: a dictionary's index
 * (megabytes for a trait of many values) misses the cache at nearly every
 * value. */
#define RANK_AHEAD 8

static void prefetch_slot(const uih_value_dict *d, uint64_t v) {
  const size_t s = slot_of(v, d->shift);
  __builtin_prefetch(&d->keys[s]);
  __builtin_prefetch(&d->slots[s]);
}

size_t value_dict_rank_all(const uih_value_dict *d, const uint64_t *v, size_t m, uih_type t, uint32_t *ranks,
                           uint32_t absent) {
  size_t held = 0;
  for (size_t k = 0; k < m && k < RANK_AHEAD; k++) prefetch_slot(d, stripe_from_u64(t, v[k]));
  for (size_t k = 0; k < m; k++) {
    if (k + RANK_AHEAD < m) prefetch_slot(d, stripe_from_u64(t, v[k + RANK_AHEAD]));
    uint32_t r;
    ranks[k] = value_dict_rank(d, stripe_from_u64(t, v[k]), &r) ? r : absent;
    held += ranks[k] != absent;
  }
  return held;
}

/* ---- building, serializing, parsing --------------------------------------- */

static int is_dict_type(uih_type t) { return (uih_encodings_for_type(t) & UIH_ENC_SHARED) != 0; }

/* Serializes d->values into d->bytes (stripe_format.h); the checksum is the id. */
static int serialize(uih_value_dict *d) {
  uih_wbuf *b = &d->bytes;
  uih_wbuf_u32(b, DICT_MAGIC);
  uih_wbuf_u8(b, DICT_VERSION);
  uih_wbuf_u8(b, (uint8_t)d->type);
  uih_wbuf_u16(b, d->group);
  uih_wbuf_u16(b, d->trait_id);
  uih_wbuf_varint(b, d->count);
  uint64_t *tmp = malloc((d->count ? d->count : 1) * sizeof *tmp);
  if (!tmp) return -1;
  for (uint32_t r = 0; r < d->count; r++) tmp[r] = stripe_to_u64(d->type, d->values[r]);
  uih_seq_encode(b, tmp, d->count, for_kind(d->type));
  free(tmp);
  /* the model: its code lengths, two to a byte, low nibble first */
  for (uint32_t s = 0; s < d->nsym; s += 2)
    uih_wbuf_u8(b, (uint8_t)(d->lens[s] | (s + 1 < d->nsym ? d->lens[s + 1] << 4 : 0)));
  if (b->oom) return -1;
  d->id = uih_checksum32(b->data, b->len);
  uih_wbuf_u32(b, d->id);
  return b->oom ? -1 : 0;
}

/* The codes and the decode table of d->lens (prefix_code.h); -1 if the
 * lengths are not a complete code or memory runs out. */
static int model_tables(uih_value_dict *d) {
  d->codes = malloc(d->nsym * sizeof *d->codes);
  d->table = malloc(PC_TABLE_SIZE * sizeof *d->table);
  if (!d->codes || !d->table || pc_codes(d->lens, d->nsym, d->codes) != 0) return -1;
  for (uint32_t s = 0; s < d->nsym; s++) {
    const unsigned len = d->lens[s];
    dict_sym e;
    if (s == d->nsym - 1) {
      e = DICT_SYM(len, len, 0, 1, 0);
    } else if (s < d->direct) {
      e = DICT_SYM(len, len, 0, 0, s);
    } else { /* bucket j: ranks direct + 2^j - 1 and the j raw bits above */
      unsigned j = s - d->direct;
      e = DICT_SYM(len + j, len, j, 0, d->direct + (UINT32_C(1) << j) - 1);
    }
    for (uint32_t k = d->codes[s]; k < PC_TABLE_SIZE; k += UINT32_C(1) << len) d->table[k] = e;
  }
  return 0;
}

/* The model of a built dictionary: symbol frequencies from the counts (one
 * more each, so every rank and the escape can be written later), a prefix
 * code for them, and the bits a hit takes on average. `counts` are its
 * entries' counts, in rank order; `misses` how many counted values it does
 * not hold. */
static int build_model(uih_value_dict *d, const uint64_t *counts, uint64_t misses) {
  d->direct = dict_direct(d->count);
  d->nsym = dict_symbols(d->count);
  uint64_t *freq = malloc(d->nsym * sizeof *freq);
  d->lens = malloc(d->nsym);
  if (!freq || !d->lens) {
    free(freq);
    return -1;
  }
  for (uint32_t s = 0; s < d->nsym; s++) freq[s] = 1;
  for (uint32_t r = 0; r < d->count; r++) {
    unsigned raw;
    uint32_t bits;
    freq[dict_symbol_of(d->direct, r, &raw, &bits)] += counts[r];
  }
  freq[d->nsym - 1] += misses;
  int rc = pc_lengths(freq, d->nsym, d->lens) == 0 && model_tables(d) == 0 ? 0 : -1;
  double bits_all = 0, hits = 0;
  for (uint32_t r = 0; rc == 0 && r < d->count; r++) {
    unsigned raw;
    uint32_t bits;
    uint32_t s = dict_symbol_of(d->direct, r, &raw, &bits);
    bits_all += (double)counts[r] * (d->lens[s] + raw);
    hits += (double)counts[r];
  }
  d->hit_bits = hits > 0 ? bits_all / hits : 0;
  free(freq);
  return rc;
}

/* Orders candidates by count (descending), then value (ascending). */
typedef struct ranked {
  uint64_t value, count;
} ranked;

static int by_count(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return a->value < b->value ? -1 : a->value > b->value;
}

int uih_value_dict_build(uint16_t group, uint16_t trait_id, uih_type type, const uint64_t *values, const uint64_t *counts,
                         size_t n, uint64_t min_count, size_t max_entries, uih_value_dict **out, uih_error *err) {
  UIH_RETURN_IF(!out || (n && (!values || !counts)), err, UIH_ERR_INVALID_ARGUMENT,
                "value_dict_build: NULL argument");
  *out = NULL;
  UIH_RETURN_IF(!is_dict_type(type), err, UIH_ERR_INVALID_ARGUMENT,
                "value_dict_build: trait %u is %s; dictionaries hold id, int64, uint32 and category values",
                trait_id, uih_type_name(type) ? uih_type_name(type) : "of an unknown type");
  UIH_RETURN_IF(max_entries == 0 || max_entries > UIH_VALUE_DICT_MAX, err, UIH_ERR_INVALID_ARGUMENT,
                "value_dict_build: max_entries %zu is outside [1, %u]", max_entries, UIH_VALUE_DICT_MAX);
  const uint64_t limit = uih_type_width(type) == 8 ? UINT64_MAX : UINT32_MAX;
  size_t k = 0;
  ranked *cand = malloc((n ? n : 1) * sizeof *cand);
  UIH_RETURN_IF(!cand, err, UIH_ERR_NO_MEMORY, "value_dict_build: out of memory");
  for (size_t i = 0; i < n; i++) {
    if (values[i] > limit) {
      free(cand);
      return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "value_dict_build: value %zu (%llu) does not fit %s", i,
                           (unsigned long long)values[i], uih_type_name(type));
    }
    if (counts[i] >= min_count && counts[i] > 0) cand[k++] = (ranked){values[i], counts[i]};
  }
  qsort(cand, k, sizeof *cand, by_count);
  if (k > max_entries) k = max_entries;
  if (k == 0) {
    free(cand);
    return uih_error_set(err, UIH_ERR_NOT_FOUND,
                         "value_dict_build: trait %u has no value counted %llu times or more", trait_id,
                         (unsigned long long)min_count);
  }
  uint64_t total = 0, hits = 0;
  for (size_t i = 0; i < n; i++) total += counts[i];
  uih_value_dict *d = calloc(1, sizeof *d);
  uint64_t *kept = malloc(k * sizeof *kept);
  if (d) d->values = malloc(k * sizeof *d->values);
  if (!d || !d->values || !kept) {
    free(cand), free(kept);
    uih_value_dict_free(d);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_build: out of memory");
  }
  d->group = group;
  d->trait_id = trait_id;
  d->type = type;
  d->count = (uint32_t)k;
  for (size_t r = 0; r < k; r++) d->values[r] = cand[r].value, kept[r] = cand[r].count, hits += cand[r].count;
  free(cand);
  int model = build_model(d, kept, total - hits);
  free(kept);
  if (model != 0 || serialize(d) != 0 || build_index(d) != 0) {
    /* (the values are distinct only if the caller's were: check) */
    int dup = !d->bytes.oom && d->keys && d->slots;
    uih_value_dict_free(d);
    if (dup) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "value_dict_build: a value is listed twice");
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_build: out of memory");
  }
  *out = d;
  return UIH_OK;
}

int uih_value_dict_declined(uint16_t group, uint16_t trait_id, uih_type type, uih_value_dict **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "value_dict_declined: NULL out");
  *out = NULL;
  UIH_RETURN_IF(!is_dict_type(type), err, UIH_ERR_INVALID_ARGUMENT,
                "value_dict_declined: trait %u is %s; dictionaries hold id, int64, uint32 and category values",
                trait_id, uih_type_name(type) ? uih_type_name(type) : "of an unknown type");
  uih_value_dict *d = calloc(1, sizeof *d);
  if (d) {
    d->group = group, d->trait_id = trait_id, d->type = type; /* and no entries */
    d->values = malloc(sizeof *d->values);
  }
  if (!d || !d->values || serialize(d) != 0 || build_index(d) != 0) {
    uih_value_dict_free(d);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_declined: out of memory");
  }
  *out = d;
  return UIH_OK;
}

int uih_value_dict_parse(const uint8_t *buf, size_t len, unsigned flags, uih_value_dict **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "value_dict_parse: NULL out");
  *out = NULL;
  if (!buf || len < DICT_FIXED_SIZE + 1 + UIH_STRIPE_CHECKSUM_SIZE)
    return uih_corruption(err, "value dictionary is %zu bytes, shorter than its header and checksum", buf ? len : 0);
  uih_cursor c = uih_cursor_make(buf, len - UIH_STRIPE_CHECKSUM_SIZE);
  uint32_t magic = uih_cursor_u32(&c);
  if (magic != DICT_MAGIC)
    return uih_corruption(err, "value dictionary offset 0: magic is 0x%08x, expected 0x%08x (\"UIHV\")", magic,
                          DICT_MAGIC);
  uint8_t version = uih_cursor_u8(&c);
  if (version < 1 || version > DICT_VERSION)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "value dictionary version %u is not supported (this build reads versions 1 to %d)", version,
                         DICT_VERSION);
  uih_cursor sum = uih_cursor_make(buf + len - UIH_STRIPE_CHECKSUM_SIZE, UIH_STRIPE_CHECKSUM_SIZE);
  uint32_t stored = uih_cursor_u32(&sum), actual = uih_checksum32(buf, len - UIH_STRIPE_CHECKSUM_SIZE);
  if (stored != actual)
    return uih_corruption(err, "value dictionary checksum mismatch: stored %08x, computed %08x", stored, actual);
  uih_type type = (uih_type)uih_cursor_u8(&c);
  uint16_t group = uih_cursor_u16(&c), trait_id = uih_cursor_u16(&c);
  uint64_t k = uih_cursor_varint(&c);
  if (c.bad || !is_dict_type(type) || k > UIH_VALUE_DICT_MAX)
    return uih_corruption(err, "value dictionary header: type %u or %llu entries is out of range", (unsigned)type,
                          (unsigned long long)k);
  /* Each entry takes at least a bit: a count the bytes cannot hold fails
   * before anything is allocated for it. */
  if (k > 8 * (uint64_t)uih_cursor_left(&c) + 8 * 22)
    return uih_corruption(err, "value dictionary says %llu entries in %zu bytes", (unsigned long long)k,
                          uih_cursor_left(&c));
  uih_value_dict *d = calloc(1, sizeof *d);
  if (d) d->values = malloc((k ? k : 1) * sizeof *d->values);
  uint64_t *scratch = malloc(UIH_SEQ_BLOCK * sizeof *scratch);
  int rc = UIH_OK;
  if (!d || !d->values || !scratch) {
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_parse: out of memory");
  } else {
    d->group = group;
    d->trait_id = trait_id;
    d->type = type;
    d->count = (uint32_t)k;
    d->id = stored;
    const uint8_t *lens = NULL;
    if (version >= 2 && k > 0) { /* the model's code lengths follow the values */
      d->direct = dict_direct(d->count);
      d->nsym = dict_symbols(d->count);
    }
    if (uih_seq_decode(&c, k, for_kind(type), 0, k, d->values, scratch) != 0 ||
        (d->nsym && !(lens = uih_cursor_take(&c, (d->nsym + 1) / 2))) || uih_cursor_left(&c) != 0)
      rc = uih_corruption(err, "value dictionary of trait %u: its %llu values%s are malformed, truncated or "
                          "followed by trailing bytes", trait_id, (unsigned long long)k,
                          d->nsym ? " and code lengths" : "");
    if (rc == UIH_OK && lens) {
      d->lens = malloc(d->nsym);
      if (!d->lens) {
        rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_parse: out of memory");
      } else {
        for (uint32_t s = 0; s < d->nsym; s++) d->lens[s] = (lens[s / 2] >> (4 * (s & 1))) & 15;
        if ((d->nsym & 1) && (lens[d->nsym / 2] >> 4) != 0)
          rc = uih_corruption(err, "value dictionary of trait %u: the padding after its code lengths is not zero",
                              trait_id);
        else if (model_tables(d) != 0)
          rc = d->codes && d->table
                   ? uih_corruption(err, "value dictionary of trait %u: its %u code lengths are not a complete "
                                    "prefix code of at most %d bits", trait_id, d->nsym, PC_MAX_LEN)
                   : uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_parse: out of memory");
      }
    }
    const uint64_t limit = uih_type_width(type) == 8 ? UINT64_MAX : UINT32_MAX;
    for (uint32_t r = 0; rc == UIH_OK && r < d->count; r++) {
      d->values[r] = stripe_from_u64(type, d->values[r]);
      if (d->values[r] > limit)
        rc = uih_corruption(err, "value dictionary of trait %u: entry %u does not fit %s", trait_id, r,
                            uih_type_name(type));
    }
    uih_wbuf_put(&d->bytes, buf, len);
    if (rc == UIH_OK && d->bytes.oom) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_parse: out of memory");
    if (rc == UIH_OK && (flags & UIH_VALUE_DICT_INDEX) && build_index(d) != 0)
      rc = d->keys && d->slots ? uih_corruption(err, "value dictionary of trait %u lists a value twice", trait_id)
                               : uih_error_set(err, UIH_ERR_NO_MEMORY, "value_dict_parse: out of memory");
  }
  free(scratch);
  if (rc != UIH_OK) {
    uih_value_dict_free(d);
    return rc;
  }
  *out = d;
  return UIH_OK;
}

void uih_value_dict_bytes(const uih_value_dict *d, const uint8_t **out, size_t *len) {
  *out = d->bytes.data;
  *len = d->bytes.len;
}

uint32_t uih_value_dict_id(const uih_value_dict *d) { return d->id; }
uint16_t uih_value_dict_group(const uih_value_dict *d) { return d->group; }
uint16_t uih_value_dict_trait(const uih_value_dict *d) { return d->trait_id; }
uint32_t uih_value_dict_entries(const uih_value_dict *d) { return d->count; }
int uih_value_dict_pays(const uih_value_dict *d, uint64_t hits, uint64_t values, uint64_t range) {
  if (!d || d->count == 0 || hits > values) return 0;
  const unsigned vb = uih_bits(range), rb = uih_bits(d->count - 1);
  /* Shared: a hit in bits(entries - 1), a bit per value saying which. */
  const double shared_gain = vb > rb ? (double)hits * (vb - rb) : 0;
  if (shared_gain > (double)values + 8.0 * (double)d->bytes.len) return 1;
  if (d->nsym && d->hit_bits > 0) { /* coded: the model says what its hits take; a miss, its escape and itself */
    const double coded = (double)hits * d->hit_bits + (double)(values - hits) * (d->lens[d->nsym - 1] + vb);
    /* an encoder keeps a coded column that saves its default min_coded_gain */
    const double keep = 1.0 - ((uih_stripe_encoder_opts)UIH_STRIPE_ENCODER_OPTS_DEFAULT).min_coded_gain;
    return coded + (double)values / 8 + 8.0 * (double)d->bytes.len < keep * (double)values * vb;
  }
  return 0;
}

uint64_t uih_value_dict_value(const uih_value_dict *d, uint32_t rank) { return rank < d->count ? d->values[rank] : 0; }

void uih_value_dict_free(uih_value_dict *d) {
  if (!d) return;
  free(d->values);
  free(d->keys);
  free(d->slots);
  free(d->lens);
  free(d->codes);
  free(d->table);
  uih_wbuf_free(&d->bytes);
  free(d);
}

/* ---- contexts ---------------------------------------------------------------- */

int uih_stripe_context_create(uih_stripe_context **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "stripe_context_create: NULL out");
  *out = calloc(1, sizeof **out);
  UIH_RETURN_IF(!*out, err, UIH_ERR_NO_MEMORY, "stripe_context_create: out of memory");
  return UIH_OK;
}

int uih_stripe_context_add(uih_stripe_context *ctx, uih_value_dict *d, uih_error *err) {
  if (!ctx || !d) {
    uih_value_dict_free(d);
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "stripe_context_add: NULL argument");
  }
  for (size_t i = 0; i < ctx->n; i++)
    if (ctx->dicts[i]->group == d->group && ctx->dicts[i]->trait_id == d->trait_id && ctx->dicts[i]->id == d->id) {
      uih_value_dict_free(d); /* the same dictionary again: nothing to add */
      return UIH_OK;
    }
  if (ctx->n == ctx->cap) {
    size_t cap = ctx->cap ? 2 * ctx->cap : 4;
    uih_value_dict **grown = realloc(ctx->dicts, cap * sizeof *grown);
    if (!grown) {
      uih_value_dict_free(d);
      return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_context_add: out of memory");
    }
    ctx->dicts = grown;
    ctx->cap = cap;
  }
  ctx->dicts[ctx->n++] = d;
  return UIH_OK;
}

void uih_stripe_context_free(uih_stripe_context *ctx) {
  if (!ctx) return;
  for (size_t i = 0; i < ctx->n; i++) uih_value_dict_free(ctx->dicts[i]);
  free(ctx->dicts);
  free(ctx);
}

const uih_value_dict *stripe_context_find(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                          uint32_t id) {
  for (size_t i = 0; ctx && i < ctx->n; i++) {
    const uih_value_dict *d = ctx->dicts[i];
    if (d->group == group && d->trait_id == trait_id && d->id == id) return d;
  }
  return NULL;
}

const uih_value_dict *stripe_context_encoding(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                              uih_type type) {
  const uih_value_dict *found = NULL;
  for (size_t i = 0; ctx && i < ctx->n; i++) {
    const uih_value_dict *d = ctx->dicts[i];
    if (d->group == group && d->trait_id == trait_id && d->type == type && d->slots) found = d; /* the last added */
  }
  return found;
}

const uih_value_dict *stripe_context_find_coded(const uih_stripe_context *ctx, uint16_t group, uint16_t trait_id,
                                                uint16_t id16) {
  for (size_t i = 0; ctx && i < ctx->n; i++) {
    const uih_value_dict *d = ctx->dicts[i];
    if (d->nsym && d->group == group && d->trait_id == trait_id && (uint16_t)d->id == id16) return d;
  }
  return NULL;
}

size_t uih_stripe_context_count(const uih_stripe_context *ctx) { return ctx ? ctx->n : 0; }

const uih_value_dict *uih_stripe_context_at(const uih_stripe_context *ctx, size_t i) {
  return ctx && i < ctx->n ? ctx->dicts[i] : NULL;
}

int uih_stripe_context_serialize(const uih_stripe_context *ctx, uint8_t **out, size_t *len, uih_error *err) {
  UIH_RETURN_IF(!out || !len, err, UIH_ERR_INVALID_ARGUMENT, "stripe_context_serialize: NULL argument");
  uih_wbuf b = {0};
  for (size_t i = 0; ctx && i < ctx->n; i++) {
    uih_wbuf_varint(&b, ctx->dicts[i]->bytes.len);
    uih_wbuf_put(&b, ctx->dicts[i]->bytes.data, ctx->dicts[i]->bytes.len);
  }
  if (b.oom) {
    uih_wbuf_free(&b);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_context_serialize: out of memory");
  }
  *out = b.data; /* NULL when empty */
  *len = b.len;
  return UIH_OK;
}

int uih_stripe_context_parse(const uint8_t *buf, size_t len, unsigned flags, uih_stripe_context **out,
                             uih_error *err) {
  UIH_FORWARD(uih_stripe_context_create(out, err));
  uih_cursor c = uih_cursor_make(buf, buf ? len : 0);
  for (size_t i = 0; uih_cursor_left(&c) > 0; i++) {
    const uint8_t *at = c.p;
    uint64_t n = uih_cursor_varint(&c);
    const uint8_t *p = c.bad || n > uih_cursor_left(&c) ? NULL : uih_cursor_take(&c, (size_t)n);
    uih_value_dict *d = NULL;
    int rc = p ? uih_value_dict_parse(p, (size_t)n, flags, &d, err)
               : uih_corruption(err, "offset %zu: dictionary %zu's length is malformed or runs past the end",
                                (size_t)(at - buf), i);
    if (rc == UIH_OK) rc = uih_stripe_context_add(*out, d, err);
    if (rc != UIH_OK) {
      uih_error_prefix(err, "value dictionaries: ");
      uih_stripe_context_free(*out);
      *out = NULL;
      return rc;
    }
  }
  return UIH_OK;
}
