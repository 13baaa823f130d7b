/* inference_service — how a C (or C++) inference service embeds uihstore.
 *
 * It opens a store to serve (UIH_STORE_ROLE_SERVE): it owns the mutable
 * tiers, appends events to them and takes snapshots, while nightly loads
 * publish from other processes (`uih load`), which it follows without
 * reopening. Clients talk to it over a Unix socket, one request per line,
 * one answer per request:
 *
 *   HEADER user_id,group,ts,NAME...   the CSV header of this connection's
 *                                     APPEND rows (default: user_id, group,
 *                                     ts and every active trait of the
 *                                     schema) -> "OK"
 *   APPEND ROW                        one event, a CSV row as `uih append`
 *                                     reads them -> "OK" once it is in the
 *                                     mutable tier (in RocksDB's WAL; synced
 *                                     first with --sync)
 *   SNAPSHOT USER TS GROUP[:N][,...]  the newest N (default 256) events of
 *                                     each group up to TS, the record logged
 *                                     -> "OK record=R lines=L" then L lines:
 *                                     per group, a CSV header and its events
 *   STATS                             -> "OK requests=.. appends=..
 *                                     snapshots=.. errors=.. p50_us=..
 *                                     p99_us=.. cache_hit_rate=..
 *                                     generation=G0,G1,.." (per shard)
 *   QUIT                              closes the connection
 * A request that fails answers "ERR message" and changes nothing.
 *
 * Threads: the main thread accepts; --threads workers serve a connection
 * each at a time, each with its own snapshotter (uih/materialize.h); one
 * log writer appends the records to --log in the order the snapshots were
 * served (so in request order per user; record R is the R-th of the log,
 * counted from 0 over the log's life). SIGTERM or SIGINT: no new
 * connection, every request under way answered, the log drained, synced
 * and closed on a whole record, the store closed. At start a log cut
 * inside a record (the service killed mid-write) is cut back to its last
 * whole record, and the service says so.
 *
 *   inference_service --store DIR --socket PATH --log FILE [--threads N]
 *                     [--follow-ms MS] [--cache-mb MB] [--sync]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "uih/csv.h"
#include "uih/key.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"

static const char kUsage[] =
    "usage: inference_service --store DIR --socket PATH --log FILE [--threads N]\n"
    "                         [--follow-ms MS] [--cache-mb MB] [--sync]\n"
    "Serves APPEND, SNAPSHOT and STATS requests for the store over a Unix socket,\n"
    "logging every snapshot's record to FILE (see the top of inference_service.c).\n";

/* ---- the service's state -------------------------------------------------------- */

typedef struct record_node {
  struct record_node *next;
  size_t len;
  uint8_t bytes[];
} record_node;

static struct {
  uih_store *store;
  const uih_schema *schema;
  unsigned append_flags;
  atomic_bool stop;
  int listen_fd;
  /* connections waiting for a worker */
  pthread_mutex_t conn_mu;
  pthread_cond_t conn_cv;
  int conns[256];
  size_t nconns;
  /* the log writer's queue */
  pthread_mutex_t log_mu;
  pthread_cond_t log_cv;
  record_node *head, *tail;
  uint64_t logged; /* records numbered so far */
  int log_done;
  FILE *log;
  /* counters */
  atomic_uint_fast64_t requests, appends, snapshots, errors;
  atomic_uint_fast64_t latency[64]; /* requests by floor(log2(us)) */
} g;

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&g.stop, true);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void count_latency(double us) {
  unsigned b = 0;
  while (b < 63 && (double)(1ull << (b + 1)) <= us) b++;
  atomic_fetch_add(&g.latency[b], 1);
}

/* The latency below which a fraction q of requests fell (the upper end of
 * its power-of-two bucket). */
static uint64_t latency_quantile(double q) {
  uint64_t n[64], total = 0;
  for (int b = 0; b < 64; b++) total += n[b] = atomic_load(&g.latency[b]);
  uint64_t want = (uint64_t)(q * (double)total), seen = 0;
  for (int b = 0; b < 64; b++) {
    seen += n[b];
    if (seen > want) return 1ull << (b + 1);
  }
  return 0;
}

