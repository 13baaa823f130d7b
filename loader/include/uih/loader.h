/* uihstore — the daily bulk loader: loader-input CSV files (uih/csv.h;
 * plain, .gz or .zst; files or directories of them) folded into a store's
 * immutable tier as a new generation per shard (uih/store.h).
 *
 * A load reads every input once, sorting its events by (shard, user,
 * group, ts, trait values) with at most `memory` bytes in memory (more
 * spills sorted runs to the store's tmp/ and merges them), then, shard by
 * shard, merges them with the current generation's stripes — streamed in
 * key order, never a whole history in memory — into the new generation's
 * files. Only when every shard's files are written are the generations
 * published, each atomically (uih/store.h): bad input, a full disk or a
 * refused event publishes nothing.
 *
 * The stripe rule (stripe boundaries never move as history grows):
 *   1. A stripe holds 1..stripe_events events of one (user, group), keyed by
 *      its first event's timestamp; the events of equal timestamp are never
 *      split between stripes, so every event of a stripe has
 *      start <= ts < the next stripe's start. A burst — more than
 *      stripe_events events at one timestamp — is one stripe of its own,
 *      of up to UIH_STRIPE_EVENTS_MAX (65536) events: the key has no room
 *      to tell two stripes of one timestamp apart.
 *   2. A new event joins the last stripe starting at or before it (the
 *      first stripe when it is older than all); a history without stripes
 *      gets one.
 *   3. A stripe that would exceed stripe_events is cut, from its oldest
 *      event, into full stripes and a last partial one, each cut moved
 *      back to the start of a run of equal timestamps; where that run is
 *      a burst, the cut moves forward to its end instead (more than
 *      UIH_STRIPE_EVENTS_MAX events at one timestamp are refused as bad
 *      input, naming the timestamp).
 *   4. Events of one timestamp keep the order they were stored in: a load
 *      puts its new ones after the stored ones of their timestamp (among
 *      themselves in their bytes' order), and nothing a later load does —
 *      a schema change, deletions, new dictionaries — reorders stored
 *      ones. A snapshot's window that ends inside a run of one timestamp
 *      (a burst) thus rebuilds to the same events for good: the events of
 *      its generation are where they were.
 *   So appending in time order fills the newest stripe and then starts new
 *   ones; only the newest stripe of a history is partial, except where late
 *   events split an old one or deletions and the lookback emptied part of
 *   one. A stripe that gains no event and loses none is copied byte for
 *   byte, not re-encoded (when items are deleted, its item column is
 *   decoded to know it loses none), but in a dictionary rebuild (below).
 *
 * Exact duplicates (same timestamp, same trait values), within the inputs
 * or of stored events, are kept once: a stored event keeps its arrival
 * generation (UIH_TRAIT_ARRIVAL), a new one gets the new generation's.
 * The lookback drops events older than through - lookback from the whole
 * history. Events at or past `through` are refused.
 *
 * Deletions (opts.deletes, a CSV file, plain, .gz or .zst):
 *
 *   user_id            erase these users: every event of every group, in
 *   42                 both tiers
 *
 *   item_id            scrub these items: every event whose trait item_id
 *   981                (an id trait) has this value, in every group with it
 *
 *   user_id,item_id    (user, item) pairs; in this form an empty field is
 *   42,981             "any": "42," erases user 42, ",981" scrubs item 981
 *
 * apply to the whole history, stored and new: nothing they name is in the
 * new generation. A user erased loses its mutable tier's events too, in
 * the write that publishes the generation; items and pairs are scrubbed
 * from the immutable tier (the mutable tier's events at or past `through`
 * keep them until a load with the deletions again takes them in). The
 * older generations a store keeps (uih_store_opts.keep) hold what they
 * held until they are retired: open the store with keep = 1 for a load
 * after which no copy may remain.
 *
 * A schema change (opts.schema_json, a valid successor of the store's
 * schema, uih_store_schema_add) applies to the whole history: stripes
 * holding a trait it drops are encoded again without it (counted in
 * stripes_upgraded); traits it adds are read from the inputs and absent
 * in older events. The version is stored with each shard's generation.
 *
 * Value dictionaries (uih/stripe.h): a load carries the base generation's
 * forward and builds one only for a shareable trait without one, from its
 * own rows, so ranks fixed by the first loads stay (copied stripes name
 * them). With opts.rebuild_dicts the load instead counts every shareable
 * trait over the whole history — the stored stripes and the new rows —
 * builds each dictionary afresh and encodes every stripe again with them
 * (stripes_copied is 0; the new generation names none of the old
 * dictionaries): today's popular items get the short ranks, and
 * dictionaries of an older version (without the model `coded` columns
 * need) or declined under older rules are replaced. No dictionary counts
 * the events a load drops (before the horizon, or deleted), so a rebuild
 * with deletions leaves no value they scrub in one; an input event that is
 * already stored counts twice (once stored, once read). It costs what
 * rewriting the loaded shards costs; inputs are optional, as for a load
 * of deletions alone.
 *
 * Bad input is strict by default: the first bad record fails the load,
 * naming file, line and column. With opts.rejects, every bad record (a
 * value, a field count, malformed quoting, an event at or past `through`)
 * goes instead to that file, as CSV with the header
 *
 *   file,line,reason,record
 *
 * (record: the line as it was, without its line break) and the load goes
 * on; `rejected` counts them. A line over 1 MiB, a record over 16 MiB, a
 * bad header, corrupt compressed input or a read error still fails it. An
 * input that is the rejects or the deletions file is refused.
 *
 * Deterministic and idempotent: the same inputs on the same generation
 * give the same stripes, keys and records, and a shard whose current
 * generation was made by the same load (inputs, deletions, schema,
 * through, lookback, a rebuild: the record's digest) is left as it is (counted in
 * shards_skipped) — so rerunning a load that was killed or failed part
 * way converges on what one clean run gives.
 */
