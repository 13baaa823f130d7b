/* The loader's merge of one shard (merge.h). */
#include "merge.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dicts.h"
#include "error_internal.h"
#include "rows.h"
#include "uih/key.h"
#include "uih/stripe.h"

/* A growable byte buffer and a growable array, reused history to history. */
typedef struct bytes {
  uint8_t *p;
  size_t n, cap;
} bytes;

static int bytes_put(bytes *b, const void *src, size_t n, size_t *at, uih_error *err) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 1 << 16;
    while (c < b->n + n) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) return uih_error_set(err, UIH_ERR_NO_MEMORY, "merge: out of memory (%zu bytes for one history)", c);
    b->p = p;
    b->cap = c;
  }
  if (at) *at = b->n;
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
  return UIH_OK;
}

#define GROW(arr, n, cap, err)                                                           \
  do {                                                                                   \
    if ((n) == (cap)) {                                                                  \
      size_t c_ = (cap) ? (cap) * 2 : 64;                                                \
      void *p_ = realloc((arr), c_ * sizeof *(arr));                                     \
      if (!p_) return uih_error_set((err), UIH_ERR_NO_MEMORY, "merge: out of memory");   \
      (arr) = p_;                                                                        \
      (cap) = c_;                                                                        \
    }                                                                                    \
  } while (0)

typedef struct stored { /* a stripe of the current generation */
  int64_t start;
  size_t off, len; /* in `old` */
  uih_stripe_info info;
  int stale; /* it holds a column of a trait the schema dropped */
  size_t first_new, end_new; /* the new rows it receives */
} stored;

typedef struct row { /* a row in `rowbuf` (or `fresh`), or an event of the decoded stripe */
  size_t off;            /* its bytes' offset; an event of `decoded`: its row there */
  uint32_t len, arrival; /* len 0: an event of `decoded` (rows are LD_ROW_HEAD bytes at least) */
} row;

typedef struct state {
  ld_merge *m;
  uint32_t generation, version;
  bytes old, fresh, rowbuf;
  stored *stripes;
  size_t nstripes, scap;
  size_t passed; /* layered: the stored stripes whose keys the written ones have passed (kept or deleted) */
  int skip;      /* layered, histories without new rows not read (merge.h, `base`) */
  row *news; /* rows in `fresh` */
  size_t nnews, ncap;
  row *rows; /* one rebuild's rows in `rowbuf` */
  size_t nrows, rcap;
  row *tie; /* the stored rows of one timestamp, in byte order (rebuild's merge) */
  size_t ntie, tcap;
  uih_stripe_encoder *enc;
  uih_stripe_decoder *dec;
  uih_stripe_context *ctx; /* the new generation's value dictionaries (the base's among them, but in a rebuild) */
  uih_stripe_context *base_ctx; /* a rebuild's: the base generation's, which decode its stripes */
  uih_batch *batch; /* the group's active traits + arrival: a stripe being encoded */
  uih_batch *decoded; /* the same columns: the stored stripe a rebuild decoded */
  const int64_t *decoded_ts; /* its timestamps (looked up once a stripe, not once a row) */
  uih_batch **batches; /* per group of the schema (its place there), two each: batch and decoded, kept */
  uint32_t place;      /* the group's place in the schema */
  uint8_t *scratch; /* one encoded row */
  size_t scratch_cap;
  uint64_t user;
  const uih_group *group;
  /* deletions by value in this history: the trait (NULL: none), its place in rows */
  const uih_trait *del_trait;
  ld_row_layout layout;
  const uih_trait *layout_trait; /* the trait `layout` is for */
  uih_batch *probe; /* del_trait alone, to look into stored stripes */
  int group_dropped; /* the group has traits the schema dropped */
  uih_stripe_column_info *cols; /* a stored stripe's directory (directory()) */
} state;

/* Rows in (ts, values) order: the bytes after the history they share. */
static int row_cmp(const uint8_t *base, const row *a, const uint8_t *bbase, const row *b) {
  uint32_t la = a->len - LD_ROW_HISTORY, lb = b->len - LD_ROW_HISTORY;
  int c = memcmp(base + a->off + LD_ROW_HISTORY, bbase + b->off + LD_ROW_HISTORY, la < lb ? la : lb);
  return c ? c : (la > lb) - (la < lb);
}

static _Thread_local const uint8_t *sorting_rows;
static int cmp_rows(const void *x, const void *y) { return row_cmp(sorting_rows, x, sorting_rows, y); }

/* *b (s->batch or s->decoded) the group's, emptied, for `capacity`
 * events of its active traits and the arrival: each group's two batches
 * are kept (s->batches), so histories of groups in turn make none. */
