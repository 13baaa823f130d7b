/* Fuzz target: snapshot logs (uih/snapshot.h). Any bytes read as a log give
 * records and named damage, never a crash or a hang: numbers only grow, and
 * a reader that goes on past damage always ends. Each record decodes or
 * fails cleanly. The in-memory index of the same bytes succeeds exactly when
 * that reading met no damage, with the same records, users and request
 * times. A writer's repair of the same bytes either refuses them or leaves a
 * log that reads whole with the records it counted, which then takes one
 * more record and a seal and reads whole and sealed. */
#define _GNU_SOURCE /* fmemopen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uih/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fnv(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Reads f to its end, going on past damage: records counted, *damage set
 * when any was met, *sealed as the reader says. */
static size_t read_all(FILE *f, uint64_t *hashes, uint64_t *lens, uint64_t *users, int64_t *ts, size_t cap,
                       int *damage, int *sealed, size_t size) {
  uih_snapshot_log *l = NULL;
  uih_error err;
  size_t count = 0;
  *damage = 0;
  *sealed = 0;
  if (uih_snapshot_log_open(f, "fuzz", &l, &err) != UIH_OK) {
    *damage = 1;
    return 0;
  }
  uint64_t last = 0, prev_end = 0;
  for (size_t steps = 0;; steps++) {
    if (steps > size + 16) abort(); /* every step consumes bytes or ends */
    const uint8_t *rec;
    size_t len;
    uint64_t off;
    const int rc = uih_snapshot_log_next(l, &rec, &len, &off, &err);
    if (rc != UIH_OK) {
      if (rc != UIH_ERR_CORRUPTION || !err.msg[0]) abort();
      *damage = 1;
      continue;
    }
    if (rec == NULL) break;
    const uint64_t number = uih_snapshot_log_number(l);
    if ((count && number <= last) || off < prev_end || off < 8 || off + len > size) abort();
    last = number;
    prev_end = off + len;
    uih_snapshot_record r;
    const int ok = uih_snapshot_record_decode(rec, len, &r, &err) == UIH_OK;
    if (count < cap) {
      hashes[count] = fnv(rec, len);
      lens[count] = len;
      users[count] = ok ? r.user_id : 0;
      ts[count] = ok ? r.request_ts : 0;
    }
    count++;
  }
  *sealed = uih_snapshot_log_sealed(l);
  uih_snapshot_log_close(l);
  return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  enum { kMax = 4096 };
  static uint64_t hashes[kMax], lens[kMax], users[kMax], ioff[kMax], ilen[kMax], iusers[kMax];
  static int64_t ts[kMax], its[kMax];
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f) return 0;
  int damage, sealed;
  const size_t count = read_all(f, hashes, lens, users, ts, kMax, &damage, &sealed, size);
  fclose(f);

  size_t n = 0;
  uih_error err;
  const int indexed = uih_snapshot_log_index(data, size, "fuzz", ioff, ilen, iusers, its, kMax, &n, &err) == UIH_OK;
  if (indexed == damage) abort();
  if (indexed) {
    if (n != count) abort();
    for (size_t i = 0; i < n && i < kMax; i++)
      if (ilen[i] != lens[i] || ioff[i] + ilen[i] > size || fnv(data + ioff[i], ilen[i]) != hashes[i] ||
          iusers[i] != users[i] || its[i] != ts[i])
        abort();
  }

  FILE *t = tmpfile();
  if (!t) return 0;
  uint64_t records = 0, dropped = 0;
  if (fwrite(data, 1, size, t) == size && uih_snapshot_log_repair(t, "fuzz", &records, &dropped, &err) == UIH_OK) {
    if (dropped > size) abort();
    rewind(t);
    if (read_all(t, hashes, lens, users, ts, kMax, &damage, &sealed, size) != records || damage || sealed) abort();
    static const uint8_t kRecord[] = "one more";
    uint64_t total = 0;
    if (uih_snapshot_log_append(t, kRecord, sizeof kRecord, &err) != UIH_OK) abort();
    if (uih_snapshot_log_seal(t, "fuzz", &total, &err) != UIH_OK || total != records + 1) abort();
    rewind(t);
    if (read_all(t, hashes, lens, users, ts, kMax, &damage, &sealed, size + 64) != records + 1 || damage || !sealed)
      abort();
  }
  fclose(t);
  return 0;
}
