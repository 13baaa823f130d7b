// The materializer's output (output.h): the shared and jagged
// layouts, the copy of runs into one array per trait, and the results'
// accessors of uih/materialize.h.
#include "output.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "uih_plugin/c_api.h"
#include "uih/stripe.h"

namespace uih::mat {

namespace {

void AddRun(std::vector<Seg>* runs, const uih_batch* b, uint32_t from, uint32_t to) {
  if (!runs->empty() && runs->back().b == b && runs->back().to == from) runs->back().to = to;
  else runs->push_back({b, from, to});
}

}  // namespace

// The shared layout for one user's records (`idx`) in group gi: their rows
// are laid out once, records taken oldest first row first; a record whose
// rows are already there, in order, from its first one (found by its
// timestamp, checked by value) is a window into them, extended at the end
// when it goes on past the last row written; any other gets rows of its own.
void OutputWriter::Share(const std::vector<size_t>& idx, uint32_t gi, const std::vector<OutColumn>& cols, OutGroup* og,
                         std::vector<Seg>* runs, uint64_t* rows) {
  std::vector<size_t>& order = order_;
  order.clear();
  for (size_t i : idx)
    if (og->lengths[i] > 0) order.push_back(i);
  if (order.empty()) return;
  auto own_rows = [&](size_t i) {
    og->offsets[i] = *rows;
    for (const Seg& sg : (*picks_)[i][gi].segs) AddRun(runs, sg.b, sg.from, sg.to);
    *rows += og->lengths[i];
  };
  if (order.size() == 1) return own_rows(order[0]);
  // Every batch of the group was made with the same columns (reads_[gi]):
  // a trait's column index is the same in all of them.
  const uih_batch* any = (*picks_)[order[0]][gi].segs[0].b;
  const int tc = uih_batch_column_index(any, (*groups_)[gi]->ts->id);
  std::vector<int>& cc = cols_;
  cc.clear();
  for (const OutColumn& oc : cols) cc.push_back(uih_batch_column_index(any, oc.trait));
  auto ts_of = [&](const uih_batch* b, uint32_t r) { return static_cast<const int64_t*>(b->columns[tc].values)[r]; };
  // Whether two rows are the same in the output's columns (values and
  // presence; absent values are not compared, the output zeroes them).
  auto same = [&](const uih_batch* b, uint32_t r, const Src& y) {
    if (b == y.b && r == y.row) return true;
    for (size_t c = 0; c < cols.size(); c++) {
      if (cc[c] < 0) continue;
      const bool hx = uih_column_has(&b->columns[cc[c]], r), hy = uih_column_has(&y.b->columns[cc[c]], y.row);
      if (hx != hy) return false;
      const size_t w = cols[c].width;
      if (hx && memcmp(static_cast<const uint8_t*>(b->columns[cc[c]].values) + r * w,
                       static_cast<const uint8_t*>(y.b->columns[cc[c]].values) + y.row * w, w) != 0)
        return false;
    }
    return true;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Seg &fa = (*picks_)[a][gi].segs[0], &fb = (*picks_)[b][gi].segs[0];
    const int64_t ta = ts_of(fa.b, fa.from), tb = ts_of(fb.b, fb.from);
    return ta != tb ? ta < tb : og->lengths[a] > og->lengths[b];
  });
  const uint64_t base = *rows;
  std::vector<Src>& region = region_;  // this user's rows, from `base`
  std::vector<int64_t>& region_ts = region_ts_;
  region.clear();
  region_ts.clear();
  bool sorted = true;  // region_ts ascending: found by binary search
  for (size_t i : order) {
    const std::vector<Seg>& segs = (*picks_)[i][gi].segs;
    const int64_t t0 = ts_of(segs[0].b, segs[0].from);
    size_t p = sorted ? static_cast<size_t>(std::lower_bound(region_ts.begin(), region_ts.end(), t0) - region_ts.begin())
                      : 0;
    while (p < region.size() && !(region_ts[p] == t0 && same(segs[0].b, segs[0].from, region[p]))) {
      if (sorted && region_ts[p] != t0) p = region.size();
      else p++;
    }
    // Its rows along the region from p, as far as the region goes.
    size_t k = 0;
    bool window = p < region.size();
    for (size_t s = 0; window && s < segs.size() && p + k < region.size(); s++)
      for (uint32_t r = segs[s].from; r < segs[s].to && p + k < region.size(); r++, k++)
        if (!same(segs[s].b, r, region[p + k])) {
          window = false;
          break;
        }
    if (window) {
      og->offsets[i] = base + p;
    } else {
      og->offsets[i] = base + region.size();
      k = 0;
    }
    // The rest of its rows at the region's end.
    size_t skip = k;
    for (const Seg& sg : segs) {
      const uint32_t n = sg.to - sg.from;
      if (skip >= n) {
        skip -= n;
        continue;
      }
      const uint32_t from = sg.from + static_cast<uint32_t>(skip);
      skip = 0;
      for (uint32_t r = from; r < sg.to; r++) {
        const int64_t t = ts_of(sg.b, r);
        sorted = sorted && (region_ts.empty() || region_ts.back() <= t);
        region.push_back({sg.b, r});
        region_ts.push_back(t);
      }
      AddRun(runs, sg.b, from, sg.to);
    }
  }
  *rows = base + region.size();
}

