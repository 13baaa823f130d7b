/* Fuzz target: schema files. Any bytes must parse into a schema whose
 * invariants hold, or fail with a code and a message; never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uih/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_group(const uih_schema *s, const uih_group *g) {
  if (uih_schema_group_by_id(s, g->id) != g) abort();
  if (uih_schema_group_by_name(s, g->name) != g) abort();
  if (g->ts == NULL || g->ts->type != UIH_TYPE_TIMESTAMP || !uih_trait_active(g->ts)) abort();
  if (g->stripe_events == 0 || g->stripe_events > UIH_STRIPE_EVENTS_MAX) abort();
  for (uint32_t t = 0; t < g->ntraits; t++) {
    const uih_trait *tr = &g->traits[t];
    if (t > 0 && g->traits[t - 1].id >= tr->id) abort();
    if (uih_group_trait_by_id(g, tr->id) != tr) abort();
    if (uih_trait_active(tr) && uih_group_trait_by_name(g, tr->name) != tr) abort();
    if (tr->encodings == 0 || (tr->encodings & ~uih_encodings_for_type(tr->type))) abort();
    if (uih_type_width(tr->type) == 0) abort();
    if (tr->added_in == 0 || tr->added_in > uih_schema_version(s)) abort();
    if (tr->dropped_in && (tr->dropped_in <= tr->added_in || tr->dropped_in > uih_schema_version(s)))
      abort();
    for (uint32_t c = 0; c < tr->ncategories; c++)
      if (tr->categories[c] == NULL || tr->categories[c][0] == '\0') abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uih_schema *s = NULL;
  uih_error err;
  int rc = uih_schema_parse((const char *)data, size, "fuzz", &s, &err);
  if (rc != UIH_OK) {
    if (s != NULL || err.code != rc || err.msg[0] == '\0') abort();
    return 0;
  }
  for (uint32_t g = 0; g < uih_schema_group_count(s); g++) {
    const uih_group *grp = uih_schema_group_at(s, g);
    if (g > 0 && uih_schema_group_at(s, g - 1)->id >= grp->id) abort();
    check_group(s, grp);
  }
  /* A schema is never its own successor (same version). */
  if (uih_schema_check_evolution(s, s, &err) != UIH_ERR_INCOMPATIBLE) abort();
  uih_schema_free(s);
  return 0;
}
