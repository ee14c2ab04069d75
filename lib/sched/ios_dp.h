// The IOS dynamic program over one block (IOS paper, Algorithm 1), with the
// variants the schedulers expose: strategies, pruning, group shape, and the
// DOS paper's ending rule.
//
//   cost[S] = min over endings E of S of  cost[S - E] + stage_latency[E],
//   cost[{}] = 0,  choice[S] = the minimizing (E, strategy).
//
// A state S is the set of units still to schedule; it is always closed under
// predecessors, so the units of S that descend from x are desc(x) & S.
//
// Search spaces (all endings E are non-empty):
//  - EndingRule::kIos: E has no edge to S - E (closed under successors in S).
//    Every such E is the union of the closures {x} + desc(x) & S of its
//    minimal units, which form an antichain; E is enumerated as that
//    antichain, so each ending is produced exactly once. The groups of E are
//    its weakly connected components, each run in topological order, issued
//    in the order of group_masks (the block's longest chain first).
//    GroupShape::kAny takes every ending; kSingleEntry only those whose
//    groups each have one unit every other unit of the group descends from
//    (the space of the IOS reference implementation: the closures of the
//    chosen minimal units are pairwise disjoint).
//  - EndingRule::kDos: E is any non-empty subset of the units of S that have
//    no successor in S (DOS paper, Algorithm 1). Such E is an antichain, so
//    every group is one unit; the group shape does not matter.
//  - Pruning P(r, s): at most r units per group and s groups per stage;
//    0 means unlimited. Endings outside P are never generated.
//  - Strategies: kConcurrent costs E as concurrent groups. kMerge costs E as
//    one merged convolution when E has >= 2 units, all of them groups of one
//    unit, and `can_merge` accepts them; single-unit endings are always
//    allowed (a one-unit stage is both). With kMerge alone, multi-unit
//    endings that cannot merge are skipped, so IOS-Merge schedules are single
//    units and merges (as in the IOS reference implementation). kBoth costs
//    both where legal and keeps the faster. Merge candidates obey the same
//    pruning: a merge of k units counts as k groups of one unit under s.
//
// Counting convention (reproduces the IOS paper's Table 1 and the reference
// implementation's debug counters):
//  - states: distinct non-empty S for which endings were enumerated (the
//    memo's size). The empty state is not counted; the full block is.
//  - transitions: (S, E) pairs evaluated, i.e. endings of S that satisfy the
//    rule set and the pruning (counted after the pruning check; endings the
//    pruning rejects are never generated). For kMerge alone, multi-unit
//    endings that cannot merge are not transitions. The pair (S, S) leading to
//    the empty state is a transition.
//  - stages_costed: calls to the cost model. Each distinct (E, strategy) is
//    costed at most once, and only when it can matter: stage latencies are
//    non-negative, so a transition whose rest cost[S - E] is already no
//    better than the best found for S is counted without costing E (with
//    concurrent execution enabled; merge-only must cost E to know whether it
//    is a stage at all).
// With kConcurrent, no pruning and single-entry groups this gives 180 states
// and 4,871 transitions for Inception V3's last block, 12 and 51 for the
// SqueezeNet fire module with bypass, 1,170,663 transitions for RandWire
// ws-32-4-0.75-4 (33 units); with any-shape groups 5,040 and 60.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sched/block_dag.h"
#include "sched/cost_model.h"
#include "sched/mask_map.h"
#include "sched/memory_bound.h"
#include "sched/schedule.h"
#include "sched/scheduler.h"

