// The C API of uih/store.h: reads of one user's events in a group, from a
// generation (its stripes, through the window reader), the mutable tier, or
// both split at the watermark.
#include <algorithm>
#include <cinttypes>
#include <memory>
#include <string>
#include <vector>

#include "store_internal.h"
#include "uih/key.h"
#include "uih_plugin/c_api.h"
#include "uih_store/window.h"

using uih::Generation;
using uih::Shard;

namespace {

// Makes room in *out for `more` events: it grows up to
// UIH_BATCH_EVENTS_MAX, past which the window is UIH_ERR_OUT_OF_RANGE.
int Room(uih_batch** out, uint64_t more, uih_error* err) {
  const uint64_t total = (*out)->count + more;
  if (total > UIH_BATCH_EVENTS_MAX)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "more than %u events in the window: read a narrower one",
                         UIH_BATCH_EVENTS_MAX);
  return uih_batch_reserve(out, std::max<uint32_t>(static_cast<uint32_t>(total), 1), err);
}

// The events of `user` in group `g` with ts in [from, to] from generation
// `gen`'s files, appended to *out: the stripes that may hold them, read
// back from the newest.
int ReadImmutable(Shard* sh, Generation& gen, uint64_t user, const uih_group* g, int64_t from, int64_t to,
                  uih_batch** out, uih_error* err) {
  if (from > to) return UIH_OK;
  const uih::GenerationFiles* files = nullptr;
  int rc = gen.Files(sh->path, &files, err);
  if (rc != UIH_OK) return rc;
  // Per call: the caller's batch, whose columns these take, may be of a
  // schema it frees after the call.
  std::vector<uih::GenerationFiles::Extent> plan;
  uih::WindowReader reader;
  uih::Gather gather;
  rc = files->Plan(user, g->id, from, to, &plan, err);
  if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: generation %u: ", sh->path.c_str(), gen.number());
  const std::vector<uint16_t> ids = uih::ColumnIds(*out);
  reader.Start(&sh->path, &gen, files, user, g, plan.data(), plan.size());
  gather.Clear();
  for (bool more = true; gather.count() <= UIH_BATCH_EVENTS_MAX;) {
    // One more than a batch holds: a window with more is refused.
    const uint32_t missing = UIH_BATCH_EVENTS_MAX + 1 - gather.count();
    uih_batch** b = gather.Next();
    rc = reader.Next(missing, ids.data(), static_cast<uint32_t>(ids.size()), b, &more, err);
    if (rc != UIH_OK) return rc;
    if (!more) break;
    if (!uih::InTimeOrder(*b))
      return uih_corruption(err, "store %s: generation %u: a stripe of user %" PRIu64 " group %u out of time order",
                            sh->path.c_str(), gen.number(), user, g->id);
    uint32_t first, last;
    uih::RowsWithin(*b, from, to, &first, &last);
    gather.Take(first, last);
  }
  rc = Room(out, gather.count(), err);
  return rc == UIH_OK ? gather.AppendNewest(gather.count(), *out, err) : rc;
}

int Read(uih_store* s, uint64_t user, uint16_t group, int64_t from, int64_t to, unsigned tier, uint32_t generation,
         uih_batch** batch, uih_error* err) {
  if (s == nullptr || batch == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: NULL argument");
  if (tier < UIH_TIER_IMMUTABLE || tier > UIH_TIER_ALL)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_read: tier %u, expected 1 (immutable), 2 (mutable) or 3 (all)", tier);
  const uih_group* g = uih_schema_group_by_id(s->schema, group);
  if (g == nullptr) return uih_error_set(err, UIH_ERR_NOT_FOUND, "store_read: the schema has no group with id %u", group);
  Shard* sh;
  int rc = uih::ShardOfUser(s, user, &sh, err);
  if (rc != UIH_OK) return rc;
  if (*batch != nullptr && (*batch)->group->id == group) {  // the caller's projection, whatever its version
    g = (*batch)->group;
    uih_batch_clear(*batch);
  } else {
    rc = uih_batch_prepare(batch, g, nullptr, 0, 64, err);
    if (rc != UIH_OK) return rc;
  }
  if (uih_batch_timestamps(*batch) == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_read: the batch has no column of the timestamp, %s",
                         g->ts->name);
  if ((tier & UIH_TIER_MUTABLE) && sh->mut == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "store_read: %s is open to load (UIH_STORE_ROLE_LOAD): its mutable tier is a serving "
                         "process's; read the immutable tier, or open the store read-only",
                         s->dir.c_str());
  // The watermark first, then the generation (see uih::SplitOf).
  int64_t wm = INT64_MIN;
  int has = 0;
  if (sh->mut) uih::MutableWatermark(sh->mut, &wm, &has);
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
    const int64_t lo = split ? std::max(from, at.at) : from;
    if (lo > to) return UIH_OK;
    // A user erased by a generation the mutable tier has not applied yet:
    // the generation read (the current one, when only the mutable tier is).
    std::shared_ptr<Generation> read = gen ? gen : sh->Get(0);
    if (read && uih::MutableErased(sh, user, read->number())) return UIH_OK;
    const std::vector<uint16_t> ids = uih::ColumnIds(*batch, UIH_TRAIT_ARRIVAL);  // mutable events have none
    uih::BatchPtr tmp;
    rc = uih_batch_prepare(&tmp.b, g, ids.data(), static_cast<uint32_t>(ids.size()), 64, err);
    if (rc == UIH_OK) rc = uih_mutable_read(sh->mut, user, group, lo, to, &tmp.b, err);
    if (rc == UIH_OK) rc = Room(batch, tmp.b->count, err);
    if (rc == UIH_OK) rc = uih_batch_copy_rows(*batch, tmp.b, 0, tmp.b->count, err);
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
