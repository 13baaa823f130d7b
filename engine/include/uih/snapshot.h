/* uihstore — snapshot records: what an inference service logs per example
 * so that training can rebuild, exactly, the sequences its model saw.
 *
 * Per feature group the model read, a sequence is the newest events of
 * the immutable tier below the watermark (the "immutable part") followed by
 * the mutable tier's events from the watermark up to the request (logged
 * whole). The record names the immutable part by its window instead of
 * copying it: training takes the events with start_ts <= ts <= end_ts whose
 * arrival generation is at most `generation`, newest `length` of them.
 *
 * Identity checksums: an event's identity is its timestamp and the values
 * of its group's id-typed traits (absent ones as absent), in trait id
 * order; identities are chained from the newest event of the immutable part
 * to the oldest, h(k) = XXH3-64(identity of event k, seed h(k-1)), h(0) = 0.
 * The record keeps the low 32 bits of h at up to four checkpoints — the
 * whole part (length), then length / 4, / 16, / 64 while at least
 * UIH_SNAPSHOT_CHECK_MIN — so a projection to the newest N events reads
 * and verifies only the newest c events, c the smallest checkpoint >= N
 * (or the mutable events alone when they are N or more), and verifying
 * costs the timestamp and id columns whatever traits the projection wants.
 *
 * Binary form, version 3 (varints are LEB128; zigzag varints map signed
 * values to unsigned ones, 0 -1 1 -2 ... to 0 1 2 3 ...):
 *
 *   field                      encoding
 *   -------------------------- ---------------------------------------------
 *   version                    u8, 3 (2: without the generation field;
 *                              1: without the store field too)
 *   store                      u32 little-endian: the low 32 bits of the
 *                              id of the store it was logged against
 *                              (uih_store_id; 0: not known)
 *   user id                    varint
 *   request ts                 zigzag varint
 *   schema version             varint: the version whose traits the
 *                              identities and the mutable events use
 *   generation                 varint: the current generation of the
 *                              user's shard at the request (0: it had
 *                              none), which every group's immutable part
 *                              is of: what places the record before or
 *                              after a load (an erasure) even when no
 *                              group has an immutable part
 *   group count g              u8, 1..UIH_SNAPSHOT_GROUPS_MAX
 *   g groups, ids ascending:
 *     group id                 varint (0..65535)
 *     length                   varint: events in the immutable part
 *     when length > 0:
 *       generation             varint (>= 1): the shard's current
 *                              generation at the request
 *       request ts - end ts    varint (end_ts <= request ts)
 *       end ts - start ts      varint
 *       checksums              u32 little-endian each, one per checkpoint
 *                              (uih_snapshot_checkpoints(length))
 *     mutable bytes m          varint (0: no mutable events)
 *     mutable events           m bytes: stripes (uih/stripe.h) of the
 *                              group's traits in the schema version above,
 *                              oldest events first, each a varint length
 *                              and its bytes (a stripe holds at most the
 *                              group's stripe_events)
 *   record checksum            u32 little-endian: low 32 bits of XXH3-64
 *                              of every byte before it
 *
 * A group with an immutable part of 256 events costs 12-16 bytes besides
 * its checksums (4-16 bytes) and its mutable events; a record 9 bytes
 * (version, store, record checksum) and its user, request and schema.
 */
#ifndef UIH_SNAPSHOT_H
#define UIH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uih/batch.h"
#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_SNAPSHOT_FORMAT 3
#define UIH_SNAPSHOT_GROUPS_MAX 32
#define UIH_SNAPSHOT_CHECKS_MAX 4
#define UIH_SNAPSHOT_CHECK_MIN 16
/* The longest sequence a snapshot serves or a rebuild projects per group:
 * 2^20 events ("ultra-long" models read 10^5 and more). A snapshot's cost
 * grows linearly with it (bench/README.md, long_bench); the record keeps
 * the immutable part's length as a varint, whatever it is. */
#define UIH_SNAPSHOT_LENGTH_MAX UIH_BATCH_EVENTS_MAX

