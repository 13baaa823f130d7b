// UihRetention: drops mutable events below the watermark during compaction,
// through uih_events_retain().
#include "uih_plugin/events.h"

namespace uih {

using namespace rocksdb;

namespace {

class RetentionFilter : public CompactionFilter {
 public:
  explicit RetentionFilter(int64_t watermark) : watermark_(watermark) {}
  const char* Name() const override { return UihRetentionFactory::kClassName(); }

  Decision FilterV2(int /*level*/, const Slice& /*key*/, ValueType type, const Slice& value,
                    std::string* new_value, std::string* /*skip_until*/) const override {
    if (type != ValueType::kValue && type != ValueType::kMergeOperand) return Decision::kKeep;
    uih_events* ev = ThreadEvents<Workspace::kRetention>();
    if (ev == nullptr) return Decision::kKeep;
    const uint8_t* p;
    size_t n;
    switch (uih_events_retain(ev, reinterpret_cast<const uint8_t*>(value.data()), value.size(),
                              watermark_, &p, &n)) {
      case UIH_RETAIN_REMOVE: return Decision::kRemove;
      case UIH_RETAIN_CHANGE:
        new_value->assign(reinterpret_cast<const char*>(p), n);
        return Decision::kChangeValue;
      case UIH_RETAIN_KEEP: break;
    }
    return Decision::kKeep;
  }

 private:
  const int64_t watermark_;  // read once per compaction: one consistent cut
};

}  // namespace

std::unique_ptr<CompactionFilter> UihRetentionFactory::CreateCompactionFilter(
    const CompactionFilter::Context& /*context*/) {
  int64_t watermark;
  if (!Watermark(&watermark)) return nullptr;  // no watermark: keep everything
  return std::make_unique<RetentionFilter>(watermark);
}

}  // namespace uih
