/* The loader's external sort (sort.h).
 *
 * A run file is its records in order, cut into blocks of about RUN_BLOCK
 * raw bytes (each record as a 4-byte little-endian length and its bytes;
 * a record never spans two blocks, nor a block two shards), each laid out
 * byte by byte (run_block.h) and stored compressed:
 *
 *   block   length (u32 LE) | stored length (u32 LE) | XXH3-64 of the
 *           laid-out bytes (u64 LE) | a zstd frame (level 1) of them
 *
 * bench/scale's history rows (48 raw bytes an event) are stored in ~11
 * bytes an event — about the generation they become. Streams read
 * at most a fan-in of runs: ld_sorter_finish first merges the oldest runs
 * beyond it into one (repeats kept, order checked). The sorter
 * remembers, per run, the offset where each shard's blocks begin, so a
 * shard's stream reads only its part, and the shard's last stream (the
 * merge's) punches the part out of each run as it reads it, so a spilling
 * load's runs shrink while the generation they become grows: its
 * temporary disk peaks near the larger of the two, not their sum. Runs are
 * read back a block at a time: a header outside what the part still
 * holds, a frame that does not decompress to its length or whose checksum
 * differs, a count or lengths that do not fit the block, a length below
 * min_len, a record of another shard, or records out of order are
 * corruption naming the run and the block's offset, never a wrong load. */
#define _GNU_SOURCE /* mkdtemp, fallocate */
#include "sort.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "cursor.h"
#include "error_internal.h"
#include "mem.h"
#include "run_block.h"

/* A record in memory: where it is, and its first KEY_BYTES bytes
 * (zero-padded) as big-endian numbers, whose order is those bytes' order:
 * a row's (shard, user, group, ts) — the sort reads them alone, and the
 * arena only for rows that share them. */
#define KEY_BYTES 20
typedef struct entry {
  uint64_t off;
  uint32_t len;
  uint32_t tail;    /* key bytes 16..19 */
  uint64_t head[2]; /* key bytes 0..7, 8..15 */
} entry;

static int reduce_runs(ld_sorter *s, uih_error *err);

static entry make_entry(uint64_t off, const uint8_t *rec, uint32_t len) {
  entry e = {off, len, 0, {0, 0}};
  for (uint32_t i = 0; i < 16; i++) e.head[i / 8] = e.head[i / 8] << 8 | (i < len ? rec[i] : 0);
  for (uint32_t i = 16; i < KEY_BYTES; i++) e.tail = e.tail << 8 | (i < len ? rec[i] : 0);
  return e;
}

/* Key byte b (0: the most significant) of an entry. */
static inline unsigned key_byte(const entry *e, unsigned b) {
  return b < 8 ? (unsigned)(e->head[0] >> (56 - 8 * b)) & 0xff
         : b < 16 ? (unsigned)(e->head[1] >> (120 - 8 * b)) & 0xff
                  : (e->tail >> (152 - 8 * b)) & 0xff;
}

static int same_key(const entry *a, const entry *b) {
  return a->head[0] == b->head[0] && a->head[1] == b->head[1] && a->tail == b->tail;
}

typedef struct run {
  char *path;
  uint64_t *starts; /* nshards + 1 byte offsets */
} run;

#define RUN_BLOCK ((size_t)128 << 10) /* raw bytes of a block, about (a longer record: its own) */
#define RUN_HEADER 16u

struct ld_sorter {
  char *dir;
  size_t memory;
  uint32_t nshards;
  uint32_t min_len;
  uint8_t *arena;
  size_t used, cap;
  entry *entries;
  size_t n, ecap;
  size_t count[KEY_BYTES][256]; /* the radix sort's counts of each key byte */
  run *runs;
  size_t nruns, rcap;
  int finished;
  uint32_t max_len; /* the longest record added: no block's raw bytes exceed it + 4 or RUN_BLOCK */
  size_t run_seq;   /* runs named so far (run-NNNNNN) */
  size_t fan_in;    /* runs a stream reads at most (ld_sorter_finish merges the rest) */
  uint64_t merged;  /* runs written and since merged into others */
  ld_sorter **parts; /* sorters adopted (ld_sorter_adopt): streams read their records too */
  size_t nparts;
  uint8_t *spent; /* per shard: 1 once a stream read it the last time (LD_STREAM_LAST) */
  /* spilling: the block being filled, laid out, its frame, the compressor */
  uint8_t *block, *laid, *frame;
  size_t blen, bcap, lcap, fcap;
  ld_run_block_scratch scratch;
  ZSTD_CCtx *cctx;
};

