// The greedy baseline of the IOS paper (Figure 2): every stage runs all units
// whose predecessors are done, each unit its own group (ready units are
// independent of each other, so these are the stage's connected components).
#include "sched/builtin_schedulers.h"

namespace ios::sched {

namespace {

class GreedyScheduler : public Scheduler {
 public:
  explicit GreedyScheduler(Params params) : params_(std::move(params)) {}

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    Schedule schedule = new_schedule("greedy", params_, cost);
    StagedSchedule staged;
    schedule_blocks(graph, stats, [&](int b) {
      const BlockDag dag = BlockDag::from_block(graph, graph.blocks()[static_cast<size_t>(b)]);
      BaselineBlock block = greedy_block(dag, cost);
      for (Stage& stage : block.stages) staged.stages.push_back(std::move(stage));
      schedule.predicted_latency_ms += block.latency_ms;
      return PlainBlock{block.latency_ms, block.stages_costed};
    });
    schedule.body = std::move(staged);
    return schedule;
  }

 private:
  Params params_;
};

}  // namespace

std::unique_ptr<Scheduler> make_greedy_scheduler(const Params& params) {
  return std::make_unique<GreedyScheduler>(params);
}

}  // namespace ios::sched
