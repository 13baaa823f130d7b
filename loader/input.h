/* The loader's inputs: paths expanded (directories to their files, in name
 * order), each opened as a stream of CSV text whatever its compression
 * (gzip and zstd recognized by their magic bytes, not their names), with
 * a digest and a byte count of the text read. */
#ifndef UIH_LOADER_INPUT_H
#define UIH_LOADER_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uih/error.h"

typedef struct ld_input ld_input;

/* Expands `paths` into *files (*nfiles of them; free with ld_files_free):
 * a directory gives its regular files not starting with '.', sorted by
 * name; "-" is standard input. A missing path is UIH_ERR_NOT_FOUND. */
int ld_files_expand(const char *const *paths, size_t npaths, char ***files, size_t *nfiles, uih_error *err);
void ld_files_free(char **files, size_t nfiles);

/* Opens `path` ("-": standard input) as decompressed text. */
int ld_input_open(const char *path, ld_input **out, uih_error *err);
/* The text stream (owned by the input). */
FILE *ld_input_stream(ld_input *in);
/* When reading the stream failed inside the decompressor: what went wrong
 * ("corrupt gzip data at byte N: ..."); NULL otherwise. */
const char *ld_input_failure(const ld_input *in);
/* XXH3-64 of the text read so far, and its length. */
uint64_t ld_input_digest(const ld_input *in);
uint64_t ld_input_bytes(const ld_input *in);
/* Bytes of the file as stored consumed so far (compressed ones: before
 * decompression). */
uint64_t ld_input_raw_bytes(const ld_input *in);
void ld_input_close(ld_input *in); /* NULL is fine */

#endif /* UIH_LOADER_INPUT_H */
