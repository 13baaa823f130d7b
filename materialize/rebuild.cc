// uih/materialize.h's uih_materialize (rebuild.h): the projection checked,
// the records decoded and screened (unreadable, another store's, erased
// users'), then planned user by user — each record's mutable events
// decoded, each user's group a job whose reads rebuild_read.cc makes.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "error_internal.h"
#include "materialize_internal.h"
#include "rebuild.h"
#include "uih/key.h"
#include "uih/stripe.h"

namespace uih::mat {

namespace {

template <typename E>
int RawEnum(const E& e) {
  std::underlying_type_t<E> v;
  memcpy(&v, &e, sizeof v);
  return static_cast<int>(v);
}

}  // namespace

// ---- the projection ------------------------------------------------------------

int Rebuild::CheckGroup(uint32_t i, const uih_group* g, uih_error* err) {
  const uih_projection_group& pg = p_->groups[i];
  for (uint32_t j = 0; j < i; j++)
    if (p_->groups[j].group == pg.group)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: group %s projected twice", g->name);
  if (pg.max_length == 0 || pg.max_length > UIH_SNAPSHOT_LENGTH_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: group %s: max_length %u, expected 1..%u",
                         g->name, pg.max_length, UIH_SNAPSHOT_LENGTH_MAX);
  if (pg.ntraits > UIH_PROJECTION_TRAITS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: group %s: %u traits, at most %d", g->name,
                         pg.ntraits, UIH_PROJECTION_TRAITS_MAX);
  for (uint32_t t = 0; t < pg.ntraits; t++) {
    const uih_trait* tr = uih_group_trait_by_id(g, pg.traits[t]);
    if (tr == nullptr || (tr->id != UIH_TRAIT_ARRIVAL && !uih_trait_active(tr)))
      return uih_error_set(err, UIH_ERR_NOT_FOUND, "materialize: group %s has no active trait with id %u", g->name,
                           pg.traits[t]);
    for (uint32_t u = 0; u < t; u++)
      if (pg.traits[u] == pg.traits[t])
        return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: group %s: trait %u projected twice", g->name,
                             pg.traits[t]);
  }
  return UIH_OK;
}

int Rebuild::CheckProjection(uih_error* err) {
  schema_ = uih_store_schema(s_);
  if (p_->ngroups == 0 || p_->ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: %u groups projected, expected 1..%d",
                         p_->ngroups, UIH_SNAPSHOT_GROUPS_MAX);
  // The caller's enums as the integers they hold (a C caller may pass any).
  const int policy = RawEnum(p_->on_mismatch), layout = RawEnum(p_->layout);
  if (policy < UIH_MISMATCH_FAIL || policy > UIH_MISMATCH_FLAG)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "materialize: mismatch policy %d, expected 0 (fail), 1 (skip) or 2 (flag)", policy);
  if (layout != UIH_LAYOUT_SHARED && layout != UIH_LAYOUT_JAGGED)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: layout %d, expected 0 (shared) or 1 (jagged)",
                         layout);
  for (uint32_t i = 0; i < p_->ngroups; i++) {
    const uih_group* g = uih_schema_group_by_id(schema_, p_->groups[i].group);
    if (g == nullptr)
      return uih_error_set(err, UIH_ERR_NOT_FOUND, "materialize: the store's schema (version %u) has no group with id %u",
                           uih_schema_version(schema_), p_->groups[i].group);
    int rc = CheckGroup(i, g, err);
    if (rc != UIH_OK) return rc;
    // A window holds every trait of the group (old records may identify
    // events by traits dropped since) and the arrival generation; the
    // projection picks its traits from it.
    std::vector<uint16_t> ids;
    for (uint32_t t = 0; t < g->ntraits; t++) ids.push_back(g->traits[t].id);
    ids.push_back(UIH_TRAIT_ARRIVAL);
    groups_.push_back(g);
    reads_.push_back(std::move(ids));
  }
  return UIH_OK;
}

// ---- the records -----------------------------------------------------------------

// Flags the record; under UIH_MISMATCH_FAIL the batch goes on, so that the
// error names the first such record in the caller's order.
void Rebuild::Mismatch(size_t rec, uint32_t gi, const char* why) {
  flags_[rec] |= UIH_RECORD_MISMATCH;
  NoteFailure(rec, groups_[gi]->name, why);
}

// Keeps the first reason a record is flagged (`group` the group it failed
// in, or NULL), for uih_materialized_why.
void Rebuild::Why(size_t rec, const char* group, const char* why) {
  if (!why_[rec].empty()) return;
  why_[rec] = group ? std::string("group ") + group + ": " + why : why;
}

