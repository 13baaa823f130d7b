/* uihstore — a store: one directory holding a schema (every version), both
 * tiers and the shards.
 *
 *   DIR/
 *     UIHSTORE              the descriptor: format, shard count and the
 *                           store's id (uih/generation.h), written last by init
 *     shard-0000/ ...       one RocksDB database per shard: its metadata
 *                           (schema versions, generation records, the current
 *                           generation, erasures) and one column family per
 *                           live generation of the immutable tier
 *     shard-0000.published  which generation the shard's last publish made
 *                           current: what serving processes poll
 *     mutable-0000/ ...     one mutable tier per shard (uih/mutable.h), owned
 *                           by the serving process
 *     tmp/                  a running load's files (spilled runs, new
 *                           tables); what a killed load left is removed by
 *                           the next writable open
 *
 * Processes. Three roles run at once on one store, in as many processes as
 * they like, on any machines that share the directory (uih_store_opts.role):
 *   loading   a load (uih/loader.h) publishes generations; one per shard
 *   serving   appends to the mutable tier and takes snapshots, 24/7: one per
 *             shard. It follows the loads' publishes (within follow_ms), a
 *             snapshot in flight finishing on the generation it began with
 *   training  read-only, as many as wanted, each holding what it opened
 * The default role does all of it in one process. Who writes which file,
 * who holds which lock and what survives whose crash is drawn in
 * store/format.h in uihstore's sources.
 *
 * Every key and value a shard holds, with its byte order, is drawn in one
 * place: store/format.h in uihstore's sources.
 *
 * Users map to shards by uih_shard_of(user_id, shards) (uih/key.h). Within
 * a shard, the immutable tier's keys are uih/key.h's (user, group, first
 * timestamp of the stripe) and its values are stripes (uih/stripe.h)
 * holding the group's traits and the arrival generation
 * (UIH_TRAIT_ARRIVAL, uih/schema.h).
 *
 * A generation becomes current in one synced write of its record and the
 * current pointer, after its files were ingested into their column family;
 * then the oldest generations beyond `keep` are retired, but those a
 * serving or read-only store holds. A reader in this process that holds a generation
 * (a read or scan under way) keeps reading it until it is done. Killed at
 * any point, the store opens on the previous generation or the new one,
 * complete. The owner of the mutable tier (a serving store, or a store of
 * role ALL) then applies it: the erased users' mutable events deleted and
 * its watermark advanced to the generation's `through`.
 *
 * Implemented and installed with libuih_rocksdb. No C++ exception leaves
 * these functions. A store is safe to use from any number of threads; one
 * load per shard runs at a time.
 */
#ifndef UIH_STORE_H
#define UIH_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "uih/batch.h"
#include "uih/error.h"
#include "uih/generation.h"
#include "uih/mutable.h"
#include "uih/schema.h"
#include "uih/snapshot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a store at `dir` (absent or an empty directory) with `shards`
 * (1..UIH_STORE_SHARDS_MAX) shards and the schema in `schema_json`
 * (`len` bytes, validated; `origin` names it in messages). Nothing is a
 * store until the descriptor is written, last. */
int uih_store_init(const char *dir, const char *schema_json, size_t len, const char *origin,
                   uint32_t shards, uih_error *err);

typedef struct uih_store_init_opts {
  uint32_t shards;    /* 1..UIH_STORE_SHARDS_MAX (default 1) */
  int64_t chunk_span; /* the mutable tier's chunk, in time units (> 0; see uih/mutable.h;
                         default UIH_CHUNK_SPAN_DEFAULT, an hour of milliseconds) */
} uih_store_init_opts;

#define UIH_STORE_INIT_OPTS_DEFAULT {1, UIH_CHUNK_SPAN_DEFAULT}

/* uih_store_init with every setting a store is created with; `opts` NULL
 * means UIH_STORE_INIT_OPTS_DEFAULT. */
int uih_store_create(const char *dir, const char *schema_json, size_t len, const char *origin,
                     const uih_store_init_opts *opts, uih_error *err);

/* What an open of a store does (uih_store_opts.role; read_only makes it read-only). */
enum {
  UIH_STORE_ROLE_ALL = 0,   /* loads, appends, snapshots: the shards' databases and their mutable
                               tiers, both locked by this process */
  UIH_STORE_ROLE_LOAD = 1,  /* loads only: the shards' databases locked, the mutable tiers left to a
                               serving process (uih_store_mutable fails, snapshots too); read-only:
                               the shards' databases alone */
  UIH_STORE_ROLE_SERVE = 2, /* appends and snapshots: the mutable tiers locked, the shards' databases
                               read-only, followed as loads publish (follow_ms) */
};

