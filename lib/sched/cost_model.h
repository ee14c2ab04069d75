// The cost-model interface. Schedulers ask it for stage latencies and never
// know whether the answer was measured on a GPU or predicted (Halide's
// autoscheduler keeps its CostModel apart from the search the same way).
#pragma once

#include <string>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;

  // Latency in milliseconds of one stage run in isolation: all groups start
  // together (one stream each), each group runs its units in order, and the
  // stage ends when the last group ends. For Strategy::kMerge the single
  // group's convolutions (or matrix products) run as one merged operator; callers check
  // legality first (sched/merge.h).
  virtual double stage_latency(const Stage& stage) = 0;

  // A lower bound in milliseconds of the time `unit` keeps its stream busy in
  // any concurrent stage, or 0 where the model promises none (measurements).
  // A concurrent stage then lasts at least, for each of its groups, the sum
  // of its units' bounds, and the IOS search skips, without costing it, a
  // stage that cannot beat the best ending found by that much.
  virtual double unit_lower_bound_ms(UnitId /*unit*/) { return 0.0; }

  // Whether stage_latency may be called from several threads at once (the
  // IOS search then costs blocks in parallel). A GPU measures one stage at a
  // time.
  virtual bool thread_safe() const { return false; }

  // Latency of one unit alone (a one-unit stage). LIOS uses it as priority.
  double unit_latency(UnitId unit) {
    Stage stage;
    stage.groups = {{unit}};
    return stage_latency(stage);
  }
};

}  // namespace ios::sched
