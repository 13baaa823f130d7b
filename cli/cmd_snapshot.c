/* uih snapshot, uih materialize, uih log dump — inference snapshots logged
 * as records, rebuilt at training time (uih/store.h, uih/materialize.h,
 * uih/snapshot.h). Both commands print sequences in one CSV form,
 * record,user_id,group,ts,<traits> (record: the record's number in the
 * log), so what inference saw and what training rebuilt compare with diff. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "uih/csv.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"

#define SNAPSHOT_DEFAULT_LENGTH 1024

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "NAME[:N]" against the schema: the group and its length (`dflt` when
 * none is given). */
static int parse_group_arg(const uih_schema *schema, const char *arg, uint32_t dflt, uint16_t *group, uint32_t *max) {
  char buf[256];
  if (strlen(arg) >= sizeof buf) return cli_fail(CLI_USAGE, "--group '%s' is too long", arg);
  strcpy(buf, arg);
  char *len = strchr(buf, ':');
  if (len) *len++ = '\0';
  const uih_group *g = uih_schema_group_by_name(schema, buf);
  if (!g) return cli_fail(CLI_FAIL, "--group '%s': the store's schema has no group '%s'", arg, buf);
  uint64_t n = dflt;
  if (len && !cli_parse_u64("--group length", len, &n)) return CLI_USAGE;
  if (n == 0 || n > UIH_SNAPSHOT_LENGTH_MAX)
    return cli_fail(CLI_USAGE, "--group '%s': length %" PRIu64 ", expected 1..%u", arg, n, UIH_SNAPSHOT_LENGTH_MAX);
  *group = g->id;
  *max = (uint32_t)n;
  return CLI_OK;
}

/* The groups named by --group, or every group of the schema. */
static int parse_groups(const uih_schema *schema, const char *const *args, uint32_t nargs, uint32_t dflt,
                        uint16_t *ids, uint32_t *lengths, uint32_t *n) {
  *n = 0;
  if (nargs == 0) {
    for (uint32_t i = 0; i < uih_schema_group_count(schema) && *n < UIH_SNAPSHOT_GROUPS_MAX; i++) {
      ids[*n] = uih_schema_group_at(schema, i)->id;
      lengths[(*n)++] = dflt;
    }
    return CLI_OK;
  }
  for (uint32_t i = 0; i < nargs; i++) {
    int rc = parse_group_arg(schema, args[i], dflt, &ids[i], &lengths[i]);
    if (rc != CLI_OK) return rc;
    for (uint32_t j = 0; j < i; j++)
      if (ids[j] == ids[i]) return cli_fail(CLI_USAGE, "--group '%s' is given twice", args[i]);
    (*n)++;
  }
  return CLI_OK;
}

/* The CSV header of a group's sequences: the first group's plain, the
 * others' as comments (one file holds every group's rows). */
static int print_header(FILE *out, const uih_batch *like, int first, uih_error *err) {
  fputs(first ? "record," : "# record,", out);
  return uih_csv_write_header(out, like, err);
}