#ifndef UIH_LOADER_H
#define UIH_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "uih/csv.h"
#include "uih/error.h"
#include "uih/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a progress callback sees, now and then (from the thread that made
 * the progress; calls never overlap):
 *   "read"     events read so far, bytes = their text's bytes; done/total =
 *              bytes of the input files as stored (compressed ones too),
 *              total 0 when unknown (standard input);
 *   "merge"    events = events written into the new generations so far;
 *              shard >= 0 when that shard's merge just ended, -1 while
 *              shards are merging; done/total = events written / events the
 *              shards held plus the new ones (duplicates, deletions and the
 *              lookback leave `done` short of it); a dictionary rebuild
 *              first counts the events the shards hold, which are in
 *              events, done and total once more;
 *   "publish"  after each shard's publish: events = done = shards published,
 *              total = shards to publish.
 * seconds since the phase began; eta = seconds left at the phase's pace so
 * far, -1 when unknown. */
typedef struct uih_load_progress {
  const char *phase;
  int32_t shard;
  uint64_t events, bytes;
  double seconds;
  uint64_t done, total;
  double eta;
} uih_load_progress;

typedef struct uih_load_opts {
  int64_t through;   /* every event has ts < through; INT64_MIN: the newest event's ts + 1,
                        or the shard's current through when that is later */
  int64_t lookback;  /* > 0: drop events with ts < through - lookback; 0: keep all */
  int32_t shard;     /* -1: every shard; else only this one (events of others are skipped) */
  uint32_t threads;  /* input files read at once, each whole (at most one reader per 16 MiB of
                        memory), and shards merged at once (0 or 1: one at a time); files are read
                        one at a time with `rejects` or string ids */
  size_t memory;     /* bytes the sort holds before it spills a run (>= 1 MiB) */
  void (*progress)(const uih_load_progress *p, void *arg); /* or NULL; called now and then */
  void *progress_arg;
  const char *deletes;       /* a deletions file (above), or NULL */
  const char *rejects;       /* bad records go to this file and the load goes on; NULL: strict */
  const char *schema_json;   /* a new schema version for this load, or NULL */
  size_t schema_len;
  const char *schema_origin; /* names it in messages */
  int rebuild_dicts;         /* 1: value dictionaries rebuilt from the whole history (above) */
  const uih_input_layout *layout; /* how the inputs are laid out (uih/csv.h), or NULL: loader-input CSV */
  int rewrite;               /* 1: every shard written whole, never as a layer (below) */
} uih_load_opts;

