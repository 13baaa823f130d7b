// uih/materialize.h: snapshot records in, the sequences their models saw
// out. Records are served user by user (data affinity): per user and group
// one read of the stripes holding the union of the records' windows,
// decoded newest first, each into its own batch, only as far as the records
// need; each record's immutable part verified at its checkpoint and kept as
// runs of rows of those batches. The output is laid out from those runs by
// output.cc.
#include "uih/materialize.h"

#include <algorithm>
#include <cstdarg>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "uih_plugin/c_api.h"
#include "materialize_internal.h"
#include "output.h"
#include "store_internal.h"
#include "uih/io.h"
#include "uih/key.h"
#include "uih/stripe.h"

using uih::Generation;
using uih::GenerationFiles;
using uih::Shard;
using uih::mat::OutputWriter;
using uih::mat::Pick;
using uih::mat::Seg;

namespace {

struct Batch {
  uih_batch* b = nullptr;
  Batch() = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { uih_batch_free(b); }
};

// Per record of a user's group: its group in the record, and the
// immutable events it needs.
struct Need {
  size_t rec;
  const uih_snapshot_group* rg;
  uint32_t want, check;        // events output from the part; events verified (a checkpoint)
  std::vector<uint32_t> rows;  // newest first, while collecting
};

// One user's group in a batch, from its plan to its decode: what its
// records need, where their stripes lie, and the first (newest) run of
// them, read together with every other job's of the batch.
struct Job {
  uint32_t gi = 0;
  Shard* sh = nullptr;
  std::shared_ptr<Generation> gen;
  const GenerationFiles* files = nullptr;
  uint64_t user = 0;
  std::vector<Need> needs;
  std::vector<GenerationFiles::Extent> plan;
  size_t begin = 0;  // plan[begin, end) is the first run
  GenerationFiles::StripeSet first;
  size_t req = 0;    // its requests' first, when batched
  bool batched = false;
};

}  // namespace

