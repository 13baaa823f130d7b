/* uih snapshot, uih materialize, uih log show — inference snapshots logged
 * as records, rebuilt at training time (uih/store.h, uih/materialize.h,
 * uih/snapshot.h). */
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

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "NAME:N[:TRAIT+TRAIT...]" against the schema: the group, its length and
 * its traits (none: every trait). */
static int parse_group_arg(const uih_schema *schema, const char *arg, uint16_t *group, uint32_t *max, uint16_t *traits,
                           uint32_t *ntraits) {
  char buf[512];
  if (strlen(arg) >= sizeof buf) return cli_fail(CLI_USAGE, "'%s' is too long", arg);
  strcpy(buf, arg);
  char *len = strchr(buf, ':');
  if (!len) return cli_fail(CLI_USAGE, "'%s': expected GROUP:LENGTH[:TRAIT+TRAIT...]", arg);
  *len++ = '\0';
  char *list = strchr(len, ':');
  if (list) *list++ = '\0';
  const uih_group *g = uih_schema_group_by_name(schema, buf);
  if (!g) return cli_fail(CLI_FAIL, "'%s': the store's schema has no group '%s'", arg, buf);
  uint64_t n;
  if (!cli_parse_u64("length", len, &n)) return CLI_USAGE;
  if (n == 0 || n > UIH_STRIPE_EVENTS_MAX) return cli_fail(CLI_USAGE, "'%s': length %s, expected 1..%d", arg, len, UIH_STRIPE_EVENTS_MAX);
  *group = g->id;
  *max = (uint32_t)n;
  if (ntraits) *ntraits = 0;
  if (list && !ntraits) return cli_fail(CLI_USAGE, "'%s': traits are chosen at materialization, not here", arg);
  if (!ntraits) return CLI_OK;
  if (!list) { /* every trait, as CSV has them: ts first */
    traits[(*ntraits)++] = g->ts->id;
    for (uint32_t t = 0; t < g->ntraits && *ntraits < UIH_PROJECTION_TRAITS_MAX; t++)
      if (uih_trait_active(&g->traits[t]) && &g->traits[t] != g->ts) traits[(*ntraits)++] = g->traits[t].id;
    return CLI_OK;
  }
  for (char *name = strtok(list, "+"); name; name = strtok(NULL, "+")) {
    const uih_trait *t = !strcmp(name, UIH_TRAIT_ARRIVAL_NAME) ? uih_group_trait_by_id(g, UIH_TRAIT_ARRIVAL)
                         : !strcmp(name, "ts")                 ? g->ts /* as CSV names it */
                                                               : uih_group_trait_by_name(g, name);
    if (!t) return cli_fail(CLI_FAIL, "'%s': group '%s' has no trait '%s'", arg, g->name, name);
    if (*ntraits == UIH_PROJECTION_TRAITS_MAX) return cli_fail(CLI_USAGE, "'%s': more than %d traits", arg, UIH_PROJECTION_TRAITS_MAX);
    traits[(*ntraits)++] = t->id;
  }
  return CLI_OK;
}

/* ---- uih snapshot ------------------------------------------------------------------- */

static const char kSnapshotUsage[] =
    "usage: uih snapshot --store DIR --spec GROUP:LENGTH [--spec ...] --log FILE [--print] [REQUESTS]\n"
    "  REQUESTS   CSV with the header user_id,request_ts (stdin without it): one snapshot per line,\n"
    "             its record appended to the log FILE; --print writes the sequences as CSV";

/* One request line: "user,ts". Returns 1, 0 at the end, -1 (printed) on a bad line. */
static int next_request(FILE *in, const char *name, uint64_t *line, uint64_t *user, int64_t *ts) {
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
    char *comma = strchr(buf, ',');
    if (!comma) return cli_fail(CLI_FAIL, "%s:%" PRIu64 ": expected user_id,request_ts", name, *line), -1;
    *comma = '\0';
    char what[64];
    snprintf(what, sizeof what, "%s:%" PRIu64 ": user_id", name, *line);
    if (!cli_parse_u64(what, buf, user)) return -1;
    snprintf(what, sizeof what, "%s:%" PRIu64 ": request_ts", name, *line);
    if (!cli_parse_i64(what, comma + 1, ts)) return -1;
    return 1;
  }
}

