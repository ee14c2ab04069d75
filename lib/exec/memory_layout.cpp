#include "exec/memory_layout.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace ios::exec {

HappensBefore::HappensBefore(int num_launches, int num_streams, int num_events,
                             const std::vector<exec::Step>& steps) {
  const auto n = static_cast<size_t>(num_launches);
  preds_.assign(n, DynBitset(n));
  // What is known complete at the current point of each stream, and at the
  // most recent record of each event.
  std::vector<DynBitset> stream(static_cast<size_t>(num_streams), DynBitset(n));
  std::vector<DynBitset> event(static_cast<size_t>(num_events), DynBitset(n));
  std::vector<char> recorded(static_cast<size_t>(num_events), 0);
  for (const exec::Step& step : steps) {
    IOS_ASSERT(step.stream >= 0 && step.stream < num_streams, "step on stream {} of {}", step.stream, num_streams);
    DynBitset& s = stream[static_cast<size_t>(step.stream)];
    switch (step.kind) {
      case exec::Step::Kind::kLaunch: {
        IOS_ASSERT(step.kernel >= 0 && step.kernel < num_launches, "launch {} of {}", step.kernel, num_launches);
        preds_[static_cast<size_t>(step.kernel)] = s;
        s.set(static_cast<size_t>(step.kernel));
        break;
      }
      case exec::Step::Kind::kRecord:
        IOS_ASSERT(step.event >= 0 && step.event < num_events, "event {} of {}", step.event, num_events);
        event[static_cast<size_t>(step.event)] = s;
        recorded[static_cast<size_t>(step.event)] = 1;
        break;
      case exec::Step::Kind::kWait:
        IOS_ASSERT(step.event >= 0 && step.event < num_events, "event {} of {}", step.event, num_events);
        // A wait on a never-recorded event is a no-op in CUDA.
        if (recorded[static_cast<size_t>(step.event)]) s |= event[static_cast<size_t>(step.event)];
        break;
      case exec::Step::Kind::kSync: {
        // Every stream continues after everything issued so far.
        DynBitset all(n);
        for (const DynBitset& other : stream) all |= other;
        for (DynBitset& other : stream) other = all;
        break;
      }
    }
  }
}

namespace {

// Launches ordered before every user of `r` (all launches when it has none).
DynBitset common_preds(const MemoryRequest& r, const HappensBefore& order) {
  DynBitset all(static_cast<size_t>(order.size()));
  bool first = true;
  for (int u : r.users) {
    if (first) {
      all = order.preds(u);
      first = false;
      continue;
    }
    const DynBitset& p = order.preds(u);
    DynBitset next(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      if (all.test(i) && p.test(i)) next.set(i);
    }
    all = std::move(next);
  }
  return all;
}

bool all_in(const std::vector<int>& users, const DynBitset& set) {
  return std::all_of(users.begin(), users.end(), [&](int u) { return set.test(static_cast<size_t>(u)); });
}

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

bool may_share(const MemoryRequest& a, const MemoryRequest& b, const HappensBefore& order) {
  if (a.persistent || b.persistent) return false;
  if (a.users.empty() || b.users.empty()) return true;
  return all_in(a.users, common_preds(b, order)) || all_in(b.users, common_preds(a, order));
}

MemoryLayout plan_memory(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                         int64_t alignment) {
  const size_t n = requests.size();
  MemoryLayout layout;
  layout.offsets.assign(n, 0);
  std::vector<DynBitset> before_all(n);
  for (size_t i = 0; i < n; ++i) before_all[i] = common_preds(requests[i], order);
  auto share = [&](size_t a, size_t b) {
    const MemoryRequest& ra = requests[a];
    const MemoryRequest& rb = requests[b];
    if (ra.persistent || rb.persistent) return false;
    if (ra.users.empty() || rb.users.empty()) return true;
    return all_in(ra.users, before_all[b]) || all_in(rb.users, before_all[a]);
  };

  std::vector<size_t> by_size(n);
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : by_size) {
    const int64_t size = align_up(std::max<int64_t>(requests[i].bytes, 1), alignment);
    layout.unshared_bytes += size;
    busy.clear();
    for (size_t j : placed) {
      if (!share(i, j)) {
        busy.emplace_back(layout.offsets[j], layout.offsets[j] + align_up(std::max<int64_t>(requests[j].bytes, 1), alignment));
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    placed.push_back(i);
  }
  return layout;
}

}  // namespace ios::exec
