// follow.h: the .published hint, a serving store's follower, and the
// mutable tier catching up with a generation; and the C API of
// uih_store_refresh and uih_store_following.
#include "follow.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "store_internal.h"
#include "uih_plugin/c_api.h"

namespace uih {

// ---- the hint --------------------------------------------------------------------

int WritePublished(uih_store* s, Shard* sh, uih_error* err) {
  uint32_t current;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    current = sh->current;
  }
  return WriteFileDurably(s->dir, PublishedName(sh->index), PublishedText(sh->index, current), err);
}

HintState ReadHint(const std::string& dir, uint32_t shard, uint32_t* generation, uint64_t* bytes) {
  const std::string path = dir + "/" + PublishedName(shard);
  *generation = 0;
  if (bytes) *bytes = 0;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? HintState::kNone : HintState::kDamaged;
  char buf[96];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (bytes && n > 0) *bytes = static_cast<uint64_t>(n);
  if (n <= 0 || !ParsePublished(std::string(buf, static_cast<size_t>(n)), shard, generation)) {
    *generation = 0;
    return HintState::kDamaged;
  }
  return HintState::kFound;
}

uint32_t ReadPublished(const uih_store* s, uint32_t shard) {
  uint32_t g;
  return ReadHint(s->dir, shard, &g, nullptr) == HintState::kFound ? g : 0;
}

// ---- pins -----------------------------------------------------------------------

int PinShard(uih_store* s, uint32_t shard, ShardState* st, uih_error* err) {
  const bool serving = !s->opts.read_only && s->opts.role == UIH_STORE_ROLE_SERVE;
  for (auto& [g, gen] : st->gens) {
    if (serving && g != st->current) continue;
    int rc = s->pins.Pin(shard, g, err);
    if (rc != UIH_OK) return rc;
    gen->on_release([pins = &s->pins, shard, g = g] { pins->Unpin(shard, g); });
  }
  return UIH_OK;
}

// ---- the mutable tier catching up ---------------------------------------------------

int ApplyPublished(Shard* sh, bool retention, uih_error* err) {
  if (sh->mut == nullptr) return UIH_OK;
  const uint32_t applied = MutableApplied(sh->mut);
  std::shared_ptr<Generation> gen;
  std::vector<uint64_t> erased;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    auto it = sh->gens.find(sh->current);
    if (it == sh->gens.end()) return UIH_OK;  // no generation yet
    gen = it->second;
    if (applied >= gen->number()) return UIH_OK;
    for (auto& [user, e] : sh->erased)
      if (e.generation > applied && e.generation <= gen->number()) erased.push_back(user);
  }
  int rc = ApplyToMutable(sh->mut, erased, gen->record().through, gen->number(), retention, err);
  return rc == UIH_OK ? UIH_OK : UIH_PREFIXED(rc, err, "shard %u: ", sh->index);
}

// ---- following a publish -----------------------------------------------------------

namespace {

void KeepError(Shard* sh, int rc, const uih_error* err) {
  std::lock_guard<std::mutex> lock(sh->follow_mu);
  sh->follow_rc = rc;
  sh->follow_error = rc == UIH_OK ? "" : uih_error_message(err);
}

// The shard's database opened again and what it holds pinned, inside the
// gate: no loader retires a generation between the open and the pin.
int Reopen(uih_store* s, Shard* sh, ShardState* st, uih_error* err) {
  PinGate gate(&s->pins, false, err);
  if (gate.rc() != UIH_OK) return gate.rc();
  int rc = ReadShard(s, sh, true, st, err);
  return rc == UIH_OK ? PinShard(s, sh->index, st, err) : rc;
}

// A schema version newer than the store's, which the new generation
// brings: parsed, kept, and made the store's (its mutable tiers' too).
int TakeSchema(uih_store* s, Shard* sh, Database* im, uih_error* err) {
  uint32_t version = 0;
  std::string json;
  int rc = ReadNewestSchema(im, &version, &json, err);
  if (rc != UIH_OK) return rc;
  sh->schema_version = version;
  std::lock_guard<std::mutex> lock(s->schemas_mu);
  if (version <= uih_schema_version(s->schema)) return UIH_OK;
  SchemaVersion& v = s->schemas[version];
  if (v.schema == nullptr) {
    const std::string origin = sh->path + ": schema version " + std::to_string(version);
    rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &v.schema, err);
    if (rc != UIH_OK) {
      s->schemas.erase(version);
      return rc;
    }
    v.json = json;
  }
  for (auto& shard : s->shards)
    if (shard && shard->mut) SetMutableSchema(shard->mut, v.schema);
  s->schema = v.schema;
  return UIH_OK;
}

