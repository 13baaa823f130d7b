/* Snapshot logs' bytes (uih/snapshot.h has the drawing), and the one step
 * that reads a format-2 frame, shared by the streaming reader, the
 * in-memory index and the writer's repair so they agree on every log.
 *
 * A format-2 frame, little-endian:
 *
 *   0  u32 sync    "UIHR": where a reader that lost its place looks again
 *   4  u32 length  of the record, 1..UIH_SNAPSHOT_RECORD_MAX (0: the seal)
 *   8  u64 number  the record's number in its log, 0, 1, 2, ...
 *  16  u32 check   low 32 bits of XXH3-64 of bytes 0..15
 *  20  the record (length bytes)
 *  ..  u32 check   low 32 bits of XXH3-64 of the record, seeded with number
 *
 * The header's check covers the length, so a damaged length is caught
 * before it moves the reader; the record's check is seeded with its number,
 * so a record is read only under the number it was written with. The seal
 * (length 0, number = the records the log holds, its check over nothing)
 * ends a closed log; nothing follows it. */
#ifndef UIH_SNAPSHOT_LOG_FORMAT_H
#define UIH_SNAPSHOT_LOG_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "mem.h"
#include "uih/snapshot.h"

#define UIH_SNAPSHOT_LOG_MAGIC_V1 "UIHSLOG1"

enum {
  kLogMagicBytes = 8,
  kFrameHead = 20,
  kFrameTail = 4,
  kFrameSync = 0x52484955u, /* "UIHR" in little-endian bytes */
};

static inline uint32_t frame_head_check(const uint8_t *head) { return (uint32_t)XXH3_64bits(head, 16); }

static inline uint32_t frame_body_check(const uint8_t *rec, size_t len, uint64_t number) {
  return (uint32_t)XXH3_64bits_withSeed(rec, len, number);
}

static inline void frame_head_put(uint8_t head[kFrameHead], uint32_t length, uint64_t number) {
  uih_store_le32(head, kFrameSync);
  uih_store_le32(head + 4, length);
  uih_store_le64(head + 8, number);
  uih_store_le32(head + 16, frame_head_check(head));
}

/* 1 when `head` is a whole, undamaged frame header (*length, *number). */
static inline int frame_head_get(const uint8_t *head, uint32_t *length, uint64_t *number) {
  if (uih_load_le32(head) != kFrameSync || uih_load_le32(head + 16) != frame_head_check(head)) return 0;
  *length = uih_load_le32(head + 4);
  *number = uih_load_le64(head + 8);
  return *length <= UIH_SNAPSHOT_RECORD_MAX && *number < UINT64_MAX; /* one more must fit */
}

/* The offset of the first whole frame header in p[1, n), or 0 when none. */
static inline size_t frame_head_after(const uint8_t *p, size_t n) {
  uint32_t len;
  uint64_t number;
  for (size_t i = 1; i + kFrameHead <= n; i++) {
    const uint8_t *q = memchr(p + i, 'U', n - kFrameHead + 1 - i);
    if (!q) break;
    i = (size_t)(q - p);
    if (frame_head_get(q, &len, &number)) return i;
  }
  return 0;
}

typedef enum {
  kStepRecord,  /* a whole record: number, rec_len; its bytes at kFrameHead */
  kStepSeal,    /* the seal: number = the records it counts */
  kStepEnd,     /* no bytes left */
  kStepNeed,    /* `need` bytes from here are needed to decide */
  kStepSkip,    /* `used` bytes hold no frame header: damage */
  kStepTorn,    /* the bytes end inside a frame (number, when its header is whole) */
  kStepBadBody, /* a frame whose record fails its check: number, `used` skips it */
} frame_step_kind;

typedef struct {
  frame_step_kind kind;
  size_t used, need;
  uint64_t number;
  uint32_t rec_len;
  int head_whole; /* kStepTorn: the header was whole (number is its) */
} frame_step;

/* Reads what the `avail` bytes at p (all there are when `eof`) begin with. */
static inline frame_step frame_step_at(const uint8_t *p, size_t avail, int eof) {
  frame_step s;
  memset(&s, 0, sizeof s);
  uint32_t len;
  uint64_t number;
  if (avail == 0 && eof) {
    s.kind = kStepEnd;
    return s;
  }
  if (avail < kFrameHead) {
    if (!eof) {
      s.kind = kStepNeed;
      s.need = kFrameHead;
      return s;
    }
    s.kind = kStepTorn;
    s.used = avail;
    return s;
  }
  if (!frame_head_get(p, &len, &number)) { /* look for the next header */
    s.kind = kStepSkip;
    s.used = frame_head_after(p, avail);
    /* none: all of it is damage, but for a header that may begin in the
     * last kFrameHead - 1 bytes when more follow */
    if (s.used == 0) s.used = eof ? avail : avail - (kFrameHead - 1);
    return s;
  }
  const size_t frame = kFrameHead + (size_t)len + kFrameTail;
  s.number = number;
  if (avail < frame) {
    if (!eof) {
      s.kind = kStepNeed;
      s.need = frame;
      return s;
    }
    s.kind = kStepTorn;
    s.used = avail;
    s.head_whole = 1;
    return s;
  }
  s.used = frame;
  if (uih_load_le32(p + kFrameHead + len) != frame_body_check(p + kFrameHead, len, number)) {
    /* A frame cut short by a failed write, then followed by whole ones:
     * a header inside its span starts the next, and only the span before
     * it is damage. */
    const size_t next = frame_head_after(p, frame);
    if (next) {
      s.kind = kStepSkip;
      s.used = next;
      return s;
    }
    s.kind = kStepBadBody;
    s.rec_len = len;
    return s;
  }
  s.kind = len ? kStepRecord : kStepSeal;
  s.rec_len = len;
  return s;
}

#endif
