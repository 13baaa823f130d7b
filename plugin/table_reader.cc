// UihTable reader: opens the footer, properties and the engine's index;
// serves Get, MultiGet (batched reads), iterators (both directions),
// checksums and size estimates.
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "db/dbformat.h"
#include "db/pinned_iterators_manager.h"
#include "file/random_access_file_reader.h"
#include "memory/arena.h"
#include "monitoring/statistics.h"
#include "rocksdb/comparator.h"
#include "rocksdb/iostats_context.h"
#include "status.h"
#include "table_tail.h"
#include "table/format.h"
#include "table/get_context.h"
#include "table/internal_iterator.h"
#include "table/meta_blocks.h"
#include "table/sst_file_writer_collectors.h"
#include "table/table_builder.h"
#include "table/table_reader.h"
#include "table/multiget_context.h"
#include "uih/io.h"
#include "uih/table.h"
#include "uih_table.h"

namespace uih {

using namespace rocksdb;

namespace {

constexpr uint64_t kSeekFirstTrailer = ~uint64_t{0};  // sorts before every entry of a key

// BlockBasedTable's rule for the global sequence number of ingested files,
// with the property sizes checked.
Status GlobalSeqno(const TableProperties& props, SequenceNumber largest_seqno, SequenceNumber* out) {
  const auto& up = props.user_collected_properties;
  auto version = up.find(ExternalSstFilePropertyNames::kVersion);
  auto seqno = up.find(ExternalSstFilePropertyNames::kGlobalSeqno);
  *out = kDisableGlobalSequenceNumber;
  if (version == up.end()) {
    if (seqno != up.end()) return Status::Corruption("UihTable: global seqno property on a non-external file");
    return Status::OK();
  }
  if (version->second.size() != 4 || (seqno != up.end() && seqno->second.size() != 8))
    return Status::Corruption("UihTable: external file properties have the wrong size");
  uint32_t v = DecodeFixed32(version->second.data());
  if (v < 2) {
    if (seqno != up.end() || v != 1) return Status::Corruption("UihTable: bad external file version");
    return Status::OK();
  }
  SequenceNumber g = seqno != up.end() ? DecodeFixed64(seqno->second.data()) : 0;
  if (largest_seqno < kMaxSequenceNumber) {
    if (g == 0) g = largest_seqno;
    if (g != largest_seqno)
      return Status::Corruption("UihTable: global seqno ", std::to_string(g) + " differs from the file's " +
                                                               std::to_string(largest_seqno));
  }
  if (g > kMaxSequenceNumber) return Status::Corruption("UihTable: global seqno out of range");
  *out = g;
  return Status::OK();
}

// A cursor for one call: its key buffer on the stack unless keys are long.
class CallCursor {
 public:
  explicit CallCursor(const uih_table_index* idx) {
    size_t need = uih_table_index_max_key(idx) + 1;
    uint8_t* buf = stack_;
    if (need > sizeof stack_) {
      heap_.reset(new uint8_t[need]);
      buf = heap_.get();
    }
    uih_table_cursor_init_buf(&c, idx, buf, std::max(need, sizeof stack_), nullptr);
  }
  uih_table_cursor c;

 private:
  uint8_t stack_[256];
  std::unique_ptr<uint8_t[]> heap_;
};

// Reads [offset, offset + n) of the file; the result may point into
// `scratch` or (mmap) into the file mapping.
IOStatus ReadExact(RandomAccessFileReader* file, uint64_t offset, size_t n, char* scratch, Slice* out) {
  IOStatus s = file->Read(IOOptions(), offset, n, out, scratch, /*aligned_buf=*/nullptr, Env::IO_TOTAL);
  if (s.ok() && out->size() != n)
    return IOStatus::Corruption("UihTable: short read of " + std::to_string(n) + " bytes at offset " +
                                std::to_string(offset) + " (file truncated?)");
  return s;
}

class UihTableReader : public TableReader {
 public:
  UihTableReader(const UihTableOptions& options, std::unique_ptr<RandomAccessFileReader>&& file)
      : options_(options), file_(std::move(file)) {}
  ~UihTableReader() override {
    uih_table_index_free(index_);
    if (fd_ >= 0) close(fd_);
  }

  Status Open(const TableReaderOptions& tro, uint64_t file_size);

