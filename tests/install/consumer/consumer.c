/* Uses the installed public API only: a schema, a key, a batch. */
#include <stdio.h>
#include <string.h>

#include <uih/uih.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  uih_error err = {0};
  uih_schema *s = NULL;
  if (uih_schema_load(argv[1], &s, &err) != UIH_OK) {
    fprintf(stderr, "%s\n", uih_error_message(&err));
    return 1;
  }
  uih_batch *b = NULL;
  if (uih_batch_create(uih_schema_group_at(s, 0), 16, NULL, 0, &b, &err) != UIH_OK) return 1;
  uih_key k = {42, 1, -1}, back;
  uint8_t buf[UIH_KEY_SIZE];
  uih_key_encode(&k, buf);
  if (uih_key_decode(buf, sizeof buf, &back, &err) != UIH_OK || back.ts != -1) return 1;
  printf("uihstore %s: schema %s v%u, %u columns\n", uih_version(), uih_schema_name(s),
         uih_schema_version(s), b->ncolumns);
  uih_batch_free(b);
  uih_schema_free(s);
  return 0;
}