typedef struct uih_snapshot_group {
  uint16_t group;
  uint32_t length;     /* immutable events; 0: none (the fields below it are 0) */
  uint32_t generation; /* with length > 0: >= 1 */
  int64_t start_ts, end_ts;
  uint32_t check[UIH_SNAPSHOT_CHECKS_MAX]; /* at uih_snapshot_checkpoints(length) */
  const uint8_t *mutable_events;          /* length-prefixed stripes, or NULL */
  size_t mutable_len;
} uih_snapshot_group;

typedef struct uih_snapshot_record {
  uint32_t store; /* the low 32 bits of its store's id; 0: not known (and in version 1 records) */
  uint64_t user_id;
  int64_t request_ts;
  uint32_t schema_version;
  uint32_t ngroups;
  uih_snapshot_group groups[UIH_SNAPSHOT_GROUPS_MAX];
  uint32_t version;    /* the format it was decoded from (encoding writes UIH_SNAPSHOT_FORMAT) */
  uint32_t generation; /* the shard's current generation at the request (0: none, and in records
                          before version 3); every group with length > 0 has it */
} uih_snapshot_record;

/* The checkpoints of an immutable part of `length` events, largest first:
 * length, then length / 4 while at least UIH_SNAPSHOT_CHECK_MIN, at most
 * UIH_SNAPSHOT_CHECKS_MAX of them; returns how many (0 for length 0). */
uint32_t uih_snapshot_checkpoints(uint32_t length, uint32_t out[UIH_SNAPSHOT_CHECKS_MAX]);

/* The smallest checkpoint of `length` that covers the newest `n` events
 * (length itself when n > length). */
uint32_t uih_snapshot_checkpoint_for(uint32_t length, uint32_t n);

/* The group's mutable stripes one by one: start with *at = 0; returns 1
 * with the next stripe in *stripe, *len, 0 after the last. The framing of
 * a decoded record is checked, so decoded records never fail here; -1 for
 * bytes that are not length-prefixed stripes. */
int uih_snapshot_mutable_next(const uih_snapshot_group *g, size_t *at, const uint8_t **stripe, size_t *len);

/* Appends one stripe to a mutable blob being built in out[0..cap) at
 * *at; returns the bytes it takes (written only when they fit). */
size_t uih_snapshot_mutable_put(uint8_t *out, size_t cap, size_t *at, const uint8_t *stripe, size_t len);

/* Bytes the record takes (for a buffer of its size). */
size_t uih_snapshot_record_size(const uih_snapshot_record *r);

/* Encodes `r` into `out` (`cap` bytes); *len = its size. UIH_ERR_OUT_OF_RANGE
 * when `cap` is short (*len still says how much is needed);
 * UIH_ERR_INVALID_ARGUMENT for a record that breaks the rules above. */
int uih_snapshot_record_encode(const uih_snapshot_record *r, uint8_t *out, size_t cap, size_t *len,
                               uih_error *err);

/* Decodes `len` untrusted bytes. The groups' mutable_events point into
 * `buf` (keep it while using them); the stripes themselves are checked
 * when decoded. UIH_ERR_CORRUPTION names the offset and what was expected;
 * UIH_ERR_NOT_SUPPORTED a newer version. Version 1 records decode with
 * store 0, versions 1 and 2 with generation 0. */
int uih_snapshot_record_decode(const uint8_t *buf, size_t len, uih_snapshot_record *out, uih_error *err);

/* The record as one line of text for people (no newline), e.g.
 *   store 1a2b3c4d, user 42 at 1700000000000, schema 1, generation 7: group 1: 256 immutable events
 *   [1699900000000, 1699999999999] of generation 7 (checks 256:1a2b3c4d
 *   64:...), 3 mutable events in 61 bytes
 * Returns the length it needs (snprintf's rule: output cut at `cap`). */
size_t uih_snapshot_record_format(const uih_snapshot_record *r, char *out, size_t cap);

/* ---- logs ------------------------------------------------------------------ */

