/* Reading snapshot logs (uih/snapshot.h): the streaming reader, the
 * in-memory index, and the frame walk they share (log_format.h draws the
 * bytes). Format 2 is read frame by frame; a damaged span is reported once,
 * naming its bytes and the records it cost, and reading goes on at the next
 * whole frame. Format 1 (a varint length per record) still reads. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "log_read.h"

/* ---- the frame walk ------------------------------------------------------------ */

/* "record 7 is" or "records 7..9 are" */
static const char *records_are(char *buf, size_t cap, uint64_t first, uint64_t last) {
  if (first == last) snprintf(buf, cap, "record %" PRIu64 " is", first);
  else snprintf(buf, cap, "records %" PRIu64 "..%" PRIu64 " are", first, last);
  return buf;
}

void frame_walk_init(frame_walk *w) { memset(w, 0, sizeof *w); }

frame_event frame_walk_next(frame_walk *w, const char *name, uint64_t at, const uint8_t *p, size_t avail, int eof,
                            uih_error *err) {
  frame_event ev;
  memset(&ev, 0, sizeof ev);
  if (w->done) {
    ev.kind = kEvEnd;
    return ev;
  }
  const frame_step s = frame_step_at(p, avail, eof);
  if (s.kind == kStepNeed) {
    ev.kind = kEvNeed;
    ev.need = s.need;
    return ev;
  }
  if (w->sealed) { /* only the end may follow the seal */
    w->done = 1;
    if (s.kind == kStepEnd) {
      ev.kind = kEvEnd;
      return ev;
    }
    ev.kind = kEvDamage;
    ev.used = avail;
    uih_corruption(err, "%s: bytes follow the log's seal, from byte %" PRIu64 " (the log was closed before them)", name, at);
    return ev;
  }
  if (s.kind == kStepSkip) {
    if (!w->in_damage) w->damage_from = at;
    w->in_damage = 1;
    ev.kind = kEvAgain;
    ev.used = s.used;
    return ev;
  }
  ev.kind = kEvDamage;
  if (w->in_damage) { /* a damaged span ends here: at a header, or the end */
    w->in_damage = 0;
    if (s.kind == kStepEnd || (s.kind == kStepTorn && !s.head_whole)) {
      w->done = 1;
      ev.used = avail;
      uih_corruption(err,
                     "%s: bytes %" PRIu64 "..%" PRIu64 " hold no whole record frame: records from %" PRIu64
                     " on are lost (the log's tail is damaged)",
                     name, w->damage_from, at + avail - 1, w->next);
      return ev;
    }
    const uint64_t first = w->next;
    if (s.number > w->next) w->next = s.number;
    char lost[64];
    if (s.number > first)
      uih_corruption(err, "%s: bytes %" PRIu64 "..%" PRIu64 " are damaged (no frame header): %s lost", name,
                     w->damage_from, at - 1, records_are(lost, sizeof lost, first, s.number - 1));
    else
      uih_corruption(err, "%s: bytes %" PRIu64 "..%" PRIu64 " are damaged (no frame header), between records: no record is lost",
                     name, w->damage_from, at - 1);
    return ev; /* the frame at `at` is read by the next call */
  }
  switch (s.kind) {
    case kStepEnd:
      w->done = 1;
      ev.kind = kEvEnd;
      return ev;
    case kStepTorn:
      w->done = 1;
      w->torn = 1;
      ev.used = s.used;
      if (s.head_whole)
        uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends %zu bytes into its frame of %zu "
                       "(a writer stopped mid-record?)",
                       name, s.number, at, avail, (size_t)kFrameHead + s.rec_len + kFrameTail);
      else
        uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends %zu bytes into its frame's "
                       "%d-byte header (a writer stopped mid-record?)",
                       name, w->next, at, avail, (int)kFrameHead);
      return ev;
    default:
      break;
  }
  if (s.number > w->next) { /* whole frames gone: the frame is read by the next call */
    char lost[64];
    uih_corruption(err, "%s: %s missing before byte %" PRIu64, name, records_are(lost, sizeof lost, w->next, s.number - 1),
                   at);
    w->next = s.number;
    return ev;
  }
  ev.used = s.used;
  if (s.kind == kStepBadBody && s.rec_len == 0) {
    uih_corruption(err, "%s: the seal at byte %" PRIu64 " fails its checksum", name, at);
    return ev;
  }
  if (s.kind == kStepBadBody) {
    uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": its %" PRIu32 " bytes fail their checksum (the record is lost)",
                   name, s.number, at, s.rec_len);
    if (s.number == w->next) w->next++;
    return ev;
  }
  if (s.number < w->next) {
    uih_corruption(err, "%s: a %s at byte %" PRIu64 " numbered %" PRIu64 ", after record %" PRIu64 ": a repeated or misplaced frame, skipped",
                   name, s.kind == kStepSeal ? "seal" : "record", at, s.number, w->next - 1);
    return ev;
  }
  if (s.kind == kStepSeal) {
    w->sealed = 1;
    ev.kind = kEvAgain;
    return ev;
  }
  w->next = s.number + 1;
  ev.kind = kEvRecord;
  ev.number = s.number;
  ev.rec = p + kFrameHead;
  ev.len = s.rec_len;
  return ev;
}

