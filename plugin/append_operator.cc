// UihAppend: RocksDB's MergeOperator over uih_events_merge_value().
#include <unordered_map>

#include "rocksdb/env.h"
#include "rocksdb/utilities/options_type.h"
#include "thread_events.h"
#include "uih_mutable.h"

namespace uih {

using namespace rocksdb;

namespace {

const std::unordered_map<std::string, OptionTypeInfo> kLimitsTypeInfo = {
    {"max_events",
     {offsetof(uih_events_limits, max_events), OptionType::kUInt32T,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
    {"max_age",
     {offsetof(uih_events_limits, max_age), OptionType::kInt64T,
      OptionVerificationType::kNormal, OptionTypeFlags::kNone}},
};

}  // namespace

UihAppendOperator::UihAppendOperator(const uih_events_limits& limits) : limits_(limits) {
  RegisterOptions(kOptionsName(), &limits_, &kLimitsTypeInfo);
}

bool UihAppendOperator::FullMergeV2(const MergeOperationInput& in,
                                    MergeOperationOutput* out) const {
  uih_events* ev = ThreadEvents<Workspace::kMergeOperator>();
  if (ev == nullptr) return false;
  uih_slice existing{};
  if (in.existing_value)
    existing = {reinterpret_cast<const uint8_t*>(in.existing_value->data()),
                in.existing_value->size()};
  // Slice and uih_slice are both (pointer, size); build the array once.
  std::vector<uih_slice> ops(in.operand_list.size());
  for (size_t i = 0; i < ops.size(); i++)
    ops[i] = {reinterpret_cast<const uint8_t*>(in.operand_list[i].data()),
              in.operand_list[i].size()};
  const uint8_t* p;
  size_t n;
  int quarantined = 0;
  uih_error why{};
  int rc = uih_events_merge_value(ev, reinterpret_cast<const uint8_t*>(in.key.data()),
                                  in.key.size(), in.existing_value ? &existing : nullptr,
                                  ops.data(), ops.size(), &limits_, &p, &n, &quarantined, &why);
  if (rc != UIH_OK || quarantined)
    Log(InfoLogLevel::ERROR_LEVEL, in.logger, "UihAppend: %s%s", uih_error_message(&why),
        rc == UIH_OK ? " (value quarantined, nothing dropped)" : "");
  if (rc != UIH_OK) return false;
  out->new_value.assign(reinterpret_cast<const char*>(p), n);
  return true;
}

bool UihAppendOperator::PartialMergeMulti(const Slice& key, const std::deque<Slice>& operands,
                                          std::string* new_value, Logger* /*logger*/) const {
  uih_events* ev = ThreadEvents<Workspace::kMergeOperator>();
  if (ev == nullptr || key.size() != 10) return false;
  std::vector<uih_slice> ops(operands.size());
  for (size_t i = 0; i < ops.size(); i++)
    ops[i] = {reinterpret_cast<const uint8_t*>(operands[i].data()), operands[i].size()};
  uint16_t group = static_cast<uint16_t>((static_cast<uint8_t>(key[8]) << 8) |
                                         static_cast<uint8_t>(key[9]));
  const uint8_t* p;
  size_t n;
  // A malformed operand: decline, RocksDB keeps the operands and the full
  // merge quarantines them.
  if (uih_events_merge(ev, group, ops.data(), ops.size(), &limits_, &p, &n, nullptr) != UIH_OK)
    return false;
  new_value->assign(reinterpret_cast<const char*>(p), n);
  return true;
}

}  // namespace uih
