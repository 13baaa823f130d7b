// A generation's UihTable files read directly, below RocksDB's DB layer:
// each file's index opened once (UihTableReader::Open checks every block
// before trusting it), a user's stripes in a group found with one index
// search per layer (Plan: no I/O) and read with one contiguous read per run
// of them (Read: all, or only the newest ones a caller needs; or Prepare
// and Finish around a batch of many callers' reads at once). Reads of the
// immutable tier (the store's reads, snapshots and rebuilds) go through
// it; RocksDB's iterators serve whole-generation scans. The indexes are
// held once more than in RocksDB's table cache: about 7 bytes per stripe.
//
// A generation is one or more layers: its files grouped by global seqno
// and level (RocksDB gives each ingested file that meets stored keys a
// seqno of its own, and seqno 0 to one that meets none, in the deepest
// level where its range fits), whose key ranges do not overlap within a
// layer. A newer layer's entry
// for a key replaces an older layer's (a value) or removes it (a
// deletion), as RocksDB's own reads of the column family do; the oldest
// layer holds values only. Plan merges the layers, so a caller sees one
// generation whatever its layers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "uih/error.h"
#include "uih/io.h"
#include "uih/key.h"

namespace uih {

class UihTableReader;

// The name of a FileSystemWrapper of rocksdb::FileSystem::Default() that
// changes only how files are written (the store's databases preallocate
// less: BoundPreallocation, store/store_internal.h).
inline constexpr char kWritesOnlyFileSystem[] = "UihBoundedPreallocation";
// 1 when UihTable files under `fs` are plain POSIX files to read: `fs` is
// the default file system, or the wrapper above of it. Those are read by
// descriptor too, in batches (GenerationFiles, UihTableReader::MultiGet);
// under any other file system (one a caller chose, say through the mutable
// tier's db_options) through that file system alone.
bool ReadsAsDefault(const rocksdb::FileSystem& fs);

// The layers of a generation's column family, oldest first: its files
// grouped by global seqno and level (each group in key order). How
// GenerationFiles reads them, and how a generation built on another
// shares them: ingested again layer by layer, in this order.
struct GenerationLayer {
  uint64_t seqno;
  int level;
  std::vector<rocksdb::SstFileMetaData> files;
};
std::vector<GenerationLayer> GenerationLayers(const rocksdb::ColumnFamilyMetaData& meta);

class GenerationFiles {
 public:
  // The files of `cf`, a generation: ingested files, grouped into layers
  // by their global seqno and level; files of one layer that overlap are a
  // corruption.
  static rocksdb::Status Open(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                              std::unique_ptr<GenerationFiles>* out);

  // Where the stripes of (user, group) that may hold events with ts in
  // [from, to] lie — from the last stripe starting at or before `from`
  // through the last starting at or before `to` — in key order, from the
  // indexes alone (no I/O). Errors name the file and the entry.
  struct Extent {
    int64_t start;  // the key's timestamp: the stripe's first event
    const void* file;
    uint64_t voff;  // value offset in the file's data section
    uint32_t vlen;  // value bytes (its 4-byte checksum follows)
  };
  int Plan(uint64_t user, uint16_t group, int64_t from, int64_t to, std::vector<Extent>* out, uih_error* err) const;

  // The stripes' bytes, each value's checksum verified: extents[0, n)
  // (in key order, e.g. a tail of a Plan) read with one read per run of
  // adjacent values. `out` is cleared first; its capacity is kept, so a
  // caller reusing it allocates nothing once it has grown.
  struct StripeSet {
    struct Stripe {
      int64_t start;
      size_t off, len;
    };
    std::string bytes;
    std::vector<Stripe> stripes;
    const uint8_t* at(const Stripe& s) const { return reinterpret_cast<const uint8_t*>(bytes.data()) + s.off; }
  };
  int Read(const Extent* extents, size_t n, StripeSet* out, uih_error* err) const;

  // The same read, as requests for a batch of reads (uih/io.h) of many
  // callers' at once, e.g. through io_uring: Prepare sizes `out` and
  // appends one request per run to `reqs` (pointing into out->bytes, which
  // must stay put until Finish); false, with nothing appended, when the
  // files are not on the default file system (then use Read). Finish, once
  // the requests are read, checks each (an error or a file shorter than its
  // index names the file) and each value's checksum, and lists the stripes.
  bool Prepare(const Extent* extents, size_t n, StripeSet* out, std::vector<uih_io_req>* reqs) const;
  int Finish(const Extent* extents, size_t n, StripeSet* out, const uih_io_req* reqs, uih_error* err) const;

  size_t count() const { return files_.size(); }
  size_t layers() const { return layer_end_.size(); }
  ~GenerationFiles();

 private:
  struct File {
    std::string smallest, largest;  // user keys
    std::unique_ptr<UihTableReader> reader;
    int fd = -1;  // the file opened once more, for batches of reads; -1: not on the default file system
  };
  // The end of the run of extents from i: the same file, each value right after the one before.
  static size_t RunEnd(const Extent* ex, size_t n, size_t i);
  // Checks a run's values [i, j) read into out->bytes at `at` and lists them.
  static int ListRun(const Extent* ex, size_t i, size_t j, size_t at, StripeSet* out, uih_error* err);
  // The entries of layer `layer` for (user, group) `prefix`, from the last
  // key at or before `lo` in each of its files (lo NULL: the history's
  // first) to the last before `hi` (NULL: the history's last). Deletions,
  // which only a layer above the oldest may hold, are appended as extents
  // of no file.
  int LayerPlan(size_t layer, const uint8_t* prefix, const uint8_t* lo, const uint8_t* hi, size_t hilen,
                std::vector<Extent>* out, uih_error* err) const;
  int FilePlan(const File& f, bool deletions, const uint8_t* prefix, const uint8_t* lo, const uint8_t* hi,
               size_t hilen, std::vector<Extent>* out, uih_error* err) const;
  // Plan of a generation of several layers: each layer's entries merged.
  int MergedPlan(const uint8_t* prefix, const uint8_t* lo, int64_t from, const uint8_t* hi, size_t hilen,
                 std::vector<Extent>* out, uih_error* err) const;
  std::vector<File> files_;        // by layer, oldest first; in key order within one
  std::vector<size_t> layer_end_;  // layer i is files_[layer_end_[i - 1] (0 for i = 0), layer_end_[i])
};

}  // namespace uih