int log_magic_version(const uint8_t *magic) {
  if (!memcmp(magic, UIH_SNAPSHOT_LOG_MAGIC, kLogMagicBytes)) return 2;
  if (!memcmp(magic, UIH_SNAPSHOT_LOG_MAGIC_V1, kLogMagicBytes)) return 1;
  return 0;
}

/* ---- the streaming reader ------------------------------------------------------- */

struct uih_snapshot_log {
  FILE *f;
  char *name;
  int version;
  uint8_t *buf; /* buf[pos..end) holds the file's bytes from `at` */
  size_t cap, pos, end;
  int eof;
  uint64_t at;
  frame_walk walk;
  uint64_t number; /* the last record's */
};

int uih_snapshot_log_open(FILE *f, const char *name, uih_snapshot_log **out, uih_error *err) {
  *out = NULL;
  if (!f) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL file");
  if (!name) name = "<log>";
  uint8_t magic[kLogMagicBytes];
  size_t got = fread(magic, 1, sizeof magic, f);
  if (ferror(f)) return uih_error_set(err, UIH_ERR_IO, "%s: reading: %s", name, strerror(errno));
  const int empty = got == 0; /* nothing logged yet */
  const int version = empty ? 2 : got == sizeof magic ? log_magic_version(magic) : 0;
  if (!version)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are neither \"%s\" nor \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC, UIH_SNAPSHOT_LOG_MAGIC_V1);
  uih_snapshot_log *l = calloc(1, sizeof *l);
  if (l) l->name = strdup(name);
  if (!l || !l->name) {
    free(l);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "snapshot log: out of memory");
  }
  l->f = f;
  l->version = version;
  l->at = empty ? 0 : sizeof magic;
  l->eof = empty;
  frame_walk_init(&l->walk);
  *out = l;
  return UIH_OK;
}

/* At least n bytes buffered from l->at, or all there are. */
static int fill(uih_snapshot_log *l, size_t n, uih_error *err) {
  while (l->end - l->pos < n && !l->eof) {
    if (l->pos > 0) {
      memmove(l->buf, l->buf + l->pos, l->end - l->pos);
      l->end -= l->pos;
      l->pos = 0;
    }
    if (l->cap < n || l->cap == l->end) {
      size_t ncap = l->cap ? l->cap * 2 : (size_t)1 << 16;
      while (ncap < n) ncap *= 2;
      uint8_t *b = realloc(l->buf, ncap);
      if (!b) return uih_error_set(err, UIH_ERR_NO_MEMORY, "snapshot log: out of memory (%zu bytes)", ncap);
      l->buf = b;
      l->cap = ncap;
    }
    const size_t want = l->cap - l->end, got = fread(l->buf + l->end, 1, want, l->f);
    l->end += got;
    if (got < want) {
      if (ferror(l->f))
        return uih_error_set(err, UIH_ERR_IO, "%s: reading at byte %" PRIu64 ": %s", l->name, l->at + (l->end - l->pos),
                             strerror(errno));
      if (feof(l->f)) l->eof = 1;
    }
  }
  return UIH_OK;
}

static void consume(uih_snapshot_log *l, size_t n) {
  l->pos += n;
  l->at += n;
}

/* Format 1: a varint length, then the record. Nothing marks where a
 * record begins, so reading stops at the first damage. */
static int next_v1_record(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uih_error *err);

static int next_v1(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uih_error *err) {
  if (l->walk.done) return UIH_OK;
  const int rc = next_v1_record(l, rec, len, err);
  if (rc != UIH_OK || !*rec) l->walk.done = 1;
  return rc;
}

