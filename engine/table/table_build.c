/* UihTable writer: values (with checksums) to the file, index in memory,
 * serialized at the end. Format in uih/table.h. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bits.h"

#include "error_internal.h"
#include "table_format.h"
#include "table_numeric.h"
#include "uih/table.h"
#include "wbuf.h"


struct uih_table_builder {
  uih_table_write_fn write;
  void *ctx;
  uih_table_build_opts opts;
  int prefix;        /* building the prefix layout */
  int numeric;       /* building the numeric layout: every key so far fits it */
  uih_num_writer num;
  int status;        /* sticky */
  uih_error error;   /* its message */
  uih_wbuf entries;  /* the entries area */
  uih_wbuf restarts; /* u32 per restart */
  uih_wbuf index;    /* the serialized block (after finish) */
  uih_wbuf prev;     /* previous user key */
  uint64_t prev_trailer;
  size_t max_key;
  uih_table_build_stats st;
  int finished;
};

uint32_t uih_table_value_checksum(const void *value, size_t len) {
  return uih_checksum32(value, len);
}

int uih_table_compare(const uint8_t *a, size_t alen, uint64_t atrailer, const uint8_t *b,
                      size_t blen, uint64_t btrailer) {
  size_t n = alen < blen ? alen : blen;
  int r = n ? memcmp(a, b, n) : 0;
  if (r) return r;
  if (alen != blen) return alen < blen ? -1 : 1;
  if (atrailer != btrailer) return atrailer > btrailer ? -1 : 1; /* newer first */
  return 0;
}

int uih_table_builder_create(uih_table_write_fn write, void *ctx, const uih_table_build_opts *opts,
                             uih_table_builder **out, uih_error *err) {
  UIH_RETURN_IF(!write || !out, err, UIH_ERR_INVALID_ARGUMENT, "table_builder_create: NULL argument");
  uih_table_build_opts o = UIH_TABLE_BUILD_OPTS_DEFAULT;
  if (opts) {
    if (opts->restart_interval) o.restart_interval = opts->restart_interval;
    if (opts->block_entries) o.block_entries = opts->block_entries;
    o.layout = opts->layout;
  }
  UIH_RETURN_IF(o.restart_interval > 1024, err, UIH_ERR_INVALID_ARGUMENT,
                "restart interval %u is outside [1, 1024]", o.restart_interval);
  UIH_RETURN_IF(o.block_entries > 1024, err, UIH_ERR_INVALID_ARGUMENT,
                "index block of %u entries is outside [1, 1024]", o.block_entries);
  UIH_RETURN_IF(o.layout != UIH_TABLE_LAYOUT_AUTO && o.layout != UIH_TABLE_LAYOUT_PREFIX &&
                    o.layout != UIH_TABLE_LAYOUT_NUMERIC,
                err, UIH_ERR_INVALID_ARGUMENT, "unknown index layout %d", (int)o.layout);
  uih_table_builder *b = calloc(1, sizeof *b);
  UIH_RETURN_IF(!b, err, UIH_ERR_NO_MEMORY, "table_builder_create: out of memory");
  b->write = write;
  b->ctx = ctx;
  b->opts = o;
  b->prefix = o.layout != UIH_TABLE_LAYOUT_NUMERIC;
  b->numeric = o.layout != UIH_TABLE_LAYOUT_PREFIX;
  if (b->numeric && uih_num_writer_init(&b->num, o.block_entries) != 0) {
    free(b);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "table_builder_create: out of memory");
  }
  *out = b;
  return UIH_OK;
}

void uih_table_builder_free(uih_table_builder *b) {
  if (!b) return;
  uih_wbuf_free(&b->entries);
  uih_wbuf_free(&b->restarts);
  uih_wbuf_free(&b->index);
  uih_wbuf_free(&b->prev);
  uih_num_writer_free(&b->num);
  free(b);
}

static int fail(uih_table_builder *b, uih_error *err, int code, const char *msg) {
  b->status = code;
  uih_error_set(&b->error, code, "%s", msg);
  return uih_error_set(err, code, "%s", msg);
}

static int sticky(const uih_table_builder *b, uih_error *err) {
  if (err) *err = b->error;
  return b->status;
}

/* Appends the prefix layout's entry for a key (format in uih/table.h). */
static int add_prefix_entry(uih_table_builder *b, const uint8_t *ukey, size_t uklen,
                            uint64_t trailer, size_t vlen) {
  int restart = b->st.entries % b->opts.restart_interval == 0;
  size_t shared = 0;
  if (!restart) {
    size_t n = uklen < b->prev.len ? uklen : b->prev.len;
    while (shared < n && b->prev.data[shared] == ukey[shared]) shared++;
  }
  size_t unshared = uklen - shared;
  int same_trailer = !restart && trailer == b->prev_trailer;
  uih_wbuf *e = &b->entries;
  if (restart) {
    if (e->len > UINT32_MAX) return UIH_ERR_OUT_OF_RANGE;
    uih_wbuf_u32(&b->restarts, (uint32_t)e->len);
  }
  uint8_t head = (uint8_t)((shared < 15 ? shared : 15) | (unshared < 7 ? unshared : 7) << 4 |
                           same_trailer << 7);
  uih_wbuf_u8(e, head);
  if (shared >= 15) uih_wbuf_varint(e, shared);
  if (unshared >= 7) uih_wbuf_varint(e, unshared);
  uih_wbuf_put(e, ukey + shared, unshared);
  if (!same_trailer) uih_wbuf_varint(e, trailer);
  if (restart) uih_wbuf_varint(e, b->st.data_size);
  uih_wbuf_varint(e, vlen);

  return UIH_OK;
}