/* A snapshot log, what `uih snapshot` appends to and `uih materialize`
 * reads: the 8 bytes "UIHSLOG2", then a frame per record:
 *
 *   u32 sync "UIHR" | u32 length | u64 number | u32 header check |
 *   the record (length bytes) | u32 record check
 *
 * little-endian; the header's check covers its length and number, the
 * record's is seeded with the number (engine/snapshot/log_format.h). Records
 * are numbered 0, 1, 2, ... over the log's life, and a record keeps its
 * number whatever happens to the others: a reader that meets damage says
 * which bytes and which numbers it lost, finds the next whole frame and
 * goes on, so a later record is never read under another's number. A log
 * that is closed (rotated) ends with a seal, a frame of length 0 whose
 * number counts the records before it: a sealed log cut short is detected.
 * Logs of format 1 ("UIHSLOG1": a varint length per record, numbered by
 * position) still read; new records go to format-2 logs only. */
#define UIH_SNAPSHOT_LOG_MAGIC "UIHSLOG2"
#define UIH_SNAPSHOT_RECORD_MAX ((size_t)64 << 20)

typedef struct uih_snapshot_log uih_snapshot_log;

/* Reads the log `f` (its magic first; `name` names it in messages). An
 * empty file is an empty log. */
int uih_snapshot_log_open(FILE *f, const char *name, uih_snapshot_log **out, uih_error *err);
/* The next record (*rec NULL after the last), valid until the next call;
 * *offset = the byte where its frame starts; its number is
 * uih_snapshot_log_number(). Damage is UIH_ERR_CORRUPTION naming the bytes
 * and the record numbers it cost (a damaged frame, a span that holds no
 * frame, records missing between two frames, a tail cut inside a frame,
 * bytes after the seal); the reader has then moved past it, so a caller
 * that goes on reads the next whole record. The records themselves are not
 * decoded. */
int uih_snapshot_log_next(uih_snapshot_log *l, const uint8_t **rec, size_t *len, uint64_t *offset, uih_error *err);
uint64_t uih_snapshot_log_number(const uih_snapshot_log *l); /* of the record last returned */
int uih_snapshot_log_sealed(const uih_snapshot_log *l);      /* 1 once the reader met the seal */
int uih_snapshot_log_version(const uih_snapshot_log *l);     /* 1 or 2 */
void uih_snapshot_log_close(uih_snapshot_log *l);            /* NULL is fine; does not close f */

/* A log held in memory whole (`len` bytes from its magic, e.g. a file
 * read or mapped; `name` names it in messages): per record, in log order,
 * the offset of its bytes in `buf` (after its frame's header), its length,
 * and its user id and request time as its header gives them (0 and 0 for a
 * record that does not decode: materializing it says why), into the arrays
 * (each may be NULL) up to `cap` records; *n gets how many the log holds,
 * which may exceed cap. For callers that hand a log's records to the
 * materializer in batches, or partition them by user, without a call per
 * record. Strict: any damage is UIH_ERR_CORRUPTION as uih_snapshot_log_next
 * reports it, so the i-th record indexed is always record number i. */
int uih_snapshot_log_index(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets, uint64_t *lens,
                           uint64_t *users, int64_t *request_ts, size_t cap, size_t *n, uih_error *err);

/* The same index read past damage, as `uih materialize --on-mismatch
 * flag` reads a log: each damaged span said to `on_damage` (the bytes and
 * the record numbers it cost, as uih_snapshot_log_next words it) and
 * stepped over; numbers[i] is the i-th indexed record's own number, so a
 * lost record never shifts a later one's; *sealed (may be NULL) 1 when
 * the walk met the seal. A format-1 log (numbered by position) stays
 * strict. */
typedef void (*uih_log_damage_fn)(void *arg, const char *what);
int uih_snapshot_log_index_past_damage(const uint8_t *buf, size_t len, const char *name, uint64_t *offsets,
                                       uint64_t *lens, uint64_t *numbers, uint64_t *users, int64_t *request_ts,
                                       size_t cap, size_t *n, int *sealed, uih_log_damage_fn on_damage, void *arg,
                                       uih_error *err);

/* Appends record `number` to the log `f` (format 2; the magic first when
 * `f` is empty). A writer that keeps count (from uih_snapshot_log_repair's
 * *records, then one more per record) numbers without reading the file. */
int uih_snapshot_log_write(FILE *f, uint64_t number, const uint8_t *rec, size_t len, uih_error *err);
/* Appends a record numbered one past the log's last (read from the end of
 * the file `f` appends to, "ab" or "a+b"). A format-1 log, a sealed one,
 * or one whose end is not a whole frame is refused. */
