// UihTable's reader: opens the footer, properties and the engine's index;
// serves Get and MultiGet (a batch's reads submitted together), checksums,
// prefetch, size estimates and the sst_dump dump. The iterator is
// iterator.cc; which bytes hold which entries, value checks and read
// windows are the engine's (uih/table.h).
#include "reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "monitoring/statistics.h"
#include "rocksdb/comparator.h"
#include "rocksdb/iostats_context.h"
#include "uih_plugin/generation_files.h"
#include "uih_plugin/status.h"
#include "table/meta_blocks.h"
#include "table/sst_file_writer_collectors.h"
#include "table/table_builder.h"
#include "tail.h"
#include "uih/io.h"

namespace uih {

using namespace rocksdb;

namespace {

// BlockBasedTable's rule for the global sequence number of ingested files,
// with the property sizes checked.
Status GlobalSeqno(const TableProperties& props, SequenceNumber largest_seqno, SequenceNumber* out) {
  const auto& up = props.user_collected_properties;
  auto version = up.find(ExternalSstFilePropertyNames::kVersion);
  auto seqno = up.find(ExternalSstFilePropertyNames::kGlobalSeqno);
  *out = kDisableGlobalSequenceNumber;
  if (version == up.end()) {
    if (seqno != up.end()) return TableCorruption("global seqno property on a non-external file");
    return Status::OK();
  }
  if (version->second.size() != 4 || (seqno != up.end() && seqno->second.size() != 8))
    return TableCorruption("external file properties have the wrong size");
  uint32_t v = DecodeFixed32(version->second.data());
  if (v < 2) {
    if (seqno != up.end() || v != 1) return TableCorruption("bad external file version");
    return Status::OK();
  }
  SequenceNumber g = seqno != up.end() ? DecodeFixed64(seqno->second.data()) : 0;
  if (largest_seqno < kMaxSequenceNumber) {
    if (g == 0) g = largest_seqno;
    if (g != largest_seqno)
      return TableCorruption("global seqno " + std::to_string(g) + " differs from the file's " +
                             std::to_string(largest_seqno));
  }
  if (g > kMaxSequenceNumber) return TableCorruption("global seqno out of range");
  *out = g;
  return Status::OK();
}

// One io_uring reader and one pread reader per thread, for MultiGet.
uih_io* ThreadIo(bool use_uring) {
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

}  // namespace

IOStatus ReadExact(RandomAccessFileReader* file, uint64_t offset, size_t n, char* scratch, Slice* out) {
  IOStatus s = file->Read(IOOptions(), offset, n, out, scratch, /*aligned_buf=*/nullptr, Env::IO_TOTAL);
  if (s.ok() && out->size() != n)
    return status_to_io_status(TableCorruption(file->file_name() + ": the file ends at byte " +
                                           std::to_string(offset + out->size()) + ", before bytes [" +
                                           std::to_string(offset) + ", " + std::to_string(offset + n) +
                                           ") (truncated?)"));
  return s;
}

UihTableReader::~UihTableReader() {
  uih_table_index_free(index_);
  if (fd_ >= 0) close(fd_);
}

void UihTableReader::Seek(uih_table_cursor* c, const Slice& target) const {
  Slice uk = ExtractUserKey(target);
  uint64_t tt = ExtractInternalKeyFooter(target);
  if (global_seqno_ == kDisableGlobalSequenceNumber) {
    uih_table_cursor_seek(c, U8(uk), uk.size(), tt);
    return;
  }
  uih_table_cursor_seek(c, U8(uk), uk.size(), UIH_TABLE_TRAILER_FIRST);
  while (uih_table_cursor_valid(c) && SameKey(*c, uk) && Trailer(*c) > tt) uih_table_cursor_next(c);
}

void UihTableReader::SeekForPrev(uih_table_cursor* c, const Slice& target) const {
  Slice uk = ExtractUserKey(target);
  uint64_t tt = ExtractInternalKeyFooter(target);
  if (global_seqno_ == kDisableGlobalSequenceNumber) {
    uih_table_cursor_seek_prev(c, U8(uk), uk.size(), tt);
    return;
  }
  uih_table_cursor_seek_prev(c, U8(uk), uk.size(), 0);
  while (uih_table_cursor_valid(c) && SameKey(*c, uk) && Trailer(*c) < tt) uih_table_cursor_prev(c);
}

Status UihTableReader::CheckAndFill(const char* bytes, uint32_t vlen, uint64_t voff, bool verify, bool fill) const {
  if (!verify) return Status::OK();
  Status s = CheckValue(bytes, vlen, voff);
  if (s.ok() && fill && values_.enabled()) values_.Fill(voff, Slice(bytes, vlen));  // only verified values are cached
  return s;
}

Status UihTableReader::CheckValue(const char* bytes, uint32_t vlen, uint64_t voff) const {
  uih_error err{};
  if (uih_table_value_check(reinterpret_cast<const uint8_t*>(bytes), vlen, voff, &err) == UIH_OK)
    return Status::OK();
  return TableCorruption(file_->file_name() + ": " + err.msg);
}

// Reads a whole block into `buf` and returns it.
static Status ReadBlock(RandomAccessFileReader* file, const BlockHandle& h, std::string* buf, Slice* out) {
  buf->resize(h.size());
  return ReadExact(file, h.offset(), h.size(), &(*buf)[0], out);
}

Status CheckUihTableMeta(RandomAccessFileReader* file, uint64_t file_size, const ImmutableOptions& ioptions,
                         TableMeta* out) {
  const std::string& name = file->file_name();
  auto corrupt = [&](const std::string& what) { return TableCorruption(name + ": " + what); };

  // Layout from the end: footer, tail, metaindex, properties, index, data.
  // Each block is checked before RocksDB's parsers see it.
  Footer footer;
  Status s = ReadFooterFromFile(IOOptions(), file, nullptr, file_size, &footer, UIH_TABLE_MAGIC);
  if (!s.ok()) return s;
  if (footer.format_version() != 1)
    return Status::NotSupported("UihTable: " + name + ": format version " + std::to_string(footer.format_version()));
  const uint64_t footer_at = file_size - Footer::kNewVersionsEncodedLength;
  if (footer_at < kTableTailSize) return corrupt("too short for the checksum tail");
  const uint64_t tail_at = footer_at - kTableTailSize;
  std::string tail_buf(kTableTailSize, '\0');
  Slice tail_bytes;
  s = ReadExact(file, tail_at, kTableTailSize, &tail_buf[0], &tail_bytes);
  TableTail tail;
  if (s.ok()) s = DecodeTableTail(tail_bytes, &tail);
  if (!s.ok()) return s;

  const BlockHandle& mh = footer.metaindex_handle();
  if (mh.offset() > tail_at || mh.size() != tail_at - mh.offset()) return corrupt("metaindex handle is off");
  std::string buf;
  Slice bytes;
  s = ReadBlock(file, mh, &buf, &bytes);
  if (!s.ok()) return s;
  if (XXH3_64bits(bytes.data(), bytes.size()) != tail.metaindex_sum) return corrupt("metaindex checksum mismatch");

  BlockHandle ih, ph;
  s = FindMetaBlockInFile(file, file_size, UIH_TABLE_MAGIC, ioptions, UIH_TABLE_INDEX_NAME, &ih);
  if (s.ok()) s = FindMetaBlockInFile(file, file_size, UIH_TABLE_MAGIC, ioptions, kPropertiesBlockName, &ph);
  if (s.IsNotFound()) return corrupt(s.ToString());
  if (!s.ok()) return s;
  if (ph.offset() > mh.offset() || ph.size() != mh.offset() - ph.offset() || ih.offset() > ph.offset() ||
      ih.size() != ph.offset() - ih.offset())
    return corrupt("block handles do not tile the file");
  s = ReadBlock(file, ph, &buf, &bytes);
  if (!s.ok()) return s;
  if (PropertiesChecksum(bytes, tail.seqno_at) != tail.properties_sum) return corrupt("properties checksum mismatch");
  *out = TableMeta{mh, ph, ih, tail_at, footer_at};
  return Status::OK();
}

Status UihTableReader::Open(const TableReaderOptions& tro, uint64_t file_size) {
  if (tro.internal_comparator.user_comparator()->GetId() != BytewiseComparator()->GetId())
    return Status::NotSupported("UihTable stores keys in bytewise order only");
  const std::string& name = file_->file_name();

  TableMeta meta;
  Status s = CheckUihTableMeta(file_.get(), file_size, tro.ioptions, &meta);
  if (!s.ok()) return s;
  const BlockHandle &mh = meta.metaindex, &ph = meta.properties, &ih = meta.index;
  const uint64_t tail_at = meta.tail_at, footer_at = meta.footer_at;
  Slice bytes;
  std::unique_ptr<TableProperties> props;
  s = ReadTableProperties(file_.get(), file_size, UIH_TABLE_MAGIC, tro.ioptions, &props);
  if (!s.ok()) return s;
  s = GlobalSeqno(*props, tro.largest_seqno, &global_seqno_);
  if (!s.ok()) return s;

  // The index is read into what it keeps (no zeroed buffer, no copy: at
  // 200 M events a generation's indexes are ~45 MB).
  uint8_t* index_bytes = static_cast<uint8_t*>(malloc(ih.size() + UIH_TABLE_INDEX_SLACK));
  if (index_bytes == nullptr) return Status::MemoryLimit("UihTable: " + name + ": no memory for its index");
  s = ReadExact(file_.get(), ih.offset(), ih.size(), reinterpret_cast<char*>(index_bytes), &bytes);
  if (s.ok() && bytes.data() != reinterpret_cast<const char*>(index_bytes))  // mmap reads: a slice of the map
    memcpy(index_bytes, bytes.data(), bytes.size());
  if (!s.ok()) {
    free(index_bytes);
    return s;
  }
  uih_error err{};
  if (uih_table_index_adopt(index_bytes, ih.size(), ih.offset(), &index_, &err) != UIH_OK)
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
  if (ReadsAsDefault(*tro.ioptions.fs) && !tro.env_options.use_direct_reads &&
      !tro.env_options.use_mmap_reads)
    fd_ = open(name.c_str(), O_RDONLY | O_CLOEXEC);
  return Status::OK();
}

uint64_t UihTableReader::ApproximateOffsetOf(const Slice& key, TableReaderCaller) {
  CallCursor cc(index_);
  Seek(&cc.c, key);
  return uih_table_cursor_valid(&cc.c) ? cc.c.voff : data_size_;
}

uint64_t UihTableReader::OffsetOfUserKey(const std::string& user_key) const {
  CallCursor cc(index_);
  uih_table_span s;
  uih_table_span_keys(&cc.c, U8(user_key), user_key.size(), nullptr, 0, &s);
  return s.offset;
}

// ---- point lookups -------------------------------------------------------------

uint64_t UihTableReader::Offer(const Lookups& l, uint64_t active, const ParsedInternalKey& pk, const Slice& value,
                               Cleanable* pinner) {
  uint64_t still = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (!(active >> i & 1)) continue;
    bool matched = false;
    // The pinner until a context takes its cleanup (the cache handle); the
    // contexts after that copy. A context that declines leaves it for the next.
    Cleanable* p = pinner && pinner->HasCleanups() ? pinner : nullptr;
    if (l.ctx[i]->SaveValue(pk, value, &matched, p)) still |= uint64_t{1} << i;
  }
  return still;
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
    Cache::Handle* h = values_.enabled() ? values_.Lookup(c->voff) : nullptr;
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
        Status s = CheckValue(bytes.data(), c->vlen, c->voff);
        if (!s.ok()) return s;
        if (values_.enabled() && ro.fill_cache) h = values_.Insert(c->voff, value);  // verified only
      }
    }
    if (h) {
      value = values_.Value(h);
      pinner.RegisterCleanup(&ValueCache::ReleaseHandle, values_.cache(), h);
    }
    // A cached value is pinned (its handle moves to a result); a value read
    // from the file is copied.
    active = Offer(l, active, ParsedInternalKey(uk, Trailer(*c) >> 8, ExtractType(*c)), value,
                   h ? &pinner : nullptr);
  }
  return Status::OK();
}

