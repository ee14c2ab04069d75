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
  bool before(int a, int b) const { return preds_.at(static_cast<size_t>(b)).test(static_cast<size_t>(a)); }
  const DynBitset& preds(int b) const { return preds_.at(static_cast<size_t>(b)); }
  int size() const { return static_cast<int>(preds_.size()); }

 private:
  std::vector<DynBitset> preds_;
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

MemoryLayout plan_memory(const std::vector<MemoryRequest>& requests, const HappensBefore& order,
                         int64_t alignment = 256);

// Whether two requests may share memory under `order` (exposed for tests).
bool may_share(const MemoryRequest& a, const MemoryRequest& b, const HappensBefore& order);

}  // namespace ios::exec