static int print_rows(FILE *out, uint64_t record, uint64_t user, const uih_batch *b, uih_error *err) {
  for (uint32_t r = 0; r < b->count; r++) {
    fprintf(out, "%" PRIu64 ",", record);
    int rc = uih_csv_write_row(out, user, b, r, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

static FILE *open_out(const char *path) {
  if (!path || !strcmp(path, "-")) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) cli_fail(CLI_FAIL, "%s: %s", path, strerror(errno));
  return f;
}

static int close_out(FILE *f, const char *path, int rc) {
  if (f == stdout) {
    if (fflush(f) != 0 && rc == CLI_OK) rc = cli_fail(CLI_FAIL, "writing stdout: %s", strerror(errno));
    return rc;
  }
  if (f && fclose(f) != 0 && rc == CLI_OK) rc = cli_fail(CLI_FAIL, "%s: %s", path, strerror(errno));
  return rc;
}

/* ---- uih snapshot ------------------------------------------------------------------- */

const char cli_usage_snapshot[] =
    "usage: uih snapshot --store DIR (--user U --ts T | --requests FILE) [--group G[:N]]...\n"
    "                    [--log FILE] [--out FILE] [--quiet]\n"
    "  the sequences a model gets for user U at request time T (or for each line user_id,request_ts\n"
    "  of FILE, - for stdin), per group the newest N events (default " "1024" "; every group without\n"
    "  --group), as CSV record,user_id,group,ts,<traits>; each snapshot's record appended to the log\n"
    "  FILE (a torn last record left by a killed writer is cut first); a latency summary on stderr.\n"
    "  U (and FILE's user_id): the user's number, or its string when the schema's user ids are strings";

/* One request line: "user,ts". Returns 1, 0 at the end, -1 (printed) on a bad line. */
static int next_request(const uih_schema *schema, FILE *in, const char *name, uint64_t *line, uint64_t *user,
                        int64_t *ts) {
  char buf[256];
  for (;;) {
    if (!fgets(buf, sizeof buf, in)) return 0;
    (*line)++;
    size_t n = strlen(buf);
    if (n && buf[n - 1] != '\n' && !feof(in)) return cli_fail(CLI_FAIL, "%s:%" PRIu64 ": line too long", name, *line), -1;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    if (n == 0) continue;
    if (*line == 1) {
      if (strcmp(buf, "user_id,request_ts") != 0)
        return cli_fail(CLI_FAIL, "%s:1: header '%s', expected 'user_id,request_ts'", name, buf), -1;
      continue;
    }
    char *comma = strrchr(buf, ','); /* the last: a string user id may hold one */
    if (!comma) return cli_fail(CLI_FAIL, "%s:%" PRIu64 ": expected user_id,request_ts", name, *line), -1;
    *comma = '\0';
    char what[64];
    snprintf(what, sizeof what, "%s:%" PRIu64 ": user_id", name, *line);
    if (!cli_parse_user(schema, what, buf, user)) return -1;
    snprintf(what, sizeof what, "%s:%" PRIu64 ": request_ts", name, *line);
    if (!cli_parse_i64(what, comma + 1, ts)) return -1;
    return 1;
  }
}

int cmd_snapshot(int argc, char **argv) {
  const char *dir = NULL, *log_path = NULL, *input = NULL, *out_path = NULL;
  const char *groups[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t ngroups = 0;
  uint64_t one_user = 0;
  const char *user_text = NULL;
  int64_t one_ts = 0;
  int quiet = 0, have_ts = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quiet")) {
      quiet = 1;
      continue;
    }
    if (i + 1 >= argc) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_snapshot);
    const char *v = argv[++i];
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--log")) log_path = v;
    else if (!strcmp(a, "--out")) out_path = v;
    else if (!strcmp(a, "--requests")) input = v;
    else if (!strcmp(a, "--user")) user_text = v;
    else if (!strcmp(a, "--ts") && cli_parse_i64(a, v, &one_ts)) have_ts = 1;
    else if (!strcmp(a, "--group") && ngroups < UIH_SNAPSHOT_GROUPS_MAX) groups[ngroups++] = v;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_snapshot);
  }
  const int have_user = user_text != NULL;
  if (!dir || (have_user != have_ts) || (have_user == (input != NULL)))
    return cli_fail(CLI_USAGE, "%s", cli_usage_snapshot);
  uih_error err = {0};
  uih_store *s = NULL;
  if (cli_open_store_read_only(dir, &s) != CLI_OK) return CLI_FAIL;
  if (have_user && !cli_parse_user(uih_store_schema(s), "--user", user_text, &one_user)) {
    uih_store_close(s);
    return CLI_USAGE;
  }
  uih_snapshot_spec spec = {0};
  uint16_t ids[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t lengths[UIH_SNAPSHOT_GROUPS_MAX];
  int rc = parse_groups(uih_store_schema(s), groups, ngroups, SNAPSHOT_DEFAULT_LENGTH, ids, lengths, &spec.ngroups);
  for (uint32_t i = 0; i < spec.ngroups; i++) {
    spec.groups[i].group = ids[i];
    spec.groups[i].max_length = lengths[i];
  }
  FILE *in = NULL;
  const char *in_name = input && strcmp(input, "-") ? input : "<stdin>";
  if (rc == CLI_OK && input) {
    in = strcmp(input, "-") ? fopen(input, "r") : stdin;
    if (!in) rc = cli_fail(CLI_FAIL, "%s: %s", input, strerror(errno));
  }
  /* The log: its records counted (the first new one's number), a torn tail cut. */
  FILE *log = NULL;
  uint64_t record = 0;
  if (rc == CLI_OK && log_path) {
    log = fopen(log_path, "a+b");
    uint64_t dropped = 0;
    if (!log) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
    else if (uih_snapshot_log_repair(log, log_path, &record, &dropped, &err) != UIH_OK)
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    else if (dropped)
      fprintf(stderr, "uih snapshot: %s: cut a torn last record (%" PRIu64 " bytes a killed writer left)\n", log_path,
              dropped);
  }
  FILE *out = rc == CLI_OK && !quiet ? open_out(out_path) : NULL;
  if (rc == CLI_OK && !quiet && !out) rc = CLI_FAIL;
  uih_snapshotter *sn = NULL;
  if (rc == CLI_OK && uih_snapshotter_create(s, &sn, &err) != UIH_OK) rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  double *lat = NULL;
  size_t nlat = 0, cap = 0;
  uint64_t line = 0, bytes = 0, events = 0;
  int headers = 0;
  while (rc == CLI_OK) {
    uint64_t user = one_user;
    int64_t ts = one_ts;
    if (in) {
      int got = next_request(uih_store_schema(s), in, in_name, &line, &user, &ts);
      if (got < 0) rc = CLI_FAIL;
      if (got <= 0) break;
    } else if (nlat == 1) {
      break;
    }
    const uih_batch *const *seqs;
    const uint8_t *rec;
    size_t len;
    double t0 = now();
    if (uih_snapshot(sn, user, ts, &spec, &seqs, &rec, &len, &err) != UIH_OK) {
      rc = in ? cli_fail(CLI_FAIL, "%s:%" PRIu64 ": %s", in_name, line, uih_error_message(&err))
              : cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    double t = now() - t0;
    if (nlat == cap) {
      cap = cap ? cap * 2 : 1024;
      double *p = realloc(lat, cap * sizeof *p);
      if (!p) {
        rc = cli_fail(CLI_FAIL, "out of memory");
        break;
      }
      lat = p;
    }
    lat[nlat++] = t;
    if (log && uih_snapshot_log_write(log, record, rec, len, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s: %s", log_path, uih_error_message(&err));
      break;
    }
    bytes += len;
    for (uint32_t g = 0; g < spec.ngroups && rc == CLI_OK; g++) {
      events += seqs[g]->count;
      if (!out) continue;
      if (!headers && print_header(out, seqs[g], g == 0, &err) != UIH_OK) rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      if (rc == CLI_OK && print_rows(out, record, user, seqs[g], &err) != UIH_OK)
        rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    }
    headers = 1;
    record++;
  }
  if (log && fclose(log) != 0 && rc == CLI_OK) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
  if (in && in != stdin) fclose(in);
  rc = close_out(out, out_path, rc);
  if (rc == CLI_OK && nlat) {
    qsort(lat, nlat, sizeof *lat, cmp_double);
    fprintf(stderr,
            "uih snapshot: %zu snapshots, records of %.1f bytes%s%s (%" PRIu64 " events in the sequences);"
            " latency p50 %.1f us, p99 %.1f us\n",
            nlat, (double)bytes / (double)nlat, log ? " appended to " : " (no --log: not kept)", log ? log_path : "",
            events, lat[nlat / 2] * 1e6, lat[(size_t)((double)(nlat - 1) * 0.99)] * 1e6);
  }
  free(lat);
  uih_snapshotter_free(sn);
  uih_store_close(s);
  return rc;
}

/* ---- uih log dump | check | seal ------------------------------------------------------- */

const char cli_usage_log[] =
    "usage: uih log dump FILE    print a snapshot log's records as text, by number\n"
    "       uih log check FILE   read it whole: its format, records, seal and every damage\n"
    "       uih log seal FILE    close it for good (rotation): a sealed log cut short is detected";

/* A log read to its end without a seal: said, since a log closed and then
 * cut at a record's end reads exactly so. */
static void note_unsealed(const char *cmd, const uih_snapshot_log *l, const char *path, uint64_t records,
                          uint64_t last) {
  if (uih_snapshot_log_version(l) < 2 || uih_snapshot_log_sealed(l)) return;
  if (records)
    fprintf(stderr, "uih %s: note: %s is not sealed: its last record is number %" PRIu64 "; if the log was closed, "
                    "anything after it was cut off\n", cmd, path, last);
  else
    fprintf(stderr, "uih %s: note: %s is not sealed and holds no record; if the log was closed, its records were cut "
                    "off\n", cmd, path);
}

/* Reads the log f whole, going on past damage: each record to `dump` as
 * text (when not NULL), each damage to stderr. Exit status: 0 when whole. */
static int read_log(FILE *f, const char *path, FILE *dump, const char *cmd) {
  uih_error err = {0};
  uih_snapshot_log *l = NULL;
  if (uih_snapshot_log_open(f, path, &l, &err) != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  char *text = NULL;
  size_t cap = 0;
  uint64_t records = 0, undecodable = 0, damages = 0, first = 0, last = 0;
  int rc = CLI_OK;
  for (;;) {
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    const int got = uih_snapshot_log_next(l, &rec, &len, &off, &err);
    if (got == UIH_ERR_CORRUPTION) {
      fprintf(stderr, "uih log %s: damaged: %s\n", cmd, uih_error_message(&err));
      damages++;
      continue;
    }
    if (got != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    if (!rec) break;
    const uint64_t number = uih_snapshot_log_number(l);
    if (!records) first = number;
    last = number;
    records++;
    uih_snapshot_record r;
    if (uih_snapshot_record_decode(rec, len, &r, &err) != UIH_OK) {
      fprintf(stderr, "uih log %s: damaged: %s: record %" PRIu64 " at byte %" PRIu64 ": %s\n", cmd, path, number, off,
              uih_error_message(&err));
      undecodable++;
      continue;
    }
    if (!dump) continue;
    size_t need = uih_snapshot_record_format(&r, NULL, 0) + 1;
    if (need > cap) {
      char *p = realloc(text, need);
      if (!p) {
        rc = cli_fail(CLI_FAIL, "out of memory");
        break;
      }
      text = p;
      cap = need;
    }
    uih_snapshot_record_format(&r, text, cap);
    fprintf(dump, "%" PRIu64 " @%" PRIu64 " (%zu bytes): %s\n", number, off, len, text);
  }
  if (rc == CLI_OK && dump) note_unsealed("log dump", l, path, records, last);
  if (rc == CLI_OK && !dump) {
    const int sealed = uih_snapshot_log_sealed(l);
    printf("%s: snapshot log format %d: %" PRIu64 " records", path, uih_snapshot_log_version(l), records - undecodable);
    if (records) printf(" (numbers %" PRIu64 "..%" PRIu64 ")", first, last);
    if (damages || undecodable)
      printf(", %" PRIu64 " damaged spans and %" PRIu64 " records that do not decode (each named above)", damages,
             undecodable);
    printf(", %s\n", sealed ? "sealed (closed whole)"
                             : "not sealed (still written to; a cut at a frame's end cannot be told from its end)");
  }
  if (rc == CLI_OK && (damages || undecodable))
    rc = cli_fail(CLI_FAIL, "%s: damaged: %" PRIu64 " damaged spans, %" PRIu64 " records that do not decode", path,
                  damages, undecodable);
  free(text);
  uih_snapshot_log_close(l);
  return rc;
}

int cmd_log(int argc, char **argv) {
  if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) return fputs(cli_usage_log, stdout), CLI_OK;
  if (argc != 2 || (strcmp(argv[0], "dump") && strcmp(argv[0], "check") && strcmp(argv[0], "seal")))
    return cli_fail(CLI_USAGE, "%s", cli_usage_log);
  const char *cmd = argv[0], *path = argv[1];
  const int seal = !strcmp(cmd, "seal");
  FILE *f = fopen(path, seal ? "r+b" : "rb");
  if (!f) return cli_fail(CLI_FAIL, "%s: %s", path, strerror(errno));
  int rc;
  if (seal) {
    uih_error err = {0};
    uint64_t records = 0;
    rc = uih_snapshot_log_seal(f, path, &records, &err) == UIH_OK
             ? (printf("%s: sealed after %" PRIu64 " records\n", path, records), CLI_OK)
             : cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  } else {
    rc = read_log(f, path, strcmp(cmd, "dump") ? NULL : stdout, cmd);
  }
  if (fclose(f) != 0 && rc == CLI_OK) rc = cli_fail(CLI_FAIL, "%s: %s", path, strerror(errno));
  return rc;
}

/* ---- uih materialize ------------------------------------------------------------------ */

const char cli_usage_materialize[] =
    "usage: uih materialize --store DIR --log FILE [--group G[:N]]... [--traits a,b]\n"
    "                       [--on-mismatch fail|skip|flag] [--out FILE] [--batch N] [--threads N] [--quiet]\n"
    "  the sequences each logged record's model saw, rebuilt: per group (every group without --group)\n"
    "  the newest N events (default: all the record has), with ts and the traits named (default: all),\n"
    "  as CSV record,user_id,group,ts,<traits> (uih snapshot's form); a summary on stderr.\n"
    "  Batches of N records (256) are rebuilt by --threads workers (1) while earlier ones print";

/* The projection's traits: the timestamp, then those named in `list`
 * ("a,b"; NULL: every active trait). */
static int parse_traits(const uih_group *g, const char *list, uih_projection_group *pg) {
  pg->ntraits = 0;
  pg->traits[pg->ntraits++] = g->ts->id;
  if (!list) {
    for (uint32_t t = 0; t < g->ntraits && pg->ntraits < UIH_PROJECTION_TRAITS_MAX; t++)
      if (uih_trait_active(&g->traits[t]) && &g->traits[t] != g->ts) pg->traits[pg->ntraits++] = g->traits[t].id;
    return CLI_OK;
  }
  char buf[1024];
  if (strlen(list) >= sizeof buf) return cli_fail(CLI_USAGE, "--traits '%s' is too long", list);
  strcpy(buf, list);
  for (char *save = NULL, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    const uih_trait *t = !strcmp(name, UIH_TRAIT_ARRIVAL_NAME) ? uih_group_trait_by_id(g, UIH_TRAIT_ARRIVAL)
                         : !strcmp(name, "ts")                 ? g->ts /* as the CSV names it */
                                                               : uih_group_trait_by_name(g, name);
    if (!t || (t->id != UIH_TRAIT_ARRIVAL && !uih_trait_active(t)))
      return cli_fail(CLI_FAIL, "--traits: group '%s' has no trait '%s'", g->name, name);
    int dup = 0;
    for (uint32_t k = 0; k < pg->ntraits; k++) dup |= pg->traits[k] == t->id;
    if (dup) continue;
    if (pg->ntraits == UIH_PROJECTION_TRAITS_MAX) return cli_fail(CLI_USAGE, "--traits: more than %d", UIH_PROJECTION_TRAITS_MAX);
    pg->traits[pg->ntraits++] = t->id;
  }
  return CLI_OK;
}

/* Record i's rows of a materialized group as a batch (the CSV writer's input). */
static int rows_of(const uih_mat_group *mg, const uih_group *g, size_t i, uih_batch **b, uih_error *err) {
  uint16_t ids[UIH_PROJECTION_TRAITS_MAX];
  for (uint32_t c = 0; c < mg->ncolumns; c++) ids[c] = mg->columns[c].trait;
  uih_batch_free(*b);
  *b = NULL;
  const uint32_t n = mg->lengths[i];
  int rc = uih_batch_create(g, n ? n : 1, ids, mg->ncolumns, b, err);
  if (rc != UIH_OK) return rc;
  for (uint32_t c = 0; n && c < mg->ncolumns; c++) {
    const uih_mat_column *mc = &mg->columns[c];
    uih_column *col = &(*b)->columns[uih_batch_column_index(*b, mc->trait)];
    const size_t w = uih_type_width((uih_type)mc->type);
    memcpy(col->values, (const uint8_t *)mc->values + mg->offsets[i] * w, (size_t)n * w);
    for (uint32_t r = 0; r < n; r++)
      if (mc->present[mg->offsets[i] + r]) uih_column_mark(col, r);
  }
  (*b)->count = n;
  return UIH_OK;
}

/* A batch submitted to the materializer: where its records are in the log,
 * and their users (for the CSV). */
typedef struct pending_batch {
  uint64_t first;
  size_t n;
  uint64_t *users;
} pending_batch;

/* The oldest submitted batch's result, printed. */
static int take_batch(uih_materializer *mz, const uih_projection *p, const uih_schema *schema, const pending_batch *pb,
                      FILE *out, int *headers, uih_materialize_stats *total, uih_error *err) {
  uih_materialized *m = NULL;
  uih_materialize_stats st;
  int rc = uih_materializer_next(mz, &m, &st, err);
  if (rc != UIH_OK) return rc;
  total->records += st.records;
  total->users += st.users;
  total->mismatches += st.mismatches;
  total->unreadable += st.unreadable;
  total->events += st.events;
  total->stripes_read += st.stripes_read;
  total->bytes_read += st.bytes_read;
  const uint8_t *flags = uih_materialized_flags(m);
  uih_batch *rows = NULL;
  for (size_t i = 0; out && i < pb->n && rc == UIH_OK; i++) {
    for (uint32_t gi = 0; gi < p->ngroups && rc == UIH_OK; gi++) {
      const uih_mat_group *g = uih_materialized_group(m, gi);
      rc = rows_of(g, uih_schema_group_by_id(schema, g->group), i, &rows, err);
      if (rc == UIH_OK && !*headers) rc = print_header(out, rows, gi == 0, err);
      if (rc == UIH_OK) rc = print_rows(out, pb->first + i, pb->users[i], rows, err);
    }
    *headers = 1;
  }
  uih_batch_free(rows);
  for (size_t i = 0; i < pb->n; i++)
    if (flags[i] & (UIH_RECORD_MISMATCH | UIH_RECORD_UNREADABLE | UIH_RECORD_OTHER_STORE))
      fprintf(stderr, "uih materialize: record %" PRIu64 " (user %" PRIu64 "): %s: %s\n", pb->first + i, pb->users[i],
              flags[i] & UIH_RECORD_UNREADABLE      ? "unreadable"
              : flags[i] & UIH_RECORD_OTHER_STORE   ? "logged against another store"
              : flags[i] & UIH_RECORD_ERASED        ? "its user was erased since (empty)"
              : p->on_mismatch == UIH_MISMATCH_SKIP ? "does not match the store (skipped)"
                                                    : "does not match the store (flagged)",
              uih_materialized_why(m, i));
  uih_materialized_free(m);
  return rc;
}

int cmd_materialize(int argc, char **argv) {
  const char *dir = NULL, *log_path = NULL, *policy = "fail", *traits = NULL, *out_path = NULL;
  const char *groups[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t ngroups = 0;
  uint64_t batch = 256, threads = 1;
  int quiet = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quiet")) {
      quiet = 1;
      continue;
    }
    if (i + 1 >= argc) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_materialize);
    const char *v = argv[++i];
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--log")) log_path = v;
    else if (!strcmp(a, "--group") && ngroups < UIH_SNAPSHOT_GROUPS_MAX) groups[ngroups++] = v;
    else if (!strcmp(a, "--traits")) traits = v;
    else if (!strcmp(a, "--out")) out_path = v;
    else if (!strcmp(a, "--on-mismatch")) policy = v;
    else if (!strcmp(a, "--batch") && cli_parse_u64(a, v, &batch) && batch >= 1 && batch <= 1000000) continue;
    else if (!strcmp(a, "--threads") && cli_parse_u64(a, v, &threads) && threads >= 1 && threads <= 64) continue;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_materialize);
  }
  if (!dir || !log_path) return cli_fail(CLI_USAGE, "%s", cli_usage_materialize);
  uih_projection p = {0};
  if (!strcmp(policy, "fail")) p.on_mismatch = UIH_MISMATCH_FAIL;
  else if (!strcmp(policy, "skip")) p.on_mismatch = UIH_MISMATCH_SKIP;
  else if (!strcmp(policy, "flag")) p.on_mismatch = UIH_MISMATCH_FLAG;
  else return cli_fail(CLI_USAGE, "--on-mismatch %s: expected fail, skip or flag", policy);
  uih_error err = {0};
  uih_store *s = NULL;
  if (cli_open_store_read_only(dir, &s) != CLI_OK) return CLI_FAIL;
  const uih_schema *schema = uih_store_schema(s);
  uint16_t ids[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t lengths[UIH_SNAPSHOT_GROUPS_MAX];
  int rc = parse_groups(schema, groups, ngroups, UIH_SNAPSHOT_LENGTH_MAX, ids, lengths, &p.ngroups);
  for (uint32_t i = 0; i < p.ngroups && rc == CLI_OK; i++) {
    p.groups[i].group = ids[i];
    p.groups[i].max_length = lengths[i];
    rc = parse_traits(uih_schema_group_by_id(schema, ids[i]), traits, &p.groups[i]);
  }
  FILE *f = rc == CLI_OK ? fopen(log_path, "rb") : NULL;
  if (rc == CLI_OK && !f) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
  uih_snapshot_log *l = NULL;
  if (rc == CLI_OK && uih_snapshot_log_open(f, log_path, &l, &err) != UIH_OK) rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  FILE *out = rc == CLI_OK && !quiet ? open_out(out_path) : NULL;
  if (rc == CLI_OK && !quiet && !out) rc = CLI_FAIL;
  /* Batches go to the materializer's workers as they fill; the oldest is
   * printed while the next ones are rebuilt (at most threads + 1 of them). */
  uih_materializer *mz = NULL;
  uih_materializer_opts mo = UIH_MATERIALIZER_OPTS_DEFAULT;
  mo.threads = (uint32_t)threads;
  if (rc == CLI_OK && uih_materializer_create(s, &p, &mo, &mz, &err) != UIH_OK)
    rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  const size_t depth = (size_t)threads + 1;
  pending_batch *pend = calloc(depth, sizeof *pend);
  const uint8_t **recs = calloc((size_t)batch, sizeof *recs);
  size_t *lens = calloc((size_t)batch, sizeof *lens);
  size_t *offs = calloc((size_t)batch, sizeof *offs);
  uint8_t *bytes = NULL; /* the filling batch's records, back to back */
  size_t nbytes = 0, cap = 0, n = 0, head = 0, npend = 0;
  for (size_t k = 0; pend && k < depth; k++) pend[k].users = calloc((size_t)batch, sizeof(uint64_t));
  int nomem = !pend || !recs || !lens || !offs;
  for (size_t k = 0; !nomem && k < depth; k++) nomem |= !pend[k].users;
  if (rc == CLI_OK && nomem) rc = cli_fail(CLI_FAIL, "out of memory");
  uih_materialize_stats total = {0};
  uint64_t first = 0, lost = 0; /* the filling batch's first record number; damaged spans of the log */
  uint64_t records = 0, last = 0;
  int headers = 0;
  double t0 = now();
  while (rc == CLI_OK) {
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    const int got = uih_snapshot_log_next(l, &rec, &len, &off, &err);
    if (got == UIH_ERR_CORRUPTION && p.on_mismatch != UIH_MISMATCH_FAIL) {
      /* the reader has moved past the damage, which names the records lost */
      fprintf(stderr, "uih materialize: lost: %s\n", uih_error_message(&err));
      lost++;
      continue;
    }
    if (got != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    const uint64_t number = rec ? uih_snapshot_log_number(l) : 0;
    if (rec) records++, last = number;
    /* A batch's records are numbered first, first + 1, ...: it goes to the
     * materializer when full, at the end, and before records lost in between. */
    const int submit_now = n && (!rec || number != first + n);
    for (int pass = 0; pass < 2 && rc == CLI_OK; pass++) {
      if (pass == 0 ? submit_now : n == batch) { /* submitted: the materializer copies the records */
        for (size_t i = 0; i < n; i++) recs[i] = bytes + offs[i];
        pending_batch *pb = &pend[(head + npend) % depth];
        pb->first = first;
        pb->n = n;
        if (uih_materializer_submit(mz, recs, lens, n, &err) != UIH_OK) {
          rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
          break;
        }
        npend++;
        n = nbytes = 0;
      }
      while (rc == CLI_OK && npend > 0 && (npend == depth || !rec)) {
        const pending_batch *pb = &pend[head];
        if (take_batch(mz, &p, schema, pb, out, &headers, &total, &err) != UIH_OK)
          rc = cli_fail(CLI_FAIL, "%s (records %" PRIu64 "..%" PRIu64 " of the log)", uih_error_message(&err),
                        pb->first, pb->first + pb->n - 1);
        head = (head + 1) % depth;
        npend--;
      }
      if (pass == 1 || !rec) break;
      /* copied: the log's buffer holds the next record after this */
      if (nbytes + len > cap) {
        size_t ncap = cap ? cap * 2 : (size_t)1 << 16;
        while (ncap < nbytes + len) ncap *= 2;
        uint8_t *nb = realloc(bytes, ncap);
        if (!nb) {
          rc = cli_fail(CLI_FAIL, "out of memory");
          break;
        }
        bytes = nb;
        cap = ncap;
      }
      memcpy(bytes + nbytes, rec, len);
      uih_snapshot_record r;
      if (n == 0) first = number;
      pend[(head + npend) % depth].users[n] = uih_snapshot_record_decode(rec, len, &r, NULL) == UIH_OK ? r.user_id : 0;
      offs[n] = nbytes;
      lens[n++] = len;
      nbytes += len;
    }
    if (!rec) break;
  }
  double t = now() - t0;
  if (rc == CLI_OK) note_unsealed("materialize", l, log_path, records, last);
  uih_materializer_free(mz);
  for (size_t k = 0; pend && k < depth; k++) free(pend[k].users);
  free(pend);
  free(recs);
  free(lens);
  free(offs);
  free(bytes);
  uih_snapshot_log_close(l);
  if (f) fclose(f);
  rc = close_out(out, out_path, rc);
  if (rc == CLI_OK)
    fprintf(stderr,
            "uih materialize: %" PRIu64 " records of %" PRIu64 " user batches, %" PRIu64 " events, %" PRIu64
            " mismatched, %" PRIu64 " unreadable, %" PRIu64 " damaged spans of the log (records lost, named above);"
            " %" PRIu64 " stripes decoded, %.1f KB read; %.0f records/s\n",
            total.records, total.users, total.events, total.mismatches, total.unreadable, lost, total.stripes_read,
            (double)total.bytes_read / 1e3, t > 0 ? (double)total.records / t : 0.0);
  uih_store_close(s);
  return rc;
}
