// Before RocksDB opens a database of the store: each of its block-based
// table files' properties block verified against its checksum, and each of
// its write-ahead logs read whole.
//
// Table files.
// RocksDB reads a table's properties block without verifying it first (an
// ingested file may have had its global sequence number rewritten in
// place), parses it, and checks it afterwards; a damaged byte there can
// trip one of the asserts that Debian's librocksdb keeps (for example
// DataBlockHashIndex::Initialize's `num_buckets_ > 0`), killing the process
// instead of failing the open. The store ingests only UihTable files (whose
// own checksum tail covers their properties, plugin/table/tail.h) and never
// rewrites a sequence number in place, so its block-based files' properties
// blocks must verify as written: one that does not is damage, named here.
#include <algorithm>
#include <cinttypes>
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
#include "logging/logging.h"
#include "util/crc32c.h"

namespace uih {

namespace fs = std::filesystem;
using namespace rocksdb;

uint64_t TableMagicOf(const std::string& path, uint64_t size) {
  if (size < 8) return 0;
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(size - 8));
  char b[8];
  if (!in.read(b, sizeof b)) return 0;
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | static_cast<uint8_t>(b[i]);
  return v;
}

int CheckTablePropertiesOf(const std::string& path, uint64_t size, uih_error* err) {
  if (TableMagicOf(path, size) != kBlockBasedTableMagicNumber) return UIH_OK;
  static const ImmutableOptions kOptions;
  std::unique_ptr<RandomAccessFileReader> reader;
  IOStatus io = RandomAccessFileReader::Create(FileSystem::Default(), path, FileOptions(), &reader, nullptr);
  if (io.IsPathNotFound()) return UIH_OK;  // deleted since the listing (a writer's compaction): not needed
  if (!io.ok()) return StatusError(err, "", io, "reading table file %s", path.c_str());
  BlockContents contents;
  Status s = ReadMetaBlock(reader.get(), nullptr, size, kBlockBasedTableMagicNumber, kOptions, kPropertiesBlockName,
                           BlockType::kMetaIndex /* not kProperties: ReadMetaBlock asserts that */, &contents);
  if (!s.ok())
    return uih_corruption(err, "table file %s: its properties block does not verify (%s): the file is damaged",
                          fs::path(path).filename().c_str(), StatusWords(s).c_str());
  return UIH_OK;
}

int CheckTableProperties(const std::string& dir, uih_error* err) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return UIH_OK;  // the open that follows says what is wrong with the directory
  for (const fs::directory_entry& e : it) {
    if (e.path().extension() != ".sst") continue;
    const uint64_t size = e.file_size(ec);
    if (ec) continue;
    const int rc = CheckTablePropertiesOf(e.path().string(), size, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", dir.c_str());
  }
  return UIH_OK;
}

// Write-ahead logs. A database opens with kTolerateCorruptedTailRecords
// (StrictRecovery), which fails on damage in the middle of a log but
// silently drops everything from a damaged record header on when the
// record seems to run past the end of the file: a byte changed in a length
// field anywhere in the last 32 KB block reads as a torn tail. So each log
// is read here first, record by record (RocksDB's physical format: 32 KB
// blocks of records, each a masked CRC32C over its type and payload, a
// 2-byte length, a type). A record that does not read is a torn tail when
// no whole record follows it anywhere in the file (a process or a machine
// stopped mid-write; RocksDB tolerates that in any log, we in the newest);
// anything else is damage, named with the file and the offset; in a log
// older than the newest, any record that does not read is damage. Logs
// written recycled or compressed (options a user may set on a mutable
// store) have other record types: they are left to RocksDB.

namespace {

constexpr size_t kBlock = 32768, kHeader = 7;

// A whole, undamaged physical record at `at` (inside its block, its CRC
// right): its length after the header; 0 when not.
size_t RecordAt(const std::string& b, size_t at) {
  const size_t room = kBlock - at % kBlock;
  if (room < kHeader || b.size() - at < kHeader) return 0;
  const auto* h = reinterpret_cast<const uint8_t*>(b.data() + at);
  const size_t len = h[4] | static_cast<size_t>(h[5]) << 8;
  const uint8_t type = h[6];
  if (type < 1 || type > 4 || kHeader + len > room || kHeader + len > b.size() - at) return 0;
  const uint32_t masked = h[0] | uint32_t{h[1]} << 8 | uint32_t{h[2]} << 16 | uint32_t{h[3]} << 24;
  if (crc32c::Unmask(masked) != crc32c::Value(b.data() + at + 6, len + 1)) return 0;
  return kHeader + len;
}

// The offset of the first record of `b` that does not read (b.size() when
// all do), after whole records and the zeros that pad a block's tail.
size_t FirstBad(const std::string& b) {
  size_t at = 0;
  while (at < b.size()) {
    const size_t room = kBlock - at % kBlock;
    if (room < kHeader) {  // a block's trailer: zeros
      if (b.find_first_not_of('\0', at) < std::min(b.size(), at + room)) return at;
      at += room;
      continue;
    }
    const size_t n = RecordAt(b, at);
    if (n == 0) return at;
    at += n;
  }
  return b.size();
}

// Whether a whole record starts anywhere after `from`.
bool AnyRecordAfter(const std::string& b, size_t from) {
  for (size_t at = from + 1; at + kHeader <= b.size(); at++)
    if (b[at + 6] >= 1 && b[at + 6] <= 4 && RecordAt(b, at)) return true;
  return false;
}

}  // namespace

int CheckWriteAheadLogs(const std::string& dir, const DBOptions& dbo, std::string* torn, uih_error* err) {
  torn->clear();
  if (dbo.recycle_log_file_num > 0 || dbo.wal_compression != kNoCompression) return UIH_OK;
  std::error_code ec;
  std::vector<std::pair<uint64_t, fs::path>> logs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".log" || name.size() > 24 || name.find_first_not_of("0123456789") != name.size() - 4)
      continue;
    logs.emplace_back(std::stoull(name.substr(0, name.size() - 4)), e.path());
  }
  std::sort(logs.begin(), logs.end());
  for (size_t i = 0; i < logs.size(); i++) {
    std::ifstream in(logs[i].second, std::ios::binary);
    if (!in) continue;  // deleted since the listing (a writer's flush): not needed
    const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t bad = FirstBad(b);
    if (bad == b.size()) continue;
    // A torn tail: RocksDB drops it, nothing after it is lost. Only the
    // newest log can have one (a writer stops mid-record only in the log it
    // is writing; an older log was whole when the next one began).
    if (i + 1 == logs.size() && !AnyRecordAfter(b, bad)) {
      char said[256];
      snprintf(said, sizeof said, "%s%s: a torn tail of %zu bytes at byte %zu dropped (a writer stopped mid-record)",
               torn->empty() ? "" : "; ", logs[i].second.filename().c_str(), b.size() - bad, bad);
      *torn += said;
      if (dbo.info_log) ROCKS_LOG_WARN(dbo.info_log, "uihstore: write-ahead log %s", said + (said[0] == ';' ? 2 : 0));
      continue;
    }
    return uih_corruption(err,
                          "store %s: write-ahead log %s is damaged at byte %zu of %zu: %s",
                          dir.c_str(), logs[i].second.filename().c_str(), bad, b.size(),
                          i + 1 == logs.size() ? "whole records follow it, which the open would drop silently"
                                               : "a newer log follows it, so it was whole when that one began");
  }
  return UIH_OK;
}

}  // namespace uih
