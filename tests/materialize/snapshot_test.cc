// Inference snapshots (uih_snapshot, uih/materialize.h), model-based: a store
// loaded with a day and a mutable tier holding the next (with late events
// below the watermark, which a snapshot must not see); for random users and
// request times, every group's sequence is the newest max_length events of
// the model's immutable part followed by its mutable part, and the logged
// record names exactly that: the window, the generation, identity checksums
// computed here from the model, and the mutable events themselves.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <atomic>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/alloc_count.h"
#include "materialize/snapshot_model.h"
#include "store/store_fixture.h"
#include "uih/io.h"
#include "uih/key.h"
#include "uih/materialize.h"
#include "uih/snapshot.h"
#include "uih/store.h"
#include "uih/stripe.h"

namespace {

using namespace uih_test::model;
using uih_test::kBase;
using uih_test::kDay;
using uih_test::StoreTest;
using uih_test::WriteFile;

TEST_F(StoreTest, SnapshotsAreTheNewestEventsOfBothTiersAndTheirRecordNamesThem) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  auto& rng = w.rng;
  auto& imm = w.imm;
  auto& mut = w.mut;
  const uint64_t kUsers = World::kUsers;
  const int64_t through = w.through;
  const uih_schema* schema = uih_store_schema(s);
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  int checked = 0, both = 0, mutable_only = 0;
  for (int i = 0; i < 600; i++) {
    uint64_t u = rng() % kUsers;
    int64_t request = through + static_cast<int64_t>(rng() % (kDay + kDay / 4)) - kDay / 8;
    uih_snapshot_spec spec{};
    spec.ngroups = rng() % 2 ? 2 : 1;
    // Group b first sometimes: sequences come in the spec's order, the record by id.
    spec.groups[0] = {static_cast<uint16_t>(rng() % 2 ? 1 : 2), 1 + static_cast<uint32_t>(rng() % 40)};
    spec.groups[1] = {static_cast<uint16_t>(spec.groups[0].group == 1 ? 2 : 1), 1 + static_cast<uint32_t>(rng() % 9)};
    const uih_batch* const* seqs = nullptr;
    const uint8_t* rec = nullptr;
    size_t rec_len = 0;
    ASSERT_EQ(uih_snapshot(sn, u, request, &spec, &seqs, &rec, &rec_len, &err), UIH_OK) << uih_error_message(&err);
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(rec, rec_len, &r, &err), UIH_OK) << uih_error_message(&err);
    EXPECT_EQ(r.user_id, u);
    EXPECT_EQ(r.request_ts, request);
    ASSERT_EQ(r.ngroups, spec.ngroups);
    for (uint32_t k = 0; k < spec.ngroups; k++) {
      const uint16_t g = spec.groups[k].group;
      const uint32_t max = spec.groups[k].max_length;
      SCOPED_TRACE("user " + std::to_string(u) + " group " + std::to_string(g) + " at " + std::to_string(request));
      // The model: immutable events before the watermark and the request,
      // mutable ones from the watermark to the request; the newest max.
      std::vector<Ev> im, mu;
      for (const Ev& e : imm[{u, g}])
        if (e.ts <= request && e.ts < through) im.push_back(e);
      for (const Ev& e : mut[{u, g}])
        if (e.ts <= request) mu.push_back(e);
      if (mu.size() > max) mu.erase(mu.begin(), mu.end() - max);
      size_t room = max - mu.size();
      if (im.size() > room) im.erase(im.begin(), im.end() - static_cast<std::ptrdiff_t>(room));
      std::vector<Ev> want = im;
      want.insert(want.end(), mu.begin(), mu.end());
      ASSERT_EQ(Events(seqs[k]), want);
      // The record's group (listed by id).
      const uih_snapshot_group* rg = nullptr;
      for (uint32_t j = 0; j < r.ngroups; j++)
        if (r.groups[j].group == g) rg = &r.groups[j];
      ASSERT_NE(rg, nullptr);
      ASSERT_EQ(rg->length, im.size());
      if (!im.empty()) {
        EXPECT_EQ(rg->generation, 1u);
        EXPECT_EQ(rg->start_ts, im.front().ts);
        EXPECT_EQ(rg->end_ts, im.back().ts);
        std::vector<uint32_t> checks = Checks(schema, g, im);
        EXPECT_EQ(std::vector<uint32_t>(rg->check, rg->check + checks.size()), checks);
        both += !mu.empty();
      } else {
        mutable_only += !mu.empty();
      }
      // The mutable events, from the record alone.
      std::vector<Ev> logged;
      size_t at = 0, len;
      const uint8_t* stripe;
      uih_stripe_decoder* dec = nullptr;
      ASSERT_EQ(uih_stripe_decoder_create(&dec, &err), UIH_OK);
      while (uih_snapshot_mutable_next(rg, &at, &stripe, &len) == 1) {
        uih_batch* b = nullptr;
        ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(schema, g), UIH_STRIPE_EVENTS_MAX, nullptr, 0, &b, &err), UIH_OK);
        ASSERT_EQ(uih_stripe_decode(dec, stripe, len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, b, &err), UIH_OK);
        std::vector<Ev> part = Events(b);
        logged.insert(logged.end(), part.begin(), part.end());
        uih_batch_free(b);
      }
      uih_stripe_decoder_free(dec);
      EXPECT_EQ(logged, mu);
      checked++;
    }
  }
  EXPECT_GT(checked, 700);
  EXPECT_GT(both, 50) << "sequences from both tiers";
  EXPECT_GT(mutable_only, 5) << "sequences from the mutable tier alone";
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

