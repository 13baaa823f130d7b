/* Stripe reader: header and directory validation, checksum, selective and
 * ranged decoding. Input bytes are untrusted throughout. */
#include <stdlib.h>

#include "error_internal.h"
#include "stripe_internal.h"
#include "types.h"

/* A parsed stripe: header fields, where the directory and payloads start. */
typedef struct stripe_view {
  uih_stripe_info info;
  const uint8_t *buf;
  size_t len;
  const uint8_t *dir;  /* first directory entry */
  const uint8_t *body; /* first payload byte (set by check_directory) */
} stripe_view;

static size_t offset_of(const stripe_view *v, const uint8_t *p) { return (size_t)(p - v->buf); }

/* The header fields after the fixed part (every format): count, columns,
 * schema version, span; info->min_ts is set. */
static int read_counts(uih_cursor *c, uih_stripe_info *info, uih_error *err) {
  uint64_t count = uih_cursor_varint(c);
  uint64_t ncols = uih_cursor_varint(c);
  uint64_t schema_version = uih_cursor_varint(c);
  uint64_t span = uih_cursor_varint(c);
  if (c->bad) return uih_corruption(err, "stripe header is truncated or has a malformed varint");
  if (count == 0 || count > UIH_STRIPE_EVENTS_MAX)
    return uih_corruption(err, "stripe header: event count %llu is outside [1, %u]",
                          (unsigned long long)count, UIH_STRIPE_EVENTS_MAX);
  if (ncols > UINT16_MAX || schema_version > UINT32_MAX)
    return uih_corruption(err, "stripe header: %llu columns or schema version %llu is out of range",
                          (unsigned long long)ncols, (unsigned long long)schema_version);
  /* INT64_MAX - min_ts, computed without overflow: it can exceed INT64_MAX. */
  uint64_t room = (uint64_t)INT64_MAX - (uint64_t)info->min_ts;
  if (span > room)
    return uih_corruption(err, "stripe header: timestamp span %llu overflows from min %lld",
                          (unsigned long long)span, (long long)info->min_ts);
  info->count = (uint32_t)count;
  info->ncolumns = (uint32_t)ncols;
  info->schema_version = (uint32_t)schema_version;
  info->max_ts = (int64_t)((uint64_t)info->min_ts + span);
  return UIH_OK;
}

/* Reads and validates the header of any format (stripe_format.h). */
static int read_header(const uint8_t *buf, size_t len, stripe_view *v, uih_error *err) {
  if (buf == NULL || len < UIH_STRIPE_MIN_SIZE)
    return uih_corruption(err, "stripe is %zu bytes, shorter than the smallest header (%d bytes)",
                          buf ? len : 0, UIH_STRIPE_MIN_SIZE);
  v->buf = buf;
  v->len = len;
  uih_stripe_info *info = &v->info;
  memset(info, 0, sizeof *info);
  uih_cursor c = uih_cursor_make(buf, len);
  if (buf[0] == (UIH_STRIPE_V1_MAGIC & 0xff)) { /* version 1: "UIHS", 1, 0, fixed fields */
    if (len < UIH_STRIPE_V1_FIXED_SIZE + UIH_STRIPE_CHECKSUM_SIZE)
      return uih_corruption(err, "stripe is %zu bytes, shorter than its %d-byte fixed header and checksum",
                            len, UIH_STRIPE_V1_FIXED_SIZE + UIH_STRIPE_CHECKSUM_SIZE);
    uint32_t magic = uih_cursor_u32(&c);
    if (magic != UIH_STRIPE_V1_MAGIC)
      return uih_corruption(err, "stripe offset 0: magic is 0x%08x, expected 0x%08x (\"UIHS\") or "
                            "format version 2 or 3", magic, UIH_STRIPE_V1_MAGIC);
    info->version = uih_cursor_u8(&c);
    if (info->version != 1)
      return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                           "stripe format version %u is not supported (this build reads versions 1 to 3)",
                           info->version);
    if (uih_cursor_u8(&c) != 0) return uih_corruption(err, "stripe offset 5: flags are not zero");
    info->group = uih_cursor_u16(&c);
    info->min_ts = (int64_t)uih_cursor_u64(&c);
    info->checksum = 1;
  } else {
    /* Version 2: the version byte, a flags byte; 3: both in one byte. */
    uint8_t first = uih_cursor_u8(&c), flags;
    info->version = first & 15u;
    if ((info->version == 2 && first != 2) || info->version == 1)
      return uih_corruption(err, "stripe offset 0: first byte 0x%02x is no format's (version 1 starts with "
                            "\"UIHS\", 2 with 0x02, 3 with 0x03 or 0x13)", first);
    if (info->version != 2 && info->version != 3)
      return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                           "stripe format version %u is not supported (this build reads versions 1 to 3)",
                           info->version);
    if (info->version == 2) {
      flags = uih_cursor_u8(&c);
      if (flags & ~UIH_STRIPE_FLAG_CHECKSUM)
        return uih_corruption(err, "stripe offset 1: unknown flags 0x%02x", flags);
    } else {
      flags = first >> 4;
      if (flags & ~UIH_STRIPE_FLAG_CHECKSUM)
        return uih_corruption(err, "stripe offset 0: unknown flags 0x%x in bits 4-7", flags);
    }
    info->checksum = flags & UIH_STRIPE_FLAG_CHECKSUM;
    uint64_t group = uih_cursor_varint(&c);
    if (group > UINT16_MAX) return uih_corruption(err, "stripe header: group id %llu is out of range",
                                                  (unsigned long long)group);
    info->group = (uint16_t)group;
    info->min_ts = uih_unzigzag64(uih_cursor_varint(&c));
  }
  if (info->checksum) {
    if (len - (size_t)(c.p - buf) < UIH_STRIPE_CHECKSUM_SIZE)
      return uih_corruption(err, "stripe of %zu bytes has no room for its checksum", len);
    c.end -= UIH_STRIPE_CHECKSUM_SIZE;
  }
  UIH_FORWARD(read_counts(&c, info, err));
  v->dir = c.p;
  v->body = NULL;
  return UIH_OK;
}