int uih_snapshot_log_append(FILE *f, const uint8_t *rec, size_t len, uih_error *err);

/* Before appending to a log a writer may have left cut (killed
 * mid-record): reads it whole, *records = the number its next record gets
 * (its records' count), and cuts a torn last frame, or a torn magic, off
 * the file `f` (opened for reading and writing, e.g. "a+b"; *dropped =
 * bytes cut), so records appended after it stay readable. A log damaged
 * anywhere but its tail is UIH_ERR_CORRUPTION naming the damage, and left
 * as it is; a sealed or format-1 log is UIH_ERR_INVALID_ARGUMENT (start a
 * new log). */
int uih_snapshot_log_repair(FILE *f, const char *name, uint64_t *records, uint64_t *dropped, uih_error *err);

/* Closes the log `f` for good (rotation): checks it reads whole, appends
 * the seal, syncs; *records = the records it holds. Sealing a sealed log
 * does nothing. A damaged log is not sealed (UIH_ERR_CORRUPTION). */
int uih_snapshot_log_seal(FILE *f, const char *name, uint64_t *records, uih_error *err);

/* ---- identities ------------------------------------------------------------ */

/* The columns of `b` an identity reads: the timestamp's, then those of the
 * id-typed traits active in `version` (the group as of the record's schema
 * version; NULL: b's group) in trait id order, -1 where `b` lacks one.
 * Returns how many (<= 1 + the group's traits). */
uint32_t uih_snapshot_identity_columns(const uih_group *version, const uih_batch *b, int *cols, uint32_t cap);

/* The chain value after row `row` of `b`, from `h` (0 before the newest). */
uint64_t uih_snapshot_identity_next(uint64_t h, const uih_batch *b, const int *cols, uint32_t ncols, uint32_t row);

/* The identity chain of one group's immutable part, as inference computes
 * it over the events it serves and training recomputes it over the events
 * it finds: the same code on both sides. Start it, push the part's events
 * newest first; at each checkpoint inference marks the record and training
 * verifies it. `n` and `h` are h(n) after n events: a caller that keeps
 * h(k) of an earlier chain whose newest k events were the same may set
 * them to resume from there. */
typedef struct uih_snapshot_chain {
  int cols[1 + UIH_TRAITS_MAX]; /* uih_snapshot_identity_columns */
  uint32_t ncols;
  uint32_t n; /* events pushed */
  uint64_t h; /* h(n) */
  uint32_t cp_length, next;     /* marking: the checkpoints of a part of cp_length events, */
  uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX]; /* cp[next - 1] the next one the chain reaches */
} uih_snapshot_chain;

/* A chain over batches with the columns of `like`, identities as the
 * group `version` (the record's schema version's; NULL: like's group)
 * defines them. */
void uih_snapshot_chain_start(uih_snapshot_chain *c, const uih_group *version, const uih_batch *like);
/* The next older event: row `row` of `b` (a batch with like's columns).
 * Inline, as mark: they run once per event. */
static inline void uih_snapshot_chain_push(uih_snapshot_chain *c, const uih_batch *b, uint32_t row) {
  c->h = uih_snapshot_identity_next(c->h, b, c->cols, c->ncols, row);
  c->n++;
}
/* Inference: records the chain in g->check when c->n is one of the
 * checkpoints of g->length. */
static inline void uih_snapshot_chain_mark(uih_snapshot_chain *c, uih_snapshot_group *g) {
  if (c->cp_length != g->length) {
    c->next = uih_snapshot_checkpoints(g->length, c->cp); /* largest first: the smallest is reached first */
    c->cp_length = g->length;
  }
  while (c->next > 0 && c->cp[c->next - 1] < c->n) c->next--; /* passed without a mark */
  if (c->next > 0 && c->cp[c->next - 1] == c->n) g->check[--c->next] = (uint32_t)c->h;
}
/* Training: 1 when c->n is one of the checkpoints of g->length and the
 * chain is what g records there, else 0. */
int uih_snapshot_chain_verify(const uih_snapshot_chain *c, const uih_snapshot_group *g);
/* What g records at checkpoint n (0 when n is none of its checkpoints). */
uint32_t uih_snapshot_group_check(const uih_snapshot_group *g, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif /* UIH_SNAPSHOT_H */
