/* Fuzz target: the loader-input reader on arbitrary bytes, four ways: with
 * the stripe fixture's schema (group "g": ts, item, delta, watch, score,
 * kind, liked); with the same traits spelled otherwise (string user ids
 * and items, hashed and checked for two strings with one id; times in RFC
 * 3339, stored in microseconds); as JSON Lines through a map of nested
 * paths; as a headerless "::" file of a fixed group. Any input gives
 * events or an error with a message naming the input; never a crash, a
 * hang or an event without its timestamp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_fixture.h"
#include "uih/csv.h"
#include "uih/key.h"

static const char kSpelled[] =
    "{\"name\": \"fuzz\", \"version\": 1, \"user_ids\": \"string\", \"groups\": [{\"name\": \"g\", \"id\": 1,"
    " \"traits\": ["
    "{\"name\": \"ts\", \"id\": 1, \"type\": \"timestamp\", \"unit\": \"us\", \"input\": \"rfc3339\"},"
    "{\"name\": \"item\", \"id\": 2, \"type\": \"id\", \"input\": \"string\"},"
    "{\"name\": \"delta\", \"id\": 3, \"type\": \"int64\"},"
    "{\"name\": \"watch\", \"id\": 4, \"type\": \"uint32\"},"
    "{\"name\": \"score\", \"id\": 5, \"type\": \"float32\"},"
    "{\"name\": \"kind\", \"id\": 6, \"type\": \"category\"},"
    "{\"name\": \"liked\", \"id\": 7, \"type\": \"flag\"}]}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, const uih_schema *schema, const uih_input_layout *layout,
                     uih_id_check *ids) {
  FILE *f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "r");
  if (!f) return;
  uih_csv_reader *r = NULL;
  uih_error err;
  int rc = uih_csv_open_layout(f, "fuzz.csv", schema, layout, &r, &err);
  if (rc != UIH_OK && (err.code != rc || strncmp(err.msg, "fuzz.csv", 8) != 0)) abort();
  if (rc == UIH_OK) uih_csv_check_ids(r, ids);
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uih_schema *plain, *spelled;
  (void)fuzz_stripe_group; /* the fixture's schema text is all this target takes */
  if (!plain && (uih_schema_parse(kFuzzStripeSchema, strlen(kFuzzStripeSchema), "fixture", &plain, NULL) != UIH_OK ||
                 uih_schema_parse(kSpelled, strlen(kSpelled), "spelled", &spelled, NULL) != UIH_OK))
    abort();
  read_all(data, size, plain, NULL, NULL);
  uih_id_check *ids = NULL;
  if (uih_id_check_create(&ids, NULL) != UIH_OK) abort();
  read_all(data, size, spelled, NULL, ids);
  uih_id_check_free(ids);
  const uih_input_layout jsonl = {"jsonl", NULL, "g", "user_id=u.id,ts=t,item=i.x.y,kind=k,liked=l,score=s", NULL};
  read_all(data, size, plain, &jsonl, NULL);
  const uih_input_layout colons = {NULL, "::", "g", NULL, "user_id,ts,item,kind,watch"};
  read_all(data, size, plain, &colons, NULL);
  return 0;
}
