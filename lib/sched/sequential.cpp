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
      const Block& block = graph.blocks()[static_cast<size_t>(b)];
      double block_ms = 0.0;
      for (UnitId u = block.begin; u < block.end; ++u) {
        Stage stage;
        stage.groups = {{u}};
        stage.predicted_ms = cost.stage_latency(stage);
        block_ms += stage.predicted_ms;
        staged.stages.push_back(std::move(stage));
      }
      schedule.predicted_latency_ms += block_ms;
      return PlainBlock{block_ms, block.size()};
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
