/* Loader input: CSV (libcsv splits records and handles quoting) or JSON
 * Lines (layout.c walks each object), read through a layout; this file
 * maps the columns to the schema's names and hands each field to
 * values.c. */
#include "uih/csv.h"

#include <csv.h>
#include <json-c/json_tokener.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "layout.h"
#include "types.h"
#include "uih/key.h"
#include "values.h"

#define LINE_MAX_BYTES (1u << 20)    /* a longer line is an error, not a memory hog */
#define RECORD_MAX_BYTES (16u << 20) /* so is a longer record (lines joined by quotes) */
#define FIELDS_MAX 4096u

enum { COL_IGNORED = -4, COL_USER = -3, COL_GROUP = -2, COL_TS = -1 }; /* else: a trait column */

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
  /* the layout */
  int jsonl;                   /* JSON Lines: col_names are the paths */
  json_tokener *tok;           /* JSON Lines' parser, line to line */
  char delim[5];               /* "": not known before the first line */
  char *plain;                 /* a line with a multi-byte delimiter made one byte */
  size_t plain_cap;
  group_map *fixed;            /* layout.group's, or NULL */
  group_map *last;             /* the group named by the last record that named one */
  uih_names ours, theirs;      /* layout.map */
  uih_names columns;           /* layout.columns */
  char where[300];             /* where the columns' names come from, for messages: "day.csv:1", "ratings.dat (--columns)" */
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

/* A JSON Lines field, as libcsv hands one. */
static void put_field(void *arg, const char *text, size_t len) { on_field((void *)(uintptr_t)text, len, arg); }

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
  for (;;) {
#if defined(__GLIBC__)
    /* What the stream has buffered, taken a line at a time with memchr
     * rather than a byte at a time (glibc's FILE exposes its buffer, as
     * getc_unlocked's macro reads it); getc below refills it, with what the
     * source has ready, as before: a streamed input's lines are not held
     * back. */
    const char *p = r->f->_IO_read_ptr, *end = r->f->_IO_read_end;
    if (p && p < end) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      const size_t take = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
      if (n + take > LINE_MAX_BYTES) return -1;
      memcpy(line + n, p, take);
      n += take;
      r->f->_IO_read_ptr += take;
      if (nl) break;
    }
