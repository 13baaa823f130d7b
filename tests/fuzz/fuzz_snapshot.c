/* Fuzz target: snapshot records (uih/snapshot.h). Any bytes decode or fail
 * cleanly; a record that decodes encodes again (as the current version) to a
 * record that decodes to the same fields, no longer than the input (but for
 * the store field a version 1 record lacks), and formats as text. Each input
 * is tried as it is and resealed (its checksum recomputed). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "uih/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const uih_snapshot_record *a, const uih_snapshot_record *b) {
  if (a->store != b->store || a->user_id != b->user_id || a->request_ts != b->request_ts || a->schema_version != b->schema_version ||
      a->generation != b->generation || a->ngroups != b->ngroups)
    return 0;
  for (uint32_t i = 0; i < a->ngroups; i++) {
    const uih_snapshot_group *x = &a->groups[i], *y = &b->groups[i];
    if (x->group != y->group || x->length != y->length || x->generation != y->generation ||
        x->start_ts != y->start_ts || x->end_ts != y->end_ts || x->mutable_len != y->mutable_len ||
        memcmp(x->check, y->check, sizeof x->check) != 0 ||
        (x->mutable_len && memcmp(x->mutable_events, y->mutable_events, x->mutable_len) != 0))
      return 0;
  }
  return 1;
}

static int check(const uint8_t *data, size_t size);

/* The bytes as they are, and resealed (the record checksum recomputed over
 * them), so mutations reach the structure behind the checksum. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size);
  if (size < 5) return 0;
  uint8_t *sealed = malloc(size);
  if (!sealed) return 0;
  memcpy(sealed, data, size);
  uint32_t h = (uint32_t)XXH3_64bits(sealed, size - 4);
  for (int k = 0; k < 4; k++) sealed[size - 4 + (size_t)k] = (uint8_t)(h >> (8 * k));
  check(sealed, size);
  free(sealed);
  return 0;
}

static int check(const uint8_t *data, size_t size) {
  uih_snapshot_record r, again;
  uih_error err;
  if (uih_snapshot_record_decode(data, size, &r, &err) != UIH_OK) return 0;
  char text[512];
  size_t want = uih_snapshot_record_format(&r, text, sizeof text);
  if (strlen(text) != (want < sizeof text ? want : sizeof text - 1)) abort();
  /* Older versions lack fields the encoder writes (their groups may even
   * name different generations): only the current one round-trips. */
  if (r.version != UIH_SNAPSHOT_FORMAT) return 0;
  size_t need = uih_snapshot_record_size(&r), len = 0;
  if (need > size) abort(); /* canonical varints are never longer */
  uint8_t *buf = malloc(need);
  if (!buf) return 0;
  if (uih_snapshot_record_encode(&r, buf, need, &len, &err) != UIH_OK || len != need) abort();
  if (uih_snapshot_record_decode(buf, len, &again, &err) != UIH_OK || !same(&r, &again)) abort();
  free(buf);
  return 0;
}
