/* Fuzz target: snapshot logs (uih/snapshot.h). Any bytes read as a log give
 * records one by one or fail cleanly at a named offset; each record decodes
 * or fails cleanly too. The in-memory index of the same bytes succeeds
 * exactly when that reading reaches the end, with the same records, users
 * and request times. A writer's repair of the same bytes either refuses
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
  enum { kMax = 4096 };
  static uint64_t offs[kMax], lens[kMax], users[kMax], ioff[kMax], ilen[kMax], iusers[kMax];
  static int64_t ts[kMax], its[kMax];
  size_t count = 0;
  int whole = 0; /* read to the end without an error */
  if (uih_snapshot_log_open(f, "fuzz", &l, &err) == UIH_OK) {
    uint64_t prev = 0;
    for (;;) {
      const uint8_t *rec;
      size_t len;
      uint64_t off;
      if (uih_snapshot_log_next(l, &rec, &len, &off, &err) != UIH_OK) break;
      if (rec == NULL) {
        whole = 1;
        break;
      }
      if (off < 8 || off < prev || off + len > size) abort();
      prev = off + len;
      uih_snapshot_record r;
      const int ok = uih_snapshot_record_decode(rec, len, &r, &err) == UIH_OK;
      if (count < kMax) {
        offs[count] = off;
        lens[count] = len;
        users[count] = ok ? r.user_id : 0;
        ts[count] = ok ? r.request_ts : 0;
      }
      count++;
    }
  }
  uih_snapshot_log_close(l);
  fclose(f);

  size_t n = 0;
  const int indexed = uih_snapshot_log_index(data, size, "fuzz", ioff, ilen, iusers, its, kMax, &n, &err) == UIH_OK;
  if (indexed != whole) abort();
  if (indexed) {
    if (n != count) abort();
    /* the stream's offsets are where lengths start, the index's where
       records do: record i ends where the stream's record i + 1 starts */
    for (size_t i = 0; i < n && i < kMax; i++) {
      if (i + 1 < n && i + 1 >= kMax) break;
      const uint64_t end = i + 1 < n ? offs[i + 1] : size;
      if (ioff[i] <= offs[i] || ilen[i] != lens[i] || ioff[i] + ilen[i] != end || iusers[i] != users[i] ||
          its[i] != ts[i])
        abort();
    }
  }

  FILE *t = tmpfile();
  if (!t) return 0;
  uint64_t records = 0, dropped = 0;
  n = 0;
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
