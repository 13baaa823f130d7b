#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "uih/key.h"
#include "uih/store.h"

int cli_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("uih: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

int cli_parse_u64(const char *what, const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (text[0] == '\0' || text[0] == '-' || text[0] == '+' || *end != '\0' || errno == ERANGE) {
    cli_fail(CLI_USAGE, "%s '%s' is not an unsigned 64-bit integer (0 to 18446744073709551615)",
             what, text);
    return 0;
  }
  *out = v;
  return 1;
}

int cli_parse_i64(const char *what, const char *text, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (text[0] == '\0' || text[0] == '+' || *end != '\0' || errno == ERANGE) {
    cli_fail(CLI_USAGE,
             "%s '%s' is not a signed 64-bit integer (-9223372036854775808 to 9223372036854775807)",
             what, text);
    return 0;
  }
  *out = v;
  return 1;
}

int cli_parse_user(const uih_schema *schema, const char *what, const char *text, uint64_t *out) {
  if (uih_schema_user_ids(schema) != UIH_INPUT_STRING) return cli_parse_u64(what, text, out);
  if (text[0] == '\0') {
    cli_fail(CLI_USAGE, "%s is empty: the store's user ids are strings, and none is empty", what);
    return 0;
  }
  *out = uih_hash_id(text, strlen(text));
  return 1;
}

int cli_parse_u16(const char *what, const char *text, uint16_t *out) {
  uint64_t v;
  if (!cli_parse_u64(what, text, &v)) return 0;
  if (v > UINT16_MAX) {
    cli_fail(CLI_USAGE, "%s '%s' is out of range (0 to 65535)", what, text);
    return 0;
  }
  *out = (uint16_t)v;
  return 1;
}

int cli_open_store_read_only(const char *dir, uih_store **out) {
  uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
  so.read_only = 1;
  uih_error err = {0};
  if (uih_store_open(dir, &so, out, &err) != UIH_OK) return cli_fail(CLI_FAIL, "%s", uih_error_message(&err));
  return CLI_OK;
}