/* The end of the payloads: the checksum or the stripe's end. */
static const uint8_t *payload_end(const stripe_view *v) {
  return v->buf + v->len - (v->info.checksum ? UIH_STRIPE_CHECKSUM_SIZE : 0);
}

/* Reads one directory entry of format 3 (stripe_format.h), whose id steps
 * from `prev_id`; -1 if it is truncated or out of range. */
static inline int dir_next_v3(uih_cursor *c, int prev_id, stripe_dir_entry *de) {
  uint64_t id, length;
  const uint8_t *p = uih_cursor_peek(c, 4);
  if (p && (p[1] >> 5) != 0 && (p[2] < 0x80 || p[3] < 0x80)) {
    /* The usual entry: the id a step, a length of one or two bytes. */
    id = (uint64_t)(prev_id + (p[1] >> 5));
    length = p[2] & 0x7f;
    if (p[2] & 0x80) length |= (uint64_t)p[3] << 7;
    uih_cursor_skip(c, p[2] < 0x80 ? 3 : 4);
  } else {
    p = uih_cursor_take(c, 2);
    if (!p) return -1;
    id = (p[1] >> 5) ? (uint64_t)(prev_id + (p[1] >> 5)) : uih_cursor_varint(c);
    length = uih_cursor_varint(c);
    /* An id the step could have said is spelled as one (one encoding). */
    if (c->bad || length > UINT32_MAX || (!(p[1] >> 5) && id <= (uint64_t)(prev_id + STRIPE_DIR_STEP_MAX)))
      return -1;
  }
  if (id > UINT16_MAX) return -1;
  de->trait_id = (uint16_t)id;
  de->length = (uint32_t)length;
  de->type = p[0] & 15; /* type, compression, presence; encoding, scaled */
  de->compression = (p[0] >> 4) & 3;
  de->presence = p[0] >> 6;
  de->encoding = p[1] & 15;
  de->scaled = (p[1] >> 4) & 1;
  de->version = 3;
  return 0;
}

/* Reads one directory entry of format `version` (the id of the previous
 * entry `prev_id`, -1 before the first); -1 if it is truncated or out of
 * range. Formats 1 and 2 spell an entry as a varint id, two code bytes and
 * a varint length; the code bytes differ (stripe_format.h). */
