/* Fuzz target: snapshot logs (uih/snapshot.h). Any bytes read as a log give
 * records one by one or fail cleanly at a named offset; each record decodes
 * or fails cleanly too. A writer's repair of the same bytes either refuses
 * them or leaves a log that reads to its end with the records it counted. */
#define _GNU_SOURCE /* fmemopen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "uih/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f) return 0;
  uih_snapshot_log *l = NULL;
  uih_error err;
  if (uih_snapshot_log_open(f, "fuzz", &l, &err) == UIH_OK) {
    uint64_t prev = 0;
    for (;;) {
      const uint8_t *rec;
      size_t len;
      uint64_t off;
      if (uih_snapshot_log_next(l, &rec, &len, &off, &err) != UIH_OK || rec == NULL) break;
      if (off < 8 || off < prev || off + len > size) abort();
      prev = off + len;
      uih_snapshot_record r;
      (void)uih_snapshot_record_decode(rec, len, &r, &err);
    }
  }
  uih_snapshot_log_close(l);
  fclose(f);

  FILE *t = tmpfile();
  if (!t) return 0;
  uint64_t records = 0, dropped = 0, n = 0;
  if (fwrite(data, 1, size, t) == size && uih_snapshot_log_repair(t, "fuzz", &records, &dropped, &err) == UIH_OK) {
    if (dropped > size) abort();
    rewind(t);
    l = NULL;
    if (uih_snapshot_log_open(t, "fuzz", &l, &err) != UIH_OK) abort();
    for (;;) {
      const uint8_t *rec;
      size_t len;
      uint64_t off;
      if (uih_snapshot_log_next(l, &rec, &len, &off, &err) != UIH_OK) abort(); /* repaired: whole records only */
      if (rec == NULL) break;
      n++;
    }
    if (n != records) abort();
    uih_snapshot_log_close(l);
  }
  fclose(t);
  return 0;
}
