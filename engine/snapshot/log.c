/* Snapshot logs (uih/snapshot.h): a magic, then length-prefixed records. */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "mem.h"
#include "uih/snapshot.h"

struct uih_snapshot_log {
  FILE *f;
  char *name;
  uint8_t *buf;
  size_t cap;
  uint64_t at;     /* bytes consumed */
  uint64_t count;  /* records returned */
};

int uih_snapshot_log_open(FILE *f, const char *name, uih_snapshot_log **out, uih_error *err) {
  *out = NULL;
  if (!f) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL file");
  if (!name) name = "<log>";
  char magic[8];
  size_t got = fread(magic, 1, sizeof magic, f);
  const int empty = got == 0 && !ferror(f); /* nothing logged yet */
  if (!empty && (got != sizeof magic || memcmp(magic, UIH_SNAPSHOT_LOG_MAGIC, sizeof magic) != 0)) {
    if (ferror(f)) return uih_error_set(err, UIH_ERR_IO, "%s: reading: %s", name, strerror(errno));
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are not \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC);
  }
  uih_snapshot_log *l = calloc(1, sizeof *l);
  if (l) l->name = strdup(name);
  if (!l || !l->name) {
    free(l);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "snapshot log: out of memory");
  }
  l->f = f;
  l->at = empty ? 0 : sizeof magic;
  *out = l;
  return UIH_OK;
}

/* One byte of a record's varint length into *n: 1 when it was the last,
 * 0 when more follow, -1 when the varint runs past 64 bits. The streaming
 * reader and the in-memory index share it, so they agree on every log. */
static int length_byte(uint8_t c, uint64_t *n, unsigned *shift) {
  if (*shift > 56 || (*shift == 56 && (c & 0x80))) return -1;
  *n |= (uint64_t)(c & 0x7f) << *shift;
  *shift += 7;
  return !(c & 0x80);
}

int uih_snapshot_log_next(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uint64_t *offset, uih_error *err) {
  *rec = NULL;
  *len = 0;
  *offset = l->at;
  uint64_t n = 0;
  unsigned shift = 0, bytes = 0;
  for (;;) {
    int c = fgetc(l->f);
    if (c == EOF) {
      if (ferror(l->f)) return uih_error_set(err, UIH_ERR_IO, "%s: reading at byte %" PRIu64 ": %s", l->name, l->at, strerror(errno));
      if (bytes == 0) return UIH_OK; /* the end, between records */
      return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends inside its length", l->name,
                            l->count, *offset);
    }
    bytes++;
    const int last = length_byte((uint8_t)c, &n, &shift);
    if (last < 0)
      return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": its length is not a varint", l->name,
                            l->count, *offset);
    if (last) break;
  }
  if (n == 0 || n > UIH_SNAPSHOT_RECORD_MAX)
    return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": length %" PRIu64 ", expected 1..%zu", l->name,
                          l->count, *offset, n, UIH_SNAPSHOT_RECORD_MAX);
  if (n > l->cap) {
    uint8_t *b = realloc(l->buf, (size_t)n);
    if (!b) return uih_error_set(err, UIH_ERR_NO_MEMORY, "snapshot log: out of memory (%" PRIu64 " bytes)", n);
    l->buf = b;
    l->cap = (size_t)n;
  }
  size_t got = fread(l->buf, 1, (size_t)n, l->f);
  if (got != n) {
    if (ferror(l->f)) return uih_error_set(err, UIH_ERR_IO, "%s: reading at byte %" PRIu64 ": %s", l->name, l->at, strerror(errno));
    return uih_corruption(err,
                          "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends %zu bytes into its %" PRIu64
                          " (a writer stopped mid-record?)",
                          l->name, l->count, *offset, got, n);
  }
  l->at += bytes + n;
  l->count++;
  *rec = l->buf;
  *len = (size_t)n;
  return UIH_OK;
}

int uih_snapshot_log_index(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets, uint64_t *lens,
                           uint64_t *users, int64_t *request_ts, size_t cap, size_t *n, uih_error *err) {
  if (!n || (!buf && len)) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL argument");
  if (!name) name = "<log>";
  *n = 0;
  if (len == 0) return UIH_OK; /* nothing logged yet */
  if (len < 8 || memcmp(buf, UIH_SNAPSHOT_LOG_MAGIC, 8) != 0)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are not \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC);
  size_t at = 8, count = 0;
  while (at < len) {
    const size_t start = at;
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
      if (at == len)
        return uih_corruption(err, "%s: record %zu at byte %zu: the log ends inside its length", name, count, start);
      const int last = length_byte(buf[at++], &v, &shift);
      if (last < 0)
        return uih_corruption(err, "%s: record %zu at byte %zu: its length is not a varint", name, count, start);
      if (last) break;
    }
    if (v == 0 || v > UIH_SNAPSHOT_RECORD_MAX)
      return uih_corruption(err, "%s: record %zu at byte %zu: length %" PRIu64 ", expected 1..%zu", name, count, start,
                            v, UIH_SNAPSHOT_RECORD_MAX);
    if (v > len - at)
      return uih_corruption(err,
                            "%s: record %zu at byte %zu: the log ends %zu bytes into its %" PRIu64
                            " (a writer stopped mid-record?)",
                            name, count, start, len - at, v);
    if (count < cap) {
      uih_snapshot_record r;
      const int ok = (users || request_ts) && uih_snapshot_record_decode(buf + at, (size_t)v, &r, NULL) == UIH_OK;
      if (offsets) offsets[count] = at;
      if (lens) lens[count] = v;
      if (users) users[count] = ok ? r.user_id : 0;
      if (request_ts) request_ts[count] = ok ? r.request_ts : 0;
    }
    at += (size_t)v;
    count++;
  }
  *n = count;
  return UIH_OK;
}

