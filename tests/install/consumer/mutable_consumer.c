/* Uses libuih_rocksdb's installed C API: a mutable store appended to and
 * read back (the batch types come from libuihstore). */
#include <stdio.h>

#include <uih/mutable.h>
#include <uih/uih.h>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  uih_error err = {0};
  uih_schema *s = NULL;
  uih_mutable *m = NULL;
  uih_batch *in = NULL, *out = NULL;
  int rc = uih_schema_load(argv[1], &s, &err);
  if (rc == UIH_OK) rc = uih_mutable_open(argv[2], s, NULL, &m, &err);
  const uih_group *g = rc == UIH_OK ? uih_schema_group_at(s, 0) : NULL;
  if (rc == UIH_OK) rc = uih_batch_create(g, 4, NULL, 0, &in, &err);
  uint32_t row;
  if (rc == UIH_OK) rc = uih_batch_append(in, &row, &err);
  if (rc == UIH_OK) {
    uih_column_set_bits(uih_batch_ts_column(in), row, 1700000000000);
    rc = uih_mutable_append(m, 42, in, 0, &err);
  }
  if (rc == UIH_OK) rc = uih_mutable_read(m, 42, g->id, INT64_MIN, INT64_MAX, &out, &err);
  int ok = rc == UIH_OK && out->count == 1;
  if (rc == UIH_OK) printf("uih_rocksdb: user 42 has %u event(s) in group %s\n", out->count, g->name);
  else fprintf(stderr, "%s\n", uih_error_message(&err));
  uih_batch_free(in);
  uih_batch_free(out);
  uih_mutable_close(m);
  uih_schema_free(s);
  return ok ? 0 : 1;
}
