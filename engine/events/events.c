/* Event lists: validation, encoding, decoding, merging, quarantine and
 * retention. The format is drawn in events_format.h.
 *
 * Every operation that produces a list goes through one path: rows are
 * gathered as (pointer, length) references — straight into the inputs when
 * their columns already match the output's, re-encoded into scratch
 * otherwise — then sorted and deduplicated if they are not already in
 * canonical order, cut by the limits, and written. */
#include "uih/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "cursor.h"
#include "error_internal.h"
#include "events_format.h"
#include "types.h"
#include "mem.h"
#include "uih/key.h"
#include "wbuf.h"


typedef struct row_ref {
  const uint8_t *p;
  uint32_t len;
} row_ref;

typedef struct column {
  uint16_t id;
  uint8_t type;
} column;

/* An input of a merge: where its columns and rows are. */
typedef struct input_cols {
  const uint8_t *cols; /* c * 3 bytes */
  uint32_t c;
  size_t start;        /* its first row in refs */
} input_cols;

struct uih_events {
  uih_wbuf out;
  uih_wbuf rows;   /* rows re-encoded for the output's columns */
  row_ref *refs;
  size_t nrefs, refs_cap;
  input_cols *inputs; /* of the current merge */
  size_t inputs_cap;
  uih_slice *slices;  /* existing value + operands, for the merge operator */
  size_t slices_cap;
  column cols[UIH_EVENTS_COLUMNS_MAX]; /* the output's columns, 0 = timestamp */
  uint32_t ncols;
  column tmp[UIH_EVENTS_COLUMNS_MAX];
};

/* A parsed, validated list. Its regions were handed out by the cursor that
 * validated them; walkers read them through cursors again (body()). */
typedef struct list {
  const uint8_t *base; /* the list's first byte, for offsets in messages */
  uint8_t flags;
  uint16_t group;
  uint32_t n, c;
  const uint8_t *cols; /* c * 3 bytes */
  const uint8_t *body; /* rows, or the quarantine reason */
  const uint8_t *end;  /* where the checksum starts */
  const uint8_t *last; /* the last row (parse_list), NULL if none */
  uint8_t width[UIH_EVENTS_COLUMNS_MAX];
} list;

/* A cursor over the list's rows (or quarantine body). */
static inline uih_cursor body(const list *L) { return uih_cursor_make(L->body, (size_t)(L->end - L->body)); }

/* Column j of a column table of c columns. */
static column col_at(const uint8_t *cols, uint32_t c, uint32_t j) {
  uih_cursor t = uih_cursor_make(cols, (size_t)UIH_EVENTS_COLUMN_SIZE * c);
  uih_cursor_skip(&t, (size_t)UIH_EVENTS_COLUMN_SIZE * j);
  column k;
  k.id = uih_cursor_u16(&t);
  k.type = uih_cursor_u8(&t);
  return k;
}

/* The time of the row at `row` (at least UIH_EVENTS_TS_SIZE bytes). */
static inline int64_t row_ts(const uint8_t *row) {
  uih_cursor t = uih_cursor_make(row, UIH_EVENTS_TS_SIZE);
  return uih_order_i64(uih_cursor_be64(&t));
}

static inline int row_cmp(const row_ref *a, const row_ref *b) {
  /* Rows start with their 8-byte big-endian timestamp: most differ there. */
  const uint64_t x = uih_load_be64(a->p), y = uih_load_be64(b->p);
  if (x != y) return x < y ? -1 : 1;
  uint32_t m = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->p, b->p, m);
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

static int cmp_refs(const void *a, const void *b) { return row_cmp(a, b); }

static inline uint32_t presence_bytes(uint32_t c) { return (c - 1 + 7) / 8; }

int uih_events_create(uih_events **out, uih_error *err) {
  UIH_RETURN_IF(out == NULL, err, UIH_ERR_INVALID_ARGUMENT, "events_create: NULL argument");
  *out = calloc(1, sizeof **out);
  UIH_RETURN_IF(*out == NULL, err, UIH_ERR_NO_MEMORY, "events_create: out of memory");
  return UIH_OK;
}

void uih_events_free(uih_events *ev) {
  if (!ev) return;
  uih_wbuf_free(&ev->out);
  uih_wbuf_free(&ev->rows);
  free(ev->refs);
  free(ev->inputs);
  free(ev->slices);
  free(ev);
}

/* Grows the array *p of *cap elements of `size` bytes to hold `n`; kept
 * across calls, so a warm workspace does not allocate. */
static int grow(void **p, size_t *cap, size_t n, size_t size, uih_error *err) {
  if (n <= *cap) return UIH_OK;
  size_t c = *cap ? *cap : 64;
  while (c < n) c *= 2;
  void *q = realloc(*p, c * size);
  UIH_RETURN_IF(q == NULL, err, UIH_ERR_NO_MEMORY, "event list: out of memory for %zu items", n);
  *p = q;
  *cap = c;
  return UIH_OK;
}

static int reserve_refs(uih_events *ev, size_t n, uih_error *err) {
  return grow((void **)&ev->refs, &ev->refs_cap, n, sizeof *ev->refs, err);
}

/* ---- parsing and validation -------------------------------------------- */