// Training rebuilds what inference saw: records logged from snapshots on
// day 1, after day 1 (its late events included) was loaded as generation 2,
// rebuild bit for bit the sequences uih_snapshot returned, whole or
// projected to fewer events and traits, for records of the same user served
// together; a user erased since is a mismatch under every policy.
TEST_F(StoreTest, MaterializedRecordsEqualWhatInferenceSaw) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  std::vector<std::vector<Ev>> seen_a, seen_b;  // per record, what the model got
  std::vector<uint64_t> users;
  for (int i = 0; i < 400; i++) {
    uint64_t u = w.rng() % 12;  // few users: many records each
    int64_t request = w.through + static_cast<int64_t>(w.rng() % kDay);
    ASSERT_NO_FATAL_FAILURE(
        SnapshotInto(sn, u, request, uih_snapshot_spec{2, {{1, 24}, {2, 6}}}, &records, &seen_a, &seen_b));
    users.push_back(u);
  }
  uih_snapshotter_free(sn);
  // Late events inside logged windows: they must stay out of the rebuilt ones.
  size_t windows_with_late = 0;
  for (const std::string& rec : records) {
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(reinterpret_cast<const uint8_t*>(rec.data()), rec.size(), &r, &err), UIH_OK);
    for (uint32_t k = 0; k < r.ngroups; k++)
      for (const Ev& e : w.late[{r.user_id, r.groups[k].group}])
        windows_with_late += r.groups[k].length && e.ts >= r.groups[k].start_ts && e.ts <= r.groups[k].end_ts;
  }
  EXPECT_GT(windows_with_late, 10u);
  // Day 1 loaded: the mutable events move into generation 2 with the late ones.
  std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, w.day1_csv);
  ASSERT_EQ(Load(s, {day1}, w.through + kDay, 0, &err), UIH_OK) << uih_error_message(&err);

  RecordPtrs logged(records);
  std::vector<const uint8_t*>& ptrs = logged.ptrs;
  std::vector<size_t>& lens = logged.lens;
  // The whole sequences, every trait.
  uih_projection whole{};
  whole.ngroups = 2;
  whole.groups[0].group = 1;
  whole.groups[0].max_length = 24;
  whole.groups[1].group = 2;
  whole.groups[1].max_length = 6;
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &whole, &m, &st, &err), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(st.mismatches, 0u);
  EXPECT_LE(st.users, 12u) << "records of a user served together";
  ASSERT_EQ(uih_materialized_records(m), records.size());
  EXPECT_EQ(Sequences(m, 0), seen_a);
  EXPECT_EQ(Sequences(m, 1), seen_b);
  uih_materialized_free(m);

  // Projected: the newest 5 of group a, ts and item only.
  uih_projection shortp{};
  shortp.ngroups = 1;
  shortp.groups[0].group = 1;
  shortp.groups[0].max_length = 5;
  shortp.groups[0].ntraits = 2;
  shortp.groups[0].traits[0] = 2;
  shortp.groups[0].traits[1] = 1;
  uih_materialize_stats st2{};
  ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &shortp, &m, &st2, &err), UIH_OK)
      << uih_error_message(&err);
  const uih_mat_group* g = uih_materialized_group(m, 0);
  ASSERT_EQ(g->ncolumns, 2u);
  EXPECT_EQ(g->columns[0].trait, 2) << "the projection's trait order";
  std::vector<std::vector<Ev>> got = Sequences(m, 0);
  for (size_t i = 0; i < records.size(); i++) {
    std::vector<Ev> want(seen_a[i].end() - std::min<std::ptrdiff_t>(5, static_cast<std::ptrdiff_t>(seen_a[i].size())),
                         seen_a[i].end());
    for (Ev& e : want) e.liked = -1;  // not projected
    ASSERT_EQ(got[i], want) << "record " << i;
  }
  EXPECT_LT(st2.stripes_read, st.stripes_read) << "a short projection decodes fewer stripes";
  uih_materialized_free(m);

  // A user erased since: every record of theirs is a mismatch and comes
  // back empty, even those the events they carry would serve alone (the
  // short projection's newest 5, or no stored part at all); the others
  // still rebuild. The user with the most such records goes.
  std::map<uint64_t, size_t> by_log_alone;
  for (size_t i = 0; i < records.size(); i++) {
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(ptrs[i], lens[i], &r, &err), UIH_OK);
    by_log_alone[users[i]] += seen_a[i].size() - r.groups[0].length >= 5;
  }
  const uint64_t gone = std::max_element(by_log_alone.begin(), by_log_alone.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
  ASSERT_GT(by_log_alone[gone], 0u);
  const size_t gone_records = static_cast<size_t>(std::count(users.begin(), users.end(), gone));
  std::string del = dir_ / "forget.csv";
  WriteFile(del, "user_id\n" + std::to_string(gone) + "\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.deletes = del.c_str();
  o.through = w.through + kDay;
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  for (uih_projection* p : {&whole, &shortp})
    for (uih_mismatch_policy policy : {UIH_MISMATCH_FLAG, UIH_MISMATCH_SKIP}) {
      p->on_mismatch = policy;
      ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), p, &m, &st, &err), UIH_OK)
          << uih_error_message(&err);
      EXPECT_EQ(st.mismatches, gone_records);
      const uint8_t* flags = uih_materialized_flags(m);
      std::vector<std::vector<Ev>> a = Sequences(m, 0);
      for (size_t i = 0; i < records.size(); i++) {
        if (users[i] != gone) {
          EXPECT_EQ(flags[i], 0) << i;
          if (p == &whole) {
            EXPECT_EQ(a[i], seen_a[i]) << i;
          }
          continue;
        }
        EXPECT_EQ(flags[i], UIH_RECORD_ERASED | UIH_RECORD_MISMATCH) << i;
        for (uint32_t gi = 0; gi < p->ngroups; gi++) EXPECT_EQ(uih_materialized_group(m, gi)->lengths[i], 0u) << i;
      }
      uih_materialized_free(m);
    }
  shortp.on_mismatch = UIH_MISMATCH_FAIL;
  EXPECT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &shortp, &m, &st, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("user " + std::to_string(gone)), std::string::npos)
      << uih_error_message(&err);
  EXPECT_NE(std::string(uih_error_message(&err)).find("was erased by generation 3"), std::string::npos)
      << uih_error_message(&err);
  // A store opened afresh, or read-only, knows whom its loads erased.
  uih_store_close(s);
  for (int read_only : {0, 1}) {
    uih_store_opts so = UIH_STORE_OPTS_DEFAULT;
    so.read_only = read_only;
    ASSERT_EQ(uih_store_open((dir_ / "store").c_str(), &so, &s, &err), UIH_OK) << uih_error_message(&err);
    shortp.on_mismatch = UIH_MISMATCH_FLAG;
    ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &shortp, &m, &st, &err), UIH_OK);
    EXPECT_EQ(st.mismatches, gone_records) << "read_only " << read_only;
    uih_materialized_free(m);
    uih_store_close(s);
  }
  ASSERT_EQ(uih_store_open((dir_ / "store").c_str(), nullptr, &s, &err), UIH_OK) << uih_error_message(&err);
  whole.on_mismatch = UIH_MISMATCH_FAIL;
  EXPECT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &whole, &m, &st, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("user " + std::to_string(gone)), std::string::npos)
      << uih_error_message(&err);
  // ... naming the first such record in the caller's order, whatever order
  // the users are served in: here the last of them comes first.
  {
    size_t last = 0, first = SIZE_MAX;
    for (size_t i = 0; i < records.size(); i++) {
      uih_snapshot_record r;
      ASSERT_EQ(uih_snapshot_record_decode(ptrs[i], lens[i], &r, &err), UIH_OK);
      bool any = false;
      for (uint32_t k = 0; k < r.ngroups; k++) any |= r.groups[k].length > 0;
      if (users[i] == gone && any) last = i, first = std::min(first, i);
    }
    std::vector<const uint8_t*> moved = ptrs;
    std::vector<size_t> mlens = lens;
    std::swap(moved[0], moved[last]);
    std::swap(mlens[0], mlens[last]);
    EXPECT_EQ(uih_materialize(s, moved.data(), mlens.data(), moved.size(), &whole, &m, &st, &err), UIH_ERR_CORRUPTION);
    EXPECT_NE(std::string(uih_error_message(&err)).find("record 0 (user " + std::to_string(gone)), std::string::npos)
        << uih_error_message(&err) << " (first " << first << ", last " << last << ")";
  }
  // A damaged record: unreadable under flag, an error under fail.
  std::string bad = records[1];
  bad[bad.size() / 2] ^= 0x40;
  ptrs[1] = reinterpret_cast<const uint8_t*>(bad.data());
  EXPECT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &whole, &m, &st, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("record 1: snapshot record"), std::string::npos)
      << uih_error_message(&err);
  whole.on_mismatch = UIH_MISMATCH_FLAG;
  ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &whole, &m, &st, &err), UIH_OK);
  EXPECT_EQ(uih_materialized_flags(m)[1], UIH_RECORD_UNREADABLE);
  EXPECT_EQ(uih_materialized_group(m, 0)->lengths[1], 0u);
  EXPECT_EQ(st.unreadable, 1u);
  uih_materialized_free(m);
  uih_store_close(s);
}

