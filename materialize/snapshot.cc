// The C API of uih/materialize.h's inference snapshots: per feature group
// the newest events of both tiers, split at the watermark, and the record
// that lets training rebuild them (uih/snapshot.h). The immutable part is
// read through the store's window reader and checksummed with the engine's
// identity chain, as training's rebuilds do.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "error_internal.h"
#include "mem.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/stripe.h"
#include "uih_plugin/c_api.h"
#include "uih_store/view.h"
#include "uih_store/window.h"

using uih::BatchPtr;
using uih::ShardView;

namespace {

// Per spec group: what the call built, kept for the next call.
struct GroupWork {
  BatchPtr sequence;  // what the model gets (every active trait)
  BatchPtr window;    // the immutable part (+ arrival)
  uih::Gather part;   // its stripes, decoded newest first
  BatchPtr mut;       // the mutable tier's events
  uih::Gather chunks; // their chunks, decoded newest first
  BatchPtr chunk;     // mutable events being encoded, one stripe's worth
  std::string blob;   // the record's mutable stripes
};

}  // namespace

struct uih_snapshotter {
  uih_store* s = nullptr;
  uih_stripe_encoder* enc = nullptr;
  uih::WindowReader reader;
  std::vector<uih::GenerationFiles::Extent> plan;
  std::vector<std::unique_ptr<GroupWork>> work;
  std::vector<const uih_batch*> out;
  std::vector<uint16_t> ids;  // traits a window holds
  std::vector<uint8_t> record;
  ~uih_snapshotter() { uih_stripe_encoder_free(enc); }
};