typedef struct uih_store_opts {
  int read_only;            /* nothing in the store is written or created, not even a LOG file; it
                               sees the generations it opened with, and holds them (uih_store_pinned) */
  uint32_t keep;            /* generations a shard keeps live (>= 1; default 2), besides those a
                               read-only store holds */
  size_t block_cache_bytes; /* the mutable tier's block cache per shard (default 32 MiB) */
  uint64_t file_bytes;      /* a load's table files roll over at this size (default 256 MiB); a layer is one file */
  int one_shard;            /* nonzero: open shard `shard` alone (default 0: every shard) */
  uint32_t shard;
  unsigned role;            /* UIH_STORE_ROLE_* (default ALL) */
  uint32_t follow_ms;       /* a serving store looks for publishes this often (default 250; 0: only
                               when uih_store_refresh is called) */
  size_t cache_bytes;       /* a store that owns its mutable tiers (serve, all): the write-through
                               cache of active users' mutable events, for all shards (default 64 MiB;
                               0: none), least recently used out */
} uih_store_opts;

#define UIH_STORE_OPTS_DEFAULT \
  {0, 2, (size_t)32 << 20, (uint64_t)256 << 20, 0, 0, UIH_STORE_ROLE_ALL, 250, (size_t)64 << 20}

typedef struct uih_store uih_store;

/* Opens the store at `dir` (NULL opts: the defaults). A writable open also
 * finishes what a killed load left: generations never made current are
 * dropped, temporary files removed, a watermark behind the current
 * generation advanced. A directory that is no store fails with
 * UIH_ERR_NOT_FOUND ("not a uihstore store: DIR: why").
 *
 * A store opened for one shard (opts.one_shard) opens only that shard's
 * database, so processes can each write their own shard of one store at
 * once — one load per shard, on as many machines as share the directory.
 * It recovers only its shard's leftovers (its temporary files are under
 * tmp/shard-NNNN/), knows the schema versions its shard holds, and calls
 * about another shard, or a user in one, fail with UIH_ERR_INVALID_ARGUMENT
 * naming the shard it opened. uih_store_shards still counts every shard:
 * users map to shards as in the whole store. A whole-store writable open
 * fails while any shard is open for writing elsewhere (each shard's
 * database is locked by its writer). */
int uih_store_open(const char *dir, const uih_store_opts *opts, uih_store **out, uih_error *err);

void uih_store_close(uih_store *s); /* NULL is fine */

/* The newest schema version any shard has; valid until close (a load
 * that publishes a newer version makes that one the store's; the older
 * one stays valid). */
const uih_schema *uih_store_schema(const uih_store *s);

/* Makes schema `json` (`len` bytes, `origin` names it in messages) known
 * to the store for a load: parsed and checked as a valid successor of the
 * newest version the store knows (uih_schema_check_evolution), or
 * byte-identical to the version of the same number it has. *out is valid
 * until close. Nothing is written: a shard stores the version in the
 * synced write that publishes its first generation written with it. */
int uih_store_schema_add(uih_store *s, const char *json, size_t len, const char *origin,
                         const uih_schema **out, uih_error *err);
uint32_t uih_store_shards(const uih_store *s);
/* 1 when the store opened shard `shard` (every shard, unless it was opened
 * for one), else 0. */
int uih_store_has_shard(const uih_store *s, uint32_t shard);
const char *uih_store_dir(const uih_store *s);
/* The store's id (its UIHSTORE descriptor's, random at init; 0 for a store
 * made before ids): snapshot records carry its low 32 bits, and a record
 * logged against another store is refused by uih_materialize. */
uint64_t uih_store_id(const uih_store *s);
/* What opening shard `shard` recovered from, in words: the torn tails of
 * write-ahead logs its databases dropped (a process or a machine stopped
 * in the middle of writing a record: what that record held is gone), each
 * log named with the bytes and the offset; also in the database's LOG
 * (for a writable open). "" when nothing, and for a shard not opened.
 * Valid until close. Damage other than a torn tail fails the open. */
const char *uih_store_recovered(const uih_store *s, uint32_t shard);

/* A serving store: opens every shard's database again now and serves its
 * current generation, in this call, whatever the .published hints say
 * (its follower reads them every follow_ms): reads that begin after it
 * returns read that generation. For
 * a serving process told of publishes some other way, or with follow_ms 0.
 * Other roles: nothing to do. An error leaves the shard serving what it
 * served. */
