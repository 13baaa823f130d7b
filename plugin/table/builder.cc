// UihTable writer: entries go to the engine's builder (values straight to
// the file), then RocksDB's properties block, metaindex and footer.
#include <xxhash.h>

#include <memory>
#include <vector>

#include "db/dbformat.h"
#include "file/writable_file_writer.h"
#include "rocksdb/comparator.h"
#include "rocksdb/merge_operator.h"
#include "uih_plugin/status.h"
#include "tail.h"
#include "table/format.h"
#include "table/meta_blocks.h"
#include "table/table_builder.h"
#include "uih/table.h"
#include "uih_plugin/table.h"

namespace uih {

using namespace rocksdb;

namespace {

class UihTableBuilder : public TableBuilder {
 public:
  UihTableBuilder(const UihTableOptions& options, const TableBuilderOptions& tbo,
                  WritableFileWriter* file)
      : logger_(tbo.ioptions.logger), file_(file), reproducible_(options.reproducible) {
    if (tbo.int_tbl_prop_collector_factories) {
      for (auto& f : *tbo.int_tbl_prop_collector_factories)
        collectors_.emplace_back(
            f->CreateIntTblPropCollector(tbo.column_family_id, tbo.level_at_creation));
    }
    FillFixedProperties(tbo);
    if (tbo.internal_comparator.user_comparator()->GetId() != BytewiseComparator()->GetId()) {
      status_ = Status::NotSupported("UihTable stores keys in bytewise order only");
      return;
    }
    uih_error err{};
    uih_table_build_opts bo = {options.restart_interval, options.index_block_entries,
                               static_cast<uih_table_layout>(options.index_layout)};
    if (uih_table_builder_create(&UihTableBuilder::Write, this, &bo, &c_, &err) != UIH_OK)
      status_ = ToStatus(err);
  }
  ~UihTableBuilder() override { uih_table_builder_free(c_); }

  void Add(const Slice& key, const Slice& value) override {
    if (!ok()) return;
    if (closed_) {  // Finish/Abandon gave the file back: never write to it again
      status_ = Status::InvalidArgument("UihTable builder: Add after Finish/Abandon");
      return;
    }
    ParsedInternalKey pk;
    Status s = ParseInternalKey(key, &pk, /*log_err_key=*/false);
    if (!s.ok()) {
      status_ = s;
      return;
    }
    if (pk.type == kTypeRangeDeletion) {
      status_ = Status::NotSupported("UihTable does not store range deletions");
      return;
    }
    uint64_t trailer = DecodeFixed64(key.data() + key.size() - kNumInternalBytes);
    uih_error err{};
    if (uih_table_builder_add(c_, reinterpret_cast<const uint8_t*>(pk.user_key.data()),
                              pk.user_key.size(), trailer, value.data(), value.size(), &err) != UIH_OK) {
      if (io_status_.ok()) status_ = ToStatus(err);
      else status_ = io_status_;
      return;
    }
    props_.num_entries++;
    props_.raw_key_size += key.size();
    props_.raw_value_size += value.size();
    if (pk.type == kTypeDeletion || pk.type == kTypeSingleDeletion ||
        pk.type == kTypeDeletionWithTimestamp)
      props_.num_deletions++;
    else if (pk.type == kTypeMerge)
      props_.num_merge_operands++;
    NotifyCollectTableCollectorsOnAdd(key, value, offset_, collectors_, logger_);
  }

  Status status() const override { return status_; }
  IOStatus io_status() const override { return io_status_; }

  Status Finish() override {
    if (closed_) return Status::InvalidArgument("UihTable builder: Finish after Finish/Abandon");
    closed_ = true;
    if (!ok()) return status_;
    const uint8_t* index;
    size_t index_len;
    uih_error err{};
    if (uih_table_builder_finish(c_, &index, &index_len, &err) != UIH_OK) return status_ = ToStatus(err);
    uih_table_build_stats st;
    uih_table_builder_stats(c_, &st);
    props_.data_size = st.data_size;
    props_.index_size = index_len;
    props_.num_data_blocks = st.entries ? 1 : 0;
    NotifyCollectTableCollectorsOnBlockAdd(collectors_, st.data_size, 0, 0);

    BlockHandle index_handle;
    AppendBlock(Slice(reinterpret_cast<const char*>(index), index_len), &index_handle);

    PropertyBlockBuilder pbb;
    pbb.AddTableProperty(props_);
    pbb.Add(props_.user_collected_properties);
    pbb.Add(kIndexLayoutProperty, st.layout == UIH_TABLE_LAYOUT_NUMERIC ? "numeric" : "prefix");
    NotifyCollectTableCollectorsOnFinish(collectors_, logger_, &pbb);
    Slice props_block = pbb.Finish();
    TableTail tail;
    tail.seqno_at = FindSeqnoField(props_block);
    tail.properties_sum = PropertiesChecksum(props_block, tail.seqno_at);
    BlockHandle props_handle;
    AppendBlock(props_block, &props_handle);

    MetaIndexBuilder meta;
    meta.Add(kPropertiesBlockName, props_handle);
    meta.Add(UIH_TABLE_INDEX_NAME, index_handle);
    Slice meta_block = meta.Finish();
    tail.metaindex_sum = XXH3_64bits(meta_block.data(), meta_block.size());
    BlockHandle meta_handle;
    AppendBlock(meta_block, &meta_handle);
    Append(EncodeTableTail(tail));

    FooterBuilder footer;
    footer.Build(UIH_TABLE_MAGIC, /*format_version=*/1, offset_, kNoChecksum, meta_handle);
    Append(footer.GetSlice());
    return status_;
  }

