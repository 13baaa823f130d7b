/* Fuzz target: the loader-input CSV reader on arbitrary bytes, with the
 * stripe fixture's schema (group "g": ts, item, delta, watch, score, kind,
 * liked). Any input gives events or an error with a message naming the
 * input; never a crash, a hang or an event without its timestamp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_fixture.h"
#include "uih/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uih_group *g = fuzz_stripe_group();
  (void)g;
  static uih_schema *schema;
  if (!schema && uih_schema_parse(kFuzzStripeSchema, strlen(kFuzzStripeSchema), "fixture", &schema,
                                  NULL) != UIH_OK)
    abort();
  FILE *f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "r");
  if (!f) return 0;
  uih_csv_reader *r = NULL;
  uih_error err;
  int rc = uih_csv_open_stream(f, "fuzz.csv", schema, &r, &err);
  if (rc != UIH_OK && (err.code != rc || strncmp(err.msg, "fuzz.csv", 8) != 0)) abort();
  for (int i = 0; rc == UIH_OK; i++) {
    uint64_t user;
    const uih_batch *ev;
    rc = uih_csv_next(r, &user, &ev, &err);
    if (rc != UIH_OK && (err.code != rc || strncmp(err.msg, "fuzz.csv", 8) != 0)) abort();
    if (rc != UIH_OK || !ev) break;
    if (ev->count != 1) abort();
    int ts = uih_batch_column_index(ev, ev->group->ts->id);
    if (ts < 0 || !uih_column_has(&ev->columns[ts], 0)) abort();
  }
  uih_csv_close(r);
  fclose(f);
  return 0;
}
