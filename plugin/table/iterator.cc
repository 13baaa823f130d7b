// UihTable's iterator: every positioning call, values read ahead in the
// direction of travel (one read per window, the engine's read-ahead rule),
// reverse scans that keep the decoded restart run, values pinned while
// RocksDB pins them.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "db/pinned_iterators_manager.h"
#include "memory/arena.h"
#include "table/internal_iterator.h"
#include "reader.h"

namespace uih {

using namespace rocksdb;

namespace {


class UihTableIterator : public InternalIterator {
 public:
  // `keys_only`: values are read only when value() asks (see lazy_).
  UihTableIterator(const UihTableReader* t, const ReadOptions& ro, size_t readahead, bool keys_only)
      : t_(t),
        lazy_(keys_only),
        verify_(ro.verify_checksums),
        fill_cache_(ro.fill_cache),
        no_io_(ro.read_tier == kBlockCacheTier),
        max_readahead_(std::max<size_t>(readahead, 1)) {
    if (ro.iterate_upper_bound) upper_ = ro.iterate_upper_bound->ToString();
    has_upper_ = ro.iterate_upper_bound != nullptr;
  }
  ~UihTableIterator() override {
    DropHandle();
    delete[] buf_;
    uih_table_backstep_free(back_);
  }

  bool Valid() const override { return status_.ok() && uih_table_cursor_valid(&c_); }
  void SeekToFirst() override { Move([&] { uih_table_cursor_first(&c_); }, true); }
  void SeekToLast() override { Move([&] { uih_table_cursor_last(&c_); }, false); }
  void Seek(const Slice& target) override { Move([&] { t_->Seek(&c_, target); }, true); }
  void SeekForPrev(const Slice& target) override { Move([&] { t_->SeekForPrev(&c_, target); }, false); }

  void Next() override {
    uih_table_cursor_next(&c_);
    Load(true);
  }
  void Prev() override {
    // The first step back sets up the run memory a reverse scan reuses
    // (none for the numeric layout, which steps back directly).
    if (!back_tried_) back_ = uih_table_backstep_create(t_->index()), back_tried_ = true;
    uih_table_cursor_prev_with(&c_, back_);
    Load(false);
  }
  Slice key() const override { return Slice(key_); }
  Slice value() const override {
    if (value_pending_) const_cast<UihTableIterator*>(this)->LoadValue(true);
    return value_;
  }
  Status status() const override { return status_; }

  // Keys are rebuilt per entry (the global seqno may rewrite them), so they
  // are not pinned. Values are: while pinning is on, a read window that the
  // iterator moves away from is handed to the manager instead of reused.
  void SetPinnedItersMgr(PinnedIteratorsManager* mgr) override { pinned_ = mgr; }
  bool IsKeyPinned() const override { return false; }
  bool IsValuePinned() const override { return pinned_ && pinned_->PinningEnabled(); }

 private:
  template <class F>
  void Move(F f, bool forward) {
    status_ = Status::OK();
    readahead_ = 0;  // a seek starts a new run: read what it needs, then grow
    f();
    Load(forward);
  }

  // Bytes to read for a window starting at the current value (forward):
  // up to the upper bound when there is one (a bounded range read is one
  // read), else the engine's read-ahead (uih_table_window_next).
  uint64_t ForwardWindow(uint64_t need) {
    if (has_upper_ && readahead_ == 0) {
      if (upper_offset_ == kUnknown) upper_offset_ = t_->OffsetOfUserKey(upper_);  // once per iterator
      if (upper_offset_ > c_.voff)  // never less than the value itself
        return std::max<uint64_t>(need, std::min<uint64_t>(upper_offset_ - c_.voff, max_readahead_));
    }
    readahead_ = uih_table_window_next(readahead_, max_readahead_);
    return std::max<uint64_t>(need, readahead_);
  }

  static void ReleaseBuffer(void* p) { delete[] static_cast<char*>(p); }

  // The cache handle behind value_, if it came from the cache: released
  // when the iterator moves on, or handed to the pinning manager.
  struct CachePin {
    Cache* cache;
    Cache::Handle* handle;
  };
  static void ReleasePin(void* p) {
    auto* pin = static_cast<CachePin*>(p);
    pin->cache->Release(pin->handle);
    delete pin;
  }
  void DropHandle() {
    if (!handle_) return;
    if (IsValuePinned()) pinned_->PinPtr(new CachePin{t_->values().cache(), handle_}, &UihTableIterator::ReleasePin);
    else t_->values().Release(handle_);
    handle_ = nullptr;
  }

