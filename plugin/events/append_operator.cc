// UihAppend: RocksDB's MergeOperator over uih_events_merge_value().
#include <unordered_map>

#include "rocksdb/env.h"
#include "rocksdb/utilities/options_type.h"
#include "uih_plugin/events.h"
#include "uih/key.h"

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

// The operands as uih_slices, in a per-thread array kept between merges.
template <typename Slices>
const std::vector<uih_slice>& AsSlices(const Slices& in) {
  thread_local std::vector<uih_slice> slices;
  slices.resize(in.size());
  size_t i = 0;
  for (const Slice& s : in) slices[i++] = {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
  return slices;
}

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
  const std::vector<uih_slice>& ops = AsSlices(in.operand_list);
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
  // A merge that is one of its inputs unchanged (a read of a key with one
  // operand, or a value alone) hands that input back: RocksDB uses it as
  // it is, no copy.
  if (in.existing_value && p == existing.data) {
    out->existing_operand = *in.existing_value;
    return true;
  }
  for (size_t i = 0; i < ops.size(); i++)
    if (p == ops[i].data) {
      out->existing_operand = in.operand_list[i];
      return true;
    }
  out->new_value.assign(reinterpret_cast<const char*>(p), n);
  return true;
}

bool UihAppendOperator::PartialMergeMulti(const Slice& key, const std::deque<Slice>& operands,
                                          std::string* new_value, Logger* /*logger*/) const {
  uih_events* ev = ThreadEvents<Workspace::kMergeOperator>();
  const uint8_t* k = reinterpret_cast<const uint8_t*>(key.data());
  uint64_t user;
  uint16_t group;
  uih_key chunk;
  if (key.size() == UIH_KEY_SIZE && uih_key_decode(k, key.size(), &chunk, nullptr) == UIH_OK)
    group = chunk.group;  // a chunk's key
  else if (uih_key_group_prefix_decode(k, key.size(), &user, &group, nullptr) != UIH_OK)
    return false;
  if (ev == nullptr) return false;
  const std::vector<uih_slice>& ops = AsSlices(operands);
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