/* Validates the header, the column table and the checksum of `len` bytes. */
static int parse_head(const uint8_t *buf, size_t len, list *L, uih_error *err) {
  if (len < UIH_EVENTS_HEADER_SIZE + UIH_EVENTS_CHECKSUM_SIZE)
    return uih_corruption(err, "event list: %zu bytes, shorter than the %u-byte minimum", len,
                          UIH_EVENTS_HEADER_SIZE + UIH_EVENTS_CHECKSUM_SIZE);
  if (len > UIH_EVENTS_BYTES_MAX)
    return uih_corruption(err, "event list: %zu bytes, more than the %u-byte maximum", len,
                          (unsigned)UIH_EVENTS_BYTES_MAX);
  size_t body_end = len - UIH_EVENTS_CHECKSUM_SIZE;
  uih_cursor c = uih_cursor_make(buf, len);
  uint8_t version = uih_cursor_u8(&c);
  if (version != UIH_EVENTS_VERSION)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "event list: offset 0: format version %u, this build reads version %u", version,
                         UIH_EVENTS_VERSION);
  uih_cursor sum = uih_cursor_make(buf + body_end, UIH_EVENTS_CHECKSUM_SIZE);
  uint32_t stored = uih_cursor_u32(&sum), actual = uih_checksum32(buf, body_end);
  if (stored != actual)
    return uih_corruption(err, "event list: offset %zu: checksum %08x, the bytes give %08x", body_end, stored,
                          actual);
  L->base = buf;
  L->flags = uih_cursor_u8(&c);
  L->group = uih_cursor_u16(&c);
  L->n = uih_cursor_u32(&c);
  L->c = uih_cursor_u16(&c);
  L->end = buf + body_end;
  if (L->flags & ~UIH_EVENTS_FLAG_QUARANTINED)
    return uih_corruption(err, "event list: offset 1: unknown flags 0x%02x", L->flags);
  if (L->flags & UIH_EVENTS_FLAG_QUARANTINED) {
    if (L->c != 0) return uih_corruption(err, "event list: offset 8: quarantined with %u columns", L->c);
    L->cols = L->body = c.p;
    return UIH_OK;
  }
  if (L->c == 0 || L->c > UIH_EVENTS_COLUMNS_MAX)
    return uih_corruption(err, "event list: offset 8: %u columns, expected 1..%u", L->c, UIH_EVENTS_COLUMNS_MAX);
  if (L->n > UIH_EVENTS_MAX)
    return uih_corruption(err, "event list: offset 4: %u events, more than %u", L->n, UIH_EVENTS_MAX);
  c.end = L->end; /* the checksum is not the column table's */
  L->cols = uih_cursor_take(&c, (size_t)UIH_EVENTS_COLUMN_SIZE * L->c);
  if (!L->cols)
    return uih_corruption(err, "event list: offset 10: %u columns do not fit in %zu bytes", L->c, len);
  L->body = c.p;
  uih_cursor t = uih_cursor_make(L->cols, (size_t)UIH_EVENTS_COLUMN_SIZE * L->c);
  uint16_t prev = 0, ts_id = 0;
  for (uint32_t j = 0; j < L->c; j++) {
    size_t at = UIH_EVENTS_HEADER_SIZE + uih_cursor_offset(&t, L->cols);
    uint16_t id = uih_cursor_u16(&t);
    uint8_t type = uih_cursor_u8(&t);
    size_t w = uih_type_info_of((uih_type)type)->width;
    if (j == 0) ts_id = id;
    if (w == 0) return uih_corruption(err, "event list: offset %zu: unknown trait type %u", at + 2, type);
    if (id == 0) return uih_corruption(err, "event list: offset %zu: trait id 0", at);
    if ((j == 0) != (type == UIH_TYPE_TIMESTAMP))
      return uih_corruption(err, "event list: offset %zu: column %u has type %u; %s", at + 2, j, type,
                            j == 0 ? "column 0 must be the timestamp" : "only column 0 may be a timestamp");
    if (j > 0 && id == ts_id)
      return uih_corruption(err, "event list: offset %zu: trait id %u is also the timestamp's", at, id);
    if (j > 1 && id <= prev)
      return uih_corruption(err, "event list: offset %zu: trait id %u after %u, expected ascending", at, id, prev);
    prev = j == 0 ? 0 : id;
    L->width[j] = (uint8_t)w;
  }
  return UIH_OK;
}

/* Reads the row at `rows` and moves past it; returns its length, or 0 if
 * it is malformed (*why says how; `rows` is then bad). */
static uint32_t row_next(const list *L, uih_cursor *rows, const char **why) {
  const uint8_t *start = rows->p;
  uint32_t pb = presence_bytes(L->c);
  if (!uih_cursor_take(rows, UIH_EVENTS_TS_SIZE)) {
    *why = "the row's timestamp runs past the end";
    return 0;
  }
  const uint8_t *pres = uih_cursor_take(rows, pb);
  if (!pres) {
    *why = "the row's presence bytes run past the end";
    return 0;
  }
  for (uint32_t j = 1; j < L->c; j++) {
    if (!uih_bit_get(pres, j - 1)) continue;
    const uint8_t *v = uih_cursor_take(rows, L->width[j]);
    if (!v) {
      *why = "the row's values run past the end";
      return 0;
    }
    if (L->width[j] == 1 && v[0] > 1) {
      *why = "a flag value is neither 0 nor 1";
      rows->bad = 1;
      return 0;
    }
  }
  if (L->c > 1 && uih_bit_tail(pres, L->c - 1)) {
    *why = "presence bits are set past the last column";
    rows->bad = 1;
    return 0;
  }
  return (uint32_t)(rows->p - start);
}