// A user erased and back: the records logged before the erasure stay
// erased, even one served after the erasing load's through but before it
// published, with nothing stored (a new user's first events); those logged
// after it rebuild, whether all they carry came from the mutable tier or a
// later generation holds their history. Records name their generation.
TEST_F(StoreTest, AUserErasedAndBackIsRebuiltFromTheirNewEvents) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  const uint64_t user = 5, other = 6, fresh = 1000;
  const uih_snapshot_spec spec{1, {{1, 24}}};
  const int64_t erased_through = w.through + kDay;
  auto append = [&](uint64_t u, int64_t ts) {
    uih_batch* b = nullptr;
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), 1), 1, nullptr, 0, &b, &err), UIH_OK);
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(ts));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, 77);
    ASSERT_EQ(uih_mutable_append(uih_test::MutableOf(s, uih_shard_of(u, 2)), u, b, 0, &err), UIH_OK);
    uih_batch_free(b);
  };
  ASSERT_NO_FATAL_FAILURE(append(fresh, erased_through + 1));
  std::vector<std::string> records = {RecordOf(sn, user, w.through + kDay - 1, spec),
                                      RecordOf(sn, other, w.through + kDay - 1, spec),
                                      RecordOf(sn, fresh, erased_through + 5, spec)};
  std::string del = dir_ / "forget.csv";
  WriteFile(del, "user_id\n" + std::to_string(user) + "\n" + std::to_string(fresh) + "\n");
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.deletes = del.c_str();
  o.through = erased_through;
  ASSERT_EQ(uih_load(s, nullptr, 0, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  // Back: a new event in the mutable tier, served from there alone.
  ASSERT_NO_FATAL_FAILURE(append(user, erased_through + 10));
  records.push_back(RecordOf(sn, user, erased_through + 20, spec));
  // Loaded: the next record's event comes from the generation after the erasure.
  std::string back = dir_ / "back.csv";
  WriteFile(back, "user_id,group,ts,item,liked\n" + std::to_string(user) + ",a," + std::to_string(erased_through + 10) +
                      ",77,\n");
  uih_load_opts lo = UIH_LOAD_OPTS_DEFAULT;
  lo.through = erased_through + kDay;
  const char* in[] = {back.c_str()};
  ASSERT_EQ(uih_load(s, in, 1, &lo, nullptr, &err), UIH_OK) << uih_error_message(&err);
  records.push_back(RecordOf(sn, user, erased_through + kDay + 5, spec));
  uih_snapshotter_free(sn);
  for (size_t i = 2; i < 5; i++) {
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(reinterpret_cast<const uint8_t*>(records[i].data()), records[i].size(), &r,
                                         &err),
              UIH_OK);
    EXPECT_EQ(r.groups[0].length, i == 4 ? 1u : 0u) << "record " << i << ": from the mutable tier, then stored";
    EXPECT_EQ(r.generation, i == 2 ? 1u : i == 3 ? 2u : 3u) << "record " << i;
  }
  RecordPtrs logged(records);
  uih_projection p{};
  p.ngroups = 1;
  p.groups[0] = {1, 24, 0, {}};
  p.on_mismatch = UIH_MISMATCH_FLAG;
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(s, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err), UIH_OK)
      << uih_error_message(&err);
  const uint8_t* flags = uih_materialized_flags(m);
  EXPECT_EQ(flags[0], UIH_RECORD_ERASED | UIH_RECORD_MISMATCH);
  EXPECT_EQ(flags[1], 0);
  EXPECT_EQ(flags[2], UIH_RECORD_ERASED | UIH_RECORD_MISMATCH) << "served past the through, before the publish";
  EXPECT_EQ(flags[3], 0);
  EXPECT_EQ(flags[4], 0);
  const std::vector<std::vector<Ev>> got = Sequences(m, 0);
  const std::vector<Ev> new_event = {{erased_through + 10, 77, -1}};
  EXPECT_TRUE(got[2].empty());
  EXPECT_EQ(got[3], new_event);
  EXPECT_EQ(got[4], new_event);
  EXPECT_EQ(st.mismatches, 2u);
  uih_materialized_free(m);
  uih_store_close(s);
}

