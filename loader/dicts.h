/* The value dictionaries a shard's new generation is encoded with
 * (uih/stripe.h "what stripes share"). The dictionaries of the generation
 * a load builds on are kept as they are: copied stripes name them, and the
 * stripes the load writes keep their values' ranks. A shareable trait
 * (id, int64, uint32, category) of the schema that has none yet gets one,
 * built from the load's own rows of that trait: the values seen at least
 * twice, the 2^20 most frequent at most, kept if it is likely to pay for
 * itself (uih_value_dict_pays: not for ids already dense), else, when the
 * load had enough of its values to judge, replaced by the mark of a
 * declined trait (no entries), so that later loads do not count it again. A first load of a day's or a
 * backfill's events therefore fixes each trait's ranks; items that become
 * popular later are stored as they are (not ranked) until a rebuild. */
#ifndef UIH_LOADER_DICTS_H
#define UIH_LOADER_DICTS_H

#include <stddef.h>
#include <stdint.h>

#include "sort.h"
#include "uih/schema.h"
#include "uih/stripe.h"

#define LD_DICT_MIN_COUNT 2
#define LD_DICT_MAX_ENTRIES (1u << 20)
/* Values a decline is judged on for good: below it (a small first load),
 * a later load counts the trait again. */
#define LD_DICT_JUDGED (1u << 16)
/* Distinct values counted per trait; past it, values not seen yet are not
 * counted (those already seen still are), which bounds the memory a day
 * of many distinct ids takes: at most 32 MiB per trait counted (a table of
 * 16-byte slots at most half full), per shard being merged. */
#define LD_DICT_MAX_COUNTED (1u << 20)

typedef struct ld_dict_stats {
  uint32_t built;    /* dictionaries built by this load */
  uint32_t declined; /* built and dropped: they would not pay (uih_value_dict_pays) */
  uint64_t entries;  /* their entries */
  uint64_t bytes;    /* every dictionary of the generation, serialized */
} ld_dict_stats;

/* The context for shard `shard`'s new generation: the base generation's
 * dictionaries (`base`, a uih_stripe_context_serialize value, maybe empty)
 * plus one for each of `schema`'s shareable traits without one, counted
 * over the shard's rows in `sorter` (read once more). Indexed for encoding;
 * *out is never NULL on success. */
int ld_dicts_build(const uih_schema *schema, uint32_t shard, const uint8_t *base, size_t base_len, ld_sorter *sorter,
                   uih_stripe_context **out, ld_dict_stats *stats, uih_error *err);

#endif /* UIH_LOADER_DICTS_H */