/* A time range a walk over the rows counts on its way: the rows with
 * min_ts <= ts <= max_ts (contiguous, rows being in time order) and the
 * first of them. */
typedef struct range_scan {
  int64_t min_ts, max_ts;
  uint32_t count;
  const uint8_t *first;
} range_scan;

/* parse_head() plus a walk over every row (or quarantined input). When
 * `refs` is given, the rows are appended to ev->refs; when `rs` is, the
 * rows of its range are counted. */
static int parse_list_range(uih_events *ev, const uint8_t *buf, size_t len, list *L, int refs, range_scan *rs,
                            uih_error *err) {
  UIH_FORWARD(parse_head(buf, len, L, err));
  uih_cursor c = body(L);
  if (L->flags & UIH_EVENTS_FLAG_QUARANTINED) {
    uint16_t r = uih_cursor_u16(&c);
    if (c.bad) return uih_corruption(err, "event list: offset 10: quarantine reason missing");
    if (r > UIH_EVENTS_REASON_MAX || !uih_cursor_take(&c, r))
      return uih_corruption(err, "event list: offset 10: reason of %u bytes does not fit", r);
    for (uint32_t i = 0; i < L->n; i++) {
      size_t at = uih_cursor_offset(&c, buf);
      uint32_t k = uih_cursor_u32(&c);
      if (!uih_cursor_take(&c, k))
        return uih_corruption(err, "event list: offset %zu: quarantined input %u runs past the end", at, i);
    }
  } else {
    if (refs) UIH_FORWARD(reserve_refs(ev, ev->nrefs + L->n, err));
    row_ref prev = {NULL, 0};
    L->last = NULL;
    for (uint32_t i = 0; i < L->n; i++) {
      const char *why = NULL;
      const uint8_t *row = c.p;
      uint32_t n = row_next(L, &c, &why);
      if (n == 0)
        return uih_corruption(err, "event list: offset %zu: event %u of %u: %s", (size_t)(row - buf), i, L->n, why);
      row_ref cur = {row, n};
      if (rs) {
        const int64_t ts = row_ts(row);
        if (ts >= rs->min_ts && ts <= rs->max_ts && rs->count++ == 0) rs->first = row;
      }
      if (prev.p && row_cmp(&prev, &cur) >= 0)
        return uih_corruption(err,
                              "event list: offset %zu: event %u is not after event %u "
                              "(expected canonical order without duplicates)",
                              (size_t)(row - buf), i, i - 1);
      if (refs) ev->refs[ev->nrefs++] = cur;
      prev = cur;
      L->last = row;
    }
  }
  if (uih_cursor_left(&c) != 0)
    return uih_corruption(err, "event list: offset %zu: %zu bytes after the last %s", uih_cursor_offset(&c, buf),
                          uih_cursor_left(&c), (L->flags & UIH_EVENTS_FLAG_QUARANTINED) ? "input" : "event");
  return UIH_OK;
}

static int parse_list(uih_events *ev, const uint8_t *buf, size_t len, list *L, int refs, uih_error *err) {
  return parse_list_range(ev, buf, len, L, refs, NULL, err);
}

/* A validated quarantined list's body past its reason: the framed inputs. */
static uih_cursor quarantined_inputs(const list *L) {
  uih_cursor c = body(L);
  uih_cursor_skip(&c, uih_cursor_u16(&c));
  return c;
}

static const char *quarantine_reason(const list *L, char *buf, size_t cap) {
  uih_cursor c = body(L);
  uint16_t r = uih_cursor_u16(&c);
  const uint8_t *text = uih_cursor_take(&c, r);
  size_t n = text ? (r < cap - 1 ? r : cap - 1) : 0;
  if (n) memcpy(buf, text, n);
  buf[n] = '\0';
  return buf;
}

int uih_events_read_info(const uint8_t *buf, size_t len, uih_events_info *info, uih_error *err) {
  UIH_RETURN_IF(info == NULL || (buf == NULL && len), err, UIH_ERR_INVALID_ARGUMENT,
                "events_read_info: NULL argument");
  list L;
  UIH_FORWARD(parse_list(NULL, buf, len, &L, 0, err));
  memset(info, 0, sizeof *info);
  info->group = L.group;
  info->quarantined = (L.flags & UIH_EVENTS_FLAG_QUARANTINED) != 0;
  info->count = L.n;
  if (info->quarantined) return UIH_OK;
  info->ncolumns = L.c;
  if (L.n) {
    info->min_ts = row_ts(L.body);
    info->max_ts = row_ts(L.last);
  }
  return UIH_OK;
}

int uih_events_quarantined(const uint8_t *buf, size_t len, uint32_t i, uih_slice *input,
                           char *reason, size_t cap, uih_error *err) {
  UIH_RETURN_IF(buf == NULL && len, err, UIH_ERR_INVALID_ARGUMENT,
                "events_quarantined: NULL argument");
  list L;
  UIH_FORWARD(parse_list(NULL, buf, len, &L, 0, err));
  UIH_RETURN_IF(!(L.flags & UIH_EVENTS_FLAG_QUARANTINED), err, UIH_ERR_INVALID_ARGUMENT,
                "events_quarantined: the list is not quarantined");
  if (reason && cap) quarantine_reason(&L, reason, cap);
  if (input) {
    UIH_RETURN_IF(i >= L.n, err, UIH_ERR_OUT_OF_RANGE,
                  "events_quarantined: input %u of a list keeping %u", i, L.n);
    uih_cursor c = quarantined_inputs(&L);
    for (uint32_t k = 0;; k++) {
      uint32_t n = uih_cursor_u32(&c);
      const uint8_t *bytes = uih_cursor_take(&c, n);
      if (k == i) {
        *input = (uih_slice){bytes, n};
        break;
      }
    }
  }
  return UIH_OK;
}