#define UIH_LOAD_OPTS_DEFAULT {INT64_MIN, 0, -1, 1, (size_t)256 << 20, NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0}

/* Layers. A load writes a shard's new generation as a layer above its
 * current one (uih_store_writer_layer) — the current generation's files
 * shared, never rewritten; only the stripes the load changed written, and
 * the keys of stripes it no longer holds deleted — when the shard has a
 * generation, fewer than UIH_LOAD_LAYERS_MAX layers, and layers above its
 * oldest holding at most a fifth of the oldest's bytes. It writes the
 * shard whole, in one layer, when any of that fails, with opts.rewrite,
 * with deletions (what they name must leave the disk, not only the
 * reads), with a new schema version (a trait it drops leaves every
 * stripe), and with rebuilt dictionaries. Events the lookback drops are
 * gone from reads at once and from the disk at the next load that writes
 * the shard whole. Reads are the same either way. */
#define UIH_LOAD_LAYERS_MAX 4

typedef struct uih_load_stats {
  uint64_t inputs, input_bytes;  /* files read, their bytes (decompressed) */
  uint64_t events_in;            /* events read for the loaded shards */
  uint64_t events_skipped;       /* events of shards not loaded (--shard) */
  uint64_t duplicates;           /* kept once: repeated in the inputs or already stored */
  uint64_t expired;              /* dropped by the lookback, stored or new */
  uint64_t events_new;           /* stored for the first time */
  uint64_t events, stripes, histories, bytes; /* what the new generations hold */
  uint64_t stripes_copied;       /* kept byte for byte */
  uint64_t stripes_written;      /* encoded by this load */
  uint64_t runs;                 /* sorted runs spilled to disk (those merged beyond the fan-in too) */
  uint64_t rejected;             /* bad records written to opts.rejects */
  uint64_t deleted;              /* events erased by the deletions, stored or new */
  uint64_t delete_users, delete_items, delete_pairs; /* the deletions' entries */
  uint64_t stripes_upgraded;     /* encoded again only to drop traits the schema dropped */
  uint32_t schema_version;       /* the load's */
  uint32_t shards;               /* shards given a new generation */
  uint32_t shards_skipped;       /* shards that already had this load */
  int64_t through, horizon;
  double seconds_read, seconds_sort, seconds_merge; /* per phase (merge includes publishing) */
  /* The new generations' value dictionaries (uih/stripe.h): built by this
   * load (for shareable traits that had none), their entries, and the
   * serialized bytes of all of them, the base generations' included; and
   * those built but dropped as not paying for themselves (values already
   * about as narrow as their ranks would be: uih_value_dict_pays). */
  uint64_t dicts_built, dict_entries, dict_bytes, dicts_declined;
  uint32_t shards_layered;       /* of `shards`: given their generation as a layer (above) */
  uint32_t layers_max;           /* the most layers a new generation has */
} uih_load_stats;

/* Loads `inputs` (files, directories of files read in name order, "-" for
 * standard input) into `store`. On success every loaded shard has a new
 * current generation and *stats (optional) says what happened. On an error
 * the message names the input, line and column, or the shard and stripe,
 * and says what was expected, and no shard has a new generation — unless
 * publishing itself failed part way (an I/O error between shards), when
 * the shards published before it keep their new generation and the message
 * says which. */
int uih_load(uih_store *store, const char *const *inputs, size_t ninputs, const uih_load_opts *opts,
             uih_load_stats *stats, uih_error *err);

#ifdef __cplusplus
}
#endif
#endif /* UIH_LOADER_H */