// After warm-up, a snapshot allocates nothing of its own: the snapshotter
// keeps its buffers. What RocksDB allocates reading the mutable tier (merge
// operands, the watermark's value) is measured alone and subtracted.
TEST_F(StoreTest, SnapshotsAllocateNothingOfTheirOwnAfterWarmUp) {
  if (uih_test_allocations() < 0) GTEST_SKIP() << "this build cannot count allocations";
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  uih_snapshot_spec spec{2, {{1, 24}, {2, 6}}};
  const int64_t request = w.through + kDay / 2;
  auto snapshots = [&] {
    for (uint64_t u = 0; u < World::kUsers; u++) {
      const uih_batch* const* seqs;
      const uint8_t* rec;
      size_t len;
      ASSERT_EQ(uih_snapshot(sn, u, request, &spec, &seqs, &rec, &len, &err), UIH_OK);
    }
  };
  uih_batch* b[2] = {nullptr, nullptr};
  for (int g = 0; g < 2; g++)
    ASSERT_EQ(uih_batch_create(uih_schema_group_by_id(uih_store_schema(s), static_cast<uint16_t>(g + 1)), 4096, nullptr,
                               0, &b[g], &err),
              UIH_OK);
  auto rocksdb_part = [&] {  // the mutable tier's reads a snapshot makes
    for (uint64_t u = 0; u < World::kUsers; u++) {
      uih_mutable* m = uih_test::MutableOf(s, uih_shard_of(u, 2));
      int64_t wm;
      int has;
      ASSERT_EQ(uih_mutable_watermark(m, &wm, &has, &err), UIH_OK);
      for (int g = 0; g < 2; g++)
        ASSERT_EQ(uih_mutable_read(m, u, static_cast<uint16_t>(g + 1), wm, request, &b[g], &err), UIH_OK);
    }
  };
  for (int i = 0; i < 2; i++) {
    snapshots();
    rocksdb_part();
  }
  // Counts are the process's: a RocksDB background thread may allocate in
  // between, so the least of three tries is what a snapshot adds.
  int64_t ours = INT64_MAX, all = 0, theirs = 0;
  for (int i = 0; i < 3; i++) {
    int64_t t0 = uih_test_allocations();
    rocksdb_part();
    int64_t t1 = uih_test_allocations();
    snapshots();
    int64_t t2 = uih_test_allocations();
    if (t2 - t1 - (t1 - t0) < ours) ours = t2 - t1 - (t1 - t0), all = t2 - t1, theirs = t1 - t0;
  }
  EXPECT_LE(ours, static_cast<int64_t>(World::kUsers) / 4)
      << all << " allocations in " << World::kUsers << " snapshots, " << theirs << " of them RocksDB's reads";
  for (uih_batch* x : b) uih_batch_free(x);
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

// Bad specs are refused with what was wrong; the snapshotter stays usable.
TEST_F(StoreTest, SnapshotSpecsAreChecked) {
  uih_store* s = Init("store", 1);
  uih_snapshotter* sn = nullptr;
  uih_error err{};
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  struct Case {
    uih_snapshot_spec spec;
    const char* message;
  } cases[] = {
      {{0, {}}, "0 groups"},
      {{1, {{9, 5}}}, "no group with id 9"},
      {{1, {{1, 0}}}, "max_length 0"},
      {{1, {{1, UIH_SNAPSHOT_LENGTH_MAX + 1}}}, "max_length 1048577"},
      {{2, {{1, 5}, {1, 6}}}, "asked for twice"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(uih_snapshot(sn, 1, kBase, &c.spec, &seqs, &rec, &len, &err), UIH_OK) << c.message;
    EXPECT_NE(std::string(uih_error_message(&err)).find(c.message), std::string::npos) << uih_error_message(&err);
  }
  uih_snapshot_spec ok{1, {{2, 5}}};
  ASSERT_EQ(uih_snapshot(sn, 1, kBase, &ok, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(seqs[0]->count, 0u) << "an empty store: no events, a record all the same";
  uih_snapshot_record r;
  ASSERT_EQ(uih_snapshot_record_decode(rec, len, &r, &err), UIH_OK);
  EXPECT_EQ(r.groups[0].length, 0u);
  EXPECT_EQ(r.groups[0].mutable_len, 0u);
  uih_snapshotter_free(sn);
  uih_store_close(s);
}

// Sequences longer than a stripe holds, across both tiers: 104,000
// events loaded and 3,000 appended (stripes of 3). A snapshot of 100,000
// decodes only the stripes it needs (no more than its immutable part plus
// a stripe), one of UIH_SNAPSHOT_LENGTH_MAX gets the whole history, and
// each record rebuilds to what its snapshot returned, whole and projected
// to fewer events; one event more than the maximum is refused.
TEST_F(StoreTest, SnapshotsOfUltraLongSequencesSpanBothTiersAndRebuild) {
  uih_store* s = Init("store", 1);
  const uint32_t n = 104000, m = 3000, want = 100000;
  std::string text = "user_id,group,ts,item,liked\n";
  for (uint32_t i = 0; i < n; i++)
    text += "5,b," + std::to_string(kBase + i) + "," + std::to_string(i * 7) + ",\n";
  std::string day = dir_ / "long.csv";
  WriteFile(day, text);
  uih_error err{};
  ASSERT_EQ(Load(s, {day}, kBase + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  const uih_group* g = uih_schema_group_by_id(uih_store_schema(s), 2);
  uih_batch* b = nullptr;
  ASSERT_EQ(uih_batch_create(g, m, nullptr, 0, &b, &err), UIH_OK);
  for (uint32_t i = 0; i < m; i++) {
    uint32_t row;
    ASSERT_EQ(uih_batch_append(b, &row, &err), UIH_OK);
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 1)], row, static_cast<uint64_t>(kBase + kDay + i));
    uih_column_set_bits(&b->columns[uih_batch_column_index(b, 2)], row, 1000000 + i);
  }
  ASSERT_EQ(uih_mutable_append(uih_test::MutableOf(s, 0), 5, b, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_batch_free(b);
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  const uih_batch* const* seqs;
  const uint8_t* rec;
  size_t len;
  const int64_t request = kBase + kDay + m + 5;
  uih_snapshot_spec too_long{1, {{2, UIH_SNAPSHOT_LENGTH_MAX + 1}}};
  EXPECT_EQ(uih_snapshot(sn, 5, request, &too_long, &seqs, &rec, &len, &err), UIH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(uih_error_message(&err)).find("max_length 1048577, expected 1..1048576"), std::string::npos)
      << uih_error_message(&err);
  std::vector<std::string> records;
  std::vector<std::vector<Ev>> seen;
  for (uint32_t length : {want, UIH_SNAPSHOT_LENGTH_MAX}) {
    uih_snapshot_spec spec{1, {{2, length}}};
    ASSERT_EQ(uih_snapshot(sn, 5, request, &spec, &seqs, &rec, &len, &err), UIH_OK) << uih_error_message(&err);
    seen.push_back(Events(seqs[0]));
    records.emplace_back(reinterpret_cast<const char*>(rec), len);
  }
  uih_snapshotter_free(sn);
  ASSERT_EQ(seen[0].size(), static_cast<size_t>(want));
  EXPECT_EQ(seen[0].front().ts, kBase + (n + m - want));
  EXPECT_EQ(seen[0].back().ts, kBase + kDay + m - 1);
  ASSERT_EQ(seen[1].size(), static_cast<size_t>(n + m)) << "the whole history";
  EXPECT_TRUE(std::equal(seen[0].begin(), seen[0].end(), seen[1].end() - want));
  for (size_t k = 0; k < records.size(); k++) {
    for (uint32_t proj_len : {static_cast<uint32_t>(seen[k].size()), 70000u, 2000u}) {
      SCOPED_TRACE("record " + std::to_string(k) + ", projected to " + std::to_string(proj_len));
      const uint8_t* p = reinterpret_cast<const uint8_t*>(records[k].data());
      size_t l = records[k].size();
      uih_projection proj{};
      proj.ngroups = 1;
      proj.groups[0] = {2, proj_len, 0, {}};
      uih_materialized* mz = nullptr;
      uih_materialize_stats st{};
      ASSERT_EQ(uih_materialize(s, &p, &l, 1, &proj, &mz, &st, &err), UIH_OK) << uih_error_message(&err);
      EXPECT_EQ(Sequences(mz, 0)[0], std::vector<Ev>(seen[k].end() - proj_len, seen[k].end()));
      if (k == 0 && proj_len == want) {
        EXPECT_LE(st.stripes_read, (want - m) / 3 + 2u);
      }
      uih_materialized_free(mz);
    }
  }
  uih_store_close(s);
}

// A record whose mutable events are well framed but do not decode (sealed
// by a writer with a bug): a mismatch of that record alone — flagged and
// empty under skip and flag, the batch's error under fail.
TEST_F(StoreTest, UndecodableMutableEventsAreTheRecordsMismatch) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  for (uint64_t u = 0; u < 4; u++) records.push_back(RecordOf(sn, u, w.through + kDay - 1, {1, {{1, 24}}}));
  uih_snapshotter_free(sn);
  uih_snapshot_record r;
  ASSERT_EQ(uih_snapshot_record_decode(reinterpret_cast<const uint8_t*>(records[2].data()), records[2].size(), &r, &err),
            UIH_OK);
  const uint8_t junk[] = {5, 1, 2, 3, 4, 5};  // one "stripe" of 5 bytes
  r.groups[0].mutable_events = junk;
  r.groups[0].mutable_len = sizeof junk;
  std::string bad(uih_snapshot_record_size(&r), '\0');
  size_t blen;
  ASSERT_EQ(uih_snapshot_record_encode(&r, reinterpret_cast<uint8_t*>(bad.data()), bad.size(), &blen, &err), UIH_OK);
  bad.resize(blen);
  records[2] = bad;
  RecordPtrs logged(records);
  std::vector<const uint8_t*>& ptrs = logged.ptrs;
  std::vector<size_t>& lens = logged.lens;
  uih_projection proj{};
  proj.ngroups = 1;
  proj.groups[0] = {1, 24, 0, {}};
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  for (uih_mismatch_policy policy : {UIH_MISMATCH_FLAG, UIH_MISMATCH_SKIP}) {
    proj.on_mismatch = policy;
    ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &proj, &m, &st, &err), UIH_OK)
        << uih_error_message(&err);
    EXPECT_EQ(st.mismatches, 1u);
    for (size_t i = 0; i < records.size(); i++)
      EXPECT_EQ(uih_materialized_flags(m)[i], i == 2 ? UIH_RECORD_MISMATCH : 0) << i;
    EXPECT_EQ(uih_materialized_group(m, 0)->lengths[2], 0u);
    uih_materialized_free(m);
  }
  proj.on_mismatch = UIH_MISMATCH_FAIL;
  EXPECT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &proj, &m, &st, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("record 2 (user 2"), std::string::npos) << uih_error_message(&err);
  EXPECT_NE(std::string(uih_error_message(&err)).find("mutable events do not decode"), std::string::npos);
  uih_store_close(s);
}

// A schema change that drops an id trait: the loader rewrites the stripes
// without it, so records logged before identify their events by a value
// the store no longer has. They are named unverifiable, never rebuilt
// silently; records of groups the change left alone still verify.
TEST_F(StoreTest, DroppingAnIdTraitMakesOlderRecordsOfItsGroupUnverifiable) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  std::vector<bool> has_b;
  for (uint64_t u = 0; u < World::kUsers; u++) {
    records.push_back(RecordOf(sn, u, w.through + kDay - 1, {2, {{1, 24}, {2, 6}}}));
    uih_snapshot_record r;
    ASSERT_EQ(uih_snapshot_record_decode(reinterpret_cast<const uint8_t*>(records.back().data()), records.back().size(),
                                         &r, &err),
              UIH_OK);
    has_b.push_back(r.groups[1].length > 0);
  }
  uih_snapshotter_free(sn);
  static const char kDropItemOfB[] = R"({"name": "t", "version": 2, "groups": [
    {"name": "a", "id": 1, "stripe_events": 4, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"},
      {"name": "item", "id": 2, "type": "id"},
      {"name": "liked", "id": 3, "type": "flag"}]},
    {"name": "b", "id": 2, "stripe_events": 3, "traits": [
      {"name": "ts", "id": 1, "type": "timestamp"},
      {"name": "item", "id": 2, "type": "id", "dropped_in": 2}]}]})";
  // Day 1 as version 2 has it: no item in group b.
  std::string text, line;
  std::istringstream lines(w.day1_csv);
  while (std::getline(lines, line)) {
    size_t c = line.find(',');
    if (line.compare(c, 3, ",b,") == 0) line = line.substr(0, line.find(',', c + 3)) + ",,";
    text += line + "\n";
  }
  std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, text);
  uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
  o.through = w.through + kDay;
  o.schema_json = kDropItemOfB;
  o.schema_len = strlen(kDropItemOfB);
  const char* in[] = {day1.c_str()};
  ASSERT_EQ(uih_load(s, in, 1, &o, nullptr, &err), UIH_OK) << uih_error_message(&err);
  RecordPtrs logged(records);
  std::vector<const uint8_t*>& ptrs = logged.ptrs;
  std::vector<size_t>& lens = logged.lens;
  uih_projection proj{};
  proj.ngroups = 2;
  proj.groups[0] = {1, 24, 0, {}};
  proj.groups[1] = {2, 6, 0, {}};
  proj.on_mismatch = UIH_MISMATCH_FLAG;
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &proj, &m, &st, &err), UIH_OK)
      << uih_error_message(&err);
  size_t with_b = 0;
  for (size_t i = 0; i < records.size(); i++) {
    with_b += has_b[i];
    EXPECT_EQ(uih_materialized_flags(m)[i] & UIH_RECORD_MISMATCH, has_b[i] ? UIH_RECORD_MISMATCH : 0) << i;
  }
  ASSERT_GT(with_b, 0u);
  ASSERT_LT(with_b, records.size());
  uih_materialized_free(m);
  proj.on_mismatch = UIH_MISMATCH_FAIL;
  EXPECT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &proj, &m, &st, &err), UIH_ERR_CORRUPTION);
  EXPECT_NE(std::string(uih_error_message(&err)).find("unverifiable: its schema version 1 identifies events by id "
                                                      "trait 'item'"),
            std::string::npos)
      << uih_error_message(&err);
  uih_store_close(s);
}