  // Builds key() and value() for the current entry; reads ahead in the
  // direction of travel so a scan is one read per window, not per value.
  void Load(bool forward) {
    DropHandle();
    value_pending_ = false;
    if (!uih_table_cursor_valid(&c_)) return;
    key_.assign(reinterpret_cast<const char*>(c_.key), c_.klen);
    PutFixed64(&key_, t_->Trailer(c_));
    // An entry at or past the upper bound is where a bounded scan stops:
    // its value is read only if someone asks for it.
    if (lazy_ || (has_upper_ && forward &&
                  Slice(reinterpret_cast<const char*>(c_.key), c_.klen).compare(Slice(upper_)) >= 0)) {
      value_pending_ = true;
      value_ = Slice();
      return;
    }
    LoadValue(forward);
  }

  void LoadValue(bool forward) {
    value_pending_ = false;
    uint64_t need = uint64_t{c_.vlen} + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    bool in_window = c_.voff >= win_off_ && c_.voff + need <= win_off_ + win_.size();
    if (!in_window && t_->values().enabled() && (handle_ = t_->values().Lookup(c_.voff))) {
      value_ = t_->values().Value(handle_);  // verified when it was inserted
      return;
    }
    if (!in_window && no_io_) {
      status_ = Status::Incomplete("UihTable: the value is not cached and reading it needs I/O");
      return;
    }
    if (!in_window) {
      uint64_t start = c_.voff;
      uint64_t len;
      if (forward) {
        len = std::min<uint64_t>(ForwardWindow(need), t_->data_size() - start);
      } else {
        readahead_ = uih_table_window_next(readahead_, max_readahead_);
        len = std::max<uint64_t>(need, readahead_);
        uint64_t end = c_.voff + need;
        start = end > len ? end - len : 0;
        len = end - start;
      }
      if (buf_ && IsValuePinned()) {
        pinned_->PinPtr(buf_, &UihTableIterator::ReleaseBuffer);  // values still point into it
        buf_ = nullptr;
      }
      if (!buf_ || buf_cap_ < len) {  // not zeroed: the read fills it
        delete[] buf_;
        buf_cap_ = std::max<uint64_t>(len, UIH_TABLE_FIRST_WINDOW);
        buf_ = new char[buf_cap_];
      }
      IOStatus s = ReadExact(t_->file(), start, len, buf_, &win_);
      if (!s.ok()) {
        status_ = s;
        win_ = Slice();
        return;
      }
      win_off_ = start;
    }
    const char* p = win_.data() + (c_.voff - win_off_);
    value_ = Slice(p, c_.vlen);
    status_ = t_->CheckAndFill(p, c_.vlen, c_.voff, verify_, fill_cache_);
  }


  const UihTableReader* t_;
  // Ingestion (7.8.3's GetIngestedFileInfo) reads only the first and last
  // keys, and takes an iterator that is not Valid() after SeekToFirst for
  // an empty file without looking at its status: were a damaged first value
  // to stop the iterator, the file would be ingested with empty bounds and
  // its keys would vanish from Get. The index is verified at open, so keys
  // never fail; a damaged value is reported when it is read.
  bool lazy_;
  bool verify_, fill_cache_, no_io_;
  size_t max_readahead_;
  Cache::Handle* handle_ = nullptr;
  bool value_pending_ = false;  // value_ not read yet (lazy_, or an entry past the upper bound)
  static constexpr uint64_t kUnknown = ~uint64_t{0};
  uint64_t upper_offset_ = kUnknown;  // data offset of the upper bound
  size_t readahead_ = 0;  // the last window's size; 0 right after a seek
  std::string upper_;     // ReadOptions::iterate_upper_bound, a user key
  bool has_upper_ = false;
  uih_table_backstep* back_ = nullptr;  // made on the first Prev(); may stay null
  bool back_tried_ = false;
  CallCursor cur_{t_->index()};  // keys up to 255 bytes (UIH keys are 18) live inline
  uih_table_cursor& c_ = cur_.c;
  Status status_;
  std::string key_;
  Slice value_;
  char* buf_ = nullptr;  // read window of buf_cap_ bytes (unused when the file is mmapped)
  uint64_t buf_cap_ = 0;
  Slice win_;
  uint64_t win_off_ = 0;
  PinnedIteratorsManager* pinned_ = nullptr;
};

}  // namespace

InternalIterator* UihTableReader::NewIterator(const ReadOptions& ro, const SliceTransform*, Arena* arena,
                                              bool, TableReaderCaller caller, size_t compaction_readahead_size,
                                              bool) {
  size_t ra = std::max(options_.readahead_size, compaction_readahead_size);
  bool keys_only = caller == TableReaderCaller::kExternalSSTIngestion;
  if (arena)
    return new (arena->AllocateAligned(sizeof(UihTableIterator))) UihTableIterator(this, ro, ra, keys_only);
  return new UihTableIterator(this, ro, ra, keys_only);
}

}  // namespace uih
