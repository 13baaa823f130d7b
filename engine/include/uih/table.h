/* uihstore — the UihTable file format: values and a memory-resident index.
 *
 * UihTable is the immutable tier's table format (RocksDB glue in plugin/).
 * This module owns the data section and the index; RocksDB's own builders
 * write the properties block, metaindex and footer after them.
 *
 *   +-----------------------------------------------+ offset 0
 *   | data section: for each entry in key order     |
 *   |   value bytes, then u32 low 32 bits of XXH3   |
 *   |   of the value (the per-value checksum)       |
 *   +-----------------------------------------------+ data_size
 *   | index block (below)                           |
 *   +-----------------------------------------------+
 *   | properties block, metaindex block (RocksDB's  |  written by plugin/,
 *   | formats), a 40-byte tail with their checksums,|  drawn in
 *   | footer (UIH_TABLE_MAGIC)                      |  plugin/table/tail.h
 *   +-----------------------------------------------+
 *
 * The values of consecutive keys are adjacent, so all stripes of a user are
 * one contiguous byte range. The metaindex names the index block
 * "uih.index". Index block, format version 2, integers little-endian:
 *
 *   offset  size  field
 *   0          4  magic "UIHI"
 *   4          1  version (2; version 1 is version 2 with layout 0)
 *   5          1  layout: 0 prefix, 1 numeric (below)
 *   6          2  interval R (1..1024): entries per restart or block
 *   8          .  varint entry count n, varint restart/block count,
 *                 varint longest user key, varint entries length E
 *   .          E  entries, in internal-key order (user key ascending,
 *                 then (sequence << 8 | type) descending)
 *   .      4 * r  u32 offset of each restart entry / block in the entries
 *   .          8  XXH3-64 of every byte before it
 *
 * Values start where the previous value's checksum ends.
 *
 * Prefix layout (any keys): every R-th entry is a restart entry.
 *   u8 head: bits 0-3 shared key bytes (15 = varint follows)
 *            bits 4-6 unshared key bytes (7 = varint follows)
 *            bit  7   trailer equals the previous entry's
 *   [varint shared] [varint unshared] unshared key bytes
 *   [varint trailer, (sequence << 8) | type, if bit 7 clear]
 *   [varint value offset: restart entries only]
 *   varint value length
 * Restart entries share nothing and spell their trailer and value offset
 * out.
 *
 * Numeric layout (every user key 18 bytes, as UIH keys are): a key is read
 * as three big-endian numbers, u = bytes 0-7 (user id), g = bytes 8-9
 * (group), t = bytes 10-17 (sign-flipped timestamp), whose order is the
 * bytes' order. Blocks of R entries (the last may be shorter), each
 * decodable on its own and every entry in it reachable without the others:
 *   u8[5]  bit widths of the columns u, g, t, trailer, value length
 *   u64 u0, u16 g0, u64 t0           the columns' frames of reference
 *   varint trailer0, varint length0, varint value offset of entry 0
 *   five bit-packed columns of the block's entries, in that order, each
 *   value minus its frame (value k at bits [k*w, k*w + w) of a
 *   little-endian bit stream, ceil(count*w/8) bytes)
 * u0 is the block's first user id, so consecutive users cost a few bits;
 * UIH keys take about 7 bytes here (frames included) against 12-16 in the
 * prefix layout.
 * The builder picks numeric when every key allows it and it is smaller.
 *
 * Everything read from a file is untrusted: uih_table_index_open() checks
 * the checksum and walks every entry once (order, offsets, restarts) so
 * that lookups afterwards can trust the structure.
 */
#ifndef UIH_TABLE_H
#define UIH_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"
#include "uih/io.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UIH_TABLE_MAGIC UINT64_C(0x5549485461626c31) /* "UIHTabl1" */
#define UIH_TABLE_INDEX_NAME "uih.index"
#define UIH_TABLE_VALUE_CHECKSUM_SIZE 4

/* The trailer that sorts before every entry of a user key: a seek to
 * (key, UIH_TABLE_TRAILER_FIRST) lands on the key's first entry. */
#define UIH_TABLE_TRAILER_FIRST (~UINT64_C(0))

/* Internal-key order: user keys bytewise, then trailers descending. */
int uih_table_compare(const uint8_t *a, size_t alen, uint64_t atrailer, const uint8_t *b,
                      size_t blen, uint64_t btrailer);

/* Low 32 bits of XXH3-64 of a value: the per-value checksum. */
uint32_t uih_table_value_checksum(const void *value, size_t len);

/* ---- writing --------------------------------------------------------------- */

/* Appends bytes to the file being built; returns UIH_OK or an error code
 * (its message is the writer's business). */
typedef int (*uih_table_write_fn)(void *ctx, const void *data, size_t len);

