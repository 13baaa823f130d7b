#include <unordered_map>

#include "rocksdb/comparator.h"
#include "rocksdb/options.h"
#include "rocksdb/utilities/options_type.h"
#include "uih_plugin/table.h"

namespace uih {

using namespace rocksdb;

namespace {

const std::unordered_map<std::string, UihTableOptions::IndexLayout> kIndexLayouts = {
    {"auto", UihTableOptions::IndexLayout::kAuto},
    {"prefix", UihTableOptions::IndexLayout::kPrefix},
    {"numeric", UihTableOptions::IndexLayout::kNumeric},
};

const std::unordered_map<std::string, OptionTypeInfo> kUihTableOptionsTypeInfo = {
    {"index_layout",
     OptionTypeInfo::Enum<UihTableOptions::IndexLayout>(offsetof(UihTableOptions, index_layout),
                                                        &kIndexLayouts)},
    {"index_block_entries",
     {offsetof(UihTableOptions, index_block_entries), OptionType::kUInt32T,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"restart_interval",
     {offsetof(UihTableOptions, restart_interval), OptionType::kUInt32T,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"readahead_size",
     {offsetof(UihTableOptions, readahead_size), OptionType::kSizeT,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"cache_size",
     {offsetof(UihTableOptions, cache_size), OptionType::kSizeT,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"use_io_uring",
     {offsetof(UihTableOptions, use_io_uring), OptionType::kBoolean,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"reproducible",
     {offsetof(UihTableOptions, reproducible), OptionType::kBoolean,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
};

}  // namespace

UihTableFactory::UihTableFactory(const UihTableOptions& options) : options_(options) {
  RegisterOptions(kOptionsName(), &options_, &kUihTableOptionsTypeInfo);
}

Status UihTableFactory::ValidateOptions(const DBOptions& db_opts,
                                        const ColumnFamilyOptions& cf_opts) const {
  if (cf_opts.comparator == nullptr ||
      cf_opts.comparator->GetId() != BytewiseComparator()->GetId()) {
    return Status::NotSupported("UihTable stores keys in bytewise order only; comparator is ",
                                cf_opts.comparator ? cf_opts.comparator->Name() : "null");
  }
  if (options_.restart_interval < 1 || options_.restart_interval > 1024) {
    return Status::InvalidArgument("UihTable restart_interval must be in [1, 1024], is ",
                                   std::to_string(options_.restart_interval));
  }
  if (options_.index_block_entries < 1 || options_.index_block_entries > 1024) {
    return Status::InvalidArgument("UihTable index_block_entries must be in [1, 1024], is ",
                                   std::to_string(options_.index_block_entries));
  }
  return TableFactory::ValidateOptions(db_opts, cf_opts);
}

const UihTableOptions& UihTableFactory::Resolved() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (!options_.cache && options_.cache_size > 0) {
    auto* self = const_cast<UihTableFactory*>(this);
    self->options_.cache = NewLRUCache(options_.cache_size);
  }
  return options_;
}

Status UihTableFactory::NewTableReader(const ReadOptions& ro, const TableReaderOptions& options,
                                       std::unique_ptr<RandomAccessFileReader>&& file,
                                       uint64_t file_size, std::unique_ptr<TableReader>* reader,
                                       bool /*prefetch_index_and_filter_in_cache*/) const {
  return OpenUihTable(Resolved(), ro, options, std::move(file), file_size, reader);
}

TableBuilder* UihTableFactory::NewTableBuilder(const TableBuilderOptions& options,
                                               WritableFileWriter* file) const {
  return NewUihTableBuilder(options_, options, file);
}

}  // namespace uih