#endif
    if ((c = getc_unlocked(r->f)) == EOF) break;
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
  if (r->delim[0]) csv_set_delim(&r->parser, (unsigned char)(r->delim[1] ? 0x1f : r->delim[0]));
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
    if (r->jsonl) {
      size_t len = (size_t)n;
      while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
      size_t sp = 0;
      while (sp < len && (line[sp] == ' ' || line[sp] == '\t')) sp++;
      if (sp == len) { /* a blank line */
        started = 0;
        r->text_len = 0;
        continue;
      }
      char why[200];
      r->resumable = 1;
      if (!r->tok && !(r->tok = json_tokener_new_ex(64)))
        return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
      int rc = uih_jsonl_fields(r->tok, line, len, r->col_names, r->ncols, put_field, r, why, sizeof why);
      if (rc != UIH_OK) return uih_error_set(err, rc, "%s:%" PRIu64 ": %s", r->name, r->line_no, why);
      r->record_done = 1;
      break;
    }
    if (!r->delim[0]) { /* the first line decides */
      uih_layout_detect_delimiter(line, (size_t)n, r->delim);
      csv_set_delim(&r->parser, (unsigned char)(r->delim[1] ? 0x1f : r->delim[0]));
    }
    if (r->delim[1]) { /* multi-byte: each one becomes 0x1f, a byte text does not hold */
      if ((size_t)n > r->plain_cap) {
        char *p = realloc(r->plain, (size_t)n);
        UIH_RETURN_IF(!p, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
        r->plain = p;
        r->plain_cap = (size_t)n;
      }
      const size_t dl = strlen(r->delim);
      size_t k = 0;
      for (size_t i = 0; i < (size_t)n;) {
        if (i + dl <= (size_t)n && !memcmp(line + i, r->delim, dl)) r->plain[k++] = 0x1f, i += dl;
        else r->plain[k++] = line[i++];
      }
      line = r->plain;
      n = (long)k;
    }
    /* A whole record on a line no quoting touches: split here, at a
     * fraction of libcsv's cost (byte by byte, a call per field). */
    if (r->nfields == 0 && r->parser.pstate == 0 &&
        uih_layout_split_plain(line, (size_t)n, r->delim[1] ? 0x1f : r->delim[0], put_field, r)) {
      r->record_done = 1;
      break;
    }
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

/* The schema's name of the file's column `name`: itself without a map,
 * else the one the map gives it (NULL: the map leaves it out). */
static const char *ours_of(const uih_csv_reader *r, const char *name) {
  if (!r->ours.n) return name;
  for (uint32_t i = 0; i < r->theirs.n; i++)
    if (!strcmp(r->theirs.v[i], name)) return r->ours.v[i];
  return NULL;
}

/* The kind of the schema's name `n` (the file's `column`): COL_*, or 0
 * for a trait (*known: some group has it). A group's timestamp named by
 * its trait name is an error. */
static int kind_of(const uih_csv_reader *r, const char *n, const char *column, int *kind, int *known, uih_error *err) {
  *known = 1;
  *kind = !strcmp(n, "user_id") ? COL_USER : !strcmp(n, "group") ? COL_GROUP : !strcmp(n, "ts") ? COL_TS : 0;
  if (*kind) return UIH_OK;
  *known = 0;
  for (uint32_t g = 0; g < r->ngroups; g++) {
    const uih_trait *t = uih_group_trait_by_name(r->groups[g].group, n);
    UIH_RETURN_IF(t && t == r->groups[g].group->ts && r->ours.n, err, UIH_ERR_PARSE,
                  "%s: the map names '%s', group '%s''s timestamp; map it as ts=%s", r->where, n,
                  r->groups[g].group->name, column);
    UIH_RETURN_IF(t && t == r->groups[g].group->ts, err, UIH_ERR_PARSE,
                  "%s: column '%s' is group '%s''s timestamp; name it 'ts'", r->where, column,
                  r->groups[g].group->name);
    *known |= t != NULL;
  }
  return UIH_OK;
}

/* The columns: the header's names (the first record, or layout.columns),
 * or a JSON Lines file's paths (the map's, else the schema's names). */
static int read_header(uih_csv_reader *r, uih_error *err) {
  uih_names names = {NULL, 0};
  int rc = UIH_OK;
  if (r->jsonl) snprintf(r->where, sizeof r->where, "%s (its fields)", r->name);
  else if (r->columns.n) snprintf(r->where, sizeof r->where, "%s (--columns)", r->name);
  else snprintf(r->where, sizeof r->where, "%s:1", r->name);
  if (r->jsonl) {
    const uih_names *from = r->ours.n ? &r->theirs : NULL;
    if (from) {
      names = *from;
    } else { /* user_id, group, ts and every active trait's name, once */
      static const char *const fixed[] = {"user_id", "ts", "group"};
      uih_names all = {NULL, 0};
      for (int k = 0; rc == UIH_OK && k < (r->fixed ? 2 : 3); k++) /* a fixed group: no group field */
        rc = uih_names_add(&all, fixed[k], strlen(fixed[k]), err);
      for (uint32_t g = 0; rc == UIH_OK && g < r->ngroups; g++) {
        const uih_group *grp = r->groups[g].group;
        for (uint32_t t = 0; rc == UIH_OK && t < grp->ntraits; t++) {
          const uih_trait *tr = &grp->traits[t];
          if (!uih_trait_active(tr)) continue;
          int dup = 0; /* a name twice, or some group's timestamp's name: its field is "ts" */
          for (uint32_t h = 0; h < r->ngroups; h++) dup |= !strcmp(r->groups[h].group->ts->name, tr->name);
          for (uint32_t i = 0; i < all.n; i++) dup |= !strcmp(all.v[i], tr->name);
          if (!dup) rc = uih_names_add(&all, tr->name, strlen(tr->name), err);
        }
      }
      r->columns = all; /* owned there */
      names = all;
    }
  } else if (r->columns.n) {
    names = r->columns;
  } else {
    int got;
    UIH_FORWARD(next_record(r, &got, err));
    UIH_RETURN_IF(!got, err, UIH_ERR_PARSE, "%s: empty input, expected a header line 'user_id,group,ts,...'", r->name);
  }
  if (rc != UIH_OK) return rc;
  r->ncols = names.n ? names.n : r->nfields;
  r->col_names = calloc(r->ncols ? r->ncols : 1, sizeof *r->col_names);
  r->col_kind = calloc(r->ncols ? r->ncols : 1, sizeof *r->col_kind);
  UIH_RETURN_IF(!r->col_names || !r->col_kind, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
  int seen[3] = {0, 0, 0};
  for (uint32_t i = 0; i < r->ncols; i++) {
    const char *n = names.n ? names.v[i] : field(r, i);
    r->col_names[i] = strdup(n);
    UIH_RETURN_IF(!r->col_names[i], err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
    const char *our = r->jsonl && !r->ours.n ? n : r->jsonl ? r->ours.v[i] : ours_of(r, n);
    for (uint32_t j = 0; j < i && our; j++) /* a column the map leaves out may repeat */
      UIH_RETURN_IF(r->col_kind[j] != COL_IGNORED && !strcmp(r->col_names[j], n), err, UIH_ERR_PARSE,
                    "%s: column '%s' appears twice (columns %u and %u)", r->where, n, j + 1, i + 1);
    if (!our) {
      r->col_kind[i] = COL_IGNORED;
      continue;
    }
    int kind, known;
    UIH_FORWARD(kind_of(r, our, n, &kind, &known, err));
    if (kind == COL_GROUP && r->fixed)
      return uih_error_set(err, UIH_ERR_PARSE, "%s: column '%s' is the group, but every event's group is '%s' (--group)",
                           r->where, n, r->fixed->group->name);
    r->col_kind[i] = kind;
    if (kind) {
      seen[kind + 3] = 1;
      continue;
    }
    if (!known && r->jsonl && !r->ours.n) { /* (no group has it: cannot be) */
      r->col_kind[i] = COL_IGNORED;
      continue;
    }
    UIH_RETURN_IF(!known && r->ours.n, err, UIH_ERR_PARSE,
                  "%s: the map gives '%s' column '%s', but '%s' is not an active trait of any group of the schema",
                  r->where, our, n, our);
    UIH_RETURN_IF(!known, err, UIH_ERR_PARSE, "%s: column '%s' is not an active trait of any group of the schema",
                  r->where, n);
  }
  /* Every column the map names is there. */
  for (uint32_t m = 0; !r->jsonl && m < r->theirs.n; m++) {
    int found = 0;
    for (uint32_t i = 0; i < r->ncols; i++) found |= !strcmp(r->col_names[i], r->theirs.v[m]);
    UIH_RETURN_IF(!found, err, UIH_ERR_PARSE, "%s: the map gives '%s' column '%s', which the %s does not have",
                  r->where, r->ours.v[m], r->theirs.v[m], r->columns.n ? "--columns list" : "header");
  }
  static const char *required[] = {"user_id", "group", "ts"};
  for (int k = 0; k < 3; k++) {
    if (seen[k] || (k == 1 && r->fixed)) continue;
    UIH_RETURN_IF(r->ours.n, err, UIH_ERR_PARSE,
                  "%s: the map gives no column for '%s' (it needs user_id, ts and, without a fixed group, group)",
                  r->where, required[k]);
    return uih_error_set(err, UIH_ERR_PARSE, "%s: the %s has no '%s' column (expected user_id,%sts,<traits...>)",
                         r->where, r->columns.n ? "--columns list" : "header", required[k], r->fixed ? "" : "group,");
  }
  for (uint32_t g = 0; g < r->ngroups; g++) {
    group_map *m = &r->groups[g];
    m->column = malloc(r->ncols * sizeof *m->column);
    UIH_RETURN_IF(!m->column, err, UIH_ERR_NO_MEMORY, "%s: out of memory", r->name);
    for (uint32_t i = 0; i < r->ncols; i++) {
      const char *our = r->col_kind[i] == 0 ? (r->jsonl && r->ours.n ? r->ours.v[i] : ours_of(r, r->col_names[i])) : NULL;
      const uih_trait *t = r->col_kind[i] == COL_TS ? m->group->ts
                           : r->col_kind[i] == 0    ? uih_group_trait_by_name(m->group, our)
                                                    : NULL;
      m->column[i] = t ? uih_batch_column_index(m->row, t->id) : -1;
    }
  }
  return UIH_OK;
}

int uih_csv_open_stream(FILE *f, const char *name, const uih_schema *schema,
                        uih_csv_reader **out, uih_error *err) {
  return uih_csv_open_layout(f, name, schema, NULL, out, err);
}

/* The layout's options into the reader. */
static int take_layout(uih_csv_reader *r, const uih_input_layout *layout, uih_error *err) {
  static const uih_input_layout none = {NULL, NULL, NULL, NULL, NULL};
  const uih_input_layout *l = layout ? layout : &none;
  if (l->format && strcmp(l->format, "csv") && strcmp(l->format, "jsonl"))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s: format '%s': expected csv or jsonl", r->name, l->format);
  r->jsonl = l->format ? !strcmp(l->format, "jsonl") : uih_layout_is_jsonl(r->name);
  if (l->delimiter) {
    const size_t n = strlen(l->delimiter);
    UIH_RETURN_IF(n == 0 || n > 4 || strpbrk(l->delimiter, "\"\r\n"), err, UIH_ERR_INVALID_ARGUMENT,
                  "%s: delimiter '%s': expected 1 to 4 bytes, no quote or line break", r->name, l->delimiter);
    memcpy(r->delim, l->delimiter, n + 1);
    csv_set_delim(&r->parser, (unsigned char)(n > 1 ? 0x1f : r->delim[0]));
  }
  if (l->group) {
    const uih_group *g = uih_schema_group_by_name(r->schema, l->group);
    UIH_RETURN_IF(!g, err, UIH_ERR_INVALID_ARGUMENT, "%s: group '%s': the schema has no such group", r->name, l->group);
    for (uint32_t k = 0; k < r->ngroups; k++)
      if (r->groups[k].group == g) r->fixed = &r->groups[k];
  }
  if (l->map) UIH_FORWARD(uih_layout_map(l->map, "map", &r->ours, &r->theirs, err));
  if (l->columns) {
    UIH_RETURN_IF(r->jsonl, err, UIH_ERR_INVALID_ARGUMENT, "%s: columns: JSON Lines name their fields", r->name);
    UIH_FORWARD(uih_layout_columns(l->columns, "columns", &r->columns, err));
  }
  return UIH_OK;
}

int uih_csv_open_layout(FILE *f, const char *name, const uih_schema *schema, const uih_input_layout *layout,
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
  if (rc == UIH_OK) rc = take_layout(r, layout, err);
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
  return uih_csv_open_path(path, schema, NULL, out, err);
}

int uih_csv_open_path(const char *path, const uih_schema *schema, const uih_input_layout *layout,
                      uih_csv_reader **out, uih_error *err) {
  UIH_RETURN_IF(path == NULL || out == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "csv_open: NULL argument");
  int is_stdin = !strcmp(path, "-");
  FILE *f = is_stdin ? stdin : fopen(path, "r");
  UIH_RETURN_IF(f == NULL, err, UIH_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  int rc = uih_csv_open_layout(f, is_stdin ? "stdin" : path, schema, layout, out, err);
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
  free(r->plain);
  if (r->tok) json_tokener_free(r->tok);
  uih_names_free(&r->ours);
  uih_names_free(&r->theirs);
  uih_names_free(&r->columns);
  free(r->groups);
  free(r->text);
  free(r->offsets);
  free(r->fields);
  free(r);
}

/* ---- values ---------------------------------------------------------------- */

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
  group_map *m = r->fixed;
  for (uint32_t i = 0; i < r->ncols; i++) {
    const char *s = field(r, i);
    if (r->col_kind[i] == COL_USER) {
      const uih_input spelling = uih_schema_user_ids(r->schema);
      const char *want = uih_input_user(spelling, s, user_id);
      UIH_RETURN_IF(want, err, UIH_ERR_PARSE, "%s:%" PRIu64 ": column '%s': expected %s, got '%s'", r->name,
                    r->record_line, r->col_names[i], want, s);
      if (spelling == UIH_INPUT_STRING) UIH_FORWARD(check_id(r, r->col_names[i], s, *user_id, err));
    } else if (r->col_kind[i] == COL_GROUP) {
      if (r->last && strcmp(r->last->group->name, s) == 0) { /* the group of the row before, mostly */
        m = r->last;
        continue;
      }
      const uih_group *g = uih_schema_group_by_name(r->schema, s);
      uint64_t id;
      if (!g && uih_input_u64(s, &id) && id <= UINT16_MAX) g = uih_schema_group_by_id(r->schema, (uint16_t)id);
      UIH_RETURN_IF(!g, err, UIH_ERR_PARSE,
                    "%s:%" PRIu64 ": column '%s': expected a group name or id of the schema, got '%s'",
                    r->name, r->record_line, r->col_names[i], s);
      for (uint32_t k = 0; k < r->ngroups; k++)
        if (r->groups[k].group == g) m = &r->groups[k];
      r->last = m;
    }
  }
  uih_batch *row = m->row;
  uih_batch_clear(row);
  uint32_t at;
  UIH_FORWARD(uih_batch_append(row, &at, err));
  for (uint32_t i = 0; i < r->ncols; i++) {
    if (r->col_kind[i] == COL_USER || r->col_kind[i] == COL_GROUP || r->col_kind[i] == COL_IGNORED) continue;
    const char *s = field(r, i);
    int c = m->column[i];
    if (*s == '\0') {
      UIH_RETURN_IF(r->col_kind[i] == COL_TS, err, UIH_ERR_PARSE,
                    "%s:%" PRIu64 ": column '%s': missing (every event needs its timestamp)",
                    r->name, r->record_line, r->col_names[i]);
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
    uih_type_store(row->columns[c].values, t->type, at, bits); /* uih_column_set_bits, inline */
    uih_column_mark(&row->columns[c], at);
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