namespace ios::sched {

enum class StrategySet { kConcurrent, kMerge, kBoth };
enum class GroupShape { kAny, kSingleEntry };
enum class EndingRule { kIos, kDos };

struct IosOptions {
  StrategySet strategies = StrategySet::kBoth;
  int max_group_units = 3;  // r; 0 = unlimited
  int max_groups = 8;       // s; 0 = unlimited
  GroupShape group_shape = GroupShape::kAny;
  EndingRule ending_rule = EndingRule::kIos;
};

// Whether these units (global ids, >= 2 of them) can run as one merged
// convolution. Empty function = never.
using MergePredicate = std::function<bool(const std::vector<UnitId>&)>;

// When the search of one block must stop. The DP checks the clock every few
// thousand transitions and never while the cost model is asked, so an
// abandoned search leaves the cost model as it was between two stages.
struct SolveLimits {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // With a memory bound (ios-optimize --memory-limit), a stage whose live
  // bytes (BlockMemory::stage_bytes) exceed memory->bound is no candidate:
  // the DP then finds the fastest schedule of the block whose every stage
  // stays within the bound, or reports none (BlockSolution::feasible).
  // Single-unit stages are candidates like any other, so whenever some
  // order of single units fits, the result is no slower than that order.
  const BlockMemory* memory = nullptr;
};

struct BlockSolution {
  // False when the deadline passed first: no stages, latency_ms undefined
  // (the caller keeps another schedule for the block).
  bool complete = true;
  // False when no schedule of the block keeps within SolveLimits::memory
  // (then no stages either); true otherwise.
  bool feasible = true;
  std::vector<Stage> stages;  // in execution order, global UnitIds
  double latency_ms = 0.0;    // sum of the stages' predicted latencies
  int64_t states = 0;
  int64_t transitions = 0;
  int64_t stages_costed = 0;
  double search_ms = 0.0;
};

// The cost of one ending of a block as a stage: the faster of its
// strategies, or kInf when it is no stage (merge-only, cannot merge).
struct CachedStageCost {
  double cost = std::numeric_limits<double>::infinity();
  Strategy strategy = Strategy::kConcurrent;
  bool stale = false;  // ask the cost model again
};
// Stage costs that several searches of one block share, by ending mask: a
// block searched again after its cost model settled some stages
// (CostModel::settle) asks again only for the endings marked stale, and
// takes every other cost as it was.
using StageCostCache = MaskMap<CachedStageCost>;

// Runs the DP over one block. Stage latencies come from `cost`, asked once
// per distinct (ending, strategy), or from `cache` where it has them (and
// are then added to it).
BlockSolution solve_block(const BlockDag& dag, const IosOptions& options, sched::CostModel& cost,
                          const MergePredicate& can_merge = {}, const SolveLimits& limits = {},
                          StageCostCache* cache = nullptr);

// The ending mask of `stage` (global UnitIds of `dag`'s block).
uint64_t stage_mask(const BlockDag& dag, const Stage& stage);

// Free units: a unit that costs nothing wherever it runs
// (CostModel::free_unit: a Reshape or Flatten that aliases its input) gains
// nothing from being a stage choice of its own, yet multiplies the states of
// every chain it sits in (a detector head's Reshape, Transpose, Reshape per
// pyramid level). The search DAG of a block therefore joins each chain link
// a -> b (a's only successor in the block is b, b's only predecessor a) with
// a free end into one local unit that runs a's units then b's, where the
// other end is free too or merges with no unit of the block (a merge stage
// holds single units), and so that each joined unit holds at most one unit
// that is not free. Its members (BlockDag::members) run in order in one
// group; the pruning counts it as one unit. Any schedule of the block maps
// to one of the joined DAG's that is no slower (each free unit moved into
// its costing neighbour's group), so the search finds no slower a schedule
// than before where free units are free. Returns `dag` itself when nothing
// joins.
BlockDag contract_free_units(const BlockDag& dag, CostModel& cost, const MergePredicate& can_merge = {});

// The size of solve_block's search of `dag` under `options`, without costing
// a stage. States are counted exactly (every predecessor-closed subset is a
// state: one-unit endings are always legal) up to `max_states`; transitions
// are the mean number of endings of up to `samples` states spread over all
// of them, times the states. A block with more states than `max_states` gets
// the IOS paper's bound C(n/d+2,2)^d on its transitions and exact = false.
struct SearchEstimate {
  double states = 0.0;
  double transitions = 0.0;
  bool exact_states = true;
};
SearchEstimate estimate_search(const BlockDag& dag, const IosOptions& options,
                               int64_t max_states = int64_t{1} << 20, int samples = 48);

// The groups of a concurrent stage `mask` of `dag`: its weakly connected
// components, in the order they are issued. A group's rank is the lowest
// BlockDag::chain of its first units (those without a predecessor in the
// group), so the stage's part of the block's longest chain goes first, as in
// the IOS reference implementation, whose endings are built chain by chain;
// equal ranks keep the order of the groups' lowest units.
std::vector<uint64_t> group_masks(const BlockDag& dag, uint64_t mask);
// The same groups as local indices, each in topological order.
std::vector<std::vector<int>> ending_groups(const BlockDag& dag, uint64_t mask);

}  // namespace ios::sched
