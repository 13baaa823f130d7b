/* Writing loader-input CSV: the round-trip rules of uih/csv.h. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "error_internal.h"
#include "uih/csv.h"

/* Writes `s` as one field, quoted when the reader would otherwise split,
 * join or trim it. */
static void put_field(FILE *f, const char *s) {
  size_t n = strlen(s);
  int quote = n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t');
  for (size_t i = 0; i < n && !quote; i++) quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
  if (!quote) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') fputc('"', f);
    fputc(s[i], f);
  }
  fputc('"', f);
}

static void put_value(FILE *f, const uih_column *c, uint32_t row) {
  if (!uih_column_has(c, row)) return; /* absent: empty */
  const uih_trait *t = c->trait;
  uint64_t bits = uih_column_get_bits(c, row); /* a category's code: checked by the caller */
  switch (t->type) {
    case UIH_TYPE_TIMESTAMP:
    case UIH_TYPE_INT64: fprintf(f, "%" PRId64, (int64_t)bits); break;
    case UIH_TYPE_FLOAT32: fprintf(f, "%.9g", (double)uih_column_get_f32(c, row)); break;
    case UIH_TYPE_CATEGORY:
      if (t->ncategories) put_field(f, t->categories[bits]);
      else fprintf(f, "%" PRIu64, bits); /* no vocabulary: the code */
      break;
    default: fprintf(f, "%" PRIu64, bits); break;
  }
}

static int stream_status(FILE *f, uih_error *err) {
  if (!ferror(f)) return UIH_OK;
  int e = errno;
  return uih_error_set(err, UIH_ERR_IO, "writing CSV: %s", e ? strerror(e) : "stream error");
}

int uih_csv_write_header(FILE *f, const uih_batch *b, uih_error *err) {
  UIH_RETURN_IF(!f || !b, err, UIH_ERR_INVALID_ARGUMENT, "csv_write_header: NULL argument");
  fputs("user_id,group,ts", f);
  for (uint32_t c = 0; c < b->ncolumns; c++)
    if (b->columns[c].trait != b->group->ts) fprintf(f, ",%s", b->columns[c].trait->name);
  fputc('\n', f);
  return stream_status(f, err);
}

int uih_csv_write_row(FILE *f, uint64_t user_id, const uih_batch *b, uint32_t row, uih_error *err) {
  UIH_RETURN_IF(!f || !b, err, UIH_ERR_INVALID_ARGUMENT, "csv_write_row: NULL argument");
  UIH_RETURN_IF(row >= b->count, err, UIH_ERR_OUT_OF_RANGE, "csv_write_row: row %u of a batch of %u events", row,
                b->count);
  /* A code outside its vocabulary would not read back: refused, as every
   * store of events refuses it. */
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    const uih_trait *t = b->columns[c].trait;
    UIH_RETURN_IF(t->type == UIH_TYPE_CATEGORY && t->ncategories && uih_column_has(&b->columns[c], row) &&
                      uih_column_get_bits(&b->columns[c], row) >= t->ncategories,
                  err, UIH_ERR_OUT_OF_RANGE, "csv_write_row: trait '%s' has category code %llu, its vocabulary has %u",
                  t->name, (unsigned long long)uih_column_get_bits(&b->columns[c], row), t->ncategories);
  }
  fprintf(f, "%" PRIu64 ",%s,", user_id, b->group->name);
  int ts = uih_batch_column_index(b, b->group->ts->id);
  if (ts >= 0) put_value(f, &b->columns[ts], row);
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    if ((int)c == ts) continue;
    fputc(',', f);
    put_value(f, &b->columns[c], row);
  }
  fputc('\n', f);
  return stream_status(f, err);
}
