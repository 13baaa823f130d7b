// GenerationFiles (generation_files.h): a generation's files opened with
// UihTableReader, and a user's stripes in a group read as one span per file.
#include "uih_plugin/generation_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "options/cf_options.h"
#include "rocksdb/file_system.h"
#include "reader.h"
#include "uih_plugin/status.h"
#include "table/table_builder.h"

namespace uih {

using namespace rocksdb;

std::vector<GenerationLayer> GenerationLayers(const ColumnFamilyMetaData& meta) {
  std::vector<GenerationLayer> layers;
  for (const LevelMetaData& level : meta.levels)
    for (const SstFileMetaData& f : level.files) {
      auto it = std::find_if(layers.begin(), layers.end(), [&](const GenerationLayer& l) {
        return l.seqno == f.largest_seqno && l.level == level.level;
      });
      if (it == layers.end()) it = layers.insert(layers.end(), {f.largest_seqno, level.level, {}});
      it->files.push_back(f);
    }
  // Oldest first. Files of seqno 0 share no key with any other (RocksDB
  // gives one only to a file that meets no stored key), whatever their
  // levels; the deeper level came first.
  std::sort(layers.begin(), layers.end(), [](const GenerationLayer& a, const GenerationLayer& b) {
    return a.seqno != b.seqno ? a.seqno < b.seqno : a.level > b.level;
  });
  for (GenerationLayer& l : layers)
    std::sort(l.files.begin(), l.files.end(),
              [](const SstFileMetaData& a, const SstFileMetaData& b) { return a.smallestkey < b.smallestkey; });
  return layers;
}

bool ReadsAsDefault(const FileSystem& fs) {
  const FileSystem* def = FileSystem::Default().get();
  return &fs == def || (std::strcmp(fs.Name(), kWritesOnlyFileSystem) == 0 && fs.Inner() == def);
}

Status GenerationFiles::Open(DB* db, ColumnFamilyHandle* cf, std::unique_ptr<GenerationFiles>* out) {
  ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(cf, &meta);
  const Options options = db->GetOptions(cf);
  const ImmutableOptions ioptions(options);
  const InternalKeyComparator icmp(BytewiseComparator());
  const EnvOptions env_options;
  const std::shared_ptr<const SliceTransform> no_prefix;
  const std::shared_ptr<FileSystem>& fs = ioptions.fs;  // the store's Env's
  std::unique_ptr<GenerationFiles> g(new GenerationFiles);
  for (const GenerationLayer& layer : GenerationLayers(meta)) {
    for (const SstFileMetaData& f : layer.files) {
      std::string path = f.directory + "/" + f.relative_filename;
      std::unique_ptr<FSRandomAccessFile> raf;
      IOStatus io = fs->NewRandomAccessFile(path, FileOptions(env_options), &raf, nullptr);
      if (!io.ok()) return io;
      std::unique_ptr<RandomAccessFileReader> reader(new RandomAccessFileReader(std::move(raf), path));
      TableReaderOptions tro(ioptions, no_prefix, env_options, icmp, /*skip_filters=*/false, /*immortal=*/false,
                             /*force_direct_prefetch=*/false, layer.level, nullptr, 0, "", f.file_number, {},
                             f.largest_seqno);
      File file{f.smallestkey, f.largestkey, std::unique_ptr<UihTableReader>(new UihTableReader({}, std::move(reader)))};
      Status s = file.reader->Open(tro, f.size);
      if (!s.ok()) return s;
      // Batches of reads need a descriptor (ReadsAsDefault).
      if (ReadsAsDefault(*fs)) file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      const size_t n = g->files_.size(), first = g->layer_end_.empty() ? 0 : g->layer_end_.back();
      if (n > first && g->files_[n - 1].largest >= file.smallest)
        return TableCorruption("generation files " + g->files_[n - 1].reader->file()->file_name() + " and " +
                               file.reader->file()->file_name() + " overlap");
      g->files_.push_back(std::move(file));
    }
    g->layer_end_.push_back(g->files_.size());
  }
  *out = std::move(g);
  return Status::OK();
}

int GenerationFiles::Plan(uint64_t user, uint16_t group, int64_t from, int64_t to, std::vector<Extent>* out,
                          uih_error* err) const {
  out->clear();
  if (from > to) return UIH_OK;
  uint8_t prefix[UIH_KEY_GROUP_PREFIX_SIZE], lo[UIH_KEY_SIZE], hi[UIH_KEY_SIZE];
  uih_key_group_prefix(user, group, prefix);
  uih_key k{user, group, from};
  uih_key_encode(&k, lo);
  // Keys up to (user, group, to), exclusive bound: the key of to + 1, or
  // past the prefix when to is the last timestamp.
  size_t hilen = UIH_KEY_SIZE;
  if (to < INT64_MAX) {
    k.ts = to + 1;
    uih_key_encode(&k, hi);
  } else {
    memcpy(hi, prefix, sizeof prefix);
    hilen = uih_key_prefix_successor(hi, sizeof prefix) ? sizeof prefix : 0;
  }
  int rc = layer_end_.size() > 1 ? MergedPlan(prefix, lo, from, hilen ? hi : nullptr, hilen, out, err)
                                  : LayerPlan(0, prefix, lo, hilen ? hi : nullptr, hilen, out, err);
  if (rc != UIH_OK) return rc;
  // Each file's part began at its own last stripe at or before `from`:
  // those before the generation's last are cut.
  size_t cut = 0;
  while (cut + 1 < out->size() && (*out)[cut + 1].start <= from) cut++;
  out->erase(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(cut));
  return UIH_OK;
}

int GenerationFiles::LayerPlan(size_t layer, const uint8_t* prefix, const uint8_t* lo, const uint8_t* hi,
                               size_t hilen, std::vector<Extent>* out, uih_error* err) const {
  const Slice first(reinterpret_cast<const char*>(prefix), UIH_KEY_GROUP_PREFIX_SIZE);  // no allocation per call
  const Slice bound(reinterpret_cast<const char*>(hi), hilen);
  const size_t end = layer < layer_end_.size() ? layer_end_[layer] : 0;
  for (size_t i = layer == 0 ? 0 : layer_end_[layer - 1]; i < end; i++) {
    const File& f = files_[i];
    if (Slice(f.largest).compare(first) < 0) continue;
    if (hi && Slice(f.smallest).compare(bound) >= 0) break;
    int rc = FilePlan(f, layer > 0, prefix, lo, hi, hilen, out, err);
    if (rc != UIH_OK) return rc;
  }
  return UIH_OK;
}

// Each layer's entries from the last key at or before `lo` in each of its
// files, merged (the newest layer's entry for a key wins; a deletion
// leaves none), for Plan to cut at the merged generation's last stripe
// starting at or before `from`. That cut is exact when S, the latest key
// at or before `from` that any layer begins with, is a value in the
// newest layer holding it: no layer holds a later key at or before
// `from`, so S is the merged generation's last one, and every layer's
// entry for a key from S on is among those gathered. When S is a deletion
// the stripe the window starts in may lie earlier in some layer than where
// it began: the layers are gathered again from the history's first key.
int GenerationFiles::MergedPlan(const uint8_t* prefix, const uint8_t* lo, int64_t from, const uint8_t* hi,
                                size_t hilen, std::vector<Extent>* out, uih_error* err) const {
  const size_t n = layer_end_.size();
  thread_local std::vector<std::vector<Extent>> layers;
  thread_local std::vector<size_t> at;
  if (layers.size() < n) layers.resize(n);
  at.assign(n, 0);
  for (const uint8_t* start : {lo, static_cast<const uint8_t*>(nullptr)}) {
    for (size_t l = 0; l < n; l++) {
      layers[l].clear();
      int rc = LayerPlan(l, prefix, start, hi, hilen, &layers[l], err);
      if (rc != UIH_OK) return rc;
    }
    if (start == nullptr) break;
    const Extent* s = nullptr;  // S, in the newest layer holding it
    for (size_t l = 0; l < n; l++)
      for (size_t i = layers[l].size(); i-- > 0;)
        if (layers[l][i].start <= from) {
          if (!s || layers[l][i].start >= s->start) s = &layers[l][i];
          break;
        }
    if (!s || s->file) break;
  }
  for (;;) {
    const Extent* next = nullptr;  // the least key at the heads, in the newest layer holding it
    for (size_t l = 0; l < n; l++)
      if (at[l] < layers[l].size() && (!next || layers[l][at[l]].start <= next->start)) next = &layers[l][at[l]];
    if (!next) break;
    const int64_t key = next->start;
    if (next->file) out->push_back(*next);
    for (size_t l = 0; l < n; l++)
      if (at[l] < layers[l].size() && layers[l][at[l]].start == key) at[l]++;
  }
  return UIH_OK;
}

int GenerationFiles::FilePlan(const File& f, bool deletions, const uint8_t* prefix, const uint8_t* lo,
                              const uint8_t* hi, size_t hilen, std::vector<Extent>* out, uih_error* err) const {
  const UihTableReader& r = *f.reader;
  CallCursor cc(r.index());
  uih_table_cursor& c = cc.c;
  // The stripe holding `lo`'s timestamp starts at or before it; when none
  // of this history does here, the span starts at the history's first.
  uint8_t start[UIH_KEY_SIZE];
  size_t startlen = UIH_KEY_GROUP_PREFIX_SIZE;
  memcpy(start, prefix, UIH_KEY_GROUP_PREFIX_SIZE);
  if (lo) {
    uih_table_cursor_seek_prev(&c, lo, UIH_KEY_SIZE, 0);
    if (uih_table_cursor_valid(&c) && c.klen == UIH_KEY_SIZE && memcmp(c.key, prefix, UIH_KEY_GROUP_PREFIX_SIZE) == 0) {
      memcpy(start, c.key, UIH_KEY_SIZE);
      startlen = UIH_KEY_SIZE;
    }
  }
  uih_table_span span;
  uih_table_span_keys(&c, start, startlen, hi, hilen, &span);
  const std::string& name = r.file()->file_name();
  for (uih_table_cursor_goto(&c, span.first); c.pos < span.end; uih_table_cursor_next(&c)) {
    const ValueType type = UihTableReader::ExtractType(c);
    const bool deletion = deletions && type == kTypeDeletion;
    if (type != kTypeValue && !deletion)
      return TableCorruption(err, "%s: entry %" PRIu64 " is of type %u, a generation holds values only%s", name.c_str(),
                             c.pos, static_cast<unsigned>(type), deletions ? " and deletions above its oldest layer" : "");
    uih_key key;
    if (uih_key_decode(c.key, c.klen, &key, err) != UIH_OK) {
      uih_error_prefix(err, "%s: entry %" PRIu64 ": ", name.c_str(), c.pos);
      return UIH_ERR_CORRUPTION;
    }
    out->push_back({key.ts, deletion ? nullptr : &f, c.voff, c.vlen});
  }
  return UIH_OK;
}

GenerationFiles::~GenerationFiles() {
  for (File& f : files_)
    if (f.fd >= 0) ::close(f.fd);
}

size_t GenerationFiles::RunEnd(const Extent* ex, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && ex[j].file == ex[i].file && ex[j].voff == ex[j - 1].voff + ex[j - 1].vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE)
    j++;
  return j;
}

