/* uihstore — the engine's public API (libuihstore) in one include.
 *
 *   uih/error.h   error codes, uih_strerror, uih_error messages
 *   uih/key.h     immutable-tier key codec (user, group, stripe start)
 *   uih/schema.h  schema files: feature groups and traits
 *   uih/batch.h   columnar event batches
 *   uih/stripe.h  the stripe codec (encode, inspect, selective decode)
 *   uih/events.h  the mutable tier's event lists (merge, retention)
 *   uih/table.h   the UihTable file format: data section, index, read path
 *   uih/io.h      batched reads: io_uring, pread
 *   uih/csv.h     loader-input CSV: reading and writing
 *   uih/gen.h     a deterministic generator of realistic histories
 *   uih/generation.h  a store's metadata: generation records, its descriptor
 *   uih/snapshot.h  snapshot records, their logs and identity checksums
 *
 * What needs a RocksDB database (stores, uih/store.h; the mutable tier,
 * uih/mutable.h; the loader, uih/loader.h; snapshots and rebuilds,
 * uih/materialize.h) is libuih_rocksdb's, installed with it.
 */
#ifndef UIH_UIH_H
#define UIH_UIH_H

#include "uih/batch.h"
#include "uih/csv.h"
#include "uih/error.h"
#include "uih/events.h"
#include "uih/gen.h"
#include "uih/generation.h"
#include "uih/io.h"
#include "uih/key.h"
#include "uih/schema.h"
#include "uih/snapshot.h"
#include "uih/stripe.h"
#include "uih/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version as "MAJOR.MINOR.PATCH"; static storage. */
const char *uih_version(void);

#ifdef __cplusplus
}
#endif
#endif /* UIH_UIH_H */
