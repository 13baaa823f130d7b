// The C API of uih/store.h's inference snapshots: per feature group the
// newest events of both tiers, split at the watermark, and the record that
// lets training rebuild them (uih/snapshot.h).
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "uih_plugin/c_api.h"
#include "store_internal.h"
#include "uih/snapshot.h"
#include "uih/materialize.h"
#include "uih/store.h"
#include "uih/stripe.h"

using uih::Generation;
using uih::GenerationFiles;
using uih::Shard;

namespace {

// A batch pointer that frees what it holds.
struct BatchPtr {
  uih_batch* b = nullptr;
  ~BatchPtr() { uih_batch_free(b); }
};

// Per spec group: what the call built.
struct GroupWork {
  BatchPtr sequence;       // what the model gets (every active trait)
  BatchPtr window;         // the immutable part (+ arrival)
  std::vector<std::unique_ptr<BatchPtr>> pool;  // its stripes decoded, newest first
  std::vector<uint32_t> rows;                   // per stripe of the pool: its rows in the part
  BatchPtr mut;            // the mutable tier's events
  BatchPtr chunk;          // mutable events being encoded, one stripe's worth
  std::string blob;        // the record's mutable stripes
};

// Makes *b a batch of group `g` with the traits `ids` (NULL: every active
// one) holding `capacity` events, reusing it when it is one.
int Ensure(BatchPtr* b, const uih_group* g, const uint16_t* ids, uint32_t nids, uint32_t capacity, uih_error* err) {
  capacity = std::max<uint32_t>(capacity, 1);
  if (b->b && b->b->group == g) {
    uih_batch_clear(b->b);
    return uih_batch_reserve(&b->b, capacity, err);
  }
  uih_batch_free(b->b);
  b->b = nullptr;
  return uih_batch_create(g, capacity, ids, nids, &b->b, err);
}


}  // namespace

struct uih_snapshotter {
  uih_store* s = nullptr;
  uih_stripe_decoder* dec = nullptr;
  uih_stripe_encoder* enc = nullptr;
  std::vector<GenerationFiles::Extent> plan;
  GenerationFiles::StripeSet stripes;
  std::vector<std::unique_ptr<GroupWork>> work;
  std::vector<const uih_batch*> out;
  std::vector<uint16_t> ids;  // traits a window holds
  std::vector<uint8_t> record;
  ~uih_snapshotter() {
    uih_stripe_decoder_free(dec);
    uih_stripe_encoder_free(enc);
  }
};

