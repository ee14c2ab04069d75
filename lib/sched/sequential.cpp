// The sequential baseline: one unit per stage, in UnitId (topological) order.
#include "sched/builtin_schedulers.h"

namespace ios::sched {

namespace {

class SequentialScheduler : public Scheduler {
 public:
  explicit SequentialScheduler(Params params) : params_(std::move(params)) {}

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    Schedule schedule = new_schedule("sequential", params_, cost);
    StagedSchedule staged;
    schedule_blocks(graph, stats, [&](int b) {
      const BlockDag dag = BlockDag::from_block(graph, graph.blocks()[static_cast<size_t>(b)]);
      BaselineBlock block = sequential_block(dag, cost);
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

std::unique_ptr<Scheduler> make_sequential_scheduler(const Params& params) {
  return std::make_unique<SequentialScheduler>(params);
}

}  // namespace ios::sched