static uint16_t shard_of(const uint8_t *rec) { return uih_load_be16(rec); }

static int compare(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen > blen) - (alen < blen);
}

/* qsort has no context argument in C11: the arena being sorted. Sorting
 * happens on the thread that adds. */
static _Thread_local const uint8_t *sorting;
static int cmp_entries(const void *x, const void *y) {
  const entry *a = x, *b = y;
  if (a->head[0] != b->head[0]) return a->head[0] < b->head[0] ? -1 : 1;
  if (a->head[1] != b->head[1]) return a->head[1] < b->head[1] ? -1 : 1;
  if (a->tail != b->tail) return a->tail < b->tail ? -1 : 1;
  return compare(sorting + a->off, a->len, sorting + b->off, b->len);
}

int ld_sorter_create(const char *tmpdir, size_t memory, uint32_t nshards, uint32_t min_len, ld_sorter **out,
                     uih_error *err) {
  *out = NULL;
  if (min_len < 2) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "sort: records of at least %u bytes", min_len);
  if (mkdir(tmpdir, 0755) != 0 && errno != EEXIST)
    return uih_error_set(err, UIH_ERR_IO, "sort: creating %s: %s", tmpdir, strerror(errno));
  ld_sorter *s = calloc(1, sizeof *s);
  size_t len = strlen(tmpdir) + 32;
  if (!s || !(s->dir = malloc(len))) {
    free(s);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  }
  snprintf(s->dir, len, "%s/sort-XXXXXX", tmpdir);
  if (!mkdtemp(s->dir)) {
    int e = errno;
    free(s->dir);
    free(s);
    return uih_error_set(err, UIH_ERR_IO, "sort: creating a folder in %s: %s", tmpdir, strerror(e));
  }
  if (!(s->spent = calloc(nshards ? nshards : 1, 1))) {
    rmdir(s->dir);
    free(s->dir);
    free(s);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  }
  s->memory = memory;
  s->fan_in = LD_SORT_FAN_IN;
  s->nshards = nshards;
  s->min_len = min_len;
  *out = s;
  return UIH_OK;
}

/* Sorts the entries: a least-significant-digit radix sort of their keys,
 * a pass per key byte that not all of them share (a day's rows differ in
 * a few bytes of the user id and of the timestamp: ~10 of 20), then the
 * runs of one key by their whole bytes (a history's events of one
 * timestamp, seldom more than one). qsort took a comparison's callback and
 * a memcmp some twenty times a row, 4-5% of a day's load. The second
 * array lives while it sorts, as the merge sort's scratch did (the budget
 * of ld_sorter_add holds it). */
static int sort_memory(ld_sorter *s, uih_error *err) {
  sorting = s->arena;
  const size_t n = s->n;
  if (n < 64) { /* a load of no events has no entries */
    if (n) qsort(s->entries, n, sizeof *s->entries, cmp_entries);
    return UIH_OK;
  }
  entry *spare = malloc(n * sizeof *spare);
  if (!spare) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory (%zu entries)", n);
  size_t(*count)[256] = s->count;
  memset(s->count, 0, sizeof s->count);
  for (size_t i = 0; i < n; i++) {
    const entry *e = &s->entries[i];
    for (unsigned b = 0; b < 8; b++) count[b][(e->head[0] >> (56 - 8 * b)) & 0xff]++;
    for (unsigned b = 0; b < 8; b++) count[8 + b][(e->head[1] >> (56 - 8 * b)) & 0xff]++;
    for (unsigned b = 0; b < 4; b++) count[16 + b][(e->tail >> (24 - 8 * b)) & 0xff]++;
  }
  entry *src = s->entries, *dst = spare;
  for (unsigned b = KEY_BYTES; b-- > 0;) {
    size_t *c = count[b];
    if (c[key_byte(&src[0], b)] == n) continue; /* every entry has this byte */
    for (size_t d = 0, sum = 0; d < 256; d++) {
      const size_t k = c[d];
      c[d] = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; i++) dst[c[key_byte(&src[i], b)]++] = src[i];
    entry *t = src;
    src = dst;
    dst = t;
  }
  if (src != s->entries) { /* the sorted array becomes the entries */
    free(s->entries);
    s->entries = src;
    s->ecap = n;
  } else {
    free(spare);
  }
  for (size_t i = 0; i < n;) { /* runs of one key, by their bytes */
    size_t j = i + 1;
    while (j < n && same_key(&s->entries[j], &s->entries[i])) j++;
    if (j - i > 1) qsort(s->entries + i, j - i, sizeof *s->entries, cmp_entries);
    i = j;
  }
  return UIH_OK;
}

