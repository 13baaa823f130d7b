/* The value dictionaries a shard's new generation is encoded with
 * (uih/stripe.h "what stripes share"). The dictionaries of the generation
 * a load builds on are kept as they are: copied stripes name them, and the
 * stripes the load writes keep their values' ranks. A shareable trait
 * (id, int64, uint32, category) of the schema that has none yet gets one,
 * built from the load's own rows of that trait: the values seen at least
 * twice, the 2^20 most frequent at most, kept if it is likely to pay for
 * itself (uih_value_dict_pays: not for ids already dense), else, when the
 * load had enough of its values to judge, replaced by the mark of a
 * declined trait (no entries), so that later loads do not count it again.
 * A first load of a day's or a backfill's events therefore fixes each
 * trait's ranks; items that become popular later are stored as they are
 * (not ranked) until a rebuild.
 *
 * A rebuild (uih_load_opts.rebuild_dicts) carries nothing forward: every
 * shareable trait is counted again over the whole history — the base
 * generation's stripes, decoded, and the load's rows — and judged afresh,
 * and the merge encodes every stripe again with the new dictionaries, so
 * no stripe names an old one. It is how a store's ranks follow the
 * popularity of today's items, and how dictionaries written before version
 * 2 (no model, so no `coded` columns) or declined under older rules are
 * replaced. */
#ifndef UIH_LOADER_DICTS_H
#define UIH_LOADER_DICTS_H

#include <stddef.h>
#include <stdint.h>

#include "deletes.h"
#include "sort.h"
#include "uih/schema.h"
#include "uih/store.h"
#include "uih/stripe.h"

#define LD_DICT_MIN_COUNT 2
#define LD_DICT_MAX_ENTRIES (1u << 20)
/* Values a decline is judged on for good: below it (a small first load),
 * a later load counts the trait again. */
#define LD_DICT_JUDGED (1u << 16)
/* Distinct values held per trait counted (counts.h): past it, the table is
 * pruned of its rarest, so the most frequent values of a day — or of a
 * rebuild's whole history — are found whatever order they come in, and
 * the memory stays at most 32 MiB per trait counted (a table of 16-byte
 * slots at most half full), per shard being merged. */
#define LD_DICT_MAX_COUNTED (1u << 20)

typedef struct ld_dict_stats {
  uint32_t built;    /* dictionaries built by this load */
  uint32_t declined; /* built and dropped: they would not pay (uih_value_dict_pays) */
  uint64_t entries;  /* their entries */
  uint64_t bytes;    /* every dictionary of the generation, serialized */
} ld_dict_stats;

/* What a shard's dictionaries are built from. Values of events the load
 * drops — before the horizon, or named by the deletions — are not counted,
 * so that a rebuild with deletions leaves no scrubbed value in them. */
typedef struct ld_dicts_in {
  const uih_schema *schema;
  uint32_t shard;
  /* The base generation's dictionaries (a uih_stripe_context_serialize
   * value, maybe empty), carried forward unless this is a rebuild. */
  const uint8_t *base;
  size_t base_len;
  ld_sorter *sorter;         /* the load's rows (read once more) */
  int64_t horizon;
  const ld_deletes *deletes; /* or NULL */
  /* A rebuild: the base generation's stripes (a scan not read yet) and
   * their dictionaries, which decode them; NULL scan: no rebuild. */
  uih_store_scan *stored;
  const uih_stripe_context *stored_ctx;
  /* or NULL: called every 64 Ki stored events counted, with their number */
  void (*tick)(void *arg, uint64_t events);
  void *tick_arg;
} ld_dicts_in;

/* The context for the shard's new generation: without a rebuild, the base
 * generation's dictionaries plus one for each of the schema's shareable
 * traits without one, counted over the rows; with one, one for every
 * shareable trait, counted over the rows and the stored stripes (the
 * base's are not carried). Indexed for encoding; *out is never NULL on
 * success. */
int ld_dicts_build(const ld_dicts_in *in, uih_stripe_context **out, ld_dict_stats *stats, uih_error *err);

#endif /* UIH_LOADER_DICTS_H */
