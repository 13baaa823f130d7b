#include "tail.h"

#include "uih_plugin/status.h"

#include <xxhash.h>

#include <cstring>
#include <memory>

#include "table/block_based/block.h"
#include "table/format.h"
#include "table/sst_file_writer_collectors.h"
#include "util/coding.h"

namespace uih {

using namespace rocksdb;

namespace {
constexpr uint32_t kTailMagic = 0x54484955u;  // "UIHT"
}

std::string EncodeTableTail(const TableTail& t) {
  std::string out;
  PutFixed32(&out, kTailMagic);
  PutFixed32(&out, 1);
  PutFixed64(&out, t.metaindex_sum);
  PutFixed64(&out, t.properties_sum);
  PutFixed32(&out, t.seqno_at);
  PutFixed32(&out, 0);
  PutFixed64(&out, XXH3_64bits(out.data(), out.size()));
  return out;
}

Status DecodeTableTail(const Slice& b, TableTail* t) {
  if (b.size() != kTableTailSize || DecodeFixed32(b.data()) != kTailMagic)
    return TableCorruption("the checksum tail before the footer is missing");
  if (DecodeFixed64(b.data() + 32) != XXH3_64bits(b.data(), 32))
    return TableCorruption("the checksum tail before the footer is damaged");
  if (DecodeFixed32(b.data() + 4) != 1)
    return Status::NotSupported("UihTable: tail version ", std::to_string(DecodeFixed32(b.data() + 4)));
  t->metaindex_sum = DecodeFixed64(b.data() + 8);
  t->properties_sum = DecodeFixed64(b.data() + 16);
  t->seqno_at = DecodeFixed32(b.data() + 24);
  return Status::OK();
}

uint64_t PropertiesChecksum(const Slice& block, uint32_t seqno_at) {
  if (seqno_at == kNoSeqnoField || block.size() < 8 || seqno_at > block.size() - 8)
    return XXH3_64bits(block.data(), block.size());
  std::string copy = block.ToString();
  memset(&copy[seqno_at], 0, 8);
  return XXH3_64bits(copy.data(), copy.size());
}

uint32_t FindSeqnoField(const Slice& properties_block) {
  // The block is ours and fresh, so RocksDB's parser is safe on it.
  std::unique_ptr<char[]> copy(new char[properties_block.size()]);
  memcpy(copy.get(), properties_block.data(), properties_block.size());
  BlockContents contents(std::move(copy), properties_block.size());
  Block block(std::move(contents));
  std::unique_ptr<MetaBlockIter> it(block.NewMetaIterator());
  for (it->SeekToFirst(); it->Valid(); it->Next())
    if (it->key() == ExternalSstFilePropertyNames::kGlobalSeqno) return it->ValueOffset();
  return kNoSeqnoField;
}

}  // namespace uih
