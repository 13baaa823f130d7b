/* uih init, uih load, uih status — a store (uih/store.h) and its daily
 * loads (uih/loader.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "uih/loader.h"
#include "uih/store.h"
#include "uih/stripe.h"

/* ---- uih init ---------------------------------------------------------------------- */

const char cli_usage_init[] =
    "usage: uih init --store DIR --schema FILE [--shards N] [--chunk-span T]\n"
    "  --chunk-span T  the mutable tier keeps a user's events in chunks of T time units\n"
    "                  (default 3600000: an hour of milliseconds; 3600 for seconds)";

static int read_file(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  int ok = buf && !ferror(f);
  fclose(f);
  if (!ok) {
    free(buf);
    return 0;
  }
  *out = buf;
  *len = n;
  return 1;
}

int cmd_init(int argc, char **argv) {
  const char *dir = NULL, *schema_path = NULL;
  uint64_t shards = 1, span = UIH_CHUNK_SPAN_DEFAULT;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_init);
    i++;
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--schema")) schema_path = v;
    else if (!strcmp(a, "--shards") && cli_parse_u64(a, v, &shards)) {
      if (shards < 1 || shards > UIH_STORE_SHARDS_MAX)
        return cli_fail(CLI_USAGE, "--shards %s: expected 1..%d", v, UIH_STORE_SHARDS_MAX);
    } else if (!strcmp(a, "--chunk-span") && cli_parse_u64(a, v, &span)) {
      if (span < 1 || span > INT64_MAX) return cli_fail(CLI_USAGE, "--chunk-span %s: expected 1..%lld", v, (long long)INT64_MAX);
    } else
      return cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_init);
  }
  if (!dir || !schema_path) return cli_fail(CLI_USAGE, "%s", cli_usage_init);
  char *json;
  size_t len;
  if (!read_file(schema_path, &json, &len)) return cli_fail(CLI_FAIL, "%s: cannot read the schema file", schema_path);
  uih_error err = {0};
  uih_store_init_opts o = UIH_STORE_INIT_OPTS_DEFAULT;
  o.shards = (uint32_t)shards;
  o.chunk_span = (int64_t)span;
  int rc = uih_store_create(dir, json, len, schema_path, &o, &err);
  free(json);
  if (rc != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  printf("uih init: store %s with %" PRIu64 " shard%s\n", dir, shards, shards == 1 ? "" : "s");
  return CLI_OK;
}

/* ---- uih load ---------------------------------------------------------------------- */

const char cli_usage_load[] =
    "usage: uih load --store DIR [--through TS] [--lookback T] [--delete FILE] [--schema NEWFILE]\n"
    "                [--shard I] [--threads N] [--memory BYTES] [--rejects FILE] [--keep N]\n"
    "                [--rebuild-dictionaries] [--rewrite] [--json] [LAYOUT] FILE...\n"
    "  FILE...         loader-input CSV or JSON Lines (plain, .gz, .zst), files or directories;\n"
    "                  '-' is stdin\n"
    "                  (none: a load of deletions, a schema change or a rebuild alone, given\n"
    "                  --delete, --schema, --through or --rebuild-dictionaries)\n"
    "  --delete FILE   users, items or (user, item) pairs to erase from the whole history:\n"
    "                  CSV with the header user_id, an id trait's name, or both\n"
    "  --schema FILE   a new schema version (a valid successor) applied by this load\n"
    "  --shard I       load shard I alone (the other shards' events are skipped), opening only\n"
    "                  its database: loads of different shards can run at once, one per process\n"
    "  --threads N     input files read at once and shards merged at once (default 1)\n"
    "  --memory BYTES  what the sort holds before it spills compressed runs to DIR/tmp\n"
    "                  (default 256 MiB; the readers share it)\n"
    "  --rejects FILE  bad lines go there (file,line,reason,record) and the load goes on\n"
    "  --keep N        live generations per shard after the load (default 2; 1 leaves no older\n"
    "                  copy of what --delete erased)\n"
    "  --rebuild-dictionaries\n"
    "                  count every shareable trait over the whole history, build its value\n"
    "                  dictionary afresh and encode every stripe again with them (today's popular\n"
    "                  items get the short ranks; dictionaries of older versions are replaced)\n"
    "  --rewrite       write every shard's generation whole; without it a load writes only the\n"
    "                  stripes it changes, as a layer above the shard's files (shared, never\n"
    "                  rewritten), but after 3 layers, or when the layers pass a fifth of the\n"
    "                  oldest one's bytes, or with --delete, --schema or --rebuild-dictionaries\n"
    CLI_USAGE_LAYOUT;

