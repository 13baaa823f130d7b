/* UihTable index: validation at open, then cursor movement over either
 * layout (prefix-compressed entries, or numeric blocks: table_numeric.h).
 * Format in uih/table.h. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cursor.h"
#include "error_internal.h"
#include "mem.h"
#include "table_format.h"
#include "table_numeric.h"
#include "uih/table.h"


struct uih_table_index {
  uint8_t *block; /* the index bytes (owned), UIH_TABLE_INDEX_SLACK zeros after */
  uih_table_layout layout;
  size_t len;
  const uint8_t *entries;
  size_t elen;
  const uint8_t *restarts;
  uint64_t nrestarts;
  uint64_t n;
  uint32_t interval;
  size_t max_key;
  uint64_t data_size;
  /* Each block's (restart's) first key, its first 8 bytes as a big-endian
   * number, zero padded (in the numeric layout: the user id). Ordered as
   * the keys are, so a seek narrows to the blocks sharing the target's
   * first 8 bytes without touching any block. */
  uint64_t *first8;
};

/* One decoded entry; key bytes land in `key` (max_key bytes). */
typedef struct entry {
  uint8_t *key;
  size_t klen;
  uint64_t trailer, voff;
  uint32_t vlen;
} entry;

/* Offset of restart (block) `r` in the entries area (0 past the last: the
 * checks at open then fail). */
static uint32_t restart_at(const uih_table_index *x, uint64_t r) {
  uih_cursor c = uih_cursor_make(x->restarts, 4 * x->nrestarts);
  if (r >= x->nrestarts || uih_cursor_skip(&c, 4 * r) != 0) return 0;
  return uih_cursor_u32(&c);
}

/* A cursor over the entries area from byte `at` on (empty past its end). */
static uih_cursor entries_from(const uih_table_index *x, size_t at) {
  uih_cursor c = uih_cursor_make(x->entries, x->elen);
  if (uih_cursor_skip(&c, at) != 0) c = uih_cursor_make(x->entries + x->elen, 0);
  return c;
}

/* Decodes the entry at byte `at` over `e`, which holds the previous entry
 * (ignored for a restart). Returns the offset after it, or 0 if the bytes
 * are malformed. */
static size_t parse_entry(const uih_table_index *x, size_t at, int restart, entry *e) {
  uih_cursor c = entries_from(x, at);
  uint8_t head = uih_cursor_u8(&c);
  uint64_t shared = head & 15, unshared = (head >> 4) & 7;
  int same = head >> 7;
  if (shared == 15) shared = uih_cursor_varint(&c);
  if (unshared == 7) unshared = uih_cursor_varint(&c);
  if (c.bad || shared > e->klen || (restart && (shared || same)) || unshared > x->max_key - shared)
    return 0;
  const uint8_t *bytes = uih_cursor_take(&c, unshared);
  if (!bytes) return 0;
  if (unshared) memcpy(e->key + shared, bytes, unshared);
  e->klen = shared + unshared;
  if (!same) e->trailer = uih_cursor_varint(&c);
  uint64_t voff = restart ? uih_cursor_varint(&c) : e->voff + e->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  uint64_t vlen = uih_cursor_varint(&c);
  if (c.bad || vlen > UINT32_MAX) return 0;
  e->voff = voff;
  e->vlen = (uint32_t)vlen;
  return uih_cursor_offset(&c, x->entries);
}

static int corrupt(uih_error *err, const char *what, uint64_t where) {
  return uih_corruption(err, "table index: %s (at entry %llu)", what, (unsigned long long)where);
}

/* Block `k` of a numeric index, and its entry count. */
static int num_block(const uih_table_index *x, uint64_t k, uih_num_block *b) {
  size_t start = restart_at(x, k), end = k + 1 < x->nrestarts ? restart_at(x, k + 1) : x->elen;
  uint32_t count = (uint32_t)(k + 1 < x->nrestarts ? x->interval : x->n - k * x->interval);
  if (start > end) return -1;
  uih_cursor c = entries_from(x, start);
  const uint8_t *block = uih_cursor_take(&c, end - start);
  return block ? uih_num_block_parse(block, end - start, count, b) : -1;
}

