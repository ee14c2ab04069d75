#include "exec/memory_layout.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "core/error.h"

namespace ios::exec {

HappensBefore::HappensBefore(int num_launches, int num_streams, int num_events,
                             const std::vector<exec::Step>& steps) {
  const auto n = static_cast<size_t>(num_launches);
  position_.assign(n, -1);
  launch_at_.reserve(n);
  for (const exec::Step& step : steps) {
    if (step.kind != exec::Step::Kind::kLaunch) continue;
    IOS_ASSERT(step.kernel >= 0 && step.kernel < num_launches, "launch {} of {}", step.kernel, num_launches);
    IOS_ASSERT(position_[static_cast<size_t>(step.kernel)] < 0, "launch {} issued twice", step.kernel);
    position_[static_cast<size_t>(step.kernel)] = static_cast<int>(launch_at_.size());
    launch_at_.push_back(step.kernel);
  }
  for (size_t k = 0; k < n; ++k) {
    if (position_[k] >= 0) continue;
    position_[k] = static_cast<int>(launch_at_.size());
    launch_at_.push_back(static_cast<int>(k));
  }

  preds_.assign(n, DynBitset(n));
  // What is known complete at the current point of each stream, and at the
  // most recent record of each event (positions).
  std::vector<DynBitset> stream(static_cast<size_t>(num_streams), DynBitset(n));
  std::vector<DynBitset> event(static_cast<size_t>(num_events), DynBitset(n));
  std::vector<char> recorded(static_cast<size_t>(num_events), 0);
  for (const exec::Step& step : steps) {
    IOS_ASSERT(step.stream >= 0 && step.stream < num_streams, "step on stream {} of {}", step.stream, num_streams);
    DynBitset& s = stream[static_cast<size_t>(step.stream)];
    switch (step.kind) {
      case exec::Step::Kind::kLaunch: {
        const auto at = static_cast<size_t>(position_[static_cast<size_t>(step.kernel)]);
        preds_[at] = s;
        s.set(at);
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

// Positions ordered before every user of `r` (all positions when it has none).
DynBitset common_preds(const MemoryRequest& r, const HappensBefore& order) {
  DynBitset all(static_cast<size_t>(order.size()));
  bool first = true;
  for (int u : r.users) {
    if (first) {
      all = order.preds_at(order.position(u));
      first = false;
    } else {
      all &= order.preds_at(order.position(u));
    }
  }
  return all;
}

bool all_in(const std::vector<int>& users, const DynBitset& set, const HappensBefore& order) {
  return std::all_of(users.begin(), users.end(),
                     [&](int u) { return set.test(static_cast<size_t>(order.position(u))); });
}

// Calls f(p) for every position p < end whose bit in `set` is clear.
template <typename F>
void for_each_clear_before(const DynBitset& set, size_t end, F&& f) {
  for (size_t w = 0; w * 64 < end; ++w) {
    uint64_t clear = ~set.word(w);
    if ((w + 1) * 64 > end) clear &= (uint64_t{1} << (end - w * 64)) - 1;
    while (clear != 0) {
      f(w * 64 + static_cast<size_t>(std::countr_zero(clear)));
      clear &= clear - 1;
    }
  }
}

int64_t align_up(int64_t v, int64_t a) { return (std::max<int64_t>(v, 1) + a - 1) / a * a; }

// The first and last issue positions of a request's users.
struct Span {
  int first = 0;
  int last = -1;
};

std::vector<Span> spans_of(const std::vector<MemoryRequest>& requests, const HappensBefore& order) {
  std::vector<Span> spans(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].users.empty()) continue;
    spans[i] = {order.size(), -1};
    for (int u : requests[i].users) {
      spans[i].first = std::min(spans[i].first, order.position(u));
      spans[i].last = std::max(spans[i].last, order.position(u));
    }
  }
  return spans;
}

// For each position, the requests (indices) one of whose users it is.
std::vector<std::vector<int>> requests_by_position(const std::vector<MemoryRequest>& requests,
                                                   const HappensBefore& order) {
  std::vector<std::vector<int>> by_position(static_cast<size_t>(order.size()));
  for (size_t i = 0; i < requests.size(); ++i) {
    for (int u : requests[i].users) {
      auto& list = by_position[static_cast<size_t>(order.position(u))];
      if (list.empty() || list.back() != static_cast<int>(i)) list.push_back(static_cast<int>(i));
    }
  }
  return by_position;
}

}  // namespace

bool may_share(const MemoryRequest& a, const MemoryRequest& b, const HappensBefore& order) {
  if (a.persistent || b.persistent) return false;
  if (a.users.empty() || b.users.empty()) return true;
  return all_in(a.users, common_preds(b, order), order) || all_in(b.users, common_preds(a, order), order);
}

// Two requests with users, of spans a and b in issue order:
//  - overlapping spans never share: some user of each is issued no earlier
//    than a user of the other, so neither set can all be ordered before the
//    other;
//  - when a ends before b begins, b's users cannot precede a's, so they share
//    exactly when every user of a is ordered before every user of b, that is
//    when no user of a is among the launches issued before b's first that are
//    not ordered before all of b's users.
// A sweep over the spans finds the first kind, the clear bits of each
// request's common predecessors the second; neither looks at a pair that
// shares, apart from the persistent requests, which conflict with all.
std::optional<std::vector<std::vector<int>>> memory_conflicts(const std::vector<MemoryRequest>& requests,
                                                              const HappensBefore& order, int64_t max_pairs) {
  const size_t n = requests.size();
  std::vector<std::vector<int>> conflicts(n);
  int64_t pairs = 0;
  auto add = [&](size_t a, size_t b) {
    conflicts[a].push_back(static_cast<int>(b));
    conflicts[b].push_back(static_cast<int>(a));
    ++pairs;
  };
  std::vector<size_t> persistent;
  for (size_t i = 0; i < n; ++i) {
    if (requests[i].persistent) persistent.push_back(i);
  }
  if (static_cast<int64_t>(persistent.size()) * static_cast<int64_t>(n) > max_pairs) return std::nullopt;
  for (size_t k = 0; k < persistent.size(); ++k) {
    for (size_t j = 0; j < n; ++j) {
      if (j == persistent[k] || (requests[j].persistent && j < persistent[k])) continue;
      add(persistent[k], j);
    }
  }

  const std::vector<Span> spans = spans_of(requests, order);
  std::vector<size_t> by_first;
  for (size_t i = 0; i < n; ++i) {
    if (!requests[i].persistent && !requests[i].users.empty()) by_first.push_back(i);
  }
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return spans[a].first < spans[b].first; });
  const std::vector<std::vector<int>> at_position = requests_by_position(requests, order);

