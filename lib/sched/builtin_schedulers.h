// The schedulers of the registry (scheduler.cpp) and what they share. Each
// scheduler is a plain class in its own source file; scheduler.cpp lists them
// explicitly (no static self-registration, which static libraries drop).
#pragma once

#include <memory>
#include <string>

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
Schedule new_schedule(const std::string& name, const Params& params, const cost::CostModel& cost);

// Statistics of block `index` with units, width and the block's latency;
// search counters left at zero (for the schedulers that do not search).
BlockStats plain_block_stats(const UnitGraph& graph, int index, double predicted_ms,
                             double search_ms);

}  // namespace ios::sched
