/* Writing snapshot logs (uih/snapshot.h): numbered frames, the repair of a
 * torn tail before appending, and the seal that closes a log. Only format
 * 2 is written; a format-1 log still reads but takes no new records. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error_internal.h"
#include "log_read.h"

static int io_error(uih_error *err, const char *name, const char *what) {
  return uih_error_set(err, UIH_ERR_IO, "%s: %s: %s", name, what, strerror(errno ? errno : EIO));
}

/* Appends one frame; a write that fails is cut back off the file (a
 * partial frame would read as damage over the records after it). */
static int write_frame(FILE *f, const char *name, uint64_t number, const uint8_t *rec, size_t len, uih_error *err) {
  if (fflush(f) != 0 || fseeko(f, 0, SEEK_END) != 0) return io_error(err, name, "seeking");
  const off_t end = ftello(f);
  if (end < 0) return io_error(err, name, "seeking");
  uint8_t head[kFrameHead], tail[kFrameTail];
  frame_head_put(head, (uint32_t)len, number);
  uih_store_le32(tail, frame_body_check(rec, len, number));
  if ((end == 0 && fwrite(UIH_SNAPSHOT_LOG_MAGIC, 1, kLogMagicBytes, f) != kLogMagicBytes) ||
      fwrite(head, 1, sizeof head, f) != sizeof head || (len && fwrite(rec, 1, len, f) != len) ||
      fwrite(tail, 1, sizeof tail, f) != sizeof tail || fflush(f) != 0) {
    const int saved = errno;
    clearerr(f);
    if (ftruncate(fileno(f), end) == 0) fseeko(f, end, SEEK_SET);
    errno = saved;
    return io_error(err, name, "writing");
  }
  return UIH_OK;
}

int uih_snapshot_log_write(FILE *f, uint64_t number, const uint8_t *rec, size_t len, uih_error *err) {
  if (!f || !rec || len == 0 || len > UIH_SNAPSHOT_RECORD_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: a record of %zu bytes", rec ? len : 0);
  return write_frame(f, "snapshot log", number, rec, len, err);
}

/* The magic's version of the non-empty log f (0: not a log). */
static int read_version(FILE *f, const char *name, int *version, uih_error *err) {
  uint8_t magic[kLogMagicBytes];
  if (fseeko(f, 0, SEEK_SET) != 0) return io_error(err, name, "seeking");
  const size_t got = fread(magic, 1, sizeof magic, f);
  if (got < sizeof magic && ferror(f)) return io_error(err, name, "reading");
  *version = got == sizeof magic ? log_magic_version(magic) : 0;
  return UIH_OK;
}

static int refuse_v1(uih_error *err, const char *name) {
  return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                       "%s: a format-1 snapshot log (\"%s\"): it still reads, but takes no new records; start a new "
                       "log (format 2 frames each record with its number and checksums)",
                       name, UIH_SNAPSHOT_LOG_MAGIC_V1);
}

/* A descriptor that reads the file f writes (f may be open for appending
 * only): its own open of the same file. */
static int reader_fd(FILE *f, uih_error *err) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fileno(f));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) io_error(err, "snapshot log", "opening it to read its last record");
  return fd;
}

static int read_at(int fd, uint8_t *buf, size_t n, uint64_t at) {
  for (size_t got = 0; got < n;) {
    const ssize_t k = pread(fd, buf + got, n - got, (off_t)(at + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return 0;
    got += (size_t)k;
  }
  return 1;
}

/* The number the next record of the log (size bytes, read through fd) gets:
 * one past its last frame's, found from the end. */
static int next_number_from_tail(int fd, uint64_t size, uint64_t *next, uih_error *err) {
  const char *name = "snapshot log";
  uint8_t magic[kLogMagicBytes];
  if (!read_at(fd, magic, sizeof magic, 0)) return io_error(err, name, "reading");
  const int version = log_magic_version(magic);
  if (version == 1) return refuse_v1(err, name);
  if (version != 2)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are not \"%s\")", name, UIH_SNAPSHOT_LOG_MAGIC);
  const uint64_t body = size - kLogMagicBytes;
  if (body == 0) {
    *next = 0;
    return UIH_OK;
  }
  uint8_t *buf = NULL;
  const uint64_t most = body < UIH_SNAPSHOT_RECORD_MAX + kFrameHead + kFrameTail ? body
                        : UIH_SNAPSHOT_RECORD_MAX + kFrameHead + kFrameTail; /* the largest frame */
  for (uint64_t window = most < 4096 ? most : 4096;; window = window * 4 < most ? window * 4 : most) {
    uint8_t *b = realloc(buf, (size_t)window);
    if (!b) {
      free(buf);
      return uih_error_set(err, UIH_ERR_NO_MEMORY, "snapshot log: out of memory");
    }
    buf = b;
    if (!read_at(fd, buf, (size_t)window, size - window)) {
      free(buf);
      return io_error(err, name, "reading its last record");
    }
    for (size_t i = window < kFrameHead + kFrameTail ? 0 : (size_t)window - (kFrameHead + kFrameTail) + 1; i-- > 0;) {
      uint32_t len;
      uint64_t number;
      if (buf[i] != 'U' || !frame_head_get(buf + i, &len, &number)) continue;
      if (i + kFrameHead + (size_t)len + kFrameTail != window) continue;
      free(buf);
      if (len == 0)
        return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s: sealed (closed) at record %" PRIu64 "; start a new log",
                             name, number);
      *next = number + 1;
      return UIH_OK;
    }
    if (window == most) break;
  }
  free(buf);
  return uih_corruption(err, "%s: its last bytes are not a whole record frame: repair it first "
                        "(uih_snapshot_log_repair cuts a torn tail)", name);
}

