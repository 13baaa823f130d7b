/* The loader's inputs (input.h): fopencookie streams over plain, gzip
 * (zlib) and zstd (libzstd) files. */
#define _GNU_SOURCE /* fopencookie */
#include "input.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

enum { KIND_PLAIN, KIND_GZIP, KIND_ZSTD };
#define RAW_BUF (1u << 17)

struct ld_input {
  char *name;
  FILE *raw;  /* the file as stored */
  int own_raw;
  FILE *text; /* what the CSV reader reads */
  int kind;
  uint8_t *buf; /* raw bytes read ahead */
  size_t have, pos;
  uint64_t raw_read; /* raw bytes consumed, for messages and progress */
  int raw_eof;
  z_stream z;
  int z_live, z_end; /* inflate initialized; the last member ended */
  ZSTD_DStream *zs;
  size_t zs_last; /* ZSTD_decompressStream's last hint: 0 at a frame's end */
  XXH3_state_t *hash;
  uint64_t bytes;
  char failure[256];
};

/* Records why reading failed ("NAME: WHAT near byte N[: DETAIL]") and fails
 * the read. */
static int fail(ld_input *in, const char *what, const char *detail) {
  snprintf(in->failure, sizeof in->failure, "%s: %s near byte %llu of the file%s%s", in->name, what,
           (unsigned long long)in->raw_read, detail[0] ? ": " : "", detail);
  errno = EIO;
  return -1;
}

/* Refills the raw buffer; returns the bytes now available (0 at the end). */
static size_t refill(ld_input *in) {
  if (in->pos < in->have) return in->have - in->pos;
  in->pos = in->have = 0;
  if (in->raw_eof) return 0;
  in->have = fread(in->buf, 1, RAW_BUF, in->raw);
  if (in->have < RAW_BUF) in->raw_eof = 1;
  return in->have;
}

static ssize_t read_plain(ld_input *in, char *out, size_t n) {
  size_t got = 0;
  while (got < n && refill(in)) {
    size_t k = in->have - in->pos < n - got ? in->have - in->pos : n - got;
    memcpy(out + got, in->buf + in->pos, k);
    in->pos += k;
    in->raw_read += k;
    got += k;
  }
  return (ssize_t)got;
}

static ssize_t read_gzip(ld_input *in, char *out, size_t n) {
  in->z.next_out = (Bytef *)out;
  in->z.avail_out = (uInt)n;
  while (in->z.avail_out > 0) {
    if (in->z_end) { /* another member follows, or the end */
      if (!refill(in)) break;
      if (inflateReset(&in->z) != Z_OK) return fail(in, "gzip: cannot start the next member", "");
      in->z_end = 0;
    }
    if (in->z.avail_in == 0) {
      if (!refill(in)) return fail(in, "truncated gzip data: the file ends inside a member", "");
      in->z.next_in = in->buf + in->pos;
      in->z.avail_in = (uInt)(in->have - in->pos);
    }
    uInt before = in->z.avail_in;
    int rc = inflate(&in->z, Z_NO_FLUSH);
    in->pos += before - in->z.avail_in;
    in->raw_read += before - in->z.avail_in;
    if (rc == Z_STREAM_END) {
      in->z_end = 1;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      return fail(in, "corrupt gzip data", in->z.msg ? in->z.msg : zError(rc));
  }
  return (ssize_t)(n - in->z.avail_out);
}

static ssize_t read_zstd(ld_input *in, char *out, size_t n) {
  ZSTD_outBuffer ob = {out, n, 0};
  while (ob.pos < ob.size) {
    if (in->pos == in->have && !refill(in)) {
      if (in->zs_last != 0) return fail(in, "truncated zstd data: the file ends inside a frame", "");
      break;
    }
    ZSTD_inBuffer ib = {in->buf + in->pos, in->have - in->pos, 0};
    size_t rc = ZSTD_decompressStream(in->zs, &ob, &ib);
    in->pos += ib.pos;
    in->raw_read += ib.pos;
    if (ZSTD_isError(rc)) return fail(in, "corrupt zstd data", ZSTD_getErrorName(rc));
    in->zs_last = rc;
    if (ib.pos == 0 && ob.pos == 0 && rc != 0 && in->pos == in->have && in->raw_eof)
      return fail(in, "truncated zstd data: the file ends inside a frame", "");
  }
  return (ssize_t)ob.pos;
}

static ssize_t cookie_read(void *cookie, char *out, size_t n) {
  ld_input *in = cookie;
  if (in->failure[0]) {
    errno = EIO;
    return -1;
  }
  ssize_t got = in->kind == KIND_GZIP ? read_gzip(in, out, n)
                : in->kind == KIND_ZSTD ? read_zstd(in, out, n)
                                        : read_plain(in, out, n);
  if (got > 0) {
    XXH3_64bits_update(in->hash, out, (size_t)got);
    in->bytes += (uint64_t)got;
  } else if (got == 0 && ferror(in->raw)) {
    return fail(in, "read failed", strerror(errno));
  }
  return got;
}

static int cookie_close(void *cookie) {
  (void)cookie;
  return 0;
}

int ld_input_open(const char *path, ld_input **out, uih_error *err) {
  *out = NULL;
  ld_input *in = calloc(1, sizeof *in);
  if (!in) return uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", path);
  in->name = strdup(strcmp(path, "-") ? path : "<stdin>");
  in->buf = malloc(RAW_BUF);
  in->hash = XXH3_createState();
  int rc = UIH_OK;
  if (!in->name || !in->buf || !in->hash) {
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: out of memory", path);
    goto failed;
  }
  XXH3_64bits_reset(in->hash);
  if (strcmp(path, "-") == 0) {
    in->raw = stdin;
  } else {
    in->raw = fopen(path, "rb");
    in->own_raw = 1;
    if (!in->raw) {
      rc = uih_error_set(err, errno == ENOENT ? UIH_ERR_NOT_FOUND : UIH_ERR_IO, "%s: %s", path, strerror(errno));
      goto failed;
    }
  }
  refill(in);
  if (ferror(in->raw)) {
    rc = uih_error_set(err, UIH_ERR_IO, "%s: %s", in->name, strerror(errno));
    goto failed;
  }
  const uint8_t *m = in->buf;
  if (in->have >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
    in->kind = KIND_GZIP;
    if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK) {
      rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: cannot start gzip decompression", in->name);
      goto failed;
    }
    in->z_live = 1;
  } else if (in->have >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
    in->kind = KIND_ZSTD;
    in->zs = ZSTD_createDStream();
    if (!in->zs || ZSTD_isError(ZSTD_initDStream(in->zs))) {
      rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: cannot start zstd decompression", in->name);
      goto failed;
    }
  }
  cookie_io_functions_t io = {.read = cookie_read, .close = cookie_close};
  in->text = fopencookie(in, "r", io);
  if (!in->text) {
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "%s: cannot open a stream: %s", in->name, strerror(errno));
    goto failed;
  }
  *out = in;
  return UIH_OK;
