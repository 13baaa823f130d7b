/* The schema both stripe fuzz targets use: one group (id 1) with a trait of
 * every type, so fuzzed directories can match any of them, and a context
 * of value dictionaries for its shareable traits. */
#ifndef UIH_FUZZ_STRIPE_FIXTURE_H
#define UIH_FUZZ_STRIPE_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "uih/schema.h"
#include "uih/stripe.h"

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

/* A fixed context of value dictionaries for the fixture's group: 300
 * scattered ids (trait 2), int64 -50..49 (trait 3), uint32 0..99 (trait 4)
 * and category codes 0..7 (trait 6), each most frequent first, so fuzzed
 * shared columns can name a dictionary that exists. */
static inline const uih_stripe_context *fuzz_stripe_context(void) {
  static uih_stripe_context *ctx;
  if (ctx) return ctx;
  static const struct {
    uint16_t trait;
    uih_type type;
    uint64_t n;
  } kDicts[] = {{2, UIH_TYPE_ID, 300}, {3, UIH_TYPE_INT64, 100}, {4, UIH_TYPE_UINT32, 100}, {6, UIH_TYPE_CATEGORY, 8}};
  if (uih_stripe_context_create(&ctx, NULL) != UIH_OK) abort();
  for (size_t i = 0; i < sizeof kDicts / sizeof *kDicts; i++) {
    uint64_t values[300], counts[300];
    for (uint64_t k = 0; k < kDicts[i].n; k++) {
      values[k] = kDicts[i].type == UIH_TYPE_ID ? (k * UINT64_C(0x9e3779b97f4a)) & ((UINT64_C(1) << 40) - 1)
                  : kDicts[i].type == UIH_TYPE_INT64 ? (uint64_t)((int64_t)k - 50)
                                                      : k;
      counts[k] = 1000 - k;
    }
    uih_value_dict *d = NULL;
    if (uih_value_dict_build(1, kDicts[i].trait, kDicts[i].type, values, counts, kDicts[i].n, 1, 300, &d, NULL) != UIH_OK ||
        uih_stripe_context_add(ctx, d, NULL) != UIH_OK)
      abort();
  }
  return ctx;
}

#endif /* UIH_FUZZ_STRIPE_FIXTURE_H */
