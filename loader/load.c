/* uih_load (uih/loader.h): read and sort the inputs, merge each shard into
 * its next generation (on `threads` threads), then publish them all. */
#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "deletes.h"
#include "input.h"
#include "merge.h"
#include "rows.h"
#include "sort.h"
#include "uih/csv.h"
#include "uih/key.h"
#include "uih/loader.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct job {
  uint32_t shard;
  uih_store_writer *writer;
  ld_merge merge;
  uih_error err;
  int rc;
} job;

typedef struct load {
  uih_store *store;
  const uih_schema *schema;
  uint32_t nshards;
  uih_load_opts o;
  uih_load_stats st;
  uint64_t *events_in; /* per shard */
  size_t row_max;      /* the largest row of any group */
  uih_generation *current; /* per shard: its current generation's record */
  int any_event;           /* an event was read (of any shard) */
  ld_sorter *sorter;
  ld_deletes *deletes;
  uih_id_check *ids; /* the strings read into ids, when the schema has string ids */
  FILE *rejects;
  job *jobs;
  size_t njobs;
  pthread_mutex_t mu; /* next, the merge's progress */
  size_t next;
  double merge_began;
  uint64_t merged_events, merge_total;
  uint64_t read_done, read_total; /* bytes of the input files as stored */
  /* reading, on one thread or several (mu): */
  char **files;
  size_t nfiles, next_file;
  uint64_t *file_digests; /* per file, folded in file order */
  size_t failed_at;       /* the first file that failed (nfiles: none) */
  int fail_rc;
  uih_error fail_err;
  uint64_t read_events, read_bytes; /* of every thread, for progress */
  double read_began;
  struct reader *readers; /* every reading thread's, for progress */
  uint32_t nreaders;
} load;

/* A thread reading whole input files into a sorter of its own, and what
 * it read; folded into the load when every thread is done. */
typedef struct reader {
  load *l;
  ld_sorter *sorter;
  uint64_t *events_in; /* per shard */
  uint64_t events, skipped, inputs, input_bytes;
  int any_event;
  int64_t maxts;
  uint8_t *buf; /* a row */
  uint64_t cur_raw, cur_bytes; /* of the file it reads, so far (mu) */
} reader;

static void progress(load *l, const char *phase, int32_t shard, uint64_t events, uint64_t bytes, double began,
                     uint64_t done, uint64_t total) {
  if (!l->o.progress) return;
  double t = now() - began, eta = -1;
  if (total && done && done <= total && t > 0) eta = t * (double)(total - done) / (double)done;
  uih_load_progress p = {phase, shard, events, bytes, t, done, total, eta};
  l->o.progress(&p, l->o.progress_arg);
}

/* The current generation's record of `shard`; *has = 0 when it has none.
 * The current one is the newest live generation, the last listed. */
static int current_record(uih_store *s, uint32_t shard, uih_generation *rec, int *has, uih_error *err) {
  size_t n;
  uint32_t cur;
  *has = 0;
  int rc = uih_store_generations(s, shard, NULL, 0, &n, &cur, err);
  if (rc != UIH_OK || cur == 0) return rc;
  uih_generation *gens = calloc(n, sizeof *gens);
  if (!gens) return uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  rc = uih_store_generations(s, shard, gens, n, &n, &cur, err);
  for (size_t i = 0; rc == UIH_OK && i < n; i++)
    if (gens[i].generation == cur) {
      *rec = gens[i];
      *has = 1;
    }
  free(gens);
  return rc;
}

/* ---- reading ------------------------------------------------------------------ */

/* One field of the rejects file, quoted (RFC 4180) only when it must be. */
static int put_field(load *l, const char *text, size_t len, int last) {
  int quote = len && (text[0] == ' ' || text[len - 1] == ' ');
  for (size_t i = 0; i < len && !quote; i++) quote = strchr(",\"\r\n", text[i]) != NULL && text[i] != '\0';
  FILE *f = l->rejects;
  if (!quote) return fwrite(text, 1, len, f) == len && fputc(last ? '\n' : ',', f) != EOF;
  return csv_fwrite(f, text, len) == 0 && fputc(last ? '\n' : ',', f) != EOF;
}

/* Writes the record `r` last read, refused for the reason in *err, to the
 * rejects file; UIH_OK to go on. */