/* ---- producing lists ------------------------------------------------------ */

/* Sorts and deduplicates ev->refs unless already canonical, applies the
 * limits, and writes the list with ev->cols to ev->out. */
static int finish(uih_events *ev, uint16_t group, const uih_events_limits *lim,
                  const uint8_t **out, size_t *out_len, uih_error *err) {
  row_ref *r = ev->refs;
  size_t n = ev->nrefs, i = 1;
  while (i < n && row_cmp(&r[i - 1], &r[i]) < 0) i++;
  if (i < n) {
    qsort(r, n, sizeof *r, cmp_refs);
    size_t k = 1;
    for (i = 1; i < n; i++)
      if (row_cmp(&r[k - 1], &r[i]) != 0) r[k++] = r[i];
    n = k;
  }
  size_t first = 0;
  if (lim && n) {
    int64_t newest = row_ts(r[n - 1].p);
    if (lim->max_age > 0 && newest >= INT64_MIN + lim->max_age) {
      int64_t cut = newest - lim->max_age;
      while (first < n && row_ts(r[first].p) < cut) first++;
    }
    if (lim->max_events && n - first > lim->max_events) first = n - lim->max_events;
  }
  UIH_RETURN_IF(n - first > UIH_EVENTS_MAX, err, UIH_ERR_OUT_OF_RANGE,
                "event list: %zu events, more than the %u one list holds (set max_events)",
                n - first, UIH_EVENTS_MAX);

  uih_wbuf *o = &ev->out;
  uih_wbuf_reset(o);
  uih_wbuf_u8(o, UIH_EVENTS_VERSION);
  uih_wbuf_u8(o, 0);
  uih_wbuf_u16(o, group);
  uih_wbuf_u32(o, (uint32_t)(n - first));
  uih_wbuf_u16(o, (uint16_t)ev->ncols);
  for (uint32_t j = 0; j < ev->ncols; j++) {
    uih_wbuf_u16(o, ev->cols[j].id);
    uih_wbuf_u8(o, ev->cols[j].type);
  }
  for (i = first; i < n; i++) uih_wbuf_put(o, r[i].p, r[i].len);
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "event list: out of memory");
  UIH_RETURN_IF(o->len + UIH_EVENTS_CHECKSUM_SIZE > UIH_EVENTS_BYTES_MAX, err,
                UIH_ERR_OUT_OF_RANGE, "event list: %zu bytes, more than the %u-byte maximum",
                o->len + UIH_EVENTS_CHECKSUM_SIZE, (unsigned)UIH_EVENTS_BYTES_MAX);
  uih_wbuf_u32(o, uih_checksum32(o->data, o->len));
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "event list: out of memory");
  *out = o->data;
  *out_len = o->len;
  return UIH_OK;
}

