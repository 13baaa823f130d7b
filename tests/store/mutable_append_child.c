/* Appends one event per call with a synced WAL and prints each timestamp
 * once its append returned, for the durability test to kill at random:
 *   mutable_append_child DB SCHEMA FIRST COUNT
 * Event i goes to user i % 16, with timestamp i and trait "v" = i * 7.
 * Written against the public C API only. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "uih/batch.h"
#include "uih/mutable.h"
#include "uih/schema.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: mutable_append_child DB SCHEMA FIRST COUNT\n");
    return 2;
  }
  int64_t first = strtoll(argv[3], NULL, 10), count = strtoll(argv[4], NULL, 10);
  uih_error err = {0};
  uih_schema *schema = NULL;
  uih_mutable *m = NULL;
  uih_batch *b = NULL;
  if (uih_schema_load(argv[2], &schema, &err) != UIH_OK ||
      uih_mutable_open(argv[1], schema, NULL, &m, &err) != UIH_OK ||
      uih_batch_create(uih_schema_group_at(schema, 0), 1, NULL, 0, &b, &err) != UIH_OK) {
    fprintf(stderr, "mutable_append_child: %s\n", uih_error_message(&err));
    return 1;
  }
  int ts = uih_batch_column_index(b, b->group->ts->id);
  int v = uih_batch_column_index(b, uih_group_trait_by_name(b->group, "v")->id);
  for (int64_t i = first; i < first + count; i++) {
    uint32_t row;
    uih_batch_clear(b);
    uih_batch_append(b, &row, NULL);
    uih_column_set_bits(&b->columns[ts], row, (uint64_t)i);
    uih_column_set_bits(&b->columns[v], row, (uint64_t)(i * 7));
    if (uih_mutable_append(m, (uint64_t)(i % 16), b, UIH_APPEND_SYNC, &err) != UIH_OK) {
      fprintf(stderr, "mutable_append_child: %s\n", uih_error_message(&err));
      return 1;
    }
    printf("%" PRId64 "\n", i);
    fflush(stdout);
  }
  uih_batch_free(b);
  uih_mutable_close(m);
  uih_schema_free(schema);
  return 0;
}
