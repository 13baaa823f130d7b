/* uih key encode|decode|prefix — the immutable tier's key codec by hand;
 * uih shard — which shard holds a user; uih hash — a string id's id. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "uih/key.h"

static void print_hex(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
}

static int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

static int key_encode(int argc, char **argv) {
  if (argc != 3) return cli_fail(CLI_USAGE, "usage: uih key encode USER GROUP TS");
  uih_key k;
  if (!cli_parse_u64("USER", argv[0], &k.user_id) || !cli_parse_u16("GROUP", argv[1], &k.group) ||
      !cli_parse_i64("TS", argv[2], &k.ts))
    return CLI_USAGE;
  uint8_t buf[UIH_KEY_SIZE];
  uih_key_encode(&k, buf);
  print_hex(buf, sizeof buf);
  putchar('\n');
  return CLI_OK;
}

static int key_decode(int argc, char **argv) {
  if (argc != 1) return cli_fail(CLI_USAGE, "usage: uih key decode HEX");
  const char *hex = argv[0];
  size_t n = strlen(hex);
  if (n != 2 * UIH_KEY_SIZE)
    return cli_fail(CLI_FAIL, "key '%s' has %zu hex digits, expected %d (%d bytes)", hex, n,
                    2 * UIH_KEY_SIZE, UIH_KEY_SIZE);
  uint8_t buf[UIH_KEY_SIZE];
  for (size_t i = 0; i < UIH_KEY_SIZE; i++) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return cli_fail(CLI_FAIL, "key '%s': character %zu is not a hex digit", hex,
                      hi < 0 ? 2 * i + 1 : 2 * i + 2);
    buf[i] = (uint8_t)(hi << 4 | lo);
  }
  uih_key k;
  uih_error err = {0};
  if (uih_key_decode(buf, sizeof buf, &k, &err) != UIH_OK)
    return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  printf("user_id=%" PRIu64 " group=%u ts=%" PRId64 "\n", k.user_id, k.group, k.ts);
  return CLI_OK;
}

static int key_prefix(int argc, char **argv) {
  if (argc != 1 && argc != 2) return cli_fail(CLI_USAGE, "usage: uih key prefix USER [GROUP]");
  uint64_t user;
  uint16_t group = 0;
  if (!cli_parse_u64("USER", argv[0], &user) || (argc == 2 && !cli_parse_u16("GROUP", argv[1], &group)))
    return CLI_USAGE;
  uint8_t buf[UIH_KEY_GROUP_PREFIX_SIZE];
  size_t n = argc == 2 ? UIH_KEY_GROUP_PREFIX_SIZE : UIH_KEY_USER_PREFIX_SIZE;
  if (argc == 2) uih_key_group_prefix(user, group, buf);
  else uih_key_user_prefix(user, buf);
  printf("prefix      ");
  print_hex(buf, n);
  printf("\nupper bound ");
  if (uih_key_prefix_successor(buf, n)) print_hex(buf, n);
  else printf("(none: scan to the end)");
  putchar('\n');
  return CLI_OK;
}

const char cli_usage_key[] =
    "usage: uih key encode USER GROUP TS   the 18-byte stripe key in hex\n"
    "       uih key decode HEX             the (user, group, ts) of a key\n"
    "       uih key prefix USER [GROUP]    a scan prefix and its exclusive upper bound";
const char cli_usage_shard[] = "usage: uih shard USER --shards N   which of N shards holds USER (uih_shard_of)";

int cmd_key(int argc, char **argv) {
  if (argc < 1) return cli_fail(CLI_USAGE, "%s", cli_usage_key);
  if (!strcmp(argv[0], "encode")) return key_encode(argc - 1, argv + 1);
  if (!strcmp(argv[0], "decode")) return key_decode(argc - 1, argv + 1);
  if (!strcmp(argv[0], "prefix")) return key_prefix(argc - 1, argv + 1);
  return cli_fail(CLI_USAGE, "unknown key command '%s' (encode, decode, prefix)", argv[0]);
}

const char cli_usage_hash[] =
    "usage: uih hash STRING...   each string's 64-bit id (uih_hash_id: XXH3-64 of its UTF-8 bytes),\n"
    "                            one per line, in order; '-' reads strings from stdin, one per line";

/* One line of stdin at a time, its newline (and a CR before it) off. */
static int hash_stdin(void) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    if (n && line[n - 1] == '\n') n--;
    if (n && line[n - 1] == '\r') n--;
    printf("%" PRIu64 "\n", uih_hash_id(line, (size_t)n));
  }
  free(line);
  return ferror(stdin) ? cli_fail(CLI_FAIL, "reading stdin failed") : CLI_OK;
}

/* uih hash STRING...: the ids a store keeps for string ids. */
int cmd_hash(int argc, char **argv) {
  if (argc < 1) return cli_fail(CLI_USAGE, "%s", cli_usage_hash);
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-")) {
      int rc = hash_stdin();
      if (rc != CLI_OK) return rc;
      continue;
    }
    printf("%" PRIu64 "\n", uih_hash_id(argv[i], strlen(argv[i])));
  }
  return CLI_OK;
}

/* uih shard USER --shards N: the shard of USER's history (uih_shard_of). */
int cmd_shard(int argc, char **argv) {
  uint64_t user = 0, n = 0;
  int have_user = 0, have_n = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--shards") && i + 1 < argc) {
      if (!cli_parse_u64("--shards", argv[++i], &n)) return CLI_USAGE;
      have_n = 1;
    } else if (!have_user && argv[i][0] != '-') {
      if (!cli_parse_u64("USER", argv[i], &user)) return CLI_USAGE;
      have_user = 1;
    } else {
      return cli_fail(CLI_USAGE, "%s", cli_usage_shard);
    }
  }
  if (!have_user || !have_n) return cli_fail(CLI_USAGE, "%s", cli_usage_shard);
  if (n == 0 || n > 65536) return cli_fail(CLI_USAGE, "--shards %" PRIu64 " is outside [1, 65536]", n);
  printf("%u\n", uih_shard_of(user, (uint32_t)n));
  return CLI_OK;
}