int uih_snapshot_log_append(FILE *f, const uint8_t *rec, size_t len, uih_error *err) {
  if (!f || !rec || len == 0 || len > UIH_SNAPSHOT_RECORD_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: a record of %zu bytes", rec ? len : 0);
  if (fflush(f) != 0 || fseeko(f, 0, SEEK_END) != 0) return io_error(err, "snapshot log", "seeking");
  const off_t end = ftello(f);
  if (end < 0) return io_error(err, "snapshot log", "seeking");
  uint64_t next = 0;
  if (end > 0) {
    const int fd = reader_fd(f, err);
    if (fd < 0) return UIH_ERR_IO;
    const int rc = next_number_from_tail(fd, (uint64_t)end, &next, err);
    close(fd);
    if (rc != UIH_OK) return rc;
  }
  return write_frame(f, "snapshot log", next, rec, len, err);
}

/* Reads the whole format-2 log f: *next = the number its next record gets;
 * stops at the first damage, *torn when that is a tail cut inside a frame
 * (whose first byte is *cut). */
static int walk_whole(FILE *f, const char *name, uint64_t *next, int *sealed, int *torn, uint64_t *cut,
                      uih_error *err) {
  *torn = 0;
  rewind(f);
  uih_snapshot_log *l = NULL;
  int rc = uih_snapshot_log_open(f, name, &l, err);
  if (rc != UIH_OK) return rc;
  for (;;) {
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    rc = uih_snapshot_log_next(l, &rec, &len, &off, err);
    if (rc != UIH_OK) {
      *torn = rc == UIH_ERR_CORRUPTION && log_reader_torn(l);
      *cut = off;
      break;
    }
    if (!rec) break;
  }
  *next = log_reader_next_number(l);
  *sealed = uih_snapshot_log_sealed(l);
  uih_snapshot_log_close(l);
  return rc;
}

int uih_snapshot_log_repair(FILE *f, const char *name, uint64_t *records, uint64_t *dropped, uih_error *err) {
  *records = *dropped = 0;
  if (!name) name = "<log>";
  if (!f) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL file");
  if (fflush(f) != 0 || fseeko(f, 0, SEEK_END) != 0) return io_error(err, name, "seeking");
  const off_t end = ftello(f);
  if (end < 0) return io_error(err, name, "seeking");
  uint64_t good = (uint64_t)end;
  if (end > 0 && end < kLogMagicBytes) { /* a torn magic: a log with nothing in it */
    uint8_t magic[kLogMagicBytes];
    rewind(f);
    if (fread(magic, 1, (size_t)end, f) != (size_t)end) return io_error(err, name, "reading");
    if (memcmp(magic, UIH_SNAPSHOT_LOG_MAGIC, (size_t)end) != 0)
      return uih_corruption(err, "%s: not a snapshot log (its first bytes are not \"%s\")", name, UIH_SNAPSHOT_LOG_MAGIC);
    good = 0;
  } else if (end > 0) {
    int version, sealed, torn;
    int rc = read_version(f, name, &version, err);
    if (rc != UIH_OK) return rc;
    if (version == 1) return refuse_v1(err, name);
    uint64_t cut = 0;
    rc = walk_whole(f, name, records, &sealed, &torn, &cut, err);
    if (rc != UIH_OK && !torn) {
      char why[512];
      snprintf(why, sizeof why, "%s", uih_error_message(err));
      return uih_corruption(err, "%s: not a torn tail, so nothing is cut", why);
    }
    if (sealed)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s: sealed (closed) after %" PRIu64 " records; start a new log",
                           name, *records);
    if (torn) good = cut;
  }
  if (good != (uint64_t)end) {
    if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)good) != 0) return io_error(err, name, "cutting its torn tail");
    *dropped = (uint64_t)end - good;
  }
  return fseeko(f, 0, SEEK_END) == 0 ? UIH_OK : io_error(err, name, "seeking");
}

int uih_snapshot_log_seal(FILE *f, const char *name, uint64_t *records, uih_error *err) {
  *records = 0;
  if (!name) name = "<log>";
  if (!f) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL file");
  if (fflush(f) != 0 || fseeko(f, 0, SEEK_END) != 0) return io_error(err, name, "seeking");
  const off_t end = ftello(f);
  if (end < 0) return io_error(err, name, "seeking");
  if (end > 0) {
    int version, sealed, torn;
    uint64_t cut;
    int rc = read_version(f, name, &version, err);
    if (rc != UIH_OK) return rc;
    if (version == 1) return refuse_v1(err, name);
    if ((rc = walk_whole(f, name, records, &sealed, &torn, &cut, err)) != UIH_OK) return rc; /* damage: not sealed */
    if (sealed) return UIH_OK;
  }
  static const uint8_t kNothing[1];
  const int rc = write_frame(f, name, *records, kNothing, 0, err);
  if (rc != UIH_OK) return rc;
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) return io_error(err, name, "syncing");
  return UIH_OK;
}
