// A generation's UihTable files read directly, below RocksDB's DB layer:
// each file's index opened once (UihTableReader::Open checks every block
// before trusting it), a user's stripes in a group found with one index
// search (Plan: no I/O) and read with one contiguous read per run of them
// (Read: all, or only the newest ones a caller needs). Reads of the
// immutable tier (store_read.cc) go through it; RocksDB's iterators serve
// whole-generation scans. The indexes are held once more than in RocksDB's
// table cache: about 7 bytes per stripe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "table_reader.h"
#include "uih/error.h"
#include "uih/key.h"

namespace uih {

class GenerationFiles {
 public:
  // The files of `cf`, a generation: ingested files whose key ranges do
  // not overlap, in one level.
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

  // Plan, then Read of all of it.
  int Collect(uint64_t user, uint16_t group, int64_t from, int64_t to, StripeSet* out, uih_error* err) const;

  // Calls visit(key, value, length) for each stripe Collect would give, in
  // key order; stops at the first return other than UIH_OK and returns it.
  using Visit = std::function<int(const uih_key& key, const uint8_t* value, size_t len)>;
  int Stripes(uint64_t user, uint16_t group, int64_t from, int64_t to, const Visit& visit, uih_error* err) const;

  size_t count() const { return files_.size(); }

 private:
  struct File {
    std::string smallest, largest;  // user keys
    std::unique_ptr<UihTableReader> reader;
  };
  int FilePlan(const File& f, const uint8_t* prefix, const uint8_t* lo, const uint8_t* hi, size_t hilen,
               std::vector<Extent>* out, uih_error* err) const;
  std::vector<File> files_;  // in key order
};

}  // namespace uih