static int grow(uint8_t **b, size_t *cap, size_t want, uih_error *err) {
  if (want <= *cap) return UIH_OK;
  uint8_t *n = realloc(*b, want);
  if (!n) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  *b = n;
  *cap = want;
  return UIH_OK;
}

/* Appends the block being filled to `f` as a compressed block (header
 * above), and empties it. */
static int flush_block(ld_sorter *s, FILE *f, const char *path, uint64_t *off, uih_error *err) {
  if (s->blen == 0) return UIH_OK;
  const size_t laid = s->blen + 4;
  UIH_FORWARD(grow(&s->laid, &s->lcap, laid, err));
  UIH_FORWARD(grow(&s->frame, &s->fcap, ZSTD_compressBound(laid), err));
  UIH_FORWARD(ld_run_block_encode(s->block, s->blen, s->laid, &s->scratch, err));
  if (!s->cctx && !(s->cctx = ZSTD_createCCtx())) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  const size_t z = ZSTD_compressCCtx(s->cctx, s->frame, s->fcap, s->laid, laid, 1);
  if (ZSTD_isError(z))
    return uih_error_set(err, UIH_ERR_INTERNAL, "sort: compressing a block of %s: %s", path, ZSTD_getErrorName(z));
  uint8_t h[RUN_HEADER];
  uih_store_le32(h, (uint32_t)laid);
  uih_store_le32(h + 4, (uint32_t)z);
  uih_store_le64(h + 8, XXH3_64bits(s->laid, laid));
  fwrite(h, 1, sizeof h, f);
  fwrite(s->frame, 1, z, f);
  *off += sizeof h + z;
  s->blen = 0;
  return UIH_OK;
}

/* A run being written: records in order go into blocks (one shard per
 * block), the offset where each shard's blocks begin noted. */
typedef struct run_out {
  run *r;
  FILE *f;
  uint64_t off;
  uint32_t shard;
} run_out;

static int run_begin(ld_sorter *s, run_out *o, uih_error *err) {
  memset(o, 0, sizeof *o);
  if (s->nruns == s->rcap) {
    size_t c = s->rcap ? s->rcap * 2 : 8;
    run *r = realloc(s->runs, c * sizeof *r);
    if (!r) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
    s->runs = r;
    s->rcap = c;
  }
  run *r = &s->runs[s->nruns];
  size_t len = strlen(s->dir) + 32;
  r->path = malloc(len);
  r->starts = calloc(s->nshards + 1u, sizeof *r->starts);
  if (!r->path || !r->starts) {
    free(r->path);
    free(r->starts);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  }
  snprintf(r->path, len, "%s/run-%06zu", s->dir, s->run_seq++);
  s->nruns++;
  o->r = r;
  o->f = fopen(r->path, "wb");
  if (!o->f) return uih_error_set(err, UIH_ERR_IO, "sort: creating %s: %s", r->path, strerror(errno));
  setvbuf(o->f, NULL, _IOFBF, 1 << 20);
  s->blen = 0;
  return UIH_OK;
}

static int run_put(ld_sorter *s, run_out *o, const uint8_t *rec, uint32_t l, uih_error *err) {
  int rc = UIH_OK;
  if (o->shard < shard_of(rec)) rc = flush_block(s, o->f, o->r->path, &o->off, err); /* a block holds one shard */
  while (o->shard < shard_of(rec)) o->r->starts[++o->shard] = o->off;
  if (rc == UIH_OK && s->blen > 0 && s->blen + 4u + l > RUN_BLOCK) rc = flush_block(s, o->f, o->r->path, &o->off, err);
  if (rc == UIH_OK && s->blen + 4u + l > s->bcap) {
    size_t c = s->blen + 4u + l > RUN_BLOCK ? s->blen + 4u + l : RUN_BLOCK;
    uint8_t *b = realloc(s->block, c);
    if (!b) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
    s->block = b;
    s->bcap = c;
  }
  if (rc != UIH_OK) return rc;
  uih_store_le32(s->block + s->blen, l);
  memcpy(s->block + s->blen + 4, rec, l);
  s->blen += 4u + l;
  return UIH_OK;
}

