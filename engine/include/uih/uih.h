/* uihstore — the engine's public API in one include.
 *
 *   uih/error.h   error codes, uih_strerror, uih_error messages
 *   uih/key.h     immutable-tier key codec (user, group, stripe start)
 *   uih/schema.h  schema files: feature groups and traits
 *   uih/batch.h   columnar event batches
 *   uih/stripe.h  the stripe codec (encode, inspect, selective decode)
 *   uih/gen.h     a deterministic generator of realistic histories
 *   uih/table.h   the UihTable file format: data section and index
 */
#ifndef UIH_UIH_H
#define UIH_UIH_H

#include "uih/batch.h"
#include "uih/error.h"
#include "uih/gen.h"
#include "uih/key.h"
#include "uih/schema.h"
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