int cmd_snapshot(int argc, char **argv) {
  const char *dir = NULL, *log_path = NULL, *input = NULL;
  const char *specs[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t nspecs = 0;
  int print = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--print")) print = 1;
    else if (a[0] != '-' || !strcmp(a, "-")) {
      if (input) return cli_fail(CLI_USAGE, "one REQUESTS file\n%s", kSnapshotUsage);
      input = a;
    } else if (i + 1 >= argc) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, kSnapshotUsage);
    else if (!strcmp(a, "--store")) dir = argv[++i];
    else if (!strcmp(a, "--log")) log_path = argv[++i];
    else if (!strcmp(a, "--spec") && nspecs < UIH_SNAPSHOT_GROUPS_MAX) specs[nspecs++] = argv[++i];
    else return cli_fail(CLI_USAGE, "bad option %s\n%s", a, kSnapshotUsage);
  }
  if (!dir || !log_path || nspecs == 0) return cli_fail(CLI_USAGE, "%s", kSnapshotUsage);
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.read_only = 1;
  uih_error err = {0};
  uih_store *s = NULL;
  if (uih_store_open(dir, &so, &s, &err) != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  uih_snapshot_spec spec = {0};
  int rc = CLI_OK;
  for (uint32_t i = 0; i < nspecs && rc == CLI_OK; i++) {
    rc = parse_group_arg(uih_store_schema(s), specs[i], &spec.groups[i].group, &spec.groups[i].max_length, NULL, NULL);
    spec.ngroups++;
  }
  FILE *in = input && strcmp(input, "-") ? fopen(input, "r") : stdin;
  const char *in_name = input && strcmp(input, "-") ? input : "<stdin>";
  if (rc == CLI_OK && !in) rc = cli_fail(CLI_FAIL, "%s: %s", input, strerror(errno));
  FILE *log = rc == CLI_OK ? fopen(log_path, "ab") : NULL;
  if (rc == CLI_OK && !log) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
  uih_snapshotter *sn = NULL;
  if (rc == CLI_OK && uih_snapshotter_create(s, &sn, &err) != UIH_OK) rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  double *lat = NULL;
  size_t nlat = 0, cap = 0;
  uint64_t line = 0, bytes = 0, events = 0;
  int printed_header[UIH_SNAPSHOT_GROUPS_MAX] = {0};
  while (rc == CLI_OK) {
    uint64_t user;
    int64_t ts;
    int got = next_request(in, in_name, &line, &user, &ts);
    if (got < 0) rc = CLI_FAIL;
    if (got <= 0) break;
    const uih_batch *const *seqs;
    const uint8_t *rec;
    size_t len;
    double t0 = now();
    if (uih_snapshot(sn, user, ts, &spec, &seqs, &rec, &len, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s:%" PRIu64 ": %s", in_name, line, uih_error_message(&err));
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
    if (uih_snapshot_log_append(log, rec, len, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s: %s", log_path, uih_error_message(&err));
      break;
    }
    bytes += len;
    for (uint32_t g = 0; g < spec.ngroups; g++) {
      events += seqs[g]->count;
      if (!print) continue;
      if (!printed_header[g]) {
        printf("request_ts,");
        uih_csv_write_header(stdout, seqs[g], &err);
        printed_header[g] = 1;
      }
      for (uint32_t r = 0; r < seqs[g]->count; r++) {
        printf("%" PRId64 ",", ts);
        uih_csv_write_row(stdout, user, seqs[g], r, &err);
      }
    }
  }
  if (log && fclose(log) != 0 && rc == CLI_OK) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
  if (in && in != stdin) fclose(in);
  if (rc == CLI_OK && nlat) {
    qsort(lat, nlat, sizeof *lat, cmp_double);
    fprintf(stderr,
            "uih snapshot: %zu records appended to %s, %.1f bytes each (%" PRIu64 " events in the sequences);"
            " latency p50 %.1f us, p99 %.1f us\n",
            nlat, log_path, (double)bytes / (double)nlat, events, lat[nlat / 2] * 1e6,
            lat[(size_t)((double)(nlat - 1) * 0.99)] * 1e6);
  }
  free(lat);
  uih_snapshotter_free(sn);
  uih_store_close(s);
  return rc;
}

/* ---- uih log show -------------------------------------------------------------------- */

int cmd_log(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[0], "show") != 0) return cli_fail(CLI_USAGE, "usage: uih log show FILE");
  FILE *f = fopen(argv[1], "rb");
  if (!f) return cli_fail(CLI_FAIL, "%s: %s", argv[1], strerror(errno));
  uih_error err = {0};
  uih_snapshot_log *l = NULL;
  int rc = uih_snapshot_log_open(f, argv[1], &l, &err) == UIH_OK ? CLI_OK : cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  for (uint64_t i = 0; rc == CLI_OK; i++) {
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    if (uih_snapshot_log_next(l, &rec, &len, &off, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    if (!rec) break;
    uih_snapshot_record r;
    if (uih_snapshot_record_decode(rec, len, &r, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s: record %" PRIu64 " at byte %" PRIu64 ": %s", argv[1], i, off, uih_error_message(&err));
      break;
    }
    char text[4096];
    uih_snapshot_record_format(&r, text, sizeof text);
    printf("%" PRIu64 " @%" PRIu64 " (%zu bytes): %s\n", i, off, len, text);
  }
  uih_snapshot_log_close(l);
  fclose(f);
  return rc;
}

/* ---- uih materialize ------------------------------------------------------------------ */

static const char kMaterializeUsage[] =
    "usage: uih materialize --store DIR --log FILE --project GROUP:LENGTH[:TRAIT+TRAIT...] [--project ...]\n"
    "                       [--on-mismatch fail|skip|flag] [--batch N] [--quiet]\n"
    "  the sequences each logged record's model saw, projected, as CSV on stdout:\n"
    "  record,user_id,group,<traits> (one line per event); a summary on stderr";

static void print_value(const uih_mat_column *c, const uih_trait *t, uint64_t row) {
  if (!c->present[row]) return;
  const uint8_t *p = (const uint8_t *)c->values + row * uih_type_width((uih_type)c->type);
  switch ((uih_type)c->type) {
    case UIH_TYPE_TIMESTAMP:
    case UIH_TYPE_INT64: {
      int64_t v;
      memcpy(&v, p, 8);
      printf("%" PRId64, v);
      break;
    }
    case UIH_TYPE_ID: {
      uint64_t v;
      memcpy(&v, p, 8);
      printf("%" PRIu64, v);
      break;
    }
    case UIH_TYPE_FLOAT32: {
      float v;
      memcpy(&v, p, 4);
      printf("%.9g", (double)v);
      break;
    }
    case UIH_TYPE_CATEGORY: {
      uint32_t v;
      memcpy(&v, p, 4);
      if (t && v < t->ncategories) printf("%s", t->categories[v]);
      else printf("%" PRIu32, v);
      break;
    }
    case UIH_TYPE_UINT32: {
      uint32_t v;
      memcpy(&v, p, 4);
      printf("%" PRIu32, v);
      break;
    }
    default: printf("%u", p[0]); break;
  }
}

typedef struct batch_run {
  uint8_t **recs;
  size_t *lens;
  size_t n, cap;
} batch_run;

static int flush_batch(uih_store *s, const uih_projection *p, batch_run *b, uint64_t first, int quiet,
                       uih_materialize_stats *total, uih_error *err) {
  if (b->n == 0) return UIH_OK;
  uih_materialized *m = NULL;
  uih_materialize_stats st;
  int rc = uih_materialize(s, (const uint8_t *const *)b->recs, b->lens, b->n, p, &m, &st, err);
  if (rc != UIH_OK) return rc;
  total->records += st.records;
  total->users += st.users;
  total->mismatches += st.mismatches;
  total->unreadable += st.unreadable;
  total->events += st.events;
  total->stripes_read += st.stripes_read;
  total->bytes_read += st.bytes_read;
  const uih_schema *schema = uih_store_schema(s);
  const uint8_t *flags = uih_materialized_flags(m);
  for (uint32_t gi = 0; !quiet && gi < p->ngroups; gi++) {
    const uih_mat_group *g = uih_materialized_group(m, gi);
    const uih_group *sg = uih_schema_group_by_id(schema, g->group);
    for (size_t i = 0; i < b->n; i++) {
      uih_snapshot_record r;
      uint64_t user = 0;
      if (!(flags[i] & UIH_RECORD_UNREADABLE) && uih_snapshot_record_decode(b->recs[i], b->lens[i], &r, NULL) == UIH_OK)
        user = r.user_id;
      for (uint64_t row = g->offsets[i]; row < g->offsets[i] + g->lengths[i]; row++) {
        printf("%" PRIu64 ",%" PRIu64 ",%s", first + i, user, sg->name);
        for (uint32_t c = 0; c < g->ncolumns; c++) {
          putchar(',');
          print_value(&g->columns[c], uih_group_trait_by_id(sg, g->columns[c].trait), row);
        }
        putchar('\n');
      }
    }
  }
  for (size_t i = 0; i < b->n; i++)
    if (flags[i] & (UIH_RECORD_MISMATCH | UIH_RECORD_UNREADABLE))
      fprintf(stderr, "uih materialize: record %" PRIu64 ": %s\n", first + i,
              flags[i] & UIH_RECORD_UNREADABLE ? "unreadable" : "does not match the store (flagged)");
  uih_materialized_free(m);
  for (size_t i = 0; i < b->n; i++) free(b->recs[i]);
  b->n = 0;
  return UIH_OK;
}

int cmd_materialize(int argc, char **argv) {
  const char *dir = NULL, *log_path = NULL, *policy = "fail";
  const char *projs[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t nproj = 0;
  uint64_t batch = 256;
  int quiet = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quiet")) {
      quiet = 1;
      continue;
    }
    if (i + 1 >= argc) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, kMaterializeUsage);
    const char *v = argv[++i];
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--log")) log_path = v;
    else if (!strcmp(a, "--project") && nproj < UIH_SNAPSHOT_GROUPS_MAX) projs[nproj++] = v;
    else if (!strcmp(a, "--on-mismatch")) policy = v;
    else if (!strcmp(a, "--batch") && cli_parse_u64(a, v, &batch) && batch >= 1 && batch <= 1000000) continue;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, kMaterializeUsage);
  }
  if (!dir || !log_path || nproj == 0) return cli_fail(CLI_USAGE, "%s", kMaterializeUsage);
  uih_projection p = {0};
  if (!strcmp(policy, "fail")) p.on_mismatch = UIH_MISMATCH_FAIL;
  else if (!strcmp(policy, "skip")) p.on_mismatch = UIH_MISMATCH_SKIP;
  else if (!strcmp(policy, "flag")) p.on_mismatch = UIH_MISMATCH_FLAG;
  else return cli_fail(CLI_USAGE, "--on-mismatch %s: expected fail, skip or flag", policy);
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.read_only = 1;
  uih_error err = {0};
  uih_store *s = NULL;
  if (uih_store_open(dir, &so, &s, &err) != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  int rc = CLI_OK;
  for (uint32_t i = 0; i < nproj && rc == CLI_OK; i++) {
    uih_projection_group *g = &p.groups[i];
    rc = parse_group_arg(uih_store_schema(s), projs[i], &g->group, &g->max_length, g->traits, &g->ntraits);
    p.ngroups++;
  }
  FILE *f = rc == CLI_OK ? fopen(log_path, "rb") : NULL;
  if (rc == CLI_OK && !f) rc = cli_fail(CLI_FAIL, "%s: %s", log_path, strerror(errno));
  uih_snapshot_log *l = NULL;
  if (rc == CLI_OK && uih_snapshot_log_open(f, log_path, &l, &err) != UIH_OK) rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  if (rc == CLI_OK && !quiet) {
    const uih_schema *schema = uih_store_schema(s);
    for (uint32_t gi = 0; gi < p.ngroups; gi++) {
      const uih_group *g = uih_schema_group_by_id(schema, p.groups[gi].group);
      printf("%srecord,user_id,group", gi ? "# " : "");
      for (uint32_t t = 0; t < p.groups[gi].ntraits; t++) {
        const uih_trait *tr = uih_group_trait_by_id(g, p.groups[gi].traits[t]);
        printf(",%s", tr->id == UIH_TRAIT_ARRIVAL ? UIH_TRAIT_ARRIVAL_NAME : tr == g->ts ? "ts" : tr->name);
      }
      printf("\n");
    }
  }
  batch_run b = {0};
  b.cap = (size_t)batch;
  b.recs = calloc(b.cap, sizeof *b.recs);
  b.lens = calloc(b.cap, sizeof *b.lens);
  if (rc == CLI_OK && (!b.recs || !b.lens)) rc = cli_fail(CLI_FAIL, "out of memory");
  uih_materialize_stats total = {0};
  uint64_t first = 0;
  double t0 = now();
  while (rc == CLI_OK) {
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    if (uih_snapshot_log_next(l, &rec, &len, &off, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    if (rec) {
      b.recs[b.n] = malloc(len);
      if (!b.recs[b.n]) {
        rc = cli_fail(CLI_FAIL, "out of memory");
        break;
      }
      memcpy(b.recs[b.n], rec, len);
      b.lens[b.n++] = len;
    }
    if (b.n == b.cap || (!rec && b.n)) {
      size_t n = b.n;
      if (flush_batch(s, &p, &b, first, quiet, &total, &err) != UIH_OK) {
        rc = cli_fail(CLI_FAIL, "%s (records %" PRIu64 "..%" PRIu64 " of the log)", uih_error_message(&err), first,
                      first + n - 1);
        break;
      }
      first += n;
    }
    if (!rec) break;
  }
  double t = now() - t0;
  for (size_t i = 0; i < b.n; i++) free(b.recs[i]);
  free(b.recs);
  free(b.lens);
  uih_snapshot_log_close(l);
  if (f) fclose(f);
  if (rc == CLI_OK)
    fprintf(stderr,
            "uih materialize: %" PRIu64 " records of %" PRIu64 " user batches, %" PRIu64 " events, %" PRIu64
            " mismatched, %" PRIu64 " unreadable; %" PRIu64 " stripes decoded, %.1f KB read; %.0f records/s\n",
            total.records, total.users, total.events, total.mismatches, total.unreadable, total.stripes_read,
            (double)total.bytes_read / 1e3, t > 0 ? (double)total.records / t : 0.0);
  uih_store_close(s);
  return rc;
}