static int next_v1_record(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uih_error *err) {
  const uint64_t start = l->at, number = l->walk.next;
  uint64_t n = 0;
  unsigned shift = 0, bytes = 0;
  for (;;) {
    const int rc = fill(l, bytes + 1, err);
    if (rc != UIH_OK) return rc;
    if (l->end - l->pos <= bytes) {
      if (bytes == 0) return UIH_OK; /* the end, between records */
      return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends inside its length", l->name,
                            number, start);
    }
    const uint8_t c = l->buf[l->pos + bytes++];
    if (shift > 56 || (shift == 56 && (c & 0x80)))
      return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": its length is not a varint", l->name,
                            number, start);
    n |= (uint64_t)(c & 0x7f) << shift;
    shift += 7;
    if (!(c & 0x80)) break;
  }
  if (n == 0 || n > UIH_SNAPSHOT_RECORD_MAX)
    return uih_corruption(err, "%s: record %" PRIu64 " at byte %" PRIu64 ": length %" PRIu64 ", expected 1..%zu", l->name,
                          number, start, n, UIH_SNAPSHOT_RECORD_MAX);
  const int rc = fill(l, bytes + (size_t)n, err);
  if (rc != UIH_OK) return rc;
  if (l->end - l->pos < bytes + n)
    return uih_corruption(err,
                          "%s: record %" PRIu64 " at byte %" PRIu64 ": the log ends %zu bytes into its %" PRIu64
                          " (a writer stopped mid-record?)",
                          l->name, number, start, l->end - l->pos - bytes, n);
  *rec = l->buf + l->pos + bytes;
  *len = (size_t)n;
  consume(l, bytes + (size_t)n);
  l->number = l->walk.next++;
  return UIH_OK;
}

int uih_snapshot_log_next(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uint64_t *offset, uih_error *err) {
  *rec = NULL;
  *len = 0;
  *offset = l->at;
  if (l->version == 1) return next_v1(l, rec, len, err);
  int rc;
  for (;;) {
    *offset = l->at;
    const uint8_t *here = l->buf ? l->buf + l->pos : l->buf; /* nothing read yet: NULL, 0 bytes */
    const frame_event ev = frame_walk_next(&l->walk, l->name, l->at, here, l->end - l->pos, l->eof, err);
    switch (ev.kind) {
      case kEvNeed:
        if ((rc = fill(l, ev.need, err)) != UIH_OK) return rc;
        continue;
      case kEvAgain:
        consume(l, ev.used);
        continue;
      case kEvEnd:
        return UIH_OK;
      case kEvDamage:
        consume(l, ev.used);
        return UIH_ERR_CORRUPTION;
      case kEvRecord:
        *rec = ev.rec;
        *len = ev.len;
        l->number = ev.number;
        consume(l, ev.used);
        return UIH_OK;
    }
  }
}

uint64_t uih_snapshot_log_number(const uih_snapshot_log *l) { return l ? l->number : 0; }
int uih_snapshot_log_sealed(const uih_snapshot_log *l) { return l && l->walk.sealed; }
int uih_snapshot_log_version(const uih_snapshot_log *l) { return l ? l->version : 0; }

int log_reader_torn(const uih_snapshot_log *l) { return l->walk.torn; }
uint64_t log_reader_at(const uih_snapshot_log *l) { return l->at; }
uint64_t log_reader_next_number(const uih_snapshot_log *l) { return l->walk.next; }

void uih_snapshot_log_close(uih_snapshot_log *l) {
  if (!l) return;
  free(l->buf);
  free(l->name);
  free(l);
}

/* ---- the in-memory index -------------------------------------------------------- */

static void index_one(const uint8_t *buf, size_t at, size_t len, size_t count, size_t cap, uint64_t *offsets,
                      uint64_t *lens, uint64_t *users, int64_t *request_ts) {
  if (count >= cap) return;
  uih_snapshot_record r;
  const int ok = (users || request_ts) && uih_snapshot_record_decode(buf + at, len, &r, NULL) == UIH_OK;
  if (offsets) offsets[count] = at;
  if (lens) lens[count] = len;
  if (users) users[count] = ok ? r.user_id : 0;
  if (request_ts) request_ts[count] = ok ? r.request_ts : 0;
}

