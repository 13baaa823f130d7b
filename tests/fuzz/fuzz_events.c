/* Fuzz target: event lists (the mutable tier's values and operands) from
 * untrusted bytes. Byte 0 chooses whether the harness first rewrites the
 * group and checksum (bit 0), so mutations reach the structural checks
 * behind them. Any input must give an error with a message or a valid list,
 * and for a valid list: re-merging it alone gives the same bytes (canonical
 * form is a fixed point), merging it with itself too, decoding matches its
 * info and its newest k (k = byte 0 >> 1) are the last k decoded, retention keeps a suffix, and the merge operator quarantines
 * exactly the invalid ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "stripe_fixture.h"
#include "uih/events.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uih_events *ev;
static uih_batch *out, *tail;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ev && (uih_events_create(&ev, NULL) != UIH_OK ||
              uih_batch_create(fuzz_stripe_group(), UIH_STRIPE_EVENTS_MAX, NULL, 0, &out, NULL) != UIH_OK ||
              uih_batch_create(fuzz_stripe_group(), 128, NULL, 0, &tail, NULL) != UIH_OK))
    abort();
  if (size < 1) return 0;
  unsigned mode = data[0];
  size_t len = size - 1;
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) return 0;
  memcpy(buf, data + 1, len);
  if ((mode & 1) && len >= 14) {
    buf[2] = 1, buf[3] = 0; /* the fixture's group */
    uint32_t h = (uint32_t)XXH3_64bits(buf, len - 4);
    memcpy(buf + len - 4, &h, 4);
  }
  uih_error err;
  uih_events_info info;
  int rc = uih_events_read_info(buf, len, &info, &err);
  if (rc != UIH_OK && (err.code != rc || err.msg[0] == '\0')) abort();

  uih_slice in[2] = {{buf, len}, {buf, len}};
  const uint8_t *p;
  size_t n;
  if (rc == UIH_OK && !info.quarantined && info.group == 1) {
    if (uih_events_merge(ev, 1, in, 1, NULL, &p, &n, &err) != UIH_OK) abort();
    if (n != len || memcmp(p, buf, len) != 0) abort();
    if (uih_events_merge(ev, 1, in, 2, NULL, &p, &n, &err) != UIH_OK) abort();
    if (n != len || memcmp(p, buf, len) != 0) abort();
    rc = uih_events_decode(buf, len, INT64_MIN, INT64_MAX, out, &err);
    if (rc == UIH_OK && out->count != info.count) abort();
    if (rc != UIH_OK && rc != UIH_ERR_TYPE_MISMATCH && rc != UIH_ERR_OUT_OF_RANGE) abort();
    if (rc == UIH_OK) { /* the newest k are the full decode's last k */
      uint32_t k = mode >> 1;
      if (uih_events_decode_newest(buf, len, INT64_MIN, INT64_MAX, k, tail, &err) != UIH_OK) abort();
      uint32_t want = k < out->count ? k : out->count, skip = out->count - want;
      if (tail->count != want) abort();
      for (uint32_t c = 0; c < out->ncolumns; c++)
        for (uint32_t r = 0; r < want; r++) {
          int has = uih_column_has(&tail->columns[c], r);
          if (has != uih_column_has(&out->columns[c], skip + r) ||
              (has && uih_column_get_bits(&tail->columns[c], r) != uih_column_get_bits(&out->columns[c], skip + r)))
            abort();
        }
    }
    int64_t wm = (int64_t)((uint64_t)info.min_ts + ((uint64_t)info.max_ts - (uint64_t)info.min_ts) / 2);
    uih_retain_action a = uih_events_retain(ev, buf, len, wm, &p, &n);
    if (a == UIH_RETAIN_CHANGE) {
      uih_events_info kept;
      if (uih_events_read_info(p, n, &kept, NULL) != UIH_OK || kept.min_ts < wm ||
          kept.max_ts != info.max_ts || kept.count >= info.count)
        abort();
    }
  }
  /* The merge operator: valid lists of group 1 merge, anything else is
   * quarantined with every byte kept. */
  uint8_t key[10] = {0, 0, 0, 0, 0, 0, 0, 42, 0, 1};
  int q = -1;
  if (uih_events_merge_value(ev, key, sizeof key, &in[0], &in[1], 1, NULL, &p, &n, &q, &err) != UIH_OK)
    abort();
  int valid = rc == UIH_OK || rc == UIH_ERR_TYPE_MISMATCH || rc == UIH_ERR_OUT_OF_RANGE;
  if (q != !(valid && !info.quarantined && info.group == 1)) abort();
  if (q) {
    uih_events_info qi;
    uih_slice s;
    if (uih_events_read_info(p, n, &qi, NULL) != UIH_OK || !qi.quarantined) abort();
    /* a quarantined input's own inputs are taken over flat */
    if (!(rc == UIH_OK && info.quarantined) && qi.count != 2) abort();
    if (!(rc == UIH_OK && info.quarantined) &&
        (uih_events_quarantined(p, n, 1, &s, NULL, 0, NULL) != UIH_OK || s.len != len ||
         (len && memcmp(s.data, buf, len) != 0)))
      abort();
  }
  free(buf);
  return 0;
}