Status UihTableReader::ServeSpan(const ReadOptions& ro, const uih_table_span& s, const Slice& uk,
                                 const char* bytes, const Lookups& l) const {
  CallCursor cc(index_);
  uih_table_cursor& c = cc.c;
  uih_table_cursor_goto(&c, s.first);
  for (uint64_t active = All(l); active && c.pos < s.end; uih_table_cursor_next(&c)) {
    const char* p = bytes + (c.voff - s.offset);
    Slice value(p, c.vlen);
    Status st = CheckAndFill(p, c.vlen, c.voff, ro.verify_checksums, ro.fill_cache);
    if (!st.ok()) return st;
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
  // Index lookups first: each group's entries are one span.
  struct Job {
    size_t from, to;  // the group: keys[from, to)
    uih_table_span span;
    std::string buf;
  };
  std::vector<Job> jobs;
  for (size_t from = 0, to; from < nkeys; from = to) {
    // Equal user keys in one batch carry one sequence number (one snapshot).
    const Slice& ikey = keys[from]->ikey;
    for (to = from + 1; to < nkeys && keys[to]->ikey == ikey; to++) {
    }
    CallCursor cc(index_);
    uih_table_cursor& c = cc.c;
    Seek(&c, ikey);
    Slice uk = ExtractUserKey(ikey);
    if (!uih_table_cursor_valid(&c) || !SameKey(c, uk)) {
      finish(from, to, Status::OK());  // not in this file
      continue;
    }
    if (!io || (values_.enabled() && values_.Contains(c.voff))) {  // a cached value needs no I/O
      finish(from, to, ServeKey(ro, &c, uk, Lookups{ctx + from, to - from}));
      continue;
    }
    Job j{from, to, {}, {}};
    uih_table_span_key(&c, U8(uk), uk.size(), &j.span);
    j.buf.resize(j.span.length);
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) return;
  std::vector<uih_io_req> reqs;
  reqs.reserve(jobs.size());
  for (Job& j : jobs) reqs.push_back(uih_table_span_req(fd_, &j.span, &j.buf[0]));
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
    uih_error err{};
    int rc = uih_table_read_status(&r, &err);
    Status s = rc == UIH_OK ? ServeSpan(ro, j.span, ExtractUserKey(keys[j.from]->ikey), j.buf.data(),
                                        Lookups{ctx + j.from, j.to - j.from})
                            : ToStatus(rc, ("UihTable: " + file_->file_name() + ": " + err.msg).c_str());
    finish(j.from, j.to, s);
  }
}

// ---- whole-file passes -----------------------------------------------------------

template <class F>
Status UihTableReader::ForEachValue(uint64_t first, uint64_t end, F&& visit) const {
  // The index was verified at open; the values are read 1 MiB at a time (a
  // whole-file pass needs no ramp).
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
    s = CheckValue(p, c.vlen, c.voff);
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
  if (values_.enabled()) {  // load the values, verified, into the value cache
    return ForEachValue(first, last, [&](const uih_table_cursor& c, const Slice& value) {
      values_.Fill(c.voff, value);
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

Status OpenUihTable(const UihTableOptions& options, const ReadOptions&, const TableReaderOptions& tro,
                    std::unique_ptr<RandomAccessFileReader>&& file, uint64_t file_size,
                    std::unique_ptr<TableReader>* reader) {
  std::unique_ptr<UihTableReader> t(new UihTableReader(options, std::move(file)));
  Status s = t->Open(tro, file_size);
  if (s.ok()) *reader = std::move(t);
  return s;
}

}  // namespace uih