static inline int dir_next(uih_cursor *c, unsigned version, int prev_id, stripe_dir_entry *de) {
  if (version == 3) return dir_next_v3(c, prev_id, de);
  uint64_t id, length;
  uint8_t b1, b2;
  const uint8_t *p = uih_cursor_peek(c, 5);
  if (p && p[0] < 0x80 && (p[3] < 0x80 || p[4] < 0x80)) {
    /* The usual entry: a one-byte id, a length of one or two bytes. */
    id = p[0], b1 = p[1], b2 = p[2];
    length = p[3] & 0x7f;
    if (p[3] & 0x80) length |= (uint64_t)p[4] << 7;
    uih_cursor_skip(c, p[3] < 0x80 ? 4 : 5);
  } else {
    id = uih_cursor_varint(c);
    const uint8_t *codes = uih_cursor_take(c, 2);
    length = uih_cursor_varint(c);
    if (c->bad || id > UINT16_MAX || length > UINT32_MAX) return -1;
    b1 = codes[0], b2 = codes[1];
  }
  de->trait_id = (uint16_t)id;
  de->length = (uint32_t)length;
  de->version = (uint8_t)version;
  if (version == 1) { /* type; encoding, compression, presence, a zero bit */
    de->type = b1;
    de->encoding = b2 & 7;
    de->compression = (b2 >> 3) & 3;
    de->presence = (b2 >> 5) & 3;
    de->scaled = 0;
    return (b2 & 0x80) ? -1 : 0;
  }
  de->type = b1 & 15; /* type, compression, presence; encoding, scaled, zero bits */
  de->compression = (b1 >> 4) & 3;
  de->presence = b1 >> 6;
  de->encoding = b2 & 15;
  de->scaled = (b2 >> 4) & 1;
  return (b2 & 0xe0) ? -1 : 0;
}

/* Names what is wrong with the directory entry `de` read at `at`. */
static int bad_entry(const stripe_view *v, const uint8_t *at, const stripe_dir_entry *de,
                     int prev_id, uih_error *err) {
  uih_type t = (uih_type)de->type;
  size_t off = offset_of(v, at);
  if ((int)de->trait_id <= prev_id)
    return uih_corruption(err, "stripe offset %zu: directory trait ids are not ascending (%u after %d)",
                          off, de->trait_id, prev_id);
  if (uih_type_width(t) == 0)
    return uih_corruption(err, "stripe offset %zu: trait %u has unknown type %u", off, de->trait_id, de->type);
  if (!(uih_encodings_for_type(t) & (1u << de->encoding)))
    return uih_corruption(err, "stripe offset %zu: trait %u has encoding %u, not one for %s", off,
                          de->trait_id, de->encoding, uih_type_name(t));
  if (de->scaled)
    return uih_corruption(err, "stripe offset %zu: trait %u is scaled, which %s values in encoding %u "
                          "cannot be", off, de->trait_id, uih_type_name(t), de->encoding);
  return uih_corruption(err, "stripe offset %zu: trait %u has unknown compression %u", off,
                        de->trait_id, de->compression);
}

/* The public description of directory entry `de`. */
static void describe(const stripe_dir_entry *de, uint32_t events, uih_stripe_column_info *col) {
  static const uih_compression kCompression[] = {UIH_COMPRESS_NONE, UIH_COMPRESS_LZ4, UIH_COMPRESS_ZSTD};
  col->trait_id = de->trait_id;
  col->type = (uih_type)de->type;
  col->encoding = 1u << de->encoding;
  col->compression = kCompression[de->compression];
  col->bytes = de->length;
  col->presence = (uih_presence)de->presence;
  col->scaled = de->scaled;
  col->events = events;
}

/* Validates every directory entry (ascending ids, known codes) and that the
 * payloads exactly fill the bytes between the directory and the checksum.
 * If `dir` is not NULL it receives the ncolumns entries, offsets set; if
 * `cols` is not NULL, the first `cap` entries are described there. */