static int reject(load *l, uih_csv_reader *r, const char *name, uih_error *err) {
  char line[24];
  snprintf(line, sizeof line, "%" PRIu64, uih_csv_record_line(r));
  const char *reason = err->msg;
  size_t nl = strlen(name), nn = strlen(line); /* the message's "name:line: " is in its own columns */
  if (!strncmp(reason, name, nl) && reason[nl] == ':' && !strncmp(reason + nl + 1, line, nn) &&
      !strncmp(reason + nl + 1 + nn, ": ", 2))
    reason += nl + nn + 3;
  size_t tlen;
  const char *text = uih_csv_record_text(r, &tlen);
  if (!text) text = "", tlen = 0;
  if (!put_field(l, name, nl, 0) || !put_field(l, line, nn, 0) || !put_field(l, reason, strlen(reason), 0) ||
      !put_field(l, text, tlen, 1))
    return uih_error_set(err, UIH_ERR_IO, "load: writing the rejects file %s: %s", l->o.rejects, strerror(errno));
  l->st.rejected++;
  uih_error_clear(err);
  return UIH_OK;
}

/* Whether the schema's inputs hash strings into ids: users or an id trait. */
static int has_string_ids(const uih_schema *schema) {
  if (uih_schema_user_ids(schema) == UIH_INPUT_STRING) return 1;
  for (uint32_t g = 0; g < uih_schema_group_count(schema); g++) {
    const uih_group *grp = uih_schema_group_at(schema, g);
    for (uint32_t t = 0; t < grp->ntraits; t++)
      if (grp->traits[t].type == UIH_TYPE_ID && grp->traits[t].input == UIH_INPUT_STRING) return 1;
  }
  return 0;
}

/* Every 2^16 events: the load's progress, and whether a file before this
 * one failed (then this one's events no longer matter: *stop). */
static void read_tick(reader *rd, size_t index, ld_input *in, double began, int *stop) {
  load *l = rd->l;
  pthread_mutex_lock(&l->mu);
  l->read_events += 1u << 16;
  rd->cur_raw = ld_input_raw_bytes(in);
  rd->cur_bytes = ld_input_bytes(in);
  uint64_t raw = l->read_done, bytes = l->read_bytes; /* files read, and every thread's file so far: */
  for (uint32_t t = 0; t < l->nreaders; t++) raw += l->readers[t].cur_raw, bytes += l->readers[t].cur_bytes;
  progress(l, "read", -1, l->read_events, bytes, began, raw, l->read_total); /* never back */
  *stop = l->failed_at < index;
  pthread_mutex_unlock(&l->mu);
}

static int read_file(reader *rd, size_t index, double began, uih_error *err) {
  load *l = rd->l;
  const char *path = l->files[index];
  ld_input *in = NULL;
  uih_csv_reader *r = NULL;
  int rc = ld_input_open(path, &in, err);
  const char *name = strcmp(path, "-") ? path : "<stdin>";
  if (rc == UIH_OK) rc = uih_csv_open_layout(ld_input_stream(in), name, l->schema, l->o.layout, &r, err);
  if (rc == UIH_OK) uih_csv_check_ids(r, l->ids);
  int stop = 0;
  while (rc == UIH_OK && !stop) {
    uint64_t user;
    const uih_batch *ev;
    rc = uih_csv_next(r, &user, &ev, err);
    if (rc == UIH_ERR_PARSE && l->rejects && uih_csv_resumable(r)) {
      rc = reject(l, r, name, err);
      continue;
    }
    if (rc != UIH_OK || ev == NULL) break;
    uint32_t shard = uih_shard_of(user, l->nshards);
    const int64_t ts = uih_batch_timestamps(ev)[0]; /* the reader's batches hold every active trait */
    if (l->o.shard >= 0 && shard != (uint32_t)l->o.shard) {
      /* Another shard's event still moves the derived through, so that a
       * load finished shard by shard (--shard) is the load of all shards. */
      if (ts > rd->maxts && ts != INT64_MAX) rd->maxts = ts;
      rd->any_event = 1;
      rd->skipped++;
      continue;
    }
    if (l->o.through != INT64_MIN && ts >= l->o.through)
      rc = uih_error_set(err, UIH_ERR_OUT_OF_RANGE,
                         "%s:%" PRIu64 ": ts %" PRId64 " is at or past the load's through %" PRId64
                         " (a load takes events older than its through; the newer ones go in a later load)",
                         name, uih_csv_record_line(r), ts, l->o.through);
    else if (ts == INT64_MAX && l->o.through == INT64_MIN)
      rc = uih_error_set(err, UIH_ERR_OUT_OF_RANGE,
                         "%s:%" PRIu64 ": ts %" PRId64 " leaves no room for a through after it", name,
                         uih_csv_record_line(r), ts);
    if (rc != UIH_OK) {
      if (l->rejects) rc = reject(l, r, name, err);
      if (rc != UIH_OK) break;
      continue;
    }
    if (ts > rd->maxts) rd->maxts = ts;
    rd->any_event = 1;
    size_t len = ld_row_encode((uint16_t)shard, user, ev, 0, rd->buf);
    rc = ld_sorter_add(rd->sorter, rd->buf, (uint32_t)len, err);
    rd->events_in[shard]++;
    if ((++rd->events & ((1u << 16) - 1)) == 0) read_tick(rd, index, in, began, &stop);
  }
  if (rc != UIH_OK && in && ld_input_failure(in))  /* the decompressor's reason beats "I/O error" */
    rc = uih_error_set(err, UIH_ERR_PARSE, "%s (after line %" PRIu64 ")", ld_input_failure(in),
                       r ? uih_csv_record_line(r) : 0);
  if (rc == UIH_OK) {
    l->file_digests[index] = ld_input_digest(in);
    rd->inputs++;
    rd->input_bytes += ld_input_bytes(in);
  }
  pthread_mutex_lock(&l->mu);
  if (in) l->read_done += ld_input_raw_bytes(in);
  if (in) l->read_bytes += ld_input_bytes(in);
  rd->cur_raw = rd->cur_bytes = 0;
  pthread_mutex_unlock(&l->mu);
  uih_csv_close(r);
  ld_input_close(in);
  return rc;
}

