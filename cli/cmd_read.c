/* uih read — print the mutable events of (user, group) as loader-input CSV. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uih/csv.h"
#include "uih/mutable.h"

static const char kUsage[] =
    "usage: uih read --schema FILE --db DIR --user ID --group NAME [--from TS] [--to TS]";

int cmd_read(int argc, char **argv) {
  const char *schema_path = NULL, *db_path = NULL, *group_name = NULL;
  uint64_t user = 0;
  int have_user = 0;
  int64_t from = INT64_MIN, to = INT64_MAX;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, kUsage);
    i++;
    if (!strcmp(a, "--schema")) schema_path = v;
    else if (!strcmp(a, "--db")) db_path = v;
    else if (!strcmp(a, "--group")) group_name = v;
    else if (!strcmp(a, "--user") && cli_parse_u64(a, v, &user)) have_user = 1;
    else if (!strcmp(a, "--from") && cli_parse_i64(a, v, &from)) continue;
    else if (!strcmp(a, "--to") && cli_parse_i64(a, v, &to)) continue;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, kUsage);
  }
  if (!schema_path || !db_path || !group_name || !have_user) return cli_fail(CLI_USAGE, "%s", kUsage);
  uih_error err = {0};
  uih_schema *schema = NULL;
  uih_mutable *m = NULL;
  uih_batch *b = NULL;
  int rc = CLI_FAIL;
  uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
  o.read_only = 1; /* reading never writes: not even a LOG file */
  const uih_group *g;
  if (uih_schema_load(schema_path, &schema, &err) != UIH_OK) goto failed;
  if (!(g = uih_schema_group_by_name(schema, group_name))) {
    cli_fail(CLI_FAIL, "%s: no feature group named '%s'", schema_path, group_name);
    goto done;
  }
  if (uih_mutable_open(db_path, schema, &o, &m, &err) != UIH_OK ||
      uih_mutable_read(m, user, g->id, from, to, &b, &err) != UIH_OK)
    goto failed;
  if (uih_csv_write_header(stdout, b, &err) != UIH_OK) goto failed;
  for (uint32_t r = 0; r < b->count; r++)
    if (uih_csv_write_row(stdout, user, b, r, &err) != UIH_OK) goto failed;
  rc = fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
  goto done;
failed:
  cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
done:
  uih_batch_free(b);
  uih_mutable_close(m);
  uih_schema_free(schema);
  return rc;
}