static int check_directory(stripe_view *v, stripe_dir_entry *dir, uih_stripe_column_info *cols, uint32_t cap,
                           uih_error *err) {
  uih_cursor c = uih_cursor_make(v->dir, (size_t)(payload_end(v) - v->dir));
  uint64_t total = 0;
  int prev_id = -1;
  for (uint32_t i = 0; i < v->info.ncolumns; i++) {
    const uint8_t *at = c.p;
    stripe_dir_entry de;
    if (dir_next(&c, v->info.version, prev_id, &de) != 0)
      return uih_corruption(err, "stripe offset %zu: directory entry %u is truncated or out of range",
                            offset_of(v, at), i);
    /* One table lookup answers "known type" and "encoding allowed". */
    uint32_t allowed = uih_type_info_of((uih_type)de.type)->encodings;
    if ((int)de.trait_id <= prev_id || !(allowed & (1u << de.encoding)) ||
        de.compression > STRIPE_COMPRESS_ZSTD ||
        (de.scaled && (!((1u << de.encoding) & SCALED_ENCODINGS) || !stripe_type_scales((uih_type)de.type))))
      return bad_entry(v, at, &de, prev_id, err);
    prev_id = de.trait_id;
    de.offset = (size_t)total;
    total += de.length;
    if (dir) dir[i] = de;
    if (cols && i < cap) describe(&de, v->info.count, &cols[i]);
  }
  v->body = c.p;
  size_t body_len = uih_cursor_left(&c);
  if (total != body_len)
    return uih_corruption(err, "stripe offset %zu: the directory's payloads add up to %llu bytes, "
                          "the stripe has %zu before its checksum", offset_of(v, c.p),
                          (unsigned long long)total, body_len);
  return UIH_OK;
}

int uih_stripe_read_info(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_error *err) {
  return uih_stripe_read_columns(buf, len, info, NULL, 0, err);
}

int uih_stripe_read_columns(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_stripe_column_info *cols,
                            uint32_t cap, uih_error *err) {
  UIH_RETURN_IF(info == NULL, err, UIH_ERR_INVALID_ARGUMENT, "stripe_read_info: NULL info");
  stripe_view v;
  UIH_FORWARD(read_header(buf, len, &v, err));
  UIH_FORWARD(check_directory(&v, NULL, cols, cap, err));
  *info = v.info;
  return UIH_OK;
}

int uih_stripe_column_at(const uint8_t *buf, size_t len, uint32_t i, uih_stripe_column_info *col,
                         uih_error *err) {
  stripe_view v;
  UIH_FORWARD(read_header(buf, len, &v, err));
  UIH_FORWARD(check_directory(&v, NULL, NULL, 0, err));
  UIH_RETURN_IF(i >= v.info.ncolumns, err, UIH_ERR_NOT_FOUND, "stripe has %u columns, no column %u",
                v.info.ncolumns, i);
  uih_cursor c = uih_cursor_make(v.dir, (size_t)(v.body - v.dir));
  stripe_dir_entry de = {0};
  for (uint32_t k = 0; k <= i; k++) /* validated above */
    dir_next(&c, v.info.version, k ? de.trait_id : -1, &de);
  describe(&de, v.info.count, col);
  return UIH_OK;
}

/* ---- decoder ------------------------------------------------------------------ */

int uih_stripe_decoder_create(uih_stripe_decoder **out, uih_error *err) {
  UIH_RETURN_IF(out == NULL, err, UIH_ERR_INVALID_ARGUMENT, "stripe_decoder_create: NULL out");
  uih_stripe_decoder *d = calloc(1, sizeof *d);
  if (d) d->zstd = ZSTD_createDCtx();
  if (!d || !d->zstd) {
    uih_stripe_decoder_free(d);
    *out = NULL;
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_decoder_create: out of memory");
  }
  *out = d;
  return UIH_OK;
}

void uih_stripe_decoder_free(uih_stripe_decoder *d) {
  if (!d) return;
  free(d->vals);
  free(d->aux);
  free(d->aux2);
  free(d->pos);
  free(d->raw);
  free(d->dir);
  ZSTD_freeDCtx(d->zstd);
  free(d);
}

void uih_stripe_decoder_set_context(uih_stripe_decoder *d, const uih_stripe_context *ctx) {
  if (d) d->ctx = ctx;
}

int stripe_decoder_reserve_dir(uih_stripe_decoder *d, size_t n) {
  if (n <= d->dir_cap) return 0;
  stripe_dir_entry *p = realloc(d->dir, n * sizeof *p);
  if (!p) return -1;
  d->dir = p;
  d->dir_cap = n;
  return 0;
}

int stripe_decoder_reserve(uih_stripe_decoder *d, size_t n) {
  if (n <= d->cap) return 0;
  uint64_t **arrays[] = {&d->vals, &d->aux, &d->aux2, &d->pos};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
    uint64_t *p = realloc(*arrays[i], n * sizeof *p);
    if (!p) return -1;
    /* Never uninitialized: the coded decoder loads an escaped value it may
     * not keep (column_decode.c). */
    memset(p + d->cap, 0, (n - d->cap) * sizeof *p);
    *arrays[i] = p;
  }
  d->cap = n;
  return 0;
}