/* ---- the log ---------------------------------------------------------------------- */

/* Queues a copy of the record; its number in the log in *number. */
static int log_record(const uint8_t *rec, size_t len, uint64_t *number) {
  record_node *r = malloc(sizeof *r + len);
  if (!r) return 0;
  r->next = NULL;
  r->len = len;
  memcpy(r->bytes, rec, len);
  pthread_mutex_lock(&g.log_mu);
  *number = g.logged++;
  if (g.tail) g.tail->next = r;
  else g.head = r;
  g.tail = r;
  pthread_cond_signal(&g.log_cv);
  pthread_mutex_unlock(&g.log_mu);
  return 1;
}

static void *log_writer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g.log_mu);
  for (;;) {
    while (!g.head && !g.log_done) pthread_cond_wait(&g.log_cv, &g.log_mu);
    record_node *batch = g.head;
    g.head = g.tail = NULL;
    int done = g.log_done;
    pthread_mutex_unlock(&g.log_mu);
    for (record_node *r = batch, *next; r; r = next) {
      next = r->next;
      uih_error err = {0};
      if (uih_snapshot_log_append(g.log, r->bytes, r->len, &err) != UIH_OK)
        fprintf(stderr, "inference_service: log: %s\n", uih_error_message(&err));
      free(r);
    }
    fflush(g.log);
    pthread_mutex_lock(&g.log_mu);
    if (done && !g.head) break;
  }
  pthread_mutex_unlock(&g.log_mu);
  return NULL;
}

/* Opens the log for appending, cut back to its last whole record when a
 * kill left one cut (uih_snapshot_log_repair); counts its records. */
static int open_log(const char *path) {
  FILE *f = fopen(path, "a+b");
  if (!f) {
    fprintf(stderr, "inference_service: %s: %s\n", path, strerror(errno));
    return 0;
  }
  uint64_t records = 0, dropped = 0;
  uih_error err = {0};
  if (uih_snapshot_log_repair(f, path, &records, &dropped, &err) != UIH_OK) {
    fprintf(stderr, "inference_service: %s\n", uih_error_message(&err));
    fclose(f);
    return 0;
  }
  if (dropped)
    fprintf(stderr, "inference_service: %s: a record cut by a kill: %" PRIu64 " bytes cut off after its %" PRIu64
                    " whole records\n",
            path, dropped, records);
  fseek(f, 0, SEEK_END);
  g.log = f;
  g.logged = records;
  return 1;
}

/* ---- requests ------------------------------------------------------------------- */

typedef struct conn {
  int fd;
  FILE *in, *out;
  char header[4096];
  uih_snapshotter *sn;
  char *body;
  size_t body_len;
  FILE *body_f; /* open_memstream over body */
} conn;

static void default_header(char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "user_id,group,ts");
  for (uint32_t k = 0; k < uih_schema_group_count(g.schema); k++) {
    const uih_group *gr = uih_schema_group_at(g.schema, k);
    for (uint32_t t = 0; t < gr->ntraits; t++) {
      const uih_trait *tr = &gr->traits[t];
      if (tr->dropped_in || tr == gr->ts) continue;
      char needle[80];
      snprintf(needle, sizeof needle, ",%s,", tr->name);
      char with_comma[4200];
      snprintf(with_comma, sizeof with_comma, "%s,", out);
      if (strstr(with_comma, needle)) continue; /* a name two groups share */
      n += (size_t)snprintf(out + n, cap > n ? cap - n : 0, ",%s", tr->name);
    }
  }
}

