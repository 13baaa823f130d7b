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
 * Threads: the main thread waits on every connection at once (epoll) and
 * queues each that has sent something; --threads workers take them first
 * come first served and answer their requests (at most 64 in a turn), each
 * worker with its own snapshotter (uih/materialize.h). So any number of
 * clients (up to 1024) share the workers, none waits for another to
 * disconnect; a request line is at most 64 KiB. One
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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
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

enum { kMaxConns = 1024, kMaxLine = 64 * 1024, kLinesPerTurn = 64 };

struct conn;

typedef struct record_node {
  struct record_node *next;
  uint64_t number;
  size_t len;
  uint8_t bytes[];
} record_node;

static struct {
  uih_store *store;
  const uih_schema *schema;
  unsigned append_flags;
  atomic_bool stop;
  int listen_fd, epoll_fd;
  /* every open connection (conn_mu), and the readable ones waiting for a
   * worker, first come first served */
  pthread_mutex_t conn_mu;
  pthread_cond_t conn_cv;
  struct conn *open[kMaxConns];
  size_t nopen;
  struct conn *ready[kMaxConns];
  size_t ready_head, nready;
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
  *number = r->number = g.logged++;
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
      if (uih_snapshot_log_write(g.log, r->number, r->bytes, r->len, &err) != UIH_OK)
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

/* A client's connection: owned by the epoll set while it waits for input,
 * then by the ready queue, then by the one worker serving it. */
typedef struct conn {
  int fd;
  char header[4096]; /* of its APPEND rows */
  char in[kMaxLine]; /* what it sent that no request has consumed yet */
  size_t in_len;
} conn;

/* A worker's own buffers: its snapshotter, a snapshot's CSV body, and the
 * answer it is writing. */
typedef struct worker_state {
  uih_snapshotter *sn;
  char *body, *out;
  size_t body_len, out_len;
  FILE *body_f, *out_f; /* open_memstream over body and out */
} worker_state;

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

static int snapshot(worker_state *w, char *args, char *msg, size_t cap) {
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
  if (uih_snapshot(w->sn, user, (int64_t)ts, &spec, &seqs, &rec, &len, &err) != UIH_OK)
    return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
  uint64_t number;
  if (!log_record(rec, len, &number)) return snprintf(msg, cap, "out of memory"), 0;
  rewind(w->body_f);
  unsigned lines = 0;
  for (uint32_t k = 0; k < spec.ngroups; k++) {
    if (uih_csv_write_header(w->body_f, seqs[k], &err) != UIH_OK) return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
    lines++;
    for (uint32_t r = 0; r < seqs[k]->count; r++, lines++)
      if (uih_csv_write_row(w->body_f, user, seqs[k], r, &err) != UIH_OK)
        return snprintf(msg, cap, "%s", uih_error_message(&err)), 0;
  }
  fflush(w->body_f);
  fprintf(w->out_f, "OK record=%" PRIu64 " lines=%u\n", number, lines);
  fwrite(w->body, 1, (size_t)ftell(w->body_f), w->out_f);
  atomic_fetch_add(&g.snapshots, 1);
  return 1;
}

static void stats(FILE *out) {
  uih_cache_stats cs = {0};
  uih_error err = {0};
  uih_store_cache_stats(g.store, &cs, &err);
  double rate = cs.hits + cs.misses ? (double)cs.hits / (double)(cs.hits + cs.misses) : 0;
  fprintf(out, "OK requests=%" PRIu64 " appends=%" PRIu64 " snapshots=%" PRIu64 " errors=%" PRIu64
                  " p50_us=%" PRIu64 " p99_us=%" PRIu64 " cache_hit_rate=%.4f generation=",
          (uint64_t)atomic_load(&g.requests), (uint64_t)atomic_load(&g.appends), (uint64_t)atomic_load(&g.snapshots),
          (uint64_t)atomic_load(&g.errors), latency_quantile(0.5), latency_quantile(0.99), rate);
  for (uint32_t sh = 0; sh < uih_store_shards(g.store); sh++) {
    uint32_t gen = 0;
    uih_error e = {0};
    uih_store_following(g.store, sh, &gen, &e);
    fprintf(out, "%s%u", sh ? "," : "", gen);
  }
  fputc('\n', out);
}

/* Answers one request line into w->out_f; 0 when the connection is to
 * close (QUIT). */
static int answer(worker_state *w, conn *c, char *line) {
  const double t0 = now_us();
  char msg[1024];
  int ok = 1;
  if (!strcmp(line, "QUIT")) return 0;
  if (!strncmp(line, "HEADER ", 7)) {
    snprintf(c->header, sizeof c->header, "%s", line + 7);
    fputs("OK\n", w->out_f);
  } else if (!strncmp(line, "APPEND ", 7)) {
    if ((ok = append(c, line + 7, msg, sizeof msg))) fputs("OK\n", w->out_f);
  } else if (!strncmp(line, "SNAPSHOT ", 9)) {
    ok = snapshot(w, line + 9, msg, sizeof msg);
  } else if (!strcmp(line, "STATS")) {
    stats(w->out_f);
  } else {
    ok = 0;
    snprintf(msg, sizeof msg, "unknown request (HEADER, APPEND, SNAPSHOT, STATS, QUIT)");
  }
  if (!ok) {
    for (char *q = msg; *q; q++)
      if (*q == '\n') *q = ' ';
    fprintf(w->out_f, "ERR %s\n", msg);
    atomic_fetch_add(&g.errors, 1);
  }
  atomic_fetch_add(&g.requests, 1);
  count_latency(now_us() - t0);
  return 1;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return 0;
    p += k;
    n -= (size_t)k;
  }
  return 1;
}