/* 1 if v[0..n) never decreases. A branch-free reduction: it vectorizes
 * where 64-bit vector compares exist, so an AVX2 copy is chosen at load
 * time on CPUs that have them. */
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static int ordered(const int64_t *v, uint32_t n) {
  int bad = 0;
  for (uint32_t i = 1; i < n; i++) bad |= v[i] < v[i - 1];
  return !bad;
}

/* The timestamps of a decoded range must be present, ordered and inside
 * the header's [min, max]; on a full decode they must reach both ends.
 * `sorted`: the column decoder already verified presence and order. */
static int check_ts(const uih_column *ts, uint32_t rows, int full, int sorted,
                    const uih_stripe_info *info, uih_error *err) {
  const int64_t *v = (const int64_t *)ts->values;
  uint64_t missing = 0; /* (sorted also says every row is present) */
  for (uint32_t w = 0; !sorted && w < rows / 64; w++) missing |= ~ts->present[w];
  if (!sorted && rows % 64) missing |= ~ts->present[rows / 64] & ((UINT64_C(1) << (rows % 64)) - 1);
  int bad = missing != 0 || v[0] < info->min_ts || v[rows - 1] > info->max_ts || !(sorted || ordered(v, rows));
  if (bad)
    return uih_corruption(err, "stripe timestamps are missing, unordered or outside the header's "
                          "range [%lld, %lld]", (long long)info->min_ts, (long long)info->max_ts);
  if (full && (v[0] != info->min_ts || v[rows - 1] != info->max_ts))
    return uih_corruption(err, "stripe header says timestamps span [%lld, %lld], the column "
                          "spans [%lld, %lld]", (long long)info->min_ts, (long long)info->max_ts,
                          (long long)v[0], (long long)v[rows - 1]);
  return UIH_OK;
}

/* The schema keeps a group's event time from its first version on (see
 * uih/schema.h) and the encoder requires it, so a stripe without the
 * group's timestamp column is corrupt whatever the projection asks for. */
static int check_ts_column(const stripe_dir_entry *dir, uint32_t ncolumns, const uih_trait *ts,
                           uih_error *err) {
  for (uint32_t i = 0; i < ncolumns && dir[i].trait_id <= ts->id; i++)
    if (dir[i].trait_id == ts->id) {
      if (dir[i].type == UIH_TYPE_TIMESTAMP) return UIH_OK;
      return uih_corruption(err, "stripe stores the timestamp trait %u ('%s') as %s", ts->id, ts->name,
                            uih_type_name((uih_type)dir[i].type));
    }
  return uih_corruption(err, "stripe has no column for the timestamp trait %u ('%s')", ts->id, ts->name);
}

/* Decodes every column of `out` from the validated stripe `v`, whose
 * directory check_directory left in d->dir. Directory and batch columns
 * are both in ascending trait id order: walk them together. Traits the
 * stripe lacks come back absent. */
static int decode_columns(uih_stripe_decoder *d, const stripe_view *v, uint32_t begin,
                          uint32_t end, uint32_t dirty, uih_batch *out, uih_error *err) {
  const uih_stripe_info *info = &v->info;
  uint32_t next = 0; /* the first entry not yet passed */
  for (uint32_t c = 0; c < out->ncolumns; c++) {
    uih_column *col = &out->columns[c];
    while (next < info->ncolumns && d->dir[next].trait_id < col->trait->id) next++;
    if (next == info->ncolumns || d->dir[next].trait_id != col->trait->id) { /* absent */
      stripe_clear_rows(col, 0, dirty);
      continue;
    }
    const stripe_dir_entry *de = &d->dir[next];
    UIH_RETURN_IF(de->type != col->trait->type, err, UIH_ERR_TYPE_MISMATCH,
                  "stripe stores trait %u ('%s') as %s, the batch asks for %s", de->trait_id,
                  col->trait->name, uih_type_name((uih_type)de->type), uih_type_name(col->trait->type));
    int is_ts = col->trait == out->group->ts, sorted = 0;
    /* The payload's bytes and, for masked wide loads, the rest of the stripe. */
    const uint8_t *p = v->body + de->offset;
    size_t slack = v->len - offset_of(v, p) - de->length;
    const uint64_t ts_base = stripe_to_u64(UIH_TYPE_TIMESTAMP, (uint64_t)info->min_ts);
    UIH_FORWARD(stripe_column_decode(d, de, p, slack, info->count, begin, end, dirty, col,
                                     is_ts ? &ts_base : NULL, is_ts ? &sorted : NULL, err));
    if (is_ts && end > begin)
      UIH_FORWARD(check_ts(col, end - begin, begin == 0 && end == info->count, sorted, info, err));
  }
  return UIH_OK;
}