static int run_end(ld_sorter *s, run_out *o, int rc, uih_error *err) {
  if (!o->f) return rc;
  if (rc == UIH_OK) rc = flush_block(s, o->f, o->r->path, &o->off, err);
  while (o->shard < s->nshards) o->r->starts[++o->shard] = o->off;
  int bad = ferror(o->f);
  if (fclose(o->f) != 0) bad = 1;
  o->f = NULL;
  if (rc == UIH_OK && bad) rc = uih_error_set(err, UIH_ERR_IO, "sort: writing %s: %s", o->r->path, strerror(errno));
  return rc;
}

/* Writes what is in memory as a sorted run and empties memory. */
static int spill(ld_sorter *s, uih_error *err) {
  UIH_FORWARD(sort_memory(s, err));
  run_out o;
  int rc = run_begin(s, &o, err);
  for (size_t i = 0; i < s->n && rc == UIH_OK; i++)
    rc = run_put(s, &o, s->arena + s->entries[i].off, s->entries[i].len, err);
  rc = run_end(s, &o, rc, err);
  if (rc != UIH_OK) return rc;
  s->used = 0;
  s->n = 0;
  return UIH_OK;
}

int ld_sorter_add(ld_sorter *s, const uint8_t *rec, uint32_t len, uih_error *err) {
  if (len < s->min_len || shard_of(rec) >= s->nshards)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "sort: a record of %u bytes (at least %u) for shard %u", len,
                         s->min_len, len >= 2 ? shard_of(rec) : 0);
  /* The records, their entries, and as much again for the entries: the
   * radix sort's second array (sort_memory). */
  size_t need = s->used + len + 2 * (s->n + 1) * sizeof(entry);
  if (need > s->memory && s->n > 0) {
    int rc = spill(s, err);
    if (rc != UIH_OK) return rc;
  }
  if (s->used + len > s->cap) {
    size_t c = s->cap ? s->cap : 1 << 20;
    while (c < s->used + len) c *= 2;
    uint8_t *a = realloc(s->arena, c);
    if (!a) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory (%zu bytes of records)", c);
    s->arena = a;
    s->cap = c;
  }
  if (s->n == s->ecap) {
    size_t c = s->ecap ? s->ecap * 2 : 1 << 14;
    entry *e = realloc(s->entries, c * sizeof *e);
    if (!e) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
    s->entries = e;
    s->ecap = c;
  }
  memcpy(s->arena + s->used, rec, len);
  s->entries[s->n++] = make_entry(s->used, rec, len);
  if (len > s->max_len) s->max_len = len;
  s->used += len;
  return UIH_OK;
}

/* 1 when a shard was read the last time: its parts of the runs are gone. */
static int any_spent(const ld_sorter *s) {
  for (uint32_t i = 0; i < s->nshards; i++)
    if (s->spent[i]) return 1;
  return 0;
}

int ld_sorter_finish(ld_sorter *s, uih_error *err) {
  if (any_spent(s))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "sort: finishing after a shard's last stream");
  if (!s->finished) {
    if (s->nruns > 0 && s->n > 0) {
      /* A sort that spilled spills the rest too and lets its memory go: the
       * merge that reads the runs then has the load's memory for itself. */
      int rc = spill(s, err);
      if (rc != UIH_OK) return rc;
    }
    if (s->nruns > 0) {
      free(s->arena);
      free(s->entries);
      s->arena = NULL;
      s->entries = NULL;
      s->cap = s->ecap = 0;
    }
    UIH_FORWARD(sort_memory(s, err));
    s->finished = 1;
  }
  return reduce_runs(s, err);
}

void ld_sorter_set_fan_in(ld_sorter *s, size_t fan_in) { s->fan_in = fan_in < 2 ? 2 : fan_in; }

uint64_t ld_sorter_runs(const ld_sorter *s) { return s->nruns + s->merged; }