int GenerationFiles::ListRun(const Extent* ex, size_t i, size_t j, size_t at, StripeSet* out, uih_error* err) {
  const File& f = *static_cast<const File*>(ex[i].file);
  for (size_t k = i; k < j; k++) {
    const size_t off = at + (ex[k].voff - ex[i].voff);
    if (uih_table_value_check(reinterpret_cast<const uint8_t*>(out->bytes.data()) + off, ex[k].vlen, ex[k].voff, err) !=
        UIH_OK) {
      uih_error_prefix(err, "%s: ", f.reader->file()->file_name().c_str());
      return UIH_ERR_CORRUPTION;
    }
    out->stripes.push_back({ex[k].start, off, ex[k].vlen});
  }
  return UIH_OK;
}

int GenerationFiles::Read(const Extent* ex, size_t n, StripeSet* out, uih_error* err) const {
  out->bytes.clear();
  out->stripes.clear();
  for (size_t i = 0; i < n;) {
    const size_t j = RunEnd(ex, n, i);
    const File& f = *static_cast<const File*>(ex[i].file);
    const uint64_t begin = ex[i].voff, end = ex[j - 1].voff + ex[j - 1].vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE;
    const size_t at = out->bytes.size();
    out->bytes.resize(at + (end - begin));
    Slice bytes;
    IOStatus io = ReadExact(f.reader->file(), begin, end - begin, out->bytes.data() + at, &bytes);
    if (!io.ok()) return uih_error_set(err, FromStatus(io), "%s", io.ToString().c_str());
    if (bytes.data() != out->bytes.data() + at) memcpy(out->bytes.data() + at, bytes.data(), bytes.size());
    int rc = ListRun(ex, i, j, at, out, err);
    if (rc != UIH_OK) return rc;
    i = j;
  }
  return UIH_OK;
}