/* The checks every entry passes in either layout: its value follows the
 * previous one inside the data section, its key is above the previous. */
static int check_entry(const uih_table_index *x, uint64_t i, const entry *e, const entry *prev,
                       uih_error *err) {
  uint64_t expect = i == 0 ? 0 : prev->voff + prev->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  if (e->voff != expect) return corrupt(err, "value does not follow the previous one", i);
  if (e->voff > x->data_size || e->vlen + (uint64_t)UIH_TABLE_VALUE_CHECKSUM_SIZE > x->data_size - e->voff)
    return corrupt(err, "value lies outside the data section", i);
  if (i > 0 && uih_table_compare(prev->key, prev->klen, prev->trailer, e->key, e->klen, e->trailer) >= 0)
    return corrupt(err, "keys are not in increasing order", i);
  return UIH_OK;
}

/* The last entry's value (at last_voff, last_vlen bytes and its checksum)
 * ends the data section; an index of no entries has no data. */
static int check_end(const uih_table_index *x, uint64_t last_voff, uint32_t last_vlen, uih_error *err) {
  if (x->n > 0 && last_voff + last_vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE != x->data_size)
    return corrupt(err, "values do not end where the data section ends", x->n - 1);
  if (x->n == 0 && x->data_size != 0) return corrupt(err, "data without entries", 0);
  return UIH_OK;
}

/* A key's first 8 bytes as a big-endian number, zero padded: k1 < k2
 * implies first8_of(k1) <= first8_of(k2). */
static uint64_t first8_of(const uint8_t *key, size_t len) {
  uint8_t head[8] = {0};
  if (len) memcpy(head, key, len < 8 ? len : 8);
  return uih_load_be64(head);
}

/* Blocks [*lo, *hi) start with keys whose first 8 bytes are `q8`; those
 * before *lo start below any key with them, those from *hi on above. */
static void first8_range(const uih_table_index *x, uint64_t q8, uint64_t *lo, uint64_t *hi) {
  const uint64_t *first = x->first8;
  uint64_t a = 0, z = x->nrestarts;
  while (a < z) {
    uint64_t mid = a + (z - a) / 2;
    if (first[mid] < q8) a = mid + 1;
    else z = mid;
  }
  *lo = a;
  for (z = x->nrestarts; a < z;) {
    uint64_t mid = a + (z - a) / 2;
    if (first[mid] <= q8) a = mid + 1;
    else z = mid;
  }
  *hi = a;
}

/* The last entry checked, as numbers: what the next must follow. */
typedef struct num_last {
  uint64_t u, g, t, trailer, voff;
  uint32_t vlen;
} num_last;

/* Entries [i0, i0 + b->count) of block `b` checked entry by entry, as keys
 * (the common checks): the first failure, named. `last` is the entry
 * before i0 (ignored for i0 == 0) and becomes the block's last. */
static int walk_block(const uih_table_index *x, const uih_num_block *b, uint64_t i0, num_last *last,
                      uih_error *err) {
  uint8_t keys[2][UIH_KEY_SIZE];
  entry e[2] = {{keys[0], UIH_KEY_SIZE, last->trailer, last->voff, last->vlen},
                {keys[1], UIH_KEY_SIZE, 0, 0, 0}};
  uih_store_be64(keys[0], last->u);
  uih_store_be16(keys[0] + 8, (uint16_t)last->g);
  uih_store_be64(keys[0] + 10, last->t);
  for (uint32_t j = 0; j < b->count; j++) {
    entry *cur = &e[(j + 1) & 1], *prev = &e[j & 1];
    if (uih_num_entry_checked(b, j, cur->key, &cur->trailer, &cur->vlen) != 0)
      return corrupt(err, "a field overflows its frame of reference", i0 + j);
    cur->voff = j == 0 ? b->voff0 : prev->voff + prev->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    int rc = check_entry(x, i0 + j, cur, prev, err);
    if (rc != UIH_OK) return rc;
  }
  const entry *end = &e[b->count & 1];
  *last = (num_last){uih_load_be64(end->key), uih_load_be16(end->key + 8), uih_load_be64(end->key + 10),
                     end->trailer, end->voff, end->vlen};
  return UIH_OK;
}