int ld_sorter_adopt(ld_sorter *s, ld_sorter *part, uih_error *err) {
  if (!s->finished || !part->finished || part->nparts || part == s || part->nshards != s->nshards ||
      part->min_len != s->min_len || any_spent(s) || any_spent(part)) {
    ld_sorter_free(part);
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "sort: adopting a sorter unfinished, unlike this one, or after a last stream");
  }
  ld_sorter **p = realloc(s->parts, (s->nparts + 1) * sizeof *p);
  run *r = p ? realloc(s->runs, (s->nruns + part->nruns + 1) * sizeof *r) : NULL;
  if (p) s->parts = p;
  if (!r) {
    ld_sorter_free(part);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  }
  /* Its runs become this sorter's (their files stay in its folder, which
   * goes when they have), its memory stays its own. */
  s->runs = r;
  s->rcap = s->nruns + part->nruns + 1;
  if (part->nruns) memcpy(s->runs + s->nruns, part->runs, part->nruns * sizeof *r);
  s->nruns += part->nruns;
  part->nruns = 0;
  s->merged += part->merged;
  if (part->max_len > s->max_len) s->max_len = part->max_len;
  s->parts[s->nparts++] = part;
  return UIH_OK;
}

void ld_sorter_free(ld_sorter *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nruns; i++) {
    unlink(s->runs[i].path);
    free(s->runs[i].path);
    free(s->runs[i].starts);
  }
  if (s->dir) rmdir(s->dir);
  for (size_t i = 0; i < s->nparts; i++) ld_sorter_free(s->parts[i]); /* their folders: empty now */
  free(s->parts);
  free(s->runs);
  free(s->dir);
  free(s->arena);
  free(s->entries);
  free(s->spent);
  free(s->block);
  free(s->laid);
  free(s->frame);
  ld_run_block_scratch_free(&s->scratch);
  ZSTD_freeCCtx(s->cctx);
  free(s);
}

/* ---- streams ------------------------------------------------------------------ */

/* A run's part of one shard is read a block at a time: its header, its
 * frame into `frame`, decompressed into `laid`, its records put back one
 * after another into `buf`, and read through a cursor over them. The
 * bytes are the disk's, so the header is checked against what the part
 * still holds and the block's largest size, the frame against its length
 * and checksum, the laid-out block against itself (run_block.h), each
 * record's length against what the block still holds and its shard
 * against the stream's. The last stream of a shard punches what it has
 * read out of the run (`punched`: up to where). */
typedef struct source {
  const ld_sorter *owner; /* whose run or memory */
  FILE *f;            /* a run, or NULL: memory */
  const char *path;   /* the run's, for messages */
  uint64_t left;      /* run bytes of this shard not yet read */
  uint64_t at;        /* offset in the run of the next block */
  uint64_t block;     /* offset in the run of the block in buf */
  size_t next, end;   /* memory: entries [next, end) */
  const uint8_t *rec; /* the current record, NULL when done */
  uint32_t len;
  size_t at_byte;     /* its length's byte in the block */
  uint8_t *buf, *laid, *frame; /* the block's raw bytes, laid out, its stored frame */
  size_t cap, lcap, fcap;
  uint64_t punched;
  uih_cursor c; /* over buf's records not taken yet */
} source;

struct ld_stream {
  ld_sorter *s;
  uint32_t shard;
  source *src;
  size_t nsrc;
  ZSTD_DCtx *dctx;
  ld_run_block_scratch scratch;
  int last_read; /* LD_STREAM_LAST: the runs' parts read are given back */
  uint8_t *last; /* the record returned last (a copy), to drop repeats */
  uint32_t last_len;
  size_t last_cap;
  int has_last;
  uint64_t repeats;
  size_t *heap; /* the sources with a record, a min-heap by (record, place in src) */
  size_t nheap;
  int heaped;   /* the heap is built (at the first take: every source has its first record) */
};

#define RUN_PUNCH ((uint64_t)1 << 20) /* a last stream gives back read bytes this many at a time */

/* Gives the disk back the run's bytes from x->punched to the end of the
 * block just read (its records are in x->buf now), once there are
 * RUN_PUNCH of them or the part is read. A file system that cannot punch
 * keeps them until the run is removed: only space is at stake, never a
 * record. */
static void punch(source *x) {
  const uint64_t to = x->at;
  if (to == x->punched || (to - x->punched < RUN_PUNCH && x->left > 0)) return;
  (void)fallocate(fileno(x->f), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)x->punched,
                  (off_t)(to - x->punched));
  x->punched = to;
}