namespace {

// The group's newest events for the spec: fills w->sequence and the
// record's group `rg`.
int SnapshotGroup(uih_snapshotter* sn, Shard* sh, const std::shared_ptr<Generation>& gen, uih::Split split,
                  const uih_schema* schema, uint64_t user, int64_t request_ts, const uih_snapshot_spec_group& spec,
                  GroupWork* w, uih_snapshot_group* rg, uih_error* err) {
  const uih_group* g = uih_schema_group_by_id(schema, spec.group);
  if (g == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "snapshot: the schema (version %u) has no group with id %u",
                         uih_schema_version(schema), spec.group);
  if (spec.max_length == 0 || spec.max_length > UIH_STRIPE_EVENTS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: group %s: max_length %u, expected 1..%d", g->name,
                         spec.max_length, UIH_STRIPE_EVENTS_MAX);
  *rg = uih_snapshot_group{};
  rg->group = g->id;
  // The mutable tier's events from the watermark up to the request.
  const int64_t lo = split.at;
  int rc = Ensure(&w->mut, g, nullptr, 0, 64, err);
  if (rc == UIH_OK && lo <= request_ts)
    rc = uih::ReadMutableNewest(sh->mut, user, g->id, lo, request_ts, spec.max_length, &w->mut.b, err);
  if (rc != UIH_OK) return rc;
  const uint32_t m = w->mut.b->count, keep_m = std::min(m, spec.max_length), want = spec.max_length - keep_m;

  // The immutable tier's newest `want` events below the split: the user's
  // stripes found in the index, read backwards in runs (doubling) and
  // decoded newest first, each into a batch of the pool, until `want`
  // events at or before `end` are there; then those copied, oldest first,
  // into the window. At most want + one stripe's events are decoded.
  uint32_t nimm = 0;
  const int64_t end = split.has && split.at != INT64_MIN ? std::min(split.at - 1, request_ts) : INT64_MIN;
  if (want > 0 && gen && split.has && split.at != INT64_MIN) {
    const GenerationFiles* files = nullptr;
    rocksdb::Status st = gen->Files(&files);
    if (!st.ok())
      return uih::Fail(err, sh->path, st, "opening generation " + std::to_string(gen->record.generation) + "'s files");
    rc = files->Plan(user, g->id, INT64_MIN, end, &sn->plan, err);
    if (rc != UIH_OK) return rc;
    // The window and a stripe's batch: every active trait and the arrival.
    sn->ids.clear();
    for (uint32_t t = 0; t < g->ntraits; t++)
      if (uih_trait_active(&g->traits[t])) sn->ids.push_back(g->traits[t].id);
    sn->ids.push_back(UIH_TRAIT_ARRIVAL);
    const uint32_t nids = static_cast<uint32_t>(sn->ids.size());
    size_t stop = sn->plan.size(), run = 0, used = 0;
    std::vector<uint32_t>& rows = w->rows;  // per decoded stripe: its rows at or before `end`
    rows.clear();
    while (stop > 0 && nimm < want) {
      run = std::max<size_t>(run * 2, (want - nimm) / g->stripe_events + 1);
      const size_t begin = stop > run ? stop - run : 0;
      rc = files->Read(sn->plan.data() + begin, stop - begin, &sn->stripes, err);
      if (rc != UIH_OK) return rc;
      const auto& list = sn->stripes.stripes;
      for (size_t i = list.size(); rc == UIH_OK && i-- > 0 && nimm < want;) {
        if (used == w->pool.size()) w->pool.push_back(std::make_unique<BatchPtr>());
        BatchPtr* b = w->pool[used].get();
        uih_stripe_info info;
        rc = uih_stripe_read_info(sn->stripes.at(list[i]), list[i].len, &info, err);
        if (rc == UIH_OK && (b->b == nullptr || b->b->group != g || b->b->ncolumns != nids)) {
          uih_batch_free(b->b);
          b->b = nullptr;
          rc = uih_batch_create(g, std::max<uint32_t>(info.count, 1), sn->ids.data(), nids, &b->b, err);
        }
        if (rc == UIH_OK) rc = uih_batch_reserve(&b->b, std::max<uint32_t>(info.count, 1), err);
        uih_stripe_decoder_set_context(sn->dec, gen->ctx);  // the dictionaries its stripes may name
        if (rc == UIH_OK)
          rc = uih_stripe_decode(sn->dec, sn->stripes.at(list[i]), list[i].len, 0, UIH_DECODE_TO_END,
                                 UIH_DECODE_VERIFY_CHECKSUM, b->b, err);
        if (rc != UIH_OK) {
          uih_error_prefix(err, "store %s: generation %u: stripe of user %" PRIu64 " group %u at ts %" PRId64 ": ",
                           sh->path.c_str(), gen->record.generation, user, g->id, list[i].start);
          return rc;
        }
        // Rows are in time order; those after `end` (a stripe straddling
        // it) are not the model's.
        const uih_batch* sb = b->b;
        const int64_t* ts = static_cast<const int64_t*>(sb->columns[uih_batch_column_index(sb, g->ts->id)].values);
        uint32_t below = sb->count;
        while (below > 0 && ts[below - 1] > end) below--;
        rows.push_back(below);
        nimm += std::min(below, want - nimm);
        used++;
      }
      stop = begin;
    }
    if (w->window.b == nullptr || w->window.b->group != g || w->window.b->ncolumns != nids) {
      uih_batch_free(w->window.b);
      w->window.b = nullptr;
      rc = uih_batch_create(g, std::max<uint32_t>(nimm, 1), sn->ids.data(), nids, &w->window.b, err);
    }
    if (rc == UIH_OK) {
      uih_batch_clear(w->window.b);
      rc = uih_batch_reserve(&w->window.b, std::max<uint32_t>(nimm, 1), err);
    }
    // Oldest first: of the oldest stripe decoded, only its newest rows.
    uint32_t skip = 0;
    for (size_t k = 0; k < used; k++) skip += rows[k];
    skip -= nimm;
    for (size_t k = used; rc == UIH_OK && k-- > 0;) {
      const uint32_t from = std::min(skip, rows[k]);
      skip -= from;
      rc = uih_batch_copy_rows(w->window.b, w->pool[k]->b, from, rows[k], err);
    }
    if (rc != UIH_OK) return rc;
  }
  // The record's immutable part: window, generation, checksums.
  if (nimm > 0) {
    const uih_batch* wb = w->window.b;
    const int64_t* ts = static_cast<const int64_t*>(wb->columns[uih_batch_column_index(wb, g->ts->id)].values);
    rg->length = nimm;
    rg->generation = gen->record.generation;
    rg->start_ts = ts[0];
    rg->end_ts = ts[nimm - 1];
    int cols[1 + UIH_TRAITS_MAX];
    uint32_t ncols = uih_snapshot_identity_columns(nullptr, wb, cols, 1 + UIH_TRAITS_MAX);
    uint32_t cp[UIH_SNAPSHOT_CHECKS_MAX];
    uint32_t ncp = uih_snapshot_checkpoints(nimm, cp);
    uint64_t h = 0;
    for (uint32_t k = 1, r = nimm; k <= nimm; k++) {
      h = uih_snapshot_identity_next(h, wb, cols, ncols, --r);
      for (uint32_t c = 0; c < ncp; c++)
        if (cp[c] == k) rg->check[c] = static_cast<uint32_t>(h);
    }
  }
  // The sequence: the immutable part, then the newest keep_m mutable events.
  rc = Ensure(&w->sequence, g, nullptr, 0, nimm + keep_m, err);
  if (rc == UIH_OK && nimm > 0) rc = uih_batch_copy_rows(w->sequence.b, w->window.b, 0, nimm, err);
  if (rc == UIH_OK) rc = uih_batch_copy_rows(w->sequence.b, w->mut.b, m - keep_m, m, err);
  if (rc != UIH_OK) return rc;
  // The record's mutable events: stripes of at most stripe_events.
  w->blob.clear();
  for (uint32_t at = m - keep_m; at < m && rc == UIH_OK;) {
    uint32_t n = std::min(m - at, g->stripe_events);
    rc = Ensure(&w->chunk, g, nullptr, 0, n, err);
    if (rc == UIH_OK) rc = uih_batch_copy_rows(w->chunk.b, w->mut.b, at, at + n, err);
    const uint8_t* bytes = nullptr;
    size_t len = 0;
    if (rc == UIH_OK) rc = uih_stripe_encode(sn->enc, w->chunk.b, uih_schema_version(schema), &bytes, &len, err);
    if (rc != UIH_OK) break;
    size_t pos = w->blob.size();
    w->blob.resize(pos + len + 10);
    uih_snapshot_mutable_put(reinterpret_cast<uint8_t*>(w->blob.data()), w->blob.size(), &pos, bytes, len);
    w->blob.resize(pos);
    at += n;
  }
  if (rc != UIH_OK) return rc;
  rg->mutable_events = w->blob.empty() ? nullptr : reinterpret_cast<const uint8_t*>(w->blob.data());
  rg->mutable_len = w->blob.size();
  return UIH_OK;
}

int Snapshot(uih_snapshotter* sn, uint64_t user, int64_t request_ts, const uih_snapshot_spec* spec,
             const uih_batch* const** sequences, const uint8_t** record, size_t* record_len, uih_error* err) {
  if (sn == nullptr || spec == nullptr || sequences == nullptr || record == nullptr || record_len == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: NULL argument");
  if (spec->ngroups == 0 || spec->ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: %u groups, expected 1..%d", spec->ngroups,
                         UIH_SNAPSHOT_GROUPS_MAX);
  for (uint32_t i = 0; i < spec->ngroups; i++)
    for (uint32_t j = 0; j < i; j++)
      if (spec->groups[i].group == spec->groups[j].group)
        return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: group %u is asked for twice",
                             spec->groups[i].group);
  uih_store* s = sn->s;
  const uih_schema* schema = s->schema.load();
  Shard* sh;
  int rc = uih::ShardOfUser(s, user, &sh, err);
  if (rc != UIH_OK) return rc;
  // The watermark first, then the generation: a publish in between makes
  // the generation newer than the watermark, never older (see store.h).
  int64_t wm = INT64_MIN;
  int has_wm = 0;
  rc = uih_mutable_watermark(sh->mut, &wm, &has_wm, err);
  if (rc != UIH_OK) return rc;
  std::shared_ptr<Generation> gen = sh->Get(0);
  const uih::Split split = uih::SplitOf(wm, has_wm, gen.get());
  while (sn->work.size() < spec->ngroups) sn->work.push_back(std::make_unique<GroupWork>());
  uih_snapshot_record r{};
  r.user_id = user;
  r.request_ts = request_ts;
  r.schema_version = uih_schema_version(schema);
  r.store = static_cast<uint32_t>(s->id);
  r.generation = gen ? gen->record.generation : 0;
  r.ngroups = spec->ngroups;
  sn->out.assign(spec->ngroups, nullptr);
  // The record lists groups by id; the sequences come in the spec's order.
  uint32_t order[UIH_SNAPSHOT_GROUPS_MAX];
  for (uint32_t i = 0; i < spec->ngroups; i++) order[i] = i;
  std::sort(order, order + spec->ngroups,
            [&](uint32_t a, uint32_t b) { return spec->groups[a].group < spec->groups[b].group; });
  for (uint32_t k = 0; k < spec->ngroups; k++) {
    uint32_t i = order[k];
    rc = SnapshotGroup(sn, sh, gen, split, schema, user, request_ts, spec->groups[i], sn->work[i].get(),
                       &r.groups[k], err);
    if (rc != UIH_OK) return rc;
    sn->out[i] = sn->work[i]->sequence.b;
  }
  sn->record.resize(uih_snapshot_record_size(&r));
  size_t len = 0;
  rc = uih_snapshot_record_encode(&r, sn->record.data(), sn->record.size(), &len, err);
  if (rc != UIH_OK) return rc;
  *sequences = sn->out.data();
  *record = sn->record.data();
  *record_len = len;
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_snapshotter_create(uih_store* s, uih_snapshotter** out, uih_error* err) {
  return uih::CallC(err, "uih_snapshotter_create", [&] {
    if (s == nullptr || out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshotter: NULL argument");
    auto sn = std::make_unique<uih_snapshotter>();
    sn->s = s;
    int rc = uih_stripe_decoder_create(&sn->dec, err);
    // The record's mutable events are encoded on the request path: each
    // column once, in the encoding an estimate picks (no competition, no
    // LZ4/ZSTD), 4-5x faster than trying them all, for a few more bytes;
    // the record's checksum covers them, so they carry none of their own.
    uih_stripe_encoder_opts eo = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
    eo.fast = 1;
    eo.no_checksum = 1;
    if (rc == UIH_OK) rc = uih_stripe_encoder_create(&eo, &sn->enc, err);
    if (rc == UIH_OK) *out = sn.release();
    return rc;
  });
}

void uih_snapshotter_free(uih_snapshotter* sn) {
  uih::CallCVoid([&] { delete sn; });
}

int uih_snapshot(uih_snapshotter* sn, uint64_t user_id, int64_t request_ts, const uih_snapshot_spec* spec,
                 const uih_batch* const** sequences, const uint8_t** record, size_t* record_len, uih_error* err) {
  return uih::CallC(err, "uih_snapshot",
                    [&] { return Snapshot(sn, user_id, request_ts, spec, sequences, record, record_len, err); });
}

}  // extern "C"