static int append(conn *c, const char *row, char *msg, size_t cap) {
  char text[8192];
  int len = snprintf(text, sizeof text, "%s\n%s\n", c->header, row);
  if (len < 0 || (size_t)len >= sizeof text) return snprintf(msg, cap, "the row is too long"), 0;
  FILE *f = fmemopen(text, (size_t)len, "r");
  if (!f) return snprintf(msg, cap, "fmemopen: %s", strerror(errno)), 0;
  uih_csv_reader *r = NULL;
  uih_error err = {0};
  uint64_t user = 0;
  const uih_batch *ev = NULL;
  uih_mutable *m = NULL;
  int rc = uih_csv_open_stream(f, "request", g.schema, &r, &err);
  if (rc == UIH_OK) rc = uih_csv_next(r, &user, &ev, &err);
  if (rc == UIH_OK && !ev) rc = uih_error_set(&err, UIH_ERR_PARSE, "no row");
  if (rc == UIH_OK) rc = uih_store_mutable(g.store, uih_shard_of(user, uih_store_shards(g.store)), &m, &err);
  if (rc == UIH_OK) rc = uih_mutable_append(m, user, ev, g.append_flags, &err);
  uih_csv_close(r);
  fclose(f);
  if (rc != UIH_OK) return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
  atomic_fetch_add(&g.appends, 1);
  return 1;
}

/* "GROUP[:N][,GROUP[:N]...]" into a spec. */
static int parse_spec(char *text, uih_snapshot_spec *spec, char *msg, size_t cap) {
  spec->ngroups = 0;
  for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (spec->ngroups == UIH_SNAPSHOT_GROUPS_MAX) return snprintf(msg, cap, "too many groups"), 0;
    char *colon = strchr(tok, ':');
    uint32_t n = 256;
    if (colon) {
      *colon = '\0';
      char *end;
      unsigned long v = strtoul(colon + 1, &end, 10);
      if (*end || v == 0 || v > UIH_STRIPE_EVENTS_MAX) return snprintf(msg, cap, "bad length '%s'", colon + 1), 0;
      n = (uint32_t)v;
    }
    const uih_group *gr = uih_schema_group_by_name(g.schema, tok);
    if (!gr) return snprintf(msg, cap, "no group '%s' in the schema", tok), 0;
    spec->groups[spec->ngroups].group = gr->id;
    spec->groups[spec->ngroups].max_length = n;
    spec->ngroups++;
  }
  return spec->ngroups > 0 ? 1 : (snprintf(msg, cap, "no group"), 0);
}

static int snapshot(conn *c, char *args, char *msg, size_t cap) {
  char *save = NULL, *u = strtok_r(args, " ", &save), *t = strtok_r(NULL, " ", &save),
       *s = strtok_r(NULL, " ", &save);
  if (!u || !t || !s) return snprintf(msg, cap, "usage: SNAPSHOT USER TS GROUP[:N][,...]"), 0;
  char *end1, *end2;
  errno = 0;
  uint64_t user = strtoull(u, &end1, 10);
  long long ts = strtoll(t, &end2, 10);
  if (*end1 || *end2 || errno) return snprintf(msg, cap, "bad user or ts"), 0;
  uih_snapshot_spec spec;
  if (!parse_spec(s, &spec, msg, cap)) return 0;
  const uih_batch *const *seqs;
  const uint8_t *rec;
  size_t len;
  uih_error err = {0};
  if (uih_snapshot(c->sn, user, (int64_t)ts, &spec, &seqs, &rec, &len, &err) != UIH_OK)
    return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
  uint64_t number;
  if (!log_record(rec, len, &number)) return snprintf(msg, cap, "out of memory"), 0;
  rewind(c->body_f);
  unsigned lines = 0;
  for (uint32_t k = 0; k < spec.ngroups; k++) {
    if (uih_csv_write_header(c->body_f, seqs[k], &err) != UIH_OK) return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
    lines++;
    for (uint32_t r = 0; r < seqs[k]->count; r++, lines++)
      if (uih_csv_write_row(c->body_f, user, seqs[k], r, &err) != UIH_OK)
        return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
  }
  fflush(c->body_f);
  fprintf(c->out, "OK record=%" PRIu64 " lines=%u\n", number, lines);
  fwrite(c->body, 1, (size_t)ftell(c->body_f), c->out);
  atomic_fetch_add(&g.snapshots, 1);
  return 1;
}

