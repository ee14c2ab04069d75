// The cost-model interface. Schedulers ask it for stage latencies and never
// know whether the answer was measured on a GPU or predicted (Halide's
// autoscheduler keeps its CostModel apart from the search the same way).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

  // Lower bounds, in milliseconds, of what `unit` costs any concurrent stage
  // it is part of, or zeros where the model promises none (measurements).
  struct UnitBound {
    double stream_ms = 0.0;   // the time it keeps its stream busy
    // Its work weighted by the share of the device it occupies while working
    // alone: thread-block slots and DRAM bandwidth. Concurrent units divide
    // the device between them, so a stage lasts at least the sum of each.
    double slots_ms = 0.0;
    double dram_ms = 0.0;
  };
  // A concurrent stage then lasts at least the largest of: for each of its
  // groups, the sum of its units' stream_ms; the sum of all slots_ms; the
  // sum of all dram_ms. The IOS search skips, without costing it, a stage
  // that cannot beat the best ending found by that much.
  virtual UnitBound unit_bound(UnitId /*unit*/) { return {}; }

  // Units that cost the same in every concurrent stage: two concurrent
  // stages whose groups hold, in issue order, units of the same classes
  // have the same latency. The IOS search then costs such a stage once (a
  // pyramid head's identical convolutions, a chain's repeated layers). -1:
  // the unit shares its class with no other (the default).
  virtual int64_t cost_class(UnitId /*unit*/) { return -1; }

  // Whether `unit` costs nothing wherever it runs: no kernel, no launch
  // (a Reshape or Flatten that aliases its input). The IOS search then
  // runs it beside the unit it chains to instead of as a stage choice of
  // its own (ios_dp.h, "Free units").
  virtual bool free_unit(UnitId /*unit*/) { return false; }

  // Whether stage_latency depends on nothing but the stage's signature
  // (sched/signature.h): what its units compute, not which units of the
  // model they are. The IOS search then searches each distinct block once
  // and gives its repeats (NASNet's cells, a ResNet's identical bottlenecks)
  // the same stages.
  virtual bool costs_follow_signatures() const { return false; }

  // Whether stage_latency may be called from several threads at once (the
  // IOS search then costs blocks in parallel). A GPU measures one stage at a
  // time.
  virtual bool thread_safe() const { return false; }

  // A latency the model already has for `stage` without new work (a
  // measured model: its profile database and the stages it measured in this
  // run), or nullopt. Asking changes nothing.
  virtual std::optional<double> known_latency(const Stage& /*stage*/) { return std::nullopt; }

  // For a model that answers some stages with estimates and can replace
  // them by measurements (cost/budgeted.h): makes the latencies of `stages`
  // final as far as its budget allows, and returns whether any answer
  // changed. A searching scheduler then searches again, until the stages it
  // chooses are all final (or the budget is spent). A model whose every
  // answer is final returns false.
  virtual bool settle(const std::vector<Stage>& /*stages*/) { return false; }
  // Changes whenever the answers for stages not yet settled may have changed
  // (a budgeted model's corrections of its predictions moved): a search that
  // keeps stage costs between its rounds drops them then.
  virtual uint64_t revision() const { return 0; }

  // Latency of one unit alone (a one-unit stage). LIOS uses it as priority.
  double unit_latency(UnitId unit) {
    Stage stage;
    stage.groups = {{unit}};
    return stage_latency(stage);
  }
};

}  // namespace ios::sched
