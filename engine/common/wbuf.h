/* A growable output buffer for encoders. Allocation failure is sticky:
 * later appends are ignored and `oom` stays set, so an encoder checks once
 * at the end. Memory is kept across uih_wbuf_reset() for reuse.
 *
 * A buffer set `count_only` keeps no bytes: appends only add to `len`,
 * and uih_wbuf_zeros returns NULL (as it does out of memory, without
 * setting oom), so an encoder whose writes into zeroed room stop at NULL
 * gives its exact length without the work of its bytes. */
#ifndef UIH_WBUF_H
#define UIH_WBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uih_wbuf {
  uint8_t *data;
  size_t len, cap;
  int oom;
  int count_only; /* (above) kept across resets */
} uih_wbuf;

/* Makes room for `n` more bytes; returns 0 (and sets oom) on failure. */
int uih_wbuf_reserve(uih_wbuf *b, size_t n);
void uih_wbuf_free(uih_wbuf *b);

static inline void uih_wbuf_reset(uih_wbuf *b) {
  b->len = 0;
  b->oom = 0;
}

/* uih_wbuf_reserve, without a call when the room is there: encoders
 * append a few bytes at a time. */
static inline int uih_wbuf_room(uih_wbuf *b, size_t n) {
  if (!b->oom && b->data && n <= b->cap - b->len) return 1;
  return uih_wbuf_reserve(b, n);
}

static inline void uih_wbuf_put(uih_wbuf *b, const void *p, size_t n) {
  if (b->count_only) {
    b->len += n;
    return;
  }
  if (n == 0 || !uih_wbuf_room(b, n)) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}
static inline void uih_wbuf_u8(uih_wbuf *b, uint8_t v) { uih_wbuf_put(b, &v, 1); }
static inline void uih_wbuf_u16(uih_wbuf *b, uint16_t v) { uih_wbuf_put(b, &v, 2); }
static inline void uih_wbuf_u32(uih_wbuf *b, uint32_t v) { uih_wbuf_put(b, &v, 4); }
static inline void uih_wbuf_u64(uih_wbuf *b, uint64_t v) { uih_wbuf_put(b, &v, 8); }
static inline void uih_wbuf_varint(uih_wbuf *b, uint64_t v) { /* written in place: no copy of a few bytes */
  if (b->count_only) {
    b->len += uih_varint_len(v);
    return;
  }
  if (!uih_wbuf_room(b, UIH_VARINT_MAX)) return;
  b->len += uih_varint_put(b->data + b->len, v);
}
/* Appends `n` zero bytes and returns where they start (NULL on failure,
 * and in a count_only buffer). */
static inline uint8_t *uih_wbuf_zeros(uih_wbuf *b, size_t n) {
  if (b->count_only) {
    b->len += n;
    return NULL;
  }
  if (!uih_wbuf_room(b, n)) return NULL;
  uint8_t *p = b->data + b->len;
  memset(p, 0, n);
  b->len += n;
  return p;
}

#ifdef __cplusplus
}
#endif
#endif /* UIH_WBUF_H */