static void stats(conn *c) {
  uih_cache_stats cs = {0};
  uih_error err = {0};
  uih_store_cache_stats(g.store, &cs, &err);
  double rate = cs.hits + cs.misses ? (double)cs.hits / (double)(cs.hits + cs.misses) : 0;
  fprintf(c->out, "OK requests=%" PRIu64 " appends=%" PRIu64 " snapshots=%" PRIu64 " errors=%" PRIu64
                  " p50_us=%" PRIu64 " p99_us=%" PRIu64 " cache_hit_rate=%.4f generation=",
          (uint64_t)atomic_load(&g.requests), (uint64_t)atomic_load(&g.appends), (uint64_t)atomic_load(&g.snapshots),
          (uint64_t)atomic_load(&g.errors), latency_quantile(0.5), latency_quantile(0.99), rate);
  for (uint32_t sh = 0; sh < uih_store_shards(g.store); sh++) {
    uint32_t gen = 0;
    uih_error e = {0};
    uih_store_following(g.store, sh, &gen, &e);
    fprintf(c->out, "%s%u", sh ? "," : "", gen);
  }
  fputc('\n', c->out);
}

/* Serves one connection until it closes, QUITs, or the service stops. */
static void serve(conn *c) {
  char *line = NULL;
  size_t cap = 0;
  default_header(c->header, sizeof c->header);
  for (;;) {
    struct pollfd p = {c->fd, POLLIN, 0};
    int ready = poll(&p, 1, 100);
    if (ready == 0) {
      if (atomic_load(&g.stop)) break;
      continue;
    }
    ssize_t n = getline(&line, &cap, c->in);
    if (n <= 0) break;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    const double t0 = now_us();
    char msg[1024];
    int ok = 1;
    if (!strcmp(line, "QUIT")) break;
    if (!strncmp(line, "HEADER ", 7)) {
      snprintf(c->header, sizeof c->header, "%s", line + 7);
      fputs("OK\n", c->out);
    } else if (!strncmp(line, "APPEND ", 7)) {
      if ((ok = append(c, line + 7, msg, sizeof msg))) fputs("OK\n", c->out);
    } else if (!strncmp(line, "SNAPSHOT ", 9)) {
      ok = snapshot(c, line + 9, msg, sizeof msg);
    } else if (!strcmp(line, "STATS")) {
      stats(c);
    } else {
      ok = 0;
      snprintf(msg, sizeof msg, "unknown request (HEADER, APPEND, SNAPSHOT, STATS, QUIT)");
    }
    if (!ok) {
      for (char *q = msg; *q; q++)
        if (*q == '\n') *q = ' ';
      fprintf(c->out, "ERR %s\n", msg);
      atomic_fetch_add(&g.errors, 1);
    }
    fflush(c->out);
    atomic_fetch_add(&g.requests, 1);
    count_latency(now_us() - t0);
  }
  free(line);
}

