/* Stripe reader: header and directory validation, checksum, selective and
 * ranged decoding. Input bytes are untrusted throughout. */
#include <stdlib.h>
#include <xxhash.h>

#include "error_internal.h"
#include "stripe_internal.h"

/* Reads and validates the header; `*dir` gets the directory's bytes. */
static int read_header(const uint8_t *buf, size_t len, uih_stripe_info *info, const uint8_t **dir,
                       uih_error *err) {
  if (buf == NULL || len < UIH_STRIPE_HEADER_SIZE + UIH_STRIPE_CHECKSUM_SIZE)
    return uih_corruption(err, "stripe is %zu bytes, shorter than the %d-byte header and checksum",
                          buf ? len : 0, UIH_STRIPE_HEADER_SIZE + UIH_STRIPE_CHECKSUM_SIZE);
  uih_cursor c = uih_cursor_make(buf, len);
  uint32_t magic = uih_cursor_u32(&c);
  if (magic != UIH_STRIPE_MAGIC)
    return uih_corruption(err, "stripe offset 0: magic is 0x%08x, expected 0x%08x (\"UIHS\")",
                          magic, UIH_STRIPE_MAGIC);
  info->version = uih_cursor_u8(&c);
  if (info->version != UIH_STRIPE_VERSION)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "stripe format version %u is not supported (this build reads version %d)",
                         info->version, UIH_STRIPE_VERSION);
  uint8_t flags = uih_cursor_u8(&c);
  info->group = uih_cursor_u16(&c);
  info->count = uih_cursor_u32(&c);
  info->ncolumns = uih_cursor_u16(&c);
  uint16_t reserved1 = uih_cursor_u16(&c);
  info->schema_version = uih_cursor_u32(&c);
  uint32_t reserved2 = uih_cursor_u32(&c);
  info->min_ts = (int64_t)uih_cursor_u64(&c);
  info->max_ts = (int64_t)uih_cursor_u64(&c);
  if (flags != 0 || reserved1 != 0 || reserved2 != 0)
    return uih_corruption(err, "stripe offset 5: flags or reserved header fields are not zero");
  if (info->count == 0 || info->count > UIH_STRIPE_EVENTS_MAX)
    return uih_corruption(err, "stripe offset 8: event count %u is outside [1, %u]", info->count,
                          UIH_STRIPE_EVENTS_MAX);
  if (info->min_ts > info->max_ts)
    return uih_corruption(err, "stripe offset 24: min timestamp %lld is after max timestamp %lld",
                          (long long)info->min_ts, (long long)info->max_ts);
  size_t dir_bytes = (size_t)info->ncolumns * UIH_STRIPE_DIR_ENTRY_SIZE;
  *dir = uih_cursor_take(&c, dir_bytes);
  if (!*dir || uih_cursor_left(&c) < UIH_STRIPE_CHECKSUM_SIZE)
    return uih_corruption(err, "stripe of %zu bytes cannot hold its %u-column directory", len,
                          info->ncolumns);
  return UIH_OK;
}

static void get_dir_entry(const uint8_t *p, stripe_dir_entry *de) {
  uih_cursor c = uih_cursor_make(p, UIH_STRIPE_DIR_ENTRY_SIZE);
  de->trait_id = uih_cursor_u16(&c);
  de->type = uih_cursor_u8(&c);
  de->encoding = uih_cursor_u8(&c);
  de->compression = uih_cursor_u8(&c);
  de->presence = uih_cursor_u8(&c);
  (void)uih_cursor_u16(&c);
  de->offset = uih_cursor_u32(&c);
  de->length = uih_cursor_u32(&c);
}

/* Validates every directory entry: ascending ids, known codes, and payloads
 * that tile the bytes between the directory and the checksum exactly. */
