/* The loader's deletions (deletes.h): libcsv splits the records, lines are
 * fed one at a time so that every message names its line. */
#include "deletes.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "uih/key.h"

typedef struct pair {
  uint64_t user, item;
} pair;

struct ld_deletes {
  char trait[72];       /* the item column's trait name, "" without one */
  uint64_t *users, *items;
  size_t nusers, nitems, ucap, icap;
  pair *pairs;
  size_t npairs, pcap;
  uint64_t digest;
};

enum { COL_USER = 1, COL_ITEM = 2 };

typedef struct parse {
  ld_deletes *d;
  const char *name;
  const uih_schema *schema;
  uint64_t line, record_line;
  int cols[2], ncols, header_done;
  char fields[2][72];  /* longer is no number or trait name we take */
  uint64_t hashed[2];  /* each field's uih_hash_id, whatever its length: string ids */
  int strings[2];      /* the column's ids are strings (the schema's user_ids, the trait's input) */
  int nfields, too_long[2], record_done;
  uih_error *err;
  int rc;
} parse;

static void on_field(void *s, size_t len, void *data) {
  parse *p = data;
  if (p->nfields < 2) {
    size_t n = len < sizeof p->fields[0] - 1 ? len : sizeof p->fields[0] - 1;
    memcpy(p->fields[p->nfields], s ? s : "", s ? n : 0);
    p->fields[p->nfields][s ? n : 0] = '\0';
    p->too_long[p->nfields] = len >= sizeof p->fields[0] - 1;
    p->hashed[p->nfields] = uih_hash_id(s ? (const char *)s : "", s ? len : 0);
  }
  p->nfields++;
}

static void on_record(int c, void *data) {
  (void)c;
  ((parse *)data)->record_done = 1;
}

static int parse_u64(const char *s, uint64_t *v) {
  if (*s < '0' || *s > '9') return 0;
  errno = 0;
  char *end;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end) return 0;
  *v = x;
  return 1;
}

/* The active id trait called `name` (of the first group that has one), or
 * NULL; *mixed 1 when the groups that have it spell it differently (a
 * string in one, a number in another). */
static const uih_trait *id_trait(const uih_schema *schema, const char *name, int *mixed) {
  const uih_trait *first = NULL;
  *mixed = 0;
  for (uint32_t g = 0; g < uih_schema_group_count(schema); g++) {
    const uih_trait *t = uih_group_trait_by_name(uih_schema_group_at(schema, g), name);
    if (!t || t->type != UIH_TYPE_ID) continue;
    if (!first) first = t;
    *mixed |= t->input != first->input;
  }
  return first;
}

#define PUSH(arr, n, cap, v)                                        \
  do {                                                              \
    if ((n) == (cap)) {                                             \
      size_t c_ = (cap) ? (cap) * 2 : 256;                          \
      void *q_ = realloc((arr), c_ * sizeof *(arr));                \
      if (!q_) return uih_error_set(p->err, UIH_ERR_NO_MEMORY, "%s: out of memory", p->name); \
      (arr) = q_;                                                   \
      (cap) = c_;                                                   \
    }                                                               \
    (arr)[(n)++] = (v);                                             \
  } while (0)

static int header(parse *p) {
  uih_error *err = p->err;
  if (p->nfields < 1 || p->nfields > 2)
    return uih_error_set(err, UIH_ERR_PARSE,
                         "%s:%" PRIu64 ": a header of %d columns, expected user_id, an id trait's name, or both",
                         p->name, p->record_line, p->nfields);
  p->ncols = p->nfields;
  for (int i = 0; i < p->ncols; i++) {
    const char *f = p->fields[i];
    int mixed = 0;
    const uih_trait *t = p->too_long[i] ? NULL : id_trait(p->schema, f, &mixed);
    if (mixed)
      return uih_error_set(err, UIH_ERR_PARSE,
                           "%s:%" PRIu64 ": column '%s': its groups spell it differently (a string in some, a number "
                           "in others): a deletion list cannot say which it names", p->name, p->record_line, f);
    if (!strcmp(f, "user_id")) {
      p->cols[i] = COL_USER;
      p->strings[i] = uih_schema_user_ids(p->schema) == UIH_INPUT_STRING;
    } else if (t) {
      p->cols[i] = COL_ITEM;
      p->strings[i] = t->input == UIH_INPUT_STRING;
      snprintf(p->d->trait, sizeof p->d->trait, "%s", f);
    } else {
      return uih_error_set(err, UIH_ERR_PARSE,
                           "%s:%" PRIu64 ": column %d '%s' is neither user_id nor an active id trait of the schema",
                           p->name, p->record_line, i + 1, f);
    }
  }
  if (p->ncols == 2 && p->cols[0] == p->cols[1])
    return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": two %s columns, expected user_id and an id trait",
                         p->name, p->record_line, p->cols[0] == COL_USER ? "user_id" : "trait");
  p->header_done = 1;
  return UIH_OK;
}

