/* Generation records and the store descriptor (uih/generation.h). */
#include "uih/generation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bits.h"
#include "error_internal.h"
#include "mem.h"

static const uint8_t kMagic[4] = {'U', 'G', 'E', 'N'};

static void put32(uint8_t *p, uint32_t v) {
  uih_store_be16(p, (uint16_t)(v >> 16));
  uih_store_be16(p + 2, (uint16_t)v);
}
static uint32_t get32(const uint8_t *p) { return (uint32_t)uih_load_be16(p) << 16 | uih_load_be16(p + 2); }

void uih_generation_encode(const uih_generation *g, uint8_t out[UIH_GENERATION_SIZE]) {
  memcpy(out, kMagic, 4);
  uih_store_be16(out + 4, UIH_GENERATION_FORMAT);
  uih_store_be16(out + 6, UIH_GENERATION_SIZE);
  put32(out + 8, g->generation);
  put32(out + 12, g->parent);
  put32(out + 16, g->schema_version);
  put32(out + 20, g->shard);
  uih_store_be64(out + 24, uih_order_u64(g->through));
  uih_store_be64(out + 32, uih_order_u64(g->horizon));
  const uint64_t counts[] = {g->events,    g->stripes,    g->histories,  g->bytes,   g->events_in,
                             g->events_new, g->duplicates, g->expired,   g->deleted, g->inputs_digest};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) uih_store_be64(out + 40 + 8 * i, counts[i]);
  uih_store_be64(out + 120, XXH3_64bits(out, 120));
}

int uih_generation_decode(const uint8_t *buf, size_t len, uih_generation *out, uih_error *err) {
  if (buf == NULL || len < 8 || memcmp(buf, kMagic, 4) != 0)
    return uih_corruption(err, "generation record: %zu bytes without the magic \"UGEN\" at offset 0",
                          buf ? len : 0);
  uint16_t format = uih_load_be16(buf + 4), size = uih_load_be16(buf + 6);
  UIH_RETURN_IF(format > UIH_GENERATION_FORMAT, err, UIH_ERR_NOT_SUPPORTED,
                "generation record: format %u, this build reads up to %u", format, UIH_GENERATION_FORMAT);
  if (format == 0 || size != UIH_GENERATION_SIZE || len != UIH_GENERATION_SIZE)
    return uih_corruption(err, "generation record: format %u of %u bytes in %zu, expected format 1 of %d bytes",
                          format, size, len, UIH_GENERATION_SIZE);
  uint64_t want = XXH3_64bits(buf, 120), got = uih_load_be64(buf + 120);
  if (want != got)
    return uih_corruption(err, "generation record: checksum at offset 120 is %016" PRIx64 ", the bytes give %016" PRIx64,
                          got, want);
  uih_generation g;
  g.generation = get32(buf + 8);
  g.parent = get32(buf + 12);
  g.schema_version = get32(buf + 16);
  g.shard = get32(buf + 20);
  g.through = uih_order_i64(uih_load_be64(buf + 24));
  g.horizon = uih_order_i64(uih_load_be64(buf + 32));
  uint64_t *counts[] = {&g.events,    &g.stripes,    &g.histories, &g.bytes,   &g.events_in,
                        &g.events_new, &g.duplicates, &g.expired,   &g.deleted, &g.inputs_digest};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) *counts[i] = uih_load_be64(buf + 40 + 8 * i);
  if (g.generation == 0 || g.parent >= g.generation)
    return uih_corruption(err, "generation record: generation %u built on %u (offsets 8, 12): expected parent < generation, generation >= 1",
                          g.generation, g.parent);
  if (g.schema_version == 0) return uih_corruption(err, "generation record: schema version 0 at offset 16");
  if (g.shard >= UIH_STORE_SHARDS_MAX)
    return uih_corruption(err, "generation record: shard %u at offset 20, at most %d shards", g.shard,
                          UIH_STORE_SHARDS_MAX);
  if (g.horizon > g.through)
    return uih_corruption(err, "generation record: horizon %" PRId64 " after through %" PRId64 " (offsets 32, 24)",
                          g.horizon, g.through);
  if (g.stripes > g.events || g.histories > g.stripes || g.events_new + g.duplicates > g.events_in)
    return uih_corruption(err, "generation record: counts contradict each other (%" PRIu64 " events in %" PRIu64
                          " stripes of %" PRIu64 " histories; %" PRIu64 " new + %" PRIu64 " duplicates of %" PRIu64 " in)",
                          g.events, g.stripes, g.histories, g.events_new, g.duplicates, g.events_in);
  *out = g;
  return UIH_OK;
}

/* ---- the descriptor ------------------------------------------------------- */