// The materializer: any batch composition and order, any number of
// workers and depth, with or without data affinity, gives every record the
// same sequences and flags as one uih_materialize of all of them — also
// while loads publish new generations and retire old ones underneath.
TEST_F(StoreTest, MaterializersGiveTheSameResultsInAnyBatchingAndThreads) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  for (int i = 0; i < 300; i++) {
    const uint64_t u = w.rng() % 12;
    records.push_back(RecordOf(sn, u, w.through + static_cast<int64_t>(w.rng() % kDay), {2, {{1, 24}, {2, 6}}}));
  }
  uih_snapshotter_free(sn);
  records[17] = "not a record";  // unreadable, flagged: in the same place whatever the batching
  std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, w.day1_csv);
  ASSERT_EQ(Load(s, {day1}, w.through + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  uih_projection proj{};
  proj.ngroups = 2;
  proj.groups[0] = {1, 24, 0, {}};
  proj.groups[1] = {2, 4, 2, {2, 1}};
  proj.on_mismatch = UIH_MISMATCH_FLAG;
  RecordPtrs logged(records);
  std::vector<const uint8_t*>& ptrs = logged.ptrs;
  std::vector<size_t>& lens = logged.lens;
  uih_materialized* m = nullptr;
  uih_materialize_stats whole{};
  ASSERT_EQ(uih_materialize(s, ptrs.data(), lens.data(), ptrs.size(), &proj, &m, &whole, &err), UIH_OK);
  const std::vector<std::vector<Ev>> want_a = Sequences(m, 0), want_b = Sequences(m, 1);
  const std::vector<uint8_t> want_flags(uih_materialized_flags(m), uih_materialized_flags(m) + records.size());
  uih_materialized_free(m);
  EXPECT_EQ(want_flags[17], UIH_RECORD_UNREADABLE);
  // 25 records a user: the shared layout writes their overlapping windows once.
  EXPECT_LT(whole.rows * 4, whole.events) << whole.rows << " rows for " << whole.events << " events";

  // Loads of other users underneath: each publishes a generation and
  // retires the oldest beyond the store's keep.
  std::atomic<bool> done{false};
  std::atomic<int> loads{0};
  std::thread loader([&] {
    for (int k = 1; !done.load() && k < 40; k++) {
      std::string f = dir_ / ("other" + std::to_string(k) + ".csv");
      WriteFile(f, "user_id,group,ts,item,liked\n" + std::to_string(1000 + k) + ",a," +
                       std::to_string(w.through + kDay + k) + ",5,1\n");
      std::vector<const char*> in = {f.c_str()};
      uih_load_opts o = UIH_LOAD_OPTS_DEFAULT;
      o.through = w.through + kDay + k + 1;
      uih_error e{};
      ASSERT_EQ(uih_load(s, in.data(), 1, &o, nullptr, &e), UIH_OK) << uih_error_message(&e);
      loads++;
    }
  });
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 12; trial++) {
    SCOPED_TRACE(trial);
    uih_materializer_opts o = UIH_MATERIALIZER_OPTS_DEFAULT;
    o.threads = 1 + static_cast<uint32_t>(rng() % 4);
    o.depth = static_cast<uint32_t>(rng() % 4);
    o.each_record = static_cast<int>(rng() % 2);
    o.no_batch_reads = static_cast<int>(rng() % 2);
    proj.layout = rng() % 2 ? UIH_LAYOUT_JAGGED : UIH_LAYOUT_SHARED;
    uih_materializer* mz = nullptr;
    ASSERT_EQ(uih_materializer_create(s, &proj, &o, &mz, &err), UIH_OK) << uih_error_message(&err);
    std::vector<size_t> order(records.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<size_t>> batches;
    for (size_t at = 0; at < order.size();) {
      size_t n = std::min<size_t>(order.size() - at, 1 + rng() % 60);
      batches.emplace_back(order.begin() + static_cast<long>(at), order.begin() + static_cast<long>(at + n));
      at += n;
    }
    size_t taken = 0;
    auto take = [&] {
      uih_materialized* r = nullptr;
      uih_materialize_stats st{};
      ASSERT_EQ(uih_materializer_next(mz, &r, &st, &err), UIH_OK) << uih_error_message(&err);
      const std::vector<size_t>& b = batches[taken++];
      ASSERT_EQ(uih_materialized_records(r), b.size());
      std::vector<std::vector<Ev>> a = Sequences(r, 0), bb = Sequences(r, 1);
      for (size_t i = 0; i < b.size(); i++) {
        EXPECT_EQ(a[i], want_a[b[i]]) << "record " << b[i];
        EXPECT_EQ(bb[i], want_b[b[i]]) << "record " << b[i];
        EXPECT_EQ(uih_materialized_flags(r)[i], want_flags[b[i]]) << "record " << b[i];
      }
      if (o.each_record) {
        EXPECT_EQ(st.users, b.size() - (std::find(b.begin(), b.end(), 17u) != b.end()));
      }
      for (uint32_t gi = 0; gi < 2; gi++) {
        const uih_mat_group* g = uih_materialized_group(r, gi);
        uint64_t events = 0;
        for (size_t i = 0; i < b.size(); i++) {
          ASSERT_LE(g->offsets[i] + g->lengths[i], g->rows);
          if (proj.layout == UIH_LAYOUT_JAGGED) {
            EXPECT_EQ(g->offsets[i], events) << "records back to back";
          }
          events += g->lengths[i];
        }
        if (proj.layout == UIH_LAYOUT_JAGGED) {
          EXPECT_EQ(g->rows, events);
        } else {
          EXPECT_LE(g->rows, events);
        }
      }
      uih_materialized_free(r);
    };
    for (const auto& b : batches) {
      std::vector<const uint8_t*> bp;
      std::vector<size_t> bl;
      for (size_t i : b) bp.push_back(ptrs[i]), bl.push_back(lens[i]);
      ASSERT_EQ(uih_materializer_submit(mz, bp.data(), bl.data(), bp.size(), &err), UIH_OK);
      if (rng() % 3 == 0) {
        ASSERT_NO_FATAL_FAILURE(take());
      }
    }
    while (taken < batches.size()) ASSERT_NO_FATAL_FAILURE(take());
    uih_materialized* r = nullptr;
    EXPECT_EQ(uih_materializer_next(mz, &r, nullptr, &err), UIH_ERR_NOT_FOUND);
    // Freed with batches pending: they are dropped.
    if (trial % 3 == 0) {
      ASSERT_EQ(uih_materializer_submit(mz, ptrs.data(), lens.data(), 40, &err), UIH_OK);
    }
    uih_materializer_free(mz);
  }
  done = true;
  loader.join();
  EXPECT_GT(loads.load(), 0);
  // A bad projection is refused at creation.
  uih_projection bad = proj;
  bad.groups[1].group = 9;
  uih_materializer* mz = nullptr;
  EXPECT_EQ(uih_materializer_create(s, &bad, nullptr, &mz, &err), UIH_ERR_NOT_FOUND);
  bad = proj;
  bad.layout = static_cast<uih_mat_layout>(2);
  EXPECT_EQ(uih_materializer_create(s, &bad, nullptr, &mz, &err), UIH_ERR_INVALID_ARGUMENT);
  uih_store_close(s);
}

}  // namespace

