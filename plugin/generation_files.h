// A generation's UihTable files read directly, below RocksDB's DB layer:
// each file's index opened once (UihTableReader::Open checks every block
// before trusting it), a user's stripes in a group found with one index
// search and read with one contiguous read per file that holds them (a
// history lies in one file unless a file boundary cuts it). Reads of the
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

  // Calls visit(key, value, length) for each stripe of (user, group) that
  // may hold events with ts in [from, to] — from the last stripe starting
  // at or before `from` through the last starting at or before `to` — in
  // key order, each value's checksum verified first. Stops at the first
  // return other than UIH_OK and returns it. Errors name the file and the
  // offset.
  using Visit = std::function<int(const uih_key& key, const uint8_t* value, size_t len)>;
  int Stripes(uint64_t user, uint16_t group, int64_t from, int64_t to, const Visit& visit, uih_error* err) const;

  // The same stripes copied into `out` (cleared first; its capacity is
  // kept, so a caller reusing it allocates nothing once it has grown).
  struct StripeSet {
    struct Stripe {
      int64_t start;  // the key's timestamp: the stripe's first event
      size_t off, len;
    };
    std::string bytes;
    std::vector<Stripe> stripes;
    const uint8_t* at(const Stripe& s) const { return reinterpret_cast<const uint8_t*>(bytes.data()) + s.off; }
  };
  int Collect(uint64_t user, uint16_t group, int64_t from, int64_t to, StripeSet* out, uih_error* err) const;

  size_t count() const { return files_.size(); }

 private:
  struct File {
    std::string smallest, largest;  // user keys
    std::unique_ptr<UihTableReader> reader;
  };
  int FileStripes(const File& f, const uint8_t* prefix, const uint8_t* lo, const uint8_t* hi, size_t hilen,
                  const Visit& visit, uih_error* err) const;
  std::vector<File> files_;  // in key order
};

}  // namespace uih
