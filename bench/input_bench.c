/* Reading input files as published: the loader-input reader over one log
 * written three ways, side by side in one run — plain loader-input CSV
 * (the baseline), a mapped TSV with its own names, column order and an
 * extra text column, and JSON Lines with nested fields — events/s of each
 * and its ratio to plain CSV. The texts are in memory (fmemopen): this is
 * the parsing, not the disk or the decompression.
 *
 *   build/release/bench/input_bench [--events N] [--rounds R] [--seed S]
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uih/csv.h"

static const char kSchema[] =
    "{\"name\": \"b\", \"version\": 1, \"groups\": [{\"name\": \"clicks\", \"id\": 1, \"traits\": ["
    "{\"name\": \"ts\", \"id\": 1, \"type\": \"timestamp\"},"
    "{\"name\": \"item_id\", \"id\": 2, \"type\": \"id\"},"
    "{\"name\": \"event_type\", \"id\": 3, \"type\": \"category\", \"categories\": [\"view\", \"click\", \"like\"]},"
    "{\"name\": \"watch_ms\", \"id\": 4, \"type\": \"uint32\"}]}]}";

typedef struct text {
  char *p;
  size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < t->cap - t->n) {
      t->n += (size_t)k;
      return;
    }
    t->cap = t->cap ? t->cap * 2 : 1 << 20;
    t->p = realloc(t->p, t->cap);
    if (!t->p) abort();
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds to read `t` whole; exits on an error or a wrong count. */
static double read_all(const uih_schema *s, const text *t, const char *name, const uih_input_layout *l, uint64_t want) {
  FILE *f = fmemopen(t->p, t->n, "r");
  uih_csv_reader *r = NULL;
  uih_error err = {0};
  const double t0 = now();
  uint64_t n = 0;
  int rc = uih_csv_open_layout(f, name, s, l, &r, &err);
  while (rc == UIH_OK) {
    uint64_t user;
    const uih_batch *ev;
    rc = uih_csv_next(r, &user, &ev, &err);
    if (rc != UIH_OK || !ev) break;
    n++;
  }
  const double dt = now() - t0;
  uih_csv_close(r);
  fclose(f);
  if (rc != UIH_OK || n != want) {
    fprintf(stderr, "input_bench: %s: %s (%" PRIu64 " of %" PRIu64 " events)\n", name, err.msg, n, want);
    exit(1);
  }
  return dt;
}

int main(int argc, char **argv) {
  uint64_t events = 1000000, rounds = 3, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--events")) events = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--rounds")) rounds = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: input_bench [--events N] [--rounds R] [--seed S]\n");
      return 2;
    }
  }
  uih_schema *s = NULL;
  if (uih_schema_parse(kSchema, sizeof kSchema - 1, "bench", &s, NULL) != UIH_OK) return 1;
  text plain = {0}, tsv = {0}, jsonl = {0};
  static const char *kinds[] = {"view", "click", "like"};
  put(&plain, "user_id,group,ts,item_id,event_type,watch_ms\n");
  put(&tsv, "watched\ttitle\tuserId\twhen\tmovieId\tkind\n");
  uint64_t x = seed * 0x9e3779b97f4a7c15ull;
  for (uint64_t i = 0; i < events; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const uint64_t user = x % 100000, item = (x >> 17) % 10000000;
    const int64_t ts = 1700000000000 + (int64_t)i * 37;
    const char *kind = kinds[(x >> 40) % 3];
    const unsigned watch = (unsigned)((x >> 45) % 60000);
    put(&plain, "%" PRIu64 ",clicks,%" PRId64 ",%" PRIu64 ",%s,%u\n", user, ts, item, kind, watch);
    put(&tsv, "%u\tsome title %" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%s\n", watch, item % 97, user, ts, item,
        kind);
    put(&jsonl,
        "{\"user\": {\"id\": %" PRIu64 "}, \"ts\": %" PRId64 ", \"item\": {\"id\": %" PRIu64
        "}, \"kind\": \"%s\", \"watch_ms\": %u, \"device\": \"phone\"}\n",
        user, ts, item, kind, watch);
  }
  const uih_input_layout tsv_l = {NULL, NULL, "clicks",
                                  "user_id=userId,ts=when,item_id=movieId,event_type=kind,watch_ms=watched", NULL};
  const uih_input_layout json_l = {NULL, NULL, "clicks",
                                   "user_id=user.id,ts=ts,item_id=item.id,event_type=kind,watch_ms=watch_ms", NULL};
  printf("input_bench: %" PRIu64 " events, %" PRIu64 " rounds, seed %" PRIu64 "; CSV %.1f MB, TSV %.1f MB, JSONL %.1f MB\n",
         events, rounds, seed, (double)plain.n / 1e6, (double)tsv.n / 1e6, (double)jsonl.n / 1e6);
  double best[3] = {1e300, 1e300, 1e300};
  for (uint64_t r = 0; r < rounds; r++) { /* alternating: the machine's drift spreads over all three */
    double d[3] = {read_all(s, &plain, "plain.csv", NULL, events), read_all(s, &tsv, "mapped.tsv", &tsv_l, events),
                   read_all(s, &jsonl, "dump.jsonl", &json_l, events)};
    for (int k = 0; k < 3; k++) best[k] = d[k] < best[k] ? d[k] : best[k];
  }
  const char *names[] = {"plain CSV (baseline)", "mapped TSV", "JSON Lines"};
  for (int k = 0; k < 3; k++)
    printf("%-22s %8.2f M events/s  %6.1f MB/s  %.2fx the time of plain CSV\n", names[k], (double)events / best[k] / 1e6,
           (double)(k == 0 ? plain.n : k == 1 ? tsv.n : jsonl.n) / best[k] / 1e6, best[k] / best[0]);
  free(plain.p);
  free(tsv.p);
  free(jsonl.p);
  uih_schema_free(s);
  return 0;
}
