#include "uih/key.h"

#include <xxhash.h>

#include "bits.h"
#include "error_internal.h"
#include "mem.h"

void uih_key_encode(const uih_key *k, uint8_t out[UIH_KEY_SIZE]) {
  uih_store_be64(out, k->user_id);
  uih_store_be16(out + 8, k->group);
  uih_store_be64(out + 10, uih_order_u64(k->ts));
}

int uih_key_decode(const uint8_t *buf, size_t len, uih_key *out, uih_error *err) {
  if (UIH_UNLIKELY(buf == NULL || len != UIH_KEY_SIZE))
    return uih_corruption(err, "key is %zu bytes, expected %d (user_id u64, group u16, ts i64)",
                          buf == NULL ? (size_t)0 : len, UIH_KEY_SIZE);
  out->user_id = uih_load_be64(buf);
  out->group = uih_load_be16(buf + 8);
  out->ts = uih_order_i64(uih_load_be64(buf + 10));
  return UIH_OK;
}

void uih_key_user_prefix(uint64_t user_id, uint8_t out[UIH_KEY_USER_PREFIX_SIZE]) {
  uih_store_be64(out, user_id);
}

void uih_key_group_prefix(uint64_t user_id, uint16_t group,
                          uint8_t out[UIH_KEY_GROUP_PREFIX_SIZE]) {
  uih_store_be64(out, user_id);
  uih_store_be16(out + 8, group);
}

int64_t uih_key_chunk_start(int64_t ts, int64_t span) {
  int64_t r = ts % span; /* in (-span, span), the sign of ts */
  if (r >= 0) return ts - r;
  if (ts < INT64_MIN + span + r) return INT64_MIN; /* ts - r - span would overflow */
  return ts - r - span;
}

int uih_key_group_prefix_decode(const uint8_t *buf, size_t len, uint64_t *user_id,
                                uint16_t *group, uih_error *err) {
  if (UIH_UNLIKELY(buf == NULL || len != UIH_KEY_GROUP_PREFIX_SIZE))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "key is %zu bytes, expected %d (user_id u64, group u16)",
                         buf == NULL ? (size_t)0 : len, UIH_KEY_GROUP_PREFIX_SIZE);
  *user_id = uih_load_be64(buf);
  *group = uih_load_be16(buf + 8);
  return UIH_OK;
}

int uih_key_prefix_successor(uint8_t *buf, size_t len) {
  size_t i = len;
  while (i > 0 && buf[i - 1] == 0xff) i--;
  if (i == 0) return 0; /* all 0xff: leave `buf` as it was */
  buf[i - 1]++;
  memset(buf + i, 0x00, len - i);
  return 1;
}

uint32_t uih_shard_of(uint64_t user_id, uint32_t nshards) {
  if (nshards <= 1) return 0;
  uint8_t le[8];
  uih_store_le64(le, user_id);
  return (uint32_t)(XXH3_64bits(le, sizeof le) % nshards);
}

void uih_shard_of_many(const uint64_t *user_ids, size_t n, uint32_t nshards, uint32_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = uih_shard_of(user_ids[i], nshards);
}

uint64_t uih_hash_id(const char *bytes, size_t len) { return XXH3_64bits(len ? bytes : "", len); }

void uih_hash_ids(const uint8_t *bytes, const uint64_t *offsets, size_t n, uint64_t *out) {
  for (size_t i = 0; i < n; i++)
    out[i] = uih_hash_id((const char *)bytes + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
}

int uih_key_compare(const uih_key *a, const uih_key *b) {
  if (a->user_id != b->user_id) return a->user_id < b->user_id ? -1 : 1;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return 0;
}
