#include "cuda/residency.h"

#include <algorithm>
#include <unordered_set>

namespace ios::cuda {
namespace {

constexpr int64_t kGranule = int64_t{2} << 20;

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

int64_t grown_capacity(int64_t capacity, int64_t request) {
  if (request <= capacity) return capacity;
  return round_up(std::max(request, capacity * 2), kGranule);
}

WeightResidency::Placement WeightResidency::place(const std::vector<Key>& keys) {
  auto bytes_of = [&](const Key& k) { return round_up(static_cast<int64_t>(k->size() * sizeof(float)), alignment_); };
  // What the stage adds, counted once per distinct key.
  int64_t added = 0;
  std::unordered_set<const void*> seen;
  for (const Key& k : keys) {
    if (!entries_.count(k.get()) && seen.insert(k.get()).second) added += bytes_of(k);
  }
  Placement placement;
  if (used_ + added > budget_ && used_ > 0) {
    clear();
    placement.cleared = true;
  }
  placement.offsets.reserve(keys.size());
  placement.upload.reserve(keys.size());
  std::unordered_set<const void*> placed_now;
  for (const Key& k : keys) {
    auto it = entries_.find(k.get());
    if (it != entries_.end()) {
      placement.offsets.push_back(it->second.offset);
      // Placed earlier in this same call: its copy is already queued.
      placement.upload.push_back(false);
      continue;
    }
    entries_.emplace(k.get(), Entry{k, used_});
    placement.offsets.push_back(used_);
    placement.upload.push_back(true);
    used_ += bytes_of(k);
  }
  placement.end = used_;
  return placement;
}

BufferGrowth weight_buffer_growth(int64_t capacity, int64_t resident_before,
                                  const WeightResidency::Placement& placement) {
  if (placement.end <= capacity) return {};
  return {grown_capacity(capacity, placement.end), placement.cleared ? 0 : resident_before};
}

void WeightResidency::clear() {
  entries_.clear();
  used_ = 0;
}

}  // namespace ios::cuda