/* Reads the part's next block into x->c (empty at the part's end). */
static int next_block(ld_stream *st, source *x, uih_error *err) {
  x->c = uih_cursor_make(x->buf, 0);
  if (x->left == 0) return UIH_OK;
  const uint64_t at = x->block = x->at;
  if (x->left < RUN_HEADER)
    return uih_corruption(err, "sort: %s: at offset %" PRIu64 ": the shard's part ends inside a block header (%" PRIu64
                          " bytes)", x->path, at, x->left);
  uint8_t h[RUN_HEADER];
  size_t got = fread(h, 1, sizeof h, x->f);
  if (got != sizeof h)
    return uih_error_set(err, UIH_ERR_IO, "sort: %s: the run ends %" PRIu64 " bytes early (%s)", x->path,
                         x->left - got, ferror(x->f) ? strerror(errno) : "end of file");
  const uint32_t laid = uih_load_le32(h), z = uih_load_le32(h + 4);
  const uint64_t sum = uih_load_le64(h + 8);
  const size_t most = ((size_t)x->owner->max_len + 4u > RUN_BLOCK ? (size_t)x->owner->max_len + 4u : RUN_BLOCK) + 4u;
  if (laid <= 4 || laid > most || z == 0 || z > x->left - RUN_HEADER || z > ZSTD_compressBound(most))
    return uih_corruption(err, "sort: %s: at offset %" PRIu64 ": a block of %u bytes stored in %u, expected 5..%zu"
                          " stored in 1..%" PRIu64 " (what the shard's part of the run holds)", x->path, at, laid, z,
                          most, x->left - RUN_HEADER);
  int rc = grow(&x->frame, &x->fcap, z, err);
  if (rc == UIH_OK) rc = grow(&x->laid, &x->lcap, laid, err);
  if (rc == UIH_OK) rc = grow(&x->buf, &x->cap, laid - 4u, err);
  if (rc != UIH_OK) return rc;
  got = fread(x->frame, 1, z, x->f);
  if (got != z)
    return uih_error_set(err, UIH_ERR_IO, "sort: %s: the run ends %" PRIu64 " bytes early (%s)", x->path,
                         x->left - RUN_HEADER - got, ferror(x->f) ? strerror(errno) : "end of file");
  x->left -= RUN_HEADER + z;
  x->at += RUN_HEADER + z;
  if (!st->dctx && !(st->dctx = ZSTD_createDCtx())) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  const size_t d = ZSTD_decompressDCtx(st->dctx, x->laid, laid, x->frame, z);
  if (ZSTD_isError(d) || d != laid)
    return uih_corruption(err, "sort: %s: at offset %" PRIu64 ": the block does not decompress to its %u bytes (%s)",
                          x->path, at, laid, ZSTD_isError(d) ? ZSTD_getErrorName(d) : "another length");
  if (XXH3_64bits(x->laid, laid) != sum)
    return uih_corruption(err, "sort: %s: at offset %" PRIu64 ": the block's checksum differs", x->path, at);
  rc = ld_run_block_decode(x->laid, laid, st->s->min_len, x->buf, &st->scratch, err);
  if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "sort: %s: block at offset %" PRIu64 ", ", x->path, at);
  if (st->last_read) punch(x);
  x->c = uih_cursor_make(x->buf, laid - 4u);
  return UIH_OK;
}

static int advance(ld_stream *st, source *x, uih_error *err) {
  if (!x->f) {
    if (x->next == x->end) {
      x->rec = NULL;
      return UIH_OK;
    }
    const entry *e = &x->owner->entries[x->next++];
    x->rec = x->owner->arena + e->off;
    x->len = e->len;
    return UIH_OK;
  }
  x->rec = NULL; /* until a whole record is there */
  if (uih_cursor_left(&x->c) == 0) {
    int rc = next_block(st, x, err);
    if (rc != UIH_OK) return rc;
    if (uih_cursor_left(&x->c) == 0) return UIH_OK;
  }
  /* Messages name the block by its offset in the run, the record by its
   * byte in the block's raw bytes. */
  const size_t byte = (size_t)(x->c.p - x->buf);
  if (uih_cursor_left(&x->c) < 4)
    return uih_corruption(err, "sort: %s: block at offset %" PRIu64 ", byte %zu: the block ends inside a record's"
                          " length (%zu bytes)", x->path, x->block, byte, uih_cursor_left(&x->c));
  const uint32_t len = uih_cursor_u32(&x->c);
  if (len < st->s->min_len || len > uih_cursor_left(&x->c))
    return uih_corruption(err, "sort: %s: block at offset %" PRIu64 ", byte %zu: a record of %u bytes, expected"
                          " %u..%zu (what the block holds)", x->path, x->block, byte, len, st->s->min_len,
                          uih_cursor_left(&x->c));
  x->rec = uih_cursor_take(&x->c, len);
  x->len = len;
  x->at_byte = byte;
  if (shard_of(x->rec) != st->shard)
    return uih_corruption(err, "sort: %s: block at offset %" PRIu64 ", byte %zu: a record of shard %u in shard %u's"
                          " part", x->path, x->block, byte, shard_of(x->rec), st->shard);
  return UIH_OK;
}

