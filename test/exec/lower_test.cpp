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
      case Step::Kind::kSync:  // every stream is ordered after everything issued
        for (auto& stream : happened) stream.insert(launched.begin(), launched.end());
        break;
    }
  }
  CHECK(static_cast<int>(launched.size()) == g.size());
  // At the end stream 0 is ordered after every unit (the plan's output is ready).
  CHECK(static_cast<int>(happened[0].size()) == g.size());
}

// A random DAG on n units: each edge u -> v (u < v) with probability 1/3,
// drawn from `next` in order of v, then u.
template <typename Next>
std::vector<std::pair<int, int>> random_edges(int n, Next& next) {
  std::vector<std::pair<int, int>> edges;
  for (int v = 1; v < n; ++v) {
    for (int u = 0; u < v; ++u) {
      if (next() % 3 == 0) edges.emplace_back(u, v);
    }
  }
  return edges;
}

// Chains 0 -> 2 and 1 -> 3 staged as {0 | 1} then `second` (groups of 2 and 3).
Schedule two_chains(std::vector<std::vector<sched::UnitId>> second, sched::Barriers barriers) {
  sched::StagedSchedule staged;
  staged.barriers = barriers;
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{0}, {1}}, 0});
  staged.stages.push_back(Stage{Strategy::kConcurrent, std::move(second), 0});
  Schedule s;
  s.body = staged;
  return s;
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
    const auto edges = random_edges(n, next);
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

TEST_CASE("without stage barriers a staged schedule waits only for true dependencies", "[lower]") {
  // Two chains, 0 -> 2 and 1 -> 3, staged as {0 | 1} then {2 | 3}: with
  // barriers stream 1's second unit waits for the whole first stage; without,
  // each chain stays on its stream and only the final join remains.
  const UnitGraph g = UnitGraph::from_edges(4, {{0, 2}, {1, 3}});
  const ExecPlan with_barriers = exec::lower(g, two_chains({{2}, {3}}, sched::Barriers::kStages));
  CHECK(with_barriers.count(Step::Kind::kWait) == 4);  // fork and join of each stage

  const ExecPlan relaxed = exec::lower(g, two_chains({{2}, {3}}, sched::Barriers::kDependencies));
  CHECK(relaxed.num_streams == 2);
  CHECK(relaxed.count(Step::Kind::kLaunch) == 4);
  CHECK(relaxed.count(Step::Kind::kWait) == 1);  // stream 1 joins stream 0 at the end
  check_plan_respects_dependencies(g, relaxed);
}

// One stage per level of a random DAG: its units merged, or in up to three groups.
template <typename Next>
Schedule staged_by_levels(int n, const std::vector<std::pair<int, int>>& edges, sched::Barriers barriers,
                          Next& next) {
  std::vector<int> level(static_cast<size_t>(n), 0);  // edges come with u < v, in order of v
  for (const auto& [u, v] : edges) {
    level[static_cast<size_t>(v)] = std::max(level[static_cast<size_t>(v)], level[static_cast<size_t>(u)] + 1);
  }
  sched::StagedSchedule staged;
  staged.barriers = barriers;
  const int levels = *std::max_element(level.begin(), level.end()) + 1;
  for (int l = 0; l < levels; ++l) {
    std::vector<int> units;
    for (int u = 0; u < n; ++u) {
      if (level[static_cast<size_t>(u)] == l) units.push_back(u);
    }
    if (units.size() > 1 && next() % 4 == 0) {
      staged.stages.push_back(Stage{Strategy::kMerge, {units}, 0});
      continue;
    }
    Stage stage{Strategy::kConcurrent, {}, 0};
    stage.groups.resize(std::min<size_t>(units.size(), 1 + next() % 3));
    for (size_t i = 0; i < units.size(); ++i) stage.groups[i % stage.groups.size()].push_back(units[i]);
    staged.stages.push_back(stage);
  }
  Schedule s;
  s.body = staged;
  return s;
}

TEST_CASE("staged lowering without barriers respects every dependency, merges included",
          "[lower]") {
  uint32_t seed = 777;
  auto next = [&]() { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(next() % 12);
    const auto edges = random_edges(n, next);
    const UnitGraph g = UnitGraph::from_edges(n, edges);
    check_plan_respects_dependencies(g, exec::lower(g, staged_by_levels(n, edges, sched::Barriers::kDependencies, next)));
  }
}