namespace {

// Records that are not served: they did not decode, are another store's, or
// their user was erased since.
constexpr uint8_t kNotServed = UIH_RECORD_UNREADABLE | UIH_RECORD_OTHER_STORE | UIH_RECORD_ERASED;

// This thread's reader for batches of reads (none when it cannot be set up:
// then each job reads on its own).
uih_io* ThreadIo() {
  struct Holder {
    uih_io* io = nullptr;
    bool tried = false;
    ~Holder() { uih_io_free(io); }
  };
  thread_local Holder h;
  if (!h.tried) {
    h.tried = true;
    if (uih_io_create(256, 1, &h.io, nullptr) != UIH_OK) h.io = nullptr;
  }
  return h.io;
}

template <typename E>
int RawEnum(const E& e) {
  std::underlying_type_t<E> v;
  memcpy(&v, &e, sizeof v);
  return static_cast<int>(v);
}

int Fail(uih_error* err, int code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
int Fail(uih_error* err, int code, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return uih_error_set(err, code, "materialize: %s", msg);
}

class Materializer {
 public:
  Materializer(uih_store* s, const uih_projection* p, bool affinity, bool batch_io, uih_materialize_stats* st)
      : s_(s), p_(p), affinity_(affinity), batch_io_(batch_io), st_(st) {}
  ~Materializer() { uih_stripe_decoder_free(dec_); }

  int Run(const uint8_t* const* records, const size_t* lens, size_t n, uih_materialized* out, uih_error* err);

 private:
  int CheckProjection(uih_error* err);
  int PlanUser(const std::vector<size_t>& idx, uih_error* err);
  int PlanGroup(const std::vector<size_t>& idx, uint32_t gi, Shard* sh, const std::shared_ptr<Generation>& gen,
                uih_error* err);
  int ReadFirstRuns(uih_error* err);
  int DecodeGroup(Job& job, uih_error* err);
  int DecodeMutable(size_t rec, uint32_t gi, const uih_snapshot_group& rg, uih_error* err);
  int Mismatch(size_t rec, uint32_t gi, const char* why, uih_error* err);
  void NoteFailure(size_t rec, const char* group, const char* why);
  const uih_trait* DroppedIdTrait(const uih_group* vg, uint32_t gi) const;

  uih_store* s_;
  const uih_projection* p_;
  bool affinity_;  // records of a user served together
  bool batch_io_;  // the first runs of every job read as one batch (io_uring), not one by one
  uih_materialize_stats* st_;
  uih_stripe_decoder* dec_ = nullptr;
  const uih_schema* schema_ = nullptr;
  std::vector<const uih_group*> groups_;        // per projected group, the store's schema
  std::vector<std::vector<uint16_t>> reads_;    // per projected group: traits a window holds
  std::vector<uih_snapshot_record> recs_;
  std::vector<uint8_t> flags_;
  size_t first_bad_ = SIZE_MAX;  // under UIH_MISMATCH_FAIL: the first record that failed, and why
  std::string bad_message_;
  std::vector<std::vector<Pick>> picks_;        // [record][group]
  std::vector<std::vector<size_t>> served_;     // records served together (a user's, with affinity)
  std::vector<Job> jobs_;                       // the batch's reads, planned before any is made
  std::vector<uih_io_req> reqs_;
  std::vector<uint64_t> arrival_;               // a decoded stripe's arrival generations
  OutputWriter writer_;
  std::vector<std::unique_ptr<Batch>> keep_;    // decoded stripes the picks point into
  GenerationFiles::StripeSet stripes_;
};

int Materializer::CheckProjection(uih_error* err) {
  schema_ = s_->schema.load();
  if (p_->ngroups == 0 || p_->ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return Fail(err, UIH_ERR_INVALID_ARGUMENT, "%u groups projected, expected 1..%d", p_->ngroups,
                UIH_SNAPSHOT_GROUPS_MAX);
  // The caller's enums as the integers they hold (a C caller may pass any).
  const int policy = RawEnum(p_->on_mismatch), layout = RawEnum(p_->layout);
  if (policy < UIH_MISMATCH_FAIL || policy > UIH_MISMATCH_FLAG)
    return Fail(err, UIH_ERR_INVALID_ARGUMENT, "mismatch policy %d, expected 0 (fail), 1 (skip) or 2 (flag)", policy);
  if (layout != UIH_LAYOUT_SHARED && layout != UIH_LAYOUT_JAGGED)
    return Fail(err, UIH_ERR_INVALID_ARGUMENT, "layout %d, expected 0 (shared) or 1 (jagged)", layout);
  for (uint32_t i = 0; i < p_->ngroups; i++) {
    const uih_projection_group& pg = p_->groups[i];
    const uih_group* g = uih_schema_group_by_id(schema_, pg.group);
    if (g == nullptr)
      return Fail(err, UIH_ERR_NOT_FOUND, "the store's schema (version %u) has no group with id %u",
                  uih_schema_version(schema_), pg.group);
    for (uint32_t j = 0; j < i; j++)
      if (p_->groups[j].group == pg.group) return Fail(err, UIH_ERR_INVALID_ARGUMENT, "group %s projected twice", g->name);
    if (pg.max_length == 0 || pg.max_length > UIH_STRIPE_EVENTS_MAX)
      return Fail(err, UIH_ERR_INVALID_ARGUMENT, "group %s: max_length %u, expected 1..%d", g->name, pg.max_length,
                  UIH_STRIPE_EVENTS_MAX);
    if (pg.ntraits > UIH_PROJECTION_TRAITS_MAX)
      return Fail(err, UIH_ERR_INVALID_ARGUMENT, "group %s: %u traits, at most %d", g->name, pg.ntraits,
                  UIH_PROJECTION_TRAITS_MAX);
    // A window holds every trait of the group (old records may identify
    // events by traits dropped since) and the arrival generation; the
    // projection picks its traits from it.
    std::vector<uint16_t> ids;
    for (uint32_t t = 0; t < g->ntraits; t++) ids.push_back(g->traits[t].id);
    ids.push_back(UIH_TRAIT_ARRIVAL);
    for (uint32_t t = 0; t < pg.ntraits; t++) {
      const uih_trait* tr = uih_group_trait_by_id(g, pg.traits[t]);
      if (tr == nullptr || (tr->id != UIH_TRAIT_ARRIVAL && !uih_trait_active(tr)))
        return Fail(err, UIH_ERR_NOT_FOUND, "group %s has no active trait with id %u", g->name, pg.traits[t]);
      for (uint32_t u = 0; u < t; u++)
        if (pg.traits[u] == pg.traits[t])
          return Fail(err, UIH_ERR_INVALID_ARGUMENT, "group %s: trait %u projected twice", g->name, pg.traits[t]);
    }
    groups_.push_back(g);
    reads_.push_back(std::move(ids));
  }
  return UIH_OK;
}

// Flags the record; under UIH_MISMATCH_FAIL the batch goes on, so that the
// error names the first such record in the caller's order.
int Materializer::Mismatch(size_t rec, uint32_t gi, const char* why, uih_error* err) {
  (void)err;
  flags_[rec] |= UIH_RECORD_MISMATCH;
  NoteFailure(rec, groups_[gi]->name, why);
  return UIH_OK;
}

// Under UIH_MISMATCH_FAIL: keeps the first failing record in the caller's
// order (`group` the group it failed in, or NULL) for the batch's error.
void Materializer::NoteFailure(size_t rec, const char* group, const char* why) {
  if (p_->on_mismatch != UIH_MISMATCH_FAIL || rec >= first_bad_) return;
  first_bad_ = rec;
  char msg[640];
  snprintf(msg, sizeof msg, "record %zu (user %" PRIu64 ", request %" PRId64 ")%s%s: %s", rec, recs_[rec].user_id,
           recs_[rec].request_ts, group ? ", group " : "", group ? group : "", why);
  bad_message_ = msg;
}

// Whether the identities of records of schema version `vg` may be beyond
// checking: an id trait of it the store's schema has dropped since (the
// loader rewrites stripes without its column).
const uih_trait* Materializer::DroppedIdTrait(const uih_group* vg, uint32_t gi) const {
  for (uint32_t t = 0; vg && t < vg->ntraits; t++) {
    const uih_trait* tr = &vg->traits[t];
    if (tr->type != UIH_TYPE_ID || !uih_trait_active(tr)) continue;
    const uih_trait* now = uih_group_trait_by_id(groups_[gi], tr->id);
    if (now == nullptr || !uih_trait_active(now)) return tr;
  }
  return nullptr;
}

// The record's mutable events of the group, decoded into a batch of their own.
int Materializer::DecodeMutable(size_t rec, uint32_t gi, const uih_snapshot_group& rg, uih_error* err) {
  Pick& pick = picks_[rec][gi];
  const uih_group* g = groups_[gi];
  uint64_t total = 0;
  size_t at = 0, len;
  const uint8_t* stripe;
  while (uih_snapshot_mutable_next(&rg, &at, &stripe, &len) == 1) {
    uih_stripe_info info;
    int rc = uih_stripe_read_info(stripe, len, &info, err);
    if (rc == UIH_OK && info.group != g->id)
      rc = uih_error_set(err, UIH_ERR_CORRUPTION, "a mutable stripe of group %u in group %u's place", info.group, g->id);
    if (rc != UIH_OK) return rc;
    total += info.count;
  }
  if (total == 0) return UIH_OK;
  if (total > UIH_STRIPE_EVENTS_MAX)
    return uih_error_set(err, UIH_ERR_CORRUPTION, "%" PRIu64 " mutable events, at most %d", total, UIH_STRIPE_EVENTS_MAX);
  // Each stripe into a batch of its own; the newest `keep` events are the
  // record's (kept in the order logged: oldest first).
  const uint32_t keep = static_cast<uint32_t>(std::min<uint64_t>(total, p_->groups[gi].max_length));
  uint64_t seen = 0;
  at = 0;
  while (uih_snapshot_mutable_next(&rg, &at, &stripe, &len) == 1) {
    uih_stripe_info info;
    int rc = uih_stripe_read_info(stripe, len, &info, err);
    uint64_t first = seen;
    seen += info.count;
    if (rc != UIH_OK) return rc;
    if (seen <= total - keep) continue;  // older than the newest `keep`
    auto one = std::make_unique<Batch>();
    rc = uih_batch_create(g, std::max<uint32_t>(info.count, 1), reads_[gi].data(),
                          static_cast<uint32_t>(reads_[gi].size()), &one->b, err);
    uih_stripe_decoder_set_context(dec_, nullptr);  // a record's stripes stand alone
    if (rc == UIH_OK)
      rc = uih_stripe_decode(dec_, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, one->b, err);
    if (rc != UIH_OK) return rc;
    uint32_t from = first >= total - keep ? 0 : static_cast<uint32_t>(total - keep - first);
    pick.segs.push_back({one->b, from, one->b->count});
    pick.events += one->b->count - from;
    pick.mutable_events += one->b->count - from;
    keep_.push_back(std::move(one));
  }
  return UIH_OK;
}

// What a user's records need of group gi, and where it lies (the index
// alone): a job, whose first run is read with the batch's.
int Materializer::PlanGroup(const std::vector<size_t>& idx, uint32_t gi, Shard* sh,
                            const std::shared_ptr<Generation>& gen, uih_error* err) {
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
      std::string why = std::string("its mutable events do not decode: ") + uih_error_message(&local);
      rc = Mismatch(rec, gi, why.c_str(), err);
      if (rc != UIH_OK) return rc;
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
  if (!gen) {
    for (Need& nd : needs) {
      int rc = Mismatch(nd.rec, gi, "the shard has no generation", err);
      if (rc != UIH_OK) return rc;
    }
    return UIH_OK;
  }
  const GenerationFiles* files = nullptr;
  rocksdb::Status st = gen->Files(&files);
  if (!st.ok())
    return uih::Fail(err, sh->path, st, "opening generation " + std::to_string(gen->record.generation) + "'s files");
  // Where the union of the windows lies, and the first run: the newest
  // stripes that hold the most events a record needs if they are full.
  job.user = recs_[needs[0].rec].user_id;
  int rc = files->Plan(job.user, g->id, lo, hi, &job.plan, err);
  if (rc != UIH_OK) return rc;
  uint32_t most = 0;
  for (const Need& nd : needs) most = std::max(most, nd.check);
  const size_t run = most / g->stripe_events + 1;
  job.begin = job.plan.size() > run ? job.plan.size() - run : 0;
  job.gi = gi;
  job.sh = sh;
  job.gen = gen;
  job.files = files;
  jobs_.push_back(std::move(job));
  return UIH_OK;
}

// One batch of reads for the first runs of every job (io_uring through
// uih/io.h, one submission; pread where it is not there), or each job's
// read on its own.
int Materializer::ReadFirstRuns(uih_error* err) {
  uih_io* io = batch_io_ ? ThreadIo() : nullptr;
  reqs_.clear();
  for (Job& job : jobs_) {
    const size_t n = job.plan.size() - job.begin;
    job.req = reqs_.size();
    job.batched = io && job.files->Prepare(job.plan.data() + job.begin, n, &job.first, &reqs_);
    if (job.batched) continue;
    int rc = job.files->Read(job.plan.data() + job.begin, n, &job.first, err);
    if (rc != UIH_OK) return rc;
    st_->reads++;
  }
  if (reqs_.empty()) return UIH_OK;
  st_->reads += reqs_.size();
  st_->reads_batched += reqs_.size();
  uih_error ring{};
  (void)uih_io_read(io, reqs_.data(), reqs_.size(), &ring);  // a failed ring rereads with pread: results stand
  for (Job& job : jobs_) {
    if (!job.batched) continue;
    int rc = job.files->Finish(job.plan.data() + job.begin, job.plan.size() - job.begin, &job.first,
                               reqs_.data() + job.req, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

// A job's stripes decoded, newest first, each into its own batch, until
// every record has its `check` newest events or the stripes end: the
// first run as read with the batch, then runs further back sized by what
// is still missing (doubling), so a short projection reads only the tail
// of a long history. Then each record verified and picked.
int Materializer::DecodeGroup(Job& job, uih_error* err) {
  const uint32_t gi = job.gi;
  const uih_group* g = groups_[gi];
  Shard* sh = job.sh;
  const std::shared_ptr<Generation>& gen = job.gen;
  const GenerationFiles* files = job.files;
  const uint64_t user = job.user;
  std::vector<Need>& needs = job.needs;
  int rc = UIH_OK;
  std::vector<std::unique_ptr<Batch>> decoded;  // newest first
  auto missing = [&] {
    uint32_t most = 0;
    for (const Need& nd : needs) most = std::max<uint32_t>(most, nd.check - static_cast<uint32_t>(std::min<size_t>(nd.rows.size(), nd.check)));
    return most;
  };
  // Each record's rows, newest first, as (stripe slot, row).
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> found(needs.size());
  size_t end = job.plan.size(), run = 0;
  while (end > 0 && missing() > 0) {
    size_t begin = job.begin;
    const GenerationFiles::StripeSet* set = &job.first;
    if (end == job.plan.size()) {
      run = end - begin;
    } else {
      run = std::max<size_t>(run * 2, missing() / g->stripe_events + 1);
      begin = end > run ? end - run : 0;
      rc = files->Read(job.plan.data() + begin, end - begin, &stripes_, err);
      if (rc != UIH_OK) return rc;
      st_->reads++;
      set = &stripes_;
    }
    st_->bytes_read += set->bytes.size();
    const auto& list = set->stripes;
    for (size_t i = list.size(); i-- > 0 && missing() > 0;) {
      auto b = std::make_unique<Batch>();
      uih_stripe_info info;
      rc = uih_stripe_read_info(set->at(list[i]), list[i].len, &info, err);
      if (rc == UIH_OK)
        rc = uih_batch_create(g, std::max<uint32_t>(info.count, 1), reads_[gi].data(),
                              static_cast<uint32_t>(reads_[gi].size()), &b->b, err);
      uih_stripe_decoder_set_context(dec_, gen->ctx);  // the dictionaries its stripes may name
      if (rc == UIH_OK)
        rc = uih_stripe_decode(dec_, set->at(list[i]), list[i].len, 0, UIH_DECODE_TO_END,
                               UIH_DECODE_VERIFY_CHECKSUM, b->b, err);
      if (rc != UIH_OK) {
        uih_error_prefix(err, "store %s: generation %u: stripe of user %" PRIu64 " group %u at ts %" PRId64 ": ",
                         sh->path.c_str(), gen->record.generation, user, g->id, list[i].start);
        return rc;
      }
      st_->stripes_read++;
      const uih_batch* sb = b->b;
      const int64_t* ts = static_cast<const int64_t*>(sb->columns[uih_batch_column_index(sb, g->ts->id)].values);
      const uih_column* arr = &sb->columns[uih_batch_column_index(sb, UIH_TRAIT_ARRIVAL)];
      const uint32_t slot = static_cast<uint32_t>(decoded.size());
      // The stripe's arrivals read once; its rows in time order (as the
      // loader writes them; checked) give each window's rows by bisection.
      arrival_.resize(sb->count);
      bool ordered = true;
      for (uint32_t r = 0; r < sb->count; r++) {
        arrival_[r] = uih_column_get_bits(arr, r);
        ordered = ordered && (r == 0 || ts[r - 1] <= ts[r]);
      }
      for (size_t k = 0; k < needs.size(); k++) {
        Need& nd = needs[k];
        uint32_t first = 0, last = sb->count;
        if (ordered) {
          last = static_cast<uint32_t>(std::upper_bound(ts, ts + sb->count, nd.rg->end_ts) - ts);
          first = static_cast<uint32_t>(std::lower_bound(ts, ts + last, nd.rg->start_ts) - ts);
        }
        for (uint32_t r = last; r-- > first && nd.rows.size() < nd.check;)
          if (ts[r] >= nd.rg->start_ts && ts[r] <= nd.rg->end_ts && arrival_[r] <= nd.rg->generation) {
            nd.rows.push_back(r);
            found[k].push_back({slot, r});
          }
      }
      decoded.push_back(std::move(b));
    }
    end = begin;
  }
  std::vector<std::pair<uint32_t, uint32_t>> chain_rows;  // the last chain's rows and values
  std::vector<uint64_t> chain_h;
  int chain_cols[1 + UIH_TRAITS_MAX];
  uint32_t chain_ncols = UINT32_MAX;
  // Verify each record at its checkpoint, then keep its newest `want`.
  // Every decoded stripe has the same columns: one set of identity columns
  // per schema version.
  for (size_t k = 0; k < needs.size(); k++) {
    Need& nd = needs[k];
    const uih_snapshot_record& r = recs_[nd.rec];
    const uih_schema* version = nullptr;
    rc = uih::SchemaAt(s_, r.schema_version, &version, err);
    if (rc == UIH_ERR_NOT_FOUND) {
      rc = Mismatch(nd.rec, gi, "its schema version is not in the store", err);
      if (rc != UIH_OK) return rc;
      continue;
    }
    if (rc != UIH_OK) return rc;
    const uih_group* vg = uih_schema_group_by_id(version, g->id);
    uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
    uint32_t ncp = uih_snapshot_checkpoints(nd.rg->length, cp), at = 0;
    while (at < ncp && cp[at] != nd.check) at++;
    // A record newer than what this store opened (a read-only store sees
    // the generations it opened with) may need events it does not have.
    char newer[160] = "";
    if (nd.rg->generation > gen->record.generation)
      snprintf(newer, sizeof newer,
               " (it names generation %u, newer than this store's current %u: reopen the store to see it)",
               nd.rg->generation, gen->record.generation);
    if (nd.rows.size() < nd.check) {
      char why[320];
      snprintf(why, sizeof why, "%zu of the %u newest events of its window are there%s", nd.rows.size(), nd.check,
               newer);
      rc = Mismatch(nd.rec, gi, why, err);
      if (rc != UIH_OK) return rc;
    } else {
      // The identity chain, newest first. Records of a user mostly share
      // their newest rows (and schema version): the chain of the previous
      // record is reused as far as their rows agree.
      int cols[1 + UIH_TRAITS_MAX];
      uint32_t ncols = vg ? uih_snapshot_identity_columns(vg, decoded[0]->b, cols, 1 + UIH_TRAITS_MAX) : 0;
      if (ncols != chain_ncols || !std::equal(cols, cols + ncols, chain_cols)) {
        chain_rows.clear();
        chain_ncols = ncols;
        std::copy(cols, cols + ncols, chain_cols);
      }
      size_t common = 0;
      while (common < chain_rows.size() && common < found[k].size() && chain_rows[common] == found[k][common]) common++;
      chain_rows.resize(common);
      chain_h.resize(common);
      for (size_t j = common; j < found[k].size(); j++) {
        const auto& [slot, row] = found[k][j];
        chain_h.push_back(uih_snapshot_identity_next(j ? chain_h[j - 1] : 0, decoded[slot]->b, cols, ncols, row));
        chain_rows.push_back(found[k][j]);
      }
      const uint64_t h = found[k].empty() ? 0 : chain_h[found[k].size() - 1];
      if (vg == nullptr || at == ncp || static_cast<uint32_t>(h) != nd.rg->check[at]) {
        char why[448];
        const uih_trait* dropped = DroppedIdTrait(vg, gi);
        if (dropped)
          snprintf(why, sizeof why,
                   "unverifiable: its schema version %u identifies events by id trait '%s', which the store's schema "
                   "has dropped since (the identities of its %u newest events give %08x, the record says %08x)",
                   r.schema_version, dropped->name, nd.check, static_cast<uint32_t>(h), at < ncp ? nd.rg->check[at] : 0);
        else
          snprintf(why, sizeof why, "the identities of its %u newest events give %08x, the record says %08x%s",
                   nd.check, static_cast<uint32_t>(h), at < ncp ? nd.rg->check[at] : 0, newer);
        rc = Mismatch(nd.rec, gi, why, err);
        if (rc != UIH_OK) return rc;
      }
    }
    // Its immutable part before its mutable one: oldest first.
    Pick& pick = picks_[nd.rec][gi];
    std::vector<Seg> mut = std::move(pick.segs);
    pick.segs.clear();
    pick.events = 0;
    const size_t take = std::min<size_t>(nd.want, found[k].size());
    for (size_t j = take; j-- > 0;) pick.Add(decoded[found[k][j].first]->b, found[k][j].second);
    pick.segs.insert(pick.segs.end(), mut.begin(), mut.end());
    pick.events += pick.mutable_events;
  }
  for (auto& b : decoded) keep_.push_back(std::move(b));
  return UIH_OK;
}

int Materializer::PlanUser(const std::vector<size_t>& idx, uih_error* err) {
  const uint64_t user = recs_[idx[0]].user_id;
  Shard* sh;
  int rc = uih::ShardOfUser(s_, user, &sh, err);
  if (rc != UIH_OK) return rc;
  std::shared_ptr<Generation> gen = sh->Get(0);
  st_->users++;
  for (uint32_t gi = 0; gi < p_->ngroups; gi++) {
    rc = PlanGroup(idx, gi, sh, gen, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

int Materializer::Run(const uint8_t* const* records, const size_t* lens, size_t n, uih_materialized* out,
                      uih_error* err) {
  int rc = CheckProjection(err);
  if (rc == UIH_OK) rc = uih_stripe_decoder_create(&dec_, err);
  if (rc != UIH_OK) return rc;
  recs_.resize(n);
  flags_.assign(n, 0);
  picks_.assign(n, std::vector<Pick>(p_->ngroups));
  st_->records = n;
  for (size_t i = 0; i < n; i++) {
    uih_error local{};
    if (records[i] != nullptr && uih_snapshot_record_decode(records[i], lens[i], &recs_[i], &local) == UIH_OK) continue;
    if (records[i] == nullptr) uih_error_set(&local, UIH_ERR_INVALID_ARGUMENT, "NULL record");
    if (p_->on_mismatch == UIH_MISMATCH_FAIL)
      return Fail(err, UIH_ERR_CORRUPTION, "record %zu: %s", i, uih_error_message(&local));
    flags_[i] |= UIH_RECORD_UNREADABLE;
    recs_[i] = uih_snapshot_record{};
    st_->unreadable++;
  }
  // Records logged against another store: nothing here is theirs.
  const uint32_t store = static_cast<uint32_t>(s_->id);
  for (size_t i = 0; i < n; i++) {
    const uint32_t theirs = recs_[i].store;
    if ((flags_[i] & UIH_RECORD_UNREADABLE) || theirs == 0 || store == 0 || theirs == store) continue;
    if (p_->on_mismatch == UIH_MISMATCH_FAIL)
      return Fail(err, UIH_ERR_CORRUPTION, "record %zu (user %" PRIu64 ", request %" PRId64
                  "): logged against store %08x, this is store %08x (%s)", i, recs_[i].user_id, recs_[i].request_ts,
                  theirs, store, s_->dir.c_str());
    flags_[i] |= UIH_RECORD_OTHER_STORE;
    recs_[i] = uih_snapshot_record{};
  }
  // Records of users erased since: nothing of theirs comes back, not even
  // the events a record carries, whatever the projection reads.
  for (size_t i = 0; i < n; i++) {
    if (flags_[i] & kNotServed) continue;
    uint32_t generation = recs_[i].generation;  // records before version 3: their groups' (when they have one)
    for (uint32_t k = 0; k < recs_[i].ngroups && recs_[i].version < 3; k++)
      generation = std::max(generation, recs_[i].groups[k].generation);
    uih::Erasure by;
    if (!uih::ErasedSince(s_, recs_[i].user_id, generation, recs_[i].version >= 3, recs_[i].request_ts, &by)) continue;
    char why[160];
    if (recs_[i].version >= 3 || generation)
      snprintf(why, sizeof why, "the user was erased by generation %u, after the record was logged at generation %u",
               by.generation, generation);
    else
      snprintf(why, sizeof why, "the user was erased by generation %u, whose through %" PRId64 " is after the request",
               by.generation, by.through);
    NoteFailure(i, nullptr, why);
    flags_[i] |= UIH_RECORD_ERASED | UIH_RECORD_MISMATCH;
    recs_[i] = uih_snapshot_record{};
  }
  // Users in order of first appearance; each user's records together.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    bool ua = flags_[a] & kNotServed, ub = flags_[b] & kNotServed;
    if (ua != ub) return ub;
    return recs_[a].user_id < recs_[b].user_id;
  });
  std::vector<size_t> idx;
  for (size_t k = 0; k < n && rc == UIH_OK; k++) {
    if (flags_[order[k]] & kNotServed) break;
    idx.push_back(order[k]);
    if (!affinity_ || k + 1 == n || (flags_[order[k + 1]] & kNotServed) ||
        recs_[order[k + 1]].user_id != recs_[order[k]].user_id) {
      rc = PlanUser(idx, err);
      served_.push_back(std::move(idx));
      idx.clear();
    }
  }
  if (rc == UIH_OK) rc = ReadFirstRuns(err);
  for (size_t j = 0; j < jobs_.size() && rc == UIH_OK; j++) rc = DecodeGroup(jobs_[j], err);
  if (rc != UIH_OK) return rc;
  if (first_bad_ != SIZE_MAX) return Fail(err, UIH_ERR_CORRUPTION, "%s", bad_message_.c_str());
  for (uint8_t f : flags_) st_->mismatches += (f & (UIH_RECORD_MISMATCH | UIH_RECORD_OTHER_STORE)) != 0;
  writer_.Write(p_, groups_, flags_, picks_, served_, st_, out);
  return UIH_OK;
}

}  // namespace

namespace uih {

int Materialize(uih_store* s, const uint8_t* const* records, const size_t* lens, size_t n,
                const uih_projection* projection, bool affinity, bool batch_io, uih_materialized** out,
                uih_materialize_stats* stats, uih_error* err) {
  if (s == nullptr || projection == nullptr || out == nullptr || (n && (records == nullptr || lens == nullptr)))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "materialize: NULL argument");
  uih_materialize_stats local{};
  auto result = std::make_unique<uih_materialized>();
  Materializer m(s, projection, affinity, batch_io, &local);
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
