/* The loader's external sort: byte records, ordered by memcmp (shorter
 * first on a common prefix), held in memory up to a budget and spilled as
 * sorted runs beyond it. Each record starts with its shard (2 bytes,
 * big-endian), so one shard's records are contiguous in every run and in
 * memory, and each shard can be merged on its own, concurrently with the
 * others. Records are the loader's rows (rows.h); the sort does not look
 * inside them. */
#ifndef UIH_LOADER_SORT_H
#define UIH_LOADER_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

typedef struct ld_sorter ld_sorter;

/* Runs go to a new folder inside `tmpdir` (created if needed), removed by
 * ld_sorter_free. `memory` bounds the records, their index and the sort's
 * scratch copy of the index in memory. Records are at least `min_len`
 * (>= 2) bytes, so a reader of a stream may read that many of each without
 * checking. */
int ld_sorter_create(const char *tmpdir, size_t memory, uint32_t nshards, uint32_t min_len, ld_sorter **out,
                     uih_error *err);
/* Adds a record of `len` (>= min_len) bytes; copies it. */
int ld_sorter_add(ld_sorter *s, const uint8_t *rec, uint32_t len, uih_error *err);
/* No more records: sorts what is in memory (once), a sorter that spilled
 * spilling the rest and freeing its memory; then merges runs beyond the
 * fan-in (again after ld_sorter_adopt). Streams may then be opened. After
 * an error the sorter is only for ld_sorter_free. */
int ld_sorter_finish(ld_sorter *s, uih_error *err);
uint64_t ld_sorter_runs(const ld_sorter *s); /* runs spilled (its own and its parts'), merged or not */
/* Streams read at most `fan_in` runs (>= 2; LD_SORT_FAN_IN by default):
 * ld_sorter_finish merges the oldest runs beyond it into one, so what a
 * stream holds open — files and a block of each — stays bounded whatever
 * the input's size. */
#define LD_SORT_FAN_IN 256
void ld_sorter_set_fan_in(ld_sorter *s, size_t fan_in);
/* `s` takes `part` (freed with it; on an error, freed now): both finished,
 * of the same shards and min_len, `part` with no parts of its own. Its
 * runs become `s`'s and its memory is read by `s`'s streams, as if its
 * records were added to `s` — so threads may each sort on their own sorter
 * (ld_sorter_add is for one thread at a time) and one of them stream them
 * all. Call ld_sorter_finish(s) again after adopting (the fan-in). */
int ld_sorter_adopt(ld_sorter *s, ld_sorter *part, uih_error *err);
void ld_sorter_free(ld_sorter *s); /* NULL is fine; removes the runs */

/* The records of one shard in order, each repeated record once. Streams of
 * different shards may be read by different threads at once. A shard may
 * be read again (LD_STREAM_KEEP) until it is read a last time
 * (LD_STREAM_LAST): that stream gives the disk the runs' parts it has
 * read back as it goes (punched out of the files, where the file system
 * can), so a spilling load's temporary disk shrinks while the generation
 * it writes grows; a stream of the shard opened after it (even one whose
 * open failed) is refused, and so are ld_sorter_finish and
 * ld_sorter_adopt. */
typedef struct ld_stream ld_stream;
enum { LD_STREAM_KEEP = 0, LD_STREAM_LAST = 1 };
int ld_stream_open(ld_sorter *s, uint32_t shard, int mode, ld_stream **out, uih_error *err);
/* The next record, valid until the next call; *rec NULL at the end. */
int ld_stream_next(ld_stream *st, const uint8_t **rec, uint32_t *len, uih_error *err);
/* Records skipped as repeats so far. */
uint64_t ld_stream_repeats(const ld_stream *st);
void ld_stream_close(ld_stream *st); /* NULL is fine */

#endif /* UIH_LOADER_SORT_H */