/* Takes files in order, each whole, until none is left or one before the
 * next failed; then sorts what it holds. A failure is kept when it is the
 * first in file order, so the load fails with the error a one-thread read
 * meets first, whatever the threads' timing. */
static void *read_worker(void *arg) {
  reader *rd = arg;
  load *l = rd->l;
  const double began = l->read_began;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    size_t i = l->next_file < l->failed_at ? l->next_file++ : l->nfiles;
    pthread_mutex_unlock(&l->mu);
    if (i >= l->nfiles) break;
    uih_error e = {0};
    int rc = read_file(rd, i, began, &e);
    if (rc != UIH_OK) {
      pthread_mutex_lock(&l->mu);
      if (i < l->failed_at) {
        l->failed_at = i;
        l->fail_rc = rc;
        l->fail_err = e;
      }
      pthread_mutex_unlock(&l->mu);
      return NULL;
    }
  }
  pthread_mutex_lock(&l->mu);
  const int failed = l->fail_rc != UIH_OK;
  pthread_mutex_unlock(&l->mu);
  uih_error e = {0};
  int rc = failed ? UIH_OK : ld_sorter_finish(rd->sorter, &e); /* each thread sorts its own memory */
  pthread_mutex_lock(&l->mu);
  if (rc != UIH_OK && l->fail_rc == UIH_OK) {
    l->fail_rc = rc;
    l->fail_err = e;
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* ---- merging ------------------------------------------------------------------ */

static void merge_tick(void *arg, uint64_t events) {
  load *l = arg;
  pthread_mutex_lock(&l->mu);
  l->merged_events += events;
  progress(l, "merge", -1, l->merged_events, 0, l->merge_began, l->merged_events, l->merge_total);
  pthread_mutex_unlock(&l->mu);
}

static void *merge_worker(void *arg) {
  load *l = arg;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    size_t i = l->next++;
    pthread_mutex_unlock(&l->mu);
    if (i >= l->njobs) return NULL;
    job *j = &l->jobs[i];
    j->rc = ld_merge_shard(&j->merge, &j->err);
    pthread_mutex_lock(&l->mu);
    l->merged_events += j->merge.record.events - j->merge.ticked; /* the shard's whole generation, done */
    progress(l, "merge", (int32_t)j->shard, l->merged_events, 0, l->merge_began, l->merged_events, l->merge_total);
    pthread_mutex_unlock(&l->mu);
  }
}

static int merge_all(load *l, uih_error *err) {
  l->merge_began = now();
  uint32_t nthreads = l->o.threads > 1 ? l->o.threads : 1;
  if (nthreads > l->njobs) nthreads = (uint32_t)l->njobs;
  pthread_t threads[64];
  if (nthreads > 64) nthreads = 64;
  uint32_t started = 0;
  for (uint32_t t = 1; t < nthreads; t++) {
    if (pthread_create(&threads[started], NULL, merge_worker, l) != 0) break;
    started++;
  }
  merge_worker(l);
  for (uint32_t t = 0; t < started; t++) pthread_join(threads[t], NULL);
  for (size_t i = 0; i < l->njobs; i++)
    if (l->jobs[i].rc != UIH_OK) {
      *err = l->jobs[i].err;
      return l->jobs[i].rc;
    }
  return UIH_OK;
}

