/* The UIH generator; distributions are documented in uih/gen.h. */
#include "uih/gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"

/* ---- randomness: splitmix64 seeding, xoshiro256** stream ---------------- */

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * UINT64_C(0xd1b54a32d192ed03));
  for (int i = 0; i < 4; i++) r->s[i] = splitmix(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in (0, 1): never 0, so logs are finite. */
static double rng_unit(rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53; }

static double rng_exp(rng *r, double mean) { return -mean * log(rng_unit(r)); }

static double rng_normal(rng *r) {
  return sqrt(-2.0 * log(rng_unit(r))) * cos(6.283185307179586 * rng_unit(r));
}

/* ---- Zipf over [1, n] by rejection-inversion (Hörmann & Derflinger) ----- */

typedef struct zipf {
  double s, h_x1, h_n, cut;
  uint64_t n;
} zipf;

/* (exp(x) - 1) / x and log(1 + x) / x, accurate near 0. */
static double expm1_over(double x) { return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x / 2; }
static double log1p_over(double x) { return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x / 2; }

/* H is an antiderivative of h(x) = x^-s; H_inv its inverse. */
static double zipf_H(const zipf *z, double x) {
  double lx = log(x);
  return expm1_over((1 - z->s) * lx) * lx;
}
static double zipf_H_inv(const zipf *z, double y) {
  double t = y * (1 - z->s);
  if (t < -1) t = -1; /* rounding guard */
  return exp(log1p_over(t) * y);
}
static double zipf_h(const zipf *z, double x) { return exp(-z->s * log(x)); }

static void zipf_init(zipf *z, uint64_t n, double s) {
  z->n = n;
  z->s = s;
  z->h_x1 = zipf_H(z, 1.5) - 1.0;
  z->h_n = zipf_H(z, (double)n + 0.5);
  z->cut = 2.0 - zipf_H_inv(z, zipf_H(z, 2.5) - zipf_h(z, 2.0));
}

static uint64_t zipf_sample(const zipf *z, rng *r) {
  for (;;) {
    double u = z->h_n + rng_unit(r) * (z->h_x1 - z->h_n);
    double x = zipf_H_inv(z, u);
    double kd = floor(x + 0.5);
    if (kd < 1) kd = 1;
    if (kd > (double)z->n) kd = (double)z->n;
    if (kd - x <= z->cut || u >= zipf_H(z, kd + 0.5) - zipf_h(z, kd)) return (uint64_t)kd;
  }
}

/* ---- the generator ---------------------------------------------------------- */

/* How a trait's values are drawn. */
typedef enum { DRAW_TS, DRAW_ITEM, DRAW_VOCAB, DRAW_CATEGORY, DRAW_LOGNORMAL, DRAW_NORMAL,
               DRAW_UNIT, DRAW_FLAG } draw_kind;

typedef struct trait_plan {
  draw_kind kind;
  double rate;   /* flags */
  zipf *z;       /* ITEM, VOCAB, CATEGORY */
  zipf vocab;    /* VOCAB: Zipf over this trait's vocabulary */
} trait_plan;

struct uih_gen {
  const uih_group *group;
  uih_gen_opts o;
  uint32_t ntraits; /* active traits, in id order = batch column order */
  trait_plan *plan;
  zipf items, cats;
  uint64_t user;     /* index of the current user */
  uint32_t left;     /* its events still to hand out */
  uint32_t in_session;
  double idle_mean;  /* mean ms between this user's sessions */
  int64_t ts;
  rng r;
};

static const double kFlagRates[] = {0.04, 0.006, 0.003};

int uih_gen_create(const uih_group *group, const uih_gen_opts *opts, uih_gen **out,
                   uih_error *err) {
  UIH_RETURN_IF(!group || !out, err, UIH_ERR_INVALID_ARGUMENT, "gen_create: NULL argument");
  *out = NULL;
  uih_gen_opts o = UIH_GEN_OPTS_DEFAULT;
  if (opts) o = *opts;
  UIH_RETURN_IF(o.activity_alpha <= 0 || o.activity_scale < 1 || o.max_events == 0 ||
                    o.session_events == 0 || o.session_gap_s < 0 || o.catalog == 0 ||
                    o.item_zipf <= 0 || o.categories == 0 || o.category_zipf <= 0 ||
                    o.vocabulary_zipf <= 0 || o.watch_median <= 0 || o.watch_sigma < 0 ||
                    o.days == 0,
                err, UIH_ERR_INVALID_ARGUMENT, "gen_create: a generator option is out of range");
  uih_gen *g = calloc(1, sizeof *g);
  uint32_t n = uih_group_active_count(group);
  if (g) g->plan = calloc(n, sizeof *g->plan);
  if (!g || !g->plan) {
    uih_gen_free(g);
    return uih_error_set(err, UIH_ERR_NO_MEMORY, "gen_create: out of memory");
  }
  g->group = group;
  g->o = o;
  g->ntraits = n;
  zipf_init(&g->items, o.catalog, o.item_zipf);
  zipf_init(&g->cats, o.categories, o.category_zipf);
  unsigned flags = 0;
  for (uint32_t t = 0, c = 0; t < group->ntraits; t++) {
    const uih_trait *tr = &group->traits[t];
    if (!uih_trait_active(tr)) continue;
    trait_plan *p = &g->plan[c++];
    switch (tr->type) {
      case UIH_TYPE_TIMESTAMP: p->kind = DRAW_TS; break;
      case UIH_TYPE_ID: p->kind = DRAW_ITEM, p->z = &g->items; break;
      case UIH_TYPE_CATEGORY:
        if (tr->ncategories) {
          p->kind = DRAW_VOCAB;
          zipf_init(&p->vocab, tr->ncategories, o.vocabulary_zipf);
          p->z = &p->vocab;
        } else {
          p->kind = DRAW_CATEGORY, p->z = &g->cats;
        }
        break;
      case UIH_TYPE_UINT32: p->kind = DRAW_LOGNORMAL; break;
      case UIH_TYPE_INT64: p->kind = DRAW_NORMAL; break;
      case UIH_TYPE_FLOAT32: p->kind = DRAW_UNIT; break;
      case UIH_TYPE_FLAG:
        p->kind = DRAW_FLAG;
        p->rate = flags < 3 ? kFlagRates[flags] : 0.001;
        flags++;
        break;
    }
  }
  g->user = UINT64_MAX; /* before the first user */
  *out = g;
  return UIH_OK;
}

void uih_gen_free(uih_gen *g) {
  if (!g) return;
  free(g->plan);
  free(g);
}

uint32_t uih_gen_user_events(const uih_gen *g, uint64_t i) {
  rng r;
  rng_seed(&r, g->o.seed, 2 * i);
  double n = floor(g->o.activity_scale / pow(rng_unit(&r), 1.0 / g->o.activity_alpha));
  return n > g->o.max_events ? g->o.max_events : (uint32_t)n;
}

/* Starts user index `i`: its event count, stream and first session. */
static void start_user(uih_gen *g, uint64_t i) {
  g->user = i;
  g->left = uih_gen_user_events(g, i);
  rng_seed(&g->r, g->o.seed, 2 * i + 1);
  g->ts = g->o.start_ts;
  g->in_session = 0;
  /* Idle gaps fill what the sessions leave of the span; the heaviest users
   * have no idle time left and run sessions back to back. */
  double span_ms = (double)g->o.days * 86400e3;
  double busy_ms = (double)g->left * g->o.session_gap_s * 1000.0;
  double sessions = (double)g->left / g->o.session_events + 1;
  g->idle_mean = busy_ms < span_ms ? (span_ms - busy_ms) / (sessions + 1) : 0;
}

static int64_t next_ts(uih_gen *g) {
  if (g->in_session == 0) { /* a new session after an idle gap */
    g->ts += (int64_t)rng_exp(&g->r, g->idle_mean);
    g->in_session = 1 + (uint32_t)floor(rng_exp(&g->r, g->o.session_events));
  } else {
    g->ts += (int64_t)rng_exp(&g->r, g->o.session_gap_s * 1000.0);
  }
  g->in_session--;
  return g->ts;
}

/* A bijection of [0, 2^40) spreading item ranks over the id space. */
static uint64_t item_id(uint64_t rank) {
  const uint64_t mask = (UINT64_C(1) << 40) - 1;
  uint64_t x = rank & mask;
  x = (x * UINT64_C(0x9E3779B97F4B)) & mask; /* odd multiplier: invertible mod 2^40 */
  x ^= x >> 20;
  return (x * UINT64_C(0xC2B2AE3D27D5)) & mask;
}

static uint64_t draw(uih_gen *g, const trait_plan *p) {
  switch (p->kind) {
    case DRAW_TS: return (uint64_t)next_ts(g);
    case DRAW_ITEM: return item_id(zipf_sample(p->z, &g->r));
    case DRAW_VOCAB:
    case DRAW_CATEGORY: return zipf_sample(p->z, &g->r) - 1;
    case DRAW_LOGNORMAL: {
      double v = g->o.watch_median * exp(g->o.watch_sigma * rng_normal(&g->r));
      return v >= 4294967295.0 ? UINT32_MAX : (uint64_t)v;
    }
    case DRAW_NORMAL: return (uint64_t)(int64_t)llround(rng_normal(&g->r) * 1000.0);
    case DRAW_UNIT: {
      float f = (float)(rng_next(&g->r) >> 40) * 0x1.0p-24f;
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      return bits;
    }
    case DRAW_FLAG: return rng_unit(&g->r) < p->rate;
  }
  return 0;
}

int uih_gen_next(uih_gen *g, uint64_t *user_id, uih_batch *b, uih_error *err) {
  UIH_RETURN_IF(!g || !user_id || !b, err, UIH_ERR_INVALID_ARGUMENT, "gen_next: NULL argument");
  UIH_RETURN_IF(b->group != g->group || b->ncolumns != g->ntraits, err, UIH_ERR_INVALID_ARGUMENT,
                "gen_next: the batch must be of group '%s' with all its active traits",
                g->group->name);
  uih_batch_clear(b);
  while (g->left == 0) {
    uint64_t next = g->user == UINT64_MAX ? 0 : g->user + 1;
    if (next >= g->o.users) return UIH_OK; /* done: empty batch */
    start_user(g, next);
  }
  *user_id = g->o.first_user_id + g->user;
  uint32_t n = g->left < b->capacity ? g->left : b->capacity;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t row;
    UIH_FORWARD(uih_batch_append(b, &row, err));
    for (uint32_t c = 0; c < g->ntraits; c++) uih_column_set_bits(&b->columns[c], row, draw(g, &g->plan[c]));
  }
  g->left -= n;
  return UIH_OK;
}
