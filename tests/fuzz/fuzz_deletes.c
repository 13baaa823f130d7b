/* Fuzz target: the loader's deletions file (loader/deletes.h), read
 * against a fixed schema, and against the same with string user ids and
 * items (hashed). It reads or fails cleanly with a message naming
 * a line; a list that reads has sorted, distinct entries that answer
 * their own lookups, and reading the same bytes again gives the same
 * digest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deletes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char kSchema[] =
    "{\"name\":\"f\",\"version\":1,\"groups\":[{\"name\":\"g\",\"id\":1,\"traits\":["
    "{\"name\":\"ts\",\"id\":1,\"type\":\"timestamp\"},{\"name\":\"item_id\",\"id\":2,\"type\":\"id\"},"
    "{\"name\":\"watch\",\"id\":3,\"type\":\"uint32\"}]},"
    "{\"name\":\"h\",\"id\":2,\"traits\":[{\"name\":\"ts\",\"id\":1,\"type\":\"timestamp\"}]}]}";

static const char kStrings[] =
    "{\"name\":\"f\",\"version\":1,\"user_ids\":\"string\",\"groups\":[{\"name\":\"g\",\"id\":1,\"traits\":["
    "{\"name\":\"ts\",\"id\":1,\"type\":\"timestamp\"},{\"name\":\"item_id\",\"id\":2,\"type\":\"id\",\"input\":\"string\"},"
    "{\"name\":\"watch\",\"id\":3,\"type\":\"uint32\"}]},"
    "{\"name\":\"h\",\"id\":2,\"traits\":[{\"name\":\"ts\",\"id\":1,\"type\":\"timestamp\"}]}]}";

static uint64_t read_digest(const uih_schema *schema, const uint8_t *data, size_t size, ld_deletes **out) {
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) abort();
  uih_error err = {0};
  int rc = ld_deletes_read(f, "fuzz.csv", schema, out, &err);
  fclose(f);
  if (rc != UIH_OK) {
    if (*out != NULL || strncmp(err.msg, "fuzz.csv", 8) != 0) abort();
    return 0;
  }
  return ld_deletes_digest(*out);
}

static void check(const uih_schema *schema, const uint8_t *data, size_t size) {
  ld_deletes *d = NULL, *again = NULL;
  uint64_t digest = read_digest(schema, data, size, &d);
  if (!d) return;
  if (read_digest(schema, data, size, &again) != digest || !again) abort();
  size_t n;
  const uint64_t *users = ld_deletes_users(d, &n);
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && users[i - 1] >= users[i]) abort();
    if (!ld_deletes_user(d, users[i])) abort();
  }
  const uih_group *g = uih_schema_group_at(schema, 0), *h = uih_schema_group_at(schema, 1);
  uint64_t nu, ni, np;
  ld_deletes_counts(d, &nu, &ni, &np);
  if (nu != n) abort();
  if (ni && !ld_deletes_trait(d, g, 12345)) abort();
  if (ld_deletes_trait(d, h, 12345)) abort(); /* h has no id trait */
  ld_deletes_free(d);
  ld_deletes_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uih_schema *schema, *strings;
  if (!schema && (uih_schema_parse(kSchema, sizeof kSchema - 1, "fuzz", &schema, NULL) != UIH_OK ||
                  uih_schema_parse(kStrings, sizeof kStrings - 1, "fuzz", &strings, NULL) != UIH_OK))
    abort();
  if (size == 0) return 0;
  check(schema, data, size);
  check(strings, data, size);
  return 0;
}