int uih_stripe_decode(uih_stripe_decoder *d, const uint8_t *buf, size_t len, uint32_t begin,
                      uint32_t end, unsigned flags, uih_batch *out, uih_error *err) {
  UIH_RETURN_IF(!d || !out, err, UIH_ERR_INVALID_ARGUMENT, "stripe_decode: NULL argument");
  stripe_view v;
  UIH_FORWARD(read_header(buf, len, &v, err));
  if ((flags & UIH_DECODE_VERIFY_CHECKSUM) && v.info.checksum) {
    uih_cursor sum = uih_cursor_make(buf + len - UIH_STRIPE_CHECKSUM_SIZE, UIH_STRIPE_CHECKSUM_SIZE);
    uint32_t stored = uih_cursor_u32(&sum);
    uint32_t actual = uih_checksum32(buf, len - UIH_STRIPE_CHECKSUM_SIZE);
    if (stored != actual)
      return uih_corruption(err, "stripe checksum mismatch: stored %08x, computed %08x", stored, actual);
  }
  /* Room for the parsed directory. Entries take at least 3 bytes each (4
   * before format 3): a count the stripe cannot hold fails check_directory,
   * unallocated. */
  stripe_dir_entry *dir = NULL;
  if ((size_t)v.info.ncolumns * STRIPE_DIR_ENTRY_MIN <= len) {
    if (stripe_decoder_reserve_dir(d, v.info.ncolumns) != 0)
      return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_decode: out of memory");
    dir = d->dir;
  }
  UIH_FORWARD(check_directory(&v, dir, NULL, 0, err));
  if (dir == NULL && v.info.ncolumns > 0) /* cannot happen: the entries would not fit */
    return uih_corruption(err, "stripe header: %u columns do not fit in %zu bytes", v.info.ncolumns, len);
  const uih_stripe_info *info = &v.info;

  if (end == UIH_DECODE_TO_END) end = info->count;
  UIH_RETURN_IF(begin > end, err, UIH_ERR_INVALID_ARGUMENT,
                "stripe_decode: range [%u, %u) begins after it ends", begin, end);
  UIH_RETURN_IF(end > info->count, err, UIH_ERR_OUT_OF_RANGE,
                "stripe_decode: range [%u, %u) is outside the stripe's %u events", begin, end,
                info->count);
  UIH_RETURN_IF(out->group->id != info->group, err, UIH_ERR_INVALID_ARGUMENT,
                "stripe belongs to feature group %u, the batch to group %u ('%s')", info->group,
                out->group->id, out->group->name);
  UIH_RETURN_IF(end - begin > out->capacity, err, UIH_ERR_OUT_OF_RANGE,
                "stripe_decode: %u events do not fit a batch of capacity %u", end - begin,
                out->capacity);
  UIH_FORWARD(check_ts_column(d->dir, info->ncolumns, out->group->ts, err));
  d->group = info->group;
  if (stripe_decoder_reserve(d, info->count) != 0)
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_decode: out of memory");

  /* Rows past the new count must end up zero (uih_batch_append relies on
   * it); rows below it are overwritten or cleared column by column. */
  uint32_t old = out->count, rows = end - begin, dirty = old < rows ? old : rows;
  for (uint32_t c = 0; c < out->ncolumns; c++) stripe_clear_rows(&out->columns[c], rows, old);
  out->count = rows;
  int rc = decode_columns(d, &v, begin, end, dirty, out, err);
  if (rc != UIH_OK) { /* leave an empty, clean batch behind */
    for (uint32_t c = 0; c < out->ncolumns; c++) stripe_clear_rows(&out->columns[c], 0, rows);
    out->count = 0;
  }
  return rc;
}