/* The same checks on numbers, without the keys' bytes: every field inside
 * its frame, each (u, g, t) above the one before (an equal one with a lower
 * trailer: internal-key order), each value right after the one before and
 * inside the data section. 1 when every entry passes (`last` becomes the
 * block's last), 0 when one does not: the walk then names it. Passes no
 * entry the walk would fail. */
static int screen_block(const uih_table_index *x, const uih_num_block *b, uint64_t i0, num_last *last) {
  static const uint64_t limit[UIH_NUM_COLUMNS] = {UINT64_MAX, UINT16_MAX, UINT64_MAX, UINT64_MAX,
                                                  UINT32_MAX};
  uint64_t room[UIH_NUM_COLUMNS];
  for (int c = 0; c < UIH_NUM_COLUMNS; c++) {
    if (b->base[c] > limit[c]) return 0;
    room[c] = limit[c] - b->base[c];
  }
  num_last l = *last;
  uint64_t end = i0 == 0 ? 0 : l.voff + l.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  if (b->voff0 != end) return 0;
  for (uint32_t j = 0; j < b->count; j++) {
    uint64_t f[UIH_NUM_COLUMNS];
    for (int c = 0; c < UIH_NUM_COLUMNS; c++) {
      f[c] = uih_pack_get_padded(b->col[c], b->w[c], j);
      if (f[c] > room[c]) return 0;
    }
    const uint64_t u = b->base[UIH_NUM_U] + f[UIH_NUM_U], g = b->base[UIH_NUM_G] + f[UIH_NUM_G];
    const uint64_t t = b->base[UIH_NUM_T] + f[UIH_NUM_T], tr = b->base[UIH_NUM_TRAILER] + f[UIH_NUM_TRAILER];
    const uint64_t len = b->base[UIH_NUM_LEN] + f[UIH_NUM_LEN];
    if (i0 + j > 0 &&
        !(u > l.u || (u == l.u && (g > l.g || (g == l.g && (t > l.t || (t == l.t && tr < l.trailer)))))))
      return 0;
    if (end > x->data_size || len + UIH_TABLE_VALUE_CHECKSUM_SIZE > x->data_size - end) return 0;
    l = (num_last){u, g, t, tr, end, (uint32_t)len};
    end += len + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  }
  *last = l;
  return 1;
}

/* Numeric layout: every block parses, every field fits, then the common
 * checks — on numbers, a block at a time; a block that fails them is
 * walked again entry by entry, which names the entry at fault. */
static int validate_numeric(uih_table_index *x, uih_error *err) {
  if (x->n > 0 && x->max_key != UIH_KEY_SIZE)
    return corrupt(err, "numeric layout with keys that are not 18 bytes", 0);
  if (x->nrestarts > 0 && restart_at(x, 0) != 0) return corrupt(err, "first block is not at offset 0", 0);
  num_last last = {0, 0, 0, 0, 0, 0};
  for (uint64_t k = 0; k < x->nrestarts; k++) {
    uih_num_block b;
    const uint64_t i0 = k * x->interval;
    if (num_block(x, k, &b) != 0) return corrupt(err, "malformed block", i0);
    if (!screen_block(x, &b, i0, &last)) {
      int rc = walk_block(x, &b, i0, &last, err);
      if (rc != UIH_OK) return rc;
    }
    /* The first entry's u, not the frame: a file may start a column above 0. */
    x->first8[k] = b.base[UIH_NUM_U] + uih_pack_get_padded(b.col[UIH_NUM_U], b.w[UIH_NUM_U], 0);
  }
  return check_end(x, last.voff, last.vlen, err);
}

/* Walks every entry once: structure, strictly increasing keys, restart
 * offsets where the restarts say, values tiling the data section. */
