/* uihstore — event lists: the mutable tier's values and merge operands.
 *
 * An event list holds the events of one (user, feature group), row by row,
 * self-described (each column names its trait id and type, so lists written
 * under different schema versions merge) and checksummed. Lists are always
 * canonical: events sorted by timestamp (ties by their encoded bytes) with
 * exact duplicates — same timestamp and same trait values — stored once.
 * Merging lists is therefore a set union, which is what makes the append
 * merge operator safe to apply in any grouping and a retried append
 * harmless. The format is drawn in engine/events/events_format.h.
 *
 * A list that could not be merged because one of its inputs was malformed is
 * *quarantined*: it keeps every input byte for byte plus the reason, later
 * appends are added to it, and reading it reports the corruption. Nothing is
 * dropped, and a compaction never fails because of one bad key.
 *
 * A uih_events workspace holds scratch memory and the output of its last
 * call: create one per thread and reuse it; after warm-up a call allocates
 * nothing.
 */
#ifndef UIH_EVENTS_H
#define UIH_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "uih/batch.h"
#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_EVENTS_MAX (1u << 24)            /* events in one list */
#define UIH_EVENTS_BYTES_MAX (UINT32_C(1) << 30) /* bytes of one list */

typedef struct uih_events uih_events;

typedef struct uih_slice {
  const uint8_t *data;
  size_t len;
} uih_slice;

int uih_events_create(uih_events **out, uih_error *err);
void uih_events_free(uih_events *ev); /* NULL is fine */

/* Encodes the `count` events of `batch` (every column; each event must have
 * its timestamp) as a canonical list. The bytes (*out, *out_len) belong to `ev`; they stay
 * valid until its next call. An empty batch gives an empty list. */
int uih_events_encode(uih_events *ev, const uih_batch *batch, const uint8_t **out,
                      size_t *out_len, uih_error *err);

typedef struct uih_events_info {
  uint16_t group;
  uint32_t count;       /* events; for a quarantined list, the inputs it keeps */
  uint32_t ncolumns;    /* the timestamp column included */
  int64_t min_ts, max_ts; /* of the events; 0 and 0 when count == 0 */
  int quarantined;      /* 1: see uih_events_read_info() */
} uih_events_info;

/* Validates a whole list (structure, canonical order, checksum) and
 * describes it. UIH_ERR_CORRUPTION names the offset and what was expected;
 * a quarantined list is valid here (info->quarantined = 1) but every decode
 * of it fails with UIH_ERR_CORRUPTION and its reason. */
int uih_events_read_info(const uint8_t *buf, size_t len, uih_events_info *info, uih_error *err);

/* For a quarantined list: its reason (NUL-terminated, cut to `cap` bytes)
 * and, for i < info.count, its input i (pointing into `buf`), so a tool can
 * show or salvage what could not be merged. */
int uih_events_quarantined(const uint8_t *buf, size_t len, uint32_t i, uih_slice *input,
                           char *reason, size_t cap, uih_error *err);

/* Decodes the events with min_ts <= ts <= max_ts into `out` (its columns are
 * the projection: stored traits it lacks are skipped, traits the list lacks
 * come back absent). `out` must be of the list's group and ask each trait
 * with the stored type (else UIH_ERR_TYPE_MISMATCH); UIH_ERR_OUT_OF_RANGE
 * when it cannot hold them all (nothing is truncated). */
int uih_events_decode(const uint8_t *buf, size_t len, int64_t min_ts, int64_t max_ts,
                      uih_batch *out, uih_error *err);
/* The same, of those events only the newest `newest` (UINT32_MAX: all): the
 * older ones are stepped over, not decoded. */
int uih_events_decode_newest(const uint8_t *buf, size_t len, int64_t min_ts, int64_t max_ts, uint32_t newest,
                             uih_batch *out, uih_error *err);

/* What a merge keeps; a zeroed struct (or NULL) keeps everything. Limits
 * are applied after the union, and are safe to apply to any subset of the
 * operands first (partial merges): an event a subset drops has enough newer
 * events in that subset to be dropped from the whole too. Ages are in the
 * timestamp's own unit and relative to the newest event, not to the clock,
 * so merging is deterministic. */
typedef struct uih_events_limits {
  uint32_t max_events; /* keep the newest N events (by canonical order); 0: no limit */
  int64_t max_age;     /* drop events with ts < newest ts - max_age; 0: no limit */
} uih_events_limits;

/* Merges `n` (>= 1) lists of feature group `group` into one canonical list: the
 * union of their events, then `limits` (NULL: none). Columns are the union
 * of the inputs' columns. UIH_ERR_CORRUPTION names the input (by index) and
 * the offset when one is malformed, of another group, quarantined, or gives
 * a trait two types. *out is `ev`'s bytes or, when the merge is one input
 * unchanged (a valid list the limits leave whole, merged alone), that
 * input's own bytes: nothing is copied. */
int uih_events_merge(uih_events *ev, uint16_t group, const uih_slice *inputs, size_t n,
                     const uih_events_limits *limits, const uint8_t **out, size_t *out_len,
                     uih_error *err);

/* Builds a quarantined list of `group` holding `reason` and every input
 * (the inputs of quarantined inputs are taken over flat, not nested). */
int uih_events_quarantine(uih_events *ev, uint16_t group, const char *reason,
                          const uih_slice *inputs, size_t n, const uint8_t **out,
                          size_t *out_len, uih_error *err);

/* The merge operator's rule, for the value of mutable key `key` (a chunk's
 * key: the 18-byte key of uih/key.h whose ts is the chunk's start, or the
 * 10-byte (user, group) prefix of stores without chunks; see
 * uih/mutable.h): merge `existing` (may be NULL)
 * with the operands; if any of them cannot be merged, quarantine them all
 * instead. Returns UIH_OK with the value in *out either way (an input's
 * own bytes when the merge is that input unchanged, as uih_events_merge
 * gives them; and
 * *quarantined = 1 with the reason in `why` in the second case); an error
 * only for an invalid key or no memory. */
int uih_events_merge_value(uih_events *ev, const uint8_t *key, size_t key_len,
                           const uih_slice *existing, const uih_slice *operands, size_t n,
                           const uih_events_limits *limits, const uint8_t **out, size_t *out_len,
                           int *quarantined, uih_error *why);

/* Retention: what to do with a stored list given the watermark. */
typedef enum uih_retain_action {
  UIH_RETAIN_KEEP = 0,   /* nothing below the watermark (or unreadable: never drop it) */
  UIH_RETAIN_REMOVE = 1, /* every event is below the watermark */
  UIH_RETAIN_CHANGE = 2, /* some are: *out holds the rest */
} uih_retain_action;

uih_retain_action uih_events_retain(uih_events *ev, const uint8_t *buf, size_t len,
                                    int64_t watermark, const uint8_t **out, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* UIH_EVENTS_H */