  std::vector<size_t> active;  // spans begun and not ended, in begin order
  std::vector<size_t> stamp(n, n);
  for (size_t i : by_first) {
    const Span& s = spans[i];
    std::erase_if(active, [&](size_t j) { return spans[j].last < s.first; });
    if (pairs + static_cast<int64_t>(active.size()) > max_pairs) return std::nullopt;
    for (size_t j : active) add(i, j);
    active.push_back(i);

    stamp[i] = i;
    for_each_clear_before(common_preds(requests[i], order), static_cast<size_t>(s.first), [&](size_t p) {
      for (int j : at_position[p]) {
        const auto ju = static_cast<size_t>(j);
        if (stamp[ju] == i || requests[ju].persistent || spans[ju].last >= s.first) continue;
        stamp[ju] = i;
        add(i, ju);
      }
    });
    if (pairs > max_pairs) return std::nullopt;
  }
  return conflicts;
}

MemoryLayout plan_memory(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                         int64_t alignment) {
  const size_t n = requests.size();
  MemoryLayout layout;
  layout.offsets.assign(n, 0);
  const std::optional<std::vector<std::vector<int>>> conflicts = memory_conflicts(requests, order);
  if (!conflicts) {
    for (size_t i = 0; i < n; ++i) {
      layout.offsets[i] = layout.unshared_bytes;
      layout.unshared_bytes += align_up(requests[i].bytes, alignment);
    }
    layout.total_bytes = layout.unshared_bytes;
    return layout;
  }

  std::vector<size_t> by_size(n);
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<char> placed(n, 0);
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : by_size) {
    const int64_t size = align_up(requests[i].bytes, alignment);
    layout.unshared_bytes += size;
    busy.clear();
    for (int j : (*conflicts)[i]) {
      const auto ju = static_cast<size_t>(j);
      if (placed[ju]) busy.emplace_back(layout.offsets[ju], layout.offsets[ju] + align_up(requests[ju].bytes, alignment));
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    placed[i] = 1;
  }
  return layout;
}

// Live at the launch at position k: every request whose span covers k (a
// difference array over positions), every persistent request with users, and
// the requests wholly before or after k with a user that may run at the same
// time as k (issued earlier and not ordered before it, or issued later and
// not ordered after it).
int64_t live_peak_bytes(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                        int64_t alignment) {
  const size_t n = requests.size();
  const auto positions = static_cast<size_t>(order.size());
  if (positions == 0) {
    int64_t persistent = 0;
    for (const MemoryRequest& r : requests) persistent += r.persistent ? align_up(r.bytes, alignment) : 0;
    return persistent;
  }
  const std::vector<Span> spans = spans_of(requests, order);
  int64_t always = 0;
  std::vector<int64_t> covering(positions + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (requests[i].users.empty()) continue;
    const int64_t bytes = align_up(requests[i].bytes, alignment);
    if (requests[i].persistent) {
      always += bytes;
    } else {
      covering[static_cast<size_t>(spans[i].first)] += bytes;
      covering[static_cast<size_t>(spans[i].last) + 1] -= bytes;
    }
  }
  // Concurrent launches of each position, both directions.
  std::vector<std::vector<int>> concurrent(positions);
  for (size_t k = 0; k < positions; ++k) {
    for_each_clear_before(order.preds_at(static_cast<int>(k)), k, [&](size_t p) {
      concurrent[k].push_back(static_cast<int>(p));
      concurrent[p].push_back(static_cast<int>(k));
    });
  }
  const std::vector<std::vector<int>> at_position = requests_by_position(requests, order);
  std::vector<size_t> stamp(n, positions);
  int64_t peak = 0;
  int64_t cover = 0;
  for (size_t k = 0; k < positions; ++k) {
    cover += covering[k];
    int64_t live = always + cover;
    for (int p : concurrent[k]) {
      for (int j : at_position[static_cast<size_t>(p)]) {
        const auto ju = static_cast<size_t>(j);
        const Span& s = spans[ju];
        const bool covers = s.first <= static_cast<int>(k) && static_cast<int>(k) <= s.last;
        if (stamp[ju] == k || requests[ju].persistent || covers) continue;
        stamp[ju] = k;
        live += align_up(requests[ju].bytes, alignment);
      }
    }
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace ios::exec