int uih_events_encode(uih_events *ev, const uih_batch *batch, const uint8_t **out,
                      size_t *out_len, uih_error *err) {
  UIH_RETURN_IF(ev == NULL || batch == NULL || out == NULL || out_len == NULL, err,
                UIH_ERR_INVALID_ARGUMENT, "events_encode: NULL argument");
  const uih_batch *b = batch;
  int tsi = -1;
  for (uint32_t j = 0; j < b->ncolumns; j++)
    if (b->columns[j].trait->type == UIH_TYPE_TIMESTAMP) tsi = (int)j;
  UIH_RETURN_IF(tsi < 0, err, UIH_ERR_INVALID_ARGUMENT,
                "events_encode: the batch of group '%s' has no timestamp column", b->group->name);
  UIH_RETURN_IF(b->ncolumns > UIH_EVENTS_COLUMNS_MAX, err, UIH_ERR_OUT_OF_RANGE,
                "events_encode: %u columns, more than %u", b->ncolumns, UIH_EVENTS_COLUMNS_MAX);
  const uih_column *ts = &b->columns[tsi];
  /* Category codes stay inside their vocabulary everywhere they are stored
   * (the stripe encoder and the CSV reader refuse others too). */
  for (uint32_t j = 0; j < b->ncolumns; j++) {
    const uih_trait *t = b->columns[j].trait;
    if (t->type != UIH_TYPE_CATEGORY || t->ncategories == 0) continue;
    for (uint32_t r = 0; r < b->count; r++)
      UIH_RETURN_IF(uih_column_has(&b->columns[j], r) && uih_column_get_bits(&b->columns[j], r) >= t->ncategories,
                    err, UIH_ERR_OUT_OF_RANGE,
                    "events_encode: event %u: trait '%s' has category code %llu, its vocabulary has %u (0..%u)", r,
                    t->name, (unsigned long long)uih_column_get_bits(&b->columns[j], r), t->ncategories,
                    t->ncategories - 1);
  }
  ev->ncols = 0;
  ev->cols[ev->ncols++] = (column){ts->trait->id, (uint8_t)ts->trait->type};
  for (uint32_t j = 0; j < b->ncolumns; j++)
    if ((int)j != tsi) ev->cols[ev->ncols++] = (column){b->columns[j].trait->id, (uint8_t)b->columns[j].trait->type};

  uint32_t pb = presence_bytes(ev->ncols);
  size_t max_row = UIH_EVENTS_TS_SIZE + pb;
  for (uint32_t j = 1; j < ev->ncols; j++) max_row += uih_type_width((uih_type)ev->cols[j].type);
  uih_wbuf_reset(&ev->rows);
  UIH_RETURN_IF(!uih_wbuf_reserve(&ev->rows, max_row * b->count), err, UIH_ERR_NO_MEMORY,
                "events_encode: out of memory");
  ev->nrefs = 0;
  UIH_FORWARD(reserve_refs(ev, b->count, err));
  uint8_t *base = ev->rows.data;
  size_t at = 0;
  for (uint32_t r = 0; r < b->count; r++) {
    UIH_RETURN_IF(!uih_column_has(ts, r), err, UIH_ERR_INVALID_ARGUMENT,
                  "events_encode: event %u of group '%s' has no timestamp ('%s')", r,
                  b->group->name, ts->trait->name);
    uint8_t *row = base + at;
    uih_store_be64(row, uih_column_get_bits(ts, r) ^ UIH_SIGN64);
    uint8_t *pres = row + UIH_EVENTS_TS_SIZE;
    memset(pres, 0, pb);
    size_t n = UIH_EVENTS_TS_SIZE + pb;
    uint32_t k = 1;
    for (uint32_t j = 0; j < b->ncolumns; j++) {
      if ((int)j == tsi) continue;
      const uih_column *c = &b->columns[j];
      if (uih_column_has(c, r)) {
        uih_bit_set(pres, k - 1);
        uint64_t v = uih_column_get_bits(c, r);
        size_t w = uih_type_width(c->trait->type);
        memcpy(row + n, &v, w); /* little-endian: the low bytes */
        n += w;
      }
      k++;
    }
    ev->refs[ev->nrefs++] = (row_ref){row, (uint32_t)n};
    at += n;
  }
  ev->rows.len = at;
  return finish(ev, b->group->id, NULL, out, out_len, err);
}

/* ---- merging ------------------------------------------------------------ */

typedef struct input_namer {
  int has_existing; /* -1: plain inputs; 0: operands; 1: input 0 is the existing value */
  char buf[48];
} input_namer;

/* "input 3", or for the merge operator "existing value" / "operand 2". */
static const char *input_name(input_namer *nm, size_t i) {
  if (nm->has_existing > 0 && i == 0) return "existing value";
  snprintf(nm->buf, sizeof nm->buf, "%s %zu", nm->has_existing >= 0 ? "operand" : "input",
           i - (nm->has_existing > 0));
  return nm->buf;
}

/* Folds the columns of `L` into ev->cols (sorted by id after column 0). */
static int union_columns(uih_events *ev, const list *L, uih_error *err) {
  uint16_t ts_id = col_at(L->cols, L->c, 0).id;
  if (ev->ncols == 0) {
    ev->cols[0] = (column){ts_id, UIH_TYPE_TIMESTAMP};
    ev->ncols = 1;
  } else if (ev->cols[0].id != ts_id) {
    return uih_corruption(err, "timestamp trait id %u, the other inputs have %u", ts_id,
                          ev->cols[0].id);
  }
  uint32_t a = 1, b = 1, k = 0;
  while (a < ev->ncols || b < L->c) {
    column cb = {0, 0};
    if (b < L->c) cb = col_at(L->cols, L->c, b);
    if (b >= L->c || (a < ev->ncols && ev->cols[a].id < cb.id)) {
      ev->tmp[k++] = ev->cols[a++];
    } else if (a >= ev->ncols || cb.id < ev->cols[a].id) {
      ev->tmp[k++] = cb;
      b++;
    } else {
      if (ev->cols[a].type != cb.type)
        return uih_corruption(err, "trait %u has type %u, another input has type %u", cb.id,
                              cb.type, ev->cols[a].type);
      ev->tmp[k++] = ev->cols[a++];
      b++;
    }
    if (k + 1 > UIH_EVENTS_COLUMNS_MAX)
      return uih_corruption(err, "the inputs have more than %u columns together",
                            UIH_EVENTS_COLUMNS_MAX);
  }
  memcpy(ev->cols + 1, ev->tmp, k * sizeof(column));
  ev->ncols = k + 1;
  return UIH_OK;
}