bool GenerationFiles::Prepare(const Extent* ex, size_t n, StripeSet* out, std::vector<uih_io_req>* reqs) const {
  size_t total = 0;
  for (size_t i = 0; i < n;) {
    const size_t j = RunEnd(ex, n, i);
    if (static_cast<const File*>(ex[i].file)->fd < 0) return false;
    total += ex[j - 1].voff + ex[j - 1].vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE - ex[i].voff;
    i = j;
  }
  out->bytes.resize(total);
  out->stripes.clear();
  size_t at = 0;
  for (size_t i = 0; i < n;) {
    const size_t j = RunEnd(ex, n, i);
    const size_t len = ex[j - 1].voff + ex[j - 1].vlen + UIH_TABLE_VALUE_CHECKSUM_SIZE - ex[i].voff;
    reqs->push_back({static_cast<const File*>(ex[i].file)->fd, ex[i].voff, len, out->bytes.data() + at, 0});
    at += len;
    i = j;
  }
  return true;
}

int GenerationFiles::Finish(const Extent* ex, size_t n, StripeSet* out, const uih_io_req* reqs, uih_error* err) const {
  size_t at = 0;
  for (size_t i = 0; i < n; reqs++) {
    const size_t j = RunEnd(ex, n, i);
    const std::string& name = static_cast<const File*>(ex[i].file)->reader->file()->file_name();
    if (reqs->result < 0)
      return uih_error_set(err, UIH_ERR_IO, "%s: reading %zu bytes at offset %" PRIu64 ": %s", name.c_str(), reqs->len,
                           reqs->offset, strerror(static_cast<int>(-reqs->result)));
    if (static_cast<uint64_t>(reqs->result) != reqs->len)
      return TableCorruption(err, "%s: %" PRId64 " of %zu bytes at offset %" PRIu64 ": the file ends before its index says",
                             name.c_str(), reqs->result, reqs->len, reqs->offset);
    int rc = ListRun(ex, i, j, at, out, err);
    if (rc != UIH_OK) return rc;
    at += reqs->len;
    i = j;
  }
  return UIH_OK;
}

}  // namespace uih
