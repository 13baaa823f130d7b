/* uih append — append events from loader-input CSV (uih/csv.h) to a
 * mutable store (uih/mutable.h), or to a store's mutable tier, each event
 * to its user's shard (uih/store.h). Consecutive events of one (user, group)
 * become one operand; every --write-events events are one atomic write.
 * Appends are idempotent, so after an error the same input can be fed
 * again once fixed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "uih/csv.h"
#include "uih/key.h"
#include "uih/mutable.h"
#include "uih/store.h"

const char cli_usage_append[] =
    "usage: uih append --schema FILE --db DIR [--sync] [--write-events N]\n"
    "                  [--max-events N] [--max-age T] [--progress N] [FILE...]\n"
    "       uih append --store DIR [--sync] [--write-events N] [--progress N] [LAYOUT] [FILE...]\n"
    "  FILE... CSV files (user_id,group,ts,<traits>) or JSON Lines, '-' or none for stdin\n"
    CLI_USAGE_LAYOUT;

/* Events per operand at most: operands are merged anyway; this bounds the
 * memory of the pending write. */
#define kOperandEvents 256u

typedef struct pending {
  uint64_t *users;
  uih_batch **batches; /* batches[i] goes to users[i] */
  size_t n, cap;
  uint64_t events;
} pending;

typedef struct totals {
  uint64_t events, operands, writes;
} totals;

static int flush_pending(uih_mutable *m, pending *p, unsigned flags, totals *t, uih_error *err) {
  if (p->n == 0) return UIH_OK;
  int rc = uih_mutable_append_many(m, p->users, (const uih_batch *const *)p->batches, p->n, flags,
                                   err);
  if (rc != UIH_OK) return rc;
  t->events += p->events;
  t->operands += p->n;
  t->writes++;
  for (size_t i = 0; i < p->n; i++) uih_batch_clear(p->batches[i]);
  p->n = 0;
  p->events = 0;
  return UIH_OK;
}

/* Adds `ev` (one event) for `user` to the pending write: to the last
 * operand if it is the same (user, group) and has room, else to a new one.
 * Batches are kept across writes and reused. */