static int validate(uih_table_index *x, uih_error *err) {
  if (x->layout == UIH_TABLE_LAYOUT_NUMERIC) return validate_numeric(x, err);
  uint8_t *cur = malloc(x->max_key + 1), *prev_key = malloc(x->max_key + 1);
  if (!cur || !prev_key) {
    free(cur);
    free(prev_key);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "table index: out of memory");
  }
  entry e = {cur, 0, 0, 0, 0}, prev = {prev_key, 0, 0, 0, 0};
  size_t at = 0;
  int rc = UIH_OK;
  for (uint64_t i = 0; i < x->n && rc == UIH_OK; i++) {
    int restart = i % x->interval == 0;
    if (restart && restart_at(x, i / x->interval) != at) rc = corrupt(err, "restart offset does not match", i);
    else if (at >= x->elen) rc = corrupt(err, "entries end early", i);
    else if (!(at = parse_entry(x, at, restart, &e))) rc = corrupt(err, "malformed entry", i);
    else rc = check_entry(x, i, &e, &prev, err);
    if (restart && rc == UIH_OK) x->first8[i / x->interval] = first8_of(e.key, e.klen);
    memcpy(prev.key, e.key, e.klen);
    prev.klen = e.klen;
    prev.trailer = e.trailer;
    prev.voff = e.voff;
    prev.vlen = e.vlen;
  }
  if (rc == UIH_OK && at != x->elen) rc = corrupt(err, "bytes after the last entry", x->n);
  if (rc == UIH_OK) rc = check_end(x, e.voff, e.vlen, err);
  free(cur);
  free(prev_key);
  return rc;
}

/* The checksum and the header of x->block, and where its regions lie. */
static int parse_header(uih_table_index *x, uint64_t data_size, uih_error *err) {
  const uint8_t *bytes = x->block;
  const size_t len = x->len;
  uih_cursor sum = uih_cursor_make(bytes + len - 8, 8);
  if (uih_cursor_u64(&sum) != XXH3_64bits(bytes, len - 8))
    return uih_corruption(err, "table index: checksum mismatch over %zu bytes", len - 8);
  uih_cursor c = uih_cursor_make(bytes, len - 8);
  uint32_t magic = uih_cursor_u32(&c);
  uint8_t version = uih_cursor_u8(&c), layout = uih_cursor_u8(&c);
  uint16_t interval = uih_cursor_u16(&c);
  uint64_t n = uih_cursor_varint(&c), nrestarts = uih_cursor_varint(&c);
  uint64_t max_key = uih_cursor_varint(&c), elen = uih_cursor_varint(&c);
  if (c.bad || magic != UIH_TABLE_INDEX_MAGIC)
    return uih_corruption(err, "table index: bad magic or truncated header");
  if (version != 1 && version != UIH_TABLE_INDEX_VERSION)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "table index version %u is not supported (this build reads 1 to %u)", version,
                         UIH_TABLE_INDEX_VERSION);
  if (layout > (version == 1 ? UIH_TABLE_LAYOUT_PREFIX : UIH_TABLE_LAYOUT_NUMERIC))
    return uih_corruption(err, "table index: unknown layout %u in version %u", layout, version);
  if (interval == 0 || interval > 1024 || nrestarts != (n + interval - 1) / interval ||
      max_key > (1u << 30) || elen > uih_cursor_left(&c) || nrestarts > (uih_cursor_left(&c) - elen) / 4 ||
      uih_cursor_left(&c) - elen != nrestarts * 4)
    return uih_corruption(err, "table index: header fields are inconsistent (%llu entries, "
                          "%llu restarts, interval %u)", (unsigned long long)n,
                          (unsigned long long)nrestarts, interval);
  x->layout = layout == UIH_TABLE_LAYOUT_NUMERIC ? UIH_TABLE_LAYOUT_NUMERIC : UIH_TABLE_LAYOUT_PREFIX;
  x->entries = uih_cursor_take(&c, (size_t)elen);
  x->elen = (size_t)elen;
  x->restarts = uih_cursor_take(&c, 4 * (size_t)nrestarts);
  x->nrestarts = nrestarts;
  x->n = n;
  x->interval = interval;
  x->max_key = (size_t)max_key;
  x->data_size = data_size;
  return UIH_OK;
}