void OutBytes::Reset(size_t n) {
  constexpr size_t kHuge = size_t{2} << 20;
  p_.reset();
  if (n == 0) return;
  void* p = nullptr;
  if (n >= 2 * kHuge) {  // whole huge pages, the kernel asked to back them so
    const size_t size = (n + kHuge - 1) / kHuge * kHuge;
    p = aligned_alloc(kHuge, size);
    if (p) (void)madvise(p, size, MADV_HUGEPAGE);  // advice: without it, 4 KB pages
  } else {
    p = malloc(n);
  }
  if (!p) throw std::bad_alloc();
  p_.reset(static_cast<uint8_t*>(p));
}

void OutputWriter::Write(const uih_projection* p, const std::vector<const uih_group*>& groups,
                         const std::vector<uint8_t>& flags, const std::vector<std::vector<Pick>>& picks,
                         const std::vector<std::vector<size_t>>& served, uih_materialize_stats* st,
                         uih_materialized* out) {
  p_ = p;
  groups_ = &groups;
  picks_ = &picks;
  out->n = flags.size();
  out->flags = flags;
  out->groups.resize(p_->ngroups);
  const bool shared = p_->layout == UIH_LAYOUT_SHARED;
  std::vector<Seg> runs;
  for (uint32_t gi = 0; gi < p_->ngroups; gi++) {
    const uih_projection_group& pg = p_->groups[gi];
    const uih_group* g = (*groups_)[gi];
    OutGroup& og = out->groups[gi];
    std::vector<uint16_t> traits(pg.traits, pg.traits + pg.ntraits);
    if (traits.empty())
      for (uint32_t t = 0; t < g->ntraits; t++)
        if (uih_trait_active(&g->traits[t])) traits.push_back(g->traits[t].id);
    og.cols.resize(traits.size());
    for (size_t c = 0; c < traits.size(); c++) {
      OutColumn& oc = og.cols[c];
      oc.trait = traits[c];
      oc.type = uih_group_trait_by_id(g, traits[c])->type;
      oc.width = uih_type_width(oc.type);
    }
    og.offsets.assign(flags.size(), 0);
    og.lengths.resize(flags.size());
    for (size_t i = 0; i < flags.size(); i++) {
      const bool skip = (flags[i] & UIH_RECORD_MISMATCH) && p_->on_mismatch == UIH_MISMATCH_SKIP;
      og.lengths[i] = skip ? 0 : (*picks_)[i][gi].events;
      st->events += og.lengths[i];
    }
    // Where each record's rows are, as runs of rows of decoded batches.
    runs.clear();
    uint64_t rows = 0;
    if (shared) {
      for (const std::vector<size_t>& idx : served) Share(idx, gi, og.cols, &og, &runs, &rows);
    } else {
      for (size_t i = 0; i < flags.size(); i++) {
        og.offsets[i] = rows;
        if (og.lengths[i] == 0) continue;
        for (const Seg& sg : (*picks_)[i][gi].segs) AddRun(&runs, sg.b, sg.from, sg.to);
        rows += og.lengths[i];
      }
    }
    for (OutColumn& oc : og.cols) {
      oc.values.Reset(rows * oc.width);
      oc.present.Reset(rows);
    }
    // Run by run, column by column: the values' bytes as the batch holds
    // them (little-endian, the type's width), absent ones zeroed.
    uint64_t row = 0;
    for (const Seg& sg : runs) {
      const uint32_t n = sg.to - sg.from;
      for (OutColumn& oc : og.cols) {
        int c = uih_batch_column_index(sg.b, oc.trait);
        uint8_t* dst = oc.values.data() + row * oc.width;
        if (c < 0) {  // a stripe from before the trait
          memset(dst, 0, n * oc.width);
          memset(oc.present.data() + row, 0, n);
          continue;
        }
        const uih_column* col = &sg.b->columns[c];
        memcpy(dst, static_cast<const uint8_t*>(col->values) + sg.from * oc.width, n * oc.width);
        for (uint32_t r = 0; r < n; r++) {
          const uint8_t has = static_cast<uint8_t>(uih_column_has(col, sg.from + r));
          oc.present[row + r] = has;
          if (!has) memset(dst + r * oc.width, 0, oc.width);
        }
      }
      row += n;
    }
    og.views.resize(og.cols.size());
    for (size_t c = 0; c < og.cols.size(); c++)
      og.views[c] = {og.cols[c].trait, static_cast<int>(og.cols[c].type), og.cols[c].values.data(),
                     og.cols[c].present.data()};
    og.view = {g->id, rows, static_cast<uint32_t>(og.views.size()), og.views.data(), og.offsets.data(),
               og.lengths.data()};
    st->rows += rows;
  }
}

}  // namespace uih::mat

extern "C" {

size_t uih_materialized_records(const uih_materialized* m) { return m ? m->n : 0; }

const uih_mat_group* uih_materialized_group(const uih_materialized* m, uint32_t i) {
  return m && i < m->groups.size() ? &m->groups[i].view : nullptr;
}

const uint8_t* uih_materialized_flags(const uih_materialized* m) { return m ? m->flags.data() : nullptr; }

const char* uih_materialized_why(const uih_materialized* m, size_t i) {
  return m && i < m->why.size() ? m->why[i].c_str() : "";
}

void uih_materialized_free(uih_materialized* m) {
  uih::CallCVoid([&] { delete m; });
}

}  // extern "C"