/* "256M", "1G", "65536": bytes with an optional K/M/G suffix (powers of 1024). */
static int parse_bytes(const char *what, const char *text, uint64_t *out) {
  char buf[32];
  size_t n = strlen(text);
  if (n == 0 || n >= sizeof buf) return cli_fail(CLI_USAGE, "%s '%s' is not a size", what, text), 0;
  memcpy(buf, text, n + 1);
  unsigned shift = 0;
  char last = buf[n - 1];
  if (last == 'K' || last == 'k') shift = 10;
  else if (last == 'M' || last == 'm') shift = 20;
  else if (last == 'G' || last == 'g') shift = 30;
  if (shift) buf[n - 1] = '\0';
  uint64_t v;
  if (!cli_parse_u64(what, buf, &v)) return 0;
  if (v > (UINT64_MAX >> shift)) return cli_fail(CLI_USAGE, "%s '%s' is too large", what, text), 0;
  *out = v << shift;
  return 1;
}

/* Load progress on stderr: on a terminal one line per phase, redrawn as a
 * bar with its pace and ETA; otherwise a plain line every few seconds and
 * one when a shard is merged or published. */
typedef struct progress_state {
  int tty;
  char phase[16]; /* the phase on screen ("" before the first) */
  double last;    /* its seconds when last shown */
  int open;       /* a terminal line not yet ended */
  int rebuild;    /* the merge counts the stored events before it writes */
} progress_state;

static void on_progress(const uih_load_progress *p, void *arg) {
  progress_state *s = arg;
  int fresh = strncmp(s->phase, p->phase, sizeof s->phase - 1) != 0;
  int last = p->total && p->done >= p->total; /* the phase's end is always shown */
  if (!fresh && !last && p->shard < 0 && p->seconds - s->last < (s->tty ? 0.25 : 5.0)) return;
  if (fresh && s->open) fputc('\n', stderr); /* the last phase's final state stays on screen */
  snprintf(s->phase, sizeof s->phase, "%s", p->phase);
  s->last = p->seconds;
  char what[96], eta[32] = "";
  const char *written = s->rebuild ? "counted and written" : "written";
  if (!strcmp(p->phase, "read"))
    snprintf(what, sizeof what, "%.2f M events, %.1f MB/s", (double)p->events / 1e6,
             p->seconds > 0 ? (double)p->bytes / 1e6 / p->seconds : 0.0);
  else if (!strcmp(p->phase, "merge") && p->shard >= 0)
    snprintf(what, sizeof what, "%.2f M events %s, shard %d done", (double)p->events / 1e6, written, p->shard);
  else if (!strcmp(p->phase, "merge"))
    snprintf(what, sizeof what, "%.2f M events %s", (double)p->events / 1e6, written);
  else
    snprintf(what, sizeof what, "shard %d current", p->shard);
  if (p->eta > 0) snprintf(eta, sizeof eta, ", ETA %.0f s", p->eta);
  int pct = p->total ? (int)(100.0 * (double)(p->done < p->total ? p->done : p->total) / (double)p->total) : -1;
  if (s->tty) {
    char bar[21];
    for (int i = 0; i < 20; i++) bar[i] = pct >= 0 && i < pct / 5 ? '#' : '.';
    bar[20] = '\0';
    if (pct >= 0)
      fprintf(stderr, "\ruih load: %-7s [%s] %3d%%  %s, %.1f s%s\033[K", p->phase, bar, pct, what, p->seconds, eta);
    else
      fprintf(stderr, "\ruih load: %-7s %s, %.1f s\033[K", p->phase, what, p->seconds);
    s->open = 1;
  } else if (pct >= 0) {
    fprintf(stderr, "uih load: %s: %d%%, %s, %.1f s%s\n", p->phase, pct, what, p->seconds, eta);
  } else {
    fprintf(stderr, "uih load: %s: %s, %.1f s\n", p->phase, what, p->seconds);
  }
  fflush(stderr);
}

/* A generation's value dictionaries (uih/stripe.h): how many, entries and
 * bytes in all, and a line naming each when `line` (text output). */