void uih_snapshot_log_close(uih_snapshot_log *l) {
  if (!l) return;
  free(l->buf);
  free(l->name);
  free(l);
}

int uih_snapshot_log_append(FILE *f, const uint8_t *rec, size_t len, uih_error *err) {
  if (!f || !rec || len == 0 || len > UIH_SNAPSHOT_RECORD_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: a record of %zu bytes", rec ? len : 0);
  if (fseek(f, 0, SEEK_END) != 0) return uih_error_set(err, UIH_ERR_IO, "snapshot log: seeking: %s", strerror(errno));
  long end = ftell(f);
  if (end == 0 && fwrite(UIH_SNAPSHOT_LOG_MAGIC, 1, 8, f) != 8)
    return uih_error_set(err, UIH_ERR_IO, "snapshot log: writing: %s", strerror(errno));
  uint8_t head[UIH_VARINT_MAX];
  const size_t h = uih_varint_put(head, len);
  if (fwrite(head, 1, h, f) != h || fwrite(rec, 1, len, f) != len)
    return uih_error_set(err, UIH_ERR_IO, "snapshot log: writing: %s", strerror(errno));
  return UIH_OK;
}

/* The length varint of the record at `at` (size - at bytes left): 1 with
 * *n and *bytes, 0 when the file ends inside it, -1 when it is not one. */
static int read_length(FILE *f, uint64_t at, uint64_t size, uint64_t *n, unsigned *bytes) {
  *n = 0;
  *bytes = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (at + *bytes == size) return 0;
    int c = fgetc(f);
    if (c == EOF) return -1;
    (*bytes)++;
    if (shift > 56 || (shift == 56 && (c & 0x80))) return -1;
    *n |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return 1;
  }
}

int uih_snapshot_log_repair(FILE *f, const char *name, uint64_t *records, uint64_t *dropped, uih_error *err) {
  *records = *dropped = 0;
  if (!name) name = "<log>";
  if (!f) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL file");
  if (fflush(f) != 0 || fseeko(f, 0, SEEK_END) != 0)
    return uih_error_set(err, UIH_ERR_IO, "%s: seeking: %s", name, strerror(errno));
  off_t end = ftello(f);
  if (end < 0) return uih_error_set(err, UIH_ERR_IO, "%s: seeking: %s", name, strerror(errno));
  const uint64_t size = (uint64_t)end;
  uint64_t good = 0; /* the end of the last whole record (or of the magic) */
  rewind(f);
  char magic[8];
  size_t got = fread(magic, 1, size < 8 ? (size_t)size : 8, f);
  if (got != (size < 8 ? (size_t)size : 8))
    return uih_error_set(err, UIH_ERR_IO, "%s: reading: %s", name, strerror(ferror(f) ? errno : EIO));
  if (memcmp(magic, UIH_SNAPSHOT_LOG_MAGIC, got) != 0)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are not \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC);
  if (size >= 8) {
    for (good = 8;;) {
      uint64_t n;
      unsigned bytes;
      int r = read_length(f, good, size, &n, &bytes);
      if (r == 0) break; /* the file ends inside a length: torn */
      if (r < 0 || n == 0 || n > UIH_SNAPSHOT_RECORD_MAX) {
        if (ferror(f)) return uih_error_set(err, UIH_ERR_IO, "%s: reading at byte %" PRIu64 ": %s", name, good, strerror(errno));
        return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": its length is not 1..%zu: not a torn "
                              "tail, so nothing is cut", name, *records, good, UIH_SNAPSHOT_RECORD_MAX);
      }
      if (good + bytes + n > size) break; /* the file ends inside the record: torn */
      good += bytes + n;
      (*records)++;
      if (good == size) break;
      if (fseeko(f, (off_t)good, SEEK_SET) != 0)
        return uih_error_set(err, UIH_ERR_IO, "%s: seeking: %s", name, strerror(errno));
    }
  }
  if (size >= 8 && good == size) return fseeko(f, 0, SEEK_END) == 0 ? UIH_OK
         : uih_error_set(err, UIH_ERR_IO, "%s: seeking: %s", name, strerror(errno));
  /* A torn tail (or magic): cut back to the last whole record. */
  if (size < 8) good = 0;
  if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)good) != 0 || fseeko(f, 0, SEEK_END) != 0)
    return uih_error_set(err, UIH_ERR_IO, "%s: cutting its torn tail at byte %" PRIu64 ": %s", name, good,
                         strerror(errno));
  *dropped = size - good;
  return UIH_OK;
}