static int ensure_batch(state *s, uih_batch **b, const uih_group *g, uint32_t capacity, uih_error *err) {
  uih_batch **slot = &s->batches[2 * s->place + (b == &s->decoded)];
  int rc = UIH_OK;
  if (*slot) {
    uih_batch_clear(*slot);
    if (capacity > (*slot)->capacity) rc = uih_batch_reserve(slot, capacity, err);
    *b = *slot;
    return rc;
  }
  uint16_t ids[UIH_TRAITS_MAX + 1];
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->ntraits; i++)
    if (uih_trait_active(&g->traits[i])) ids[n++] = g->traits[i].id;
  ids[n++] = UIH_TRAIT_ARRIVAL;
  size_t max = ld_row_max(g);
  if (max > s->scratch_cap) {
    uint8_t *p = realloc(s->scratch, max);
    if (!p) return uih_error_set(err, UIH_ERR_NO_MEMORY, "merge: out of memory");
    s->scratch = p;
    s->scratch_cap = max;
  }
  rc = uih_batch_create(g, capacity > g->stripe_events ? capacity : g->stripe_events, ids, n, slot, err);
  *b = *slot;
  return rc;
}

/* Layered: stored stripe i's key, which the new generation no longer holds. */
static int delete_stored(state *s, size_t i, uih_error *err) {
  uint8_t key[UIH_KEY_SIZE];
  uih_key k = {s->user, s->group->id, s->stripes[i].start};
  uih_key_encode(&k, key);
  return uih_store_writer_delete(s->m->writer, key, sizeof key, err);
}

/* Layered: the stored stripes of the history starting before `start`
 * that no stripe emitted took the place of, deleted; one starting at
 * `start` is replaced (or, copied, kept) by the stripe emitted there.
 * Stripes are emitted in key order, so deletions go in key order too. */
static int pass_stored(state *s, int64_t start, uih_error *err) {
  for (; s->passed < s->nstripes && s->stripes[s->passed].start < start; s->passed++) {
    int rc = delete_stored(s, s->passed, err);
    if (rc != UIH_OK) return rc;
  }
  if (s->passed < s->nstripes && s->stripes[s->passed].start == start) s->passed++;
  return UIH_OK;
}