/* Re-encodes the rows refs[from, to) of input `in` for the columns in ev->cols. */
static void reencode_rows(uih_events *ev, const input_cols *in, size_t from, size_t to) {
  uint32_t map[UIH_EVENTS_COLUMNS_MAX]; /* input column -> output column */
  uint8_t width[UIH_EVENTS_COLUMNS_MAX];
  for (uint32_t j = 1, k = 1; j < in->c; j++) {
    column cj = col_at(in->cols, in->c, j);
    while (ev->cols[k].id != cj.id) k++;
    map[j] = k;
    width[j] = (uint8_t)uih_type_width((uih_type)cj.type);
  }
  uint32_t ipb = presence_bytes(in->c), opb = presence_bytes(ev->ncols);
  for (size_t i = from; i < to; i++) {
    uih_cursor src = uih_cursor_make(ev->refs[i].p, ev->refs[i].len); /* a validated row */
    uint8_t *dst = ev->rows.data + ev->rows.len;
    memcpy(dst, uih_cursor_take(&src, UIH_EVENTS_TS_SIZE), UIH_EVENTS_TS_SIZE);
    const uint8_t *pres = uih_cursor_take(&src, ipb);
    memset(dst + UIH_EVENTS_TS_SIZE, 0, opb);
    size_t d = UIH_EVENTS_TS_SIZE + opb;
    for (uint32_t j = 1; j < in->c; j++) {
      if (!uih_bit_get(pres, j - 1)) continue;
      uih_bit_set(dst + UIH_EVENTS_TS_SIZE, map[j] - 1);
      memcpy(dst + d, uih_cursor_take(&src, width[j]), width[j]);
      d += width[j];
    }
    ev->refs[i] = (row_ref){dst, (uint32_t)d};
    ev->rows.len += d;
  }
}

/* Whether `lim` (NULL: none) keeps every event of the valid list L, as
 * finish() applies it. */
static int within_limits(const list *L, const uih_events_limits *lim) {
  if (lim == NULL || L->n == 0) return 1;
  if (lim->max_events && L->n > lim->max_events) return 0;
  const int64_t newest = row_ts(L->last);
  if (lim->max_age > 0 && newest >= INT64_MIN + lim->max_age && row_ts(L->body) < newest - lim->max_age) return 0;
  return 1;
}

static int merge_impl(uih_events *ev, uint16_t group, const uih_slice *in, size_t n,
                      input_namer *nm, const uih_events_limits *lim, const uint8_t **out,
                      size_t *out_len, uih_error *err) {
  UIH_RETURN_IF(ev == NULL || in == NULL || n == 0 || out == NULL || out_len == NULL, err,
                UIH_ERR_INVALID_ARGUMENT, "events_merge: no inputs");
  /* One valid list the limits leave whole (a read of a key with a single
   * operand, the common case) merges to itself, byte for byte: a canonical
   * list is its own union. Validated, and given back as it is. */
  if (n == 1) {
    list L;
    if (parse_list(NULL, in[0].data, in[0].len, &L, 0, NULL) == UIH_OK && !(L.flags & UIH_EVENTS_FLAG_QUARANTINED) &&
        L.group == group && within_limits(&L, lim)) {
      *out = in[0].data;
      *out_len = in[0].len;
      return UIH_OK;
    }
  }
  ev->ncols = 0;
  ev->nrefs = 0;
  UIH_FORWARD(grow((void **)&ev->inputs, &ev->inputs_cap, n + 1, sizeof *ev->inputs, err));
  /* Pass 1: validate every input, collect its rows and the column union. */
  for (size_t i = 0; i < n; i++) {
    list L;
    size_t start = ev->nrefs;
    int rc = parse_list(ev, in[i].data, in[i].len, &L, 1, err);
    if (rc == UIH_OK && (L.flags & UIH_EVENTS_FLAG_QUARANTINED)) {
      char why[UIH_EVENTS_REASON_MAX + 1];
      rc = uih_corruption(err, "is quarantined (%s)", quarantine_reason(&L, why, sizeof why));
    }
    if (rc == UIH_OK && L.group != group)
      rc = uih_corruption(err, "offset 2: feature group %u, expected %u", L.group, group);
    if (rc == UIH_OK) rc = union_columns(ev, &L, err);
    if (rc != UIH_OK) {
      if (err && err->code == rc && rc != UIH_ERR_NO_MEMORY)
        uih_error_prefix(err, "%s: ", input_name(nm, i));
      return rc;
    }
    ev->inputs[i] = (input_cols){L.cols, L.c, start};
  }
  ev->inputs[n].start = ev->nrefs;
  /* Pass 2: re-encode the rows of inputs whose columns differ (the union
   * contains every input's columns, so the same count means the same). */
  size_t need = 0;
  for (size_t i = 0; i < n; i++) {
    if (ev->inputs[i].c == ev->ncols) continue;
    size_t grow_by = presence_bytes(ev->ncols) - presence_bytes(ev->inputs[i].c);
    for (size_t r = ev->inputs[i].start; r < ev->inputs[i + 1].start; r++)
      need += ev->refs[r].len + grow_by;
  }
  uih_wbuf_reset(&ev->rows);
  UIH_RETURN_IF(need && !uih_wbuf_reserve(&ev->rows, need), err, UIH_ERR_NO_MEMORY,
                "events_merge: out of memory");
  for (size_t i = 0; i < n; i++)
    if (ev->inputs[i].c != ev->ncols)
      reencode_rows(ev, &ev->inputs[i], ev->inputs[i].start, ev->inputs[i + 1].start);
  return finish(ev, group, lim, out, out_len, err);
}

int uih_events_merge(uih_events *ev, uint16_t group, const uih_slice *inputs, size_t n,
                     const uih_events_limits *limits, const uint8_t **out, size_t *out_len,
                     uih_error *err) {
  input_namer nm = {-1, {0}};
  return merge_impl(ev, group, inputs, n, &nm, limits, out, out_len, err);
}

/* ---- quarantine ------------------------------------------------------------ */

