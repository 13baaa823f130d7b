/* The schema both stripe fuzz targets use: one group (id 1) with a trait of
 * every type, so fuzzed directories can match any of them. */
#ifndef UIH_FUZZ_STRIPE_FIXTURE_H
#define UIH_FUZZ_STRIPE_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "uih/schema.h"

static const char kFuzzStripeSchema[] =
    "{\"name\": \"fuzz\", \"version\": 1, \"groups\": [{\"name\": \"g\", \"id\": 1,"
    " \"stripe_events\": 65536, \"traits\": ["
    "{\"name\": \"ts\", \"id\": 1, \"type\": \"timestamp\"},"
    "{\"name\": \"item\", \"id\": 2, \"type\": \"id\"},"
    "{\"name\": \"delta\", \"id\": 3, \"type\": \"int64\"},"
    "{\"name\": \"watch\", \"id\": 4, \"type\": \"uint32\", \"compression\": \"lz4\"},"
    "{\"name\": \"score\", \"id\": 5, \"type\": \"float32\"},"
    "{\"name\": \"kind\", \"id\": 6, \"type\": \"category\", \"compression\": \"zstd\"},"
    "{\"name\": \"liked\", \"id\": 7, \"type\": \"flag\"}]}]}";

/* The fixture's only group; the schema lives for the whole process. */
static const uih_group *fuzz_stripe_group(void) {
  static uih_schema *schema;
  if (!schema && uih_schema_parse(kFuzzStripeSchema, strlen(kFuzzStripeSchema), "fixture",
                                  &schema, NULL) != UIH_OK)
    abort();
  return uih_schema_group_at(schema, 0);
}

#endif /* UIH_FUZZ_STRIPE_FIXTURE_H */