// Keeps the reason; under UIH_MISMATCH_FAIL, the first failing record in
// the caller's order for the batch's error.
void Rebuild::NoteFailure(size_t rec, const char* group, const char* why) {
  Why(rec, group, why);
  if (p_->on_mismatch != UIH_MISMATCH_FAIL || rec >= first_bad_) return;
  first_bad_ = rec;
  char msg[640];
  snprintf(msg, sizeof msg, "record %zu (user %" PRIu64 ", request %" PRId64 ")%s%s: %s", rec, recs_[rec].user_id,
           recs_[rec].request_ts, group ? ", group " : "", group ? group : "", why);
  bad_message_ = msg;
}

int Rebuild::DecodeRecords(const uint8_t* const* records, const size_t* lens, size_t n, uih_error* err) {
  recs_.resize(n);
  flags_.assign(n, 0);
  why_.assign(n, std::string());
  picks_.assign(n, std::vector<Pick>(p_->ngroups));
  st_->records = n;
  for (size_t i = 0; i < n; i++) {
    uih_error local{};
    if (records[i] != nullptr && uih_snapshot_record_decode(records[i], lens[i], &recs_[i], &local) == UIH_OK) continue;
    if (records[i] == nullptr) uih_error_set(&local, UIH_ERR_INVALID_ARGUMENT, "NULL record");
    if (p_->on_mismatch == UIH_MISMATCH_FAIL)
      return uih_corruption(err, "materialize: record %zu: %s", i, uih_error_message(&local));
    flags_[i] |= UIH_RECORD_UNREADABLE;
    Why(i, nullptr, (std::string("the record does not decode: ") + uih_error_message(&local)).c_str());
    recs_[i] = uih_snapshot_record{};
    st_->unreadable++;
  }
  return UIH_OK;
}

// Records logged against another store: nothing here is theirs.
int Rebuild::FlagOtherStores(uih_error* err) {
  const uint32_t store = static_cast<uint32_t>(uih_store_id(s_));
  for (size_t i = 0; i < recs_.size(); i++) {
    const uint32_t theirs = recs_[i].store;
    if ((flags_[i] & UIH_RECORD_UNREADABLE) || theirs == 0 || store == 0 || theirs == store) continue;
    if (p_->on_mismatch == UIH_MISMATCH_FAIL)
      return uih_corruption(err,
                            "materialize: record %zu (user %" PRIu64 ", request %" PRId64
                            "): logged against store %08x, this is store %08x (%s)",
                            i, recs_[i].user_id, recs_[i].request_ts, theirs, store, uih_store_dir(s_));
    flags_[i] |= UIH_RECORD_OTHER_STORE;
    char why[96];
    snprintf(why, sizeof why, "logged against store %08x, this is store %08x", theirs, store);
    Why(i, nullptr, why);
    recs_[i] = uih_snapshot_record{};
  }
  return UIH_OK;
}

// Records of users erased since: nothing of theirs comes back, not even
// the events a record carries, whatever the projection reads.
void Rebuild::FlagErased() {
  for (size_t i = 0; i < recs_.size(); i++) {
    if (flags_[i] & kNotServed) continue;
    const uih_snapshot_record& r = recs_[i];
    uint32_t generation = r.generation;  // records before version 3: their groups' (when they have one)
    for (uint32_t k = 0; k < r.ngroups && r.version < 3; k++) generation = std::max(generation, r.groups[k].generation);
    Erasure by;
    if (!ErasedSince(s_, r.user_id, generation, r.version >= 3, r.request_ts, &by)) continue;
    char why[160];
    if (r.version >= 3 || generation)
      snprintf(why, sizeof why, "the user was erased by generation %u, after the record was logged at generation %u",
               by.generation, generation);
    else
      snprintf(why, sizeof why, "the user was erased by generation %u, whose through %" PRId64 " is after the request",
               by.generation, by.through);
    NoteFailure(i, nullptr, why);
    flags_[i] |= UIH_RECORD_ERASED | UIH_RECORD_MISMATCH;
    recs_[i] = uih_snapshot_record{};
  }
}

