#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int cli_layout_arg(const char *a, const char *v, uih_input_layout *layout, char **owned) {
  if (!strcmp(a, "--format")) layout->format = v;
  else if (!strcmp(a, "--delimiter")) layout->delimiter = !strcmp(v, "\\t") || !strcmp(v, "tab") ? "\t" : v;
  else if (!strcmp(a, "--group")) layout->group = v;
  else if (!strcmp(a, "--columns")) layout->columns = v;
  else if (!strcmp(a, "--map")) {
    struct stat st;
    if (stat(v, &st) != 0 || !S_ISREG(st.st_mode)) {
      if (!strchr(v, '='))
        return cli_fail(CLI_USAGE, "--map %s: neither name=column,... nor a mapping file", v), -1;
      layout->map = v;
      return 1;
    }
    /* a mapping file: name=column per line (or comma-separated), # to the end of a line a comment */
    FILE *f = fopen(v, "r");
    if (!f) return cli_fail(CLI_FAIL, "--map %s: %s", v, strerror(errno)), -1;
    size_t cap = 256, n = 0, lcap = 0;
    char *text = malloc(cap), *line = NULL;
    while (text && getline(&line, &lcap, f) >= 0) {
      char *hash = strchr(line, '#');
      if (hash) *hash = '\0';
      line[strcspn(line, "\r\n")] = '\0';
      char *p = line;
      while (*p == ' ' || *p == '\t') p++;
      if (!*p) continue;
      size_t len = strlen(p);
      if (n + len + 2 > cap) {
        char *t = realloc(text, cap = 2 * (n + len + 2));
        if (!t) free(text);
        text = t;
        if (!text) break;
      }
      if (n) text[n++] = ',';
      memcpy(text + n, p, len);
      n += len;
    }
    free(line);
    fclose(f);
    if (!text) return cli_fail(CLI_FAIL, "out of memory"), -1;
    text[n] = '\0';
    free(*owned);
    *owned = text;
    layout->map = text;
  } else {
    return 0;
  }
  return 1;
}
