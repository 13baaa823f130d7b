/* Loader-input CSV: libcsv splits records and handles quoting; this file
 * maps the header to traits and parses each field by its trait's type. */
#include "uih/csv.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "uih/key.h"
#include "values.h"

#define LINE_MAX_BYTES (1u << 20)    /* a longer line is an error, not a memory hog */
#define RECORD_MAX_BYTES (16u << 20) /* so is a longer record (lines joined by quotes) */
#define FIELDS_MAX 4096u

enum { COL_USER = -3, COL_GROUP = -2, COL_TS = -1 }; /* else: a trait column */

typedef struct group_map {
  const uih_group *group;
  uih_batch *row;  /* one event */
  int *column;     /* header column -> batch column, or -1 */
} group_map;

struct uih_csv_reader {
  FILE *f;
  int owns_f;
  char name[256];
  const uih_schema *schema;
  struct csv_parser parser;
  char *text;                 /* the record's lines as read */
  size_t text_len, text_cap;
  int resumable;              /* the last error was one record's: the next call goes on */
  uint64_t line_no, record_line;
  /* the record being assembled: fields as NUL-terminated strings */
  char *fields;
  size_t fields_len, fields_cap;
  size_t *offsets;            /* FIELDS_MAX */
  uint32_t nfields;
  int too_many, record_done, oom;
  /* the header */
  uint32_t ncols;
  char **col_names;
  int *col_kind;              /* COL_* or 0 for a trait column */
  group_map *groups;
  uint32_t ngroups;
  uih_id_check *ids; /* the load's, or NULL */
};

static void on_field(void *s, size_t len, void *data) {
  uih_csv_reader *r = data;
  if (r->nfields >= FIELDS_MAX) {
    r->too_many = 1;
    return;
  }
  if (r->fields_len + len + 1 > r->fields_cap) {
    size_t cap = r->fields_cap ? r->fields_cap : 1024;
    while (cap < r->fields_len + len + 1) cap *= 2;
    char *p = realloc(r->fields, cap);
    if (!p) {
      r->oom = 1;
      return;
    }
    r->fields = p;
    r->fields_cap = cap;
  }
  r->offsets[r->nfields++] = r->fields_len;
  if (len) memcpy(r->fields + r->fields_len, s, len);
  r->fields[r->fields_len + len] = '\0';
  r->fields_len += len + 1;
}

static void on_record(int c, void *data) {
  (void)c;
  ((uih_csv_reader *)data)->record_done = 1;
}

static const char *field(const uih_csv_reader *r, uint32_t i) { return r->fields + r->offsets[i]; }

/* Appends one line (with its '\n', if any) to r->text; returns its length,
 * 0 at the end of input, -1 when it is too long, -2 out of memory. */
static long read_line(uih_csv_reader *r) {
  if (r->text_len + LINE_MAX_BYTES > r->text_cap) {
    size_t cap = r->text_len + LINE_MAX_BYTES;
    char *p = realloc(r->text, cap);
    if (!p) return -2;
    r->text = p;
    r->text_cap = cap;
  }
  char *line = r->text + r->text_len;
  size_t n = 0;
  int c;
  while ((c = getc_unlocked(r->f)) != EOF) {
    if (n == LINE_MAX_BYTES) return -1;
    line[n++] = (char)c;
    if (c == '\n') break;
  }
  r->text_len += n;
  return (long)n;
}

