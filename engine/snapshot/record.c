/* Snapshot records (uih/snapshot.h): checkpoints, the binary form, the text
 * form. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "bits.h"
#include "cursor.h"
#include "error_internal.h"
#include "mem.h"
#include "uih/snapshot.h"
#include "uih/stripe.h"

uint32_t uih_snapshot_checkpoints(uint32_t length, uint32_t out[UIH_SNAPSHOT_CHECKS_MAX]) {
  uint32_t n = 0;
  if (length == 0) return 0;
  out[n++] = length;
  while (n < UIH_SNAPSHOT_CHECKS_MAX && out[n - 1] / 4 >= UIH_SNAPSHOT_CHECK_MIN) {
    out[n] = out[n - 1] / 4;
    n++;
  }
  return n;
}

uint32_t uih_snapshot_checkpoint_for(uint32_t length, uint32_t want) {
  uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
  uint32_t n = uih_snapshot_checkpoints(length, cp), best = length;
  for (uint32_t i = 0; i < n; i++)
    if (cp[i] >= want) best = cp[i];
  return best;
}

int uih_snapshot_mutable_next(const uih_snapshot_group *g, size_t *at, const uint8_t **stripe, size_t *len) {
  if (*at >= g->mutable_len) return 0;
  uih_cursor c = uih_cursor_make(g->mutable_events + *at, g->mutable_len - *at);
  uint64_t n = uih_cursor_varint(&c);
  if (c.bad || n == 0 || n > uih_cursor_left(&c)) return -1;
  *stripe = uih_cursor_take(&c, (size_t)n);
  *len = (size_t)n;
  *at = g->mutable_len - uih_cursor_left(&c);
  return 1;
}

size_t uih_snapshot_mutable_put(uint8_t *out, size_t cap, size_t *at, const uint8_t *stripe, size_t len) {
  uint8_t head[UIH_VARINT_MAX];
  const size_t h = uih_varint_put(head, len);
  if (*at + h + len <= cap) {
    memcpy(out + *at, head, h);
    if (len) memcpy(out + *at + h, stripe, len);
  }
  *at += h + len;
  return h + len;
}


/* Writes up to `cap` bytes at out + *at and always advances *at (sizing). */
typedef struct sink {
  uint8_t *out;
  size_t cap, at;
} sink;

static void put(sink *s, const void *p, size_t n) {
  if (s->at + n <= s->cap && n) memcpy(s->out + s->at, p, n);
  s->at += n;
}
static void put_u8(sink *s, uint8_t v) { put(s, &v, 1); }
static void put_u32(sink *s, uint32_t v) {
  uint8_t b[4];
  uih_store_le32(b, v);
  put(s, b, 4);
}
static void put_varint(sink *s, uint64_t v) {
  uint8_t b[UIH_VARINT_MAX];
  put(s, b, uih_varint_put(b, v));
}

static int check_record(const uih_snapshot_record *r, uih_error *err) {
  if (r->ngroups == 0 || r->ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot record: %u groups, expected 1..%d", r->ngroups,
                         UIH_SNAPSHOT_GROUPS_MAX);
  for (uint32_t i = 0; i < r->ngroups; i++) {
    const uih_snapshot_group *g = &r->groups[i];
    if (i > 0 && g->group <= r->groups[i - 1].group)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "snapshot record: group %u at position %u (ids must be ascending)", g->group, i);
    if (g->length > 0 && (g->generation != r->generation || g->generation == 0 || g->start_ts > g->end_ts ||
                          g->end_ts > r->request_ts))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                           "snapshot record: group %u: generation %u, window [%" PRId64 ", %" PRId64
                           "] at request %" PRId64 " (expected the record's generation %u, >= 1, and start <= end "
                           "<= request)",
                           g->group, g->generation, g->start_ts, g->end_ts, r->request_ts, r->generation);
    if ((g->mutable_len > 0) != (g->mutable_events != NULL))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot record: group %u: %zu mutable bytes at %p",
                           g->group, g->mutable_len, (const void *)g->mutable_events);
  }
  return UIH_OK;
}

static void write_record(const uih_snapshot_record *r, sink *s) {
  put_u8(s, UIH_SNAPSHOT_FORMAT);
  put_u32(s, r->store);
  put_varint(s, r->user_id);
  put_varint(s, uih_zigzag64(r->request_ts));
  put_varint(s, r->schema_version);
  put_varint(s, r->generation);
  put_u8(s, (uint8_t)r->ngroups);
  for (uint32_t i = 0; i < r->ngroups; i++) {
    const uih_snapshot_group *g = &r->groups[i];
    put_varint(s, g->group);
    put_varint(s, g->length);
    if (g->length > 0) {
      put_varint(s, g->generation);
      put_varint(s, (uint64_t)r->request_ts - (uint64_t)g->end_ts);
      put_varint(s, (uint64_t)g->end_ts - (uint64_t)g->start_ts);
      uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
      uint32_t n = uih_snapshot_checkpoints(g->length, cp);
      for (uint32_t k = 0; k < n; k++) put_u32(s, g->check[k]);
    }
    put_varint(s, g->mutable_len);
    put(s, g->mutable_events, g->mutable_len);
  }
}

