// The schedulers of the registry (scheduler.cpp) and what they share. Each
// scheduler is a plain class in its own source file; scheduler.cpp lists them
// explicitly (no static self-registration, which static libraries drop).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sched/block_dag.h"
#include "sched/ios_dp.h"
#include "sched/scheduler.h"

namespace ios::sched {

std::unique_ptr<Scheduler> make_sequential_scheduler(const Params& params);
std::unique_ptr<Scheduler> make_greedy_scheduler(const Params& params);
// IOS and DOS share the DP; `name` is the registry name, `options` the
// fully resolved search options.
std::unique_ptr<Scheduler> make_dp_scheduler(const std::string& name, const Params& params,
                                             const IosOptions& options);
std::unique_ptr<Scheduler> make_lios_scheduler(const Params& params);
std::unique_ptr<Scheduler> make_nimble_scheduler(const Params& params);

// A schedule with the scheduler's name, parameters and cost-model name set.
Schedule new_schedule(const std::string& name, const Params& params, const sched::CostModel& cost);

// Statistics of block `index` with units, width and the block's latency;
// search counters left at zero (for the schedulers that do not search).
BlockStats plain_block_stats(const UnitGraph& graph, int index, double predicted_ms,
                             double search_ms);

// What a scheduler that does not search reports for one block.
struct PlainBlock {
  double predicted_ms = 0.0;  // the block's scheduled latency
  int64_t stages_costed = 0;  // stages (or units) sent to the cost model
};

// A baseline's stages for one block, each with its predicted latency.
struct BaselineBlock {
  std::vector<Stage> stages;
  double latency_ms = 0.0;  // the sum of the stages' latencies
  int64_t stages_costed = 0;
};
// The greedy baseline: each stage runs every unit whose predecessors are
// done, each unit its own group (in local, i.e. UnitId, order).
BaselineBlock greedy_block(const BlockDag& dag, CostModel& cost);
// The sequential baseline: one unit per stage in UnitId order.
BaselineBlock sequential_block(const BlockDag& dag, CostModel& cost);

// Calls `schedule_block(b)` for every block b of `graph` in order, timing each
// call, and appends the block's plain_block_stats (with stages_costed) to
// `stats`, adding the time to stats.total_search_ms.
void schedule_blocks(const UnitGraph& graph, SearchStats& stats,
                     const std::function<PlainBlock(int)>& schedule_block);

}  // namespace ios::sched