int uih_events_quarantine(uih_events *ev, uint16_t group, const char *reason,
                          const uih_slice *inputs, size_t n, const uint8_t **out,
                          size_t *out_len, uih_error *err) {
  UIH_RETURN_IF(ev == NULL || (inputs == NULL && n) || out == NULL || out_len == NULL, err,
                UIH_ERR_INVALID_ARGUMENT, "events_quarantine: NULL argument");
  size_t r = reason ? strlen(reason) : 0;
  if (r > UIH_EVENTS_REASON_MAX) r = UIH_EVENTS_REASON_MAX;
  uih_wbuf *o = &ev->out;
  uih_wbuf_reset(o);
  uih_wbuf_u8(o, UIH_EVENTS_VERSION);
  uih_wbuf_u8(o, UIH_EVENTS_FLAG_QUARANTINED);
  uih_wbuf_u16(o, group);
  uih_wbuf_u32(o, 0); /* count, patched below */
  uih_wbuf_u16(o, 0);
  uih_wbuf_u16(o, (uint16_t)r);
  uih_wbuf_put(o, reason, r);
  uint32_t count = 0;
  for (size_t i = 0; i < n; i++) {
    list L;
    if (parse_list(NULL, inputs[i].data, inputs[i].len, &L, 0, NULL) == UIH_OK &&
        (L.flags & UIH_EVENTS_FLAG_QUARANTINED)) {
      uih_cursor framed = quarantined_inputs(&L);
      uih_wbuf_put(o, framed.p, uih_cursor_left(&framed)); /* its inputs, already framed */
      count += L.n;
    } else {
      UIH_RETURN_IF(inputs[i].len > UIH_EVENTS_BYTES_MAX, err, UIH_ERR_OUT_OF_RANGE,
                    "events_quarantine: input %zu has %zu bytes", i, inputs[i].len);
      uih_wbuf_u32(o, (uint32_t)inputs[i].len);
      uih_wbuf_put(o, inputs[i].data, inputs[i].len);
      count++;
    }
  }
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "events_quarantine: out of memory");
  UIH_RETURN_IF(o->len + UIH_EVENTS_CHECKSUM_SIZE > UIH_EVENTS_BYTES_MAX, err,
                UIH_ERR_OUT_OF_RANGE, "events_quarantine: %zu bytes, more than the maximum",
                o->len);
  memcpy(o->data + 4, &count, 4);
  uih_wbuf_u32(o, uih_checksum32(o->data, o->len));
  UIH_RETURN_IF(o->oom, err, UIH_ERR_NO_MEMORY, "events_quarantine: out of memory");
  *out = o->data;
  *out_len = o->len;
  return UIH_OK;
}

int uih_events_merge_value(uih_events *ev, const uint8_t *key, size_t key_len,
                           const uih_slice *existing, const uih_slice *operands, size_t n,
                           const uih_events_limits *limits, const uint8_t **out, size_t *out_len,
                           int *quarantined, uih_error *why) {
  UIH_RETURN_IF(ev == NULL || key == NULL || out == NULL || out_len == NULL ||
                    quarantined == NULL || (operands == NULL && n),
                why, UIH_ERR_INVALID_ARGUMENT, "events_merge_value: NULL argument");
  *quarantined = 0;
  uint64_t user;
  uint16_t group;
  if (key_len == UIH_KEY_SIZE) { /* a chunk's key */
    uih_key k;
    uih_key_decode(key, key_len, &k, NULL); /* every 18-byte string is a key */
    user = k.user_id;
    group = k.group;
  } else {
    int krc = uih_key_group_prefix_decode(key, key_len, &user, &group, why);
    if (krc != UIH_OK) {
      uih_error_prefix(why, "mutable-tier keys are (user_id, group, chunk) keys or (user_id, group) prefixes: ");
      return krc;
    }
  }
  size_t total = n + (existing != NULL);
  UIH_FORWARD(grow((void **)&ev->slices, &ev->slices_cap, total, sizeof *ev->slices, why));
  uih_slice *in = ev->slices;
  if (existing) in[0] = *existing;
  if (n) memcpy(in + (existing != NULL), operands, n * sizeof *in);
  input_namer nm = {existing != NULL, {0}};
  uih_error e;
  int rc = merge_impl(ev, group, in, total, &nm, limits, out, out_len, &e);
  if (rc == UIH_ERR_CORRUPTION || rc == UIH_ERR_NOT_SUPPORTED || rc == UIH_ERR_OUT_OF_RANGE) {
    uih_error_prefix(&e, "user %llu group %u: ", (unsigned long long)user, group);
    if (why) *why = e;
    *quarantined = 1;
    rc = uih_events_quarantine(ev, group, uih_error_message(&e), in, total, out, out_len, why);
  } else if (rc != UIH_OK && why) {
    *why = e;
  }
  return rc;
}

/* ---- reading ---------------------------------------------------------------- */

int uih_events_decode(const uint8_t *buf, size_t len, int64_t min_ts, int64_t max_ts,
                      uih_batch *out, uih_error *err) {
  return uih_events_decode_newest(buf, len, min_ts, max_ts, UINT32_MAX, out, err);
}

