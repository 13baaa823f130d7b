/* uihstore — key codec for the immutable tier.
 *
 * A key names one stripe: the events of one user in one feature group,
 * starting at `ts` (the timestamp of the stripe's first event). The encoding
 * is fixed-width and big-endian, with the timestamp's sign bit flipped, so
 * that memcmp() order of encoded keys equals (user_id, group, ts) tuple order
 * with ts compared as a signed integer:
 *
 *    offset  size  field
 *    ------  ----  ---------------------------------------------------
 *         0     8  user_id          uint64, big-endian
 *         8     2  feature_group    uint16, big-endian
 *        10     8  stripe_start_ts  int64 ^ 0x8000000000000000, big-endian
 *    ------  ----
 *        18        UIH_KEY_SIZE
 *
 *   ts = INT64_MIN -> 00 00 00 00 00 00 00 00
 *   ts = -1        -> 7f ff ff ff ff ff ff ff
 *   ts = 0         -> 80 00 00 00 00 00 00 00
 *   ts = INT64_MAX -> ff ff ff ff ff ff ff ff
 *
 * Prefixes: the first 8 bytes select all stripes of a user, the first 10 all
 * stripes of a user in one group. The mutable tier uses the same 18 bytes
 * for a chunk of a user's events in one group, ts being the chunk's start
 * (uih_key_chunk_start; stores made before chunks use the 10-byte prefix
 * alone). Format version 1; a change would be a new key format.
 */
#ifndef UIH_KEY_H
#define UIH_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_KEY_SIZE 18
#define UIH_KEY_USER_PREFIX_SIZE 8
#define UIH_KEY_GROUP_PREFIX_SIZE 10

typedef struct uih_key {
  uint64_t user_id;
  uint16_t group;
  int64_t ts;
} uih_key;

/* Writes the UIH_KEY_SIZE-byte encoding of `k` to `out`. */
void uih_key_encode(const uih_key *k, uint8_t out[UIH_KEY_SIZE]);

/* Decodes `len` bytes at `buf` into `out`. Fails with UIH_ERR_CORRUPTION
 * unless len == UIH_KEY_SIZE (every 18-byte string is a valid key). */
int uih_key_decode(const uint8_t *buf, size_t len, uih_key *out, uih_error *err);

/* Writes the 8-byte prefix shared by every key of `user_id`. */
void uih_key_user_prefix(uint64_t user_id, uint8_t out[UIH_KEY_USER_PREFIX_SIZE]);

/* Writes the 10-byte prefix shared by every key of (`user_id`, `group`). */
void uih_key_group_prefix(uint64_t user_id, uint16_t group,
                          uint8_t out[UIH_KEY_GROUP_PREFIX_SIZE]);

/* The start of the chunk of `span` (> 0) time units holding `ts`: the
 * largest multiple of span at or below ts, or INT64_MIN when that is not
 * representable. Non-decreasing in ts. */
int64_t uih_key_chunk_start(int64_t ts, int64_t span);

/* Reads a (user, group) prefix — the key of an unchunked mutable tier — back.
 * UIH_ERR_INVALID_ARGUMENT unless len == UIH_KEY_GROUP_PREFIX_SIZE. */
int uih_key_group_prefix_decode(const uint8_t *buf, size_t len, uint64_t *user_id,
                                uint16_t *group, uih_error *err);

/* Turns the `len`-byte prefix in `buf` into the smallest byte string of the
 * same length that is greater than every key starting with it, for use as an
 * exclusive upper bound of a prefix scan. Returns 0 if there is none (the
 * prefix is all 0xff: the scan is unbounded above; `buf` is unchanged), 1
 * otherwise. */
int uih_key_prefix_successor(uint8_t *buf, size_t len);

/* Compares two keys in tuple order: <0, 0, >0 like memcmp of their encodings. */
int uih_key_compare(const uih_key *a, const uih_key *b);

/* Symmetric sharding: which of `nshards` shards holds `user_id`'s history,
 * the same function a training job partitions its data with, so one
 * batch's lookups hit one shard. Stable forever: the low 64 bits of XXH3-64
 * (seed 0) of the user id as 8 little-endian bytes, modulo nshards; in
 * Python, xxhash.xxh3_64_intdigest(user_id.to_bytes(8, "little")) %
 * nshards. nshards 0 or 1 gives 0. */
uint32_t uih_shard_of(uint64_t user_id, uint32_t nshards);
/* uih_shard_of of each of the n user ids into out[0..n): for callers that
 * partition many records at once (the Python layer's workers). */
void uih_shard_of_many(const uint64_t *user_ids, size_t n, uint32_t nshards, uint32_t *out);

/* String ids. Logs often name users and items by strings ("alice",
 * "A2SUAM1J3GNN3B", "B00005N7P0"); a store keeps 64-bit ids. A string's id
 * is XXH3-64 (seed 0) of its bytes as given — UTF-8, not normalized: "é"
 * precomposed and decomposed are two strings — stable forever, so an
 * inference service, a training job and the loader that hash the same
 * string agree; in Python, xxhash.xxh3_64_intdigest(s.encode()) (or
 * uihstore.hash_ids). Two different strings share an id with probability
 * about n^2 / 2^65 among n distinct strings: 3e-8 for a million, 3e-4 for
 * 100 million, 3% for a billion. */
uint64_t uih_hash_id(const char *bytes, size_t len);
/* n strings laid end to end in `bytes`, string i at [offsets[i],
 * offsets[i + 1]) (n + 1 offsets, as Arrow's string arrays): each one's
 * uih_hash_id into out[0..n). */
void uih_hash_ids(const uint8_t *bytes, const uint64_t *offsets, size_t n, uint64_t *out);

/* Every string hashed into ids by one load (or one append), to catch two
 * different strings with one id instead of merging them silently: each
 * distinct string is kept once (its bytes, 4 more, and 32 to 64 bytes of
 * table), so its memory grows with the distinct strings a load reads. Not
 * thread-safe. */
typedef struct uih_id_check uih_id_check;
int uih_id_check_create(uih_id_check **out, uih_error *err);
void uih_id_check_free(uih_id_check *check); /* NULL is fine */
/* Records that string [bytes, bytes + len) has id `id` (its
 * uih_hash_id). *other = NULL when it is new or seen before; else the
 * different string seen before with that id (*other_len bytes, valid until
 * the next add), which is not recorded over. UIH_ERR_NO_MEMORY. */
int uih_id_check_add(uih_id_check *check, uint64_t id, const char *bytes, size_t len, const char **other,
                     size_t *other_len, uih_error *err);
/* Distinct strings recorded. */
uint64_t uih_id_check_count(const uih_id_check *check);

#ifdef __cplusplus
}
#endif
#endif /* UIH_KEY_H */