/* ---- the load --------------------------------------------------------------------- */

/* Checks the options; a store opened for one shard loads that shard. */
static int check_opts(uih_store *s, uih_load_opts *o, uih_error *err) {
  uint32_t n = uih_store_shards(s), open = 0, only = 0;
  for (uint32_t i = 0; i < n; i++)
    if (uih_store_has_shard(s, i)) open++, only = i;
  if (o->shard >= 0 && (uint32_t)o->shard >= n)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "load: shard %d, the store has %u (0..%u)", o->shard, n, n - 1);
  if (o->shard < -1) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "load: shard %d", o->shard);
  if (open < n && o->shard == -1) o->shard = (int32_t)only;
  if (open < n && o->shard != (int32_t)only)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "load: shard %d, but the store was opened for shard %u alone",
                         o->shard, only);
  if (o->lookback < 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "load: lookback %" PRId64 ", expected >= 0", o->lookback);
  if (o->memory < ((size_t)1 << 20))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "load: memory %zu bytes, expected at least 1 MiB", o->memory);
  return UIH_OK;
}

/* Reads the deletions file into l->deletes. */
static int read_deletes(load *l, uih_error *err) {
  ld_input *in = NULL;
  const char *name = strcmp(l->o.deletes, "-") ? l->o.deletes : "<stdin>";
  int rc = ld_input_open(l->o.deletes, &in, err);
  if (rc == UIH_OK) rc = ld_deletes_read(ld_input_stream(in), name, l->schema, &l->deletes, err);
  if (rc != UIH_OK && in && ld_input_failure(in)) /* the decompressor's reason names the file */
    rc = uih_error_set(err, UIH_ERR_PARSE, "%s (the deletions file)", ld_input_failure(in));
  ld_input_close(in);
  ld_deletes_counts(l->deletes, &l->st.delete_users, &l->st.delete_items, &l->st.delete_pairs);
  return rc;
}

/* 1 when paths `a` and `b` are the same file ("-" is standard input). */
static int same_file(const char *a, const char *b) {
  if (!strcmp(a, "-") || !strcmp(b, "-")) return !strcmp(a, b);
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* An input that is the rejects or the deletions file (a directory of
 * inputs holding it, or stdin given twice) would be read as events or
 * overwritten: refused. */
static int check_side_files(load *l, char **files, size_t nfiles, uih_error *err) {
  for (size_t i = 0; i < nfiles; i++) {
    if (l->o.rejects && same_file(files[i], l->o.rejects))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "load: input %s is the rejects file (it would be overwritten): put it elsewhere", files[i]);
    if (l->o.deletes && same_file(files[i], l->o.deletes))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "load: input %s is the deletions file: give it only to --delete", files[i]);
  }
  return UIH_OK;
}

/* `seed` folded with the layout's options, each with its presence. */
static uint64_t layout_digest(const uih_input_layout *lay, uint64_t seed) {
  const char *const v[] = {lay->format, lay->delimiter, lay->group, lay->map, lay->columns};
  uint64_t h = seed;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) h = v[i] ? XXH3_64bits_withSeed(v[i], strlen(v[i]), h + i + 1) : h * 31 + i;
  return h;
}

/* The load's identity, kept in each generation's record: its inputs, its
 * deletions, its schema, its through and horizon, and whether it rebuilt
 * the dictionaries (a part only loads that do have: the others' digests
 * are what they were before rebuilds existed). */
static uint64_t load_digest(load *l, uint64_t inputs, int64_t through, int64_t horizon) {
  uint64_t parts[6] = {inputs, ld_deletes_digest(l->deletes), uih_schema_version(l->schema), (uint64_t)through,
                       (uint64_t)horizon, 1};
  const uint64_t d = XXH3_64bits(parts, l->o.rebuild_dicts ? sizeof parts : sizeof parts - sizeof parts[5]);
  return l->o.layout ? layout_digest(l->o.layout, d) : d; /* the same files read another way are another load */
}

/* Each shard's current record (generation 0: none): every shard's, so
 * that --shard loads agree with a full one; a store opened for one shard
 * knows its own. *prev is where time stands: the latest through of any
 * (*any_prev 0: none). A load's through never goes back. */
