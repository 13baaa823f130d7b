/* The value types: name, width and allowed encodings of each uih_type,
 * in one table every module reads inline (schema validation, the stripe
 * codec, event lists). Entry 0 (no type) is all zeros; uih_type_info_of
 * maps every unknown type there, so readers of untrusted type codes look
 * them up without a call or a branch on validity. */
#ifndef UIH_TYPES_H
#define UIH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "uih/schema.h"

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

/* Value `row` of a column's values array of `type` set to `bits` at the
 * type's width (a flag as 0 or 1): uih_column_set_bits without the
 * presence bit, inline for readers that store a value each call. */
static inline void uih_type_store(void *values, uih_type type, uint32_t row, uint64_t bits) {
  switch (uih_type_info_of(type)->width) {
    case 8: ((uint64_t *)values)[row] = bits; break;
    case 4: ((uint32_t *)values)[row] = (uint32_t)bits; break;
    default: ((uint8_t *)values)[row] = bits != 0; break;
  }
}

#endif /* UIH_TYPES_H */
