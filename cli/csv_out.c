/* Writing loader-input CSV (the format of uih/csv.h): `uih gen` and
 * `uih read` print it, `uih append` and the loader read it back. */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "uih/batch.h"

static void write_value(FILE *f, const uih_column *c, uint32_t row) {
  const uih_trait *t = c->trait;
  if (!uih_column_has(c, row)) return; /* absent: empty */
  uint64_t bits = uih_column_get_bits(c, row);
  switch (t->type) {
    case UIH_TYPE_TIMESTAMP:
    case UIH_TYPE_INT64: fprintf(f, "%" PRId64, (int64_t)bits); break;
    case UIH_TYPE_FLOAT32: fprintf(f, "%.9g", (double)uih_column_get_f32(c, row)); break;
    case UIH_TYPE_CATEGORY:
      if (bits < t->ncategories) fputs(t->categories[bits], f);
      else fprintf(f, "%" PRIu64, bits); /* a code without a name */
      break;
    default: fprintf(f, "%" PRIu64, bits); break;
  }
}

void cli_csv_header(FILE *f, const uih_batch *b) {
  fputs("user_id,group,ts", f);
  for (uint32_t c = 0; c < b->ncolumns; c++)
    if (b->columns[c].trait != b->group->ts) fprintf(f, ",%s", b->columns[c].trait->name);
  fputc('\n', f);
}

void cli_csv_row(FILE *f, uint64_t user, const uih_batch *b, uint32_t r) {
  fprintf(f, "%" PRIu64 ",%s,", user, b->group->name);
  int ts = uih_batch_column_index(b, b->group->ts->id);
  if (ts >= 0) write_value(f, &b->columns[ts], r);
  for (uint32_t c = 0; c < b->ncolumns; c++) {
    if ((int)c == ts) continue;
    fputc(',', f);
    write_value(f, &b->columns[c], r);
  }
  fputc('\n', f);
}
