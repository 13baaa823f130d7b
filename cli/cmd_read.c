/* uih read — print the events of (user, group) as loader-input CSV: from a
 * store's tiers (--store), or from a mutable store (--db). Reading never
 * writes: the store is opened read-only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uih/csv.h"
#include "uih/mutable.h"
#include "uih/store.h"

const char cli_usage_read[] =
    "usage: uih read --store DIR --user ID --group NAME [--from TS] [--to TS]\n"
    "                [--tier immutable|mutable|all] [--generation N] [--arrival]\n"
    "       uih read --schema FILE --db DIR --user ID --group NAME [--from TS] [--to TS]\n"
    "  ID: the user's number, or its string when the schema's user ids are strings";

int cmd_read(int argc, char **argv) {
  const char *schema_path = NULL, *db_path = NULL, *store_path = NULL, *group_name = NULL, *tier_name = "all";
  uint64_t user = 0, generation = 0;
  const char *user_text = NULL;
  int arrival = 0;
  int64_t from = INT64_MIN, to = INT64_MAX;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--arrival")) {
      arrival = 1;
      continue;
    }
    if (!v) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_read);
    i++;
    if (!strcmp(a, "--schema")) schema_path = v;
    else if (!strcmp(a, "--db")) db_path = v;
    else if (!strcmp(a, "--store")) store_path = v;
    else if (!strcmp(a, "--group")) group_name = v;
    else if (!strcmp(a, "--tier")) tier_name = v;
    else if (!strcmp(a, "--user")) user_text = v;
    else if (!strcmp(a, "--generation") && cli_parse_u64(a, v, &generation) && generation <= UINT32_MAX) continue;
    else if (!strcmp(a, "--from") && cli_parse_i64(a, v, &from)) continue;
    else if (!strcmp(a, "--to") && cli_parse_i64(a, v, &to)) continue;
    else return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_read);
  }
  unsigned tier = !strcmp(tier_name, "immutable") ? UIH_TIER_IMMUTABLE
                  : !strcmp(tier_name, "mutable") ? UIH_TIER_MUTABLE
                  : !strcmp(tier_name, "all")     ? UIH_TIER_ALL
                                                  : 0;
  if (!tier) return cli_fail(CLI_USAGE, "--tier '%s': expected immutable, mutable or all\n%s", tier_name, cli_usage_read);
  if (!group_name || !user_text || (store_path ? (schema_path || db_path) : (!schema_path || !db_path)))
    return cli_fail(CLI_USAGE, "%s", cli_usage_read);
  if (!store_path && (strcmp(tier_name, "all") || generation || arrival))
    return cli_fail(CLI_USAGE, "--tier, --generation and --arrival read a store (--store)\n%s", cli_usage_read);
  uih_error err = {0};
  uih_schema *schema = NULL;
  uih_mutable *m = NULL;
  uih_store *store = NULL;
  uih_batch *b = NULL;
  int rc = CLI_FAIL;
  const uih_schema *use;
  const uih_group *g;
  if (store_path) {
    uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
    so.read_only = 1; /* reading never writes: not even a LOG file */
    if (uih_store_open(store_path, &so, &store, &err) != UIH_OK) goto failed;
    use = uih_store_schema(store);
  } else {
    if (uih_schema_load(schema_path, &schema, &err) != UIH_OK) goto failed;
    use = schema;
  }
  if (!(g = uih_schema_group_by_name(use, group_name))) {
    cli_fail(CLI_FAIL, "%s: no feature group named '%s'", store_path ? store_path : schema_path, group_name);
    goto done;
  }
  if (!cli_parse_user(use, "--user", user_text, &user)) {
    rc = CLI_USAGE;
    goto done;
  }
  if (store_path) {
    if (arrival) { /* every active trait and the arrival generation */
      uint16_t ids[UIH_TRAITS_MAX + 1];
      uint32_t n = 0;
      for (uint32_t t = 0; t < g->ntraits; t++)
        if (uih_trait_active(&g->traits[t])) ids[n++] = g->traits[t].id;
      ids[n++] = UIH_TRAIT_ARRIVAL;
      if (uih_batch_create(g, 64, ids, n, &b, &err) != UIH_OK) goto failed;
    }
    if (uih_store_read(store, user, g->id, from, to, tier, (uint32_t)generation, &b, &err) != UIH_OK) goto failed;
  } else {
    uih_mutable_opts o = UIH_MUTABLE_OPTS_DEFAULT;
    o.read_only = 1;
    if (uih_mutable_open(db_path, schema, &o, &m, &err) != UIH_OK ||
        uih_mutable_read(m, user, g->id, from, to, &b, &err) != UIH_OK)
      goto failed;
  }
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
  uih_store_close(store);
  uih_schema_free(schema);
  return rc;
}