static int check_directory(const uint8_t *buf, size_t len, const uih_stripe_info *info,
                           const uint8_t *dir, uih_error *err) {
  size_t expect = UIH_STRIPE_HEADER_SIZE + (size_t)info->ncolumns * UIH_STRIPE_DIR_ENTRY_SIZE;
  for (uint32_t i = 0; i < info->ncolumns; i++) {
    const uint8_t *p = dir + (size_t)i * UIH_STRIPE_DIR_ENTRY_SIZE;
    size_t at = (size_t)(p - buf);
    stripe_dir_entry de, prev;
    get_dir_entry(p, &de);
    if (i > 0) get_dir_entry(p - UIH_STRIPE_DIR_ENTRY_SIZE, &prev);
    uih_type t = (uih_type)de.type;
    if (i > 0 && de.trait_id <= prev.trait_id)
      return uih_corruption(err, "stripe offset %zu: directory trait ids are not ascending (%u after %u)",
                            at, de.trait_id, prev.trait_id);
    if (uih_type_width(t) == 0)
      return uih_corruption(err, "stripe offset %zu: trait %u has unknown type %u", at + 2,
                            de.trait_id, de.type);
    if (de.encoding >= UIH_ENC_COUNT || !(uih_encodings_for_type(t) & (1u << de.encoding)))
      return uih_corruption(err, "stripe offset %zu: trait %u has encoding %u, not one for %s",
                            at + 3, de.trait_id, de.encoding, uih_type_name(t));
    if (de.compression > STRIPE_COMPRESS_ZSTD || de.presence > PRESENCE_LIST || p[6] || p[7])
      return uih_corruption(err, "stripe offset %zu: trait %u has unknown compression, presence "
                            "or reserved bits", at + 4, de.trait_id);
    if (de.offset != expect || de.length > len - UIH_STRIPE_CHECKSUM_SIZE - expect)
      return uih_corruption(err, "stripe offset %zu: trait %u payload [%u, +%u) does not follow "
                            "the previous one at %zu inside the %zu-byte stripe", at + 8,
                            de.trait_id, de.offset, de.length, expect, len);
    expect += de.length;
  }
  if (expect != len - UIH_STRIPE_CHECKSUM_SIZE)
    return uih_corruption(err, "stripe has %zu bytes after its last column, expected %d (checksum)",
                          len - expect, UIH_STRIPE_CHECKSUM_SIZE);
  return UIH_OK;
}

int uih_stripe_read_info(const uint8_t *buf, size_t len, uih_stripe_info *info, uih_error *err) {
  const uint8_t *dir;
  UIH_RETURN_IF(info == NULL, err, UIH_ERR_INVALID_ARGUMENT, "stripe_read_info: NULL info");
  UIH_FORWARD(read_header(buf, len, info, &dir, err));
  return check_directory(buf, len, info, dir, err);
}

int uih_stripe_column_at(const uint8_t *buf, size_t len, uint32_t i, uih_stripe_column_info *col,
                         uih_error *err) {
  uih_stripe_info info;
  const uint8_t *dir;
  UIH_FORWARD(read_header(buf, len, &info, &dir, err));
  UIH_RETURN_IF(i >= info.ncolumns, err, UIH_ERR_NOT_FOUND, "stripe has %u columns, no column %u",
                info.ncolumns, i);
  stripe_dir_entry de;
  get_dir_entry(dir + (size_t)i * UIH_STRIPE_DIR_ENTRY_SIZE, &de);
  static const uih_compression kCompression[] = {UIH_COMPRESS_NONE, UIH_COMPRESS_LZ4, UIH_COMPRESS_ZSTD};
  col->trait_id = de.trait_id;
  col->type = (uih_type)de.type;
  col->encoding = de.encoding < 32 ? 1u << de.encoding : 0;
  col->compression = de.compression <= STRIPE_COMPRESS_ZSTD ? kCompression[de.compression] : UIH_COMPRESS_AUTO;
  col->bytes = de.length;
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
  ZSTD_freeDCtx(d->zstd);
  free(d);
}

int stripe_decoder_reserve(uih_stripe_decoder *d, size_t n) {
  if (n <= d->cap) return 0;
  uint64_t **arrays[] = {&d->vals, &d->aux, &d->aux2, &d->pos};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
    uint64_t *p = realloc(*arrays[i], n * sizeof *p);
    if (!p) return -1;
    *arrays[i] = p;
  }
  d->cap = n;
  return 0;
}