static int index_v1(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets, uint64_t *lens,
                    uint64_t *users, int64_t *request_ts, size_t cap, size_t *n, uih_error *err) {
  size_t at = kLogMagicBytes, count = 0;
  while (at < len) {
    const size_t start = at;
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
      if (at == len)
        return uih_corruption(err, "%s: record %zu at byte %zu: the log ends inside its length", name, count, start);
      const uint8_t c = buf[at++];
      if (shift > 56 || (shift == 56 && (c & 0x80)))
        return uih_corruption(err, "%s: record %zu at byte %zu: its length is not a varint", name, count, start);
      v |= (uint64_t)(c & 0x7f) << shift;
      shift += 7;
      if (!(c & 0x80)) break;
    }
    if (v == 0 || v > UIH_SNAPSHOT_RECORD_MAX)
      return uih_corruption(err, "%s: record %zu at byte %zu: length %" PRIu64 ", expected 1..%zu", name, count, start,
                            v, UIH_SNAPSHOT_RECORD_MAX);
    if (v > len - at)
      return uih_corruption(err,
                            "%s: record %zu at byte %zu: the log ends %zu bytes into its %" PRIu64
                            " (a writer stopped mid-record?)",
                            name, count, start, len - at, v);
    index_one(buf, at, (size_t)v, count, cap, offsets, lens, users, request_ts);
    at += (size_t)v;
    count++;
  }
  *n = count;
  return UIH_OK;
}

/* The walk both indexes share: strict (any damage ends it) or past damage
 * (each said to on_damage, numbers kept). */
static int index_v2(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets, uint64_t *lens,
                    uint64_t *numbers, uint64_t *users, int64_t *request_ts, size_t cap, size_t *n,
                    uih_log_damage_fn on_damage, void *arg, int *sealed, uih_error *err) {
  frame_walk w;
  frame_walk_init(&w);
  size_t at = kLogMagicBytes, count = 0;
  for (;;) {
    uih_error said = {0};
    const frame_event ev = frame_walk_next(&w, name, at, buf + at, len - at, 1, on_damage ? &said : err);
    if (ev.kind == kEvEnd) break;
    if (ev.kind == kEvDamage) {
      if (!on_damage) return UIH_ERR_CORRUPTION; /* strict: record i is record number i */
      on_damage(arg, uih_error_message(&said));
    }
    if (ev.kind == kEvRecord) {
      if (numbers && count < cap) numbers[count] = ev.number;
      index_one(buf, at + kFrameHead, ev.len, count++, cap, offsets, lens, users, request_ts);
    }
    at += ev.used;
  }
  if (sealed) *sealed = w.sealed;
  *n = count;
  return UIH_OK;
}

int uih_snapshot_log_index_past_damage(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets,
                                       uint64_t *lens, uint64_t *numbers, uint64_t *users, int64_t *request_ts,
                                       size_t cap, size_t *n, int *sealed, uih_log_damage_fn on_damage, void *arg,
                                       uih_error *err) {
  if (!n || !on_damage || (!buf && len))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL argument");
  if (!name) name = "<log>";
  *n = 0;
  if (sealed) *sealed = 0;
  if (len == 0) return UIH_OK;
  const int version = len >= kLogMagicBytes ? log_magic_version(buf) : 0;
  if (!version)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are neither \"%s\" nor \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC, UIH_SNAPSHOT_LOG_MAGIC_V1);
  if (version == 1) { /* numbered by position: damage loses every later number, so it stays strict */
    int rc = index_v1(buf, len, name, offsets, lens, users, request_ts, cap, n, err);
    for (size_t i = 0; rc == UIH_OK && numbers && i < *n && i < cap; i++) numbers[i] = i;
    return rc;
  }
  return index_v2(buf, len, name, offsets, lens, numbers, users, request_ts, cap, n, on_damage, arg, sealed, err);
}

int uih_snapshot_log_index(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets, uint64_t *lens,
                           uint64_t *users, int64_t *request_ts, size_t cap, size_t *n, uih_error *err) {
  if (!n || (!buf && len)) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot log: NULL argument");
  if (!name) name = "<log>";
  *n = 0;
  if (len == 0) return UIH_OK; /* nothing logged yet */
  const int version = len >= kLogMagicBytes ? log_magic_version(buf) : 0;
  if (!version)
    return uih_corruption(err, "%s: not a snapshot log (its first 8 bytes are neither \"%s\" nor \"%s\")", name,
                          UIH_SNAPSHOT_LOG_MAGIC, UIH_SNAPSHOT_LOG_MAGIC_V1);
  if (version == 1) return index_v1(buf, len, name, offsets, lens, users, request_ts, cap, n, err);
  return index_v2(buf, len, name, offsets, lens, NULL, users, request_ts, cap, n, NULL, NULL, NULL, err);
}