/* The next line of [*p, end) without its '\n'; NULL at the end. */
static const char *next_line(const char **p, const char *end, size_t *n) {
  if (*p >= end) return NULL;
  const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
  *n = (size_t)((nl ? nl : end) - s);
  *p = nl ? nl + 1 : end;
  return s;
}

/* "KEYWORD N" with N a decimal in [lo, hi]. */
static int number_line(const char *s, size_t n, const char *keyword, uint64_t lo, uint64_t hi, uint64_t *out) {
  size_t k = strlen(keyword);
  if (n <= k + 1 || n > k + 21 || memcmp(s, keyword, k) != 0 || s[k] != ' ') return 0;
  uint64_t v = 0;
  for (size_t i = k + 1; i < n; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v < lo || v > hi || (s[k + 1] == '0' && n > k + 2)) return 0;
  *out = v;
  return 1;
}

/* "KEYWORD " and `digits` lowercase hex digits. */
static int hex_line(const char *s, size_t n, const char *keyword, size_t digits, uint64_t *out) {
  const size_t k = strlen(keyword);
  if (n != k + 1 + digits || memcmp(s, keyword, k) != 0 || s[k] != ' ') return 0;
  uint64_t v = 0;
  for (size_t i = k + 1; i < n; i++) {
    int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return 1;
}

/* "id " and 16 lowercase hex digits, not all zero. */
static int id_line(const char *s, size_t n, uint64_t *out) { return hex_line(s, n, "id", 16, out) && *out != 0; }

/* "check " and 8 lowercase hex digits. */
static int check_line(const char *s, size_t n, uint32_t *out) {
  uint64_t v;
  if (!hex_line(s, n, "check", 8, &v)) return 0;
  *out = (uint32_t)v;
  return 1;
}

static uint32_t descriptor_check(const char *text, size_t len) { return (uint32_t)XXH3_64bits(text, len); }

size_t uih_store_descriptor_write(uint32_t shards, uint64_t id, char *out, size_t cap) {
  char body[96];
  const int n = snprintf(body, sizeof body, "uihstore 2\nshards %u\nid %016" PRIx64 "\n", shards, id);
  return (size_t)snprintf(out, cap, "%scheck %08x\n", body, descriptor_check(body, (size_t)n));
}

int uih_store_descriptor_parse(const char *text, size_t len, uint32_t *shards, uint64_t *id, uih_error *err) {
  UIH_RETURN_IF(text == NULL || shards == NULL || id == NULL, err, UIH_ERR_INVALID_ARGUMENT,
                "store descriptor: NULL argument");
  const char *p = text, *end = text + len, *s;
  size_t n;
  uint64_t format, count;
  if (len == 0 || text[len - 1] != '\n')
    return uih_corruption(err, "store descriptor: %zu bytes not ending in a newline (cut short?)", len);
  s = next_line(&p, end, &n);
  if (!s || !number_line(s, n, "uihstore", 1, UINT32_MAX, &format))
    return uih_corruption(err, "store descriptor: line 1: expected 'uihstore 2' (or 'uihstore 1')");
  UIH_RETURN_IF(format > 2, err, UIH_ERR_NOT_SUPPORTED,
                "store descriptor: format %" PRIu64 ", this build reads formats 1 and 2", format);
  s = next_line(&p, end, &n);
  if (!s || !number_line(s, n, "shards", 1, UIH_STORE_SHARDS_MAX, &count))
    return uih_corruption(err, "store descriptor: line 2: expected 'shards N' with N in 1..%d", UIH_STORE_SHARDS_MAX);
  uint64_t store = 0;
  s = next_line(&p, end, &n);
  if ((s || format == 2) && !(s && id_line(s, n, &store)))
    return uih_corruption(err, "store descriptor: line 3: expected 'id' and 16 hex digits (lowercase, not all 0)%s",
                          s ? "" : ": the descriptor is cut short");
  if (format == 2) { /* the check covers the lines above it */
    const size_t covered = (size_t)(p - text);
    uint32_t check = 0;
    s = next_line(&p, end, &n);
    if (!s || !check_line(s, n, &check))
      return uih_corruption(err, "store descriptor: line 4: expected 'check' and 8 hex digits (lowercase)%s",
                            s ? "" : ": the descriptor is cut short");
    if (check != descriptor_check(text, covered))
      return uih_corruption(err, "store descriptor: line 4: check %08x, but lines 1..3 give %08x: the descriptor is "
                            "damaged", check, descriptor_check(text, covered));
  }
  if (p != end) return uih_corruption(err, "store descriptor: line %d: expected the end of the file", format == 2 ? 5 : s ? 4 : 3);
  *shards = (uint32_t)count;
  *id = store;
  return UIH_OK;
}
