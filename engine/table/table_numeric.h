/* The UihTable index's numeric layout (drawn in uih/table.h): 18-byte keys
 * read as numbers (u, g, t), in blocks of bit-packed columns with a frame
 * of reference each. The writer collects one block at a time; the reader
 * parses a block's header and then reaches any entry in O(1). */
#ifndef UIH_TABLE_NUMERIC_H
#define UIH_TABLE_NUMERIC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bitpack.h"
#include "uih/key.h"
#include "wbuf.h"

#define UIH_NUM_COLUMNS 5
/* The reader's copy of the index has UIH_PACK_PAD readable bytes past its
 * end, so a value is always one unaligned load (uih_pack_get_padded). */

/* ---- writing --------------------------------------------------------------- */

typedef struct uih_num_writer {
  uint32_t block;      /* entries per block */
  uint32_t count;      /* entries of the open block */
  uint64_t *col;       /* UIH_NUM_COLUMNS arrays of `block` values */
  uint64_t voff0;      /* value offset of the open block's first entry */
  uih_wbuf blocks;     /* finished blocks */
  uih_wbuf offsets;    /* u32 offset of each finished block */
  int oom;
  int too_big;         /* the blocks passed 4 GiB: offsets cannot hold them */
} uih_num_writer;

/* Returns 0, or -1 if out of memory. */
int uih_num_writer_init(uih_num_writer *w, uint32_t block);
void uih_num_writer_free(uih_num_writer *w);
/* Adds an entry (keys in increasing order; the caller checked it). */
void uih_num_writer_add(uih_num_writer *w, const uint8_t key[UIH_KEY_SIZE], uint64_t trailer,
                        uint32_t vlen, uint64_t voff);
/* Closes the open block, if any. */
void uih_num_writer_finish(uih_num_writer *w);

/* ---- reading --------------------------------------------------------------- */

enum { UIH_NUM_U, UIH_NUM_G, UIH_NUM_T, UIH_NUM_TRAILER, UIH_NUM_LEN };

typedef struct uih_num_block {
  const uint8_t *col[UIH_NUM_COLUMNS];
  uint8_t w[UIH_NUM_COLUMNS];
  uint64_t base[UIH_NUM_COLUMNS];
  uint64_t voff0;
  uint32_t count;
} uih_num_block;

/* Parses the block of `count` entries in p[0, len): 0, or -1 if the header
 * is malformed, a width is out of range or the columns do not fill the
 * block exactly. Frames plus values may still overflow: validation at open
 * checks every entry with uih_num_entry_checked. */
int uih_num_block_parse(const uint8_t *p, size_t len, uint32_t count, uih_num_block *b);

/* Entry `i` of a parsed block: its key bytes, trailer and value length.
 * Only for validated indexes (no overflow checks). */
void uih_num_entry(const uih_num_block *b, uint32_t i, uint8_t key[UIH_KEY_SIZE],
                   uint64_t *trailer, uint32_t *vlen);
/* The same with every frame + value checked: 0, or -1 if one overflows
 * its field. */
int uih_num_entry_checked(const uih_num_block *b, uint32_t i, uint8_t key[UIH_KEY_SIZE],
                          uint64_t *trailer, uint32_t *vlen);
/* Value offset of entry `i`: the block's plus the values before it. */
uint64_t uih_num_voff(const uih_num_block *b, uint32_t i);

#endif /* UIH_TABLE_NUMERIC_H */