size_t uih_snapshot_record_size(const uih_snapshot_record *r) {
  sink s = {NULL, 0, 0};
  write_record(r, &s);
  return s.at + 4;
}

int uih_snapshot_record_encode(const uih_snapshot_record *r, uint8_t *out, size_t cap, size_t *len,
                               uih_error *err) {
  if (r == NULL || len == NULL || (out == NULL && cap))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot record: NULL argument");
  int rc = check_record(r, err);
  if (rc != UIH_OK) return rc;
  sink s = {out, cap, 0};
  write_record(r, &s);
  *len = s.at + 4;
  if (*len > cap)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "snapshot record: %zu bytes, the buffer has %zu", *len, cap);
  put_u32(&s, (uint32_t)XXH3_64bits(out, s.at));
  return UIH_OK;
}

int uih_snapshot_record_decode(const uint8_t *buf, size_t len, uih_snapshot_record *out, uih_error *err) {
  if (buf == NULL || out == NULL) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot record: NULL argument");
  if (len < 5) return uih_corruption(err, "snapshot record: %zu bytes, at least 5 expected", len);
  /* The checksum first: a damaged version byte is damage, not a newer version. */
  const size_t body = len - 4;
  uint32_t stored = (uint32_t)buf[body] | (uint32_t)buf[body + 1] << 8 | (uint32_t)buf[body + 2] << 16 |
                    (uint32_t)buf[body + 3] << 24;
  uint32_t want = (uint32_t)XXH3_64bits(buf, body);
  if (stored != want)
    return uih_corruption(err, "snapshot record: checksum at offset %zu is %08x, the bytes give %08x", body, stored,
                          want);
  if (buf[0] > UIH_SNAPSHOT_FORMAT)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED, "snapshot record: version %u, this build reads up to %d", buf[0],
                         UIH_SNAPSHOT_FORMAT);
  if (buf[0] == 0) return uih_corruption(err, "snapshot record: version 0 at offset 0");
  uih_cursor c = uih_cursor_make(buf, body);
  const uint8_t version = uih_cursor_u8(&c);
  uih_snapshot_record r;
  memset(&r, 0, sizeof r);
  if (version >= 2) r.store = uih_cursor_u32(&c);
  r.user_id = uih_cursor_varint(&c);
  r.request_ts = uih_unzigzag64(uih_cursor_varint(&c));
  uint64_t schema = uih_cursor_varint(&c);
  size_t at = uih_cursor_offset(&c, buf);
  uint64_t generation = version >= 3 ? uih_cursor_varint(&c) : 0;
  const size_t gen_end = uih_cursor_offset(&c, buf);
  r.ngroups = uih_cursor_u8(&c);
  if (c.bad) return uih_corruption(err, "snapshot record: the header ends early, near offset %zu", at);
  if (schema == 0 || schema > UINT32_MAX)
    return uih_corruption(err, "snapshot record: schema version %" PRIu64 " before offset %zu, expected 1..%u", schema,
                          at, UINT32_MAX);
  if (generation > UINT32_MAX)
    return uih_corruption(err, "snapshot record: generation %" PRIu64 " before offset %zu, expected 0..%u",
                          generation, gen_end, UINT32_MAX);
  r.version = version;
  r.schema_version = (uint32_t)schema;
  r.generation = (uint32_t)generation;
  at = gen_end;
  if (r.ngroups == 0 || r.ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return uih_corruption(err, "snapshot record: %u groups at offset %zu, expected 1..%d", r.ngroups, at,
                          UIH_SNAPSHOT_GROUPS_MAX);
  for (uint32_t i = 0; i < r.ngroups; i++) {
    uih_snapshot_group *g = &r.groups[i];
    at = uih_cursor_offset(&c, buf);
    uint64_t id = uih_cursor_varint(&c), length = uih_cursor_varint(&c);
    if (c.bad) return uih_corruption(err, "snapshot record: group %u ends early, near offset %zu", i, at);
    if (id > UINT16_MAX || (i > 0 && id <= r.groups[i - 1].group))
      return uih_corruption(err, "snapshot record: group id %" PRIu64 " at offset %zu, expected %u..65535", id, at,
                            i > 0 ? r.groups[i - 1].group + 1u : 0u);
    if (length > UINT32_MAX)
      return uih_corruption(err, "snapshot record: group %" PRIu64 ": %" PRIu64 " immutable events at offset %zu",
                            id, length, at);
    g->group = (uint16_t)id;
    g->length = (uint32_t)length;
    if (length > 0) {
      at = uih_cursor_offset(&c, buf);
      uint64_t gen = uih_cursor_varint(&c), back = uih_cursor_varint(&c), span = uih_cursor_varint(&c);
      if (c.bad) return uih_corruption(err, "snapshot record: group %u's window ends early, near offset %zu", g->group, at);
      /* end = request - back and start = end - span, neither below INT64_MIN */
      uint64_t room = (uint64_t)r.request_ts - (uint64_t)INT64_MIN;
      if (gen == 0 || gen > UINT32_MAX || (version >= 3 && gen != r.generation) || back > room || span > room - back)
        return uih_corruption(err,
                              "snapshot record: group %u: generation %" PRIu64 " (the record's: %u), end %" PRIu64
                              " before the request, span %" PRIu64 " at offset %zu (out of range)",
                              g->group, gen, r.generation, back, span, at);
      g->generation = (uint32_t)gen;
      g->end_ts = (int64_t)((uint64_t)r.request_ts - back);
      g->start_ts = (int64_t)((uint64_t)g->end_ts - span);
      uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
      uint32_t n = uih_snapshot_checkpoints(g->length, cp);
      at = uih_cursor_offset(&c, buf);
      for (uint32_t k = 0; k < n; k++) g->check[k] = uih_cursor_u32(&c);
      if (c.bad) return uih_corruption(err, "snapshot record: group %u's checksums end early, near offset %zu", g->group, at);
    }
    at = uih_cursor_offset(&c, buf);
    uint64_t m = uih_cursor_varint(&c);
    if (c.bad || m > uih_cursor_left(&c))
      return uih_corruption(err, "snapshot record: group %u: %" PRIu64 " mutable bytes at offset %zu, %zu left",
                            g->group, m, at, c.bad ? 0 : uih_cursor_left(&c));
    g->mutable_len = (size_t)m;
    g->mutable_events = m ? uih_cursor_take(&c, (size_t)m) : NULL;
    size_t sat = 0, slen;
    const uint8_t *sp;
    int more;
    while ((more = uih_snapshot_mutable_next(g, &sat, &sp, &slen)) == 1) {
    }
    if (more < 0)
      return uih_corruption(err, "snapshot record: group %u: the mutable events at offset %zu are not length-prefixed "
                            "stripes (at byte %zu of %zu)", g->group, at, sat, g->mutable_len);
  }
  if (uih_cursor_left(&c) != 0)
    return uih_corruption(err, "snapshot record: %zu bytes after the last group, at offset %zu", uih_cursor_left(&c),
                          uih_cursor_offset(&c, buf));
  *out = r;
  return UIH_OK;
}