static int print_dicts(uih_store *s, uint32_t shard, uint32_t generation, int line, uint64_t *count, uint64_t *bytes,
                       uih_error *err) {
  uih_store_scan *sc = NULL;
  uih_stripe_context *ctx = NULL;
  int rc = uih_store_scan_open(s, shard, generation, &sc, err);
  const uint8_t *p = NULL;
  size_t len = 0;
  if (rc == UIH_OK) rc = uih_store_scan_dicts(sc, &p, &len, err);
  *bytes = len;
  if (rc == UIH_OK) rc = uih_stripe_context_parse(p, len, 0, &ctx, err);
  *count = uih_stripe_context_count(ctx);
  for (size_t k = 0; line && k < *count; k++) {
    const uih_value_dict *d = uih_stripe_context_at(ctx, k);
    const uih_group *g = uih_schema_group_by_id(uih_store_schema(s), uih_value_dict_group(d));
    const uih_trait *t = g ? uih_group_trait_by_id(g, uih_value_dict_trait(d)) : NULL;
    if (uih_value_dict_entries(d))
      printf("%s%s.%s %u", k ? ", " : "    value dictionaries: ", g ? g->name : "?", t ? t->name : "?",
             uih_value_dict_entries(d));
    else
      printf("%s%s.%s declined", k ? ", " : "    value dictionaries: ", g ? g->name : "?", t ? t->name : "?");
  }
  if (line && *count) printf(" (entries), %.2f MB\n", (double)*bytes / 1e6);
  uih_stripe_context_free(ctx);
  uih_store_scan_close(sc);
  return rc;
}

static void print_summary(const uih_load_stats *st, int rebuilt, int json) {
  double total = st->seconds_read + st->seconds_sort + st->seconds_merge;
  if (json) {
    printf("{\"inputs\":%" PRIu64 ",\"input_bytes\":%" PRIu64 ",\"events_in\":%" PRIu64 ",\"events_skipped\":%" PRIu64
           ",\"rejected\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"expired\":%" PRIu64 ",\"deleted\":%" PRIu64
           ",\"events_new\":%" PRIu64 ",\"events\":%" PRIu64 ",\"stripes\":%" PRIu64 ",\"histories\":%" PRIu64
           ",\"bytes\":%" PRIu64 ",\"stripes_copied\":%" PRIu64 ",\"stripes_written\":%" PRIu64
           ",\"stripes_upgraded\":%" PRIu64 ",\"runs\":%" PRIu64 ",\"shards\":%u,\"shards_skipped\":%u"
           ",\"shards_layered\":%u,\"layers_max\":%u"
           ",\"schema_version\":%u,\"through\":%" PRId64 ",\"horizon\":%" PRId64
           ",\"deletions\":{\"users\":%" PRIu64 ",\"items\":%" PRIu64 ",\"pairs\":%" PRIu64 "}"
           ",\"dictionaries\":{\"built\":%" PRIu64 ",\"entries\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"declined\":%" PRIu64 ",\"rebuilt\":%s}"
           ",\"seconds\":{\"read\":%.3f,\"sort\":%.3f,\"merge\":%.3f,\"total\":%.3f}}\n",
           st->inputs, st->input_bytes, st->events_in, st->events_skipped, st->rejected, st->duplicates, st->expired,
           st->deleted, st->events_new, st->events, st->stripes, st->histories, st->bytes, st->stripes_copied,
           st->stripes_written, st->stripes_upgraded, st->runs, st->shards, st->shards_skipped, st->shards_layered,
           st->layers_max, st->schema_version,
           st->through, st->horizon, st->delete_users, st->delete_items, st->delete_pairs, st->dicts_built,
           st->dict_entries, st->dict_bytes, st->dicts_declined, rebuilt && st->shards ? "true" : "false",
           st->seconds_read, st->seconds_sort, st->seconds_merge, total);
    return;
  }
  printf("uih load: %u shard%s now at through %" PRId64 "%s, schema version %u\n", st->shards,
         st->shards == 1 ? "" : "s", st->through, st->horizon == INT64_MIN ? "" : " (lookback applied)",
         st->schema_version);
  if (st->shards_skipped)
    printf("  skipped: %u shard%s already had this very load (a rerun): left as they are\n", st->shards_skipped,
           st->shards_skipped == 1 ? "" : "s");
  printf("  in:      %" PRIu64 " events from %" PRIu64 " input%s (%.1f MB)", st->events_in, st->inputs,
         st->inputs == 1 ? "" : "s", (double)st->input_bytes / 1e6);
  if (st->events_skipped) printf(", %" PRIu64 " of other shards skipped", st->events_skipped);
  if (st->rejected) printf(", %" PRIu64 " bad lines rejected", st->rejected);
  printf("\n  new:     %" PRIu64 " events stored for the first time, %" PRIu64 " duplicates kept once\n", st->events_new,
         st->duplicates);
  if (st->horizon != INT64_MIN)
    printf("  expired: %" PRIu64 " events older than %" PRId64 " dropped\n", st->expired, st->horizon);
  if (st->delete_users || st->delete_items || st->delete_pairs)
    printf("  deleted: %" PRIu64 " events erased for %" PRIu64 " users, %" PRIu64 " items, %" PRIu64 " pairs\n",
           st->deleted, st->delete_users, st->delete_items, st->delete_pairs);
  printf("  stored:  %" PRIu64 " events of %" PRIu64 " user histories in %" PRIu64 " stripes, %.1f MB, %.2f bytes/event\n",
         st->events, st->histories, st->stripes, (double)st->bytes / 1e6,
         st->events ? (double)st->bytes / (double)st->events : 0.0);
  if (st->dict_bytes)
    printf("  shared:  value dictionaries of %.1f MB (%.2f bytes/event)%s\n", (double)st->dict_bytes / 1e6,
           st->events ? (double)st->dict_bytes / (double)st->events : 0.0,
           st->dicts_built || rebuilt ? "" : ", kept from the base");
  if (st->dicts_built)
    printf("           %" PRIu64 " built by this load%s, %" PRIu64
           " entries: popular values stored as their rank or code\n",
           st->dicts_built, rebuilt ? " (rebuilt from the whole history)" : "", st->dict_entries);
  if (st->dicts_declined)
    printf("           %" PRIu64 " declined: neither ranks nor codes would save enough\n", st->dicts_declined);
  printf("  stripes: %" PRIu64 " %s, %" PRIu64 " written", st->stripes_copied,
         st->shards_layered == st->shards && st->shards ? "left where they were"
         : st->shards_layered                           ? "copied byte for byte or left where they were"
                                                        : "copied byte for byte",
         st->stripes_written);
  if (st->stripes_upgraded) printf(" (%" PRIu64 " only to drop traits the schema dropped)", st->stripes_upgraded);
  printf("\n");
  if (st->shards)
    printf("  layers:  %u of %u shard%s written as a layer above the generation before (up to %u layers)\n",
           st->shards_layered, st->shards, st->shards == 1 ? "" : "s", st->layers_max);
  printf("  time:    read %.2f s, sort %.2f s (%" PRIu64 " runs spilled), merge+publish %.2f s; %.2f M events/s\n",
         st->seconds_read, st->seconds_sort, st->runs, st->seconds_merge,
         total > 0 ? (double)st->events_in / total / 1e6 : 0.0);
}