failed:
  ld_input_close(in);
  return rc;
}

FILE *ld_input_stream(ld_input *in) { return in->text; }
const char *ld_input_failure(const ld_input *in) { return in->failure[0] ? in->failure : NULL; }
uint64_t ld_input_digest(const ld_input *in) { return XXH3_64bits_digest(in->hash); }
uint64_t ld_input_bytes(const ld_input *in) { return in->bytes; }
uint64_t ld_input_raw_bytes(const ld_input *in) { return in->raw_read; }

void ld_input_close(ld_input *in) {
  if (!in) return;
  if (in->text) fclose(in->text);
  if (in->own_raw && in->raw) fclose(in->raw);
  if (in->z_live) inflateEnd(&in->z);
  ZSTD_freeDStream(in->zs);
  XXH3_freeState(in->hash);
  free(in->buf);
  free(in->name);
  free(in);
}

/* ---- expanding paths ------------------------------------------------------- */

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int push(char ***v, size_t *n, size_t *cap, const char *s, uih_error *err) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    char **nv = realloc(*v, c * sizeof *nv);
    if (!nv) return uih_error_set(err, UIH_ERR_NO_MEMORY, "inputs: out of memory");
    *v = nv;
    *cap = c;
  }
  if (!((*v)[*n] = strdup(s))) return uih_error_set(err, UIH_ERR_NO_MEMORY, "inputs: out of memory");
  (*n)++;
  return UIH_OK;
}

int ld_files_expand(const char *const *paths, size_t npaths, char ***files, size_t *nfiles, uih_error *err) {
  char **v = NULL;
  size_t n = 0, cap = 0;
  int rc = UIH_OK;
  for (size_t i = 0; i < npaths && rc == UIH_OK; i++) {
    struct stat st;
    if (strcmp(paths[i], "-") == 0) {
      rc = push(&v, &n, &cap, "-", err);
      continue;
    }
    if (stat(paths[i], &st) != 0) {
      rc = uih_error_set(err, errno == ENOENT ? UIH_ERR_NOT_FOUND : UIH_ERR_IO, "input %s: %s", paths[i],
                         strerror(errno));
      break;
    }
    if (!S_ISDIR(st.st_mode)) {
      rc = push(&v, &n, &cap, paths[i], err);
      continue;
    }
    DIR *d = opendir(paths[i]);
    if (!d) {
      rc = uih_error_set(err, UIH_ERR_IO, "input %s: %s", paths[i], strerror(errno));
      break;
    }
    size_t first = n;
    struct dirent *e;
    while (rc == UIH_OK && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      size_t len = strlen(paths[i]) + strlen(e->d_name) + 2;
      char *full = malloc(len);
      if (!full) {
        rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "inputs: out of memory");
        break;
      }
      snprintf(full, len, "%s/%s", paths[i], e->d_name);
      if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) rc = push(&v, &n, &cap, full, err);
      free(full);
    }
    closedir(d);
    if (n > first) qsort(v + first, n - first, sizeof *v, cmp_names);
  }
  if (rc != UIH_OK) {
    ld_files_free(v, n);
    return rc;
  }
  *files = v;
  *nfiles = n;
  return UIH_OK;
}

void ld_files_free(char **files, size_t nfiles) {
  for (size_t i = 0; i < nfiles; i++) free(files[i]);
  free(files);
}
