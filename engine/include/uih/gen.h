/* uihstore — a deterministic generator of realistic interaction histories,
 * for tests, benchmarks and demos.
 *
 * Users are generated independently (user i from seed and i alone), each as
 * a time-ordered stream of events of one feature group, handed out in
 * batches. The shapes follow what production UIH looks like:
 *
 *   events per user  discrete Pareto: floor(scale / U^(1/alpha)), capped;
 *                    alpha 1.2, scale 10: median ~18, 1 user in ~4,000 past
 *                    10,000 events (defaults)
 *   timestamps       sessions of ~15 events (exponential count), 30 s mean
 *                    gap inside a session (exponential), idle gaps between
 *                    sessions (exponential) sized so the user's history
 *                    fills `days` days from start_ts (users too busy for
 *                    that run sessions back to back); milliseconds
 *   id traits        Zipf(s = 0.9) over a catalog of 10 million items
 *                    (the top item ~2.5% of events), ranks scrambled to
 *                    ids by a bijection of [0, 2^40)
 *   category traits  with a vocabulary: Zipf(s = 2) over it (the first
 *                    name is the most common, e.g. "impression" ~67%);
 *                    without: Zipf(s = 1.2) over 500 categories
 *   uint32 traits    log-normal, median 8,000 (watch time in ms), sigma 1
 *   int64 traits     normal, mean 0, standard deviation 1,000
 *   float32 traits   uniform in [0, 1)
 *   flag traits      Bernoulli; the group's flags in id order get rates
 *                    4%, 0.6%, 0.3%, then 0.1% (like, comment, share...)
 *
 * Every parameter is in uih_gen_opts.
 */
#ifndef UIH_GEN_H
#define UIH_GEN_H

#include <stdint.h>

#include "uih/batch.h"
#include "uih/error.h"
#include "uih/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uih_gen_opts {
  uint64_t seed;
  uint64_t users;            /* users to generate */
  uint64_t first_user_id;    /* user i gets id first_user_id + i */
  int64_t start_ts;          /* ms since the epoch */
  uint32_t days;             /* span of the session starts */
  double activity_alpha;     /* Pareto shape of events per user */
  double activity_scale;     /* Pareto scale (minimum before flooring) */
  uint32_t max_events;       /* cap per user */
  uint32_t session_events;   /* mean events per session */
  double session_gap_s;      /* mean seconds between events in a session */
  uint64_t catalog;          /* item catalog size for id traits */
  double item_zipf;          /* Zipf exponent for id traits */
  uint32_t categories;       /* categories for category traits without vocabulary */
  double category_zipf;      /* Zipf exponent for those */
  double vocabulary_zipf;    /* Zipf exponent for category traits with a vocabulary */
  double watch_median;       /* log-normal median for uint32 traits */
  double watch_sigma;
} uih_gen_opts;

#define UIH_GEN_OPTS_DEFAULT                                                                \
  {1, 1000, 1, INT64_C(1700000000000), 30, 1.2, 10.0, 100000, 15, 30.0, 10000000, 0.9, \
   500, 1.2, 2.0, 8000.0, 1.0}

typedef struct uih_gen uih_gen;

/* A generator of `group`'s events (the group must outlive it). */
int uih_gen_create(const uih_group *group, const uih_gen_opts *opts, uih_gen **out,
                   uih_error *err);
void uih_gen_free(uih_gen *gen); /* NULL is fine */

/* Fills `batch` (of the generator's group, with every active trait) with the
 * next events, all of one user, at most batch->capacity of them, in
 * timestamp order; *user_id says whose. A user with more events than fit
 * continues in the next call. Returns UIH_OK with batch->count == 0 when
 * every user is done. */
int uih_gen_next(uih_gen *gen, uint64_t *user_id, uih_batch *batch, uih_error *err);

/* Events user index `i` has in total (for tests and sizing). */
uint32_t uih_gen_user_events(const uih_gen *gen, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif /* UIH_GEN_H */
