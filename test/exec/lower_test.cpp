// Lowering of staged and streamed schedules to one ExecPlan.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "exec/plan.h"

using namespace ios;
using exec::ExecPlan;
using exec::Step;
using sched::Schedule;
using sched::Stage;
using sched::Strategy;
using sched::UnitGraph;

namespace {

// Replays a plan on one thread with per-stream "completion" bookkeeping and
// checks CUDA semantics: a unit may run only when each producer on another
// stream is ordered before it through a record/wait chain.
void check_plan_respects_dependencies(const UnitGraph& g, const ExecPlan& plan) {
  const int streams = plan.num_streams;
  // happened[s][u]: stream s is ordered after unit u's launch.
  std::vector<std::set<int>> happened(static_cast<size_t>(streams));
  std::vector<std::set<int>> event_payload(static_cast<size_t>(plan.num_events));
  std::set<int> launched;
  for (const Step& step : plan.steps) {
    auto& mine = happened[static_cast<size_t>(step.stream)];
    switch (step.kind) {
      case Step::Kind::kLaunch:
        for (int u : plan.kernels[static_cast<size_t>(step.kernel)].units) {
          for (int p : g.preds(u)) {
            INFO("unit " << u << " needs " << p << " on stream " << step.stream);
            CHECK(mine.count(p) == 1);
          }
          launched.insert(u);
        }
        for (int u : plan.kernels[static_cast<size_t>(step.kernel)].units) mine.insert(u);
        break;
      case Step::Kind::kRecord: event_payload[static_cast<size_t>(step.event)] = mine; break;
      case Step::Kind::kWait: {
        const auto& payload = event_payload[static_cast<size_t>(step.event)];
        mine.insert(payload.begin(), payload.end());
        break;
      }
    }
  }
  CHECK(static_cast<int>(launched.size()) == g.size());
  // At the end stream 0 is ordered after every unit (the plan's output is ready).
  CHECK(static_cast<int>(happened[0].size()) == g.size());
}

}  // namespace

TEST_CASE("a staged schedule forks and joins streams at stage boundaries", "[lower]") {
  // 0 -> {1, 2} -> 3
  const UnitGraph g = UnitGraph::from_edges(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  Schedule s;
  sched::StagedSchedule staged;
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{0}}, 0});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{1}, {2}}, 0});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{3}}, 0});
  s.body = staged;
  const ExecPlan plan = exec::lower(g, s);
  CHECK(plan.num_streams == 2);
  CHECK(plan.count(Step::Kind::kLaunch) == 4);
  // One fork (record on 0, wait on 1) and one join (record on 1, wait on 0).
  CHECK(plan.count(Step::Kind::kRecord) == 2);
  CHECK(plan.count(Step::Kind::kWait) == 2);
  check_plan_respects_dependencies(g, plan);
  const std::string text = exec::describe(g, plan);
  CHECK(text.find("stream 1:") != std::string::npos);
  CHECK(text.find("wait   e0") != std::string::npos);
}

TEST_CASE("a sequential schedule needs no events", "[lower]") {
  const UnitGraph g = UnitGraph::from_edges(3, {{0, 1}, {1, 2}});
  Schedule s;
  sched::StagedSchedule staged;
  for (int u = 0; u < 3; ++u) staged.stages.push_back(Stage{Strategy::kConcurrent, {{u}}, 0});
  s.body = staged;
  const ExecPlan plan = exec::lower(g, s);
  CHECK(plan.num_streams == 1);
  CHECK(plan.num_events == 0);
  check_plan_respects_dependencies(g, plan);
}

TEST_CASE("a streamed schedule waits only where no earlier wait implies the dependency",
          "[lower]") {
  // 0 (s0) -> 1 (s1) -> 2 (s0); 0 -> 2 is implied through 1.
  const UnitGraph g = UnitGraph::from_edges(3, {{0, 1}, {1, 2}, {0, 2}});
  Schedule s;
  sched::StreamedSchedule streamed;
  streamed.num_streams = 2;
  streamed.launches = {{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 0, 0, 0}};
  s.body = streamed;
  const ExecPlan plan = exec::lower(g, s);
  CHECK(plan.count(Step::Kind::kWait) == 2);  // 1 waits for 0; 2 waits for 1
  check_plan_respects_dependencies(g, plan);
}

TEST_CASE("streamed lowering of random DAGs respects every dependency", "[lower]") {
  uint32_t seed = 12345;
  auto next = [&]() { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(next() % 12);
    std::vector<std::pair<int, int>> edges;
    for (int v = 1; v < n; ++v) {
      for (int u = 0; u < v; ++u) {
        if (next() % 3 == 0) edges.emplace_back(u, v);
      }
    }
    const UnitGraph g = UnitGraph::from_edges(n, edges);
    Schedule s;
    sched::StreamedSchedule streamed;
    streamed.num_streams = 1 + static_cast<int>(next() % 4);
    for (int u = 0; u < n; ++u) {
      streamed.launches.push_back({u, static_cast<int>(next() % static_cast<uint32_t>(streamed.num_streams)), 0, 0});
    }
    s.body = streamed;
    check_plan_respects_dependencies(g, exec::lower(g, s));
  }
}