/* Layered: the history's stored stripes no stripe emitted kept, deleted. */
static int pass_rest(state *s, uih_error *err) {
  for (; s->passed < s->nstripes; s->passed++) {
    int rc = delete_stored(s, s->passed, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

/* A stripe of the new generation; `copied`: the stored one at `start`,
 * byte for byte, which a layered writer leaves where it is. */
static int emit(state *s, int64_t start, const uint8_t *value, size_t len, uint32_t events, int copied,
                uih_error *err) {
  ld_merge *m = s->m;
  int rc = m->layered ? pass_stored(s, start, err) : UIH_OK;
  if (rc == UIH_OK && !(m->layered && copied)) {
    uint8_t key[UIH_KEY_SIZE];
    uih_key k = {s->user, s->group->id, start};
    uih_key_encode(&k, key);
    rc = uih_store_writer_add(m->writer, key, sizeof key, value, len, err);
  }
  if (rc != UIH_OK) return rc;
  m->record.events += events;
  m->record.stripes++;
  m->record.bytes += len;
  m->emitted += events; /* not record.events, which a layered load starts at the base's */
  if (m->tick && m->emitted - m->ticked >= ((uint64_t)1 << 16)) {
    m->tick(m->tick_arg, m->emitted - m->ticked);
    m->ticked = m->emitted;
  }
  return UIH_OK;
}

/* A row's timestamp, wherever it is. */
static int64_t row_ts(const state *s, const row *r) {
  return r->len ? ld_row_ts(s->rowbuf.p + r->off) : s->decoded_ts[r->off];
}

/* The columns a stripe's directory describes: the room s->cols has. */
#define COLUMNS_MAX (UIH_TRAITS_MAX + 1)

/* A stored stripe's header and directory, checked, its columns in s->cols
 * (the first COLUMNS_MAX of them). */
static int directory(state *s, const uint8_t *stripe, size_t len, uih_stripe_info *info, uih_error *err) {
  if (!s->cols && !(s->cols = malloc(COLUMNS_MAX * sizeof *s->cols)))
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "merge: out of memory");
  return uih_stripe_read_columns(stripe, len, info, s->cols, COLUMNS_MAX, err);
}

/* 1 when a stripe's size went from `was` to `now` past a power of four. */
static int passed_power_of_four(size_t was, size_t now) {
  return (uih_bits(was) + 1) / 2 != (uih_bits(now) + 1) / 2;
}

/* Encodes rows [begin, end) as one stripe; like the stored stripe whose
 * directory is like[0, nlike) when some of them are its, the stripe is the
 * history's last (`last`: it may gain events again) and its size has not
 * passed a power of four: a stripe gaining a few events a day keeps the
 * encodings it won, at a seventh of the cost of a new competition, each
 * column while it takes at most 9/8 of the bytes per event it took
 * (uih_stripe_encode_like); it competes whole each time its size
 * quadruples, and when it is not the history's last (grown past, or
 * gaining late events: its final form). (bench/README.md, "The
 * competition's own cost, and the rule again": the rules tried, their
 * cost and their bytes.) */
static int write_stripe(state *s, size_t begin, size_t end, int last, const uih_stripe_column_info *like,
                        uint32_t nlike, uih_error *err) {
  int rc = ensure_batch(s, &s->batch, s->group, (uint32_t)(end - begin), err);
  size_t added = 0;
  for (size_t i = begin; i < end && rc == UIH_OK;) {
    const row *r = &s->rows[i];
    if (r->len == 0) { /* stored events, a run of them copied column by column */
      size_t k = i + 1;
      while (k < end && s->rows[k].len == 0 && s->rows[k].off == s->rows[k - 1].off + 1) k++;
      rc = uih_batch_copy_rows(s->batch, s->decoded, (uint32_t)r->off, (uint32_t)(r->off + (k - i)), err);
      i = k;
      continue;
    }
    added += r->arrival == s->generation;
    rc = ld_row_append(s->rowbuf.p + r->off, r->len, r->arrival, s->batch, err);
    i++;
  }
  const size_t total = end - begin;
  if (added == total || !last || passed_power_of_four(total - added, total)) nlike = 0;
  const uint8_t *out;
  size_t len;
  if (rc == UIH_OK) rc = uih_stripe_encode_like(s->enc, s->batch, s->version, like, nlike, &out, &len, err);
  if (rc == UIH_OK) rc = emit(s, row_ts(s, &s->rows[begin]), out, len, (uint32_t)(end - begin), 0, err);
  if (rc == UIH_OK) s->m->stripes_written++;
  return rc;
}

/* Cuts s->rows into stripes by rule 3 and writes them, each like the
 * stored stripe of directory like[0, nlike) if it is mostly that one's;
 * `tail`: the rows end the history (the stored stripe they rebuild, if
 * any, is its last), so their last stripe may gain events again. */
#define TS(i) row_ts(s, &s->rows[(i)])
static int cut(state *s, int tail, const uih_stripe_column_info *like, uint32_t nlike, uih_error *err) {
  const size_t n = s->nrows, se = s->group->stripe_events;
  size_t start = 0;
  while (start < n) {
    size_t end = n - start <= se ? n : start + se;
    if (end < n) {
      while (end > start && TS(end) == TS(end - 1)) end--;
      if (end == start) { /* a burst: more than se events at one timestamp, one stripe of its own */
        end = start + se;
        while (end < n && TS(end) == TS(start)) end++;
        if (end - start > UIH_STRIPE_EVENTS_MAX)
          return uih_error_set(err, UIH_ERR_OUT_OF_RANGE,
                               "%zu events at timestamp %" PRId64 " in group '%s': a burst of one timestamp is "
                               "one stripe, and a stripe holds at most %u events",
                               end - start, TS(start), s->group->name, UIH_STRIPE_EVENTS_MAX);
      }
    }
    int rc = write_stripe(s, start, end, tail && end == n, like, nlike, err);
    if (rc != UIH_OK) return rc;
    start = end;
  }
  return UIH_OK;
}
#undef TS

/* 1 when `user`'s row or event with value `bits` of del_trait goes. */
static int deleted_value(const state *s, uint64_t bits) { return ld_deletes_event(s->m->deletes, s->user, bits); }

/* Appends stored row i to the merge's result. */
static int keep_stored(state *s, size_t i, uih_error *err) {
  GROW(s->rows, s->nrows, s->rcap, err);
  s->rows[s->nrows] = s->rows[i];
  s->nrows++;
  return UIH_OK;
}

/* Appends new row `b` (in `fresh`) to the merge's result, of this generation. */
static int add_new(state *s, const row *b, uih_error *err) {
  const row r = *b; /* b may point into news, not rows: safe across the growth below */
  size_t at;
  int rc = bytes_put(&s->rowbuf, s->fresh.p + r.off, r.len, &at, err);
  if (rc != UIH_OK) return rc;
  GROW(s->rows, s->nrows, s->rcap, err);
  s->rows[s->nrows++] = (row){at, r.len, s->generation};
  s->m->record.events_new++;
  return UIH_OK;
}

/* Stored rows [i, k) of one timestamp, as rows (bytes in rowbuf), in byte
 * order, into s->tie: to find new rows stored already. */
static int sort_tie(state *s, size_t i, size_t k, uih_error *err) {
  s->ntie = 0;
  for (size_t r = i; r < k; r++) {
    GROW(s->tie, s->ntie, s->tcap, err);
    row t = s->rows[r];
    if (t.len == 0) { /* an event of the decoded stripe, as the row it would be */
      const size_t len = ld_row_encode((uint16_t)s->m->shard, s->user, s->decoded, (uint32_t)t.off, s->scratch);
      int rc = bytes_put(&s->rowbuf, s->scratch, len, &t.off, err);
      if (rc != UIH_OK) return rc;
      t.len = (uint32_t)len;
    }
    s->tie[s->ntie++] = t;
  }
  sorting_rows = s->rowbuf.p;
  if (s->ntie > 1) qsort(s->tie, s->ntie, sizeof *s->tie, cmp_rows);
  return UIH_OK;
}

/* 1 when new row `b` is byte for byte one of s->tie. */
static int in_tie(const state *s, const row *b) {
  size_t lo = 0, hi = s->ntie;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = row_cmp(s->rowbuf.p, &s->tie[mid], s->fresh.p, b);
    if (c == 0) return 1;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

/* Rebuilds stripe `st` (NULL: a history without stripes) with its new
 * rows: decoded, trimmed to the horizon, cleared of deleted events,
 * merged, cut, encoded. `force`: encoded again even when nothing changed
 * (it holds traits the schema dropped). */
static int rebuild(state *s, const stored *st, size_t first_new, size_t end_new, int force, uih_error *err) {
  ld_merge *m = s->m;
  s->nrows = 0;
  s->rowbuf.n = 0;
  int rc = UIH_OK;
  uint64_t trimmed = 0, added = 0;
  if (st) {
    rc = ensure_batch(s, &s->decoded, s->group, st->info.count, err);
    if (rc == UIH_OK)
      rc = uih_stripe_decode(s->dec, s->old.p + st->off, st->len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM,
                             s->decoded, err);
    if (rc != UIH_OK) {
      uih_error_prefix(err, "stripe at ts %" PRId64 ": ", st->start);
      return rc;
    }
    const uih_batch *b = s->decoded;
    const int64_t *ts = uih_batch_timestamps(b); /* the shard's batches hold every trait and the arrival */
    s->decoded_ts = ts;
    const int arr = uih_batch_column_index(b, UIH_TRAIT_ARRIVAL);
    const int del = s->del_trait ? uih_batch_column_index(b, s->del_trait->id) : -1;
    for (uint32_t r = 0; r < b->count && rc == UIH_OK; r++) {
      if (ts[r] < m->horizon) {
        m->record.expired++;
        trimmed++;
        continue;
      }
      if (del >= 0 && uih_column_has(&b->columns[del], r) &&
          deleted_value(s, uih_column_get_bits(&b->columns[del], r))) {
        m->record.deleted++;
        trimmed++;
        continue;
      }
      GROW(s->rows, s->nrows, s->rcap, err); /* kept where it is: copied when its stripe is written */
      s->rows[s->nrows++] = (row){r, 0, (uint32_t)uih_column_get_bits(&b->columns[arr], r)};
    }
    if (rc != UIH_OK) return rc;
  }
  /* Merge the new rows in: `rows` [0, nold) are stored, and stay in their
   * stored order, equal timestamps too (rule 4); the result is appended
   * after them and moved down. */
  size_t nold = s->nrows, i = 0, j = first_new;
  while (rc == UIH_OK && (i < nold || j < end_new)) {
    const int64_t ta = i < nold ? row_ts(s, &s->rows[i]) : INT64_MAX;
    const int64_t tb = j < end_new ? ld_row_ts(s->fresh.p + s->news[j].off) : INT64_MAX;
    if (i < nold && (j == end_new || ta < tb)) {
      rc = keep_stored(s, i++, err);
    } else if (i == nold || tb < ta) {
      rc = add_new(s, &s->news[j++], err);
      added++;
    } else { /* one timestamp in both: its stored rows as they are, then its new ones not stored already */
      size_t k = i;
      while (k < nold && row_ts(s, &s->rows[k]) == ta) k++;
      rc = sort_tie(s, i, k, err);
      for (; rc == UIH_OK && i < k; i++) rc = keep_stored(s, i, err);
      for (; rc == UIH_OK && j < end_new && ld_row_ts(s->fresh.p + s->news[j].off) == ta; j++) {
        if (in_tie(s, &s->news[j])) { /* stored already: it keeps its arrival */
          m->record.duplicates++;
          continue;
        }
        rc = add_new(s, &s->news[j], err);
        added++;
      }
    }
  }
  if (rc != UIH_OK) return rc;
  if (st && added == 0 && trimmed == 0 && !force) { /* only duplicates came: the stripe as it was */
    rc = emit(s, st->start, s->old.p + st->off, st->len, st->info.count, 1, err);
    if (rc == UIH_OK) m->stripes_copied++;
    return rc;
  }
  if (s->nrows > nold) memmove(s->rows, s->rows + nold, (s->nrows - nold) * sizeof *s->rows); /* rows may be NULL */
  s->nrows -= nold;
  /* Written like the stored stripe, unless its columns are to be judged
   * afresh: traits the schema dropped, or dictionaries rebuilt. */
  uint32_t nlike = 0;
  if (st && !force && !m->rebuild_dicts) {
    uih_stripe_info info;
    rc = directory(s, s->old.p + st->off, st->len, &info, err);
    if (rc != UIH_OK) return rc;
    nlike = info.ncolumns < COLUMNS_MAX ? info.ncolumns : COLUMNS_MAX;
  }
  return cut(s, !st || st == &s->stripes[s->nstripes - 1], s->cols, nlike, err);
}

/* 1 when a stripe of `ncolumns` columns, the first `described` of them in
 * cols, holds a trait the schema dropped, or one it never had. */
static int stale_columns(const uih_group *g, const uih_stripe_column_info *cols, uint32_t described,
                         uint32_t ncolumns) {
  if (described < ncolumns) return 1; /* more columns than a group has traits */
  for (uint32_t i = 0; i < ncolumns; i++) {
    const uih_trait *t = uih_group_trait_by_id(g, cols[i].trait_id);
    if (!t || !uih_trait_active(t)) return 1;
  }
  return 0;
}

/* 1 in *hit when an event of stripe `st` is deleted by its value. Only
 * that trait's column is decoded. */
static int has_deleted(state *s, const stored *st, int *hit, uih_error *err) {
  *hit = 0;
  int rc = UIH_OK;
  if (!s->probe || s->probe->group != s->group || s->probe->columns[0].trait != s->del_trait) {
    uih_batch_free(s->probe);
    s->probe = NULL;
    uint16_t id = s->del_trait->id;
    rc = uih_batch_create(s->group, st->info.count, &id, 1, &s->probe, err);
  } else {
    uih_batch_clear(s->probe);
    if (st->info.count > s->probe->capacity) rc = uih_batch_reserve(&s->probe, st->info.count, err);
  }
  if (rc == UIH_OK)
    rc = uih_stripe_decode(s->dec, s->old.p + st->off, st->len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM,
                           s->probe, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "stripe at ts %" PRId64 ": ", st->start);
    return rc;
  }
  const uih_column *c = &s->probe->columns[0];
  for (uint32_t r = 0; r < s->probe->count && !*hit; r++)
    *hit = uih_column_has(c, r) && deleted_value(s, uih_column_get_bits(c, r));
  return UIH_OK;
}

/* A user the deletions erase: nothing of the history is kept. */
static void erase(state *s) {
  ld_merge *m = s->m;
  for (size_t i = 0; i < s->nstripes; i++) m->record.deleted += s->stripes[i].info.count;
  m->record.deleted += s->nnews;
}

/* One history: its stored stripes and its new rows. */
static int history(state *s, uih_error *err) {
  ld_merge *m = s->m;
  if (s->skip) { /* the record starts as the base's: this history's stored part leaves it, to be counted again */
    for (size_t i = 0; i < s->nstripes; i++) {
      m->record.events -= s->stripes[i].info.count;
      m->record.bytes -= s->stripes[i].len;
    }
    m->record.stripes -= s->nstripes;
    m->record.histories -= s->nstripes > 0;
  }
  if (ld_deletes_user(m->deletes, s->user)) {
    erase(s);
    return m->layered ? pass_rest(s, err) : UIH_OK;
  }
  const uih_trait *t = ld_deletes_trait(m->deletes, s->group, s->user);
  if (t && t != s->layout_trait) ld_row_layout_of(s->group, t, &s->layout); /* once per group */
  s->del_trait = t;
  if (t) s->layout_trait = t;
  /* New rows that are expired or deleted go first. */
  size_t kept = 0;
  for (size_t j = 0; j < s->nnews; j++) {
    const uint8_t *rec = s->fresh.p + s->news[j].off;
    uint64_t item;
    if (ld_row_ts(rec) < m->horizon) {
      m->record.expired++;
      continue;
    }
    if (s->del_trait && ld_row_value(rec, s->news[j].len, &s->layout, &item) && deleted_value(s, item)) {
      m->record.deleted++;
      continue;
    }
    s->news[kept++] = s->news[j];
  }
  s->nnews = kept;
  /* Rule 2: each new row joins the last stripe starting at or before it
   * (the first one when it is older than all). Rows and stripes are both
   * in time order. */
  size_t k = 0;
  for (size_t i = 0; i < s->nstripes; i++) s->stripes[i].first_new = s->stripes[i].end_new = 0;
  for (size_t j = 0; j < s->nnews && s->nstripes; j++) {
    int64_t ts = ld_row_ts(s->fresh.p + s->news[j].off);
    while (k + 1 < s->nstripes && s->stripes[k + 1].start <= ts) k++;
    if (s->stripes[k].end_new == 0) s->stripes[k].first_new = j;
    s->stripes[k].end_new = j + 1;
  }
  uint64_t before = m->record.stripes;
  if (s->nstripes == 0 && s->nnews) {
    int rc = rebuild(s, NULL, 0, s->nnews, 0, err);
    if (rc != UIH_OK) return rc;
  }
  for (size_t i = 0; i < s->nstripes; i++) {
    stored *st = &s->stripes[i];
    if (st->info.max_ts < m->horizon && st->end_new == 0) { /* wholly expired: not even decoded */
      m->record.expired += st->info.count;
      continue;
    }
    const int stale = st->stale;
    int hit = 0, rc = UIH_OK;
    if (s->del_trait && st->end_new == 0 && st->info.min_ts >= m->horizon && !stale &&
        !m->rebuild_dicts)
      rc = has_deleted(s, st, &hit, err); /* only a stripe that would be copied is probed */
    if (rc != UIH_OK) return rc;
    if (st->end_new == 0 && st->info.min_ts >= m->horizon && !stale && !hit && !m->rebuild_dicts) {
      /* untouched: copied */
      rc = emit(s, st->start, s->old.p + st->off, st->len, st->info.count, 1, err);
      if (rc == UIH_OK) m->stripes_copied++;
    } else {
      uint64_t written = m->stripes_written;
      rc = rebuild(s, st, st->first_new, st->end_new, stale || m->rebuild_dicts, err);
      if (rc == UIH_OK && stale && st->end_new == 0 && !hit && st->info.min_ts >= m->horizon)
        m->stripes_upgraded += m->stripes_written - written;
    }
    if (rc != UIH_OK) return rc;
  }
  if (m->record.stripes > before) m->record.histories++;
  return m->layered ? pass_rest(s, err) : UIH_OK;
}

static void state_free(state *s) {
  free(s->old.p);
  free(s->fresh.p);
  free(s->rowbuf.p);
  free(s->stripes);
  free(s->news);
  free(s->rows);
  free(s->tie);
  free(s->scratch);
  uih_stripe_encoder_free(s->enc);
  uih_stripe_decoder_free(s->dec);
  uih_stripe_context_free(s->ctx);
  uih_stripe_context_free(s->base_ctx);
  for (uint32_t i = 0; s->batches && i < 2 * uih_schema_group_count(s->m->schema); i++) uih_batch_free(s->batches[i]);
  free(s->batches);
  uih_batch_free(s->probe);
  free(s->cols);
}

static int has_dropped(const uih_group *g) {
  for (uint32_t i = 0; i < g->ntraits; i++)
    if (!uih_trait_active(&g->traits[i])) return 1;
  return 0;
}

/* The generation's stripes and the load's rows, each read one ahead. */
typedef struct inputs {
  uih_store_scan *scan;
  ld_stream *stream;
  const uint8_t *key, *val, *rec; /* the next stripe (NULL: none left) and row */
  size_t klen, vlen;
  uint32_t rlen;
} inputs;

/* The value dictionaries of the new generation: the scanned generation's
 * decode its stripes; they and those built for traits without one encode
 * the new ones (a rebuild: the new ones alone, from a count of every value
 * of the generation in a scan of its own, of the current generation as the
 * merge's: the writer is the shard's only one, nothing publishes in
 * between). */
static int build_dicts(state *s, uih_store_scan *scan, uih_error *err) {
  ld_merge *m = s->m;
  const uint8_t *base = NULL;
  size_t base_len = 0;
  uih_store_scan *whole = NULL;
  int rc = uih_store_scan_dicts(scan, &base, &base_len, err);
  if (rc == UIH_OK && m->rebuild_dicts) {
    rc = uih_stripe_context_parse(base, base_len, 0, &s->base_ctx, err);
    if (rc != UIH_OK) uih_error_prefix(err, "the base generation's ");
    else rc = uih_store_scan_open(m->store, m->shard, 0, &whole, err);
  }
  const ld_dicts_in from = {.schema = m->schema, .shard = m->shard, .base = base, .base_len = base_len,
                           .sorter = m->sorter, .horizon = m->horizon, .deletes = m->deletes,
                           .stored = whole, .stored_ctx = s->base_ctx, .tick = m->tick, .tick_arg = m->tick_arg};
  if (rc == UIH_OK) rc = ld_dicts_build(&from, &s->ctx, &m->dicts, err);
  uih_store_scan_close(whole);
  uih_stripe_encoder_set_context(s->enc, s->ctx);
  uih_stripe_decoder_set_context(s->dec, s->base_ctx ? s->base_ctx : s->ctx);
  return rc;
}

/* The next history: the smaller (user, group) of the next stripe's and the
 * next row's, as a key prefix in hist and decoded in *hk. */
static int next_history(state *s, const inputs *in, uint8_t hist[UIH_KEY_GROUP_PREFIX_SIZE], uih_key *hk,
                        uih_error *err) {
  if (in->key && in->klen != UIH_KEY_SIZE)
    return uih_corruption(err, "generation key of %zu bytes, expected %d", in->klen, UIH_KEY_SIZE);
  if (in->key && (!in->rec || memcmp(in->key, ld_row_history(in->rec), UIH_KEY_GROUP_PREFIX_SIZE) <= 0))
    memcpy(hist, in->key, UIH_KEY_GROUP_PREFIX_SIZE);
  else
    memcpy(hist, ld_row_history(in->rec), UIH_KEY_GROUP_PREFIX_SIZE);
  uint8_t full[UIH_KEY_SIZE] = {0};
  memcpy(full, hist, UIH_KEY_GROUP_PREFIX_SIZE);
  uih_key_decode(full, sizeof full, hk, NULL);
  const uih_group *g = uih_schema_group_by_id(s->m->schema, hk->group);
  if (g != s->group) { /* once per group, not per history */
    s->group_dropped = g && has_dropped(g);
    for (s->place = 0; g && uih_schema_group_at(s->m->schema, s->place) != g;) s->place++;
  }
  s->group = g;
  s->user = hk->user_id;
  if (!g) return uih_corruption(err, "the generation holds group %u, which the schema does not have", hk->group);
  s->nstripes = s->nnews = s->passed = 0;
  s->old.n = s->fresh.n = 0;
  return UIH_OK;
}

/* The history's stored stripes, from the scan, into s->stripes (bytes in
 * s->old), each checked against its key. */
static int take_stripes(state *s, inputs *in, const uint8_t *hist, const uih_key *hk, uih_error *err) {
  int rc = UIH_OK;
  while (rc == UIH_OK && in->key && in->klen == UIH_KEY_SIZE && memcmp(in->key, hist, UIH_KEY_GROUP_PREFIX_SIZE) == 0) {
    GROW(s->stripes, s->nstripes, s->scap, err);
    stored *st = &s->stripes[s->nstripes];
    uih_key sk;
    rc = uih_key_decode(in->key, in->klen, &sk, err);
    if (rc == UIH_OK && s->group_dropped) { /* the directory read once, with the header's check */
      rc = directory(s, in->val, in->vlen, &st->info, err);
      st->stale = rc == UIH_OK && stale_columns(s->group, s->cols, COLUMNS_MAX, st->info.ncolumns);
    } else if (rc == UIH_OK) {
      rc = uih_stripe_read_info(in->val, in->vlen, &st->info, err);
      st->stale = 0;
    }
    if (rc == UIH_OK && (st->info.group != hk->group || st->info.count == 0 || st->info.min_ts != sk.ts))
      rc = uih_corruption(err, "stripe at ts %" PRId64 " holds %u events of group %u from ts %" PRId64, sk.ts,
                          st->info.count, st->info.group, st->info.min_ts);
    if (rc == UIH_OK) rc = bytes_put(&s->old, in->val, in->vlen, &st->off, err);
    if (rc != UIH_OK) break;
    st->start = sk.ts;
    st->len = in->vlen;
    s->nstripes++;
    rc = uih_store_scan_next(in->scan, &in->key, &in->klen, &in->val, &in->vlen, err);
  }
  return rc;
}

/* The history's new rows, from the stream, into s->news (bytes in s->fresh). */
static int take_rows(state *s, inputs *in, const uint8_t *hist, uih_error *err) {
  int rc = UIH_OK;
  while (rc == UIH_OK && in->rec && memcmp(ld_row_history(in->rec), hist, UIH_KEY_GROUP_PREFIX_SIZE) == 0) {
    GROW(s->news, s->nnews, s->ncap, err);
    size_t at;
    rc = bytes_put(&s->fresh, in->rec, in->rlen, &at, err);
    if (rc != UIH_OK) break;
    s->news[s->nnews++] = (row){at, in->rlen, 0};
    rc = ld_stream_next(in->stream, &in->rec, &in->rlen, err);
  }
  return rc;
}

/* The dictionaries go with the generation's record, and the last table
 * file ends: a full disk fails here, before any shard publishes. */
static int finish(state *s, uih_error *err) {
  uint8_t *dicts = NULL;
  size_t dicts_len = 0;
  int rc = uih_stripe_context_serialize(s->ctx, &dicts, &dicts_len, err);
  if (rc == UIH_OK) rc = uih_store_writer_set_dicts(s->m->writer, dicts, dicts_len, err);
  free(dicts);
  return rc == UIH_OK ? uih_store_writer_finish(s->m->writer, err) : rc;
}

int ld_merge_shard(ld_merge *m, uih_error *err) {
  state s = {.m = m, .generation = uih_store_writer_generation(m->writer), .version = uih_schema_version(m->schema)};
  inputs in = {0};
  /* UihTable keeps a checksum with every value: the stripes need none of their own. */
  uih_stripe_encoder_opts eo = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
  eo.no_checksum = 1;
  int rc = uih_stripe_encoder_create(&eo, &s.enc, err);
  if (rc == UIH_OK && !(s.batches = calloc(2 * (size_t)uih_schema_group_count(m->schema) + 1, sizeof *s.batches)))
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "merge: out of memory");
  if (rc == UIH_OK) rc = uih_stripe_decoder_create(&s.dec, err);
  if (rc == UIH_OK) rc = uih_store_scan_open(m->store, m->shard, 0, &in.scan, err);
  if (rc == UIH_OK) rc = build_dicts(&s, in.scan, err);
  if (rc == UIH_OK) rc = ld_stream_open(m->sorter, m->shard, LD_STREAM_LAST, &in.stream, err);
  if (rc == UIH_OK) rc = uih_store_scan_next(in.scan, &in.key, &in.klen, &in.val, &in.vlen, err);
  if (rc == UIH_OK) rc = ld_stream_next(in.stream, &in.rec, &in.rlen, err);
  if (rc != UIH_OK) uih_error_prefix(err, "shard %u: ", m->shard);
  s.skip = m->layered && m->base && m->base->generation && m->base->horizon == m->horizon;
  if (s.skip) {
    m->record.events = m->base->events;
    m->record.stripes = m->base->stripes;
    m->record.histories = m->base->histories;
    m->record.bytes = m->base->bytes;
  }
  while (rc == UIH_OK && (in.key || in.rec)) {
    uint8_t hist[UIH_KEY_GROUP_PREFIX_SIZE];
    uih_key hk;
    if (s.skip && in.key && (!in.rec || memcmp(in.key, ld_row_history(in.rec), UIH_KEY_GROUP_PREFIX_SIZE) < 0)) {
      if (!in.rec) break; /* no new rows left: the rest stays as it is */
      rc = uih_store_scan_seek(in.scan, ld_row_history(in.rec), UIH_KEY_GROUP_PREFIX_SIZE, &in.key, &in.klen, &in.val,
                               &in.vlen, err);
      if (rc != UIH_OK) {
        uih_error_prefix(err, "shard %u: ", m->shard);
        break;
      }
      continue;
    }
    rc = next_history(&s, &in, hist, &hk, err);
    if (rc != UIH_OK) {
      uih_error_prefix(err, "shard %u: ", m->shard);
      break;
    }
    rc = take_stripes(&s, &in, hist, &hk, err);
    if (rc == UIH_OK) rc = take_rows(&s, &in, hist, err);
    if (rc == UIH_OK) rc = history(&s, err);
    if (rc != UIH_OK)
      uih_error_prefix(err, "shard %u: user %" PRIu64 " group '%s': ", m->shard, s.user, s.group->name);
  }
  if (rc == UIH_OK && (rc = finish(&s, err)) != UIH_OK) uih_error_prefix(err, "shard %u: ", m->shard);
  if (rc == UIH_OK && s.skip) /* every stripe not written is where it was */
    m->stripes_copied = m->record.stripes - m->stripes_written;
  if (in.stream) m->record.duplicates += ld_stream_repeats(in.stream);
  ld_stream_close(in.stream);
  uih_store_scan_close(in.scan);
  state_free(&s);
  return rc;
}
