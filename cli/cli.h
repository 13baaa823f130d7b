/* Shared pieces of the `uih` command-line tool. */
#ifndef UIH_CLI_H
#define UIH_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "uih/csv.h"
#include "uih/schema.h"

/* Exit codes: 0 ok, 1 the operation failed (bad input data, invalid
 * schema...), 2 the command line itself is wrong. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Strict number parsing for command-line arguments: the whole string must
 * be the number. On failure prints "uih: WHAT 'TEXT' is not ..." to stderr
 * and returns 0. */
int cli_parse_u64(const char *what, const char *text, uint64_t *out);
int cli_parse_i64(const char *what, const char *text, int64_t *out);
int cli_parse_u16(const char *what, const char *text, uint16_t *out);
/* A user id as `schema` spells them: an unsigned 64-bit integer, or any
 * non-empty string, whose uih_hash_id it is ("user_ids": "string"). */
int cli_parse_user(const uih_schema *schema, const char *what, const char *text, uint64_t *out);
/* Option `a` with value `v` when it is one of a layout's (uih/csv.h):
 * --format, --delimiter ('\\t' or tab for a tab), --group, --map (name=column,...
 * or a file of such lines; *owned then holds its text, for the caller to
 * free), --columns. 1: taken; 0: not a layout option; -1: a bad value
 * (printed). */
int cli_layout_arg(const char *a, const char *v, uih_input_layout *layout, char **owned);
/* The layout options' usage lines, for the commands that read inputs. */
#define CLI_USAGE_LAYOUT                                                                              \
  "  LAYOUT: files as published (uih/csv.h)\n"                                                        \
  "  --format csv|jsonl   default: JSON Lines for .jsonl/.ndjson (maybe .gz/.zst), else CSV\n"        \
  "  --delimiter D   CSV's separator, 1-4 bytes (tab or '\\t', ';', '::'); default: the first\n"      \
  "                  line's most frequent of , tab ; ::\n"                                            \
  "  --group NAME    every event's group, for files without a group column\n"                         \
  "  --map M         name=column,...: the schema's names (user_id, group, ts, traits) = the\n"        \
  "                  file's columns (JSON: dotted paths); other columns are ignored; M may be a\n"   \
  "                  file of name=column lines\n"                                                     \
  "  --columns A,B   a CSV without a header line: its columns' names, in order"

/* Opens the store at `dir` read-only (readers never write, not even a LOG
 * file); CLI_OK, or CLI_FAIL with the reason printed. */
struct uih_store;
int cli_open_store_read_only(const char *dir, struct uih_store **out);

/* Prints "uih: " + message to stderr; returns `code`. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Each command's usage, what `uih COMMAND --help` prints (stdout, exit 0). */
extern const char cli_usage_append[], cli_usage_gen[], cli_usage_init[], cli_usage_load[], cli_usage_status[],
    cli_usage_key[], cli_usage_shard[], cli_usage_read[], cli_usage_schema[], cli_usage_snapshot[],
    cli_usage_materialize[], cli_usage_log[], cli_usage_verify[], cli_usage_repair[], cli_usage_hash[];

int cmd_append(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_shard(int argc, char **argv);
int cmd_hash(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_materialize(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_repair(int argc, char **argv);

#endif /* UIH_CLI_H */
