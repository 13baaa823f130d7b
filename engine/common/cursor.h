/* A bounds-checked reader over untrusted bytes. Every read checks the bytes
 * that remain; a failed read sets `bad` and returns zeros, so a decoder can
 * read a whole header and test `bad` once. Bytes from a file or an input
 * are reached through a cursor: a fast path peeks at the next bytes (one
 * check for several fields) and then skips them. Decoders may index into a
 * region a cursor handed out (uih_cursor_take/peek) up to its length. */
#ifndef UIH_CURSOR_H
#define UIH_CURSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct uih_cursor {
  const uint8_t *p;    /* next unread byte */
  const uint8_t *end;  /* one past the last byte of the data */
  int bad;             /* a read ran past `end` or a varint was malformed */
  const uint8_t *over; /* >= end: wide loads whose extra bytes are masked
                          off may reach this far (valid memory, not data) */
} uih_cursor;

static inline uih_cursor uih_cursor_make(const uint8_t *p, size_t len) {
  uih_cursor c = {p, p + len, 0, p + len};
  return c;
}

/* A cursor over `len` bytes of data followed by `slack` more bytes that
 * may be loaded and masked off (the rest of a buffer, or padding). */
static inline uih_cursor uih_cursor_make_slack(const uint8_t *p, size_t len, size_t slack) {
  uih_cursor c = {p, p + len, 0, p + len + slack};
  return c;
}

static inline size_t uih_cursor_left(const uih_cursor *c) { return (size_t)(c->end - c->p); }
/* Bytes from the next unread one that a masked wide load may touch. */
static inline size_t uih_cursor_loadable(const uih_cursor *c) { return (size_t)(c->over - c->p); }

/* Returns a pointer to the next `n` bytes and skips them, or NULL (and sets
 * `bad`) if fewer remain. */
static inline const uint8_t *uih_cursor_take(uih_cursor *c, size_t n) {
  if (c->bad || n > uih_cursor_left(c)) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *p = c->p;
  c->p += n;
  return p;
}

/* A pointer to the next `n` bytes without moving, or NULL if fewer remain
 * (the cursor unchanged: a fast path that reads several fields at once
 * falls back to reading them one by one). Move with uih_cursor_skip. */
static inline const uint8_t *uih_cursor_peek(const uih_cursor *c, size_t n) {
  return !c->bad && n <= uih_cursor_left(c) ? c->p : NULL;
}

/* Moves past `n` bytes; 0, or -1 (and `bad` set) if fewer remain. */
static inline int uih_cursor_skip(uih_cursor *c, size_t n) { return uih_cursor_take(c, n) ? 0 : -1; }

/* Where the cursor is, in bytes from `base` (the start of what it reads),
 * for error messages. */
static inline size_t uih_cursor_offset(const uih_cursor *c, const uint8_t *base) { return (size_t)(c->p - base); }

static inline uint8_t uih_cursor_u8(uih_cursor *c) {
  const uint8_t *p = uih_cursor_take(c, 1);
  return p ? p[0] : 0;
}
static inline uint16_t uih_cursor_u16(uih_cursor *c) {
  const uint8_t *p = uih_cursor_take(c, 2);
  uint16_t v = 0;
  if (p) memcpy(&v, p, 2);
  return v;
}
static inline uint32_t uih_cursor_u32(uih_cursor *c) {
  const uint8_t *p = uih_cursor_take(c, 4);
  uint32_t v = 0;
  if (p) memcpy(&v, p, 4);
  return v;
}
static inline uint64_t uih_cursor_u64(uih_cursor *c) {
  const uint8_t *p = uih_cursor_take(c, 8);
  uint64_t v = 0;
  if (p) memcpy(&v, p, 8);
  return v;
}

/* Big-endian, for formats whose bytes sort in numeric order. */
static inline uint64_t uih_cursor_be64(uih_cursor *c) {
  const uint8_t *p = uih_cursor_take(c, 8);
  uint64_t v = 0;
  for (unsigned i = 0; p && i < 8; i++) v = v << 8 | p[i];
  return v;
}

/* LEB128 unsigned varint of at most 10 bytes; an overlong or overflowing
 * encoding sets `bad`. */
static inline uint64_t uih_cursor_varint(uih_cursor *c) {
  if (!c->bad && uih_cursor_left(c) >= 10) { /* no byte of it can be past the end: one check */
    const uint8_t *p = c->p;
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
      uint64_t part = p[i] & 0x7f;
      if (i == 9 && part > 1) break; /* bits beyond 64 */
      v |= part << (7 * i);
      if (!(p[i] & 0x80)) {
        c->p = p + i + 1;
        return v;
      }
    }
    c->p = p + 10;
    c->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    const uint8_t *p = uih_cursor_take(c, 1);
    if (!p) return 0;
    uint64_t part = p[0] & 0x7f;
    if (shift == 63 && part > 1) break; /* bits beyond 64 */
    v |= part << shift;
    if (!(p[0] & 0x80)) return v;
  }
  c->bad = 1;
  return 0;
}

#endif /* UIH_CURSOR_H */
