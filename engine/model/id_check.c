/* Every string a load hashed into ids (uih/key.h): an open-addressed table
 * of (id, where its string is) over one growing arena of the strings. */
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "uih/key.h"

typedef struct slot {
  uint64_t id;
  uint64_t at; /* 1 + the string's offset in the arena (its length first, 4 bytes); 0: empty */
} slot;

struct uih_id_check {
  slot *slots;
  uint64_t nslots, used; /* nslots: a power of two, at least twice `used` */
  char *arena;
  uint64_t arena_len, arena_cap;
};

int uih_id_check_create(uih_id_check **out, uih_error *err) {
  UIH_RETURN_IF(out == NULL, err, UIH_ERR_INVALID_ARGUMENT, "id_check_create: NULL argument");
  uih_id_check *c = calloc(1, sizeof *c);
  if (c) c->slots = calloc(1024, sizeof *c->slots);
  if (!c || !c->slots) {
    free(c);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "id check: out of memory");
  }
  c->nslots = 1024;
  *out = c;
  return UIH_OK;
}

void uih_id_check_free(uih_id_check *c) {
  if (!c) return;
  free(c->slots);
  free(c->arena);
  free(c);
}

uint64_t uih_id_check_count(const uih_id_check *c) { return c ? c->used : 0; }

/* The slot of `id`, or the empty one where it would go. The ids are hashes
 * already: their low bits spread. */
static slot *find(slot *slots, uint64_t nslots, uint64_t id) {
  uint64_t i = id & (nslots - 1);
  while (slots[i].at && slots[i].id != id) i = (i + 1) & (nslots - 1);
  return &slots[i];
}

static int grow(uih_id_check *c) {
  const uint64_t n = c->nslots * 2;
  slot *s = calloc(n, sizeof *s);
  if (!s) return 0;
  for (uint64_t i = 0; i < c->nslots; i++)
    if (c->slots[i].at) *find(s, n, c->slots[i].id) = c->slots[i];
  free(c->slots);
  c->slots = s;
  c->nslots = n;
  return 1;
}

int uih_id_check_add(uih_id_check *c, uint64_t id, const char *bytes, size_t len, const char **other,
                     size_t *other_len, uih_error *err) {
  UIH_RETURN_IF(c == NULL || other == NULL || other_len == NULL || (bytes == NULL && len > 0), err,
                UIH_ERR_INVALID_ARGUMENT, "id_check_add: NULL argument");
  UIH_RETURN_IF(len > UINT32_MAX, err, UIH_ERR_OUT_OF_RANGE, "id check: a string of %zu bytes", len);
  *other = NULL;
  *other_len = 0;
  slot *s = find(c->slots, c->nslots, id);
  if (s->at) {
    uint32_t n;
    memcpy(&n, c->arena + s->at - 1, sizeof n);
    const char *seen = c->arena + s->at - 1 + sizeof n;
    if (n != len || (len && memcmp(seen, bytes, len) != 0)) {
      *other = seen;
      *other_len = n;
    }
    return UIH_OK;
  }
  const uint64_t need = c->arena_len + sizeof(uint32_t) + len;
  if (need > c->arena_cap) {
    uint64_t cap = c->arena_cap ? c->arena_cap : 65536;
    while (cap < need) cap *= 2;
    char *a = realloc(c->arena, cap);
    UIH_RETURN_IF(a == NULL, err, UIH_ERR_NO_MEMORY, "id check: out of memory (%llu distinct strings)",
                  (unsigned long long)c->used);
    c->arena = a;
    c->arena_cap = cap;
  }
  const uint32_t n = (uint32_t)len;
  memcpy(c->arena + c->arena_len, &n, sizeof n);
  if (len) memcpy(c->arena + c->arena_len + sizeof n, bytes, len);
  s->id = id;
  s->at = c->arena_len + 1;
  c->arena_len = need;
  c->used++;
  if (c->used * 2 > c->nslots)
    UIH_RETURN_IF(!grow(c), err, UIH_ERR_NO_MEMORY, "id check: out of memory (%llu distinct strings)",
                  (unsigned long long)c->used);
  return UIH_OK;
}
