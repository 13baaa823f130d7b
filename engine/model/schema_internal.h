/* The schema object behind the opaque uih_schema handle. */
#ifndef UIH_SCHEMA_INTERNAL_H
#define UIH_SCHEMA_INTERNAL_H

#include "uih/schema.h"

struct uih_schema {
  char *name;
  uint32_t version;
  uih_input user_ids; /* UIH_INPUT_NATIVE or UIH_INPUT_STRING */
  uint32_t ngroups;
  uih_group *groups; /* sorted by id; each owns its traits, names, categories */
};

/* Sorts groups and traits by id and links each group's timestamp trait.
 * Called once by the parser after validation. */
void uih_schema_finish(uih_schema *schema);

#endif /* UIH_SCHEMA_INTERNAL_H */
