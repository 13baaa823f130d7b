// Lets RocksDB's own SST dumper (Debian's sst_dump, and ldb's dump of .sst
// files) open UihTable files when libuih_rocksdb.so is preloaded.
//
// RocksDB 7.8.3 picks the table factory for a file in
// SstFileDumper::SetTableOptionsByMagicNumber, which knows only the
// BlockBasedTable and PlainTable magic numbers and rejects every other one
// ("Unsupported table magic number"). librocksdb.so exports that member and
// calls it through its PLT, so a preloaded definition takes its place: for
// UIH_TABLE_MAGIC it installs a UihTableFactory, for anything else it hands
// over to RocksDB's own definition (the next one in lookup order).
//
// Only the shared library carries this file. A RocksDB built from source
// with this folder as a plugin defines the member itself; the static test
// library must not replace it either.
#include <dlfcn.h>

#include <cstdio>
#include <memory>

#include "table/sst_file_dumper.h"
#include "uih_plugin/table.h"

namespace {

// SstFileDumper keeps the options it opens a file with, and whether it
// prints, in private members. An explicit instantiation may name private
// members; the friend function it defines hands out the pointers.
struct DumperOptions {
  using type = rocksdb::Options rocksdb::SstFileDumper::*;
  friend type Member(DumperOptions);
};
struct DumperSilent {
  using type = bool rocksdb::SstFileDumper::*;
  friend type Member(DumperSilent);
};
template <typename Tag, typename Tag::type Pointer>
struct Expose {
  friend typename Tag::type Member(Tag) { return Pointer; }
};
template struct Expose<DumperOptions, &rocksdb::SstFileDumper::options_>;
template struct Expose<DumperSilent, &rocksdb::SstFileDumper::silent_>;

}  // namespace

namespace rocksdb {

Status SstFileDumper::SetTableOptionsByMagicNumber(uint64_t table_magic_number) {
  if (table_magic_number == UIH_TABLE_MAGIC) {
    (this->*Member(DumperOptions{})).table_factory = std::make_shared<uih::UihTableFactory>();
    if (!(this->*Member(DumperSilent{}))) std::fprintf(stdout, "Sst file format: UihTable\n");
    return Status::OK();
  }
  // A non-virtual member is a function taking `this` first (Itanium C++
  // ABI), and Status comes back through a hidden pointer either way.
  using Original = Status (*)(SstFileDumper*, uint64_t);
  static const auto original = [] {
    // The mangled name of this very member: the next definition is RocksDB's.
    void* symbol = dlsym(RTLD_NEXT, "_ZN7rocksdb13SstFileDumper28SetTableOptionsByMagicNumberEm");
    return reinterpret_cast<Original>(symbol);
  }();
  if (original == nullptr) {
    return Status::NotSupported("uihstore: RocksDB's SstFileDumper::SetTableOptionsByMagicNumber not found");
  }
  return original(this, table_magic_number);
}

}  // namespace rocksdb