/* Binary search of the directory for `trait_id`. */
static int find_column(const uint8_t *dir, uint32_t ncols, uint16_t trait_id, stripe_dir_entry *de) {
  uint32_t lo = 0, hi = ncols;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    get_dir_entry(dir + (size_t)mid * UIH_STRIPE_DIR_ENTRY_SIZE, de);
    if (de->trait_id == trait_id) return 1;
    if (de->trait_id < trait_id) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

/* The timestamps of a decoded range must be ordered and inside the header's
 * [min, max]; on a full decode they must reach both ends. */
static int check_ts(const uih_column *ts, uint32_t rows, int full, const uih_stripe_info *info,
                    uih_error *err) {
  const int64_t *v = (const int64_t *)ts->values;
  for (uint32_t i = 0; i < rows; i++) {
    if (!uih_column_has(ts, i) || v[i] < info->min_ts || v[i] > info->max_ts ||
        (i > 0 && v[i] < v[i - 1]))
      return uih_corruption(err, "stripe timestamps are missing, unordered or outside the "
                            "header's range at event %u", i);
  }
  if (full && (v[0] != info->min_ts || v[rows - 1] != info->max_ts))
    return uih_corruption(err, "stripe header says timestamps span [%lld, %lld], the column "
                          "spans [%lld, %lld]", (long long)info->min_ts, (long long)info->max_ts,
                          (long long)v[0], (long long)v[rows - 1]);
  return UIH_OK;
}

int uih_stripe_decode(uih_stripe_decoder *d, const uint8_t *buf, size_t len, uint32_t begin,
                      uint32_t end, unsigned flags, uih_batch *out, uih_error *err) {
  UIH_RETURN_IF(!d || !out, err, UIH_ERR_INVALID_ARGUMENT, "stripe_decode: NULL argument");
  uih_stripe_info info;
  const uint8_t *dir;
  UIH_FORWARD(read_header(buf, len, &info, &dir, err));
  if (flags & UIH_DECODE_VERIFY_CHECKSUM) {
    uint64_t stored;
    memcpy(&stored, buf + len - UIH_STRIPE_CHECKSUM_SIZE, sizeof stored);
    uint64_t actual = XXH3_64bits(buf, len - UIH_STRIPE_CHECKSUM_SIZE);
    if (stored != actual)
      return uih_corruption(err, "stripe checksum mismatch: stored %016llx, computed %016llx",
                            (unsigned long long)stored, (unsigned long long)actual);
  }
  UIH_FORWARD(check_directory(buf, len, &info, dir, err));

  if (end == UIH_DECODE_TO_END) end = info.count;
  UIH_RETURN_IF(begin > end || end > info.count, err, UIH_ERR_OUT_OF_RANGE,
                "stripe_decode: range [%u, %u) is outside the stripe's %u events", begin, end,
                info.count);
  UIH_RETURN_IF(out->group->id != info.group, err, UIH_ERR_INVALID_ARGUMENT,
                "stripe belongs to feature group %u, the batch to group %u ('%s')", info.group,
                out->group->id, out->group->name);
  UIH_RETURN_IF(end - begin > out->capacity, err, UIH_ERR_OUT_OF_RANGE,
                "stripe_decode: %u events do not fit a batch of capacity %u", end - begin,
                out->capacity);
  if (stripe_decoder_reserve(d, info.count) != 0)
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "stripe_decode: out of memory");

  uih_batch_clear(out); /* zeroes the rows it held, keeping rows past count zero */
  out->count = end - begin;
  for (uint32_t c = 0; c < out->ncolumns; c++) {
    uih_column *col = &out->columns[c];
    stripe_dir_entry de;
    if (!find_column(dir, info.ncolumns, col->trait->id, &de)) continue; /* absent */
    UIH_RETURN_IF(de.type != col->trait->type, err, UIH_ERR_TYPE_MISMATCH,
                  "stripe stores trait %u ('%s') as %s, the batch asks for %s", de.trait_id,
                  col->trait->name, uih_type_name((uih_type)de.type), uih_type_name(col->trait->type));
    UIH_FORWARD(stripe_column_decode(d, &de, buf + de.offset, info.count, begin, end, col, err));
    if (col->trait == out->group->ts && end > begin)
      UIH_FORWARD(check_ts(col, end - begin, begin == 0 && end == info.count, &info, err));
  }
  return UIH_OK;
}
