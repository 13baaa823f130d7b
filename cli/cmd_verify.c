/* uih verify — the scrub an operator runs after a disk incident
 * (uih_store_verify, uih/store.h): every file of a store read, every
 * checksum verified; each damaged file named with what it holds.
 * uih repair — accepting a named loss an open refuses (uih_store_repair). */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uih/store.h"

const char cli_usage_verify[] =
    "usage: uih verify --store DIR [--json] [--all]\n"
    "  reads everything the store holds, read-only: each shard opened as readers open it,\n"
    "  every table file's checksums, every stripe of a live generation decoded, every\n"
    "  metadata record, the whole mutable tier. Prints each damaged file with the users\n"
    "  and generation it holds (--all: every file), then a summary.\n"
    "  --json  one JSON object: {\"store\", \"ok\", \"damaged\", \"totals\", \"items\": [...]}\n"
    "          with every item\n"
    "Exit status: 0 nothing is damaged, 1 something is (or DIR is no store), 2 usage.";

struct verify_out {
  int all;
  json_object *items; /* --json: every item */
};

static void describe(const uih_verify_item *it, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s", it->kind);
  if (it->generation && n < cap) n += (size_t)snprintf(buf + n, cap - n, " (generation %u)", it->generation);
  if (it->has_users && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, ", users %" PRIu64 "..%" PRIu64, it->first_user, it->last_user);
  if (it->entries && n < cap) snprintf(buf + n, cap - n, ", %" PRIu64 " read whole", it->entries);
}

static void on_item(void *arg, const uih_verify_item *it) {
  struct verify_out *out = arg;
  if (out->items) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(it->path));
    json_object_object_add(o, "kind", json_object_new_string(it->kind));
    json_object_object_add(o, "shard", it->shard == UINT32_MAX ? NULL : json_object_new_int64(it->shard));
    json_object_object_add(o, "generation", it->generation ? json_object_new_int64(it->generation) : NULL);
    json_object_object_add(o, "entries", json_object_new_uint64(it->entries));
    json_object_object_add(o, "bytes", json_object_new_uint64(it->bytes));
    if (it->has_users) {
      json_object *u = json_object_new_array();
      json_object_array_add(u, json_object_new_uint64(it->first_user));
      json_object_array_add(u, json_object_new_uint64(it->last_user));
      json_object_object_add(o, "users", u);
    } else {
      json_object_object_add(o, "users", NULL);
    }
    json_object_object_add(o, "damage", it->damage ? json_object_new_string(it->damage) : NULL);
    json_object_object_add(o, "counts", json_object_new_boolean(it->counts));
    json_object_object_add(o, "note", it->note ? json_object_new_string(it->note) : NULL);
    json_object_array_add(out->items, o);
    return;
  }
  if (!it->damage && !out->all) return;
  char what[256];
  describe(it, what, sizeof what);
  const char *state = !it->damage ? "ok" : it->counts ? "DAMAGED" : "unused, damaged";
  printf("%-8s %s: %s", state, it->path, what);
  if (it->damage) printf(": %s", it->damage);
  if (it->note) printf(" [%s]", it->note);
  putchar('\n');
}

int cmd_verify(int argc, char **argv) {
  const char *dir = NULL;
  int json = 0, all = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("%s\n", cli_usage_verify);
      return CLI_OK;
    }
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--all")) all = 1;
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) dir = argv[++i];
    else return cli_fail(CLI_USAGE, "bad argument %s\n%s", argv[i], cli_usage_verify);
  }
  if (!dir) return cli_fail(CLI_USAGE, "%s", cli_usage_verify);
  struct verify_out out = {all, json ? json_object_new_array() : NULL};
  uih_verify_totals t = {0};
  uih_error err = {0};
  const int rc = uih_store_verify(dir, on_item, &out, &t, &err);
  if (rc != UIH_OK && rc != UIH_ERR_CORRUPTION) {
    json_object_put(out.items);
    return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  }
  if (json) {
    json_object *o = json_object_new_object(), *tot = json_object_new_object();
    json_object_object_add(o, "store", json_object_new_string(dir));
    json_object_object_add(o, "ok", json_object_new_boolean(rc == UIH_OK));
    json_object_object_add(o, "damaged", json_object_new_uint64(t.damaged));
    json_object_object_add(tot, "items", json_object_new_uint64(t.items));
    json_object_object_add(tot, "stripes", json_object_new_uint64(t.stripes));
    json_object_object_add(tot, "records", json_object_new_uint64(t.records));
    json_object_object_add(tot, "lists", json_object_new_uint64(t.lists));
    json_object_object_add(tot, "bytes", json_object_new_uint64(t.bytes));
    json_object_object_add(o, "totals", tot);
    json_object_object_add(o, "items", out.items);
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
  } else {
    printf("uih verify: store %s: %" PRIu64 " items, %" PRIu64 " bytes read: %" PRIu64 " stripes, %" PRIu64
           " metadata records, %" PRIu64 " event lists\n",
           dir, t.items, t.bytes, t.stripes, t.records, t.lists);
    if (rc == UIH_OK) printf("uih verify: nothing is damaged\n");
    else printf("uih verify: %" PRIu64 " damaged (listed above)\n", t.damaged);
  }
  fflush(stdout);
  if (rc != UIH_OK) fprintf(stderr, "uih: %s\n", uih_error_message(&err));
  return rc == UIH_OK ? CLI_OK : CLI_FAIL;
}

/* ---- uih repair ------------------------------------------------------------ */

const char cli_usage_repair[] =
    "usage: uih repair --store DIR [--shard I]\n"
    "  accepts a named loss, so that a store every open refuses opens again: a write-ahead\n"
    "  log that does not replay whole or is missing, one that lost acknowledged appends, a\n"
    "  damaged acknowledged mark or .published hint. The refused files are kept in\n"
    "  DIR/lost/; each loss is printed and appended to DIR/REPAIRS. Damaged table files,\n"
    "  MANIFESTs or the descriptor are not repaired (uih verify says what they hold).\n"
    "  No other process may have the store open.\n"
    "Exit status: 0 every shard opens, 1 something could not be repaired, 2 usage.";

static void on_line(void *arg, const char *line) {
  (void)arg;
  printf("uih repair: %s\n", line);
}

int cmd_repair(int argc, char **argv) {
  const char *dir = NULL;
  uint64_t shard = 0;
  int one = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("%s\n", cli_usage_repair);
      return CLI_OK;
    }
    if (!strcmp(argv[i], "--store") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
      if (!cli_parse_u64("--shard", argv[++i], &shard) || shard > UINT32_MAX) return CLI_USAGE;
      one = 1;
    } else
      return cli_fail(CLI_USAGE, "bad argument %s\n%s", argv[i], cli_usage_repair);
  }
  if (!dir) return cli_fail(CLI_USAGE, "%s", cli_usage_repair);
  uih_error err = {0};
  const int rc = uih_store_repair(dir, one, (uint32_t)shard, on_line, NULL, &err);
  fflush(stdout);
  if (rc != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  return CLI_OK;
}
