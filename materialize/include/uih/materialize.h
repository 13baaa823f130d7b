/* uihstore — training-time reconstruction: snapshot records in, exactly the
 * sequences the model saw out, projected to what a training job wants.
 *
 * For each record and projected group: the events of the user's shard's
 * current generation with start_ts <= ts <= end_ts and arrival generation
 * at most the record's, the newest `length` of them (the immutable part),
 * followed by the mutable events the record carries; of that, the newest
 * max_length events, with the projection's traits. The immutable part is
 * verified against the record's identity checksums at the smallest
 * checkpoint that covers what the projection reads (uih/snapshot.h), so a
 * short projection reads only the stripes holding its last events, and
 * verification reads only timestamps and id traits beyond what is asked.
 * A record whose part does not verify (events scrubbed or expired, a bug)
 * is a mismatch, handled by the projection's policy; never a silent
 * difference. So is one whose mutable events do not decode. A record of a
 * user erased since it was logged (uih/loader.h's deletions; the store
 * keeps who its loads erased, and when) is a mismatch under every
 * projection, even one the events the record carries would serve alone,
 * and comes back empty under skip and flag alike: nothing of an erased
 * user is rebuilt, not even the events logged with the record. A record
 * is placed before or after the erasure by the generation it names (the
 * shard's current one at the request); records of format versions 1 and
 * 2, which name none, by their groups' generation, or when no group has
 * an immutable part by their request time (before the erasing load's
 * through). A store knows the erasures published before it opened and
 * those of its own loads (a read-only store, like its generations, only
 * the former: reopen it after a load that erases).
 *
 * A schema change that drops an id-typed trait makes the records of its
 * group logged before it unverifiable (the loader rewrites the stripes
 * without the trait, and identities include it): they are mismatches
 * whose reason says so.
 *
 * Records of the same user in a batch are served together: one read of the
 * user's stripes and one decode of the union of their windows (data
 * affinity). The batch's reads are planned from the indexes first, then
 * the newest stripes every user's records need are read at once (one
 * io_uring submission through uih/io.h; pread where io_uring is not
 * there), straight from the generation's files; older ones, when a
 * record needs more, after. Output, per projected group: per trait one array of values for
 * the whole batch, and per record the rows [offset, offset + length) of it
 * that are its sequence, in time order. Two layouts (uih_projection.layout):
 *
 *   shared (the default): a user's records are windows into rows written
 *   once for them: RecD's partial inverse keyed jagged tensor. Windows may
 *   overlap; a record that is not a window of the rows already written
 *   gets rows of its own. Each record's window is bit-exact its sequence
 *   in the projected traits; `rows` is what was written.
 *
 *     values  [ e1 e2 e3 e4 e5 m1 m2 ]      records of one user, in
 *     r0        [e2 ......... e5]           time order, sharing rows
 *     r1           [e3 ............ m2]
 *
 *   jagged: every record's rows on their own, in record order, so that
 *   offsets[i + 1] = offsets[i] + lengths[i]: values and lengths as
 *   torchrec's KeyedJaggedTensor takes them.
 *
 * Implemented and installed with libuih_rocksdb. No C++ exception leaves
 * these functions.
 */
#ifndef UIH_MATERIALIZE_H
#define UIH_MATERIALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"
#include "uih/snapshot.h"
#include "uih/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inference snapshots (uih/snapshot.h) --------------------------------- */

/* What a model reads per feature group: up to max_length events (1..
 * UIH_SNAPSHOT_LENGTH_MAX), the newest ones. */
typedef struct uih_snapshot_spec_group {
  uint16_t group;
  uint32_t max_length;
} uih_snapshot_spec_group;

typedef struct uih_snapshot_spec {
  uint32_t ngroups; /* 1..UIH_SNAPSHOT_GROUPS_MAX, ids distinct */
  uih_snapshot_spec_group groups[UIH_SNAPSHOT_GROUPS_MAX];
} uih_snapshot_spec;