static int record(parse *p) {
  uih_error *err = p->err;
  if (p->nfields != p->ncols)
    return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": %d fields, the header has %d", p->name,
                         p->record_line, p->nfields, p->ncols);
  uint64_t v[2] = {0, 0};
  int has[2] = {0, 0};
  for (int i = 0; i < p->ncols; i++) {
    const char *f = p->fields[i];
    if (*f == '\0' && p->ncols == 2) continue; /* "any" */
    if (p->strings[i]) {
      if (*f == '\0')
        return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": column '%s': expected a string id, got nothing",
                             p->name, p->record_line, p->cols[i] == COL_USER ? "user_id" : p->d->trait);
      v[i] = p->hashed[i];
      has[i] = 1;
      continue;
    }
    if (p->too_long[i] || !parse_u64(f, &v[i]))
      return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": column '%s': expected an unsigned 64-bit integer%s, got '%s%s'",
                           p->name, p->record_line, p->cols[i] == COL_USER ? "user_id" : p->d->trait,
                           p->ncols == 2 ? " or nothing" : "", f, p->too_long[i] ? "..." : "");
    has[i] = 1;
  }
  uint64_t user = 0, item = 0;
  int has_user = 0, has_item = 0;
  for (int i = 0; i < p->ncols; i++) {
    if (p->cols[i] == COL_USER) user = v[i], has_user = has[i];
    else item = v[i], has_item = has[i];
  }
  ld_deletes *d = p->d;
  if (has_user && has_item) PUSH(d->pairs, d->npairs, d->pcap, ((pair){user, item}));
  else if (has_user) PUSH(d->users, d->nusers, d->ucap, user);
  else if (has_item) PUSH(d->items, d->nitems, d->icap, item);
  else
    return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": both fields empty, expected a user, an item or both",
                         p->name, p->record_line);
  return UIH_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_pair(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->user != y->user) return (x->user > y->user) - (x->user < y->user);
  return (x->item > y->item) - (x->item < y->item);
}

static size_t dedupe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n == 0) return 0;
  qsort(base, n, size, cmp);
  char *b = base;
  size_t k = 1;
  for (size_t i = 1; i < n; i++)
    if (cmp(b + (k - 1) * size, b + i * size) != 0) memmove(b + k++ * size, b + i * size, size);
  return k;
}

static int read_all(parse *p, FILE *f) {
  struct csv_parser csv;
  if (csv_init(&csv, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0)
    return uih_error_set(p->err, UIH_ERR_NO_MEMORY, "%s: out of memory", p->name);
  char *line = NULL;
  size_t cap = 0;
  int rc = UIH_OK, started = 0;
  for (;;) {
    errno = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n < 0) {
      if (ferror(f)) {
        rc = uih_error_set(p->err, UIH_ERR_IO, "%s: read failed after line %" PRIu64 ": %s", p->name, p->line,
                           strerror(errno ? errno : EIO));
        break;
      }
      if (csv_fini(&csv, on_field, on_record, p) != 0) {
        rc = uih_error_set(p->err, UIH_ERR_PARSE, "%s:%" PRIu64 ": malformed CSV at the end: %s", p->name,
                           p->record_line, csv_strerror(csv_error(&csv)));
        break;
      }
    } else {
      p->line++;
      if (!started) {
        p->record_line = p->line;
        started = 1;
      }
      if (csv_parse(&csv, line, (size_t)n, on_field, on_record, p) != (size_t)n) {
        rc = uih_error_set(p->err, UIH_ERR_PARSE, "%s:%" PRIu64 ": malformed CSV: %s", p->name, p->line,
                           csv_strerror(csv_error(&csv)));
        break;
      }
      if (!p->record_done && p->nfields == 0 && csv.pstate == 0) started = 0; /* a blank line: no record begun */
    }
    if (p->record_done) {
      rc = p->header_done ? record(p) : header(p);
      p->nfields = 0;
      p->record_done = 0;
      started = 0;
      if (rc != UIH_OK) break;
    }
    if (n < 0) break;
  }
  free(line);
  csv_free(&csv);
  if (rc == UIH_OK && !p->header_done)
    rc = uih_error_set(p->err, UIH_ERR_PARSE, "%s: empty, expected a header: user_id, an id trait's name, or both",
                       p->name);
  return rc;
}

