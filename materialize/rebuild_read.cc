// A batch's jobs served (rebuild.h): the first runs of every job read at
// once, then per job its stripes walked back through the store's window
// reader until every record has the events its checkpoint covers, each
// record verified with the engine's identity chain and its events picked.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "rebuild.h"
#include "uih/stripe.h"

namespace uih::mat {

namespace {

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

}  // namespace

// One batch of reads for the first runs of every job (io_uring through
// uih/io.h, one submission; pread where it is not there), or each job's
// read on its own.
int Rebuild::ReadFirstRuns(uih_error* err) {
  uih_io* io = batch_io_ ? ThreadIo() : nullptr;
  reqs_.clear();
  for (Job& job : jobs_) {
    const size_t n = job.plan.size() - job.begin;
    job.req = reqs_.size();
    job.batched = io && job.files->Prepare(job.plan.data() + job.begin, n, &job.first, &reqs_);
    if (job.batched) continue;
    int rc = job.files->Read(job.plan.data() + job.begin, n, &job.first, err);
    if (rc != UIH_OK && !Damaged(job, rc, err)) return rc;
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
    if (rc != UIH_OK && !Damaged(job, rc, err)) return rc;
  }
  return UIH_OK;
}

// Each need's identity chain as of the record's schema version (none when
// the store does not have it: Verify says so), over batches like `like`.
// A need whose version is the previous one's shares its rows, so far.
void Rebuild::StartChains(Job& job, const uih_batch* like) {
  chains_.clear();
  chain_groups_.clear();
  for (size_t k = 0; k < job.needs.size(); k++) {
    Need& nd = job.needs[k];
    const uih_schema* version = nullptr;
    const uih_group* vg = nullptr;
    uih_error ignored{};  // Verify looks again, and reports
    if (SchemaAt(s_, recs_[nd.rec].schema_version, &version, &ignored) == UIH_OK)
      vg = uih_schema_group_by_id(version, groups_[job.gi]->id);
    nd.chain = -1;
    nd.h = 0;
    nd.same = false;
    if (vg == nullptr) continue;
    const size_t at = std::find(chain_groups_.begin(), chain_groups_.end(), vg) - chain_groups_.begin();
    if (at == chain_groups_.size()) {
      chain_groups_.push_back(vg);
      chains_.emplace_back();
      uih_snapshot_chain_start(&chains_.back(), vg, like);
    }
    nd.chain = static_cast<int>(at);
    nd.same = k > 0 && job.needs[k - 1].chain == nd.chain;
  }
}

// Each need's chain pushed over the rows the last stripe gave it (those
// past before_), while they are in cache. A need whose rows were the
// previous need's up to this stripe takes that need's chain as far as
// their new rows agree (step_h_ keeps the previous need's value after each
// of its new rows), so a user's records, which mostly share their newest
// rows, push each row once.
void Rebuild::ExtendChains(Job& job, const std::vector<std::unique_ptr<BatchPtr>>& decoded) {
  bool prev_steps = false;  // step_h_ holds the previous need's values for its rows [a, its end)
  for (size_t k = 0; k < job.needs.size(); k++) {
    Need& nd = job.needs[k];
    if (nd.chain < 0) {
      prev_steps = false;
      continue;
    }
    const size_t a = before_[k], b = nd.found.size();
    size_t from = a;  // rows [a, from) have their values from the previous need
    if (nd.same && prev_steps) {
      const Need& prev = job.needs[k - 1];
      const size_t pb = prev.found.size();  // its rows before this stripe were nd's: as many
      while (from < b && from < pb && nd.found[from] == prev.found[from]) from++;
      if (from > a) nd.h = step_h_[from - a - 1];
      nd.same = from == b && b == pb;
      if (nd.same) continue;  // step_h_ is nd's as it was prev's
    } else {
      nd.same = false;
    }
    next_h_.resize(b - a);
    std::copy(step_h_.begin(), step_h_.begin() + (from - a), next_h_.begin());
    uih_snapshot_chain* c = &chains_[nd.chain];
    c->h = nd.h;
    for (size_t j = from; j < b; j++) {
      uih_snapshot_chain_push(c, decoded[nd.found[j].first]->b, nd.found[j].second);
      next_h_[j - a] = c->h;
    }
    nd.h = c->h;
    step_h_.swap(next_h_);
    prev_steps = true;
  }
}

std::unique_ptr<BatchPtr> BatchPool::Take() {
  if (spare_.empty()) return std::make_unique<BatchPtr>();
  std::unique_ptr<BatchPtr> b = std::move(spare_.back());
  spare_.pop_back();
  bytes_ -= Bytes(b->b);
  return b;
}

void BatchPool::Give(std::unique_ptr<BatchPtr> b) noexcept {
  if (!b->b || bytes_ + Bytes(b->b) > kSpareBytes || spare_.size() == kSpareBatches) return;  // freed here
  try {
    spare_.push_back(std::move(b));
  } catch (const std::bad_alloc&) {
    return;  // b freed: a pool is an economy, not a need
  }
  bytes_ += Bytes(spare_.back()->b);
}

BatchPool& BatchPool::ThisThread(uint64_t store) {
  static thread_local BatchPool pool;
  if (pool.store_ != store) {  // another store's batches: freed without a look at what they point to
    pool.spare_.clear();
    pool.bytes_ = 0;
    pool.store_ = store;
  }
  return pool;
}

// A job's stripes decoded, newest first, each into its own batch, until
// every record has its `check` newest events or the stripes end: the
// first run as read with the batch, then runs further back through the
// window reader, so a short projection reads only the tail of a long
// history. Each record's rows in its window with arrival at most its
// generation are found by bisection (rows are in time order, as the loader
// writes them; checked), newest first, and its identity chain extended
// over them.
int Rebuild::Collect(Job& job, std::vector<std::unique_ptr<BatchPtr>>* decoded, uih_error* err) {
  const uint32_t gi = job.gi;
  const uih_group* g = groups_[gi];
  auto missing = [&] {
    uint32_t most = 0;
    for (const Need& nd : job.needs)
      most = std::max<uint32_t>(most, nd.check - static_cast<uint32_t>(std::min<size_t>(nd.found.size(), nd.check)));
    return most;
  };
  reader_.Start(job.shard, job.gen.get(), job.files, job.user, g, job.plan.data(), job.plan.size(), &job.first,
                job.begin);
  for (Need& nd : job.needs) nd.found.reserve(nd.check);  // grown once: a long window is a million rows
  before_.resize(job.needs.size());
  for (uint32_t want = missing(); want > 0; want = missing()) {
    auto b = pool_.Take();
    bool more = false;
    int rc = reader_.Next(want, reads_[gi].data(), static_cast<uint32_t>(reads_[gi].size()), &b->b, &more, err);
    if (rc != UIH_OK) return rc;
    if (!more) {
      pool_.Give(std::move(b));
      break;
    }
    const uih_batch* sb = b->b;
    if (decoded->empty()) StartChains(job, sb);
    const int64_t* ts = uih_batch_timestamps(sb);
    const uih_column* arr = &sb->columns[uih_batch_column_index(sb, UIH_TRAIT_ARRIVAL)];
    const uint32_t slot = static_cast<uint32_t>(decoded->size());
    // The stripe's arrivals read once; whether its rows are in time order,
    // once: then each window's rows are found by bisection (else every row
    // is looked at: the chain decides).
    arrival_.resize(sb->count);
    for (uint32_t r = 0; r < sb->count; r++) arrival_[r] = uih_column_get_bits(arr, r);
    const bool ordered = InTimeOrder(sb);
    for (size_t k = 0; k < job.needs.size(); k++) {
      Need& nd = job.needs[k];
      before_[k] = nd.found.size();
      uint32_t first = 0, last = sb->count;
      if (ordered) RowsWithin(sb, nd.rg->start_ts, nd.rg->end_ts, &first, &last);
      for (uint32_t r = last; r-- > first && nd.found.size() < nd.check;)
        if (ts[r] >= nd.rg->start_ts && ts[r] <= nd.rg->end_ts && arrival_[r] <= nd.rg->generation)
          nd.found.push_back({slot, r});
    }
    decoded->push_back(std::move(b));
    ExtendChains(job, *decoded);
  }
  return UIH_OK;
}

// Whether the identities of records of schema version `vg` may be beyond
// checking: an id trait of it the store's schema has dropped since (the
// loader rewrites stripes without its column).
const uih_trait* Rebuild::DroppedIdTrait(const uih_group* vg, uint32_t gi) const {
  for (uint32_t t = 0; vg && t < vg->ntraits; t++) {
    const uih_trait* tr = &vg->traits[t];
    if (tr->type != UIH_TYPE_ID || !uih_trait_active(tr)) continue;
    const uih_trait* now = uih_group_trait_by_id(groups_[gi], tr->id);
    if (now == nullptr || !uih_trait_active(now)) return tr;
  }
  return nullptr;
}

// Verifies one record's immutable part at its checkpoint, flagging a
// mismatch with its reason; *rc gets an error that is not the record's.
// Whether its events are to be picked: not when its schema version is
// unknown.
bool Rebuild::Verify(const Job& job, const Need& nd, const std::vector<std::unique_ptr<BatchPtr>>& decoded,
                     uih_error* err, int* rc) {
  const uih_snapshot_record& r = recs_[nd.rec];
  // The record's group as of its schema version: found by StartChains
  // when the need has a chain, else looked up (and reported) here.
  const uih_group* vg = nd.chain >= 0 ? chain_groups_[nd.chain] : nullptr;
  *rc = UIH_OK;
  if (vg == nullptr) {
    const uih_schema* version = nullptr;
    *rc = SchemaAt(s_, r.schema_version, &version, err);
    if (*rc == UIH_ERR_NOT_FOUND) {
      *rc = UIH_OK;
      Mismatch(nd.rec, job.gi, "its schema version is not in the store");
      return false;
    }
    if (*rc != UIH_OK) return false;
    vg = uih_schema_group_by_id(version, groups_[job.gi]->id);
  }
  if (vg == nullptr) {  // a record can name only its schema's groups: a bug, or the store's schema is another's
    char why[160];
    snprintf(why, sizeof why, "its schema version %u has no group %s", r.schema_version, groups_[job.gi]->name);
    Mismatch(nd.rec, job.gi, why);
    return true;
  }
  // A record newer than what this store opened (a read-only store sees
  // the generations it opened with) may need events it does not have.
  char newer[160] = "";
  if (nd.rg->generation > job.gen->number())
    snprintf(newer, sizeof newer,
             " (it names generation %u, newer than this store's current %u: reopen the store to see it)",
             nd.rg->generation, job.gen->number());
  if (nd.found.size() < nd.check) {
    char why[320];
    snprintf(why, sizeof why, "%zu of the %u newest events of its window are there%s", nd.found.size(), nd.check,
             newer);
    Mismatch(nd.rec, job.gi, why);
    return true;
  }
  // The identity chain Collect extended as it found the rows (pushed here
  // only if the version could not be read then).
  uih_snapshot_chain late;
  uih_snapshot_chain* c = nd.chain >= 0 ? &chains_[nd.chain] : &late;
  if (nd.chain >= 0) {
    c->n = static_cast<uint32_t>(nd.found.size());
    c->h = nd.h;
  } else {
    late = uih_snapshot_chain{};
    if (!decoded.empty()) uih_snapshot_chain_start(c, vg, decoded[0]->b);
    for (const auto& row : nd.found) uih_snapshot_chain_push(c, decoded[row.first]->b, row.second);
  }
  if (uih_snapshot_chain_verify(c, nd.rg)) return true;
  char why[448];
  const uint32_t expected = uih_snapshot_group_check(nd.rg, nd.check);
  const uih_trait* dropped = DroppedIdTrait(vg, job.gi);
  if (dropped)
    snprintf(why, sizeof why,
             "unverifiable: its schema version %u identifies events by id trait '%s', which the store's schema "
             "has dropped since (the identities of its %u newest events give %08x, the record says %08x)",
             r.schema_version, dropped->name, nd.check, static_cast<uint32_t>(c->h), expected);
  else
    snprintf(why, sizeof why, "the identities of its %u newest events give %08x, the record says %08x%s", nd.check,
             static_cast<uint32_t>(c->h), expected, newer);
  Mismatch(nd.rec, job.gi, why);
  return true;
}

// The record's newest `want` events of its immutable part before its
// mutable ones: oldest first.
void Rebuild::PickPart(uint32_t gi, const Need& nd, const std::vector<std::unique_ptr<BatchPtr>>& decoded) {
  Pick& pick = picks_[nd.rec][gi];
  std::vector<Seg> mut = std::move(pick.segs);
  pick.segs.clear();
  pick.events = 0;
  const size_t take = std::min<size_t>(nd.want, nd.found.size());
  for (size_t j = take; j-- > 0;) pick.Add(decoded[nd.found[j].first]->b, nd.found[j].second);
  pick.segs.insert(pick.segs.end(), mut.begin(), mut.end());
  pick.events += pick.mutable_events;
}

// A job whose stripes fail to read as damaged (a checksum, a framing): its
// records are flagged, each naming what failed, and the batch goes on. Any
// other failure (I/O, memory) fails the batch.
bool Rebuild::Damaged(Job& job, int rc, const uih_error* err) {
  if (rc != UIH_ERR_CORRUPTION) return false;
  job.damaged = uih_error_message(err);
  return true;
}

void Rebuild::FlagDamaged(const Job& job) {
  char why[768];
  snprintf(why, sizeof why, "its events in generation %u cannot be read: %s", job.gen->number(), job.damaged.c_str());
  for (const Need& nd : job.needs) {
    Pick& pick = picks_[nd.rec][job.gi];
    pick = Pick{};  // nothing of the group: not even its mutable events, which come after what is lost
    Mismatch(nd.rec, job.gi, why);
  }
}

int Rebuild::ServeJob(Job& job, uih_error* err) {
  if (!job.damaged.empty()) {
    FlagDamaged(job);
    return UIH_OK;
  }
  std::vector<std::unique_ptr<BatchPtr>> decoded;  // newest first
  int rc = Collect(job, &decoded, err);
  if (rc != UIH_OK && Damaged(job, rc, err)) {
    FlagDamaged(job);
    for (auto& b : decoded) keep_.push_back(std::move(b));
    return UIH_OK;
  }
  for (size_t k = 0; k < job.needs.size() && rc == UIH_OK; k++) {
    if (Verify(job, job.needs[k], decoded, err, &rc) && rc == UIH_OK) PickPart(job.gi, job.needs[k], decoded);
  }
  for (auto& b : decoded) keep_.push_back(std::move(b));
  return rc;
}

}  // namespace uih::mat
