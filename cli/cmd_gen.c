/* uih gen — write generated interaction histories as loader-input CSV:
 *   user_id,group,ts,<every other active trait of the group, in id order>
 * in the format of uih/csv.h (uih_csv_write_row). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "uih/batch.h"
#include "uih/csv.h"
#include "uih/gen.h"

const char cli_usage_gen[] =
    "usage: uih gen --schema FILE --group NAME [--users N] [--seed S] [--days D]\n"
    "               [--start-ts MS] [--first-user ID] [--max-events N] [--out FILE]";

int cmd_gen(int argc, char **argv) {
  const char *schema_path = NULL, *group_name = NULL, *out_path = NULL;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t u;
    int64_t s;
    if (!v) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_gen);
    i++;
    if (!strcmp(a, "--schema")) schema_path = v;
    else if (!strcmp(a, "--group")) group_name = v;
    else if (!strcmp(a, "--out")) out_path = v;
    else if (!strcmp(a, "--users") && cli_parse_u64("--users", v, &u)) o.users = u;
    else if (!strcmp(a, "--seed") && cli_parse_u64("--seed", v, &u)) o.seed = u;
    else if (!strcmp(a, "--first-user") && cli_parse_u64("--first-user", v, &u)) o.first_user_id = u;
    else if (!strcmp(a, "--start-ts") && cli_parse_i64("--start-ts", v, &s)) o.start_ts = s;
    else if (!strcmp(a, "--days") && cli_parse_u64("--days", v, &u) && u > 0 && u <= 36500) o.days = (uint32_t)u;
    else if (!strcmp(a, "--max-events") && cli_parse_u64("--max-events", v, &u) && u > 0 && u <= UINT32_MAX)
      o.max_events = (uint32_t)u;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_gen);
  }
  if (!schema_path || !group_name) return cli_fail(CLI_USAGE, "%s", cli_usage_gen);

  uih_error err = {0};
  uih_schema *schema = NULL;
  uih_gen *gen = NULL;
  uih_batch *batch = NULL;
  FILE *f = stdout;
  int rc = CLI_FAIL;
  if (uih_schema_load(schema_path, &schema, &err) != UIH_OK) {
    cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    goto done;
  }
  const uih_group *g = uih_schema_group_by_name(schema, group_name);
  if (!g) {
    cli_fail(CLI_FAIL, "%s: no feature group named '%s'", schema_path, group_name);
    goto done;
  }
  if (uih_gen_create(g, &o, &gen, &err) != UIH_OK ||
      uih_batch_create(g, g->stripe_events, NULL, 0, &batch, &err) != UIH_OK) {
    cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    goto done;
  }
  if (out_path && !(f = fopen(out_path, "w"))) {
    cli_fail(CLI_FAIL, "%s: cannot create: %s", out_path, strerror(errno));
    goto done;
  }
  uint64_t events = 0, user;
  if (uih_csv_write_header(f, batch, &err) != UIH_OK) goto write_failed;
  for (;;) {
    if (uih_gen_next(gen, &user, batch, &err) != UIH_OK) {
      cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      goto done;
    }
    if (batch->count == 0) break;
    for (uint32_t r = 0; r < batch->count; r++)
      if (uih_csv_write_row(f, user, batch, r, &err) != UIH_OK) goto write_failed;
    events += batch->count;
  }
  if (fflush(f) != 0 || ferror(f)) {
    cli_fail(CLI_FAIL, "%s: write failed: %s", out_path ? out_path : "stdout", strerror(errno));
    goto done;
  }
  fprintf(stderr, "uih gen: %" PRIu64 " events of %" PRIu64 " users in group '%s'\n", events,
          o.users, g->name);
  rc = CLI_OK;
  goto done;
write_failed:
  cli_fail(CLI_FAIL, "%s: %s", out_path ? out_path : "stdout", uih_error_message(&err));
done:
  if (f && f != stdout) fclose(f);
  uih_batch_free(batch);
  uih_gen_free(gen);
  uih_schema_free(schema);
  return rc;
}
