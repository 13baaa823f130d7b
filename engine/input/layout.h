/* How an input file is laid out (uih_input_layout, uih/csv.h): its format,
 * its delimiter, the mapping of the schema's names to its columns, and a
 * headerless file's column names. The reader's helpers; no I/O. */
#ifndef UIH_INPUT_LAYOUT_H
#define UIH_INPUT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "uih/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A list of names, each a NUL-terminated copy. */
typedef struct uih_names {
  char **v;
  uint32_t n;
} uih_names;
void uih_names_free(uih_names *names);
/* Appends a copy of [s, s + len) to `names`. */
int uih_names_add(uih_names *names, const char *s, size_t len, uih_error *err);

/* "a,b,c" (a headerless file's columns) into names; `what` names the
 * option in messages. Empty names and repeats are errors. */
int uih_layout_columns(const char *list, const char *what, uih_names *out, uih_error *err);

/* "ours=theirs,..." into two lists of equal length; each of ours once. */
int uih_layout_map(const char *map, const char *what, uih_names *ours, uih_names *theirs, uih_error *err);

/* 1 when `name` is JSON Lines by its name: .jsonl or .ndjson, maybe then
 * .gz, .zst or .zstd. */
int uih_layout_is_jsonl(const char *name);

/* The delimiter of a file whose first line is [line, line + n): the most
 * frequent of "," "\t" ";" "::" outside double quotes ("," when none). */
void uih_layout_detect_delimiter(const char *line, size_t n, char out[5]);

/* A CSV line split by one-byte `delim` without libcsv, for lines no
 * quoting touches: `n` bytes ending in '\n' (or "\r\n"), no '"', no other
 * '\r', not blank (spaces and tabs alone), `delim` neither a space, a tab
 * nor a quote. Each field goes to put(arg, text, len) as libcsv gives it
 * (CSV_STRICT, its default spaces): without the spaces and tabs around
 * it. Returns 1, or 0 for a line it leaves to libcsv (put not called).
 * tests/engine/csv_test.cc holds the two to the same fields. */
int uih_layout_split_plain(const char *line, size_t n, char delim, void (*put)(void *arg, const char *text, size_t len),
                           void *arg);

/* JSON Lines: the value at each of `paths` (dotted) in the object `line`
 * holds, as text — a string as it is, a number as written, true/false,
 * "" for null or missing — handed to put(arg, text, len) in path order.
 * UIH_OK, or UIH_ERR_PARSE with what was wrong in why (no name or line:
 * the caller's). `tok`: the caller's json-c tokener, reused line to line. */
struct json_tokener;
int uih_jsonl_fields(struct json_tokener *tok, const char *line, size_t len, char *const *paths, uint32_t npaths,
                     void (*put)(void *arg, const char *text, size_t len), void *arg, char *why, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* UIH_INPUT_LAYOUT_H */