namespace {

// The immutable part of group `g`: its newest `want` events at or before
// `end` in the view's generation, into w->window (every active trait and
// the arrival), through the window reader; *n how many there are.
int ReadPart(uih_snapshotter* sn, const ShardView& v, uint64_t user, const uih_group* g, int64_t end, uint32_t want,
             GroupWork* w, uint32_t* n, uih_error* err) {
  const uih::GenerationFiles* files = nullptr;
  int rc = v.gen->Files(*v.path, &files, err);
  if (rc == UIH_OK) rc = files->Plan(user, g->id, INT64_MIN, end, &sn->plan, err);
  if (rc != UIH_OK) return rc;
  sn->ids.clear();
  for (uint32_t t = 0; t < g->ntraits; t++)
    if (uih_trait_active(&g->traits[t])) sn->ids.push_back(g->traits[t].id);
  sn->ids.push_back(UIH_TRAIT_ARRIVAL);
  const uint32_t nids = static_cast<uint32_t>(sn->ids.size());
  sn->reader.Start(v.path, v.gen.get(), files, user, g, sn->plan.data(), sn->plan.size());
  w->part.Clear();
  for (bool more = true; w->part.count() < want;) {
    uih_batch** b = w->part.Next();
    rc = sn->reader.Next(want - w->part.count(), sn->ids.data(), nids, b, &more, err);
    if (rc != UIH_OK) return rc;
    if (!more) break;
    // Those after `end` (a stripe straddling it) are not the model's.
    if (!uih::InTimeOrder(*b))
      return uih_corruption(err, "store %s: generation %u: a stripe of user %" PRIu64 " group %u out of time order",
                            v.path->c_str(), v.gen->number(), user, g->id);
    uint32_t first, below;
    uih::RowsWithin(*b, INT64_MIN, end, &first, &below);
    w->part.Take(0, below);
  }
  *n = std::min(w->part.count(), want);
  rc = uih_batch_prepare(&w->window.b, g, sn->ids.data(), nids, *n, err);
  return rc == UIH_OK ? w->part.AppendNewest(want, w->window.b, err) : rc;
}

// The record's immutable part of the group: window, generation, and the
// identity chain's checks.
void RecordPart(const ShardView& v, const uih_batch* window, uint32_t n, uih_snapshot_group* rg) {
  const int64_t* ts = uih_batch_timestamps(window);
  rg->length = n;
  rg->generation = v.gen->number();
  rg->start_ts = ts[0];
  rg->end_ts = ts[n - 1];
  uih_snapshot_chain chain;
  uih_snapshot_chain_start(&chain, nullptr, window);
  for (uint32_t r = n; r-- > 0;) {
    uih_snapshot_chain_push(&chain, window, r);
    uih_snapshot_chain_mark(&chain, rg);
  }
}

// The record's mutable events: stripes of at most stripe_events, encoded
// into w->blob.
int EncodeMutable(uih_snapshotter* sn, const uih_group* g, const uih_schema* schema, uint32_t from, GroupWork* w,
                  uih_error* err) {
  const uint32_t m = w->mut.b->count;
  w->blob.clear();
  for (uint32_t at = from; at < m;) {
    const uint32_t n = std::min(m - at, g->stripe_events);
    int rc = uih_batch_prepare(&w->chunk.b, g, nullptr, 0, n, err);
    if (rc == UIH_OK) rc = uih_batch_copy_rows(w->chunk.b, w->mut.b, at, at + n, err);
    const uint8_t* bytes = nullptr;
    size_t len = 0;
    if (rc == UIH_OK) rc = uih_stripe_encode(sn->enc, w->chunk.b, uih_schema_version(schema), &bytes, &len, err);
    if (rc != UIH_OK) return rc;
    size_t pos = w->blob.size();
    w->blob.resize(pos + len + UIH_VARINT_MAX);
    uih_snapshot_mutable_put(reinterpret_cast<uint8_t*>(w->blob.data()), w->blob.size(), &pos, bytes, len);
    w->blob.resize(pos);
    at += n;
  }
  return UIH_OK;
}

// The group's newest events for the spec: fills w->sequence and the
// record's group `rg`.
int SnapshotGroup(uih_snapshotter* sn, const ShardView& v, const uih_schema* schema, uint64_t user, int64_t request_ts,
                  const uih_snapshot_spec_group& spec, GroupWork* w, uih_snapshot_group* rg, uih_error* err) {
  const uih_group* g = uih_schema_group_by_id(schema, spec.group);
  if (g == nullptr)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "snapshot: the schema (version %u) has no group with id %u",
                         uih_schema_version(schema), spec.group);
  if (spec.max_length == 0 || spec.max_length > UIH_SNAPSHOT_LENGTH_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: group %s: max_length %u, expected 1..%u", g->name,
                         spec.max_length, UIH_SNAPSHOT_LENGTH_MAX);
  *rg = uih_snapshot_group{};
  rg->group = g->id;
  // The mutable tier's events from the split up to the request (none of a
  // user erased by a generation the tier has not applied).
  const uih::Split split = v.split;
  int rc = uih_batch_prepare(&w->mut.b, g, nullptr, 0, 64, err);
  if (rc == UIH_OK && split.at <= request_ts && !v.mutable_erased)
    rc = uih::ReadMutableNewest(v.mut, user, g->id, split.at, request_ts, spec.max_length, &w->mut.b, &w->chunks,
                                err);
  if (rc != UIH_OK) return rc;
  const uint32_t m = w->mut.b->count, keep_m = std::min(m, spec.max_length), want = spec.max_length - keep_m;
  // The immutable tier's newest `want` events below the split.
  uint32_t nimm = 0;
  if (want > 0 && v.gen && split.has && split.at != INT64_MIN) {
    rc = ReadPart(sn, v, user, g, std::min(split.at - 1, request_ts), want, w, &nimm, err);
    if (rc != UIH_OK) return rc;
  }
  if (nimm > 0) RecordPart(v, w->window.b, nimm, rg);
  // The sequence: the immutable part, then the newest keep_m mutable events.
  rc = uih_batch_prepare(&w->sequence.b, g, nullptr, 0, nimm + keep_m, err);
  if (rc == UIH_OK && nimm > 0) rc = uih_batch_copy_rows(w->sequence.b, w->window.b, 0, nimm, err);
  if (rc == UIH_OK) rc = uih_batch_copy_rows(w->sequence.b, w->mut.b, m - keep_m, m, err);
  if (rc == UIH_OK) rc = EncodeMutable(sn, g, schema, m - keep_m, w, err);
  if (rc != UIH_OK) return rc;
  rg->mutable_events = w->blob.empty() ? nullptr : reinterpret_cast<const uint8_t*>(w->blob.data());
  rg->mutable_len = w->blob.size();
  return UIH_OK;
}