// The record's mutable events of the group, decoded into a batch of their own.
int Rebuild::DecodeMutable(size_t rec, uint32_t gi, const uih_snapshot_group& rg, uih_error* err) {
  Pick& pick = picks_[rec][gi];
  const uih_group* g = groups_[gi];
  uint64_t total = 0;
  size_t at = 0, len;
  const uint8_t* stripe;
  while (uih_snapshot_mutable_next(&rg, &at, &stripe, &len) == 1) {
    uih_stripe_info info;
    int rc = uih_stripe_read_info(stripe, len, &info, err);
    if (rc == UIH_OK && info.group != g->id)
      rc = uih_corruption(err, "a mutable stripe of group %u in group %u's place", info.group, g->id);
    if (rc != UIH_OK) return rc;
    total += info.count;
  }
  if (total == 0) return UIH_OK;
  if (total > UIH_SNAPSHOT_LENGTH_MAX)
    return uih_corruption(err, "%" PRIu64 " mutable events, at most %u", total, UIH_SNAPSHOT_LENGTH_MAX);
  // Each stripe into a batch of its own; the newest `keep` events are the
  // record's (kept in the order logged: oldest first).
  const uint32_t keep = static_cast<uint32_t>(std::min<uint64_t>(total, p_->groups[gi].max_length));
  uint64_t seen = 0;
  at = 0;
  while (uih_snapshot_mutable_next(&rg, &at, &stripe, &len) == 1) {
    uih_stripe_info info;
    int rc = uih_stripe_read_info(stripe, len, &info, err);
    const uint64_t first = seen;
    seen += info.count;
    if (rc != UIH_OK) return rc;
    if (seen <= total - keep) continue;  // older than the newest `keep`
    auto one = pool_.Take();
    rc = uih_batch_prepare(&one->b, g, reads_[gi].data(), static_cast<uint32_t>(reads_[gi].size()),
                           std::max<uint32_t>(info.count, 1), err);
    uih_stripe_decoder_set_context(dec_, nullptr);  // a record's stripes stand alone
    if (rc == UIH_OK)
      rc = uih_stripe_decode(dec_, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, one->b, err);
    if (rc != UIH_OK) return rc;
    const uint32_t from = first >= total - keep ? 0 : static_cast<uint32_t>(total - keep - first);
    pick.segs.push_back({one->b, from, one->b->count});
    pick.events += one->b->count - from;
    pick.mutable_events += one->b->count - from;
    keep_.push_back(std::move(one));
  }
  return UIH_OK;
}

// ---- the plan --------------------------------------------------------------------

// What a user's records need of group gi, and where it lies (the index
// alone): a job, whose first run is read with the batch's.
int Rebuild::PlanGroup(const std::vector<size_t>& idx, uint32_t gi, const ShardView& v, uih_error* err) {
  const uih_group* g = groups_[gi];
  const uint32_t max = p_->groups[gi].max_length;
  Job job;
  std::vector<Need>& needs = job.needs;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t rec : idx) {
    if (flags_[rec] & kNotServed) continue;
    const uih_snapshot_record& r = recs_[rec];
    const uih_snapshot_group* rg = nullptr;
    for (uint32_t k = 0; k < r.ngroups; k++)
      if (r.groups[k].group == g->id) rg = &r.groups[k];
    if (rg == nullptr) {
      flags_[rec] |= UIH_RECORD_NO_GROUP;
      continue;
    }
    uih_error local{};
    int rc = DecodeMutable(rec, gi, *rg, &local);
    if (rc == UIH_ERR_NO_MEMORY) return uih_error_set(err, rc, "%s", uih_error_message(&local));
    if (rc != UIH_OK) {  // the record's own bytes: the record is damaged, its group empty
      picks_[rec][gi] = Pick{};
      Mismatch(rec, gi, (std::string("its mutable events do not decode: ") + uih_error_message(&local)).c_str());
      continue;
    }
    const uint32_t m = picks_[rec][gi].mutable_events;
    const uint32_t want = std::min(max - m, rg->length);
    if (want == 0) continue;
    needs.push_back({rec, rg, want, uih_snapshot_checkpoint_for(rg->length, want), {}});
    lo = std::min(lo, rg->start_ts);
    hi = std::max(hi, rg->end_ts);
  }
  if (needs.empty()) return UIH_OK;
  if (!v.gen) {
    for (Need& nd : needs) Mismatch(nd.rec, gi, "the shard has no generation");
    return UIH_OK;
  }
  int rc = v.gen->Files(*v.path, &job.files, err);
  if (rc != UIH_OK) return rc;
  // Where the union of the windows lies, and the first run: the newest
  // stripes that hold the most events a record needs if they are full.
  job.user = recs_[needs[0].rec].user_id;
  rc = job.files->Plan(job.user, g->id, lo, hi, &job.plan, err);
  if (rc != UIH_OK) return rc;
  uint32_t most = 0;
  for (const Need& nd : needs) most = std::max(most, nd.check);
  const size_t run = most / g->stripe_events + 1;
  job.begin = job.plan.size() > run ? job.plan.size() - run : 0;
  job.gi = gi;
  job.shard = v.path;
  job.gen = v.gen;
  jobs_.push_back(std::move(job));
  return UIH_OK;
}