size_t uih_snapshot_record_format(const uih_snapshot_record *r, char *out, size_t cap) {
  size_t at = 0;
#define EMIT(...)                                                                         \
  do {                                                                                    \
    int k_ = snprintf(out && at < cap ? out + at : NULL, out && at < cap ? cap - at : 0, __VA_ARGS__); \
    if (k_ > 0) at += (size_t)k_;                                                         \
  } while (0)
  EMIT("store %08x, user %" PRIu64 " at %" PRId64 ", schema %u, generation %u:", r->store, r->user_id,
       r->request_ts, r->schema_version, r->generation);
  for (uint32_t i = 0; i < r->ngroups && i < UIH_SNAPSHOT_GROUPS_MAX; i++) {
    const uih_snapshot_group *g = &r->groups[i];
    EMIT("%s group %u: ", i ? ";" : "", g->group);
    if (g->length == 0) {
      EMIT("no immutable events");
    } else {
      EMIT("%u immutable events [%" PRId64 ", %" PRId64 "] of generation %u (checks", g->length, g->start_ts,
           g->end_ts, g->generation);
      uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
      uint32_t n = uih_snapshot_checkpoints(g->length, cp);
      for (uint32_t k = 0; k < n; k++) EMIT(" %u:%08x", cp[k], g->check[k]);
      EMIT(")");
    }
    uint64_t events = 0;
    uint32_t stripes = 0;
    int bad = 0, more;
    size_t sat = 0, slen;
    const uint8_t *sp;
    while ((more = uih_snapshot_mutable_next(g, &sat, &sp, &slen)) == 1) {
      uih_stripe_info info;
      if (uih_stripe_read_info(sp, slen, &info, NULL) == UIH_OK) events += info.count;
      else bad = 1;
      stripes++;
    }
    if (g->mutable_len == 0)
      EMIT(", no mutable events");
    else if (bad || more < 0)
      EMIT(", %zu bytes of mutable events (not stripes)", g->mutable_len);
    else
      EMIT(", %" PRIu64 " mutable events in %u stripe%s of %zu bytes", events, stripes, stripes == 1 ? "" : "s",
           g->mutable_len);
  }
#undef EMIT
  if (out && cap) out[at < cap ? at : cap - 1] = '\0';
  return at;
}