static int add_event(pending *p, uint64_t user, const uih_batch *ev, uih_error *err) {
  uih_batch *b = p->n ? p->batches[p->n - 1] : NULL;
  if (!b || p->users[p->n - 1] != user || b->group != ev->group || b->count == b->capacity) {
    if (p->n == p->cap) {
      size_t cap = p->cap ? p->cap * 2 : 64;
      uint64_t *u = realloc(p->users, cap * sizeof *u);
      if (u) p->users = u;
      uih_batch **bs = u ? realloc(p->batches, cap * sizeof *bs) : NULL;
      if (!bs) return uih_error_set(err, UIH_ERR_NO_MEMORY, "append: out of memory");
      memset(bs + p->cap, 0, (cap - p->cap) * sizeof *bs);
      p->batches = bs;
      p->cap = cap;
    }
    b = p->batches[p->n];
    if (b && b->group != ev->group) {
      uih_batch_free(b);
      b = p->batches[p->n] = NULL;
    }
    if (!b) {
      int rc = uih_batch_create(ev->group, kOperandEvents, NULL, 0, &b, err);
      if (rc != UIH_OK) return rc;
      p->batches[p->n] = b;
    }
    p->users[p->n++] = user;
  }
  int rc = uih_batch_copy_row(b, ev, 0, err);
  if (rc != UIH_OK) return rc;
  p->events++;
  return UIH_OK;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_append(int argc, char **argv) {
  const char *schema_path = NULL, *db_path = NULL, *store_path = NULL;
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  unsigned flags = 0;
  uint64_t write_events = 10000, progress = 1000000;
  uih_input_layout layout = {NULL, NULL, NULL, NULL, NULL};
  char *map_text = NULL; /* a --map file's */
  int taken;
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  size_t nfiles = 0;
  if (!files) return cli_fail(CLI_FAIL, "out of memory");
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    uint64_t u;
    int64_t s;
    if (!strcmp(a, "--sync")) {
      flags |= UIH_APPEND_SYNC;
      continue;
    }
    if (a[0] != '-' || !strcmp(a, "-")) {
      files[nfiles++] = a;
      continue;
    }
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      free(files);
      free(map_text);
      return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_append);
    }
    i++;
    if (!strcmp(a, "--schema")) schema_path = v;
    else if (!strcmp(a, "--db")) db_path = v;
    else if (!strcmp(a, "--store")) store_path = v;
    else if (!strcmp(a, "--write-events") && cli_parse_u64(a, v, &u) && u > 0) write_events = u;
    else if (!strcmp(a, "--progress") && cli_parse_u64(a, v, &u)) progress = u;
    else if (!strcmp(a, "--max-events") && cli_parse_u64(a, v, &u) && u <= UINT32_MAX) o.max_events = (uint32_t)u;
    else if (!strcmp(a, "--max-age") && cli_parse_i64(a, v, &s) && s >= 0) o.max_age = s;
    else if ((taken = cli_layout_arg(a, v, &layout, &map_text)) != 0) {
      if (taken < 0) {
        free(files);
        free(map_text);
        return CLI_USAGE;
      }
    } else {
      free(files);
      free(map_text);
      return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_append);
    }
  }
  if (store_path ? (schema_path || db_path || o.max_events || o.max_age) : (!schema_path || !db_path)) {
    free(files);
    free(map_text);
    return cli_fail(CLI_USAGE, "%s\n  (--store takes the store's schema and options; --db needs --schema)", cli_usage_append);
  }
  if (nfiles == 0) files[nfiles++] = "-";

  uih_error err = {0};
  uih_schema *schema = NULL; /* --db: loaded here; --store: the store's */
  uih_store *store = NULL;
  uih_mutable *m = NULL, **shards = NULL; /* shards[i]: shard i's mutable tier */
  uint32_t nshards = 1;
  uih_csv_reader **readers = calloc(nfiles, sizeof *readers);
  uih_id_check *ids = NULL;
  pending *ps = NULL; /* one per shard */
  uint64_t held = 0;  /* events pending over all shards */
  totals t = {0};
  int rc = CLI_FAIL;
  double start = now_s();
  uint64_t next_progress = progress;
  if (!readers) {
    cli_fail(CLI_FAIL, "out of memory");
    goto done;
  }
  /* Every input opened and its header checked before the store is opened
   * (or created): a wrong path or header leaves nothing behind. */
  int ok;
  const uih_schema *use = NULL;
  if (store_path) { /* the store's schema is needed to read the inputs: open it first */
    uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
    so.role = UIH_STORE_ROLE_SERVE; /* the mutable tiers alone: a load may run meanwhile */
    so.follow_ms = 0;
    ok = uih_store_open(store_path, &so, &store, &err) == UIH_OK;
    if (ok) use = uih_store_schema(store), nshards = uih_store_shards(store);
  } else {
    ok = uih_schema_load(schema_path, &schema, &err) == UIH_OK;
    use = schema;
  }
  /* Two different strings with one id are refused, as a load refuses them. */
  if (ok) ok = uih_id_check_create(&ids, &err) == UIH_OK;
  for (size_t f = 0; ok && f < nfiles; f++) {
    ok = uih_csv_open_path(files[f], use, &layout, &readers[f], &err) == UIH_OK;
    if (ok) uih_csv_check_ids(readers[f], ids);
  }
  if (ok && !store_path) ok = uih_mutable_open(db_path, schema, &o, &m, &err) == UIH_OK;
  if (!ok) {
    cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    goto done;
  }
  shards = calloc(nshards, sizeof *shards);
  ps = calloc(nshards, sizeof *ps);
  if (!shards || !ps) {
    cli_fail(CLI_FAIL, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < nshards; i++) {
    shards[i] = m;
    if (store && uih_store_mutable(store, i, &shards[i], &err) != UIH_OK) {
      cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      goto done;
    }
  }
  for (size_t f = 0; f < nfiles; f++) {
    uih_csv_reader *r = readers[f];
    for (;;) {
      uint64_t user;
      const uih_batch *ev;
      if (uih_csv_next(r, &user, &ev, &err) != UIH_OK) goto failed;
      if (!ev) break;
      if (add_event(&ps[uih_shard_of(user, nshards)], user, ev, &err) != UIH_OK) goto failed;
      if (++held >= write_events) {
        for (uint32_t i = 0; i < nshards; i++)
          if (flush_pending(shards[i], &ps[i], flags, &t, &err) != UIH_OK) goto failed;
        held = 0;
      }
      if (progress && t.events >= next_progress) {
        fprintf(stderr, "uih append: %" PRIu64 " events\n", t.events);
        next_progress = t.events + progress;
      }
    }
    uih_csv_close(r);
    readers[f] = NULL;
  }
  for (uint32_t i = 0; i < nshards; i++)
    if (flush_pending(shards[i], &ps[i], flags, &t, &err) != UIH_OK) goto failed;
  double secs = now_s() - start;
  fprintf(stderr,
          "uih append: %" PRIu64 " events in %" PRIu64 " operands, %" PRIu64
          " writes, from %zu input%s into %s in %.2f s (%.0f events/s)\n",
          t.events, t.operands, t.writes, nfiles, nfiles == 1 ? "" : "s", store_path ? store_path : db_path, secs,
          secs > 0 ? (double)t.events / secs : 0.0);
  rc = CLI_OK;
  goto done;
failed:
  cli_fail(CLI_FAIL,
           "%s\nuih append: %" PRIu64 " events were appended before the error; appends are "
           "idempotent, so fix the input and run it again",
           uih_error_message(&err), t.events);
done:
  for (uint32_t s = 0; ps && s < nshards; s++) {
    for (size_t i = 0; i < ps[s].cap; i++) uih_batch_free(ps[s].batches ? ps[s].batches[i] : NULL);
    free(ps[s].batches);
    free(ps[s].users);
  }
  free(ps);
  free(shards);
  for (size_t f = 0; readers && f < nfiles; f++) uih_csv_close(readers[f]);
  free(readers);
  free(map_text);
  uih_id_check_free(ids);
  uih_mutable_close(m);
  uih_store_close(store);
  uih_schema_free(schema);
  free(files);
  return rc;
}