/* Takes snapshots for one thread at a time: it holds every buffer a
 * snapshot needs, so once they have grown to the largest sequences seen a
 * call allocates nothing of its own (RocksDB's reads of the mutable tier
 * still do, as any Get). Use one per serving thread; the store is shared. */
typedef struct uih_snapshotter uih_snapshotter;
int uih_snapshotter_create(uih_store *s, uih_snapshotter **out, uih_error *err);
void uih_snapshotter_free(uih_snapshotter *sn); /* NULL is fine */

/* The sequences a model gets for `user_id` at `request_ts`, and the record
 * to log. Per spec group: the newest max_length events among the immutable
 * tier's below the watermark (the shard's current generation) and the
 * mutable tier's from the watermark up to request_ts, in time order, with
 * every active trait of the store's schema; sequences[i] is spec group i's
 * (count 0 when the user has none). The record (uih/snapshot.h) names the
 * immutable part by generation and window, with identity checksums, and
 * carries the mutable events. Both stay valid until the snapshotter's next
 * call. */
int uih_snapshot(uih_snapshotter *sn, uint64_t user_id, int64_t request_ts, const uih_snapshot_spec *spec,
                 const uih_batch *const **sequences, const uint8_t **record, size_t *record_len, uih_error *err);

/* ---- training rebuilds ------------------------------------------------------- */

#define UIH_PROJECTION_TRAITS_MAX 64

typedef enum uih_mismatch_policy {
  UIH_MISMATCH_FAIL = 0, /* the batch fails with UIH_ERR_CORRUPTION naming the first such record, in
                            the caller's order */
  UIH_MISMATCH_SKIP = 1, /* the record's sequences come back empty, flagged */
  UIH_MISMATCH_FLAG = 2  /* the record's sequences come back as rebuilt, flagged */
} uih_mismatch_policy;

typedef struct uih_projection_group {
  uint16_t group;
  uint32_t max_length; /* newest events per record, 1..UIH_SNAPSHOT_LENGTH_MAX */
  uint32_t ntraits;    /* 0: every active trait of the store's schema */
  uint16_t traits[UIH_PROJECTION_TRAITS_MAX]; /* trait ids; UIH_TRAIT_ARRIVAL allowed */
} uih_projection_group;

typedef enum uih_mat_layout {
  UIH_LAYOUT_SHARED = 0, /* records as windows into rows shared by a user's records (above) */
  UIH_LAYOUT_JAGGED = 1  /* each record's rows on their own, records back to back */
} uih_mat_layout;

typedef struct uih_projection {
  uint32_t ngroups; /* 1..UIH_SNAPSHOT_GROUPS_MAX, ids distinct */
  uih_projection_group groups[UIH_SNAPSHOT_GROUPS_MAX];
  uih_mismatch_policy on_mismatch;
  uih_mat_layout layout;
} uih_projection;

/* One projected trait of one group for the whole batch. */
typedef struct uih_mat_column {
  uint16_t trait;
  int type;               /* uih_type */
  const void *values;     /* rows * uih_type_width(type) bytes; absent values are 0 */
  const uint8_t *present; /* rows bytes: 1 where the event has a value */
} uih_mat_column;

typedef struct uih_mat_group {
  uint16_t group;
  uint64_t rows;                 /* rows of each column */
  uint32_t ncolumns;
  const uih_mat_column *columns; /* in the projection's trait order */
  const uint64_t *offsets;       /* per record: its first row */
  const uint32_t *lengths;       /* per record: its events (rows from its offset) */
} uih_mat_group;

/* Per record, bits: */
enum {
  UIH_RECORD_MISMATCH = 1 << 0,   /* its immutable part did not verify (group bits below say where) */
  UIH_RECORD_NO_GROUP = 1 << 1,   /* a projected group is not in the record: empty there */
  UIH_RECORD_UNREADABLE = 1 << 2, /* the record itself did not decode: empty everywhere */
  UIH_RECORD_OTHER_STORE = 1 << 3, /* logged against another store (uih_store_id): empty everywhere,
                                      counted with the mismatches */
  UIH_RECORD_ERASED = 1 << 4,      /* its user was erased since it was logged: empty everywhere, with
                                      UIH_RECORD_MISMATCH */
};