  void Abandon() override { closed_ = true; }
  uint64_t NumEntries() const override { return props_.num_entries; }
  // Not empty once failed: RocksDB's flush (db/builder.cc) abandons an
  // empty builder without asking for its status, which would drop the
  // memtable's data; a failed builder must reach Finish() and fail it.
  bool IsEmpty() const override { return props_.num_entries == 0 && ok(); }
  uint64_t FileSize() const override { return offset_; }
  bool NeedCompact() const override {
    for (const auto& c : collectors_)
      if (c->NeedCompact()) return true;
    return false;
  }
  TableProperties GetTableProperties() const override {
    TableProperties p = props_;
    for (const auto& c : collectors_) {
      for (const auto& kv : c->GetReadableProperties()) p.readable_properties.insert(kv);
      c->Finish(&p.user_collected_properties);
    }
    return p;
  }
  std::string GetFileChecksum() const override { return file_->GetFileChecksum(); }
  const char* GetFileChecksumFuncName() const override { return file_->GetFileChecksumFuncName(); }
  void SetSeqnoTimeTableProperties(const std::string& mapping, uint64_t oldest_ancestor_time) override {
    props_.seqno_to_time_mapping = mapping;
    props_.creation_time = reproducible_ ? 0 : oldest_ancestor_time;
  }

 private:
  bool ok() const { return status_.ok() && io_status_.ok(); }

  // The engine's write callback.
  static int Write(void* ctx, const void* data, size_t len) {
    auto* self = static_cast<UihTableBuilder*>(ctx);
    self->Append(Slice(static_cast<const char*>(data), len));
    return self->io_status_.ok() ? UIH_OK : UIH_ERR_IO;
  }

  void Append(const Slice& data) {
    if (!io_status_.ok()) return;
    io_status_ = file_->Append(data);
    if (io_status_.ok()) offset_ += data.size();
    else status_ = io_status_;
  }
  void AppendBlock(const Slice& block, BlockHandle* handle) {
    *handle = BlockHandle(offset_, block.size());
    Append(block);
  }

  // Everything taken from the options happens here: `tbo` may not outlive
  // the builder (SstFileWriter builds it on its stack).
  void FillFixedProperties(const TableBuilderOptions& tbo) {
    props_.column_family_id = tbo.column_family_id;
    props_.column_family_name = tbo.column_family_name;
    props_.oldest_key_time = tbo.oldest_key_time;
    props_.file_creation_time = tbo.file_creation_time;
    props_.orig_file_number = tbo.cur_file_num;
    props_.db_id = tbo.db_id;
    props_.db_session_id = tbo.db_session_id;
    props_.db_host_id = tbo.ioptions.db_host_id;
    if (!ReifyDbHostIdProperty(tbo.ioptions.env, &props_.db_host_id).ok()) props_.db_host_id.clear();
    if (reproducible_) {  // what differs from one run to the next
      props_.oldest_key_time = props_.file_creation_time = props_.orig_file_number = 0;
      props_.db_id.clear();
      props_.db_session_id.clear();
      props_.db_host_id.clear();
    }
    props_.format_version = 1;
    props_.fixed_key_len = 0;
    props_.comparator_name = tbo.internal_comparator.user_comparator()->Name();
    props_.merge_operator_name =
        tbo.ioptions.merge_operator ? tbo.ioptions.merge_operator->Name() : "nullptr";
    props_.prefix_extractor_name =
        tbo.moptions.prefix_extractor ? tbo.moptions.prefix_extractor->AsString() : "nullptr";
    props_.compression_name = "NoCompression";  // values are stripes, encoded by the engine
    std::string names = "[";
    for (size_t i = 0; i < tbo.ioptions.table_properties_collector_factories.size(); i++) {
      if (i) names += ",";
      names += tbo.ioptions.table_properties_collector_factories[i]->Name();
    }
    props_.property_collectors_names = names + "]";
  }

  Logger* logger_;
  WritableFileWriter* file_;
  bool reproducible_;
  uih_table_builder* c_ = nullptr;
  std::vector<std::unique_ptr<IntTblPropCollector>> collectors_;
  TableProperties props_;
  Status status_;
  IOStatus io_status_;
  uint64_t offset_ = 0;
  bool closed_ = false;
};

}  // namespace

TableBuilder* NewUihTableBuilder(const UihTableOptions& options, const TableBuilderOptions& tbo,
                                 WritableFileWriter* file) {
  return new UihTableBuilder(options, tbo, file);
}

}  // namespace uih