/* After a malformed record: a fresh parser, so the next line starts a record. */
static int reset_parser(uih_csv_reader *r) {
  csv_free(&r->parser);
  if (csv_init(&r->parser, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0) return 0;
  r->resumable = 1;
  return 1;
}

/* Assembles the next record into r->fields and its text into r->text;
 * *got 0 at the end. */
static int next_record(uih_csv_reader *r, int *got, uih_error *err) {
  r->nfields = 0;
  r->fields_len = 0;
  r->text_len = 0;
  r->too_many = r->record_done = 0;
  r->resumable = 0;
  *got = 0;
  int started = 0;
  while (!r->record_done) {
    size_t at = r->text_len;
    long n = read_line(r);
    UIH_RETURN_IF(n == -2, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
    UIH_RETURN_IF(n == -1, err, UIH_ERR_PARSE, "%s:%" PRIu64 ": line longer than %u bytes", r->name,
                  r->line_no + 1, LINE_MAX_BYTES);
    UIH_RETURN_IF(r->text_len > RECORD_MAX_BYTES, err, UIH_ERR_PARSE,
                  "%s:%" PRIu64 ": record longer than %u bytes (an unclosed quote?)", r->name,
                  r->record_line, RECORD_MAX_BYTES);
    if (n == 0) {
      if (ferror(r->f))
        return uih_error_set(err, UIH_ERR_IO, "%s: read failed after line %" PRIu64 ": %s",
                             r->name, r->line_no, strerror(errno));
      if (csv_fini(&r->parser, on_field, on_record, r) != 0) {
        uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": malformed CSV at the end: %s", r->name,
                      r->record_line, csv_strerror(csv_error(&r->parser)));
        if (!reset_parser(r)) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
        return UIH_ERR_PARSE;
      }
      break;
    }
    r->line_no++;
    if (!started) {
      r->record_line = r->line_no;
      started = 1;
    }
    const char *line = r->text + at;
    if (csv_parse(&r->parser, line, (size_t)n, on_field, on_record, r) != (size_t)n) {
      uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": malformed CSV: %s", r->name, r->line_no,
                    csv_strerror(csv_error(&r->parser)));
      if (!reset_parser(r)) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
      return UIH_ERR_PARSE;
    }
    if (!r->record_done && r->nfields == 0 && r->parser.pstate == 0) { /* a blank line: no record begun */
      started = 0;
      r->text_len = 0;
    }
  }
  if (r->oom) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
  r->resumable = 1; /* the record is read whole: what is wrong with it is its own */
  if (r->too_many)
    return uih_error_set(err, UIH_ERR_PARSE, "%s:%" PRIu64 ": more than %u fields", r->name,
                         r->record_line, FIELDS_MAX);
  *got = r->record_done || r->nfields > 0;
  return UIH_OK;
}

/* ---- the header ------------------------------------------------------------ */

