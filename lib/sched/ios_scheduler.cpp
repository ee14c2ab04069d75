// The IOS and DOS schedulers: the DP of ios_dp.cpp run block by block, the
// blocks' stages concatenated.
#include "core/log.h"
#include "sched/builtin_schedulers.h"
#include "sched/merge.h"

namespace ios::sched {

namespace {

class DpScheduler : public Scheduler {
 public:
  DpScheduler(std::string name, Params params, IosOptions options)
      : name_(std::move(name)), params_(std::move(params)), options_(options) {}

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    Schedule schedule = new_schedule(name_, params_, cost);
    StagedSchedule staged;
    MergePredicate can_merge;
    if (graph.ir() != nullptr) {
      can_merge = [&graph](const std::vector<UnitId>& units) {
        return check_merge(graph, units).spec.has_value();
      };
    }
    auto log = logger("sched");
    for (int b = 0; b < static_cast<int>(graph.blocks().size()); ++b) {
      const Block& block = graph.blocks()[static_cast<size_t>(b)];
      const BlockDag dag = BlockDag::from_block(graph, block);
      BlockSolution solution = solve_block(dag, options_, cost, can_merge);
      BlockStats block_stats = plain_block_stats(graph, b, solution.latency_ms, solution.search_ms);
      block_stats.states = solution.states;
      block_stats.transitions = solution.transitions;
      block_stats.stages_costed = solution.stages_costed;
      log->debug("{} block {}: {} units, width {}, {} states, {} transitions, {} stages costed, "
                 "{:.3f} ms predicted, {:.1f} ms search",
                 name_, b, block_stats.units, block_stats.width, solution.states,
                 solution.transitions, solution.stages_costed, solution.latency_ms,
                 solution.search_ms);
      stats.blocks.push_back(block_stats);
      stats.total_search_ms += solution.search_ms;
      schedule.predicted_latency_ms += solution.latency_ms;
      for (Stage& stage : solution.stages) staged.stages.push_back(std::move(stage));
      report_block_done(b + 1, static_cast<int>(graph.blocks().size()));
    }
    schedule.body = std::move(staged);
    return schedule;
  }

 private:
  std::string name_;
  Params params_;
  IosOptions options_;
};

}  // namespace

std::unique_ptr<Scheduler> make_dp_scheduler(const std::string& name, const Params& params,
                                             const IosOptions& options) {
  return std::make_unique<DpScheduler>(name, params, options);
}

}  // namespace ios::sched