namespace {

std::vector<uint32_t> LiveGenerations(uih_store* s, uint32_t shard) {
  uih_generation gens[16];
  size_t n = 0;
  uint32_t current = 0;
  uih_error err{};
  EXPECT_EQ(uih_store_generations(s, shard, gens, 16, &n, &current, &err), UIH_OK) << uih_error_message(&err);
  std::vector<uint32_t> out;
  for (size_t i = 0; i < std::min<size_t>(n, 16); i++) out.push_back(gens[i].generation);
  return out;
}

bool Pinned(uih_store* s, uint32_t shard, uint32_t generation) {
  int pinned = -1;
  uih_error err{};
  EXPECT_EQ(uih_store_pinned(s, shard, generation, &pinned, &err), UIH_OK) << uih_error_message(&err);
  return pinned == 1;
}

// `uih materialize` of the log it reads from `fifo`: it opens the store
// (read-only) first, then waits for the log.
pid_t SpawnMaterialize(const std::string& store, const std::string& fifo, const std::string& errors) {
  pid_t pid = fork();
  if (pid == 0) { /* nothing that allocates before the exec: the parent may have threads */
    const int fd = open(errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    execl(UIH_CLI, "uih", "materialize", "--store", store.c_str(), "--log", fifo.c_str(), "--group", "a:24", "--out",
          "/dev/null", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

// A read-only store, in this process or another, holds the generations it
// opened: loads in the writer (keep 1) retire every other generation but
// not those, until it lets go — closes, exits, or is killed — and it
// rebuilds records from them, its first reads coming after the loads.
TEST_F(StoreTest, AReadOnlyStoreHoldsItsGenerationsWhileLoadsRetireTheOthers) {
  World w;
  uih_store_close(Init("store", 2));
  const std::string path = dir_ / "store";
  uih_store_opts wo = UIH_STORE_OPTS_DEFAULT;
  wo.keep = 1;
  uih_store* s = nullptr;
  uih_error err{};
  ASSERT_EQ(uih_store_open(path.c_str(), &wo, &s, &err), UIH_OK) << uih_error_message(&err);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  std::vector<std::vector<Ev>> seen;
  for (int i = 0; i < 200; i++) {
    const uih_batch* const* seqs;
    const uint8_t* rec;
    size_t len;
    uih_snapshot_spec spec{1, {{1, 24}}};
    ASSERT_EQ(uih_snapshot(sn, w.rng() % 12, w.through + static_cast<int64_t>(w.rng() % kDay), &spec, &seqs, &rec,
                           &len, &err),
              UIH_OK);
    records.emplace_back(reinterpret_cast<const char*>(rec), len);
    seen.push_back(Events(seqs[0]));
  }
  uih_snapshotter_free(sn);
  std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, w.day1_csv);
  ASSERT_EQ(Load(s, {day1}, w.through + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  int64_t through = w.through + kDay;
  int loads = 0;
  auto load_other = [&] {  // a load of another user's event: a new generation in every shard
    std::string f = dir_ / ("other" + std::to_string(++loads) + ".csv");
    WriteFile(f, "user_id,group,ts,item,liked\n" + std::to_string(5000 + loads) + ",a," + std::to_string(through) + ",5,1\n");
    through += 1000;
    ASSERT_EQ(Load(s, {f}, through, 0, &err), UIH_OK) << uih_error_message(&err);
  };
  ASSERT_EQ(LiveGenerations(s, 0), std::vector<uint32_t>{2}) << "keep 1: generation 1 retired";
  uih_projection p{};
  p.ngroups = 1;
  p.groups[0] = {1, 24, 0, {}};
  RecordPtrs logged(records);

  // In this process.
  uih_store* r = Open(path, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(Pinned(s, 0, 2) && Pinned(s, 1, 2));
  EXPECT_FALSE(Pinned(r, 0, 2)) << "a store's own pins are not another's";
  for (int k = 0; k < 3; k++) ASSERT_NO_FATAL_FAILURE(load_other());
  for (uint32_t shard = 0; shard < 2; shard++) EXPECT_EQ(LiveGenerations(s, shard), (std::vector<uint32_t>{2, 5}));
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(r, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(st.mismatches, 0u);
  EXPECT_GT(st.stripes_read, 0u);
  EXPECT_EQ(Sequences(m, 0), seen);
  uih_materialized_free(m);
  uih_store_close(r);
  EXPECT_FALSE(Pinned(s, 0, 2));
  ASSERT_NO_FATAL_FAILURE(load_other());
  EXPECT_EQ(LiveGenerations(s, 0), std::vector<uint32_t>{6}) << "let go: retired with the next publish";

  // In another process: `uih materialize`, which opens the store and then
  // waits for its log on a FIFO; and one killed while it holds it.
  const std::string log = dir_ / "snap.log", fifo = dir_ / "snap.fifo", errors = dir_ / "mat.err";
  {
    FILE* f = fopen(log.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    for (const std::string& rec : records)
      ASSERT_EQ(uih_snapshot_log_append(f, reinterpret_cast<const uint8_t*>(rec.data()), rec.size(), &err), UIH_OK);
    fclose(f);
  }
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto wait_pinned = [&](uint32_t g) {
    for (int i = 0; i < 3000 && !Pinned(s, 0, g); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Pinned(s, 0, g);
  };
  for (bool killed : {false, true}) {
    SCOPED_TRACE(killed ? "killed" : "exits");
    const uint32_t held = LiveGenerations(s, 0).back();
    pid_t pid = SpawnMaterialize(path, fifo, errors);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_pinned(held)) << "the child opened the store";
    ASSERT_NO_FATAL_FAILURE(load_other());
    ASSERT_NO_FATAL_FAILURE(load_other());
    EXPECT_EQ(LiveGenerations(s, 0), (std::vector<uint32_t>{held, held + 2}));
    int status = 0;
    if (killed) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFSIGNALED(status));
      // The FIFO may have no reader now; nothing is written to it.
    } else {
      std::ifstream in(log, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(fifo, std::ios::binary) << bytes;  // opens once the child does
      waitpid(pid, &status, 0);
      std::ifstream e(errors);
      std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
      EXPECT_NE(text.find("200 records"), std::string::npos) << text;
      EXPECT_NE(text.find(" 0 mismatched"), std::string::npos) << text;
    }
    EXPECT_FALSE(Pinned(s, 0, held)) << "the kernel drops a gone process's pins";
    ASSERT_NO_FATAL_FAILURE(load_other());
    EXPECT_EQ(LiveGenerations(s, 0), std::vector<uint32_t>{held + 3});
  }
  uih_store_close(s);
}

namespace {

// What the batch's reads saw, and what to do to them.
struct ReadFaults {
  std::atomic<int> calls{0};
  std::atomic<int> mode{0};  // 0 none, 1 every read short by half and interrupted once, 2 -EIO
  std::atomic<int> interrupted{0};
  static int64_t Hook(void* ctx, int, uint64_t, const void*, int64_t res) {
    auto* f = static_cast<ReadFaults*>(ctx);
    f->calls++;
    if (f->mode == 2) return -EIO;
    if (f->mode == 1 && res > 1) {
      if (f->interrupted++ % 3 == 0) return -EINTR;
      return res / 2;
    }
    return res;
  }
};

}  // namespace

// A batch's first reads go out together through uih/io.h (one submission;
// the fault hook sees each), straight from the generation's files: short
// and interrupted reads change nothing, a failed one fails the batch
// naming the file, and reads one by one give the same results.
TEST_F(StoreTest, ABatchsReadsGoOutTogetherAndAFailedOneNamesItsFile) {
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  for (uint64_t u = 0; u < World::kUsers; u++) records.push_back(RecordOf(sn, u, w.through + kDay - 1, {2, {{1, 24}, {2, 6}}}));
  uih_snapshotter_free(sn);
  std::string day1 = dir_ / "day1.csv";
  WriteFile(day1, w.day1_csv);
  ASSERT_EQ(Load(s, {day1}, w.through + kDay, 0, &err), UIH_OK) << uih_error_message(&err);
  RecordPtrs logged(records);
  uih_projection p{};
  p.ngroups = 2;
  p.groups[0] = {1, 24, 0, {}};
  p.groups[1] = {2, 6, 0, {}};
  ReadFaults faults;
  uih_io_set_fault(ReadFaults::Hook, &faults);
  auto rebuild = [&](std::vector<std::vector<Ev>>* a, std::vector<std::vector<Ev>>* b, uih_materialize_stats* st) {
    uih_materialized* m = nullptr;
    int rc = uih_materialize(s, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, st, &err);
    if (rc == UIH_OK) {
      *a = Sequences(m, 0);
      *b = Sequences(m, 1);
    }
    uih_materialized_free(m);
    return rc;
  };
  std::vector<std::vector<Ev>> a, b, a2, b2;
  uih_materialize_stats st{};
  ASSERT_EQ(rebuild(&a, &b, &st), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.mismatches, 0u);
  EXPECT_GE(st.reads_batched, 60u) << "one first read per user and group with events";
  EXPECT_GE(st.reads, st.reads_batched) << "a record needing more than the first run reads further back after";
  EXPECT_GE(faults.calls.load(), static_cast<int>(st.reads_batched)) << "through uih/io.h";
  // Short and interrupted reads: read again, the same sequences.
  faults.mode = 1;
  ASSERT_EQ(rebuild(&a2, &b2, &st), UIH_OK) << uih_error_message(&err);
  EXPECT_GT(faults.interrupted.load(), 0);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
  // A failed read: the batch fails, naming the file.
  faults.mode = 2;
  EXPECT_EQ(rebuild(&a2, &b2, &st), UIH_ERR_IO);
  EXPECT_NE(std::string(uih_error_message(&err)).find(".sst: reading "), std::string::npos) << uih_error_message(&err);
  faults.mode = 0;
  uih_io_set_fault(nullptr, nullptr);
  // One by one, through a materializer: the same.
  uih_materializer_opts o = UIH_MATERIALIZER_OPTS_DEFAULT;
  o.no_batch_reads = 1;
  uih_materializer* mz = nullptr;
  ASSERT_EQ(uih_materializer_create(s, &p, &o, &mz, &err), UIH_OK);
  ASSERT_EQ(uih_materializer_submit(mz, logged.ptrs.data(), logged.lens.data(), records.size(), &err), UIH_OK);
  uih_materialized* m = nullptr;
  ASSERT_EQ(uih_materializer_next(mz, &m, &st, &err), UIH_OK) << uih_error_message(&err);
  EXPECT_EQ(st.reads_batched, 0u);
  EXPECT_GT(st.reads, 0u);
  EXPECT_EQ(Sequences(m, 0), a);
  EXPECT_EQ(Sequences(m, 1), b);
  uih_materialized_free(m);
  uih_materializer_free(mz);
  uih_store_close(s);
}

// A damaged stripe in a generation file costs only the records that need
// it: under flag and skip they are flagged, each saying which group could
// not be read and why, and every other record rebuilds as before; under
// fail the error names the first such record and its user.
TEST_F(StoreTest, ADamagedStripeFlagsTheRecordsThatNeedItNotTheBatch) {
  namespace fs = std::filesystem;
  World w;
  uih_store* s = Init("store", 2);
  ASSERT_NO_FATAL_FAILURE(w.Build(s, dir_.path()));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(s, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  for (uint64_t u = 0; u < World::kUsers; u++) records.push_back(RecordOf(sn, u, w.through + kDay - 1, {2, {{1, 24}, {2, 6}}}));
  uih_snapshotter_free(sn);
  uih_store_close(s);
  RecordPtrs logged(records);
  uih_projection p{};
  p.ngroups = 2;
  p.groups[0] = {1, 24, 0, {}};
  p.groups[1] = {2, 6, 0, {}};
  auto rebuild = [&](uih_mismatch_policy policy, std::vector<std::vector<Ev>>* a, std::vector<std::vector<Ev>>* b,
                     std::vector<uint8_t>* flags, std::vector<std::string>* why) {
    uih_store* ro = Open(dir_ / "store", 1);
    p.on_mismatch = policy;
    uih_materialized* m = nullptr;
    int rc = uih_materialize(ro, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, nullptr, &err);
    if (rc == UIH_OK) {
      *a = Sequences(m, 0);
      *b = Sequences(m, 1);
      flags->assign(uih_materialized_flags(m), uih_materialized_flags(m) + records.size());
      why->clear();
      for (size_t i = 0; i < records.size(); i++) why->push_back(uih_materialized_why(m, i));
    }
    uih_materialized_free(m);
    uih_store_close(ro);
    return rc;
  };
  std::vector<std::vector<Ev>> a, b, a2, b2;
  std::vector<uint8_t> flags;
  std::vector<std::string> why;
  ASSERT_EQ(rebuild(UIH_MISMATCH_FAIL, &a, &b, &flags, &why), UIH_OK) << uih_error_message(&err);
  // The largest generation file of shard 0: a byte in the middle of its stripes.
  fs::path table;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "store/shard-0000"))
    if (e.path().extension() == ".sst" && (table.empty() || fs::file_size(e.path()) > fs::file_size(table)))
      table = e.path();
  ASSERT_FALSE(table.empty());
  // A byte of a stripe some record needs (most stripes are older than the
  // newest events a record names): tried at points through the file.
  const uint64_t size = fs::file_size(table);
  bool hit = false;
  for (uint64_t k = 1; k < 64 && !hit; k++) {
    uih_test::FlipByte(table, size * k / 64);
    ASSERT_EQ(rebuild(UIH_MISMATCH_FLAG, &a2, &b2, &flags, &why), UIH_OK) << uih_error_message(&err);
    hit = std::count_if(flags.begin(), flags.end(), [](uint8_t f) { return f & UIH_RECORD_MISMATCH; }) > 0;
    if (!hit) uih_test::FlipByte(table, size * k / 64);  // back as it was: that stripe is needed by none
  }
  ASSERT_TRUE(hit) << "no damaged stripe was needed";
  for (uih_mismatch_policy policy : {UIH_MISMATCH_FLAG, UIH_MISMATCH_SKIP}) {
    SCOPED_TRACE(policy == UIH_MISMATCH_FLAG ? "flag" : "skip");
    ASSERT_EQ(rebuild(policy, &a2, &b2, &flags, &why), UIH_OK) << uih_error_message(&err);
    size_t flagged = 0;
    for (size_t i = 0; i < records.size(); i++) {
      if (flags[i] & UIH_RECORD_MISMATCH) {
        flagged++;
        EXPECT_NE(why[i].find("cannot be read"), std::string::npos) << why[i];
        EXPECT_EQ(uih_shard_of(i, 2), 0u) << "a record of shard 1's user flagged: " << why[i];
        continue;
      }
      EXPECT_EQ(why[i], "");
      EXPECT_EQ(a2[i], a[i]) << "record " << i;
      EXPECT_EQ(b2[i], b[i]) << "record " << i;
    }
    EXPECT_GE(flagged, 1u);
    EXPECT_LT(flagged, records.size() / 2) << "only the records that needed the damaged stripe";
  }
  EXPECT_EQ(rebuild(UIH_MISMATCH_FAIL, &a2, &b2, &flags, &why), UIH_ERR_CORRUPTION);
  const std::string msg = uih_error_message(&err);
  EXPECT_NE(msg.find("materialize: record "), std::string::npos) << msg;
  EXPECT_NE(msg.find("(user "), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot be read"), std::string::npos) << msg;
}

// Records carry their store's id: against another store (here one built
// with the very same events, so every checksum would pass) they are refused
// per record, never rebuilt; a copy of the store is the same store.
TEST_F(StoreTest, ARecordOfAnotherStoreIsNamedNotRebuilt) {
  World wa, wb;  // the same seed: the same events
  uih_store* a = Init("a", 2);
  uih_store* b = Init("b", 2);
  ASSERT_NO_FATAL_FAILURE(wa.Build(a, dir_ / "a"));
  ASSERT_NO_FATAL_FAILURE(wb.Build(b, dir_ / "b"));
  uih_error err{};
  uih_snapshotter* sn = nullptr;
  ASSERT_EQ(uih_snapshotter_create(a, &sn, &err), UIH_OK);
  std::vector<std::string> records;
  for (uint64_t u = 0; u < 10; u++) records.push_back(RecordOf(sn, u, wa.through + kDay - 1, {1, {{1, 24}}}));
  uih_snapshotter_free(sn);
  uih_snapshot_record r;
  ASSERT_EQ(uih_snapshot_record_decode(reinterpret_cast<const uint8_t*>(records[3].data()), records[3].size(), &r, &err),
            UIH_OK);
  EXPECT_EQ(r.store, static_cast<uint32_t>(uih_store_id(a)));
  RecordPtrs logged(records);
  uih_projection p{};
  p.ngroups = 1;
  p.groups[0] = {1, 24, 0, {}};
  uih_materialized* m = nullptr;
  uih_materialize_stats st{};
  ASSERT_EQ(uih_materialize(a, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err), UIH_OK);
  const std::vector<std::vector<Ev>> want = Sequences(m, 0);
  uih_materialized_free(m);
  EXPECT_EQ(st.mismatches, 0u);
  EXPECT_EQ(uih_materialize(b, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err),
            UIH_ERR_CORRUPTION);
  char ids[64];
  snprintf(ids, sizeof ids, "logged against store %08x, this is store %08x", static_cast<uint32_t>(uih_store_id(a)),
           static_cast<uint32_t>(uih_store_id(b)));
  EXPECT_NE(std::string(uih_error_message(&err)).find(std::string("record 0 (user 0, request ")), std::string::npos)
      << uih_error_message(&err);
  EXPECT_NE(std::string(uih_error_message(&err)).find(ids), std::string::npos) << uih_error_message(&err);
  p.on_mismatch = UIH_MISMATCH_FLAG;
  ASSERT_EQ(uih_materialize(b, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err), UIH_OK);
  EXPECT_EQ(st.mismatches, records.size());
  EXPECT_EQ(st.unreadable, 0u);
  for (size_t i = 0; i < records.size(); i++) {
    EXPECT_EQ(uih_materialized_flags(m)[i], UIH_RECORD_OTHER_STORE) << i;
    EXPECT_EQ(uih_materialized_group(m, 0)->lengths[i], 0u) << i;
  }
  uih_materialized_free(m);
  uih_store_close(b);
  // A copy (a backup restored) is the same store.
  uih_store_close(a);
  std::filesystem::copy(dir_ / "a", dir_ / "copy", std::filesystem::copy_options::recursive);
  uih_store* copy = Open(dir_ / "copy");
  ASSERT_NE(copy, nullptr);
  p.on_mismatch = UIH_MISMATCH_FAIL;
  ASSERT_EQ(uih_materialize(copy, logged.ptrs.data(), logged.lens.data(), records.size(), &p, &m, &st, &err), UIH_OK)
      << uih_error_message(&err);
  EXPECT_EQ(Sequences(m, 0), want);
  uih_materialized_free(m);
  uih_store_close(copy);
}