static int read_header(uih_csv_reader *r, uih_error *err) {
  int got;
  UIH_FORWARD(next_record(r, &got, err));
  UIH_RETURN_IF(!got, err, UIH_ERR_PARSE,
                "%s: empty input, expected a header line 'user_id,group,ts,...'", r->name);
  r->ncols = r->nfields;
  r->col_names = calloc(r->ncols, sizeof *r->col_names);
  r->col_kind = calloc(r->ncols, sizeof *r->col_kind);
  UIH_RETURN_IF(!r->col_names || !r->col_kind, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
  int seen[3] = {0, 0, 0};
  for (uint32_t i = 0; i < r->ncols; i++) {
    const char *n = field(r, i);
    r->col_names[i] = strdup(n);
    UIH_RETURN_IF(!r->col_names[i], err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
    for (uint32_t j = 0; j < i; j++)
      UIH_RETURN_IF(!strcmp(r->col_names[j], n), err, UIH_ERR_PARSE,
                    "%s:1: column '%s' appears twice (columns %u and %u)", r->name, n, j + 1, i + 1);
    int kind = !strcmp(n, "user_id") ? COL_USER : !strcmp(n, "group") ? COL_GROUP
               : !strcmp(n, "ts")    ? COL_TS
                                     : 0;
    r->col_kind[i] = kind;
    if (kind) {
      seen[kind + 3] = 1;
      continue;
    }
    int known = 0;
    for (uint32_t g = 0; g < r->ngroups; g++) {
      const uih_trait *t = uih_group_trait_by_name(r->groups[g].group, n);
      if (t && t == r->groups[g].group->ts)
        return uih_error_set(err, UIH_ERR_PARSE,
                             "%s:1: column '%s' is group '%s''s timestamp; name it 'ts'", r->name,
                             n, r->groups[g].group->name);
      known |= t != NULL;
    }
    UIH_RETURN_IF(!known, err, UIH_ERR_PARSE,
                  "%s:1: column '%s' is not an active trait of any group of the schema", r->name, n);
  }
  static const char *required[] = {"user_id", "group", "ts"};
  for (int k = 0; k < 3; k++)
    UIH_RETURN_IF(!seen[k], err, UIH_ERR_PARSE,
                  "%s:1: the header has no '%s' column (expected user_id,group,ts,<traits...>)",
                  r->name, required[k]);
  for (uint32_t g = 0; g < r->ngroups; g++) {
    group_map *m = &r->groups[g];
    m->column = malloc(r->ncols * sizeof *m->column);
    UIH_RETURN_IF(!m->column, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
    for (uint32_t i = 0; i < r->ncols; i++) {
      const uih_trait *t = r->col_kind[i] == COL_TS ? m->group->ts
                           : r->col_kind[i] == 0    ? uih_group_trait_by_name(m->group, r->col_names[i])
                                                    : NULL;
      m->column[i] = t ? uih_batch_column_index(m->row, t->id) : -1;
    }
  }
  return UIH_OK;
}

int uih_csv_open_stream(FILE *f, const char *name, const uih_schema *schema,
                        uih_csv_reader **out, uih_error *err) {
  UIH_RETURN_IF(f == NULL || schema == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "csv_open: NULL argument");
  *out = NULL;
  uih_csv_reader *r = calloc(1, sizeof *r);
  UIH_RETURN_IF(r == NULL, err, UIH_ERR_NO_MEMORY, "csv_open: out of memory");
  r->f = f;
  snprintf(r->name, sizeof r->name, "%s", name ? name : "input");
  r->schema = schema;
  int rc = UIH_OK;
  if (csv_init(&r->parser, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0) {
    free(r);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "csv_open: out of memory");
  }
  r->offsets = malloc(FIELDS_MAX * sizeof *r->offsets);
  r->ngroups = uih_schema_group_count(schema);
  r->groups = calloc(r->ngroups ? r->ngroups : 1, sizeof *r->groups);
  if (!r->offsets || !r->groups) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "csv_open: out of memory");
  for (uint32_t g = 0; rc == UIH_OK && g < r->ngroups; g++) {
    r->groups[g].group = uih_schema_group_at(schema, g);
    rc = uih_batch_create(r->groups[g].group, 1, NULL, 0, &r->groups[g].row, err);
  }
  if (rc == UIH_OK) rc = read_header(r, err);
  r->resumable = 0; /* a bad header ends the input */
  if (rc != UIH_OK) {
    uih_csv_close(r);
    return rc;
  }
  *out = r;
  return UIH_OK;
}

int uih_csv_open(const char *path, const uih_schema *schema, uih_csv_reader **out,
                 uih_error *err) {
  UIH_RETURN_IF(path == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "csv_open: NULL argument");
  int is_stdin = !strcmp(path, "-");
  FILE *f = is_stdin ? stdin : fopen(path, "r");
  UIH_RETURN_IF(f == NULL, err, UIH_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  int rc = uih_csv_open_stream(f, is_stdin ? "stdin" : path, schema, out, err);
  if (rc != UIH_OK) {
    if (!is_stdin) fclose(f);
    return rc;
  }
  (*out)->owns_f = !is_stdin;
  return UIH_OK;
}

void uih_csv_close(uih_csv_reader *r) {
  if (!r) return;
  if (r->owns_f) fclose(r->f);
  csv_free(&r->parser);
  for (uint32_t g = 0; g < r->ngroups && r->groups; g++) {
    uih_batch_free(r->groups[g].row);
    free(r->groups[g].column);
  }
  for (uint32_t i = 0; i < r->ncols && r->col_names; i++) free(r->col_names[i]);
  free(r->col_names);
  free(r->col_kind);
  free(r->groups);
  free(r->text);
  free(r->offsets);
  free(r->fields);
  free(r);
}

/* ---- values ---------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *v) {
  if (*s < '0' || *s > '9') return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end) return 0;
  *v = x;
  return 1;
}

/* With an id check: records the string `s` was hashed into `id`; an
 * error naming both strings when another had that id. */
static int check_id(uih_csv_reader *r, const char *column, const char *s, uint64_t id, uih_error *err) {
  if (!r->ids) return UIH_OK;
  const char *other;
  size_t olen;
  UIH_FORWARD(uih_id_check_add(r->ids, id, s, strlen(s), &other, &olen, err));
  UIH_RETURN_IF(other, err, UIH_ERR_PARSE,
                "%s:%" PRIu64 ": column '%s': '%s' and '%.*s' (read before in this load) are two strings "
                "with one id, %" PRIu64 " (uih_hash_id): they would be one user or item",
                r->name, r->record_line, column, s, (int)(olen > 256 ? 256 : olen), other, id);
  return UIH_OK;
}

int uih_csv_next(uih_csv_reader *r, uint64_t *user_id, const uih_batch **event, uih_error *err) {
  UIH_RETURN_IF(r == NULL || user_id == NULL || event == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "csv_next: NULL argument");
  *event = NULL;
  int got;
  UIH_FORWARD(next_record(r, &got, err));
  if (!got) return UIH_OK;
  UIH_RETURN_IF(r->nfields != r->ncols, err, UIH_ERR_PARSE,
                "%s:%" PRIu64 ": %u fields, the header has %u", r->name, r->record_line,
                r->nfields, r->ncols);
  /* user_id and group first: the group decides what the other fields mean */
  group_map *m = NULL;
  for (uint32_t i = 0; i < r->ncols; i++) {
    const char *s = field(r, i);
    if (r->col_kind[i] == COL_USER) {
      const uih_input spelling = uih_schema_user_ids(r->schema);
      const char *want = uih_input_user(spelling, s, user_id);
      UIH_RETURN_IF(want, err, UIH_ERR_PARSE, "%s:%" PRIu64 ": column 'user_id': expected %s, got '%s'",
                    r->name, r->record_line, want, s);
      if (spelling == UIH_INPUT_STRING) UIH_FORWARD(check_id(r, "user_id", s, *user_id, err));
    } else if (r->col_kind[i] == COL_GROUP) {
      const uih_group *g = uih_schema_group_by_name(r->schema, s);
      uint64_t id;
      if (!g && parse_u64(s, &id) && id <= UINT16_MAX) g = uih_schema_group_by_id(r->schema, (uint16_t)id);
      UIH_RETURN_IF(!g, err, UIH_ERR_PARSE,
                    "%s:%" PRIu64 ": column 'group': expected a group name or id of the schema, got '%s'",
                    r->name, r->record_line, s);
      for (uint32_t k = 0; k < r->ngroups; k++)
        if (r->groups[k].group == g) m = &r->groups[k];
    }
  }
  uih_batch *row = m->row;
  uih_batch_clear(row);
  uint32_t at;
  UIH_FORWARD(uih_batch_append(row, &at, err));
  for (uint32_t i = 0; i < r->ncols; i++) {
    if (r->col_kind[i] == COL_USER || r->col_kind[i] == COL_GROUP) continue;
    const char *s = field(r, i);
    int c = m->column[i];
    if (*s == '\0') {
      UIH_RETURN_IF(r->col_kind[i] == COL_TS, err, UIH_ERR_PARSE,
                    "%s:%" PRIu64 ": column 'ts': missing (every event needs its timestamp)",
                    r->name, r->record_line);
      continue;
    }
    UIH_RETURN_IF(c < 0, err, UIH_ERR_PARSE,
                  "%s:%" PRIu64 ": column '%s' has a value, but group '%s' has no such trait",
                  r->name, r->record_line, r->col_names[i], m->group->name);
    uint64_t bits;
    const uih_trait *t = row->columns[c].trait;
    const char *want = uih_input_value(t, s, &bits);
    UIH_RETURN_IF(want, err, UIH_ERR_PARSE, "%s:%" PRIu64 ": column '%s': expected %s, got '%s'",
                  r->name, r->record_line, r->col_names[i], want, s);
    if (t->type == UIH_TYPE_ID && t->input == UIH_INPUT_STRING)
      UIH_FORWARD(check_id(r, r->col_names[i], s, bits, err));
    uih_column_set_bits(&row->columns[c], at, bits);
  }
  *event = row;
  return UIH_OK;
}

void uih_csv_check_ids(uih_csv_reader *r, uih_id_check *ids) {
  if (r) r->ids = ids;
}

uint64_t uih_csv_record_line(const uih_csv_reader *r) { return r ? r->record_line : 0; }

const char *uih_csv_record_text(const uih_csv_reader *r, size_t *len) {
  size_t n = r ? r->text_len : 0;
  if (r) /* without its line break */
    while (n > 0 && (r->text[n - 1] == '\n' || r->text[n - 1] == '\r')) n--;
  if (len) *len = n;
  return r && r->record_line ? r->text : NULL;
}

int uih_csv_resumable(const uih_csv_reader *r) { return r ? r->resumable : 0; }