int Rebuild::PlanUser(const std::vector<size_t>& idx, uih_error* err) {
  ShardView v;
  int rc = ViewUser(s_, recs_[idx[0]].user_id, false, &v, err);
  if (rc != UIH_OK) return rc;
  st_->users++;
  for (uint32_t gi = 0; gi < p_->ngroups && rc == UIH_OK; gi++) rc = PlanGroup(idx, gi, v, err);
  return rc;
}

// Users in order of first appearance; each user's records together (one
// record at a time without affinity).
int Rebuild::PlanUsers(uih_error* err) {
  const size_t n = recs_.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    bool ua = flags_[a] & kNotServed, ub = flags_[b] & kNotServed;
    if (ua != ub) return ub;
    return recs_[a].user_id < recs_[b].user_id;
  });
  std::vector<size_t> idx;
  for (size_t k = 0; k < n; k++) {
    if (flags_[order[k]] & kNotServed) break;
    idx.push_back(order[k]);
    if (!affinity_ || k + 1 == n || (flags_[order[k + 1]] & kNotServed) ||
        recs_[order[k + 1]].user_id != recs_[order[k]].user_id) {
      int rc = PlanUser(idx, err);
      if (rc != UIH_OK) return rc;
      served_.push_back(std::move(idx));
      idx.clear();
    }
  }
  return UIH_OK;
}

int Rebuild::Run(const uint8_t* const* records, const size_t* lens, size_t n, uih_materialized* out, uih_error* err) {
  int rc = CheckProjection(err);
  if (rc == UIH_OK) rc = uih_stripe_decoder_create(&dec_, err);
  if (rc == UIH_OK) rc = DecodeRecords(records, lens, n, err);
  if (rc == UIH_OK) rc = FlagOtherStores(err);
  if (rc != UIH_OK) return rc;
  FlagErased();
  rc = PlanUsers(err);
  if (rc == UIH_OK) rc = ReadFirstRuns(err);
  for (size_t j = 0; j < jobs_.size() && rc == UIH_OK; j++) rc = ServeJob(jobs_[j], err);
  if (rc != UIH_OK) return rc;
  st_->reads += reader_.reads();
  st_->bytes_read = reader_.bytes();
  st_->stripes_read = reader_.stripes();
  if (first_bad_ != SIZE_MAX) return uih_corruption(err, "materialize: %s", bad_message_.c_str());
  for (uint8_t f : flags_) st_->mismatches += (f & (UIH_RECORD_MISMATCH | UIH_RECORD_OTHER_STORE)) != 0;
  writer_.Write(p_, groups_, flags_, picks_, served_, st_, out);
  out->why = std::move(why_);
  return UIH_OK;
}

}  // namespace uih::mat

namespace uih {

int Materialize(uih_store* s, const uint8_t* const* records, const size_t* lens, size_t n,
                const uih_projection* projection, bool affinity, bool batch_io, uih_materialized** out,
                uih_materialize_stats* stats, uih_error* err) {
  if (s == nullptr || projection == nullptr || out == nullptr || (n && (records == nullptr || lens == nullptr)))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: NULL argument");
  uih_materialize_stats local{};
  uih_error own{};  // the reasons of flagged records come from errors: one to hold them
  if (err == nullptr) err = &own;
  auto result = std::make_unique<uih_materialized>();
  mat::Rebuild m(s, projection, affinity, batch_io, &local);
  int rc = m.Run(records, lens, n, result.get(), err);
  if (rc != UIH_OK) return rc;
  if (stats) *stats = local;
  *out = result.release();
  return UIH_OK;
}

}  // namespace uih

extern "C" {

int uih_materialize(uih_store* s, const uint8_t* const* records, const size_t* lens, size_t n,
                    const uih_projection* projection, uih_materialized** out, uih_materialize_stats* stats,
                    uih_error* err) {
  return uih::CallC(err, "uih_materialize",
                    [&] { return uih::Materialize(s, records, lens, n, projection, true, true, out, stats, err); });
}

}  // extern "C"