int uih_table_index_open(const uint8_t *bytes, size_t len, uint64_t data_size,
                         uih_table_index **out, uih_error *err) {
  UIH_RETURN_IF(!out, err, UIH_ERR_INVALID_ARGUMENT, "table_index_open: NULL out");
  *out = NULL;
  if (!bytes || len < 8 + 8)
    return uih_corruption(err, "table index: %zu bytes is too short", bytes ? len : 0);
  uint8_t *copy = malloc(len + UIH_TABLE_INDEX_SLACK);
  UIH_RETURN_IF(!copy, err, UIH_ERR_NO_MEMORY, "table index: out of memory");
  memcpy(copy, bytes, len);
  return uih_table_index_adopt(copy, len, data_size, out, err);
}

int uih_table_index_adopt(uint8_t *bytes, size_t len, uint64_t data_size, uih_table_index **out,
                          uih_error *err) {
  _Static_assert(UIH_TABLE_INDEX_SLACK >= UIH_PACK_PAD, "a column's last value is one padded load");
  if (!out) {
    free(bytes);
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "table_index_adopt: NULL out");
  }
  *out = NULL;
  if (!bytes || len < 8 + 8) {
    free(bytes);
    return uih_corruption(err, "table index: %zu bytes is too short", bytes ? len : 0);
  }
  memset(bytes + len, 0, UIH_TABLE_INDEX_SLACK);
  uih_table_index *x = calloc(1, sizeof *x);
  if (!x) {
    free(bytes);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "table index: out of memory");
  }
  x->block = bytes;  /* freed with x from here on */
  x->len = len;
  int rc = parse_header(x, data_size, err);
  if (rc == UIH_OK && !(x->first8 = malloc(sizeof(uint64_t) * (x->nrestarts ? x->nrestarts : 1))))
    rc = uih_error_set(err, UIH_ERR_NO_MEMORY, "table index: out of memory");
  if (rc == UIH_OK) rc = validate(x, err);
  if (rc != UIH_OK) {
    uih_table_index_free(x);
    return rc;
  }
  *out = x;
  return UIH_OK;
}

void uih_table_index_free(uih_table_index *x) {
  if (!x) return;
  free(x->block);
  free(x->first8);
  free(x);
}

uint64_t uih_table_index_entries(const uih_table_index *x) { return x->n; }
uint64_t uih_table_index_data_size(const uih_table_index *x) { return x->data_size; }
size_t uih_table_index_memory(const uih_table_index *x) {
  return x->len + UIH_TABLE_INDEX_SLACK + sizeof *x + sizeof(uint64_t) * x->nrestarts;
}
size_t uih_table_index_max_key(const uih_table_index *x) { return x->max_key; }
uih_table_layout uih_table_index_layout(const uih_table_index *x) { return x->layout; }

/* ---- cursors (the index was validated: parsing cannot fail) ---------------- */

int uih_table_cursor_init(uih_table_cursor *c, const uih_table_index *x, uih_error *err) {
  memset(c, 0, sizeof *c);
  c->idx = x;
  c->key = malloc(x->max_key + 1);
  UIH_RETURN_IF(!c->key, err, UIH_ERR_NO_MEMORY, "table cursor: out of memory");
  c->pos = x->n;
  return UIH_OK;
}

int uih_table_cursor_init_buf(uih_table_cursor *c, const uih_table_index *x, uint8_t *buf,
                              size_t buflen, uih_error *err) {
  memset(c, 0, sizeof *c);
  c->idx = x;
  c->pos = x->n;
  UIH_RETURN_IF(buflen < x->max_key + 1, err, UIH_ERR_OUT_OF_RANGE,
                "table cursor: a %zu-byte buffer cannot hold keys of %zu bytes", buflen, x->max_key);
  c->key = buf;
  return UIH_OK;
}