/* The first entry of memory whose shard is >= `shard`. */
static size_t lower(const ld_sorter *s, uint32_t shard) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (shard_of(s->arena + s->entries[mid].off) < shard) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Adds run `r` of `o` (its part of the stream's shard) to the stream's sources. */
static int open_run(ld_stream *st, const ld_sorter *o, const run *r, uih_error *err) {
  source *x = &st->src[st->nsrc++];
  x->owner = o;
  x->path = r->path;
  x->at = x->punched = r->starts[st->shard];
  x->left = r->starts[st->shard + 1] - r->starts[st->shard];
  x->f = fopen(r->path, st->last_read ? "r+b" : "rb"); /* punching needs a descriptor open for writing */
  if (!x->f || fseeko(x->f, (off_t)x->at, SEEK_SET) != 0)
    return uih_error_set(err, UIH_ERR_IO, "sort: reading %s: %s", r->path, strerror(errno));
  return advance(st, x, err);
}

/* Adds `o`'s sources of the stream's shard: its runs' parts, then its memory. */
static int open_sources(ld_stream *st, const ld_sorter *o, uih_error *err) {
  for (size_t i = 0; i < o->nruns; i++) {
    int rc = open_run(st, o, &o->runs[i], err);
    if (rc != UIH_OK) return rc;
  }
  source *x = &st->src[st->nsrc++];
  x->owner = o;
  x->next = lower(o, st->shard);
  x->end = lower(o, st->shard + 1);
  return advance(st, x, err);
}

int ld_stream_open(ld_sorter *s, uint32_t shard, int mode, ld_stream **out, uih_error *err) {
  *out = NULL;
  if (!s->finished || shard >= s->nshards)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "sort: a stream of shard %u (of %u) before the sort finished",
                         shard, s->nshards);
  if (s->spent[shard])
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "sort: a stream of shard %u after its last one", shard);
  ld_stream *st = calloc(1, sizeof *st);
  if (!st || !(st->src = calloc(s->nruns + 1 + s->nparts, sizeof *st->src))) {
    free(st);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
  }
  st->s = s;
  st->shard = shard;
  st->last_read = mode == LD_STREAM_LAST;
  if (st->last_read) s->spent[shard] = 1;
  int rc = open_sources(st, s, err);
  for (size_t i = 0; i < s->nparts && rc == UIH_OK; i++) rc = open_sources(st, s->parts[i], err);
  if (rc != UIH_OK) {
    ld_stream_close(st);
    return rc;
  }
  *out = st;
  return UIH_OK;
}

/* 1 when source i's record comes before source j's: by its bytes, then
 * by their places (equal records leave the earlier source first). */
static int src_before(const ld_stream *st, size_t i, size_t j) {
  const source *a = &st->src[i], *b = &st->src[j];
  const int c = compare(a->rec, a->len, b->rec, b->len);
  return c < 0 || (c == 0 && i < j);
}

/* Restores the heap below position h. */
static void sift_down(ld_stream *st, size_t h) {
  size_t *heap = st->heap;
  for (;;) {
    const size_t l = 2 * h + 1, r = l + 1;
    size_t m = h;
    if (l < st->nheap && src_before(st, heap[l], heap[m])) m = l;
    if (r < st->nheap && src_before(st, heap[r], heap[m])) m = r;
    if (m == h) return;
    const size_t t = heap[h];
    heap[h] = heap[m], heap[m] = t;
    h = m;
  }
}

/* Takes the smallest current record of the stream's sources into
 * st->last, checked to come at or after the last one taken (*repeat: the
 * same bytes), and moves its source on; *done when every source is. The
 * sources are a heap: a record costs log2 of their number in comparisons,
 * not their number (a spilling load's stream reads tens of runs). */
