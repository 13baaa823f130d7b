/* Schema objects: encoding names, lookups, evolution rules (the types' table is common/types.c).
 * Parsing and validation of the JSON file live in schema_json.c. */
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "schema_internal.h"
#include "types.h"

static const char *const kEncodingNames[UIH_ENC_COUNT] = {
    "plain", "delta", "delta2", "for", "dict", "rle", "bss", "sparse", "shared", "coded"};

const char *uih_encoding_name(uint32_t encoding) {
  if (encoding == 0 || (encoding & (encoding - 1)) != 0) return NULL;
  int bit = __builtin_ctz(encoding);
  return bit < UIH_ENC_COUNT ? kEncodingNames[bit] : NULL;
}

/* ---- object lifetime and lookups ----------------------------------------- */

static int cmp_trait(const void *a, const void *b) {
  const uih_trait *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

static int cmp_group(const void *a, const void *b) {
  const uih_group *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

void uih_schema_finish(uih_schema *s) {
  qsort(s->groups, s->ngroups, sizeof *s->groups, cmp_group);
  for (uint32_t g = 0; g < s->ngroups; g++) {
    uih_group *grp = &s->groups[g];
    qsort((uih_trait *)grp->traits, grp->ntraits, sizeof *grp->traits, cmp_trait);
    grp->ts = NULL;
    for (uint32_t t = 0; t < grp->ntraits; t++)
      if (grp->traits[t].type == UIH_TYPE_TIMESTAMP && uih_trait_active(&grp->traits[t]))
        grp->ts = &grp->traits[t];
  }
}

void uih_schema_free(uih_schema *s) {
  if (s == NULL) return;
  for (uint32_t g = 0; g < s->ngroups; g++) {
    uih_group *grp = &s->groups[g];
    for (uint32_t t = 0; t < grp->ntraits; t++) {
      uih_trait *tr = (uih_trait *)&grp->traits[t];
      for (uint32_t c = 0; c < tr->ncategories; c++) free((char *)tr->categories[c]);
      free((char **)tr->categories);
      free((char *)tr->name);
    }
    free((uih_trait *)grp->traits);
    free((char *)grp->name);
  }
  free(s->groups);
  free(s->name);
  free(s);
}

const char *uih_schema_name(const uih_schema *s) { return s->name; }
uint32_t uih_schema_version(const uih_schema *s) { return s->version; }
uih_input uih_schema_user_ids(const uih_schema *s) { return s->user_ids; }
uint32_t uih_schema_group_count(const uih_schema *s) { return s->ngroups; }

const uih_group *uih_schema_group_at(const uih_schema *s, uint32_t i) {
  return i < s->ngroups ? &s->groups[i] : NULL;
}

const uih_group *uih_schema_group_by_id(const uih_schema *s, uint16_t id) {
  uih_group key = {.id = id};
  return bsearch(&key, s->groups, s->ngroups, sizeof *s->groups, cmp_group);
}

const uih_group *uih_schema_group_by_name(const uih_schema *s, const char *name) {
  for (uint32_t g = 0; g < s->ngroups; g++)
    if (strcmp(s->groups[g].name, name) == 0) return &s->groups[g];
  return NULL;
}

/* The system trait (schema.h): the same object for every group. */
static const uih_trait kArrival = {.name = UIH_TRAIT_ARRIVAL_NAME,
                                   .id = UIH_TRAIT_ARRIVAL,
                                   .type = UIH_TYPE_UINT32,
                                   .encodings = UIH_ENC_PLAIN | UIH_ENC_DELTA | UIH_ENC_FOR | UIH_ENC_DICT |
                                                UIH_ENC_RLE | UIH_ENC_SPARSE | UIH_ENC_DICTIONARY,
                                   .compression = UIH_COMPRESS_AUTO,
                                   .added_in = 1};

const uih_trait *uih_group_trait_by_id(const uih_group *grp, uint16_t id) {
  if (id == UIH_TRAIT_ARRIVAL) return &kArrival;
  uih_trait key = {.id = id};
  return bsearch(&key, grp->traits, grp->ntraits, sizeof *grp->traits, cmp_trait);
}

const uih_trait *uih_group_trait_by_name(const uih_group *grp, const char *name) {
  for (uint32_t t = 0; t < grp->ntraits; t++)
    if (uih_trait_active(&grp->traits[t]) && strcmp(grp->traits[t].name, name) == 0)
      return &grp->traits[t];
  return NULL;
}

uint32_t uih_group_active_count(const uih_group *grp) {
  uint32_t n = 0;
  for (uint32_t t = 0; t < grp->ntraits; t++) n += uih_trait_active(&grp->traits[t]);
  return n;
}

/* ---- evolution ----------------------------------------------------------- */

static const char *unit_name(uih_time_unit u) {
  return u == UIH_UNIT_SECONDS ? "\"s\"" : u == UIH_UNIT_MILLIS ? "\"ms\"" : u == UIH_UNIT_MICROS ? "\"us\"" : "none";
}

static int check_group_evolution(const uih_group *og, const uih_group *ng, uint32_t old_version,
                                 uih_error *err) {
  for (uint32_t t = 0; t < og->ntraits; t++) {
    const uih_trait *ot = &og->traits[t];
    const uih_trait *nt = uih_group_trait_by_id(ng, ot->id);
    UIH_RETURN_IF(nt == NULL, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') disappeared; keep it with \"dropped_in\" instead",
                  og->name, ot->id, ot->name);
    UIH_RETURN_IF(strcmp(nt->name, ot->name) != 0, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u was '%s', is now '%s'; a trait keeps its name",
                  og->name, ot->id, ot->name, nt->name);
    UIH_RETURN_IF(nt->type != ot->type, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') changed type from %s to %s; add a new trait id instead",
                  og->name, ot->id, ot->name, uih_type_name(ot->type), uih_type_name(nt->type));
    /* What stored values mean: an id's spelling (a string's hash or the
     * number), a time's unit. How input files spell a time may change. */
    UIH_RETURN_IF(ot->type == UIH_TYPE_ID && nt->input != ot->input, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') changed \"input\"; its stored ids are %s: add a new "
                  "trait id instead", og->name, ot->id, ot->name,
                  ot->input == UIH_INPUT_STRING ? "hashes of strings" : "the numbers as given");
    UIH_RETURN_IF(nt->unit != ot->unit, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') changed \"unit\" from %s to %s; its stored times would "
                  "mean other instants, so a timestamp keeps its unit", og->name, ot->id, ot->name,
                  unit_name(ot->unit), unit_name(nt->unit));
    UIH_RETURN_IF(nt->added_in != ot->added_in, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') changed added_in from %u to %u", og->name, ot->id,
                  ot->name, ot->added_in, nt->added_in);
    UIH_RETURN_IF(!uih_trait_active(ot) && nt->dropped_in != ot->dropped_in, err,
                  UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') was dropped in version %u and cannot come back "
                  "or change its dropped_in; add a new trait id instead",
                  og->name, ot->id, ot->name, ot->dropped_in);
    UIH_RETURN_IF(uih_trait_active(ot) && nt->dropped_in != 0 && nt->dropped_in <= old_version,
                  err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': trait %u ('%s') is dropped_in %u, which is not after the old "
                  "version %u", og->name, ot->id, ot->name, nt->dropped_in, old_version);
    for (uint32_t c = 0; c < ot->ncategories; c++)
      UIH_RETURN_IF(c >= nt->ncategories || strcmp(nt->categories[c], ot->categories[c]) != 0,
                    err, UIH_ERR_INCOMPATIBLE,
                    "group '%s': trait %u ('%s') category code %u was '%s'; codes are stored, "
                    "so the vocabulary may only grow at the end", og->name, ot->id, ot->name, c,
                    ot->categories[c]);
  }
  for (uint32_t t = 0; t < ng->ntraits; t++) {
    const uih_trait *nt = &ng->traits[t];
    if (uih_group_trait_by_id(og, nt->id) != NULL) continue;
    UIH_RETURN_IF(nt->added_in <= old_version, err, UIH_ERR_INCOMPATIBLE,
                  "group '%s': new trait %u ('%s') says added_in %u, but the old schema "
                  "(version %u) does not have it; set added_in to the new version",
                  ng->name, nt->id, nt->name, nt->added_in, old_version);
  }
  return UIH_OK;
}

int uih_schema_check_evolution(const uih_schema *older, const uih_schema *newer, uih_error *err) {
  UIH_RETURN_IF(older == NULL || newer == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "check_evolution: NULL schema");
  UIH_RETURN_IF(newer->version <= older->version, err, UIH_ERR_INCOMPATIBLE,
                "version %u does not follow version %u; every change needs a higher version",
                newer->version, older->version);
  UIH_RETURN_IF(newer->user_ids != older->user_ids, err, UIH_ERR_INCOMPATIBLE,
                "\"user_ids\" changed from %s to %s; stored users are keyed by the ids as they were "
                "spelled (a string's hash), so the spelling is the store's for good",
                older->user_ids == UIH_INPUT_STRING ? "\"string\"" : "\"integer\"",
                newer->user_ids == UIH_INPUT_STRING ? "\"string\"" : "\"integer\"");
  for (uint32_t g = 0; g < older->ngroups; g++) {
    const uih_group *og = &older->groups[g];
    const uih_group *ng = uih_schema_group_by_id(newer, og->id);
    UIH_RETURN_IF(ng == NULL, err, UIH_ERR_INCOMPATIBLE,
                  "group %u ('%s') disappeared; its stored stripes would become unreadable",
                  og->id, og->name);
    UIH_RETURN_IF(strcmp(ng->name, og->name) != 0, err, UIH_ERR_INCOMPATIBLE,
                  "group %u was '%s', is now '%s'; a group keeps its name", og->id, og->name,
                  ng->name);
    UIH_FORWARD(check_group_evolution(og, ng, older->version, err));
  }
  return UIH_OK;
}