static int read_currents(load *l, int64_t *prev, int *any_prev, uih_error *err) {
  *prev = INT64_MIN;
  *any_prev = 0;
  uih_generation *cur = l->current = calloc(l->nshards, sizeof *cur);
  if (!cur) return uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  for (uint32_t i = 0; i < l->nshards; i++) {
    if (!uih_store_has_shard(l->store, i)) continue;
    int has;
    int rc = current_record(l->store, i, &cur[i], &has, err);
    if (rc != UIH_OK) return rc;
    if (!has) continue;
    if (l->o.through != INT64_MIN && l->o.through < cur[i].through && (l->o.shard < 0 || i == (uint32_t)l->o.shard))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "load: through %" PRId64 " is before shard %u's current generation %u, through %" PRId64
                           " (a store's through only moves forward)",
                           l->o.through, i, cur[i].generation, cur[i].through);
    if (!*any_prev || cur[i].through > *prev) *prev = cur[i].through;
    *any_prev = 1;
  }
  return UIH_OK;
}

/* The deletions and the rejects file, before any input is read. */
static int open_side_files(load *l, char **files, size_t nfiles, uih_error *err) {
  int rc = check_side_files(l, files, nfiles, err);
  if (rc == UIH_OK && l->o.deletes) rc = read_deletes(l, err);
  if (rc != UIH_OK || !l->o.rejects) return rc;
  l->rejects = fopen(l->o.rejects, "w");
  if (!l->rejects)
    return uih_error_set(err, UIH_ERR_IO, "load: creating the rejects file %s: %s", l->o.rejects, strerror(errno));
  if (fputs("file,line,reason,record\n", l->rejects) == EOF)
    return uih_error_set(err, UIH_ERR_IO, "load: writing the rejects file %s: %s", l->o.rejects, strerror(errno));
  return UIH_OK;
}

/* Readers: one per thread (opts.threads), at most one per file and one
 * per 16 MiB of memory; one when bad records go to the rejects file or
 * strings are hashed into ids (both are kept in input order). Each sorts
 * into a sorter of its own with its share of the memory. */
#define LD_READER_MEMORY_MIN ((size_t)16 << 20)

static uint32_t readers_for(const load *l) {
  uint32_t n = l->o.threads > 1 ? l->o.threads : 1;
  if (n > 64) n = 64;
  if (n > l->o.memory / LD_READER_MEMORY_MIN) n = (uint32_t)(l->o.memory / LD_READER_MEMORY_MIN); /* a share worth sorting */
  if (n < 1) n = 1;
  if (n > l->nfiles) n = l->nfiles ? (uint32_t)l->nfiles : 1;
  if (l->rejects || l->ids) n = 1;
  return n;
}

/* Runs a shard's stream reads at most: the merge's threads each hold that
 * many files open (and a block of each), so their sum stays near 384,
 * well inside a 1,024 open-file limit, whatever the input's size. */
static size_t fan_in_for(const load *l) {
  const size_t streams = l->o.threads > 1 ? l->o.threads : 1;
  const size_t f = 384 / streams;
  return f < 8 ? 8 : f > LD_SORT_FAN_IN ? LD_SORT_FAN_IN : f;
}

/* Reads every input into the sorter: the inputs' digest and the latest
 * event time in *digest and *maxts. */