  InternalIterator* NewIterator(const ReadOptions& ro, const SliceTransform* prefix_extractor, Arena* arena,
                                bool skip_filters, TableReaderCaller caller, size_t compaction_readahead_size,
                                bool allow_unprepared_value) override;
  uint64_t ApproximateOffsetOf(const Slice& key, TableReaderCaller caller) override;
  // Data offset of the first entry of `user_key` or after it.
  uint64_t OffsetOfUserKey(const std::string& user_key) const;
  uint64_t ApproximateSize(const Slice& start, const Slice& end, TableReaderCaller caller) override {
    uint64_t a = ApproximateOffsetOf(start, caller), b = ApproximateOffsetOf(end, caller);
    return b > a ? b - a : 0;
  }
  void SetupForCompaction() override {}
  std::shared_ptr<const TableProperties> GetTableProperties() const override { return props_; }
  size_t ApproximateMemoryUsage() const override { return uih_table_index_memory(index_); }
  Status Get(const ReadOptions& ro, const Slice& key, GetContext* get_context,
             const SliceTransform* prefix_extractor, bool skip_filters) override;
  // All keys' reads submitted together (io_uring where available).
  void MultiGet(const ReadOptions& ro, const MultiGetContext::Range* range,
                const SliceTransform* prefix_extractor, bool skip_filters) override;
  Status VerifyChecksum(const ReadOptions& ro, TableReaderCaller caller) override;
  // Warms the entries with internal keys in [begin, end] (null: open):
  // into the value cache when there is one (checksums verified), else the
  // file system reads their bytes ahead.
  Status Prefetch(const Slice* begin, const Slice* end) override;
  // A text dump for sst_dump --command=raw: the file's sections, the index,
  // then every entry with its value (checksums verified).
  Status DumpTable(WritableFile* out) override;

  // ---- shared with the iterator ----
  const uih_table_index* index() const { return index_; }
  RandomAccessFileReader* file() const { return file_.get(); }
  uint64_t data_size() const { return data_size_; }

  // The trailer an entry shows: its own, or with the global seqno applied.
  uint64_t Trailer(const uih_table_cursor& c) const {
    return global_seqno_ == kDisableGlobalSequenceNumber ? c.trailer
                                                         : PackSequenceAndType(global_seqno_, ExtractType(c));
  }
  static ValueType ExtractType(const uih_table_cursor& c) { return static_cast<ValueType>(c.trailer & 0xff); }

