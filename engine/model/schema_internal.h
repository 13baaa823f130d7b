/* The schema object behind the opaque uih_schema handle. */
#ifndef UIH_SCHEMA_INTERNAL_H
#define UIH_SCHEMA_INTERNAL_H

#include "uih/schema.h"

struct uih_schema {
  char *name;
  uint32_t version;
  uint32_t ngroups;
  uih_group *groups; /* sorted by id; each owns its traits, names, categories */
};

/* Per type: name, width in bytes, allowed UIH_ENC_* encodings. Entry 0
 * (no type) is all zeros; uih_type_info_of maps every unknown type there,
 * so readers of untrusted type codes look them up without a call. */
typedef struct uih_type_info {
  const char *name;
  size_t width;
  uint32_t encodings;
} uih_type_info;

#define UIH_TYPE_TABLE (UIH_TYPE_FLAG + 1)
extern const uih_type_info uih_types[UIH_TYPE_TABLE];

static inline const uih_type_info *uih_type_info_of(uih_type type) {
  return &uih_types[(unsigned)type < UIH_TYPE_TABLE ? (unsigned)type : 0];
}

/* Sorts groups and traits by id and links each group's timestamp trait.
 * Called once by the parser after validation. */
void uih_schema_finish(uih_schema *schema);

#endif /* UIH_SCHEMA_INTERNAL_H */