typedef struct uih_table_builder uih_table_builder;

typedef enum uih_table_layout {
  UIH_TABLE_LAYOUT_AUTO = -1,  /* numeric when every key is 18 bytes and it is smaller */
  UIH_TABLE_LAYOUT_PREFIX = 0,
  UIH_TABLE_LAYOUT_NUMERIC = 1 /* a key of another length fails the build */
} uih_table_layout;

typedef struct uih_table_build_opts {
  uint32_t restart_interval; /* prefix layout: entries per restart, 1..1024 (0: 16) */
  uint32_t block_entries;    /* numeric layout: entries per block, 1..1024 (0: 64) */
  uih_table_layout layout;
} uih_table_build_opts;

#define UIH_TABLE_BUILD_OPTS_DEFAULT {16, 64, UIH_TABLE_LAYOUT_AUTO}

/* A builder writing the data section through `write` (starting at file
 * offset 0); `opts` NULL means the defaults. */
int uih_table_builder_create(uih_table_write_fn write, void *ctx, const uih_table_build_opts *opts,
                             uih_table_builder **out, uih_error *err);
void uih_table_builder_free(uih_table_builder *b); /* NULL is fine */

/* Adds one entry; keys must come in strictly increasing internal-key order
 * (UIH_ERR_INVALID_ARGUMENT otherwise). The value goes straight to the
 * file; only the index entry stays in memory. Errors are sticky: after one,
 * every call returns it. */
int uih_table_builder_add(uih_table_builder *b, const uint8_t *ukey, size_t uklen,
                          uint64_t trailer, const void *value, size_t vlen, uih_error *err);

/* Ends the data section and serializes the index; *index / *len stay valid
 * until the builder is freed. The caller writes them after the data. */
int uih_table_builder_finish(uih_table_builder *b, const uint8_t **index, size_t *len,
                             uih_error *err);

typedef struct uih_table_build_stats {
  uint64_t entries;
  uint64_t data_size;  /* bytes written so far, checksums included */
  uint64_t raw_key_size;   /* user keys + 8 per trailer, as RocksDB counts them */
  uint64_t raw_value_size;
  uint64_t index_size;     /* after finish */
  uih_table_layout layout; /* after finish: the layout chosen */
} uih_table_build_stats;

void uih_table_builder_stats(const uih_table_builder *b, uih_table_build_stats *out);

/* ---- reading --------------------------------------------------------------- */

typedef struct uih_table_index uih_table_index;

/* Validates and loads `len` index bytes of a file whose data section is
 * `data_size` bytes; the bytes are copied. UIH_ERR_CORRUPTION names the
 * offset and what is wrong; UIH_ERR_NOT_SUPPORTED an unknown version. */
int uih_table_index_open(const uint8_t *bytes, size_t len, uint64_t data_size,
                         uih_table_index **out, uih_error *err);

/* The same without the copy: `bytes` is a malloc'd block of at least
 * len + UIH_TABLE_INDEX_SLACK bytes (the slack needs no contents), which
 * the index owns from the call on, whatever it returns (freed on failure):
 * an index read from a file goes straight into what the index keeps. */
#define UIH_TABLE_INDEX_SLACK 16
int uih_table_index_adopt(uint8_t *bytes, size_t len, uint64_t data_size, uih_table_index **out,
                          uih_error *err);
void uih_table_index_free(uih_table_index *idx); /* NULL is fine */

uint64_t uih_table_index_entries(const uih_table_index *idx);
uint64_t uih_table_index_data_size(const uih_table_index *idx); /* bytes of the data section */
size_t uih_table_index_memory(const uih_table_index *idx); /* bytes held */
size_t uih_table_index_max_key(const uih_table_index *idx); /* longest user key */
uih_table_layout uih_table_index_layout(const uih_table_index *idx);

/* A position in the index. Plain data, no cleanup; one per thread/iterator;
 * valid while its index is. */
typedef struct uih_table_cursor {
  const uih_table_index *idx;
  uint64_t pos;        /* entry ordinal; == entries when past the end */
  size_t at;           /* byte offset of the next entry in the entries area */
  uint8_t *key;        /* current user key (buffer of the longest key) */
  size_t klen;
  uint64_t trailer;    /* (sequence << 8) | type */
  uint64_t voff;       /* value offset in the data section */
  uint32_t vlen;       /* value length, checksum excluded */
} uih_table_cursor;

/* Cursors need a key buffer of the index's longest user key; this makes
 * one (free with uih_table_cursor_free). */
int uih_table_cursor_init(uih_table_cursor *c, const uih_table_index *idx, uih_error *err);
void uih_table_cursor_free(uih_table_cursor *c);

/* The same with a caller's buffer of `buflen` bytes (no allocation, no
 * free): UIH_ERR_OUT_OF_RANGE if shorter than the longest key. */
