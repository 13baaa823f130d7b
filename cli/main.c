/* uih — command-line tool for uihstore. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uih/uih.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: uih COMMAND [ARGS]\n"
          "\n"
          "commands:\n"
          "  init --store DIR --schema FILE [--shards N] [--chunk-span T]\n"
          "                                      create a store\n"
          "  load --store DIR [--through TS] [--lookback T] [--delete FILE]\n"
          "      [--schema NEWFILE] [--shard I] [--threads N] [--memory BYTES]\n"
          "      [--rejects FILE] [--keep N] [--rebuild-dictionaries] [--rewrite]\n"
          "      [--json] FILE...\n"
          "                                      fold CSV files (plain, .gz, .zst) into the\n"
          "                                      immutable tier as a new generation\n"
          "  status --store DIR [--json]         shards, generations, watermark, sizes\n"
          "  verify --store DIR [--json] [--all] read everything, every checksum: each\n"
          "                                      damaged file and the users it holds\n"
          "  repair --store DIR [--shard I]      accept a named loss an open refuses (a damaged\n"
          "                                      or lost write-ahead log): kept in DIR/lost/,\n"
          "                                      recorded in DIR/REPAIRS\n"
          "  read --store DIR --user ID --group NAME [--from TS] [--to TS]\n"
          "      [--tier immutable|mutable|all] [--generation N] [--arrival]\n"
          "                                      print a user's events as CSV\n"
          "  append --store DIR [--sync] [--write-events N] [--progress N] [FILE...]\n"
          "                                      append CSV events to the mutable tier\n"
          "  snapshot --store DIR (--user U --ts T | --requests FILE) [--group G[:N]]...\n"
          "      [--log FILE] [--out FILE] [--quiet]\n"
          "                                      inference: the sequences a model gets,\n"
          "                                      as CSV; their records appended to a log\n"
          "  materialize --store DIR --log FILE [--group G[:N]]... [--traits a,b]\n"
          "      [--on-mismatch fail|skip|flag] [--out FILE] [--batch N] [--threads N] [--quiet]\n"
          "                                      training: the logged records' sequences\n"
          "                                      rebuilt and projected, as the same CSV\n"
          "  log dump FILE                       print a snapshot log's records as text\n"
          "  log check FILE                      read a log whole: records, seal, damage\n"
          "  log seal FILE                       close a log for good (rotation)\n"
          "  schema check FILE [--previous OLD]  validate a schema file (and its\n"
          "                                      evolution from OLD) and print it\n"
          "  gen --schema FILE --group NAME [--users N] [--seed S] [--days D]\n"
          "      [--start-ts MS] [--first-user ID] [--max-events N] [--out FILE]\n"
          "                                      write generated histories as CSV\n"
          "  append --schema FILE --db DIR [--sync] [--max-events N] [--max-age T]\n"
          "      [--write-events N] [--progress N] [FILE...]\n"
          "                                      append CSV events (stdin if no FILE)\n"
          "                                      to a mutable store\n"
          "  read --schema FILE --db DIR --user ID --group NAME [--from TS] [--to TS]\n"
          "                                      print a user's mutable events as CSV\n"
          "  key encode USER GROUP TS            print the 18-byte stripe key in hex\n"
          "  key decode HEX                      print the (user, group, ts) of a key\n"
          "  key prefix USER [GROUP]             print the scan prefix and its upper bound\n"
          "  shard USER --shards N               print which of N shards holds USER\n"
          "  hash STRING...                      print each string id's 64-bit id\n"
          "  version                             print the library version\n"
          "\n"
          "`uih COMMAND --help` prints a command's usage.\n"
          "Exit status: 0 ok, 1 the input is invalid, 2 the command line is wrong.\n");
}

static const struct {
  const char *name, *usage;
} kCommands[] = {
    {"init", cli_usage_init},         {"load", cli_usage_load},
    {"status", cli_usage_status},     {"verify", cli_usage_verify},
    {"repair", cli_usage_repair},     {"read", cli_usage_read},
    {"append", cli_usage_append},     {"snapshot", cli_usage_snapshot},
    {"materialize", cli_usage_materialize}, {"log", cli_usage_log},
    {"schema", cli_usage_schema},     {"gen", cli_usage_gen},
    {"key", cli_usage_key},           {"shard", cli_usage_shard},
    {"hash", cli_usage_hash},
    {"version", "usage: uih version   print the library version"},
};

/* `uih COMMAND ... --help` (or -h) anywhere after the command: its usage
 * on stdout, exit 0, whatever else the line holds. */
static int help(const char *cmd, int argc, char **argv) {
  int asked = 0;
  for (int i = 2; i < argc; i++) asked |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
  if (!asked) return -1;
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++)
    if (!strcmp(kCommands[i].name, cmd)) {
      printf("%s\n", kCommands[i].usage);
      return CLI_OK;
    }
  return -1;  /* an unknown command: said below */
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return CLI_OK;
  }
  const int helped = help(cmd, argc, argv);
  if (helped >= 0) return helped;
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("uih %s\n", uih_version());
    return CLI_OK;
  }
  if (!strcmp(cmd, "schema")) return cmd_schema(argc - 2, argv + 2);
  if (!strcmp(cmd, "key")) return cmd_key(argc - 2, argv + 2);
  if (!strcmp(cmd, "shard")) return cmd_shard(argc - 2, argv + 2);
  if (!strcmp(cmd, "hash")) return cmd_hash(argc - 2, argv + 2);
  if (!strcmp(cmd, "gen")) return cmd_gen(argc - 2, argv + 2);
  if (!strcmp(cmd, "append")) return cmd_append(argc - 2, argv + 2);
  if (!strcmp(cmd, "init")) return cmd_init(argc - 2, argv + 2);
  if (!strcmp(cmd, "load")) return cmd_load(argc - 2, argv + 2);
  if (!strcmp(cmd, "status")) return cmd_status(argc - 2, argv + 2);
  if (!strcmp(cmd, "read")) return cmd_read(argc - 2, argv + 2);
  if (!strcmp(cmd, "snapshot")) return cmd_snapshot(argc - 2, argv + 2);
  if (!strcmp(cmd, "materialize")) return cmd_materialize(argc - 2, argv + 2);
  if (!strcmp(cmd, "log")) return cmd_log(argc - 2, argv + 2);
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
  if (!strcmp(cmd, "repair")) return cmd_repair(argc - 2, argv + 2);
  fprintf(stderr, "uih: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return CLI_USAGE;
}