int uih_store_refresh(uih_store *s, uih_error *err);

/* What a serving store's follower last met: *generation the shard's
 * generation it serves, and UIH_OK, or the error of its last attempt to
 * follow a publish (in *err; it tries again at the next one). */
int uih_store_following(uih_store *s, uint32_t shard, uint32_t *generation, uih_error *err);

/* The write-through cache of a store that owns its mutable tiers, summed
 * over its shards: snapshots whose mutable part it served (hits) or read
 * from RocksDB and kept (misses), the (user, group) histories it holds and
 * their bytes, and its capacity. A snapshot of a cached user reads its
 * mutable part without RocksDB; appends are written through to it. Zeros
 * for other stores. */
typedef struct uih_cache_stats {
  uint64_t hits, misses, entries, bytes, capacity;
} uih_cache_stats;
int uih_store_cache_stats(uih_store *s, uih_cache_stats *out, uih_error *err);

/* Shard `shard`'s mutable tier, in *out: appends, reads, its watermark. It
 * belongs to the store (do not close it); valid until uih_store_close. A
 * shard the store did not open is an error naming it (*out NULL). */
int uih_store_mutable(uih_store *s, uint32_t shard, uih_mutable **out, uih_error *err);

/* The shard's live generations, oldest first, into out[0..cap) (*n gets
 * how many there are, which may exceed cap), and its current one in
 * *current (0: none yet). */
int uih_store_generations(uih_store *s, uint32_t shard, uih_generation *out, size_t cap, size_t *n,
                          uint32_t *current, uih_error *err);

/* Whether another open of the store, read-only, in this process or any
 * other, holds the shard's generation (*pinned 1). A read-only store holds
 * every generation it opened with until it closes (or its process dies):
 * a load's retirement skips those, and retires them at a later publish,
 * once let go. Nothing is written for it: the pins are byte-range locks
 * on the store's UIHSTORE file. */
int uih_store_pinned(uih_store *s, uint32_t shard, uint32_t generation, int *pinned, uih_error *err);

/* How a generation lies in files (0: the current one). A load writes a
 * generation whole (one layer), or as a layer of the stripes it changed
 * above the files of the generation before it, shared, never rewritten
 * (uih_store_writer_layer): reads merge the layers. */
typedef struct uih_generation_layout {
  uint32_t layers;       /* 0 when the shard has no generation */
  uint32_t files;        /* table files */
  uint64_t bytes;        /* of every file */
  uint64_t oldest_bytes; /* of the oldest layer's: what the last load that wrote it whole wrote */
} uih_generation_layout;
int uih_store_generation_layout(uih_store *s, uint32_t shard, uint32_t generation, uih_generation_layout *out,
                                uih_error *err);

/* Bytes on disk of the shard's current generation's files, and of its
 * mutable tier's. */
int uih_store_sizes(uih_store *s, uint32_t shard, uint64_t *immutable_bytes, uint64_t *mutable_bytes,
                    uih_error *err);

/* ---- reading -------------------------------------------------------------- */

enum {
  UIH_TIER_IMMUTABLE = 1, /* the generation's events */
  UIH_TIER_MUTABLE = 2,   /* the mutable tier's events */
  UIH_TIER_ALL = 3,       /* the generation's events below the watermark, then the
                             mutable tier's at or above it */
};

/* Reads the events of (user_id, group) with from <= ts <= to from `tier`,
 * in time order, into *batch, as uih_mutable_read does (a batch of the
 * group keeps its trait selection; UIH_TRAIT_ARRIVAL may be one of its
 * columns, absent for mutable events; NULL *batch: every active trait).
 * `generation` 0 reads the current one, else that live generation.
 * More than UIH_BATCH_EVENTS_MAX events in the window is
 * UIH_ERR_OUT_OF_RANGE: narrow it. */
int uih_store_read(uih_store *s, uint64_t user_id, uint16_t group, int64_t from, int64_t to,
                   unsigned tier, uint32_t generation, uih_batch **batch, uih_error *err);

/* ---- scrubbing ------------------------------------------------------------ */

/* One thing a scrub read: a file, a shard's folder of write-ahead logs, a
 * database as a whole, its metadata, a generation, a mutable tier. */