int uih_table_cursor_init_buf(uih_table_cursor *c, const uih_table_index *idx, uint8_t *buf,
                              size_t buflen, uih_error *err);

static inline int uih_table_cursor_valid(const uih_table_cursor *c) {
  return c->pos < uih_table_index_entries(c->idx);
}

void uih_table_cursor_first(uih_table_cursor *c);
void uih_table_cursor_last(uih_table_cursor *c);
void uih_table_cursor_next(uih_table_cursor *c);
void uih_table_cursor_prev(uih_table_cursor *c); /* before the first: invalid */
/* First entry >= (ukey, trailer) in internal-key order. */
void uih_table_cursor_seek(uih_table_cursor *c, const uint8_t *ukey, size_t uklen, uint64_t trailer);
/* Last entry <= (ukey, trailer). */
void uih_table_cursor_seek_prev(uih_table_cursor *c, const uint8_t *ukey, size_t uklen,
                                uint64_t trailer);
/* Moves to entry ordinal `pos` (entries: past the end). */
void uih_table_cursor_goto(uih_table_cursor *c, uint64_t pos);

/* Steps back, faster when repeated. In the prefix layout an entry's key is
 * rebuilt from its restart entry onwards, so a plain step back decodes up
 * to R entries; a backstep keeps the run of entries it decoded, so further
 * steps back inside that run are copies (a reverse scan costs about what a
 * forward one does). The numeric layout steps back directly and needs none.
 * uih_table_backstep_create returns NULL when none is needed, or when the
 * run would take more than 1 MiB (long keys): uih_table_cursor_prev_with
 * with NULL is uih_table_cursor_prev. One backstep per cursor; it stays
 * valid while its index is, and holds no pointer into the cursor. */
typedef struct uih_table_backstep uih_table_backstep;
uih_table_backstep *uih_table_backstep_create(const uih_table_index *idx);
void uih_table_backstep_free(uih_table_backstep *b); /* NULL is fine */
void uih_table_cursor_prev_with(uih_table_cursor *c, uih_table_backstep *b);

/* ---- the read path --------------------------------------------------------- */

/* What a reader needs below RocksDB's DB layer (the RocksDB glue reads
 * through it; so can anything reading a table's file directly): which
 * bytes hold which entries, a read of them through uih/io.h, and each value
 * checked.
 *
 * A span: entries [first, end) and their bytes [offset, offset + length)
 * of the data section, values with their checksums. Values are stored in
 * key order, back to back, so a span is one contiguous read. */
typedef struct uih_table_span {
  uint64_t first, end;
  uint64_t offset, length;
} uih_table_span;

/* The span of the entries whose user keys are in [lo, hi) (lo NULL: from
 * the first; hi NULL: to the last), found with the caller's cursor, which
 * is left at entry `end`. No I/O. */
void uih_table_span_keys(uih_table_cursor *c, const uint8_t *lo, size_t lolen, const uint8_t *hi,
                         size_t hilen, uih_table_span *out);

/* The span of the entries of user key `ukey` from the cursor's entry on
 * (the versions at and after a seek); the cursor is left after them. Empty
 * when the cursor is invalid or at another key. */
void uih_table_span_key(uih_table_cursor *c, const uint8_t *ukey, size_t uklen, uih_table_span *out);

/* A read of span `s` from `fd` into `buf` (s->length bytes), for uih_io_read. */
static inline uih_io_req uih_table_span_req(int fd, const uih_table_span *s, void *buf) {
  uih_io_req r = {fd, s->offset, (size_t)s->length, buf, 0};
  return r;
}

/* What a finished read of table bytes means: UIH_OK when every byte
 * arrived; UIH_ERR_IO with the system's reason; UIH_ERR_CORRUPTION when
 * the file ends before bytes its index names. Messages name the bytes. */
int uih_table_read_status(const uih_io_req *r, uih_error *err);

/* Checks the value of `vlen` bytes at `bytes`, followed by its stored
 * checksum, that the index places at data offset `voff`: UIH_OK, or
 * UIH_ERR_CORRUPTION naming the offset. */
int uih_table_value_check(const uint8_t *bytes, uint32_t vlen, uint64_t voff, uih_error *err);

/* The read-ahead of a scan: windows start at UIH_TABLE_FIRST_WINDOW bytes
 * after a seek (prev = 0) and double with each further read, up to `max`
 * (a `max` of 0 counts as 1).
 * A read is max(window, the value at hand), so scans are one read per
 * window and a seek to a short range reads little. */
#define UIH_TABLE_FIRST_WINDOW 8192
uint64_t uih_table_window_next(uint64_t prev, uint64_t max);

#ifdef __cplusplus
}
#endif
#endif /* UIH_TABLE_H */