int ld_deletes_read(FILE *f, const char *name, const uih_schema *schema, ld_deletes **out, uih_error *err) {
  *out = NULL;
  ld_deletes *d = calloc(1, sizeof *d);
  if (!d) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", name);
  parse p = {.d = d, .name = name, .schema = schema, .err = err};
  int rc = read_all(&p, f);
  if (rc != UIH_OK) {
    ld_deletes_free(d);
    return rc;
  }
  d->nusers = dedupe(d->users, d->nusers, sizeof *d->users, cmp_u64);
  d->nitems = dedupe(d->items, d->nitems, sizeof *d->items, cmp_u64);
  d->npairs = dedupe(d->pairs, d->npairs, sizeof *d->pairs, cmp_pair);
  XXH3_state_t *h = XXH3_createState();
  if (!h) {
    ld_deletes_free(d);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", name);
  }
  XXH3_64bits_reset(h);
  XXH3_64bits_update(h, d->trait, strlen(d->trait) + 1);
  uint64_t n[3] = {d->nusers, d->nitems, d->npairs};
  XXH3_64bits_update(h, n, sizeof n);
  if (d->nusers) XXH3_64bits_update(h, d->users, d->nusers * sizeof *d->users);
  if (d->nitems) XXH3_64bits_update(h, d->items, d->nitems * sizeof *d->items);
  for (size_t i = 0; i < d->npairs; i++) XXH3_64bits_update(h, &d->pairs[i], sizeof d->pairs[i]);
  d->digest = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  *out = d;
  return UIH_OK;
}

void ld_deletes_free(ld_deletes *d) {
  if (!d) return;
  free(d->users);
  free(d->items);
  free(d->pairs);
  free(d);
}

uint64_t ld_deletes_digest(const ld_deletes *d) { return d ? d->digest : 0; }

void ld_deletes_counts(const ld_deletes *d, uint64_t *users, uint64_t *items, uint64_t *pairs) {
  *users = d ? d->nusers : 0;
  *items = d ? d->nitems : 0;
  *pairs = d ? d->npairs : 0;
}

const uint64_t *ld_deletes_users(const ld_deletes *d, size_t *n) {
  *n = d ? d->nusers : 0;
  return d ? d->users : NULL;
}

int ld_deletes_user(const ld_deletes *d, uint64_t user) {
  return d && d->nusers && bsearch(&user, d->users, d->nusers, sizeof *d->users, cmp_u64) != NULL;
}

/* The first pair of `user`, or npairs. */
static size_t first_pair(const ld_deletes *d, uint64_t user) {
  size_t lo = 0, hi = d->npairs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d->pairs[mid].user < user) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const uih_trait *ld_deletes_trait(const ld_deletes *d, const uih_group *g, uint64_t user) {
  if (!d || !d->trait[0]) return NULL;
  size_t i;
  if (d->nitems == 0 && ((i = first_pair(d, user)) == d->npairs || d->pairs[i].user != user)) return NULL;
  const uih_trait *t = uih_group_trait_by_name(g, d->trait);
  return t && t->type == UIH_TYPE_ID ? t : NULL;
}

int ld_deletes_event(const ld_deletes *d, uint64_t user, uint64_t item) {
  if (!d) return 0;
  if (d->nitems && bsearch(&item, d->items, d->nitems, sizeof *d->items, cmp_u64)) return 1;
  pair k = {user, item};
  return d->npairs && bsearch(&k, d->pairs, d->npairs, sizeof *d->pairs, cmp_pair) != NULL;
}
