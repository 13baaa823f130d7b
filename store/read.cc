// The C API of uih/store.h: reads of one user's events in a group, from a
// generation (its stripes), the mutable tier, or both split at the
// watermark.
#include "uih/store.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>

#include "uih_plugin/c_api.h"
#include "store_internal.h"
#include "uih/key.h"
#include "uih/stripe.h"

using namespace rocksdb;
using uih::Fail;
using uih::Generation;
using uih::S;
using uih::Shard;
using uih::ShardAt;
using uih::U8;

namespace {

// Appends rows [begin, end) of `src` whose ts is in [from, to] to *out.
int AppendWindow(const uih_batch* src, int64_t from, int64_t to, uih_batch** out, uih_error* err) {
  int tsc = uih_batch_column_index(src, src->group->ts->id);
  const int64_t* ts = static_cast<const int64_t*>(src->columns[tsc].values);
  for (uint32_t r = 0; r < src->count; r++) {
    if (ts[r] < from || ts[r] > to) continue;
    if ((*out)->count == (*out)->capacity) {
      if ((*out)->capacity == UIH_STRIPE_EVENTS_MAX)
        return uih_error_set(err, UIH_ERR_OUT_OF_RANGE,
                             "more than %d events in the window: read a narrower one", UIH_STRIPE_EVENTS_MAX);
      uint64_t want = std::min<uint64_t>(uint64_t{(*out)->capacity} * 2, UIH_STRIPE_EVENTS_MAX);
      int rc = uih_batch_reserve(out, static_cast<uint32_t>(want), err);
      if (rc != UIH_OK) return rc;
    }
    int rc = uih_batch_copy_row(*out, src, r, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

// A batch of the same group and columns as `like`, without `skip`.
int BatchLike(const uih_batch* like, uint32_t capacity, uint16_t skip, uih_batch** out, uih_error* err) {
  std::vector<uint16_t> ids;
  for (uint32_t c = 0; c < like->ncolumns; c++)
    if (like->columns[c].trait->id != skip) ids.push_back(like->columns[c].trait->id);
  return uih_batch_create(like->group, capacity, ids.data(), static_cast<uint32_t>(ids.size()), out, err);
}

// The events of `user` in group `g` with ts in [from, to] from generation
// `gen`'s files: one index search and one read per file holding them.
int ReadImmutable(Shard* sh, Generation& gen, uint64_t user, const uih_group* g, int64_t from, int64_t to,
                  uih_batch** out, uih_error* err) {
  if (from > to) return UIH_OK;
  const uih::GenerationFiles* files = nullptr;
  Status st = gen.Files(&files);
  if (!st.ok()) return Fail(err, sh->path, st, "opening generation " + std::to_string(gen.record.generation) + "'s files");
  uih_stripe_decoder* dec = nullptr;
  uih_batch* tmp = nullptr;
  int rc = uih_stripe_decoder_create(&dec, err);
  uih_stripe_decoder_set_context(dec, gen.ctx);  // the dictionaries its stripes may name
  if (rc == UIH_OK)
    rc = files->Stripes(user, g->id, from, to, [&](const uih_key& k, const uint8_t* value, size_t len) -> int {
      uih_stripe_info info;
      int r = uih_stripe_read_info(value, len, &info, err);
      if (r == UIH_OK && info.max_ts < from) return UIH_OK;
      uint32_t want = r == UIH_OK ? std::max<uint32_t>(info.count, 1) : 1;
      if (r == UIH_OK) r = tmp == nullptr ? BatchLike(*out, want, 0, &tmp, err) : uih_batch_reserve(&tmp, want, err);
      if (r == UIH_OK) r = uih_stripe_decode(dec, value, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, tmp, err);
      if (r == UIH_OK) r = AppendWindow(tmp, from, to, out, err);
      if (r != UIH_OK)
        uih_error_prefix(err, "stripe of user %" PRIu64 " group %u at ts %" PRId64 ": ", user, g->id, k.ts);
      return r;
    }, err);
  if (rc != UIH_OK) uih_error_prefix(err, "store %s: generation %u: ", sh->path.c_str(), gen.record.generation);
  uih_batch_free(tmp);
  uih_stripe_decoder_free(dec);
  return rc;
}

int Read(uih_store* s, uint64_t user, uint16_t group, int64_t from, int64_t to, unsigned tier, uint32_t generation,
         uih_batch** batch, uih_error* err) {
  if (s == nullptr || batch == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: NULL argument");
  if (tier < UIH_TIER_IMMUTABLE || tier > UIH_TIER_ALL)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: tier %u, expected 1 (immutable), 2 (mutable) or 3 (all)",
                         tier);
  const uih_group* g = uih_schema_group_by_id(s->schema, group);
  if (g == nullptr) return uih_error_set(err, UIH_ERR_NOT_FOUND, "store_read: the schema has no group with id %u", group);
  Shard* sh;
  int rc = uih::ShardOfUser(s, user, &sh, err);
  if (rc != UIH_OK) return rc;
  if (*batch != nullptr && (*batch)->group->id == group) {  // the caller's projection, whatever its version
    g = (*batch)->group;
    uih_batch_clear(*batch);
  } else {
    uih_batch* nb = nullptr;
    rc = uih_batch_create(g, 64, nullptr, 0, &nb, err);
    if (rc != UIH_OK) return rc;
    uih_batch_free(*batch);
    *batch = nb;
  }
  // The watermark first, then the generation (see uih::SplitOf).
  int64_t wm = INT64_MIN;
  int has = 0;
  rc = uih_mutable_watermark(sh->mut, &wm, &has, err);
  if (rc != UIH_OK) return rc;
  std::shared_ptr<Generation> gen;
  if (tier & UIH_TIER_IMMUTABLE) {
    gen = sh->Get(generation);
    if (generation != 0 && !gen)
      return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: shard %u has no live generation %u", s->dir.c_str(),
                           sh->index, generation);
  }
  // A generation asked for by number splits at the watermark alone.
  const uih::Split at = uih::SplitOf(wm, has, generation == 0 ? gen.get() : nullptr);
  const bool split = tier == UIH_TIER_ALL && at.has;
  // With the split, only what is below it (nothing when it is INT64_MIN).
  if (gen && !(split && at.at == INT64_MIN)) {
    rc = ReadImmutable(sh, *gen, user, g, from, split ? std::min(to, at.at - 1) : to, batch, err);
    if (rc != UIH_OK) return rc;
  }
  if (tier & UIH_TIER_MUTABLE) {
    int64_t lo = split ? std::max(from, at.at) : from;
    uih_batch* tmp = nullptr;
    rc = BatchLike(*batch, 64, UIH_TRAIT_ARRIVAL, &tmp, err);
    if (rc == UIH_OK && lo <= to) rc = uih_mutable_read(sh->mut, user, group, lo, to, &tmp, err);
    if (rc == UIH_OK) rc = AppendWindow(tmp, lo, to, batch, err);
    uih_batch_free(tmp);
  }
  return rc;
}

}  // namespace

// ---- the C API: every entry point behind the exception firewall ------------

extern "C" {

int uih_store_read(uih_store* s, uint64_t user_id, uint16_t group, int64_t from, int64_t to, unsigned tier,
                   uint32_t generation, uih_batch** batch, uih_error* err) {
  return uih::CallC(err, "uih_store_read",
                    [&] { return Read(s, user_id, group, from, to, tier, generation, batch, err); });
}

}  // extern "C"