int CheckSpec(const uih_snapshot_spec* spec, uih_error* err) {
  if (spec->ngroups == 0 || spec->ngroups > UIH_SNAPSHOT_GROUPS_MAX)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: %u groups, expected 1..%d", spec->ngroups,
                         UIH_SNAPSHOT_GROUPS_MAX);
  for (uint32_t i = 0; i < spec->ngroups; i++)
    for (uint32_t j = 0; j < i; j++)
      if (spec->groups[i].group == spec->groups[j].group)
        return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: group %u is asked for twice",
                             spec->groups[i].group);
  return UIH_OK;
}

int Snapshot(uih_snapshotter* sn, uint64_t user, int64_t request_ts, const uih_snapshot_spec* spec,
             const uih_batch* const** sequences, const uint8_t** record, size_t* record_len, uih_error* err) {
  if (sn == nullptr || spec == nullptr || sequences == nullptr || record == nullptr || record_len == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshot: NULL argument");
  int rc = CheckSpec(spec, err);
  if (rc != UIH_OK) return rc;
  uih_store* s = sn->s;
  const uih_schema* schema = uih_store_schema(s);
  ShardView v;
  rc = uih::ViewUser(s, user, true, &v, err);
  if (rc != UIH_OK) return rc;
  while (sn->work.size() < spec->ngroups) sn->work.push_back(std::make_unique<GroupWork>());
  uih_snapshot_record r{};
  r.user_id = user;
  r.request_ts = request_ts;
  r.schema_version = uih_schema_version(schema);
  r.store = static_cast<uint32_t>(uih_store_id(s));
  r.generation = v.gen ? v.gen->number() : 0;
  r.ngroups = spec->ngroups;
  sn->out.assign(spec->ngroups, nullptr);
  // The record lists groups by id; the sequences come in the spec's order.
  uint32_t order[UIH_SNAPSHOT_GROUPS_MAX];
  for (uint32_t i = 0; i < spec->ngroups; i++) order[i] = i;
  std::sort(order, order + spec->ngroups,
            [&](uint32_t a, uint32_t b) { return spec->groups[a].group < spec->groups[b].group; });
  for (uint32_t k = 0; k < spec->ngroups; k++) {
    uint32_t i = order[k];
    rc = SnapshotGroup(sn, v, schema, user, request_ts, spec->groups[i], sn->work[i].get(), &r.groups[k], err);
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

int Create(uih_store* s, uih_snapshotter** out, uih_error* err) {
  if (s == nullptr || out == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "snapshotter_create: NULL argument");
  auto sn = std::make_unique<uih_snapshotter>();
  sn->s = s;
  // The record's mutable events are encoded on the request path: each
  // column once, in the encoding an estimate picks (no competition, no
  // LZ4/ZSTD), 4-5x faster than trying them all, for a few more bytes;
  // the record's checksum covers them, so they carry none of their own.
  uih_stripe_encoder_opts eo = UIH_STRIPE_ENCODER_OPTS_DEFAULT;
  eo.fast = 1;
  eo.no_checksum = 1;
  int rc = uih_stripe_encoder_create(&eo, &sn->enc, err);
  if (rc == UIH_OK) *out = sn.release();
  return rc;
}

}  // namespace

extern "C" {

int uih_snapshotter_create(uih_store* s, uih_snapshotter** out, uih_error* err) {
  return uih::CallC(err, "uih_snapshotter_create", [&] { return Create(s, out, err); });
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