static int read_inputs(load *l, const char *const *inputs, size_t ninputs, uint64_t *digest, int64_t *maxts,
                       uih_error *err) {
  int rc = ld_files_expand(inputs, ninputs, &l->files, &l->nfiles, err);
  if (rc == UIH_OK) rc = open_side_files(l, l->files, l->nfiles, err);
  if (rc == UIH_OK && !(l->file_digests = calloc(l->nfiles + 1, sizeof *l->file_digests)))
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  for (size_t i = 0; rc == UIH_OK && i < l->nfiles; i++) { /* the read's progress: bytes as stored, if every size is known */
    struct stat st;
    if (strcmp(l->files[i], "-") == 0 || stat(l->files[i], &st) != 0 || !S_ISREG(st.st_mode)) {
      l->read_total = 0;
      break;
    }
    l->read_total += (uint64_t)st.st_size;
  }
  const uint32_t n = rc == UIH_OK ? readers_for(l) : 0;
  reader rds[64];
  memset(rds, 0, sizeof rds);
  for (uint32_t t = 0; t < n && rc == UIH_OK; t++) {
    reader *rd = &rds[t];
    rd->l = l;
    rd->maxts = INT64_MIN;
    rd->events_in = calloc(l->nshards, sizeof *rd->events_in);
    rd->buf = malloc(l->row_max);
    if (!rd->events_in || !rd->buf) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
    if (rc == UIH_OK)
      rc = ld_sorter_create(uih_store_tmpdir(l->store), l->o.memory / n, l->nshards, LD_ROW_HEAD, &rd->sorter, err);
    if (rc == UIH_OK) ld_sorter_set_fan_in(rd->sorter, fan_in_for(l));
  }
  l->failed_at = l->nfiles;
  l->next_file = 0;
  l->readers = rds;
  l->nreaders = n;
  const double t0 = l->read_began = now();
  if (rc == UIH_OK) {
    pthread_t threads[64];
    uint32_t started = 0;
    for (uint32_t t = 1; t < n; t++) {
      if (pthread_create(&threads[started], NULL, read_worker, &rds[t]) != 0) break;
      started++;
    }
    for (uint32_t t = 1 + started; t < n; t++) read_worker(&rds[t]); /* threads that did not start: here */
    read_worker(&rds[0]);
    for (uint32_t t = 0; t < started; t++) pthread_join(threads[t], NULL);
    if (l->fail_rc != UIH_OK) {
      *err = l->fail_err;
      rc = l->fail_rc;
    }
  }
  l->readers = NULL;
  l->nreaders = 0;
  /* Fold the readers into the load: their counts, and their sorters into the first. */
  *maxts = INT64_MIN;
  for (uint32_t t = 0; t < n; t++) {
    reader *rd = &rds[t];
    if (rc == UIH_OK) {
      for (uint32_t i = 0; i < l->nshards; i++) l->events_in[i] += rd->events_in[i];
      l->st.events_in += rd->events;
      l->st.events_skipped += rd->skipped;
      l->st.inputs += rd->inputs;
      l->st.input_bytes += rd->input_bytes;
      l->any_event |= rd->any_event;
      if (rd->maxts > *maxts) *maxts = rd->maxts;
    }
    if (t == 0) l->sorter = rd->sorter;
    else if (rc == UIH_OK) rc = ld_sorter_adopt(l->sorter, rd->sorter, err);
    else ld_sorter_free(rd->sorter);
    free(rd->events_in);
    free(rd->buf);
  }
  XXH3_state_t *digests = XXH3_createState();
  if (rc == UIH_OK && !digests) rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  if (rc == UIH_OK) {
    XXH3_64bits_reset(digests);
    for (size_t i = 0; i < l->nfiles; i++) XXH3_64bits_update(digests, &l->file_digests[i], sizeof l->file_digests[i]);
    *digest = XXH3_64bits_digest(digests);
  }
  XXH3_freeState(digests);
  ld_files_free(l->files, l->nfiles);
  l->files = NULL;
  free(l->file_digests);
  l->file_digests = NULL;
  if (rc == UIH_OK && l->rejects && fflush(l->rejects) != 0)
    rc = uih_error_set(err, UIH_ERR_IO, "load: writing the rejects file %s: %s", l->o.rejects, strerror(errno));
  if (rc != UIH_OK) return rc;
  progress(l, "read", -1, l->st.events_in, l->st.input_bytes, t0, l->read_done, l->read_total);
  l->st.seconds_read = now() - t0;
  return UIH_OK;
}

/* The load's through (given, or just past its latest event, never before
 * the store's) and the lookback's horizon. */
static int decide_through(load *l, int64_t prev, int any_prev, int64_t maxts, uih_error *err) {
  int64_t through = l->o.through;
  if (through == INT64_MIN) {
    if (!l->any_event && !any_prev)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "load: nothing to load: no events, no through given and no generation yet");
    through = l->any_event ? maxts + 1 : prev; /* every shard's events, loaded or not */
    if (any_prev && prev > through) through = prev;
  }
  int64_t horizon = INT64_MIN;
  if (l->o.lookback > 0) horizon = through >= INT64_MIN + l->o.lookback ? through - l->o.lookback : INT64_MIN;
  l->st.through = through;
  l->st.horizon = horizon;
  return UIH_OK;
}

/* Whether shard `shard`'s new generation is a layer above its current one
 * (uih/loader.h, "Layers"). */
