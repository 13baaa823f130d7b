/* Prints, as JSON, the size of every C API struct the Python package
 * mirrors with ctypes (python/uihstore/_lib.py) and each field's offset,
 * as this compiler lays them out; python/tests/test_abi.py compares. */
#include <stddef.h>
#include <stdio.h>

#include "uih/error.h"
#include "uih/loader.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"

static int first_struct = 1, first_field;

#define BEGIN(T)                                                                   \
  do {                                                                             \
    printf("%s\n  \"%s\": {\"size\": %zu, \"fields\": {", first_struct ? "{" : ",", \
           #T, sizeof(T));                                                         \
    first_struct = 0;                                                              \
    first_field = 1;                                                               \
  } while (0)
#define FIELD(T, f)                                                        \
  do {                                                                     \
    printf("%s\"%s\": %zu", first_field ? "" : ", ", #f, offsetof(T, f)); \
    first_field = 0;                                                       \
  } while (0)
#define END() printf("}}")

int main(void) {
  BEGIN(uih_error); FIELD(uih_error, code); FIELD(uih_error, msg); END();
  BEGIN(uih_trait); FIELD(uih_trait, name); FIELD(uih_trait, id); FIELD(uih_trait, type);
  FIELD(uih_trait, encodings); FIELD(uih_trait, compression); FIELD(uih_trait, added_in);
  FIELD(uih_trait, dropped_in); FIELD(uih_trait, ncategories); FIELD(uih_trait, categories);
  FIELD(uih_trait, input); FIELD(uih_trait, unit); END();
  BEGIN(uih_group); FIELD(uih_group, name); FIELD(uih_group, id); FIELD(uih_group, stripe_events);
  FIELD(uih_group, ntraits); FIELD(uih_group, traits); FIELD(uih_group, ts); FIELD(uih_group, schema_version); END();
  BEGIN(uih_column); FIELD(uih_column, trait); FIELD(uih_column, values); FIELD(uih_column, present); END();
  BEGIN(uih_batch); FIELD(uih_batch, group); FIELD(uih_batch, count); FIELD(uih_batch, capacity);
  FIELD(uih_batch, ncolumns); FIELD(uih_batch, columns); END();
  BEGIN(uih_store_opts); FIELD(uih_store_opts, read_only); FIELD(uih_store_opts, keep);
  FIELD(uih_store_opts, block_cache_bytes); FIELD(uih_store_opts, file_bytes);
  FIELD(uih_store_opts, one_shard); FIELD(uih_store_opts, shard); FIELD(uih_store_opts, role);
  FIELD(uih_store_opts, follow_ms); FIELD(uih_store_opts, cache_bytes); END();
  BEGIN(uih_store_init_opts); FIELD(uih_store_init_opts, shards); FIELD(uih_store_init_opts, chunk_span); END();
  BEGIN(uih_cache_stats); FIELD(uih_cache_stats, hits); FIELD(uih_cache_stats, misses);
  FIELD(uih_cache_stats, entries); FIELD(uih_cache_stats, bytes); FIELD(uih_cache_stats, capacity); END();
  BEGIN(uih_generation); FIELD(uih_generation, generation); FIELD(uih_generation, parent);
  FIELD(uih_generation, schema_version); FIELD(uih_generation, shard); FIELD(uih_generation, through);
  FIELD(uih_generation, horizon); FIELD(uih_generation, events); FIELD(uih_generation, stripes);
  FIELD(uih_generation, histories); FIELD(uih_generation, bytes); FIELD(uih_generation, events_in);
  FIELD(uih_generation, events_new); FIELD(uih_generation, duplicates); FIELD(uih_generation, expired);
  FIELD(uih_generation, deleted); FIELD(uih_generation, inputs_digest); END();
  BEGIN(uih_load_progress); FIELD(uih_load_progress, phase); FIELD(uih_load_progress, shard);
  FIELD(uih_load_progress, events); FIELD(uih_load_progress, bytes); FIELD(uih_load_progress, seconds);
  FIELD(uih_load_progress, done); FIELD(uih_load_progress, total); FIELD(uih_load_progress, eta); END();
  BEGIN(uih_load_opts); FIELD(uih_load_opts, through); FIELD(uih_load_opts, lookback); FIELD(uih_load_opts, shard);
  FIELD(uih_load_opts, threads); FIELD(uih_load_opts, memory); FIELD(uih_load_opts, progress);
  FIELD(uih_load_opts, progress_arg); FIELD(uih_load_opts, deletes); FIELD(uih_load_opts, rejects);
  FIELD(uih_load_opts, schema_json); FIELD(uih_load_opts, schema_len); FIELD(uih_load_opts, schema_origin); FIELD(uih_load_opts, rebuild_dicts);
  FIELD(uih_load_opts, layout); FIELD(uih_load_opts, rewrite); END();
  BEGIN(uih_input_layout); FIELD(uih_input_layout, format); FIELD(uih_input_layout, delimiter);
  FIELD(uih_input_layout, group); FIELD(uih_input_layout, map); FIELD(uih_input_layout, columns); END();
  BEGIN(uih_load_stats); FIELD(uih_load_stats, inputs); FIELD(uih_load_stats, input_bytes);
  FIELD(uih_load_stats, events_in); FIELD(uih_load_stats, events_skipped); FIELD(uih_load_stats, duplicates);
  FIELD(uih_load_stats, expired); FIELD(uih_load_stats, events_new); FIELD(uih_load_stats, events);
  FIELD(uih_load_stats, stripes); FIELD(uih_load_stats, histories); FIELD(uih_load_stats, bytes);
  FIELD(uih_load_stats, stripes_copied); FIELD(uih_load_stats, stripes_written); FIELD(uih_load_stats, runs);
  FIELD(uih_load_stats, rejected); FIELD(uih_load_stats, deleted); FIELD(uih_load_stats, delete_users);
  FIELD(uih_load_stats, delete_items); FIELD(uih_load_stats, delete_pairs); FIELD(uih_load_stats, stripes_upgraded);
  FIELD(uih_load_stats, schema_version); FIELD(uih_load_stats, shards); FIELD(uih_load_stats, shards_skipped);
  FIELD(uih_load_stats, through); FIELD(uih_load_stats, horizon); FIELD(uih_load_stats, seconds_read);
  FIELD(uih_load_stats, seconds_sort); FIELD(uih_load_stats, seconds_merge); FIELD(uih_load_stats, dicts_built);
  FIELD(uih_load_stats, dict_entries); FIELD(uih_load_stats, dict_bytes); FIELD(uih_load_stats, dicts_declined);
  FIELD(uih_load_stats, shards_layered); FIELD(uih_load_stats, layers_max); END();
  BEGIN(uih_snapshot_spec_group); FIELD(uih_snapshot_spec_group, group); FIELD(uih_snapshot_spec_group, max_length);
  END();
  BEGIN(uih_snapshot_spec); FIELD(uih_snapshot_spec, ngroups); FIELD(uih_snapshot_spec, groups); END();
  BEGIN(uih_snapshot_group); FIELD(uih_snapshot_group, group); FIELD(uih_snapshot_group, length);
  FIELD(uih_snapshot_group, generation); FIELD(uih_snapshot_group, start_ts); FIELD(uih_snapshot_group, end_ts);
  FIELD(uih_snapshot_group, check); FIELD(uih_snapshot_group, mutable_events); FIELD(uih_snapshot_group, mutable_len);
  END();
  BEGIN(uih_snapshot_record); FIELD(uih_snapshot_record, store); FIELD(uih_snapshot_record, user_id);
  FIELD(uih_snapshot_record, request_ts); FIELD(uih_snapshot_record, schema_version);
  FIELD(uih_snapshot_record, ngroups); FIELD(uih_snapshot_record, groups); FIELD(uih_snapshot_record, version);
  FIELD(uih_snapshot_record, generation); END();
  BEGIN(uih_projection_group); FIELD(uih_projection_group, group); FIELD(uih_projection_group, max_length);
  FIELD(uih_projection_group, ntraits); FIELD(uih_projection_group, traits); END();
  BEGIN(uih_projection); FIELD(uih_projection, ngroups); FIELD(uih_projection, groups);
  FIELD(uih_projection, on_mismatch); FIELD(uih_projection, layout); END();
  BEGIN(uih_mat_column); FIELD(uih_mat_column, trait); FIELD(uih_mat_column, type); FIELD(uih_mat_column, values);
  FIELD(uih_mat_column, present); END();
  BEGIN(uih_mat_group); FIELD(uih_mat_group, group); FIELD(uih_mat_group, rows); FIELD(uih_mat_group, ncolumns);
  FIELD(uih_mat_group, columns); FIELD(uih_mat_group, offsets); FIELD(uih_mat_group, lengths); END();
  BEGIN(uih_materialize_stats); FIELD(uih_materialize_stats, records); FIELD(uih_materialize_stats, users);
  FIELD(uih_materialize_stats, mismatches); FIELD(uih_materialize_stats, unreadable);
  FIELD(uih_materialize_stats, events); FIELD(uih_materialize_stats, rows); FIELD(uih_materialize_stats, stripes_read);
  FIELD(uih_materialize_stats, bytes_read); FIELD(uih_materialize_stats, reads);
  FIELD(uih_materialize_stats, reads_batched); END();
  BEGIN(uih_materializer_opts); FIELD(uih_materializer_opts, threads); FIELD(uih_materializer_opts, depth);
  FIELD(uih_materializer_opts, each_record); FIELD(uih_materializer_opts, no_batch_reads); END();
  printf("\n}\n");
  return 0;
}
