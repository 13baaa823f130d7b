#include "counting_table.h"

#include <mutex>

#include "rocksdb/utilities/object_registry.h"
#include "rocksdb/utilities/options_type.h"
#include "table/table_builder.h"
#include "table/table_reader.h"

namespace uih_test {

using namespace rocksdb;

namespace {

class CountingBuilder : public TableBuilder {
 public:
  CountingBuilder(TableBuilder* inner, std::shared_ptr<TableCounters> c)
      : inner_(inner), c_(std::move(c)) {
    c_->builders++;
  }
  void Add(const Slice& key, const Slice& value) override {
    c_->adds++;
    inner_->Add(key, value);
  }
  Status status() const override { return inner_->status(); }
  IOStatus io_status() const override { return inner_->io_status(); }
  Status Finish() override {
    c_->finishes++;
    return inner_->Finish();
  }
  void Abandon() override {
    c_->abandons++;
    inner_->Abandon();
  }
  uint64_t NumEntries() const override { return inner_->NumEntries(); }
  bool IsEmpty() const override { return inner_->IsEmpty(); }
  uint64_t FileSize() const override { return inner_->FileSize(); }
  uint64_t EstimatedFileSize() const override { return inner_->EstimatedFileSize(); }
  bool NeedCompact() const override { return inner_->NeedCompact(); }
  TableProperties GetTableProperties() const override { return inner_->GetTableProperties(); }
  std::string GetFileChecksum() const override { return inner_->GetFileChecksum(); }
  const char* GetFileChecksumFuncName() const override { return inner_->GetFileChecksumFuncName(); }
  void SetSeqnoTimeTableProperties(const std::string& mapping, uint64_t oldest) override {
    inner_->SetSeqnoTimeTableProperties(mapping, oldest);
  }

 private:
  std::unique_ptr<TableBuilder> inner_;
  std::shared_ptr<TableCounters> c_;
};

class CountingReader : public TableReader {
 public:
  CountingReader(std::unique_ptr<TableReader>&& inner, std::shared_ptr<TableCounters> c)
      : inner_(std::move(inner)), c_(std::move(c)) {
    c_->readers++;
  }
  ~CountingReader() override { c_->readers_closed++; }

  InternalIterator* NewIterator(const ReadOptions& ro, const SliceTransform* prefix_extractor,
                                Arena* arena, bool skip_filters, TableReaderCaller caller,
                                size_t compaction_readahead_size,
                                bool allow_unprepared_value) override {
    c_->iterators++;
    return inner_->NewIterator(ro, prefix_extractor, arena, skip_filters, caller,
                               compaction_readahead_size, allow_unprepared_value);
  }
  FragmentedRangeTombstoneIterator* NewRangeTombstoneIterator(const ReadOptions& ro) override {
    return inner_->NewRangeTombstoneIterator(ro);
  }
  uint64_t ApproximateOffsetOf(const Slice& key, TableReaderCaller caller) override {
    return inner_->ApproximateOffsetOf(key, caller);
  }
  uint64_t ApproximateSize(const Slice& start, const Slice& end, TableReaderCaller caller) override {
    return inner_->ApproximateSize(start, end, caller);
  }
  Status ApproximateKeyAnchors(const ReadOptions& ro, std::vector<Anchor>& anchors) override {
    return inner_->ApproximateKeyAnchors(ro, anchors);
  }
  void SetupForCompaction() override { inner_->SetupForCompaction(); }
  std::shared_ptr<const TableProperties> GetTableProperties() const override {
    return inner_->GetTableProperties();
  }
  void Prepare(const Slice& target) override { inner_->Prepare(target); }
  size_t ApproximateMemoryUsage() const override { return inner_->ApproximateMemoryUsage(); }
  Status Get(const ReadOptions& ro, const Slice& key, GetContext* get_context,
             const SliceTransform* prefix_extractor, bool skip_filters) override {
    c_->gets++;
    return inner_->Get(ro, key, get_context, prefix_extractor, skip_filters);
  }
  Status MultiGetFilter(const ReadOptions& ro, const SliceTransform* prefix_extractor,
                        MultiGetContext::Range* range) override {
    return inner_->MultiGetFilter(ro, prefix_extractor, range);
  }
  void MultiGet(const ReadOptions& ro, const MultiGetContext::Range* range,
                const SliceTransform* prefix_extractor, bool skip_filters) override {
    c_->multigets++;
    inner_->MultiGet(ro, range, prefix_extractor, skip_filters);
  }
  Status Prefetch(const Slice* begin, const Slice* end) override {
    return inner_->Prefetch(begin, end);
  }
  Status DumpTable(WritableFile* out) override { return inner_->DumpTable(out); }
  Status VerifyChecksum(const ReadOptions& ro, TableReaderCaller caller) override {
    return inner_->VerifyChecksum(ro, caller);
  }

 private:
  std::unique_ptr<TableReader> inner_;
  std::shared_ptr<TableCounters> c_;
};

}  // namespace

CountingTableFactory::CountingTableFactory()
    : inner_(NewBlockBasedTableFactory()), counters_(std::make_shared<TableCounters>()) {
  // "inner" is a nested customizable option, so
  //   table_factory={id=CountingTable;inner={id=BlockBasedTable;block_size=4096}}
  // configures the wrapped factory, and the OPTIONS file round-trips it.
  static const std::unordered_map<std::string, OptionTypeInfo> kOptions = {
      {"inner", OptionTypeInfo::AsCustomSharedPtr<TableFactory>(0, OptionVerificationType::kNormal,
                                                                OptionTypeFlags::kNone)}};
  RegisterOptions("CountingTableOptions", &inner_, &kOptions);
}

Status CountingTableFactory::NewTableReader(const ReadOptions& ro, const TableReaderOptions& options,
                                            std::unique_ptr<RandomAccessFileReader>&& file,
                                            uint64_t file_size,
                                            std::unique_ptr<TableReader>* reader,
                                            bool prefetch) const {
  std::unique_ptr<TableReader> inner;
  Status s = inner_->NewTableReader(ro, options, std::move(file), file_size, &inner, prefetch);
  if (s.ok()) reader->reset(new CountingReader(std::move(inner), counters_));
  return s;
}

TableBuilder* CountingTableFactory::NewTableBuilder(const TableBuilderOptions& options,
                                                    WritableFileWriter* file) const {
  return new CountingBuilder(inner_->NewTableBuilder(options, file), counters_);
}

void RegisterCountingTable() {
  static std::once_flag once;
  std::call_once(once, [] {
    ObjectLibrary::Default()->AddFactory<TableFactory>(
        CountingTableFactory::kClassName(),
        [](const std::string&, std::unique_ptr<TableFactory>* guard, std::string*) {
          guard->reset(new CountingTableFactory());
          return guard->get();
        });
  });
}

}  // namespace uih_test