typedef struct uih_verify_item {
  const char *path;      /* relative to the store: "UIHSTORE", "shard-0000/000012.sst", "mutable-0001" */
  const char *kind;      /* "descriptor", "hint", "write-ahead logs", "database", "generation table",
                            "metadata table", "mutable table", "metadata", "generation", "mutable tier" */
  uint32_t shard;        /* UINT32_MAX: the store's own (the descriptor) */
  uint32_t generation;   /* a generation table's, or a generation's (0: none or not known) */
  uint64_t entries;      /* what was read whole: stripes, records, event lists, logs */
  uint64_t bytes;        /* on disk */
  int has_users;         /* 1: it holds users first_user..last_user (a table's keys, a tier's lists) */
  uint64_t first_user, last_user;
  const char *damage;    /* NULL: verified; else what is wrong, naming where (offset, key) */
  int counts;            /* 0: a file the database no longer uses (damage there loses nothing) */
  const char *note;      /* NULL, or what else is worth knowing (a torn log tail recovered at open; a
                            table file linked into a layered generation, read once under its first name) */
} uih_verify_item;

/* `item` and its strings are valid during the call only. */
typedef void (*uih_verify_fn)(void *arg, const uih_verify_item *item);

typedef struct uih_verify_totals {
  uint64_t items, damaged;         /* items reported, and those damaged (that count; a file linked
                                      into several generations once) */
  uint64_t stripes, records, lists; /* stripes read (each decoded where its shard opened; a linked file's
                                      once), metadata records parsed, event lists read */
  uint64_t bytes;
} uih_verify_totals;

/* Scrubs the store at `dir` (the one to run after a disk incident):
 * opens each shard read-only as every reader does, then reads everything
 * it holds — every table file of each shard and of its mutable tier, each
 * block or value checksum verified; every stripe of a live generation
 * decoded whole under its schema version, checked against its key, and
 * each generation's stripes and events counted against its record; every
 * metadata record parsed; the mutable tier read whole through its
 * database, every event list validated — and calls `fn` (may be NULL)
 * with each item, in order, damaged or not. Nothing is written. UIH_OK
 * when nothing is damaged; UIH_ERR_CORRUPTION counting the damaged items
 * and naming the first; UIH_ERR_NOT_FOUND when `dir` is no store.
 * *totals (may be NULL) is filled either way. */
int uih_store_verify(const char *dir, uih_verify_fn fn, void *arg, uih_verify_totals *totals, uih_error *err);

/* Accepts a named loss, so that a store an open refuses opens again (every
 * shard, or `shard` alone with `one_shard`): a write-ahead log that does
 * not replay whole or is missing, one that lost acknowledged appends
 * (uih/mutable.h: the acknowledged mark), a damaged mark, a damaged
 * .published hint, a hint naming a publish the database lost. The
 * refused files are copied to DIR/lost/<time>-<folder>/ and synced
 * first, and the loss is appended to DIR/REPAIRS before anything changes;
 * a mutable tier is reopened on its logs replayed past damage (RocksDB
 * skips a damaged record and the rest of its 32 KB block, and says how
 * many bytes: that goes into the record), a shard's database on its logs
 * up to the first damage, a hint naming a lost publish written again
 * from the database (the load that published the lost generation is to
 * be run again); each line of DIR/REPAIRS also goes to `fn` (may be NULL).
 * Nothing else is repaired: damaged table files, MANIFESTs or the
 * descriptor fail with UIH_ERR_CORRUPTION naming them (restore the folder,
 * or load the shard again; uih_store_verify says what they hold). No other
 * process may have the store open (it takes each database's LOCK). UIH_OK:
 * every shard repaired opens. */
typedef void (*uih_repair_fn)(void *arg, const char *line); /* `line` valid during the call only */
int uih_store_repair(const char *dir, int one_shard, uint32_t shard, uih_repair_fn fn, void *arg, uih_error *err);

/* ---- what the loader uses ------------------------------------------------- */

/* Every (key, stripe) of a shard's live generation (0: the current one; none
 * yet: an empty scan), in key order. Each pair is valid until the next
 * call; *key NULL at the end. The generation stays readable until close. */
typedef struct uih_store_scan uih_store_scan;
int uih_store_scan_open(uih_store *s, uint32_t shard, uint32_t generation, uih_store_scan **out,
                        uih_error *err);
int uih_store_scan_next(uih_store_scan *sc, const uint8_t **key, size_t *key_len, const uint8_t **value,
                        size_t *value_len, uih_error *err);