int cmd_load(int argc, char **argv) {
  const char *dir = NULL, *schema_path = NULL;
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.role = UIH_STORE_ROLE_LOAD; /* a serving process may own the mutable tiers meanwhile */
  int json = 0, taken;
  uih_input_layout layout = {NULL, NULL, NULL, NULL, NULL};
  char *map_text = NULL; /* a --map file's */
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  size_t nfiles = 0;
  if (!files) return cli_fail(CLI_FAIL, "out of memory");
  int bad = 0;
  for (int i = 0; i < argc && !bad; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--json")) {
      json = 1;
      continue;
    }
    if (!strcmp(a, "--rebuild-dictionaries")) {
      o.rebuild_dicts = 1;
      continue;
    }
    if (!strcmp(a, "--rewrite")) {
      o.rewrite = 1;
      continue;
    }
    if (a[0] != '-' || !strcmp(a, "-")) {
      files[nfiles++] = a;
      continue;
    }
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      bad = cli_fail(CLI_USAGE, "%s needs a value\n%s", a, cli_usage_load);
      break;
    }
    i++;
    uint64_t u;
    int64_t t;
    if (!strcmp(a, "--store")) dir = v;
    else if (!strcmp(a, "--through") && cli_parse_i64(a, v, &t) && t != INT64_MIN) o.through = t;
    else if (!strcmp(a, "--lookback") && cli_parse_i64(a, v, &t) && t > 0) o.lookback = t;
    else if (!strcmp(a, "--shard") && cli_parse_u64(a, v, &u) && u < UIH_STORE_SHARDS_MAX) {
      o.shard = (int32_t)u; /* opening that shard alone: loads of other shards may run meanwhile */
      so.one_shard = 1;
      so.shard = (uint32_t)u;
    }
    else if (!strcmp(a, "--threads") && cli_parse_u64(a, v, &u) && u >= 1 && u <= 64) o.threads = (uint32_t)u;
    else if (!strcmp(a, "--memory") && parse_bytes(a, v, &u)) o.memory = (size_t)u;
    else if (!strcmp(a, "--delete")) o.deletes = v;
    else if (!strcmp(a, "--keep") && cli_parse_u64(a, v, &u) && u >= 1 && u <= 1000) so.keep = (uint32_t)u;
    else if (!strcmp(a, "--rejects")) o.rejects = v;
    else if (!strcmp(a, "--schema")) schema_path = v;
    else if ((taken = cli_layout_arg(a, v, &layout, &map_text)) != 0) bad = taken < 0 ? CLI_USAGE : 0;
    else bad = cli_fail(CLI_USAGE, "bad option %s %s\n%s", a, v, cli_usage_load);
  }
  if (!bad && (!dir || (nfiles == 0 && !o.deletes && !schema_path && o.through == INT64_MIN && !o.rebuild_dicts)))
    bad = cli_fail(CLI_USAGE, "%s", cli_usage_load);
  char *schema_json = NULL;
  if (!bad && schema_path) {
    if (!read_file(schema_path, &schema_json, &o.schema_len))
      bad = cli_fail(CLI_FAIL, "%s: cannot read the schema file", schema_path);
    o.schema_json = schema_json;
    o.schema_origin = schema_path;
  }
  if (bad) {
    free(files);
    free(map_text);
    return bad;
  }
  if (layout.format || layout.delimiter || layout.group || layout.map || layout.columns) o.layout = &layout;
  progress_state ps = {.tty = isatty(2), .rebuild = o.rebuild_dicts};
  o.progress = on_progress;
  o.progress_arg = &ps;
  uih_error err = {0};
  uih_store *s = NULL;
  uih_load_stats st;
  int rc = uih_store_open(dir, &so, &s, &err);
  if (rc == UIH_OK) rc = uih_load(s, files, nfiles, &o, &st, &err);
  if (ps.open) fputc('\n', stderr);
  uih_store_close(s);
  free(files);
  free(schema_json);
  free(map_text);
  if (rc != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  print_summary(&st, o.rebuild_dicts, json);
  return CLI_OK;
}

