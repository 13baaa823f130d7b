#include "wbuf.h"

#include <stdlib.h>

int uih_wbuf_reserve(uih_wbuf *b, size_t n) {
  if (b->oom) return 0;
  /* The first reservation always allocates, so `data` is never NULL after
   * a successful one (even of 0 bytes). */
  if (b->data && n <= b->cap - b->len) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < n) {
    if (cap > SIZE_MAX / 2) {
      b->oom = 1;
      return 0;
    }
    cap *= 2;
  }
  uint8_t *p = realloc(b->data, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void uih_wbuf_free(uih_wbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
}