typedef enum { kWait, kAgain, kClose } turn_end;

/* One turn of a connection: the requests it has sent, up to kLinesPerTurn
 * (so a client that keeps sending cannot hold a worker from the others),
 * each answered before the next is read. */
static turn_end serve_turn(worker_state *w, conn *c) {
  for (int served = 0; served < kLinesPerTurn;) {
    char *nl = memchr(c->in, '\n', c->in_len);
    if (nl) {
      size_t used = (size_t)(nl - c->in) + 1;
      *nl = '\0';
      if (nl > c->in && nl[-1] == '\r') nl[-1] = '\0';
      rewind(w->out_f);
      int more = answer(w, c, c->in);
      fflush(w->out_f);
      memmove(c->in, c->in + used, c->in_len - used);
      c->in_len -= used;
      served++;
      if (!more || !send_all(c->fd, w->out, (size_t)ftell(w->out_f))) return kClose;
      continue;
    }
    if (c->in_len == sizeof c->in) {
      static const char kTooLong[] = "ERR a request longer than 64 KiB; closing\n";
      send_all(c->fd, kTooLong, sizeof kTooLong - 1);
      atomic_fetch_add(&g.errors, 1);
      return kClose;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, MSG_DONTWAIT);
    if (n > 0) c->in_len += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return kWait;
    else return kClose; /* the client closed, or the connection failed */
  }
  return kAgain;
}

static void queue_ready(conn *c) {
  pthread_mutex_lock(&g.conn_mu);
  g.ready[(g.ready_head + g.nready++) % kMaxConns] = c;
  pthread_cond_signal(&g.conn_cv);
  pthread_mutex_unlock(&g.conn_mu);
}

/* Waits for the connection's next bytes: epoll hands it to a worker again. */
static void wait_for_input(conn *c) {
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};
  epoll_ctl(g.epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void close_conn(conn *c) {
  pthread_mutex_lock(&g.conn_mu);
  for (size_t i = 0; i < g.nopen; i++)
    if (g.open[i] == c) {
      g.open[i] = g.open[--g.nopen];
      break;
    }
  pthread_mutex_unlock(&g.conn_mu);
  epoll_ctl(g.epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c);
}

static void *worker(void *arg) {
  (void)arg;
  worker_state w = {0};
  uih_error err = {0};
  if (uih_snapshotter_create(g.store, &w.sn, &err) != UIH_OK) {
    fprintf(stderr, "inference_service: %s\n", uih_error_message(&err));
    return NULL;
  }
  w.body_f = open_memstream(&w.body, &w.body_len);
  w.out_f = open_memstream(&w.out, &w.out_len);
  for (;;) {
    pthread_mutex_lock(&g.conn_mu);
    while (g.nready == 0 && !atomic_load(&g.stop)) pthread_cond_wait(&g.conn_cv, &g.conn_mu);
    if (g.nready == 0) {
      pthread_mutex_unlock(&g.conn_mu);
      break;
    }
    conn *c = g.ready[g.ready_head];
    g.ready_head = (g.ready_head + 1) % kMaxConns;
    g.nready--;
    pthread_mutex_unlock(&g.conn_mu);
    switch (serve_turn(&w, c)) {
      case kWait: wait_for_input(c); break;
      case kAgain: /* more to serve, after the others' turns (none once stopping) */
        if (atomic_load(&g.stop)) close_conn(c);
        else queue_ready(c);
        break;
      case kClose: close_conn(c); break;
    }
  }
  fclose(w.body_f);
  fclose(w.out_f);
  free(w.body);
  free(w.out);
  uih_snapshotter_free(w.sn);
  return NULL;
}

/* Accepts every waiting client into the epoll set. */
static void accept_clients(void) {
  for (;;) {
    int fd = accept4(g.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) usleep(10000); /* out of descriptors: not a busy loop */
      return;
    }
    conn *c = calloc(1, sizeof *c);
    pthread_mutex_lock(&g.conn_mu);
    int room = c && g.nopen < kMaxConns;
    if (room) g.open[g.nopen++] = c;
    pthread_mutex_unlock(&g.conn_mu);
    if (!room) {
      static const char kFull[] = "ERR the service has its most connections; try again later\n";
      send_all(fd, kFull, sizeof kFull - 1);
      close(fd);
      free(c);
      continue;
    }
    c->fd = fd;
    /* A client that stops reading its answers fails its send after 10 s
     * and is closed, instead of holding a worker the others need. */
    struct timeval patience = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
    default_header(c->header, sizeof c->header);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};
    epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
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
  g.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (g.listen_fd < 0 || bind(g.listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(g.listen_fd, 64) != 0) {
    fprintf(stderr, "inference_service: %s: %s\n", sock, strerror(errno));
    return 1;
  }
  g.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event listening = {.events = EPOLLIN, .data.ptr = NULL};
  if (g.epoll_fd < 0 || epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, g.listen_fd, &listening) != 0) {
    fprintf(stderr, "inference_service: epoll: %s\n", strerror(errno));
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
    struct epoll_event evs[64];
    int n = epoll_wait(g.epoll_fd, evs, 64, 100);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == NULL) accept_clients();
      else queue_ready(evs[i].data.ptr); /* readable, closed or failed: a worker finds out which */
    }
  }
  /* Stopping: no new connection; every request under way answered. */
  close(g.listen_fd);
  unlink(sock);
  pthread_mutex_lock(&g.conn_mu);
  pthread_cond_broadcast(&g.conn_cv);
  pthread_mutex_unlock(&g.conn_mu);
  for (unsigned i = 0; i < threads; i++) pthread_join(workers[i], NULL);
  while (g.nopen) close_conn(g.open[0]);
  close(g.epoll_fd);
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
