// Before RocksDB opens a database of the store: each of its block-based
// table files' properties block verified against its checksum.
//
// RocksDB reads a table's properties block without verifying it first (an
// ingested file may have had its global sequence number rewritten in
// place), parses it, and checks it afterwards; a damaged byte there can
// trip one of the asserts that Debian's librocksdb keeps (for example
// DataBlockHashIndex::Initialize's `num_buckets_ > 0`), killing the process
// instead of failing the open. The store ingests only UihTable files (whose
// own checksum tail covers their properties, plugin/table/tail.h) and never
// rewrites a sequence number in place, so its block-based files' properties
// blocks must verify as written: one that does not is damage, named here.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "file/random_access_file_reader.h"
#include "options/cf_options.h"
#include "rocksdb/file_system.h"
#include "store_internal.h"
#include "table/block_based/block_based_table_builder.h"
#include "table/format.h"
#include "table/meta_blocks.h"

namespace uih {

namespace fs = std::filesystem;
using namespace rocksdb;

namespace {

// The last 8 bytes of the file at `path` (its table magic), 0 when shorter.
uint64_t TableMagic(const fs::path& path, uint64_t size) {
  if (size < 8) return 0;
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(size - 8));
  char b[8];
  if (!in.read(b, sizeof b)) return 0;
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | static_cast<uint8_t>(b[i]);
  return v;
}

}  // namespace

int CheckTableProperties(const std::string& dir, uih_error* err) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return UIH_OK;  // the open that follows says what is wrong with the directory
  static const ImmutableOptions kOptions;
  for (const fs::directory_entry& e : it) {
    if (e.path().extension() != ".sst") continue;
    const uint64_t size = e.file_size(ec);
    if (ec || TableMagic(e.path(), size) != kBlockBasedTableMagicNumber) continue;
    std::unique_ptr<RandomAccessFileReader> reader;
    IOStatus io = RandomAccessFileReader::Create(FileSystem::Default(), e.path().string(), FileOptions(), &reader,
                                                 nullptr);
    if (!io.ok()) return StatusError(err, "", io, "store %s: reading table file %s", dir.c_str(), e.path().c_str());
    BlockContents contents;
    Status s = ReadMetaBlock(reader.get(), nullptr, size, kBlockBasedTableMagicNumber, kOptions, kPropertiesBlockName,
                             BlockType::kMetaIndex /* not kProperties: ReadMetaBlock asserts that */, &contents);
    if (!s.ok())
      return uih_corruption(err, "store %s: table file %s: its properties block does not verify (%s): the file is damaged",
                            dir.c_str(), e.path().filename().c_str(), s.ToString().c_str());
  }
  return UIH_OK;
}

}  // namespace uih
