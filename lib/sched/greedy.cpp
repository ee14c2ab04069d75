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
      double block_ms = 0.0;
      int64_t costed = 0;
      uint64_t done = 0;
      while (done != dag.all()) {
        uint64_t ready = 0;
        for (uint64_t rest = dag.all() & ~done; rest; rest &= rest - 1) {
          const int x = lowest(rest);
          if ((dag.pred[static_cast<size_t>(x)] & ~done) == 0) ready |= bit(x);
        }
        Stage stage;
        for (uint64_t r = ready; r; r &= r - 1) {
          stage.groups.push_back({dag.units[static_cast<size_t>(lowest(r))]});
        }
        stage.predicted_ms = cost.stage_latency(stage);
        ++costed;
        block_ms += stage.predicted_ms;
        staged.stages.push_back(std::move(stage));
        done |= ready;
      }
      schedule.predicted_latency_ms += block_ms;
      return PlainBlock{block_ms, costed};
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
