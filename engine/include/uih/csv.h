/* uihstore — reading events from loader-input CSV.
 *
 * The input shape (what `uih gen` writes, what `uih append` and the daily
 * loader read), RFC 4180 quoting, parsed by Debian's libcsv:
 *
 *   user_id,group,ts,item_id,event_type,watch_ms,liked
 *   42,engagement,1700000000000,981,click,5200,
 *   42,engagement,1700000000950,17,like,,1
 *
 * Header: user_id, group and ts, once each, then any of the schema's active
 * trait names in any order. "ts" is each group's timestamp trait whatever
 * its name. A column may name a trait some groups lack; their rows must
 * leave it empty.
 *
 * Rows: user_id an unsigned 64-bit integer (any non-empty string, hashed
 * by uih_hash_id, when the schema's "user_ids" is "string"); group a
 * group's name or its numeric id; ts and every present trait value by type
 * and the schema's "input" — timestamp signed decimal (or, as its "input"
 * says, integer s/ms/us or RFC 3339 text, converted exactly to its "unit":
 * a value the unit cannot hold exactly is an error), int64 signed decimal,
 * id unsigned decimal (any string, hashed, with "input": "string"), uint32
 * unsigned decimal in range, category a
 * name of the trait's vocabulary or its numeric code (a trait without a
 * vocabulary: any unsigned 32-bit code), flag 0/1 or true/false, float32 anything strtof reads exactly to the end (nan, inf,
 * hex floats included). An empty field is an absent value (not allowed for
 * user_id, group and ts).
 *
 * A vocabulary of N names takes codes 0..N-1 only, and a name is looked up
 * before a code, so a name that reads as a number is still that name.
 *
 * Every error names the file, the line and the column, and says what was
 * expected: "day.csv:17: column 'watch_ms': expected an unsigned 32-bit
 * integer, got '-5'". An error in one record (a value, a field count,
 * malformed quoting) leaves the reader after that record: a caller that
 * collects bad records (the loader's --rejects) may go on reading
 * (uih_csv_resumable); by default callers stop at the first error.
 *
 * Round trip: what uih_csv_write_row writes reads back as the same events,
 * bit for bit — integers in decimal, categories by name (a trait without a
 * vocabulary: its code), flags 0/1, float32 with nine significant digits
 * ("%.9g", which every float32 survives; a NaN reads back as the quiet NaN
 * of its sign, its payload is not kept), absent values empty, and any field
 * holding a comma, a quote, a line break or spaces at its ends quoted
 * (RFC 4180, quotes doubled).
 */
#ifndef UIH_CSV_H
#define UIH_CSV_H

#include <stdint.h>
#include <stdio.h>

#include "uih/batch.h"
#include "uih/error.h"
#include "uih/key.h"
#include "uih/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uih_csv_reader uih_csv_reader;

/* Files as people publish them, read through a layout (NULL, or every
 * field NULL: the shape above).
 *
 *   format     "csv" or "jsonl"; NULL: JSON Lines when the name ends in
 *              .jsonl or .ndjson (before a .gz, .zst or .zstd), else CSV.
 *              JSON Lines: one object per line, a field by its name or a
 *              dotted path into nested objects ("user.id"); a string, a
 *              number (as written), true/false, or null / missing
 *              (absent); fields the layout does not name are ignored.
 *   delimiter  CSV: the field separator, 1 to 4 bytes ("\t", ";", "::");
 *              NULL: the first line's most frequent of , tab ; and ::
 *              (outside quotes). A multi-byte one is taken wherever it
 *              appears, inside quotes too.
 *   group      every event's group, for files without a group column.
 *   map        "user_id=userId,item_id=movieId,ts=timestamp": the
 *              schema's name (user_id, group, ts or a trait) = the file's
 *              column (JSON: its path); with a map, the file's other
 *              columns are ignored, and every column it names must exist.
 *   columns    CSV without a header line: its columns' names, in order,
 *              comma-separated (the map then names these).
 */
typedef struct uih_input_layout {
  const char *format, *delimiter, *group, *map, *columns;
} uih_input_layout;

/* uih_csv_open (a path, "-": standard input) with a layout. */
int uih_csv_open_path(const char *path, const uih_schema *schema, const uih_input_layout *layout,
                      uih_csv_reader **out, uih_error *err);

/* uih_csv_open_stream with a layout; the layout's strings are copied. */
int uih_csv_open_layout(FILE *f, const char *name, const uih_schema *schema, const uih_input_layout *layout,
                        uih_csv_reader **out, uih_error *err);

/* Opens `path` ("-" is standard input) and reads its header. `schema` must
 * outlive the reader. */
int uih_csv_open(const char *path, const uih_schema *schema, uih_csv_reader **out,
                 uih_error *err);

/* The same over an open stream (not closed by the reader), called `name` in
 * messages. */
int uih_csv_open_stream(FILE *f, const char *name, const uih_schema *schema,
                        uih_csv_reader **out, uih_error *err);

void uih_csv_close(uih_csv_reader *r); /* NULL is fine */

/* Reads the next event: *user_id, and *event, a batch of one event (count
 * 1) of the event's group with every active trait of it, valid until the
 * next call. At the end of the input *event is NULL. */
int uih_csv_next(uih_csv_reader *r, uint64_t *user_id, const uih_batch **event, uih_error *err);

/* Records every string the reader hashes into an id (string user ids, id
 * traits whose input is "string") in `ids`, which readers of one load
 * share: a record whose string has the id of a different string read
 * before is an error of that record (UIH_ERR_PARSE) naming both. NULL:
 * no check. */
void uih_csv_check_ids(uih_csv_reader *r, uih_id_check *ids);

/* The line the event uih_csv_next() last returned starts on (1 is the
 * header; 0 before the first event), for callers' own messages. */
uint64_t uih_csv_record_line(const uih_csv_reader *r);

/* The text of the record last read, good or bad, as it was in the input
 * (its lines, without the final line break; the header's before the first
 * record); *len its length. Valid until the next call. */
const char *uih_csv_record_text(const uih_csv_reader *r, size_t *len);

/* After uih_csv_next() failed with UIH_ERR_PARSE: 1 when the error was the
 * record's own and the next call reads the record after it, 0 when the
 * input cannot go on (a line over 1 MiB, a record over 16 MiB, a bad
 * header, a read error). */
int uih_csv_resumable(const uih_csv_reader *r);

/* ---- writing ------------------------------------------------------------- */

/* Writes the header for events of `batch`'s group and traits:
 * user_id,group,ts, then the batch's other traits in column order. */
int uih_csv_write_header(FILE *f, const uih_batch *batch, uih_error *err);

/* Writes event `row` of `batch` for `user_id` as one line, columns as the
 * header names them. UIH_ERR_OUT_OF_RANGE for a category code outside its
 * vocabulary (it could not be read back; nothing is written), UIH_ERR_IO
 * (with the system's reason) when the stream fails. */
int uih_csv_write_row(FILE *f, uint64_t user_id, const uih_batch *batch, uint32_t row, uih_error *err);

#ifdef __cplusplus
}
#endif
#endif /* UIH_CSV_H */