typedef struct uih_materialize_stats {
  uint64_t records, users, mismatches, unreadable;
  uint64_t events;        /* events in the records' sequences, all groups */
  uint64_t rows;          /* rows written for them (fewer when the layout shares them) */
  uint64_t stripes_read;  /* stripes decoded */
  uint64_t bytes_read;    /* stripe bytes read from the generation's files */
  uint64_t reads;         /* reads of those files: a run of adjacent stripes each */
  uint64_t reads_batched; /* of them, submitted together, the batch's first ones */
} uih_materialize_stats;

typedef struct uih_materialized uih_materialized;

/* Rebuilds the `n` records (records[i] of lens[i] bytes, e.g. as logged by
 * uih_snapshot) for `projection`. On success *out owns every array
 * (uih_materialized_free). A record that does not decode is
 * UIH_ERR_CORRUPTION under UIH_MISMATCH_FAIL, else flagged unreadable; one
 * logged against another store (its store field is neither 0 nor this
 * store's) is UIH_ERR_CORRUPTION under fail, else flagged other-store. */
int uih_materialize(uih_store *s, const uint8_t *const *records, const size_t *lens, size_t n,
                    const uih_projection *projection, uih_materialized **out, uih_materialize_stats *stats,
                    uih_error *err);

/* ---- a materializer: batches rebuilt by worker threads, in order ---------- */

/* A training job's feeder: it owns `threads` workers, each rebuilding whole
 * batches (as uih_materialize, for one projection); callers submit batches
 * and take their results in submission order. While the caller works on
 * batch k, the workers are already reading and decoding the batches after
 * it: those among the `depth` oldest not yet taken. One caller thread at a
 * time; the store is shared. */
typedef struct uih_materializer uih_materializer;

typedef struct uih_materializer_opts {
  uint32_t threads;    /* workers, 1..64 (0: 1) */
  uint32_t depth;      /* the oldest pending batches the workers may start, at most (0: threads + 1;
                          1: no batch is rebuilt ahead of the one the caller waits for) */
  int each_record;     /* 1: no data affinity, each record read and decoded on its own
                          (what affinity saves, measured) */
  int no_batch_reads;  /* 1: each user's reads made on their own, not as one batch (what batching
                          saves, measured) */
} uih_materializer_opts;

#define UIH_MATERIALIZER_OPTS_DEFAULT {1, 0, 0, 0}

int uih_materializer_create(uih_store *s, const uih_projection *projection, const uih_materializer_opts *opts,
                            uih_materializer **out, uih_error *err);
/* Queues a batch of `n` records (copied: the caller's buffers are free on
 * return). Never waits: memory grows with what the caller submits. */
int uih_materializer_submit(uih_materializer *m, const uint8_t *const *records, const size_t *lens, size_t n,
                            uih_error *err);
/* The oldest pending batch's result, waiting for it: *out and *stats as
 * uih_materialize gives them, or its error (the next call gives the next
 * batch). UIH_ERR_NOT_FOUND when nothing is pending. */
int uih_materializer_next(uih_materializer *m, uih_materialized **out, uih_materialize_stats *stats, uih_error *err);
/* Pending batches are dropped; waits for the workers to stop. NULL is fine. */
void uih_materializer_free(uih_materializer *m);

/* ---- results ---------------------------------------------------------------- */

size_t uih_materialized_records(const uih_materialized *m);
/* Projected group i (the projection's order). */
const uih_mat_group *uih_materialized_group(const uih_materialized *m, uint32_t i);
/* Per record: UIH_RECORD_* bits. */
const uint8_t *uih_materialized_flags(const uih_materialized *m);
/* Why record i is flagged, in words naming the group and what failed (its
 * stripes in the store damaged, its identities different, its user
 * erased, ...); "" for a record not flagged. Valid while m is. */
const char *uih_materialized_why(const uih_materialized *m, size_t i);
void uih_materialized_free(uih_materialized *m); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif /* UIH_MATERIALIZE_H */