static int layers_on(load *l, uint32_t shard, int *layered, uih_error *err) {
  *layered = 0;
  const uih_generation *cur = &l->current[shard];
  if (l->o.rewrite || l->o.rebuild_dicts || l->deletes || !cur->generation ||
      cur->schema_version != uih_schema_version(l->schema))
    return UIH_OK;
  uih_generation_layout lay;
  int rc = uih_store_generation_layout(l->store, shard, 0, &lay, err);
  if (rc != UIH_OK) return rc;
  *layered = lay.layers >= 1 && lay.layers < UIH_LOAD_LAYERS_MAX && (lay.bytes - lay.oldest_bytes) * 5 <= lay.oldest_bytes;
  return UIH_OK;
}

/* A job, with its writer, for each shard the load changes: not a shard
 * that already has this very load (a rerun). */
static int open_jobs(load *l, uint64_t digest, uih_error *err) {
  const uih_generation *cur = l->current;
  l->jobs = calloc(l->nshards, sizeof *l->jobs);
  if (!l->jobs) return uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  for (uint32_t i = 0; i < l->nshards; i++) {
    if (l->o.shard >= 0 && i != (uint32_t)l->o.shard) continue;
    if (cur[i].generation && cur[i].inputs_digest == digest && cur[i].through == l->st.through &&
        cur[i].horizon == l->st.horizon && cur[i].schema_version == uih_schema_version(l->schema)) {
      l->st.shards_skipped++;
      continue;
    }
    job *j = &l->jobs[l->njobs];
    j->shard = i;
    int layered;
    int rc = layers_on(l, i, &layered, err);
    if (rc == UIH_OK) rc = uih_store_writer_open(l->store, i, &j->writer, err);
    if (rc != UIH_OK) return rc;
    l->njobs++;
    if (layered && (rc = uih_store_writer_layer(j->writer, err)) != UIH_OK) return rc;
    j->merge = (ld_merge){.store = l->store, .schema = l->schema, .shard = i, .horizon = l->st.horizon,
                          .sorter = l->sorter, .deletes = l->deletes, .rebuild_dicts = l->o.rebuild_dicts != 0,
                          .writer = j->writer, .layered = layered, .base = &cur[i], .tick = merge_tick,
                          .tick_arg = l};
    l->merge_total += cur[i].events + l->events_in[i] + (l->o.rebuild_dicts ? cur[i].events : 0); /* counted first */
    uih_generation *g = &j->merge.record;
    g->through = l->st.through;
    g->horizon = l->st.horizon;
    g->schema_version = uih_schema_version(l->schema);
    g->events_in = l->events_in[i];
    g->inputs_digest = digest;
  }
  return UIH_OK;
}

/* Erased users leave the mutable tier with their shard's publish. */
static int erase_users(load *l, uih_error *err) {
  size_t nerased;
  const uint64_t *erased = ld_deletes_users(l->deletes, &nerased);
  if (nerased == 0 || l->njobs == 0) return UIH_OK;
  job **by_shard = calloc(l->nshards, sizeof *by_shard);
  if (!by_shard) return uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  for (size_t i = 0; i < l->njobs; i++) by_shard[l->jobs[i].shard] = &l->jobs[i];
  int rc = UIH_OK;
  for (size_t k = 0; k < nerased && rc == UIH_OK; k++) {
    job *j = by_shard[uih_shard_of(erased[k], l->nshards)];
    if (j) rc = uih_store_writer_erase_user(j->writer, erased[k], err);
  }
  free(by_shard);
  return rc;
}

static void add_stats(load *l, const job *j) {
  const uih_generation *g = &j->merge.record;
  l->st.duplicates += g->duplicates;
  l->st.expired += g->expired;
  l->st.deleted += g->deleted;
  l->st.events_new += g->events_new;
  l->st.events += g->events;
  l->st.stripes += g->stripes;
  l->st.histories += g->histories;
  l->st.bytes += g->bytes;
  l->st.stripes_copied += j->merge.stripes_copied;
  l->st.stripes_written += j->merge.stripes_written;
  l->st.stripes_upgraded += j->merge.stripes_upgraded;
  l->st.dicts_built += j->merge.dicts.built;
  l->st.dict_entries += j->merge.dicts.entries;
  l->st.dict_bytes += j->merge.dicts.bytes;
  l->st.dicts_declined += j->merge.dicts.declined;
  l->st.shards++;
  l->st.shards_layered += j->merge.layered != 0;
}