void uih_table_cursor_free(uih_table_cursor *c) {
  free(c->key);
  c->key = NULL;
}

/* Parses entry `c->pos` at byte `c->at` into the cursor. */
static void load(uih_table_cursor *c) {
  const uih_table_index *x = c->idx;
  entry e = {c->key, c->klen, c->trailer, c->voff, c->vlen};
  c->at = parse_entry(x, c->at, c->pos % x->interval == 0, &e);
  c->klen = e.klen;
  c->trailer = e.trailer;
  c->voff = e.voff;
  c->vlen = e.vlen;
}

/* Numeric layout: key, trailer and value length of entry `j` of block `b`
 * into the cursor (the caller sets pos and voff). */
static void num_set(uih_table_cursor *c, const uih_num_block *b, uint32_t j) {
  uih_num_entry(b, j, c->key, &c->trailer, &c->vlen);
  c->klen = UIH_KEY_SIZE;
}

/* The same for entry `c->pos`, parsing its block into `b`; returns j. */
static uint32_t num_load(uih_table_cursor *c, uih_num_block *b) {
  const uih_table_index *x = c->idx;
  num_block(x, c->pos / x->interval, b);
  uint32_t j = (uint32_t)(c->pos % x->interval);
  num_set(c, b, j);
  return j;
}

void uih_table_cursor_goto(uih_table_cursor *c, uint64_t pos) {
  const uih_table_index *x = c->idx;
  if (pos >= x->n) {
    c->pos = x->n;
    return;
  }
  if (x->layout == UIH_TABLE_LAYOUT_NUMERIC) {
    uih_num_block b;
    c->pos = pos;
    c->voff = uih_num_voff(&b, num_load(c, &b));
    return;
  }
  uint64_t r = pos / x->interval;
  c->pos = r * x->interval;
  c->at = restart_at(x, r);
  load(c);
  while (c->pos < pos) {
    c->pos++;
    load(c);
  }
}

void uih_table_cursor_first(uih_table_cursor *c) { uih_table_cursor_goto(c, 0); }
void uih_table_cursor_last(uih_table_cursor *c) {
  uih_table_cursor_goto(c, c->idx->n ? c->idx->n - 1 : 0);
}

void uih_table_cursor_next(uih_table_cursor *c) {
  if (c->pos >= c->idx->n) return;
  if (++c->pos >= c->idx->n) return;
  if (c->idx->layout != UIH_TABLE_LAYOUT_NUMERIC) {
    load(c);
    return;
  }
  uih_num_block b;
  uint64_t voff = c->voff + c->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE; /* follows the current value */
  num_load(c, &b);
  c->voff = voff;
}

void uih_table_cursor_prev(uih_table_cursor *c) {
  if (c->pos == 0 || c->pos >= c->idx->n) {
    c->pos = c->idx->n;
    return;
  }
  if (c->idx->layout != UIH_TABLE_LAYOUT_NUMERIC) {
    uih_table_cursor_goto(c, c->pos - 1);
    return;
  }
  uih_num_block b;
  uint64_t end = c->voff; /* where the previous value's checksum ends */
  c->pos--;
  num_load(c, &b);
  c->voff = end - UIH_TABLE_VALUE_CHECKSUM_SIZE - c->vlen;
}

/* ---- stepping back through a prefix-layout run ---------------------------- */

/* A decoded entry of the run: the cursor's fields after it was loaded. */
typedef struct back_entry {
  size_t at;
  uint64_t trailer, voff;
  uint32_t vlen;
  uint32_t klen;
} back_entry;

struct uih_table_backstep {
  const uih_table_index *idx;
  uint64_t first;  /* entry ordinal of the run's first entry held */
  uint32_t count;  /* entries held: first .. first + count - 1 */
  back_entry *e;   /* interval of them */
  uint8_t *keys;   /* interval keys of max_key bytes each */
};

#define BACKSTEP_MAX_BYTES (1u << 20)

