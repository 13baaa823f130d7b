/* The loader's merge of one shard: the current generation's stripes and
 * the shard's sorted new rows, (user, group) by (user, group), into the
 * next generation's writer, by the stripe rule of uih/loader.h, erasing
 * what the deletions name and the traits the schema dropped. */
#ifndef UIH_LOADER_MERGE_H
#define UIH_LOADER_MERGE_H

#include <stdint.h>

#include "deletes.h"
#include "dicts.h"
#include "sort.h"
#include "uih/error.h"
#include "uih/generation.h"
#include "uih/schema.h"
#include "uih/store.h"

typedef struct ld_merge {
  /* in */
  uih_store *store;
  const uih_schema *schema;
  uint32_t shard;
  int64_t horizon;         /* events with ts < horizon are dropped */
  ld_sorter *sorter;
  const ld_deletes *deletes; /* or NULL */
  int rebuild_dicts;         /* value dictionaries built afresh (dicts.h) and every stripe encoded again */
  uih_store_writer *writer; /* the shard's next generation */
  int layered;              /* the writer is a layer above the current generation (uih_store_writer_layer):
                               only stripes new or written again go to it, and deletions of stored keys
                               no longer held; copied stripes stay where they are */
  const uih_generation *base; /* the current generation's record (NULL: none). A layered load in which
                               nothing but new rows changes a stored history (no deletions, the horizon
                               where `base` has it; the schema version too, which a layered load keeps,
                               so no stored stripe holds a trait it dropped: the load that brought the
                               version wrote every such stripe again) reads no history without new rows
                               (the scan seeks past them): the new record is base's counts, less the
                               stored stripes of each history the load touches, plus what it makes of
                               them */
  /* or NULL: called every 64 Ki events written, with the events written
   * since the last call (a rebuild's count of the stored events first) */
  void (*tick)(void *arg, uint64_t events);
  void *tick_arg;
  /* out: counts into the record (events .. expired), and these */
  uih_generation record;
  uint64_t stripes_copied, stripes_written;
  uint64_t stripes_upgraded; /* rewritten only because they held traits the schema dropped */
  uint64_t emitted;          /* events of the stripes emitted (copied or written) */
  uint64_t ticked;           /* of them, reported to tick */
  ld_dict_stats dicts;       /* the new generation's value dictionaries */
} ld_merge;

/* Runs the merge; on an error the message names the shard and history. */
int ld_merge_shard(ld_merge *m, uih_error *err);

#endif /* UIH_LOADER_MERGE_H */