static int take(ld_stream *st, int *done, int *repeat, uih_error *err) {
  if (!st->heaped) {
    if (!(st->heap = malloc((st->nsrc ? st->nsrc : 1) * sizeof *st->heap)))
      return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
    for (size_t i = 0; i < st->nsrc; i++)
      if (st->src[i].rec) st->heap[st->nheap++] = i;
    for (size_t h = st->nheap / 2; h-- > 0;) sift_down(st, h);
    st->heaped = 1;
  }
  *done = st->nheap == 0;
  if (*done) return UIH_OK;
  source *best = &st->src[st->heap[0]];
  const int order = st->has_last ? compare(best->rec, best->len, st->last, st->last_len) : 1;
  if (order < 0) /* each source is in order, so their merge is: not this one */
    return best->f ? uih_corruption(err, "sort: %s: block at offset %" PRIu64 ", byte %zu: a record out of order",
                                    best->path, best->block, best->at_byte)
                   : uih_error_set(err, UIH_ERR_INTERNAL, "sort: a record in memory out of order");
  *repeat = order == 0;
  if (!*repeat) {
    if (best->len > st->last_cap) {
      uint8_t *b = realloc(st->last, best->len);
      if (!b) return uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
      st->last = b;
      st->last_cap = best->len;
    }
    memcpy(st->last, best->rec, best->len);
    st->last_len = best->len;
    st->has_last = 1;
  }
  const int rc = advance(st, best, err);
  if (rc != UIH_OK) return rc;
  if (!best->rec) st->heap[0] = st->heap[--st->nheap]; /* the source is done */
  if (st->nheap > 1) sift_down(st, 0);
  return UIH_OK;
}

int ld_stream_next(ld_stream *st, const uint8_t **rec, uint32_t *len, uih_error *err) {
  for (;;) {
    int done, repeat;
    int rc = take(st, &done, &repeat, err);
    if (rc != UIH_OK) return rc;
    if (done) {
      *rec = NULL;
      *len = 0;
      return UIH_OK;
    }
    if (repeat) {
      st->repeats++;
      continue;
    }
    *rec = st->last;
    *len = st->last_len;
    return UIH_OK;
  }
}

uint64_t ld_stream_repeats(const ld_stream *st) { return st->repeats; }

void ld_stream_close(ld_stream *st) {
  if (!st) return;
  for (size_t i = 0; i < st->nsrc; i++) {
    if (st->src[i].f) fclose(st->src[i].f);
    free(st->src[i].buf);
    free(st->src[i].laid);
    free(st->src[i].frame);
  }
  free(st->src);
  free(st->heap);
  free(st->last);
  ld_run_block_scratch_free(&st->scratch);
  ZSTD_freeDCtx(st->dctx);
  free(st);
}

/* ---- the fan-in ------------------------------------------------------------- */

/* Merges runs [0, k) into one new run (every shard's part, repeats kept:
 * the streams count them), then drops them. */
static int merge_runs(ld_sorter *s, size_t k, uih_error *err) {
  run_out o;
  int rc = run_begin(s, &o, err);
  for (uint32_t shard = 0; shard < s->nshards && rc == UIH_OK; shard++) {
    ld_stream *st = calloc(1, sizeof *st);
    if (!st || !(st->src = calloc(k, sizeof *st->src))) {
      free(st);
      rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "sort: out of memory");
      break;
    }
    st->s = s;
    st->shard = shard;
    for (size_t i = 0; i < k && rc == UIH_OK; i++) rc = open_run(st, s, &s->runs[i], err);
    for (int done = 0, repeat; rc == UIH_OK;) {
      rc = take(st, &done, &repeat, err);
      if (rc != UIH_OK || done) break;
      rc = run_put(s, &o, st->last, st->last_len, err); /* a repeat too: the streams count them */
    }
    ld_stream_close(st);
  }
  rc = run_end(s, &o, rc, err);
  if (rc != UIH_OK) return rc;
  for (size_t i = 0; i < k; i++) {
    unlink(s->runs[i].path);
    free(s->runs[i].path);
    free(s->runs[i].starts);
  }
  memmove(s->runs, s->runs + k, (s->nruns - k) * sizeof *s->runs);
  s->nruns -= k;
  s->merged += k;
  return UIH_OK;
}

/* Merges the oldest runs until at most fan_in are left: as few as that
 * takes (runs - fan_in + 1 at a time, up to fan_in), so a load just past
 * the fan-in writes again only what it must. A stream then holds at most
 * fan_in runs open and a block of each in memory. */
static int reduce_runs(ld_sorter *s, uih_error *err) {
  while (s->nruns > s->fan_in) {
    size_t k = s->nruns - s->fan_in + 1;
    if (k > s->fan_in) k = s->fan_in;
    int rc = merge_runs(s, k, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}
