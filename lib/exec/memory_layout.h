// Memory placement by liveness over a multi-stream plan: the last step of
// the storage plan (storage_plan.h), shared by both backends.
//
// With several streams, "live at the same time" is not an interval of one
// sequence: two buffers may share memory only when every launch that uses one
// of them is ordered (by stream order and event waits) before every launch
// that uses the other. HappensBefore computes that order from the plan's
// steps; plan_memory() places buffers in one arena, largest first, at the
// lowest offset that overlaps no buffer it may be live with (the greedy-by-
// size placement of TFLite's arena planner, with this conflict relation).
#pragma once

#include <cstddef>  // core/bitset.h uses size_t without including it
#include <cstdint>
#include <optional>
#include <vector>

#include "core/bitset.h"
#include "exec/plan.h"

namespace ios::exec {

class HappensBefore {
 public:
  // `steps` as in an ExecPlan, launches numbered by Step::kernel. A wait on an
  // event orders after the most recent record of that event issued before it.
  HappensBefore(int num_launches, int num_streams, int num_events, const std::vector<exec::Step>& steps);

  // Launch a completes before launch b starts, in every execution.
  bool before(int a, int b) const {
    return preds_.at(static_cast<size_t>(position(b))).test(static_cast<size_t>(position(a)));
  }
  int size() const { return static_cast<int>(preds_.size()); }

  // The launches in issue order: a launch can only be ordered before launches
  // issued after it, so "issued earlier and not before" is "may run at the
  // same time". Launches no step issues come last, in number order.
  int position(int launch) const { return position_.at(static_cast<size_t>(launch)); }
  int launch_at(int position) const { return launch_at_.at(static_cast<size_t>(position)); }
  // The positions of the launches ordered before the one at `position`.
  const DynBitset& preds_at(int position) const { return preds_.at(static_cast<size_t>(position)); }

 private:
  std::vector<int> position_;     // by launch
  std::vector<int> launch_at_;    // by position
  std::vector<DynBitset> preds_;  // by position, over positions
};

struct MemoryRequest {
  int64_t bytes = 0;
  bool persistent = false;  // never shares memory (graph inputs and outputs)
  std::vector<int> users;   // launches that read or write it
};

struct MemoryLayout {
  std::vector<int64_t> offsets;  // bytes, per request
  int64_t total_bytes = 0;
  int64_t unshared_bytes = 0;    // sum of the aligned sizes
};

// Places the requests greedily by size. The pairs that may not share are
// found from issue-order intervals and each request's concurrent launches
// (memory_conflicts), so the work grows with the conflicts, not with the
// square of the requests: a 20000-launch chain places in milliseconds.
// Beyond kMaxConflictPairs (tens of thousands of buffers live at once, as
// 20,000 side-by-side branches have) the placement would take minutes: each
// request then gets memory of its own, which is what so many live buffers
// need nearly all of anyway (the arena is the sum of the aligned sizes).
inline constexpr int64_t kMaxConflictPairs = 4'000'000;
MemoryLayout plan_memory(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                         int64_t alignment = 256);

// For each request, the other requests it may not share memory with (the
// pairs may_share refuses; symmetric, each pair once per side); nullopt once
// there are more than `max_pairs` pairs.
std::optional<std::vector<std::vector<int>>> memory_conflicts(const std::vector<MemoryRequest>& requests,
                                                              const HappensBefore& order,
                                                              int64_t max_pairs = kMaxConflictPairs);

// The largest sum of aligned request sizes live while one launch runs: a
// request is live at a launch unless all its users are ordered before it or
// all after it (persistent requests always; requests without users never).
int64_t live_peak_bytes(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                        int64_t alignment = 256);

// Whether two requests may share memory under `order` (exposed for tests).
bool may_share(const MemoryRequest& a, const MemoryRequest& b, const HappensBefore& order);

}  // namespace ios::exec