/* Every shard's files are written: publish them, one after another. */
static int publish_all(load *l, uih_error *err) {
  const double published = now();
  for (size_t i = 0; i < l->njobs; i++) {
    job *j = &l->jobs[i];
    int rc = uih_store_writer_publish(j->writer, &j->merge.record, err);
    j->writer = NULL;
    if (rc != UIH_OK) {
      if (i > 0)
        uih_error_prefix(err, "load: shards %u..%u have their new generation; shard %u failed: ", l->jobs[0].shard,
                         l->jobs[i - 1].shard, j->shard);
      return rc;
    }
    progress(l, "publish", (int32_t)j->shard, i + 1, 0, published, i + 1, l->njobs);
    add_stats(l, j);
    uih_generation_layout lay;
    if (uih_store_generation_layout(l->store, j->shard, 0, &lay, NULL) == UIH_OK && lay.layers > l->st.layers_max)
      l->st.layers_max = lay.layers;
  }
  return UIH_OK;
}

/* Read -> sort -> merge every shard on threads -> publish every shard. */
static int run(load *l, const char *const *inputs, size_t ninputs, uih_error *err) {
  int64_t prev, maxts;
  int any_prev;
  uint64_t inputs_digest;
  int rc = read_currents(l, &prev, &any_prev, err);
  if (rc == UIH_OK) rc = read_inputs(l, inputs, ninputs, &inputs_digest, &maxts, err);
  if (rc == UIH_OK) rc = decide_through(l, prev, any_prev, maxts, err);
  if (rc != UIH_OK) return rc;
  double t0 = now();
  rc = ld_sorter_finish(l->sorter, err);
  l->st.runs = ld_sorter_runs(l->sorter);
  l->st.seconds_sort = now() - t0;
  if (rc != UIH_OK) return rc;
  t0 = now();
  rc = open_jobs(l, load_digest(l, inputs_digest, l->st.through, l->st.horizon), err);
  if (rc == UIH_OK) rc = erase_users(l, err);
  if (rc == UIH_OK && (rc = merge_all(l, err)) != UIH_OK) uih_error_prefix(err, "load: no shard published: ");
  if (rc == UIH_OK) rc = publish_all(l, err);
  if (rc != UIH_OK) return rc;
  l->st.seconds_merge = now() - t0;
  return UIH_OK;
}

int uih_load(uih_store *store, const char *const *inputs, size_t ninputs, const uih_load_opts *opts,
             uih_load_stats *stats, uih_error *caller_err) {
  uih_error local;
  uih_error *err = caller_err ? caller_err : &local; /* the loader reads its messages (rejects) */
  if (store == NULL || (ninputs && inputs == NULL))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "load: NULL argument");
  load l = {.store = store, .schema = uih_store_schema(store), .nshards = uih_store_shards(store)};
  l.o = opts ? *opts : (uih_load_opts)UIH_LOAD_OPTS_DEFAULT;
  int rc = check_opts(store, &l.o, err);
  if (rc == UIH_OK && l.o.schema_json)
    rc = uih_store_schema_add(store, l.o.schema_json, l.o.schema_len, l.o.schema_origin, &l.schema, err);
  if (rc != UIH_OK) return rc;
  l.st.schema_version = uih_schema_version(l.schema);
  for (uint32_t g = 0; g < uih_schema_group_count(l.schema); g++) {
    size_t m = ld_row_max(uih_schema_group_at(l.schema, g));
    if (m > l.row_max) l.row_max = m;
  }
  l.events_in = calloc(l.nshards, sizeof *l.events_in);
  if (!l.events_in) return uih_error_set(err, UIH_ERR_NO_MEMORY, "load: out of memory");
  if (has_string_ids(l.schema) && (rc = uih_id_check_create(&l.ids, err)) != UIH_OK) {
    free(l.events_in);
    return rc;
  }
  pthread_mutex_init(&l.mu, NULL);
  rc = run(&l, inputs, ninputs, err);
  for (size_t i = 0; i < l.njobs; i++) uih_store_writer_abort(l.jobs[i].writer); /* what was not published */
  free(l.jobs);
  ld_sorter_free(l.sorter);
  ld_deletes_free(l.deletes);
  uih_id_check_free(l.ids);
  if (l.rejects && fclose(l.rejects) != 0 && rc == UIH_OK)
    rc = uih_error_set(err, UIH_ERR_IO, "load: writing the rejects file %s: %s", l.o.rejects, strerror(errno));
  free(l.current);
  free(l.events_in);
  pthread_mutex_destroy(&l.mu);
  if (rc == UIH_OK && stats) *stats = l.st;
  return rc;
}
