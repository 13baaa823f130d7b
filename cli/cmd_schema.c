/* uih schema check — validate a schema file and show what it declares. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uih/schema.h"

static void print_encodings(uint32_t mask, uih_type type) {
  if (mask == uih_encodings_for_type(type)) {
    printf("%-30s", "any");
    return;
  }
  char buf[128] = "";
  size_t n = 0;
  for (uint32_t e = 1; e < (1u << UIH_ENC_COUNT); e <<= 1)
    if (mask & e) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? "," : "", uih_encoding_name(e));
  printf("%-30s", buf);
}

static void print_group(const uih_group *g) {
  static const char *const compression[] = {"auto", "none", "lz4", "zstd"};
  printf("\ngroup %u '%s': %u events per stripe, %u active traits (%u declared)\n", g->id,
         g->name, g->stripe_events, uih_group_active_count(g), g->ntraits);
  printf("  %5s  %-20s %-10s %-30s %-6s %s\n", "id", "name", "type", "encodings", "compr",
         "versions");
  for (uint32_t i = 0; i < g->ntraits; i++) {
    const uih_trait *t = &g->traits[i];
    printf("  %5u  %-20s %-10s ", t->id, t->name, uih_type_name(t->type));
    print_encodings(t->encodings, t->type);
    printf(" %-6s %u-", compression[t->compression], t->added_in);
    if (t->dropped_in) printf("%u (dropped)", t->dropped_in - 1);
    if (t == g->ts) printf("  <- event time");
    if (t->ncategories) printf("  [%u categories]", t->ncategories);
    putchar('\n');
  }
}

const char cli_usage_schema[] = "usage: uih schema check FILE [--previous OLD]";

static int schema_check(int argc, char **argv) {
  const char *path = NULL, *previous = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--previous") && i + 1 < argc) previous = argv[++i];
    else if (argv[i][0] == '-' || path) return cli_fail(CLI_USAGE, "%s", cli_usage_schema);
    else path = argv[i];
  }
  if (!path) return cli_fail(CLI_USAGE, "%s", cli_usage_schema);

  uih_error err = {0};
  uih_schema *s = NULL, *old = NULL;
  int rc = CLI_OK;
  if (uih_schema_load(path, &s, &err) != UIH_OK) {
    rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
    goto done;
  }
  if (previous) {
    if (uih_schema_load(previous, &old, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      goto done;
    }
    if (uih_schema_check_evolution(old, s, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s does not evolve from %s: %s", path, previous,
                    uih_error_message(&err));
      goto done;
    }
  }
  printf("%s: schema '%s' version %u: %u feature groups: valid", path, uih_schema_name(s),
         uih_schema_version(s), uih_schema_group_count(s));
  if (old) printf(", a valid successor of version %u", uih_schema_version(old));
  putchar('\n');
  for (uint32_t g = 0; g < uih_schema_group_count(s); g++) print_group(uih_schema_group_at(s, g));
done:
  uih_schema_free(s);
  uih_schema_free(old);
  return rc;
}

int cmd_schema(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "check") != 0)
    return cli_fail(CLI_USAGE, "%s", cli_usage_schema);
  return schema_check(argc - 1, argv + 1);
}