TEST_CASE("a host that synchronizes the device after stages needs no events", "[lower]") {
  // 0 -> 1 -> {2, 3} -> {4, 5} -> 6 -> 7, staged one level at a time: the
  // IOS paper's engine synchronizes after stage 1 (the next has two groups),
  // after each two-group stage, and nowhere between single-group stages.
  const UnitGraph g =
      UnitGraph::from_edges(8, {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 6}, {6, 7}});
  sched::StagedSchedule staged;
  for (std::vector<std::vector<sched::UnitId>> groups :
       std::vector<std::vector<std::vector<sched::UnitId>>>{{{0}}, {{1}}, {{2}, {3}}, {{4}, {5}}, {{6}}, {{7}}}) {
    staged.stages.push_back(Stage{Strategy::kConcurrent, std::move(groups), 0});
  }
  Schedule s;
  s.body = staged;
  const ExecPlan plan = exec::lower(g, s, exec::StageJoin::kDeviceSync);
  CHECK(plan.num_events == 0);
  CHECK(plan.count(Step::Kind::kSync) == 3);
  std::vector<size_t> syncs_after;  // launches issued before each kSync
  size_t launches = 0;
  for (const Step& step : plan.steps) {
    if (step.kind == Step::Kind::kLaunch) ++launches;
    if (step.kind == Step::Kind::kSync) syncs_after.push_back(launches);
  }
  CHECK(syncs_after == std::vector<size_t>{2, 4, 6});
  check_plan_respects_dependencies(g, plan);
  CHECK(exec::describe(g, plan).find("3 device synchronizations") != std::string::npos);
  // A last stage of several groups is synchronized after: the plan ends with
  // stream 0 after every unit.
  staged.stages.resize(4);
  s.body = staged;
  const UnitGraph first_six = UnitGraph::from_edges(6, {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}});
  const ExecPlan ends_wide = exec::lower(first_six, s, exec::StageJoin::kDeviceSync);
  CHECK(ends_wide.steps.back().kind == Step::Kind::kSync);
  check_plan_respects_dependencies(first_six, ends_wide);
  // One stage lowered for the search: a sync after several groups only.
  ExecPlan stage_plan;
  exec::lower_stage(staged.stages[2], stage_plan, exec::StageJoin::kDeviceSync);
  CHECK(stage_plan.count(Step::Kind::kSync) == 1);
  exec::lower_stage(staged.stages[0], stage_plan, exec::StageJoin::kDeviceSync);
  CHECK(stage_plan.count(Step::Kind::kSync) == 0);
}

TEST_CASE("staged lowering with device synchronizations respects every dependency", "[lower]") {
  uint32_t seed = 4242;
  auto next = [&]() { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(next() % 12);
    const auto edges = random_edges(n, next);
    const UnitGraph g = UnitGraph::from_edges(n, edges);
    const ExecPlan plan =
        exec::lower(g, staged_by_levels(n, edges, sched::Barriers::kStages, next), exec::StageJoin::kDeviceSync);
    CHECK(plan.num_events == 0);
    check_plan_respects_dependencies(g, plan);
  }
}

TEST_CASE("without stage barriers a group continues on its producer's stream", "[lower]") {
  // Chains 0 -> 2 and 1 -> 3, the second stage listing its groups the other
  // way round: {3} continues on 1's stream and {2} on 0's, so no group waits
  // for an event; only the final join remains.
  const UnitGraph g = UnitGraph::from_edges(4, {{0, 2}, {1, 3}});
  const ExecPlan plan = exec::lower(g, two_chains({{3}, {2}}, sched::Barriers::kDependencies));
  CHECK(plan.count(Step::Kind::kWait) == 1);
  std::vector<int> stream_of(4, -1);
  for (const Step& step : plan.steps) {
    if (step.kind == Step::Kind::kLaunch) stream_of[static_cast<size_t>(plan.kernels[static_cast<size_t>(step.kernel)].units[0])] = step.stream;
  }
  CHECK(stream_of[2] == stream_of[0]);
  CHECK(stream_of[3] == stream_of[1]);
  CHECK(stream_of[0] != stream_of[1]);
  check_plan_respects_dependencies(g, plan);
}
