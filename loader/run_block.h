/* A block of a sort run as it is compressed (sort.c): its records grouped
 * by length and laid out byte by byte — the i-th bytes of every record of
 * one length together — because the loader's sorted rows repeat their
 * shard, user, group and the top bytes of their timestamp from row to
 * row, and a value column's bytes resemble each other more than a row's.
 * zstd (level 1) then stores bench/scale's rows in ~11 bytes an event
 * instead of ~15.6 one record after another.
 *
 *   offset       size
 *        0          4  n, the records (u32 LE)
 *        4         4n  each record's length (u32 LE), in the records' order
 *     4+4n          .  for each length L the block has, ascending: L planes
 *                      of m bytes (m: its records of length L); plane i
 *                      holds byte i of each of them, in the records' order
 *
 * The records one after another — each as its length (u32 LE) and its
 * bytes, the sorter's raw form — take 4 bytes less than the block. */
#ifndef UIH_LOADER_RUN_BLOCK_H
#define UIH_LOADER_RUN_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

/* Scratch space both directions use (a sort of the records by length),
 * kept between blocks; zero-initialize, free with ld_run_block_scratch_free. */
typedef struct ld_run_block_scratch {
  uint64_t *keys;
  size_t cap;
} ld_run_block_scratch;
void ld_run_block_scratch_free(ld_run_block_scratch *s);

/* Writes the block of `raw` (`len` bytes of records in the raw form, whole
 * and well formed: the sorter's own) to `out` (len + 4 bytes). */
int ld_run_block_encode(const uint8_t *raw, size_t len, uint8_t *out, ld_run_block_scratch *s, uih_error *err);

/* Reads the block `in` (`len` bytes, from a disk) into `raw` (len - 4
 * bytes: its records in the raw form). Corruption, naming the byte of the
 * block as laid out ("laid-out byte N"), when it is shorter than its count and lengths, a length is below
 * `min_len`, or the lengths do not add up to the bytes that follow them. */
int ld_run_block_decode(const uint8_t *in, size_t len, uint32_t min_len, uint8_t *raw, ld_run_block_scratch *s,
                        uih_error *err);

#endif /* UIH_LOADER_RUN_BLOCK_H */