static void *worker(void *arg) {
  (void)arg;
  conn c = {0};
  uih_error err = {0};
  if (uih_snapshotter_create(g.store, &c.sn, &err) != UIH_OK) {
    fprintf(stderr, "inference_service: %s\n", uih_error_message(&err));
    return NULL;
  }
  c.body_f = open_memstream(&c.body, &c.body_len);
  for (;;) {
    pthread_mutex_lock(&g.conn_mu);
    while (g.nconns == 0 && !atomic_load(&g.stop)) pthread_cond_wait(&g.conn_cv, &g.conn_mu);
    if (g.nconns == 0) {
      pthread_mutex_unlock(&g.conn_mu);
      break;
    }
    c.fd = g.conns[--g.nconns];
    pthread_mutex_unlock(&g.conn_mu);
    c.in = fdopen(c.fd, "r");
    c.out = fdopen(dup(c.fd), "w");
    if (c.in && c.out) serve(&c);
    if (c.out) fclose(c.out);
    if (c.in) fclose(c.in);
    else close(c.fd);
  }
  fclose(c.body_f);
  free(c.body);
  uih_snapshotter_free(c.sn);
  return NULL;
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *dir = NULL, *sock = NULL, *log_path = NULL;
  unsigned threads = 4;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.role = UIH_STORE_ROLE_SERVE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kUsage, stdout);
      return 0;
    }
    if (!strcmp(a, "--sync")) {
      g.append_flags |= UIH_APPEND_SYNC;
      continue;
    }
    if (!v) {
      fprintf(stderr, "inference_service: %s needs a value\n%s", a, kUsage);
      return 2;
    }
    i++;
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--socket")) sock = v;
    else if (!strcmp(a, "--log")) log_path = v;
    else if (!strcmp(a, "--threads")) threads = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--follow-ms")) so.follow_ms = (uint32_t)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--cache-mb")) so.cache_bytes = (size_t)strtoull(v, NULL, 10) << 20;
    else {
      fprintf(stderr, "inference_service: unknown option %s\n%s", a, kUsage);
      return 2;
    }
  }
  if (!dir || !sock || !log_path || threads == 0 || threads > 256) {
    fputs(kUsage, stderr);
    return 2;
  }
  uih_error err = {0};
  if (uih_store_open(dir, &so, &g.store, &err) != UIH_OK) {
    fprintf(stderr, "inference_service: %s\n", uih_error_message(&err));
    return 1;
  }
  g.schema = uih_store_schema(g.store);
  if (!open_log(log_path)) return 1;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof addr.sun_path) {
    fprintf(stderr, "inference_service: socket path too long: %s\n", sock);
    return 2;
  }
  strcpy(addr.sun_path, sock);
  unlink(sock);
  g.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (g.listen_fd < 0 || bind(g.listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(g.listen_fd, 64) != 0) {
    fprintf(stderr, "inference_service: %s: %s\n", sock, strerror(errno));
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  pthread_mutex_init(&g.conn_mu, NULL);
  pthread_cond_init(&g.conn_cv, NULL);
  pthread_mutex_init(&g.log_mu, NULL);
  pthread_cond_init(&g.log_cv, NULL);
  pthread_t writer, workers[256];
  pthread_create(&writer, NULL, log_writer, NULL);
  for (unsigned i = 0; i < threads; i++) pthread_create(&workers[i], NULL, worker, NULL);
  printf("inference_service: serving %s on %s, %u threads, log %s (%" PRIu64 " records)\n", dir, sock, threads,
         log_path, g.logged);
  fflush(stdout);
  while (!atomic_load(&g.stop)) {
    struct pollfd p = {g.listen_fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int fd = accept4(g.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    pthread_mutex_lock(&g.conn_mu);
    if (g.nconns < sizeof g.conns / sizeof g.conns[0]) {
      g.conns[g.nconns++] = fd;
      pthread_cond_signal(&g.conn_cv);
    } else {
      close(fd);
    }
    pthread_mutex_unlock(&g.conn_mu);
  }
  /* Stopping: no new connection; every request under way answered. */
  close(g.listen_fd);
  unlink(sock);
  pthread_mutex_lock(&g.conn_mu);
  pthread_cond_broadcast(&g.conn_cv);
  pthread_mutex_unlock(&g.conn_mu);
  for (unsigned i = 0; i < threads; i++) pthread_join(workers[i], NULL);
  pthread_mutex_lock(&g.log_mu);
  g.log_done = 1;
  pthread_cond_signal(&g.log_cv);
  pthread_mutex_unlock(&g.log_mu);
  pthread_join(writer, NULL);
  int ok = fflush(g.log) == 0 && fsync(fileno(g.log)) == 0;
  fclose(g.log);
  uih_store_close(g.store);
  printf("inference_service: stopped: %" PRIu64 " requests, %" PRIu64 " records logged\n",
         (uint64_t)atomic_load(&g.requests), g.logged);
  return ok ? 0 : 1;
}