/* Moves the scan to its first pair at or after `target` (a key, or a
 * prefix of one) and gives it, as uih_store_scan_next does; the next call
 * to uih_store_scan_next goes on from there. */
int uih_store_scan_seek(uih_store_scan *sc, const uint8_t *target, size_t target_len, const uint8_t **key,
                        size_t *key_len, const uint8_t **value, size_t *value_len, uih_error *err);
/* The scanned generation's value dictionaries (uih/stripe.h), as
 * uih_stripe_context_serialize writes them (empty: none): parsed into a
 * context, what decodes its stripes' shared columns. Valid until close. */
int uih_store_scan_dicts(uih_store_scan *sc, const uint8_t **bytes, size_t *len, uih_error *err);
void uih_store_scan_close(uih_store_scan *sc); /* NULL is fine */

/* Builds the shard's next generation (the current one + 1): add the
 * (key, stripe) pairs in strictly ascending key order, then publish, or
 * abort. At most one writer per shard at a time: a second one fails with
 * UIH_ERR_INVALID_ARGUMENT naming the shard. A read-only store has none
 * (UIH_ERR_NOT_SUPPORTED). */
typedef struct uih_store_writer uih_store_writer;
int uih_store_writer_open(uih_store *s, uint32_t shard, uih_store_writer **out, uih_error *err);
/* The generation the writer builds. */
uint32_t uih_store_writer_generation(const uih_store_writer *w);
int uih_store_writer_add(uih_store_writer *w, const uint8_t *key, size_t key_len, const uint8_t *value,
                         size_t value_len, uih_error *err);
/* Makes the generation the writer builds a layer above the shard's
 * current one (call it before the first add): the current generation's
 * files are shared — linked into the new generation as its publish
 * ingests them, layer by layer, never rewritten — and the writer holds
 * only what changed: stripes new or written again (added), and the keys
 * of stored stripes the generation no longer holds (deleted). Reads see
 * the layers merged, the newest layer's stripe for a key winning. What
 * the layers below hold stays on disk until a load writes the shard whole
 * again: a load that erases users or scrubs items must not layer.
 * UIH_ERR_INVALID_ARGUMENT when the shard has no generation yet, when its
 * generation has 6 layers already (the most), or when the writer has
 * added something. The shard's format becomes 4 when the first
 * layered generation is published (older builds refuse it, naming it). */
int uih_store_writer_layer(uih_store_writer *w, uih_error *err);
/* A stored stripe's key the layered generation no longer holds, in the
 * writer's strictly ascending key order with its adds. */
int uih_store_writer_delete(uih_store_writer *w, const uint8_t *key, size_t key_len, uih_error *err);
/* Ends the table file being written (its bytes synced), so that a full
 * disk or an I/O error shows here, before any publish; an add after it
 * starts a new file. Publishing finishes the last file too. */
int uih_store_writer_finish(uih_store_writer *w, uih_error *err);
/* The value dictionaries of the generation being built (every one its
 * stripes name: those of the generation it builds on too when it copies
 * stripes naming them), a uih_stripe_context_serialize value, checked
 * when it is published (before anything is written), stored with its
 * record and given to every decoder of its stripes. */
int uih_store_writer_set_dicts(uih_store_writer *w, const uint8_t *bytes, size_t len, uih_error *err);
/* Erases `user_id` (right to delete): the publish records the erasure,
 * the generation holds none of their events, and no read or snapshot of
 * it shows their mutable events; the mutable tier's owner deletes every
 * one of them when it applies the generation — a serving store within
 * follow_ms of the publish, or at its next open — so events the user
 * appends in between go too. */
int uih_store_writer_erase_user(uih_store_writer *w, uint64_t user_id, uih_error *err);
/* Publishes the generation with the record `g` (its generation, parent
 * and shard are filled in here; g->schema_version a version the store
 * knows, not older than the shard's, stored with it when newer), writes
 * the shard's .published hint, applies the generation to the mutable tier
 * when this store owns it (role ALL), retires the generations beyond
 * `keep`, and frees the writer, whatever the outcome. On an error the previous generation is
 * still current and the message says so. */
int uih_store_writer_publish(uih_store_writer *w, uih_generation *g, uih_error *err);
/* Drops what the writer wrote and frees it. NULL is fine. */
void uih_store_writer_abort(uih_store_writer *w);

/* The store's folder for temporary files (DIR/tmp), created on demand. */
const char *uih_store_tmpdir(const uih_store *s);

#ifdef __cplusplus
}
#endif
#endif /* UIH_STORE_H */
