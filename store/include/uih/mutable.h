/* uihstore — the mutable tier: recent events, appended blind.
 *
 * A mutable store is a RocksDB database whose column family "uih.mutable"
 * holds a user's events in one feature group in chunks of time: the events
 * with ts in [k * span, (k + 1) * span) are one value, an event list
 * (uih/events.h), under the 18-byte key of uih/key.h (user, group, k * span)
 * (uih_key_chunk_start). So a read of a user's newest events reads the
 * newest chunks only, however many events the user has today, and a hot
 * key's merges stay the size of a chunk. The span is the store's, fixed when
 * it is created (opts.chunk_span) and kept in it; stores made before chunks
 * keep one value per (user, group) under the 10-byte uih_key_group_prefix()
 * key, and are read and written that way (span 0). Appends are RocksDB
 * Merge()s with the UihAppend merge operator — no read on the write path —
 * and the UihRetention compaction filter drops, during compactions, the
 * events below the store's watermark: the time before which the latest
 * published daily generation of the immutable tier covers everything.
 *
 * Defaults (each can be overridden with `cf_options`): BlockBasedTable with
 * a 10-bit bloom filter on the whole key, a fixed 10-byte (user, group)
 * prefix extractor with a memtable prefix bloom, LZ4 (ZSTD at the
 * bottommost level), and
 * max_successive_merges = 64 so a hot key's operand chain in a memtable is
 * collapsed before reads of it get slow.
 *
 * Durability. An append returns (is acknowledged) once its write is in
 * RocksDB's write-ahead log, written to the operating system: it survives
 * the process's death; with UIH_APPEND_SYNC the log is synced first and it
 * survives the machine's too. Every open replays the logs whole or fails
 * naming the log and the offset (only a record torn at the very end, a
 * write its process died in and never acknowledged, is dropped, and said),
 * and checks the acknowledged mark (a file UIH-ACKED beside the database:
 * the last acknowledged and the last synced sequence number, the machine's
 * boot id): a database holding less than was synced, or, in the same boot,
 * less than was acknowledged — a log deleted, cut or zeroed after its
 * process died — fails the open; after a machine restart, the unsynced
 * appends that did not reach the disk are said (uih_store_recovered).
 * uih_store_repair (uih/store.h; `uih repair`) accepts such a loss,
 * recording it.
 *
 * Implemented and installed with libuih_rocksdb, the RocksDB glue (pkg-config
 * uih_rocksdb, CMake uihstore::uih_rocksdb), which uses libuihstore's types.
 * No C++ exception leaves these functions. A store is safe to use from any
 * number of threads.
 */
#ifndef UIH_MUTABLE_H
#define UIH_MUTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "uih/batch.h"
#include "uih/error.h"
#include "uih/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_MUTABLE_CF "uih.mutable"

typedef struct uih_mutable_opts {
  int create_if_missing;          /* create the database when absent (default 1) */
  uint32_t max_events;            /* UihAppend: keep the newest N per key (a chunk); 0: all */
  int64_t max_age;                /* UihAppend: keep ts >= newest - max_age per key; 0: all */
  uint32_t max_successive_merges; /* RocksDB's option (default 64; 0: off) */
  size_t block_cache_bytes;       /* LRU block cache (default 64 MiB) */
  const char *db_options;         /* RocksDB DBOptions "k=v;..." applied last, or NULL */
  const char *cf_options;         /* ColumnFamilyOptions of uih.mutable, applied last */
  int read_only;                  /* open for reading only: nothing at `path` is written or
                                     created (no LOG file either); appends, the watermark,
                                     flush and compact fail with UIH_ERR_NOT_SUPPORTED */
  int64_t chunk_span;             /* a new store's chunk, in time units (> 0; default
                                     UIH_CHUNK_SPAN_DEFAULT); an existing store keeps its own */
} uih_mutable_opts;

/* An hour when timestamps are milliseconds, as `uih gen` writes them (3600
 * suits seconds): a heavy user's chunk holds a hundred or so events, a
 * light user's day a handful of chunks. */
#define UIH_CHUNK_SPAN_DEFAULT 3600000
#define UIH_MUTABLE_OPTS_DEFAULT {1, 0, 0, 64, (size_t)64 << 20, NULL, NULL, 0, UIH_CHUNK_SPAN_DEFAULT}

typedef struct uih_mutable uih_mutable;

/* Opens the store at `path`, or creates one there when nothing is (with
 * create_if_missing, not read_only). `schema` gives the groups appends and
 * reads use; it must outlive the store. `opts` NULL means the defaults.
 * Other column families in the database are opened with default options
 * and left alone. A path that holds no store — missing, not a directory, no
 * RocksDB database, or a RocksDB database without column family
 * uih.mutable — fails with UIH_ERR_NOT_FOUND ("not a uihstore store: PATH:
 * why") and is left as it was. */
int uih_mutable_open(const char *path, const uih_schema *schema, const uih_mutable_opts *opts,
                     uih_mutable **out, uih_error *err);

/* Closes the store; writes not yet flushed are safe in the WAL. NULL is
 * fine. */
void uih_mutable_close(uih_mutable *m);

enum {
  UIH_APPEND_SYNC = 1 << 0, /* fsync the WAL before returning: the append survives a power loss */
};

/* Appends the events of `events` (a batch of one of the schema's groups;
 * every event with its timestamp) to `user_id`'s history in that group. One
 * Merge per chunk the events fall in, no read. Appending the same events
 * again changes nothing. */
int uih_mutable_append(uih_mutable *m, uint64_t user_id, const uih_batch *events, unsigned flags,
                       uih_error *err);

/* Appends n batches, batch i to user_ids[i], atomically (one write batch). */
int uih_mutable_append_many(uih_mutable *m, const uint64_t *user_ids,
                            const uih_batch *const *events, size_t n, unsigned flags,
                            uih_error *err);

/* Reads the events of (user_id, group) with min_ts <= ts <= max_ts, in time
 * order, into *batch. A batch passed in of that group keeps its trait
 * selection (the projection) and is reused when large enough, else it is
 * replaced by one that is (free it with uih_batch_free); a NULL *batch gets
 * all active traits. No events: count 0. A key whose stored value is
 * corrupt or quarantined gives UIH_ERR_CORRUPTION naming it. More than
 * UIH_BATCH_EVENTS_MAX events in the range is UIH_ERR_OUT_OF_RANGE. */
int uih_mutable_read(uih_mutable *m, uint64_t user_id, uint16_t group, int64_t min_ts,
                     int64_t max_ts, uih_batch **batch, uih_error *err);

/* The store's chunk span; 0 for a store made before chunks (one key per
 * user and group). */
int64_t uih_mutable_chunk_span(const uih_mutable *m);

/* Advances the watermark: events with ts < watermark may be dropped by the
 * next compactions of any key. Written durably (synced) before it takes
 * effect; it may only grow (UIH_ERR_INVALID_ARGUMENT otherwise). */
int uih_mutable_set_watermark(uih_mutable *m, int64_t watermark, uih_error *err);

/* The current watermark; *has = 0 when none was ever set (nothing is
 * dropped then). */
int uih_mutable_watermark(uih_mutable *m, int64_t *watermark, int *has, uih_error *err);

/* Flushes the memtable, and compacts the whole key range (so retention runs
 * now): for tools and tests; RocksDB does both on its own. */
int uih_mutable_flush(uih_mutable *m, uih_error *err);
int uih_mutable_compact(uih_mutable *m, uih_error *err);

#ifdef __cplusplus
}
#endif
#endif /* UIH_MUTABLE_H */