uih_table_backstep *uih_table_backstep_create(const uih_table_index *x) {
  if (x->layout != UIH_TABLE_LAYOUT_PREFIX || x->interval < 2) return NULL;
  size_t stride = x->max_key ? x->max_key : 1;
  if ((size_t)x->interval * (stride + sizeof(back_entry)) > BACKSTEP_MAX_BYTES) return NULL;
  uih_table_backstep *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->idx = x;
  b->e = malloc(x->interval * sizeof *b->e);
  b->keys = malloc(x->interval * stride);
  if (!b->e || !b->keys) {
    uih_table_backstep_free(b);
    return NULL;
  }
  return b;
}

void uih_table_backstep_free(uih_table_backstep *b) {
  if (!b) return;
  free(b->e);
  free(b->keys);
  free(b);
}

void uih_table_cursor_prev_with(uih_table_cursor *c, uih_table_backstep *b) {
  const uih_table_index *x = c->idx;
  if (!b || b->idx != x || c->pos == 0 || c->pos >= x->n) {
    uih_table_cursor_prev(c);
    return;
  }
  uint64_t want = c->pos - 1, start = want - want % x->interval;
  size_t stride = x->max_key ? x->max_key : 1;
  if (b->count == 0 || b->first != start || want - start >= b->count) {
    /* Decode the run from its restart up to `want`, keeping every entry. */
    b->count = 0;
    b->first = start;
    uih_table_cursor_goto(c, start);
    for (;;) {
      back_entry *e = &b->e[b->count];
      *e = (back_entry){c->at, c->trailer, c->voff, c->vlen, (uint32_t)c->klen};
      memcpy(b->keys + b->count * stride, c->key, c->klen);
      b->count++;
      if (c->pos == want) return; /* the cursor is there already */
      uih_table_cursor_next(c);
    }
  }
  const back_entry *e = &b->e[want - start];
  c->pos = want;
  c->at = e->at;
  c->trailer = e->trailer;
  c->voff = e->voff;
  c->vlen = e->vlen;
  c->klen = e->klen;
  memcpy(c->key, b->keys + (want - start) * stride, e->klen);
}

/* The full key of restart `r` (restart entries share nothing). */
static void restart_key(const uih_table_index *x, uint64_t r, const uint8_t **key, size_t *klen,
                        uint64_t *trailer) {
  uih_cursor c = entries_from(x, restart_at(x, r));
  uint8_t head = uih_cursor_u8(&c);
  uint64_t unshared = (head >> 4) & 7;
  if (unshared == 7) unshared = uih_cursor_varint(&c);
  *key = uih_cursor_take(&c, unshared);
  *klen = *key ? (size_t)unshared : 0; /* validated at open: never short */
  if (!*key) *key = x->entries;
  *trailer = uih_cursor_varint(&c);
}

/* A seek target as the numeric layout sees it: u, g, t when it is 18
 * bytes long (compared as numbers), else only u (its first 8 bytes, zero
 * padded: a lower bound of the key's order among 18-byte keys). */
typedef struct num_target {
  const uint8_t *key;
  size_t len;
  uint64_t u, t, trailer;
  uint16_t g;
} num_target;

static num_target num_target_of(const uint8_t *key, size_t len, uint64_t trailer) {
  num_target q = {key, len, first8_of(key, len), 0, trailer, 0};
  if (len == UIH_KEY_SIZE) {
    q.g = uih_load_be16(key + 8);
    q.t = uih_load_be64(key + 10);
  }
  return q;
}