int uih_events_decode_newest(const uint8_t *buf, size_t len, int64_t min_ts, int64_t max_ts, uint32_t newest,
                             uih_batch *out, uih_error *err) {
  UIH_RETURN_IF(out == NULL || (buf == NULL && len), err, UIH_ERR_INVALID_ARGUMENT,
                "events_decode: NULL argument");
  list L;
  range_scan rs = {min_ts, max_ts, 0, NULL};
  UIH_FORWARD(parse_list_range(NULL, buf, len, &L, 0, &rs, err));
  if (L.flags & UIH_EVENTS_FLAG_QUARANTINED) {
    char why[UIH_EVENTS_REASON_MAX + 1];
    return uih_corruption(err, "event list is quarantined: %s",
                          quarantine_reason(&L, why, sizeof why));
  }
  UIH_RETURN_IF(L.group != out->group->id, err, UIH_ERR_INVALID_ARGUMENT,
                "events_decode: the list is of feature group %u, the batch of '%s' (%u)", L.group,
                out->group->name, out->group->id);
  /* Stored column -> the batch's column (NULL: not asked for) and width. */
  uih_column *dst[UIH_EVENTS_COLUMNS_MAX];
  for (uint32_t j = 0; j < L.c; j++) {
    column cj = col_at(L.cols, L.c, j);
    int k = uih_batch_column_index(out, cj.id);
    dst[j] = k >= 0 ? &out->columns[k] : NULL;
    if (k >= 0 && (uint8_t)out->columns[k].trait->type != cj.type)
      return uih_error_set(err, UIH_ERR_TYPE_MISMATCH, "events_decode: trait %u ('%s') is stored as %s, asked as %s",
                           cj.id, out->columns[k].trait->name,
                           uih_type_name((uih_type)cj.type) ? uih_type_name((uih_type)cj.type) : "?",
                           uih_type_name(out->columns[k].trait->type));
  }
  /* The walk that validated the rows found the range; of it the newest
   * `newest`: check they fit, step over the older ones, copy. */
  uint32_t count = rs.count;
  const uint32_t skip = count > newest ? count - newest : 0;
  count -= skip;
  UIH_RETURN_IF(count > out->capacity, err, UIH_ERR_OUT_OF_RANGE,
                "events_decode: %u events in [%lld, %lld], the batch holds %u", count,
                (long long)min_ts, (long long)max_ts, out->capacity);
  uih_batch_clear(out);
  if (count == 0) return UIH_OK;
  uih_cursor rows = uih_cursor_make(rs.first, (size_t)(L.end - rs.first));
  const char *why;
  for (uint32_t i = 0; i < skip; i++) row_next(&L, &rows, &why);
  const uint32_t pb = presence_bytes(L.c);
  /* Values go straight to the columns: a stored value has its type's width
   * (checked above), little-endian as the batch holds it; flags as 0 or 1.
   * The rows were validated: plain pointer steps, no bounds checks. */
  const uint8_t *p = rows.p;
  for (uint32_t r = 0; r < count; r++) {
    const uint64_t ts = uih_load_be64(p) ^ UIH_SIGN64;
    p += UIH_EVENTS_TS_SIZE;
    if (dst[0]) { /* a timestamp column (checked above): 8 bytes */
      ((uint64_t *)dst[0]->values)[r] = ts;
      uih_column_mark(dst[0], r);
    }
    const uint8_t *pres = p;
    p += pb;
    for (uint32_t j = 1; j < L.c; j++) {
      if (!uih_bit_get(pres, j - 1)) continue;
      const uint8_t *at = p;
      p += L.width[j];
      uih_column *c = dst[j];
      if (c == NULL) continue;
      switch (L.width[j]) {
        case 8: memcpy((uint8_t *)c->values + (size_t)r * 8, at, 8); break;
        case 4: memcpy((uint8_t *)c->values + (size_t)r * 4, at, 4); break;
        default: ((uint8_t *)c->values)[r] = at[0]; break; /* 0 or 1: validated */
      }
      uih_column_mark(c, r);
    }
  }
  out->count = count;
  return UIH_OK;
}

uih_retain_action uih_events_retain(uih_events *ev, const uint8_t *buf, size_t len,
                                    int64_t watermark, const uint8_t **out, size_t *out_len) {
  list L;
  if (ev == NULL || buf == NULL || parse_list(NULL, buf, len, &L, 0, NULL) != UIH_OK ||
      (L.flags & UIH_EVENTS_FLAG_QUARANTINED))
    return UIH_RETAIN_KEEP; /* never drop what cannot be read */
  if (L.n == 0) return UIH_RETAIN_REMOVE;
  if (row_ts(L.body) >= watermark) return UIH_RETAIN_KEEP;
  uih_cursor rows = body(&L);
  uint32_t i = 0;
  const char *why;
  while (i < L.n && row_ts(rows.p) < watermark) {
    row_next(&L, &rows, &why);
    i++;
  }
  if (i == L.n) return UIH_RETAIN_REMOVE;
  uih_wbuf *o = &ev->out;
  uih_wbuf_reset(o);
  uih_wbuf_put(o, buf, (size_t)(L.body - buf));
  uih_wbuf_put(o, rows.p, uih_cursor_left(&rows));
  if (o->oom) return UIH_RETAIN_KEEP;
  uint32_t count = L.n - i;
  memcpy(o->data + 4, &count, 4);
  uih_wbuf_u32(o, uih_checksum32(o->data, o->len));
  if (o->oom) return UIH_RETAIN_KEEP;
  *out = o->data;
  *out_len = o->len;
  return UIH_RETAIN_CHANGE;
}