/* ---- uih status ---------------------------------------------------------------------- */

const char cli_usage_status[] = "usage: uih status --store DIR [--json]";

int cmd_status(int argc, char **argv) {
  const char *dir = NULL;
  int json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) dir = argv[++i];
    else return cli_fail(CLI_USAGE, "bad argument %s\n%s", argv[i], cli_usage_status);
  }
  if (!dir) return cli_fail(CLI_USAGE, "%s", cli_usage_status);
  uih_error err = {0};
  uih_store *s = NULL;
  if (cli_open_store_read_only(dir, &s) != CLI_OK) return CLI_FAIL;
  const uih_schema *schema = uih_store_schema(s);
  uint32_t n = uih_store_shards(s);
  if (json)
    printf("{\"store\":\"%s\",\"id\":\"%016" PRIx64 "\",\"schema\":{\"name\":\"%s\",\"version\":%u},\"shards\":[", dir,
           uih_store_id(s), uih_schema_name(schema), uih_schema_version(schema));
  else
    printf("store %s (id %016" PRIx64 "): schema '%s' version %u, %u shard%s\n", dir, uih_store_id(s),
           uih_schema_name(schema), uih_schema_version(schema), n, n == 1 ? "" : "s");
  int rc = CLI_OK;
  for (uint32_t i = 0; i < n && rc == CLI_OK; i++) {
    uih_generation gens[16];
    size_t ng;
    uint32_t cur;
    uint64_t imm, mut;
    int64_t wm;
    int has;
    uih_mutable *tier = NULL;
    if (uih_store_generations(s, i, gens, 16, &ng, &cur, &err) != UIH_OK ||
        uih_store_sizes(s, i, &imm, &mut, &err) != UIH_OK || uih_store_mutable(s, i, &tier, &err) != UIH_OK ||
        uih_mutable_watermark(tier, &wm, &has, &err) != UIH_OK) {
      rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
      break;
    }
    if (ng > 16) ng = 16;
    if (json) {
      printf("%s{\"shard\":%u,\"current\":%u,\"watermark\":", i ? "," : "", i, cur);
      if (has) printf("%" PRId64, wm);
      else printf("null");
      printf(",\"immutable_bytes\":%" PRIu64 ",\"mutable_bytes\":%" PRIu64 ",\"chunk_span\":%" PRId64
             ",\"recovered\":\"",
             imm, mut, uih_mutable_chunk_span(tier));
      for (const char *c = uih_store_recovered(s, i); *c; c++) /* file names and numbers; escaped all the same */
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if ((unsigned char)*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
      printf("\",\"generations\":[");
      for (size_t g = 0; g < ng; g++) {
        const uih_generation *x = &gens[g];
        printf("%s{\"generation\":%u,\"parent\":%u,\"schema_version\":%u,\"through\":%" PRId64 ",\"horizon\":", g ? "," : "",
               x->generation, x->parent, x->schema_version, x->through);
        if (x->horizon == INT64_MIN) printf("null");
        else printf("%" PRId64, x->horizon);
        printf(",\"events\":%" PRIu64 ",\"stripes\":%" PRIu64 ",\"histories\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"events_in\":%" PRIu64 ",\"events_new\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"expired\":%" PRIu64
               ",\"inputs_digest\":\"%016" PRIx64 "\"",
               x->events, x->stripes, x->histories, x->bytes, x->events_in, x->events_new, x->duplicates, x->expired,
               x->inputs_digest);
        uint64_t dicts = 0, dict_bytes = 0;
        if (print_dicts(s, i, x->generation, 0, &dicts, &dict_bytes, &err) != UIH_OK) {
          rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
          break;
        }
        uih_generation_layout lay;
        if (uih_store_generation_layout(s, i, x->generation, &lay, &err) != UIH_OK) {
          rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
          break;
        }
        printf(",\"dicts\":%" PRIu64 ",\"dict_bytes\":%" PRIu64 ",\"layers\":%u,\"files\":%u}", dicts, dict_bytes,
               lay.layers, lay.files);
      }
      printf("]}");
      continue;
    }
    printf("shard %u: ", i);
    if (cur == 0) printf("no generation yet");
    else printf("generation %u current", cur);
    if (has) printf(", watermark %" PRId64, wm);
    printf(", immutable %.1f MB, mutable %.1f MB", (double)imm / 1e6, (double)mut / 1e6);
    const int64_t span = uih_mutable_chunk_span(tier);
    if (span) printf(" in chunks of %" PRId64 "\n", span);
    else printf(" (one list per user and group: a store made before chunks)\n");
    if (*uih_store_recovered(s, i)) printf("  recovered: %s\n", uih_store_recovered(s, i));
    for (size_t g = 0; g < ng; g++) {
      const uih_generation *x = &gens[g];
      printf("  %s generation %u (on %u, schema v%u): through %" PRId64 ", %" PRIu64 " events in %" PRIu64
             " stripes of %" PRIu64 " histories, %.1f MB (%.2f B/event); load: %" PRIu64 " in, %" PRIu64
             " new, %" PRIu64 " duplicates, %" PRIu64 " expired\n",
             x->generation == cur ? "*" : " ", x->generation, x->parent, x->schema_version, x->through, x->events,
             x->stripes, x->histories, (double)x->bytes / 1e6, x->events ? (double)x->bytes / (double)x->events : 0.0,
             x->events_in, x->events_new, x->duplicates, x->expired);
      uint64_t dicts = 0, dict_bytes = 0;
      if (print_dicts(s, i, x->generation, 1, &dicts, &dict_bytes, &err) != UIH_OK) {
        rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
        break;
      }
      uih_generation_layout lay;
      if (uih_store_generation_layout(s, i, x->generation, &lay, &err) != UIH_OK) {
        rc = cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
        break;
      }
      if (lay.layers > 1)
        printf("    %u layers in %u files, %.1f MB (the oldest layer %.1f MB; the rest, loads written as layers)\n",
               lay.layers, lay.files, (double)lay.bytes / 1e6, (double)lay.oldest_bytes / 1e6);
      int pinned = 0;
      if (x->generation != cur && uih_store_pinned(s, i, x->generation, &pinned, &err) == UIH_OK && pinned)
        printf("    held by a read-only store: not retired until it lets go\n");
    }
  }
  if (json && rc == CLI_OK) printf("]}\n");
  uih_store_close(s);
  return rc;
}