/* Entry j of block b against the target, in internal-key order. */
static int num_compare(const uih_num_block *b, uint32_t j, const num_target *q) {
  if (q->len == UIH_KEY_SIZE) {
    uint64_t u = b->base[UIH_NUM_U] + uih_pack_get_padded(b->col[UIH_NUM_U], b->w[UIH_NUM_U], j);
    if (u != q->u) return u < q->u ? -1 : 1;
    uint16_t g = (uint16_t)(b->base[UIH_NUM_G] + uih_pack_get_padded(b->col[UIH_NUM_G], b->w[UIH_NUM_G], j));
    if (g != q->g) return g < q->g ? -1 : 1;
    uint64_t t = b->base[UIH_NUM_T] + uih_pack_get_padded(b->col[UIH_NUM_T], b->w[UIH_NUM_T], j);
    if (t != q->t) return t < q->t ? -1 : 1;
    uint64_t tr = b->base[UIH_NUM_TRAILER] + uih_pack_get_padded(b->col[UIH_NUM_TRAILER], b->w[UIH_NUM_TRAILER], j);
    return tr == q->trailer ? 0 : tr > q->trailer ? -1 : 1; /* newer first */
  }
  uint8_t k[UIH_KEY_SIZE];
  uint64_t tr;
  uint32_t vlen;
  uih_num_entry(b, j, k, &tr, &vlen);
  return uih_table_compare(k, sizeof k, tr, q->key, q->len, q->trailer);
}

/* Numeric layout: the block is found by the blocks' first user ids (a
 * small array: one comparison per step, no block touched), then among the
 * blocks starting with the target's user by their first keys; then a
 * binary search inside the block, whose entries are all reachable directly. */
static void num_seek(uih_table_cursor *c, const uint8_t *ukey, size_t uklen, uint64_t trailer) {
  const uih_table_index *x = c->idx;
  if (x->n == 0) {
    c->pos = 0;
    return;
  }
  num_target q = num_target_of(ukey, uklen, trailer);
  uint64_t lo, hi;
  first8_range(x, q.u, &lo, &hi);
  /* The last block whose first key is below the target. */
  uint64_t blk = lo ? lo - 1 : 0;
  uih_num_block b;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    num_block(x, mid, &b);
    if (num_compare(&b, 0, &q) < 0) blk = mid, lo = mid + 1;
    else hi = mid;
  }
  num_block(x, blk, &b);
  uint32_t a = 0, z = b.count; /* first entry of the block not below the target */
  while (a < z) {
    uint32_t mid = a + (z - a) / 2;
    if (num_compare(&b, mid, &q) < 0) a = mid + 1;
    else z = mid;
  }
  if (a == b.count) {
    uih_table_cursor_goto(c, (blk + 1) * x->interval);
    return;
  }
  c->pos = blk * x->interval + a;
  num_set(c, &b, a);
  c->voff = uih_num_voff(&b, a);
}

void uih_table_cursor_seek(uih_table_cursor *c, const uint8_t *ukey, size_t uklen, uint64_t trailer) {
  const uih_table_index *x = c->idx;
  if (x->layout == UIH_TABLE_LAYOUT_NUMERIC) {
    num_seek(c, ukey, uklen, trailer);
    return;
  }
  /* The last restart whose key is below the target (or the first); scan
   * from there. Only restarts sharing the target's first 8 bytes need
   * their keys compared. */
  uint64_t lo, hi;
  first8_range(x, first8_of(ukey, uklen), &lo, &hi);
  uint64_t r = lo ? lo - 1 : 0;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    const uint8_t *k;
    size_t kl;
    uint64_t tr;
    restart_key(x, mid, &k, &kl, &tr);
    if (uih_table_compare(k, kl, tr, ukey, uklen, trailer) < 0) r = mid, lo = mid + 1;
    else hi = mid;
  }
  uih_table_cursor_goto(c, r * x->interval);
  while (c->pos < x->n && uih_table_compare(c->key, c->klen, c->trailer, ukey, uklen, trailer) < 0)
    uih_table_cursor_next(c);
}

void uih_table_cursor_seek_prev(uih_table_cursor *c, const uint8_t *ukey, size_t uklen,
                                uint64_t trailer) {
  uih_table_cursor_seek(c, ukey, uklen, trailer);
  if (c->pos >= c->idx->n) {
    uih_table_cursor_last(c);
    return;
  }
  if (uih_table_compare(c->key, c->klen, c->trailer, ukey, uklen, trailer) > 0) uih_table_cursor_prev(c);
}