int uih_table_builder_add(uih_table_builder *b, const uint8_t *ukey, size_t uklen,
                          uint64_t trailer, const void *value, size_t vlen, uih_error *err) {
  if (b->status != UIH_OK) return sticky(b, err);
  if (b->finished) return fail(b, err, UIH_ERR_INVALID_ARGUMENT, "table builder: add after finish");
  if (vlen > UINT32_MAX) return fail(b, err, UIH_ERR_OUT_OF_RANGE, "table builder: value over 4 GiB");
  if (b->st.entries > 0 &&
      uih_table_compare(b->prev.data, b->prev.len, b->prev_trailer, ukey, uklen, trailer) >= 0)
    return fail(b, err, UIH_ERR_INVALID_ARGUMENT,
                "table builder: keys must be added in strictly increasing internal-key order");

  if (b->numeric && uklen != UIH_KEY_SIZE) {
    if (!b->prefix) {
      uih_error e;
      uih_error_set(&e, UIH_ERR_INVALID_ARGUMENT,
                    "table builder: the numeric index layout needs %d-byte keys; entry %llu has %zu bytes",
                    UIH_KEY_SIZE, (unsigned long long)b->st.entries, uklen);
      return fail(b, err, e.code, e.msg);
    }
    b->numeric = 0; /* this file gets the prefix layout */
    uih_num_writer_free(&b->num);
  }
  /* The value and its checksum go straight to the file. */
  uint32_t sum = uih_table_value_checksum(value, vlen);
  int rc = vlen ? b->write(b->ctx, value, vlen) : UIH_OK;
  if (rc == UIH_OK) rc = b->write(b->ctx, &sum, sizeof sum);
  if (rc != UIH_OK) return fail(b, err, rc, "table builder: writing a value failed");

  if (b->numeric) uih_num_writer_add(&b->num, ukey, trailer, (uint32_t)vlen, b->st.data_size);
  if ((b->prefix && add_prefix_entry(b, ukey, uklen, trailer, vlen) != UIH_OK) || b->num.too_big)
    return fail(b, err, UIH_ERR_OUT_OF_RANGE, "table builder: index over 4 GiB");
  uih_wbuf_reset(&b->prev);
  uih_wbuf_put(&b->prev, ukey, uklen);
  uih_wbuf_reserve(&b->prev, 1);
  if (b->entries.oom || b->restarts.oom || b->prev.oom || b->num.oom)
    return fail(b, err, UIH_ERR_NO_MEMORY, "table builder: out of memory for the index");
  b->prev_trailer = trailer;
  b->max_key = uklen > b->max_key ? uklen : b->max_key;
  b->st.entries++;
  b->st.data_size += vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  b->st.raw_key_size += uklen + 8;
  b->st.raw_value_size += vlen;
  return UIH_OK;
}

int uih_table_builder_finish(uih_table_builder *b, const uint8_t **index, size_t *len,
                             uih_error *err) {
  if (b->status != UIH_OK) return sticky(b, err);
  if (b->finished) return fail(b, err, UIH_ERR_INVALID_ARGUMENT, "table builder: finished twice");
  b->finished = 1;
  uih_num_writer_finish(&b->num);
  if (b->num.too_big) return fail(b, err, UIH_ERR_OUT_OF_RANGE, "table builder: index over 4 GiB");
  if (b->num.oom) return fail(b, err, UIH_ERR_NO_MEMORY, "table builder: out of memory for the index");
  /* Numeric when every key fits it and it is smaller (or was asked for). */
  int numeric = b->numeric && (!b->prefix || b->num.blocks.len + b->num.offsets.len <
                                                 b->entries.len + b->restarts.len);
  const uih_wbuf *entries = numeric ? &b->num.blocks : &b->entries;
  const uih_wbuf *offsets = numeric ? &b->num.offsets : &b->restarts;
  uih_wbuf *o = &b->index;
  uih_wbuf_reset(o);
  uih_wbuf_u32(o, UIH_TABLE_INDEX_MAGIC);
  uih_wbuf_u8(o, UIH_TABLE_INDEX_VERSION);
  uih_wbuf_u8(o, numeric ? UIH_TABLE_LAYOUT_NUMERIC : UIH_TABLE_LAYOUT_PREFIX);
  uih_wbuf_u16(o, (uint16_t)(numeric ? b->opts.block_entries : b->opts.restart_interval));
  uih_wbuf_varint(o, b->st.entries);
  uih_wbuf_varint(o, offsets->len / 4);
  uih_wbuf_varint(o, b->max_key);
  uih_wbuf_varint(o, entries->len);
  uih_wbuf_put(o, entries->data, entries->len);
  uih_wbuf_put(o, offsets->data, offsets->len);
  uint64_t sum = o->oom ? 0 : XXH3_64bits(o->data, o->len);
  uih_wbuf_u64(o, sum);
  if (o->oom) return fail(b, err, UIH_ERR_NO_MEMORY, "table builder: out of memory for the index");
  /* The entries now live in the block; drop the working copies. */
  uih_wbuf_free(&b->entries);
  uih_wbuf_free(&b->restarts);
  uih_num_writer_free(&b->num);
  b->st.layout = numeric ? UIH_TABLE_LAYOUT_NUMERIC : UIH_TABLE_LAYOUT_PREFIX;
  b->st.index_size = o->len;
  *index = o->data;
  *len = o->len;
  return UIH_OK;
}

void uih_table_builder_stats(const uih_table_builder *b, uih_table_build_stats *out) { *out = b->st; }
