// Schedules a small synthetic graph with a scheduler of the installed ios
// library and prints the schedule: a diamond, one unit feeding three
// parallel units that feed one more, under a cost model of its own.
// Usage: schedule_diamond SCHEDULER (a registry name: sequential, ios, ...).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "sched/cost_model.h"
#include "sched/scheduler.h"
#include "sched/unit_graph.h"
#include "sched/validate.h"

namespace {

// A stage takes as long as its longest group; a unit costs its weight.
class LongestGroupCost : public ios::sched::CostModel {
 public:
  explicit LongestGroupCost(std::vector<double> weight) : weight_(std::move(weight)) {}
  std::string name() const override { return "consumer-longest-group"; }
  double stage_latency(const ios::sched::Stage& stage) override {
    double longest = 0.0;
    for (const auto& group : stage.groups) {
      double sum = 0.0;
      for (ios::sched::UnitId u : group) sum += weight_.at(static_cast<size_t>(u));
      if (sum > longest) longest = sum;
    }
    return longest;
  }

 private:
  std::vector<double> weight_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace ios::sched;
  if (argc != 2) {
    std::fprintf(stderr, "usage: schedule_diamond SCHEDULER\n");
    return 2;
  }
  try {
    const std::string name = argv[1];
    const UnitGraph graph =
        UnitGraph::from_edges(5, {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}});
    LongestGroupCost cost({1.0, 2.0, 3.0, 2.0, 1.0});
    const SchedulerEntry& entry = find_scheduler(name);
    auto scheduler = entry.make(Params::parse(name, entry.params, ""));
    SearchStats stats;
    const Schedule schedule = scheduler->run(graph, cost, stats);
    validate_schedule(schedule, graph, "the consumer's schedule");
    std::printf("%s: %zu stages, predicted %.1f ms\n", name.c_str(),
                schedule.staged().stages.size(), schedule.predicted_latency_ms);
    for (const Stage& stage : schedule.staged().stages) {
      std::printf("stage:");
      for (const auto& group : stage.groups) {
        std::printf(" [");
        for (size_t i = 0; i < group.size(); ++i) std::printf(i ? " %d" : "%d", group[i]);
        std::printf("]");
      }
      std::printf("\n");
    }
  } catch (const ios::UserError& e) {  // ios's exit codes: 2 for bad input, 1 for the rest
    std::fprintf(stderr, "schedule_diamond: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "schedule_diamond: %s\n", e.what());
    return 1;
  }
  return 0;
}