  // First entry >= the internal key `target`, seqno rule applied.
  void Seek(uih_table_cursor* c, const Slice& target) const {
    Slice uk = ExtractUserKey(target);
    uint64_t tt = ExtractInternalKeyFooter(target);
    if (global_seqno_ == kDisableGlobalSequenceNumber) {
      uih_table_cursor_seek(c, U8(uk), uk.size(), tt);
      return;
    }
    uih_table_cursor_seek(c, U8(uk), uk.size(), kSeekFirstTrailer);
    while (uih_table_cursor_valid(c) && SameKey(*c, uk) && Trailer(*c) > tt) uih_table_cursor_next(c);
  }
  // Last entry <= `target`.
  void SeekForPrev(uih_table_cursor* c, const Slice& target) const {
    Slice uk = ExtractUserKey(target);
    uint64_t tt = ExtractInternalKeyFooter(target);
    if (global_seqno_ == kDisableGlobalSequenceNumber) {
      uih_table_cursor_seek_prev(c, U8(uk), uk.size(), tt);
      return;
    }
    uih_table_cursor_seek_prev(c, U8(uk), uk.size(), 0);
    while (uih_table_cursor_valid(c) && SameKey(*c, uk) && Trailer(*c) < tt) uih_table_cursor_prev(c);
  }
  static bool SameKey(const uih_table_cursor& c, const Slice& uk) {
    return c.klen == uk.size() && (uk.empty() || memcmp(c.key, uk.data(), c.klen) == 0);
  }
  static const uint8_t* U8(const Slice& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

  // ---- the value cache (options_.cache; null when there is none) ----
  Cache* cache() const { return options_.cache.get(); }
  Cache::Handle* CacheLookup(uint64_t voff) const {
    char key[16];
    return cache()->Lookup(CacheKey(voff, key));
  }
  // Inserts a copy of a verified value; returns a handle (nullptr when the
  // cache refused it), which the caller releases.
  Cache::Handle* CacheInsert(uint64_t voff, const Slice& value) const {
    char key[16];
    auto* copy = new std::string(value.data(), value.size());
    Cache::Handle* h = nullptr;
    if (!cache()->Insert(CacheKey(voff, key), copy, copy->size() + sizeof(std::string), &DeleteCached, &h).ok())
      return nullptr;  // the cache deleted the copy
    return h;
  }
  Slice CachedValue(Cache::Handle* h) const { return Slice(*static_cast<std::string*>(cache()->Value(h))); }
  static void ReleaseHandle(void* cache, void* handle) {
    static_cast<Cache*>(cache)->Release(static_cast<Cache::Handle*>(handle));
  }

  Status CheckValue(const Slice& v, uint32_t stored, uint64_t offset) const {
    if (uih_table_value_checksum(v.data(), v.size()) == stored) return Status::OK();
    return Status::Corruption("UihTable: value checksum mismatch at data offset " + std::to_string(offset) +
                              " in " + file_->file_name());
  }

 private:
  UihTableOptions options_;
  std::unique_ptr<RandomAccessFileReader> file_;
  uih_table_index* index_ = nullptr;
  std::shared_ptr<const TableProperties> props_;
  SequenceNumber global_seqno_ = kDisableGlobalSequenceNumber;
  uint64_t data_size_ = 0;
  uint64_t cache_id_ = NextCacheId();  // this reader's values in a shared cache
  int fd_ = -1;  // the file opened again for batched reads; -1: use file_

  // The file's sections, for DumpTable.
  BlockHandle meta_handle_, props_handle_;
  uint64_t tail_at_ = 0, footer_at_ = 0;
  // Where batched reads record the tickers RandomAccessFileReader would.
  Statistics* stats_ = nullptr;
  bool last_level_ = false;

  // Calls visit(cursor, value) -> Status for entries [first, end) in order,
  // after checking each value's checksum; stops at the first error.
  template <class F>
  Status ForEachValue(uint64_t first, uint64_t end, F&& visit) const;

  // A lookup group: the GetContexts of one key's lookups in a MultiGet
  // batch (its duplicates), or of one Get. They are served together, each
  // value fetched once and offered to each, and end with one status: see
  // MultiGet for why that matters.
  struct Lookups {
    GetContext* const* ctx;
    size_t n;  // 1..MultiGetContext::MAX_BATCH_SIZE
  };
  // Serves the entries of `uk` from the cursor on, each from the value
  // cache or one read of its own.
  Status ServeKey(const ReadOptions& ro, uih_table_cursor* c, const Slice& uk, const Lookups& l) const;
  // Serves the entries of `uk` from the `first`-th on, all read into `bytes`
  // (which starts at the first entry's value).
  Status SaveEntries(const ReadOptions& ro, uint64_t first, const Slice& uk, const char* bytes,
                     const Lookups& l) const;
  // Offers one entry to the lookups still collecting (a bit each in
  // `active`); returns those that still are. A cached value is pinned by
  // the first of them (the handle moves to its result); the others copy.
  static uint64_t Offer(const Lookups& l, uint64_t active, const ParsedInternalKey& pk, const Slice& value,
                        Cleanable* pinner) {
    uint64_t still = 0;
    bool pinned = false;
    for (size_t i = 0; i < l.n; i++) {
      if (!(active >> i & 1)) continue;
      bool matched = false;
      if (l.ctx[i]->SaveValue(pk, value, &matched, pinned ? nullptr : pinner)) still |= uint64_t{1} << i;
      pinned = true;
    }
    return still;
  }
  static uint64_t All(const Lookups& l) { return l.n >= 64 ? ~uint64_t{0} : (uint64_t{1} << l.n) - 1; }

  static uint64_t NextCacheId() {
    static std::atomic<uint64_t> next{1};
    return next++;
  }
  Slice CacheKey(uint64_t voff, char* buf) const {
    EncodeFixed64(buf, cache_id_);
    EncodeFixed64(buf + 8, voff);
    return Slice(buf, 16);
  }
  static void DeleteCached(const Slice&, void* value) { delete static_cast<std::string*>(value); }
};

// ---- iterator -----------------------------------------------------------------

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
  // read), else doubling from the first value's size up to the maximum as
  // a scan goes on.
  uint64_t ForwardWindow(uint64_t need) {
    if (has_upper_ && readahead_ == 0) {
      if (upper_offset_ == kUnknown) upper_offset_ = t_->OffsetOfUserKey(upper_);  // once per iterator
      if (upper_offset_ > c_.voff)  // never less than the value itself
        return std::max<uint64_t>(need, std::min<uint64_t>(upper_offset_ - c_.voff, max_readahead_));
    }
    readahead_ = readahead_ == 0 ? kFirstWindow : std::min<size_t>(2 * readahead_, max_readahead_);
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
    if (IsValuePinned()) pinned_->PinPtr(new CachePin{t_->cache(), handle_}, &UihTableIterator::ReleasePin);
    else t_->cache()->Release(handle_);
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
    if (!in_window && t_->cache() && (handle_ = t_->CacheLookup(c_.voff))) {
      value_ = t_->CachedValue(handle_);  // verified when it was inserted
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
        readahead_ = readahead_ == 0 ? kFirstWindow : std::min<size_t>(2 * readahead_, max_readahead_);
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
        buf_cap_ = std::max<uint64_t>(len, kFirstWindow);
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
    if (verify_) {
      uint32_t stored;
      memcpy(&stored, p + c_.vlen, sizeof stored);
      status_ = t_->CheckValue(value_, stored, c_.voff);
    }
    if (status_.ok() && t_->cache() && fill_cache_ && verify_) {
      Cache::Handle* h = t_->CacheInsert(c_.voff, value_);  // only verified values are cached
      if (h) t_->cache()->Release(h);
    }
  }

  static constexpr size_t kFirstWindow = 8 * 1024;

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

// ---- reader -------------------------------------------------------------------

// Reads a whole block into `buf` and returns it.
static Status ReadBlock(RandomAccessFileReader* file, const BlockHandle& h, std::string* buf, Slice* out) {
  buf->resize(h.size());
  return ReadExact(file, h.offset(), h.size(), &(*buf)[0], out);
}

Status UihTableReader::Open(const TableReaderOptions& tro, uint64_t file_size) {
  if (tro.internal_comparator.user_comparator()->GetId() != BytewiseComparator()->GetId())
    return Status::NotSupported("UihTable stores keys in bytewise order only");
  const std::string& name = file_->file_name();
  auto corrupt = [&](const std::string& what) { return Status::Corruption("UihTable: " + name + ": " + what); };

  // Layout from the end: footer, tail, metaindex, properties, index, data.
  // Each block is checked before RocksDB's parsers see it.
  Footer footer;
  Status s = ReadFooterFromFile(IOOptions(), file_.get(), nullptr, file_size, &footer, UIH_TABLE_MAGIC);
  if (!s.ok()) return s;
  if (footer.format_version() != 1)
    return Status::NotSupported("UihTable: " + name + ": format version " + std::to_string(footer.format_version()));
  const uint64_t footer_at = file_size - Footer::kNewVersionsEncodedLength;
  if (footer_at < kTableTailSize) return corrupt("too short for the checksum tail");
  const uint64_t tail_at = footer_at - kTableTailSize;
  std::string tail_buf(kTableTailSize, '\0');
  Slice tail_bytes;
  s = ReadExact(file_.get(), tail_at, kTableTailSize, &tail_buf[0], &tail_bytes);
  TableTail tail;
  if (s.ok()) s = DecodeTableTail(tail_bytes, &tail);
  if (!s.ok()) return s;

  const BlockHandle& mh = footer.metaindex_handle();
  if (mh.offset() > tail_at || mh.size() != tail_at - mh.offset()) return corrupt("metaindex handle is off");
  std::string buf;
  Slice bytes;
  s = ReadBlock(file_.get(), mh, &buf, &bytes);
  if (!s.ok()) return s;
  if (XXH3_64bits(bytes.data(), bytes.size()) != tail.metaindex_sum) return corrupt("metaindex checksum mismatch");

  BlockHandle ih, ph;
  s = FindMetaBlockInFile(file_.get(), file_size, UIH_TABLE_MAGIC, tro.ioptions, UIH_TABLE_INDEX_NAME, &ih);
  if (s.ok()) s = FindMetaBlockInFile(file_.get(), file_size, UIH_TABLE_MAGIC, tro.ioptions, kPropertiesBlockName, &ph);
  if (s.IsNotFound()) return corrupt(s.ToString());
  if (!s.ok()) return s;
  if (ph.offset() > mh.offset() || ph.size() != mh.offset() - ph.offset() || ih.offset() > ph.offset() ||
      ih.size() != ph.offset() - ih.offset())
    return corrupt("block handles do not tile the file");
  s = ReadBlock(file_.get(), ph, &buf, &bytes);
  if (!s.ok()) return s;
  if (PropertiesChecksum(bytes, tail.seqno_at) != tail.properties_sum) return corrupt("properties checksum mismatch");
  std::unique_ptr<TableProperties> props;
  s = ReadTableProperties(file_.get(), file_size, UIH_TABLE_MAGIC, tro.ioptions, &props);
  if (!s.ok()) return s;
  s = GlobalSeqno(*props, tro.largest_seqno, &global_seqno_);
  if (!s.ok()) return s;

  s = ReadBlock(file_.get(), ih, &buf, &bytes);
  if (!s.ok()) return s;
  uih_error err{};
  if (uih_table_index_open(U8(bytes), bytes.size(), ih.offset(), &index_, &err) != UIH_OK)
    return ToStatus(err.code, (name + ": " + uih_error_message(&err)).c_str());
  data_size_ = ih.offset();
  props_ = std::move(props);
  meta_handle_ = mh;
  props_handle_ = ph;
  tail_at_ = tail_at;
  footer_at_ = footer_at;
  stats_ = tro.ioptions.stats;
  last_level_ = tro.level >= 0 && tro.level == tro.ioptions.num_levels - 1;
  // Batched reads bypass RocksDB's file layer, so only for plain POSIX files
  // read through the page cache.
  if (tro.ioptions.fs.get() == FileSystem::Default().get() && !tro.env_options.use_direct_reads &&
      !tro.env_options.use_mmap_reads)
    fd_ = open(name.c_str(), O_RDONLY | O_CLOEXEC);
  return Status::OK();
}

InternalIterator* UihTableReader::NewIterator(const ReadOptions& ro, const SliceTransform*, Arena* arena,
                                              bool, TableReaderCaller caller, size_t compaction_readahead_size,
                                              bool) {
  size_t ra = std::max(options_.readahead_size, compaction_readahead_size);
  bool keys_only = caller == TableReaderCaller::kExternalSSTIngestion;
  if (arena)
    return new (arena->AllocateAligned(sizeof(UihTableIterator))) UihTableIterator(this, ro, ra, keys_only);
  return new UihTableIterator(this, ro, ra, keys_only);
}

uint64_t UihTableReader::ApproximateOffsetOf(const Slice& key, TableReaderCaller) {
  CallCursor cc(index_);
  Seek(&cc.c, key);
  return uih_table_cursor_valid(&cc.c) ? cc.c.voff : data_size_;
}

uint64_t UihTableReader::OffsetOfUserKey(const std::string& user_key) const {
  CallCursor cc(index_);
  uih_table_cursor_seek(&cc.c, U8(user_key), user_key.size(), kSeekFirstTrailer);
  return uih_table_cursor_valid(&cc.c) ? cc.c.voff : data_size_;
}

Status UihTableReader::Get(const ReadOptions& ro, const Slice& key, GetContext* get_context,
                           const SliceTransform*, bool) {
  CallCursor cc(index_);
  Seek(&cc.c, key);
  Slice uk = ExtractUserKey(key);
  if (!uih_table_cursor_valid(&cc.c) || !SameKey(cc.c, uk)) return Status::OK();  // not in this file
  return ServeKey(ro, &cc.c, uk, Lookups{&get_context, 1});
}

Status UihTableReader::ServeKey(const ReadOptions& ro, uih_table_cursor* c, const Slice& uk,
                                const Lookups& l) const {
  // One read buffer per thread: a lookup allocates nothing once it has
  // grown to the largest value (GetContext copies what it keeps before we
  // return).
  thread_local std::string scratch;
  for (uint64_t active = All(l); active && uih_table_cursor_valid(c) && SameKey(*c, uk); uih_table_cursor_next(c)) {
    // The value: from the cache, else from the file (then cached when asked).
    Cleanable pinner;
    Slice value;
    Cache::Handle* h = cache() ? CacheLookup(c->voff) : nullptr;
    if (!h && ro.read_tier == kBlockCacheTier) {  // the key is here, but reading it needs I/O
      for (size_t i = 0; i < l.n; i++)
        if (active >> i & 1) l.ctx[i]->MarkKeyMayExist();
      return Status::Incomplete("UihTable: reading the value needs I/O");
    }
    if (!h) {
      scratch.resize(c->vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE);
      Slice bytes;
      IOStatus io = ReadExact(file_.get(), c->voff, scratch.size(), scratch.data(), &bytes);
      if (!io.ok()) return io;
      value = Slice(bytes.data(), c->vlen);
      if (ro.verify_checksums) {
        uint32_t stored;
        memcpy(&stored, bytes.data() + c->vlen, sizeof stored);
        Status s = CheckValue(value, stored, c->voff);
        if (!s.ok()) return s;
      }
      if (cache() && ro.fill_cache && ro.verify_checksums) h = CacheInsert(c->voff, value);  // verified only
    }
    if (h) {
      value = CachedValue(h);
      pinner.RegisterCleanup(&UihTableReader::ReleaseHandle, cache(), h);
    }
    // A cached value is pinned (its handle moves to a result); a value read
    // from the file is copied.
    active = Offer(l, active, ParsedInternalKey(uk, Trailer(*c) >> 8, ExtractType(*c)), value,
                   h ? &pinner : nullptr);
  }
  return Status::OK();
}

// One io_uring reader and one pread reader per thread, for MultiGet.
static uih_io* ThreadIo(bool use_uring) {
  struct Holder {
    uih_io* readers[2] = {nullptr, nullptr};
    ~Holder() {
      for (uih_io* r : readers) uih_io_free(r);
    }
  };
  thread_local Holder h;
  uih_io*& io = h.readers[use_uring];
  if (!io && uih_io_create(64, use_uring ? 1 : 0, &io, nullptr) != UIH_OK) io = nullptr;
  return io;
}

Status UihTableReader::SaveEntries(const ReadOptions& ro, uint64_t first, const Slice& uk,
                                   const char* bytes, const Lookups& l) const {
  CallCursor cc(index_);
  uih_table_cursor& c = cc.c;
  uih_table_cursor_goto(&c, first);
  const uint64_t base = c.voff;
  for (uint64_t active = All(l); active && uih_table_cursor_valid(&c) && SameKey(c, uk); uih_table_cursor_next(&c)) {
    const char* p = bytes + (c.voff - base);
    Slice value(p, c.vlen);
    if (ro.verify_checksums) {
      uint32_t stored;
      memcpy(&stored, p + c.vlen, sizeof stored);
      Status s = CheckValue(value, stored, c.voff);
      if (!s.ok()) return s;
      if (cache() && ro.fill_cache) {
        Cache::Handle* h = CacheInsert(c.voff, value);
        if (h) cache()->Release(h);
      }
    }
    active = Offer(l, active, ParsedInternalKey(uk, Trailer(c) >> 8, ExtractType(c)), value, nullptr);
  }
  return Status::OK();
}

// RocksDB sorts a batch by user key, so the duplicates of a key are
// adjacent; each run of them is one lookup group, served by one fetch and
// ending with one status. RocksDB 7.8.3's FilePickerMultiGet relies on it:
// once a key that is the last of a file is done, it skips that key's
// duplicates without setting up their search in the next level. Were one
// duplicate's read to fail (done, IOError) and another's to succeed with a
// merge operand (not done), the second would search the next level with
// the previous level's bounds: an assertion in Debian's library
// (version_set.cc:736), a wrong file range without asserts.
// BlockBasedTable never splits them because duplicates share one block read.
void UihTableReader::MultiGet(const ReadOptions& ro, const MultiGetContext::Range* range,
                              const SliceTransform*, bool) {
  KeyContext* keys[MultiGetContext::MAX_BATCH_SIZE];
  GetContext* ctx[MultiGetContext::MAX_BATCH_SIZE];
  size_t nkeys = 0;
  for (auto it = range->begin(); it != range->end(); ++it, ++nkeys) {
    keys[nkeys] = &*it;
    ctx[nkeys] = it->get_context;
  }
  auto finish = [&](size_t from, size_t to, const Status& s) {
    for (size_t i = from; i < to; i++) *keys[i]->s = s;
  };
  // Batched reads need the file opened by us; otherwise each group is
  // served through RocksDB's file layer.
  uih_io* io = fd_ >= 0 && ro.read_tier != kBlockCacheTier ? ThreadIo(options_.use_io_uring) : nullptr;
  // Index lookups first: each group's entries are one contiguous byte range.
  struct Job {
    size_t from, to;  // the group: keys[from, to)
    uint64_t first;   // entry ordinal of the key's first entry
    std::string buf;
  };
  std::vector<Job> jobs;
  std::vector<uih_io_req> reqs;
  for (size_t from = 0, to; from < nkeys; from = to) {
    // Equal user keys in one batch carry one sequence number (one snapshot).
    const Slice& ikey = keys[from]->ikey;
    for (to = from + 1; to < nkeys && keys[to]->ikey == ikey; to++) {
    }
    const Lookups group{ctx + from, to - from};
    CallCursor cc(index_);
    uih_table_cursor& c = cc.c;
    Seek(&c, ikey);
    Slice uk = ExtractUserKey(ikey);
    if (!uih_table_cursor_valid(&c) || !SameKey(c, uk)) {
      finish(from, to, Status::OK());  // not in this file
      continue;
    }
    bool cached = false;
    if (io && cache()) {  // a cached value is served without I/O
      Cache::Handle* h = CacheLookup(c.voff);
      if (h) cache()->Release(h), cached = true;
    }
    if (!io || cached) {
      finish(from, to, ServeKey(ro, &c, uk, group));
      continue;
    }
    uint64_t first = c.pos, begin = c.voff, end = begin;
    for (; uih_table_cursor_valid(&c) && SameKey(c, uk); uih_table_cursor_next(&c))
      end = c.voff + c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    jobs.push_back(Job{from, to, first, std::string(end - begin, '\0')});
    reqs.push_back(uih_io_req{fd_, begin, static_cast<size_t>(end - begin), nullptr, 0});
  }
  if (reqs.empty()) return;
  for (size_t i = 0; i < jobs.size(); i++) reqs[i].buf = &jobs[i].buf[0];
  uih_io_read(io, reqs.data(), reqs.size(), nullptr);  // a ring failure falls back to pread inside
  // The batch's size, where RocksDB's own batched reads (MultiRead) put it.
  RecordInHistogram(stats_, MULTIGET_IO_BATCH_SIZE, reqs.size());
  // These reads bypass RandomAccessFileReader: count them where it would.
  IOStatsContext* iostats = get_iostats_context();
  for (size_t i = 0; i < jobs.size(); i++) {
    const Job& j = jobs[i];
    const uih_io_req& r = reqs[i];
    if (r.result > 0) {
      if (!iostats->disable_iostats) iostats->bytes_read += static_cast<uint64_t>(r.result);
      RecordTick(stats_, last_level_ ? LAST_LEVEL_READ_BYTES : NON_LAST_LEVEL_READ_BYTES,
                 static_cast<uint64_t>(r.result));
      RecordTick(stats_, last_level_ ? LAST_LEVEL_READ_COUNT : NON_LAST_LEVEL_READ_COUNT, 1);
    }
    Status s;
    if (r.result < 0) {
      s = IOStatus::IOError("UihTable: reading " + file_->file_name() + " at offset " + std::to_string(r.offset) +
                            ": " + strerror(static_cast<int>(-r.result)));
    } else if (static_cast<uint64_t>(r.result) != r.len) {
      s = Status::Corruption("UihTable: " + file_->file_name() + " is shorter than its index says");
    } else {
      s = SaveEntries(ro, j.first, ExtractUserKey(keys[j.from]->ikey), j.buf.data(), Lookups{ctx + j.from, j.to - j.from});
    }
    finish(j.from, j.to, s);
  }
}

template <class F>
Status UihTableReader::ForEachValue(uint64_t first, uint64_t end, F&& visit) const {
  // The index was verified at open; the values are read one window at a time.
  CallCursor cc(index_);
  uih_table_cursor& c = cc.c;
  std::string buf;
  Slice win;
  uint64_t win_off = 0;
  Status s;
  for (uih_table_cursor_goto(&c, first); s.ok() && uih_table_cursor_valid(&c) && c.pos < end;
       uih_table_cursor_next(&c)) {
    uint64_t need = uint64_t{c.vlen} + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    if (c.voff < win_off || c.voff + need > win_off + win.size()) {
      uint64_t len = std::min<uint64_t>(std::max<uint64_t>(need, 1 << 20), data_size_ - c.voff);
      buf.resize(len);
      s = ReadExact(file_.get(), c.voff, len, buf.data(), &win);
      win_off = c.voff;
      if (!s.ok()) break;
    }
    const char* p = win.data() + (c.voff - win_off);
    uint32_t stored;
    memcpy(&stored, p + c.vlen, sizeof stored);
    s = CheckValue(Slice(p, c.vlen), stored, c.voff);
    if (s.ok()) s = visit(c, Slice(p, c.vlen));
  }
  return s;
}

Status UihTableReader::VerifyChecksum(const ReadOptions&, TableReaderCaller) {
  return ForEachValue(0, uih_table_index_entries(index_),
                      [](const uih_table_cursor&, const Slice&) { return Status::OK(); });
}

Status UihTableReader::Prefetch(const Slice* begin, const Slice* end) {
  if (begin && end && InternalKeyComparator(BytewiseComparator()).Compare(*begin, *end) > 0)
    return Status::InvalidArgument(*begin, *end);
  // Entries [first, last): the first >= begin up to the last <= end.
  CallCursor cc(index_);
  uint64_t first = 0, last = uih_table_index_entries(index_);
  if (begin) {
    Seek(&cc.c, *begin);
    first = cc.c.pos;  // == entries when past the end
  }
  if (end) {
    SeekForPrev(&cc.c, *end);
    last = uih_table_cursor_valid(&cc.c) ? cc.c.pos + 1 : 0;
  }
  if (first >= last) return Status::OK();
  if (cache()) {  // load the values, verified, into the value cache
    return ForEachValue(first, last, [&](const uih_table_cursor& c, const Slice& value) {
      Cache::Handle* h = CacheInsert(c.voff, value);
      if (h) cache()->Release(h);
      return Status::OK();
    });
  }
  // No cache of ours: ask the file system to read the byte range ahead.
  uint64_t from, to;
  uih_table_cursor_goto(&cc.c, first);
  from = cc.c.voff;
  uih_table_cursor_goto(&cc.c, last - 1);
  to = cc.c.voff + cc.c.vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
  IOStatus s = file_->Prefetch(from, static_cast<size_t>(to - from), Env::IO_TOTAL);
  return s.IsNotSupported() ? Status::OK() : Status(s);  // e.g. direct I/O: nothing to warm
}

Status UihTableReader::DumpTable(WritableFile* out) {
  auto section = [](const char* name, uint64_t from, uint64_t to) {
    char line[128];
    snprintf(line, sizeof line, "  %-11s [%llu, %llu)  %llu bytes\n", name, static_cast<unsigned long long>(from),
             static_cast<unsigned long long>(to), static_cast<unsigned long long>(to - from));
    return std::string(line);
  };
  const uint64_t entries = uih_table_index_entries(index_);
  const size_t memory = uih_table_index_memory(index_);
  std::string head = "UihTable " + file_->file_name() + "\n--------------------------------------\n";
  head += section("data", 0, data_size_);
  head += section("index", data_size_, props_handle_.offset());
  head += section("properties", props_handle_.offset(), meta_handle_.offset());
  head += section("metaindex", meta_handle_.offset(), tail_at_);
  head += section("tail", tail_at_, footer_at_);
  head += section("footer", footer_at_, footer_at_ + Footer::kNewVersionsEncodedLength);
  head += "index layout: ";
  head += uih_table_index_layout(index_) == UIH_TABLE_LAYOUT_NUMERIC ? "numeric" : "prefix";
  head += ", " + std::to_string(entries) + " entries, " + std::to_string(memory) + " bytes in memory";
  if (entries) {
    char per[48];
    snprintf(per, sizeof per, " (%.2f per entry)", static_cast<double>(memory) / static_cast<double>(entries));
    head += per;
  }
  head += "\nglobal sequence number: ";
  head += global_seqno_ == kDisableGlobalSequenceNumber ? "none" : std::to_string(global_seqno_);
  head += "\n\nEntries (value offset, length; user key @ sequence : type => value, in hex):\n"
          "--------------------------------------\n";
  Status s = out->Append(head);
  std::string line;
  if (s.ok())
    s = ForEachValue(0, uih_table_index_entries(index_), [&](const uih_table_cursor& c, const Slice& value) {
      uint64_t trailer = Trailer(c);
      line = "  " + std::to_string(c.voff) + " " + std::to_string(c.vlen) + "  ";
      line += Slice(reinterpret_cast<const char*>(c.key), c.klen).ToString(true);
      line += " @ " + std::to_string(trailer >> 8) + " : " + std::to_string(trailer & 0xff) + " => ";
      line += value.ToString(true);
      line += "\n";
      return out->Append(line);
    });
  if (s.ok()) s = out->Flush();
  return s;
}

}  // namespace

Status OpenUihTable(const UihTableOptions& options, const ReadOptions&, const TableReaderOptions& tro,
                    std::unique_ptr<RandomAccessFileReader>&& file, uint64_t file_size,
                    std::unique_ptr<TableReader>* reader) {
  std::unique_ptr<UihTableReader> t(new UihTableReader(options, std::move(file)));
  Status s = t->Open(tro, file_size);
  if (s.ok()) *reader = std::move(t);
  return s;
}

}  // namespace uih