// The retention filter takes each watermark queued at a switch once no
// reader holds the generation served before it (a snapshot that began on
// that one reads the mutable tier above its through, which compactions
// must keep until it is done) and the mutable tier has applied it.
void SettleRetention(Shard* sh) {
  auto& dbs = sh->retired;  // and the databases no reader holds any more close here
  dbs.erase(std::remove_if(dbs.begin(), dbs.end(), [](const std::shared_ptr<Database>& d) { return d.use_count() == 1; }),
            dbs.end());
  int64_t wm;
  int has;
  MutableWatermark(sh->mut, &wm, &has);
  auto& q = sh->retention;
  while (!q.empty() && q.front().first.expired() && has && q.front().second <= wm) {
    SetRetention(sh->mut, q.front().second);
    q.erase(q.begin());
  }
}

// The mutable tier brought up to the generation served (ApplyPublished,
// its retention filter settling as it may), the outcome kept.
int CatchUp(Shard* sh, uih_error* err) {
  int rc = ApplyPublished(sh, false, err);
  SettleRetention(sh);
  KeepError(sh, rc, err);
  return rc;
}

}  // namespace

int Refresh(uih_store* s, Shard* sh, bool force, uih_error* err) {
  std::lock_guard<std::mutex> one(sh->refresh_mu);
  uint32_t served;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    served = sh->current;
  }
  const uint32_t hint = ReadPublished(s, sh->index);
  if (!force && (hint == 0 || hint == served || hint == sh->hint_seen)) {  // nothing new
    if (MutableApplied(sh->mut) < served) return CatchUp(sh, err);  // a failed catch-up, again
    SettleRetention(sh);
    KeepError(sh, UIH_OK, err);
    return UIH_OK;
  }
  ShardState st;
  int rc = Reopen(s, sh, &st, err);
  if (rc == UIH_OK && st.current != served) rc = TakeSchema(s, sh, st.im.get(), err);
  if (rc != UIH_OK) {
    rc = UIH_PREFIXED(rc, err, "shard %u: following generation %u (still serving %u): ", sh->index, hint, served);
    KeepError(sh, rc, err);
    return rc;
  }
  if (hint <= st.current) sh->hint_seen = hint;  // else a view of the directory behind the hint: again
  if (st.current == served) return CatchUp(sh, err);
  std::weak_ptr<Generation> old;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    auto it = sh->gens.find(sh->current);
    if (it != sh->gens.end()) old = it->second;
    std::swap(sh->im, st.im);
    std::swap(sh->gens, st.gens);
    std::swap(sh->erased, st.erased);
    sh->current = st.current;
    sh->any_erased.store(!sh->erased.empty(), std::memory_order_release);
    auto now = sh->gens.find(sh->current);
    if (now != sh->gens.end()) sh->retention.emplace_back(old, now->second->record().through);
  }
  sh->retired.push_back(st.im);  // closed by this thread once its generations' readers are done
  st = ShardState{};             // the old generations go with their last reader
  return CatchUp(sh, err);
}

int ApplySwitch(Shard* sh, std::weak_ptr<Generation> old, uih_error* err) {
  std::lock_guard<std::mutex> one(sh->refresh_mu);
  if (auto now = sh->Get(0)) sh->retention.emplace_back(std::move(old), now->record().through);
  return CatchUp(sh, err);
}

// ---- the follower's thread -----------------------------------------------------------

Follower::Follower(uih_store* s, uint32_t interval_ms) : s_(s), interval_ms_(interval_ms) {
  thread_ = std::thread([this] { Run(); });
}

Follower::~Follower() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Follower::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; })) {
    lock.unlock();
    for (auto& sh : s_->shards) {
      if (!sh) continue;
      uih_error err = {};
      int rc = CallC(&err, "uih_store_refresh", [&] { return Refresh(s_, sh.get(), false, &err); });
      if (rc != UIH_OK) KeepError(sh.get(), rc, &err);  // an exception's, too
    }
    lock.lock();
  }
}

}  // namespace uih

// ---- the C API: every entry point behind the exception firewall ------------

namespace {

int RefreshAll(uih_store* s, uih_error* err) {
  if (s == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_refresh: NULL store");
  if (s->opts.read_only || s->opts.role != UIH_STORE_ROLE_SERVE) return UIH_OK;
  for (auto& sh : s->shards) {
    if (!sh) continue;
    int rc = uih::Refresh(s, sh.get(), true, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

int Following(uih_store* s, uint32_t shard, uint32_t* generation, uih_error* err) {
  uih::Shard* sh;
  int rc = uih::ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (generation) {
    std::lock_guard<std::mutex> lock(sh->mu);
    *generation = sh->current;
  }
  std::lock_guard<std::mutex> lock(sh->follow_mu);
  if (sh->follow_rc == UIH_OK) return UIH_OK;
  return uih_error_set(err, sh->follow_rc, "%s", sh->follow_error.c_str());
}

}  // namespace

extern "C" {

int uih_store_refresh(uih_store* s, uih_error* err) {
  return uih::CallC(err, "uih_store_refresh", [&] { return RefreshAll(s, err); });
}

int uih_store_following(uih_store* s, uint32_t shard, uint32_t* generation, uih_error* err) {
  return uih::CallC(err, "uih_store_following", [&] { return Following(s, shard, generation, err); });
}

}  // extern "C"
