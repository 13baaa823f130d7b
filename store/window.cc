// Reading a user's newest events (uih_store/window.h): the walk back over a
// generation's stripes, and the gathering of events decoded newest first.
#include "uih_store/window.h"

#include <algorithm>
#include <cinttypes>

namespace uih {

WindowReader::~WindowReader() { uih_stripe_decoder_free(dec_); }

void WindowReader::Start(const std::string* shard, const Generation* gen, const GenerationFiles* files,
                         uint64_t user, const uih_group* g, const Extent* plan, size_t n, const StripeSet* first,
                         size_t first_begin) {
  shard_ = shard;
  gen_ = gen;
  files_ = files;
  user_ = user;
  group_ = g;
  plan_ = plan;
  end_ = n;
  run_ = 0;
  first_ = first;
  first_begin_ = first ? first_begin : n;
  set_ = nullptr;
  left_ = 0;
}

int WindowReader::Next(uint32_t missing, const uint16_t* ids, uint32_t nids, uih_batch** out, bool* more,
                       uih_error* err) {
  if (dec_ == nullptr) {
    int rc = uih_stripe_decoder_create(&dec_, err);
    if (rc != UIH_OK) return rc;
  }
  while (left_ == 0) {
    if (end_ == 0) {
      *more = false;
      return UIH_OK;
    }
    size_t begin;
    if (first_ != nullptr) {  // the newest run, read with others'
      set_ = first_;
      begin = first_begin_;
      first_ = nullptr;
    } else {
      run_ = std::max<size_t>(run_ * 2, missing / group_->stripe_events + 1);
      begin = end_ > run_ ? end_ - run_ : 0;
      int rc = files_->Read(plan_ + begin, end_ - begin, &read_, err);
      if (rc != UIH_OK) {
        uih_error_prefix(err, "store %s: generation %u: ", shard_->c_str(), gen_->number());
        return rc;
      }
      reads_++;
      set_ = &read_;
    }
    run_ = end_ - begin;
    end_ = begin;
    bytes_ += set_->bytes.size();
    left_ = set_->stripes.size();
  }
  const StripeSet::Stripe& st = set_->stripes[--left_];
  const uint8_t* bytes = set_->at(st);
  uih_stripe_info info;
  int rc = uih_stripe_read_info(bytes, st.len, &info, err);
  if (rc == UIH_OK) rc = uih_batch_prepare(out, group_, ids, nids, std::max<uint32_t>(info.count, 1), err);
  uih_stripe_decoder_set_context(dec_, gen_->dicts());  // the dictionaries its stripes may name
  if (rc == UIH_OK)
    rc = uih_stripe_decode(dec_, bytes, st.len, 0, UIH_DECODE_TO_END, UIH_DECODE_VERIFY_CHECKSUM, *out, err);
  if (rc != UIH_OK) {
    uih_error_prefix(err, "store %s: generation %u: stripe of user %" PRIu64 " group %u at ts %" PRId64 ": ",
                     shard_->c_str(), gen_->number(), user_, group_->id, st.start);
    return rc;
  }
  stripes_++;
  *more = true;
  return UIH_OK;
}

bool InTimeOrder(const uih_batch* b) {
  const int64_t* ts = uih_batch_timestamps(b);
  for (uint32_t r = 1; r < b->count; r++)
    if (ts[r - 1] > ts[r]) return false;
  return true;
}

void RowsWithin(const uih_batch* b, int64_t from, int64_t to, uint32_t* first, uint32_t* last) {
  const int64_t* ts = uih_batch_timestamps(b);
  *last = static_cast<uint32_t>(std::upper_bound(ts, ts + b->count, to) - ts);
  *first = static_cast<uint32_t>(std::lower_bound(ts, ts + *last, from) - ts);
}

Gather::~Gather() {
  for (Part& p : parts_) uih_batch_free(p.b);
}

uih_batch** Gather::Next() {
  if (used_ == parts_.size()) parts_.emplace_back();
  Part& p = parts_[used_++];
  p.from = p.to = 0;
  return &p.b;
}

void Gather::Take(uint32_t from, uint32_t to) {
  Part& p = parts_[used_ - 1];
  p.from = from;
  p.to = to;
  count_ += to - from;
}

int Gather::AppendNewest(uint32_t n, uih_batch* out, uih_error* err) const {
  uint32_t skip = count_ > n ? count_ - n : 0;  // the oldest ones
  if (count_ - skip > out->capacity - out->count)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "%u events, the batch has room for %u", count_ - skip,
                         out->capacity - out->count);
  for (size_t k = used_; k-- > 0;) {
    const Part& p = parts_[k];
    const uint32_t drop = std::min(skip, p.to - p.from);
    skip -= drop;
    if (p.from + drop == p.to) continue;
    int rc = uih_batch_copy_rows(out, p.b, p.from + drop, p.to, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

}  // namespace uih
