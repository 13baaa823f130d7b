// The tail UihTable writes between the metaindex block and RocksDB's footer.
// RocksDB parses a table's metaindex and properties blocks with code that
// asserts on malformed input (Debian builds it without NDEBUG) and, for
// tables other than BlockBasedTable, checks no checksum first. The tail
// carries those checksums, so the reader verifies the bytes before any
// RocksDB parser sees them.
//
//   offset  size  field
//   0          4  magic "UIHT"
//   4          4  version (1)
//   8          8  XXH3-64 of the metaindex block
//   16         8  XXH3-64 of the properties block, with the 8 bytes at
//                 seqno_at zeroed (ingestion may rewrite them in place)
//   24         4  seqno_at: offset of the global sequence number's value
//                 inside the properties block, 0xffffffff if there is none
//   28         4  reserved (0)
//   32         8  XXH3-64 of bytes 0..31
#pragma once

#include <cstdint>
#include <string>

#include "rocksdb/slice.h"
#include "rocksdb/status.h"

namespace uih {

constexpr size_t kTableTailSize = 40;
constexpr uint32_t kNoSeqnoField = 0xffffffffu;

struct TableTail {
  uint64_t metaindex_sum = 0;
  uint64_t properties_sum = 0;
  uint32_t seqno_at = kNoSeqnoField;
};

std::string EncodeTableTail(const TableTail& tail);
rocksdb::Status DecodeTableTail(const rocksdb::Slice& bytes, TableTail* tail);

// XXH3-64 of `block` with the 8 bytes at `seqno_at` zeroed (when inside it).
uint64_t PropertiesChecksum(const rocksdb::Slice& block, uint32_t seqno_at);

// Where the global sequence number's value sits inside a properties block
// this process just built (parsed with RocksDB's block reader), or
// kNoSeqnoField.
uint32_t FindSeqnoField(const rocksdb::Slice& properties_block);

}  // namespace uih
