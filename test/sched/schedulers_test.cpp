// The scheduler registry: parameters, and every scheduler's output on random
// multi-block unit graphs.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>

#include "core/error.h"
#include "schedule_check.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "synthetic_cost.h"

using namespace ios::sched;
using ios::sched::test::AdditiveCost;
using ios::sched::test::check_schedule;

namespace {

Schedule run_scheduler(const std::string& name, const std::string& params, const UnitGraph& graph,
                       ios::sched::CostModel& cost, SearchStats* stats_out = nullptr) {
  const SchedulerEntry& entry = find_scheduler(name);
  SearchStats stats;
  Schedule s = entry.make(Params::parse(name, entry.params, params))->run(graph, cost, stats);
  CHECK(stats.blocks.size() == graph.blocks().size());
  if (stats_out) *stats_out = stats;
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ios::UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("schedulers: registry names", "[scheduler]") {
  for (const char* name : {"sequential", "greedy", "ios", "ios-parallel", "ios-merge", "dos", "lios", "nimble"}) {
    CHECK(find_scheduler(name).name == name);
  }
  const std::string err = error_of([] { find_scheduler("fastest"); });
  CHECK_THAT(err, Catch::Contains("fastest") && Catch::Contains("ios") && Catch::Contains("lios"));
}

TEST_CASE("schedulers: parameters", "[scheduler]") {
  const SchedulerEntry& ios = find_scheduler("ios");
  const Params defaults = Params::parse("ios", ios.params, "");
  CHECK(defaults.get_int("r") == 3);
  CHECK(defaults.get_int("s") == 8);
  CHECK(defaults.get_string("strategy") == "both");
  const Params p = Params::parse("ios", ios.params, " r=0, s = 4,groups=single-entry ");
  CHECK(p.get_int("r") == 0);
  CHECK(p.get_int("s") == 4);
  const auto text = p.to_strings();
  REQUIRE(text.size() == 4);
  CHECK(text[0] == std::make_pair(std::string("groups"), std::string("single-entry")));
  CHECK(text[1] == std::make_pair(std::string("r"), std::string("0")));
  CHECK(text[2] == std::make_pair(std::string("s"), std::string("4")));
  CHECK(text[3] == std::make_pair(std::string("strategy"), std::string("both")));

  std::string err = error_of([&] { Params::parse("ios", ios.params, "r=3,q=1"); });
  CHECK_THAT(err, Catch::Contains("'ios'") && Catch::Contains("'q'") && Catch::Contains("r, s, strategy, groups"));
  err = error_of([&] { Params::parse("ios", ios.params, "r=three"); });
  CHECK_THAT(err, Catch::Contains("'r'") && Catch::Contains("integer"));
  err = error_of([&] { Params::parse("ios", ios.params, "r=1,r=2"); });
  CHECK_THAT(err, Catch::Contains("twice"));
  err = error_of([&] { Params::parse("ios", ios.params, "r"); });
  CHECK_THAT(err, Catch::Contains("name=value"));
  err = error_of([&] { ios.make(Params::parse("ios", ios.params, "strategy=fastest")); });
  CHECK_THAT(err, Catch::Contains("strategy") && Catch::Contains("fastest"));
  err = error_of([&] { ios.make(Params::parse("ios", ios.params, "r=-1")); });
  CHECK_THAT(err, Catch::Contains("'r'"));
  err = error_of([&] { ios.make(Params::parse("ios", ios.params, "groups=round")); });
  CHECK_THAT(err, Catch::Contains("groups"));
  const SchedulerEntry& seq = find_scheduler("sequential");
  err = error_of([&] { Params::parse("sequential", seq.params, "r=3"); });
  CHECK_THAT(err, Catch::Contains("'sequential'") && Catch::Contains("none"));
  const SchedulerEntry& lios = find_scheduler("lios");
  err = error_of([&] { lios.make(Params::parse("lios", lios.params, "streams=0")); });
  CHECK_THAT(err, Catch::Contains("streams"));
}

TEST_CASE("schedulers: valid schedules, IOS never worse than sequential and greedy", "[scheduler]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int greedy_compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    const double p = 0.05 + 0.4 * unit(rng);
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u)
      for (int v = u + 1; v < n; ++v)
        if (unit(rng) < p * (v - u <= 4 ? 1.0 : 0.3)) edges.emplace_back(u, v);
    const UnitGraph graph = UnitGraph::from_edges(n, edges, 4 + static_cast<int>(rng() % 12));
    std::vector<double> w(static_cast<size_t>(n));
    for (double& x : w) x = 0.1 + unit(rng);
    AdditiveCost cost(w, 0.05);
    INFO("trial " << trial << " n " << n << " edges " << edges.size() << " blocks " << graph.blocks().size());

    std::map<std::string, double> latency;
    for (const auto& entry : scheduler_registry()) {
      INFO("scheduler " << entry.name);
      const Schedule s = run_scheduler(entry.name, "", graph, cost);
      CHECK(s.scheduler.name == entry.name);
      CHECK(s.scheduler.cost_model == cost.name());
      CHECK(check_schedule(graph, s) == "");
      CHECK_NOTHROW(validate_schedule(s, graph, "random.schedule.json"));
      if (s.is_staged()) {
        double sum = 0;
        for (const Stage& st : s.staged().stages) {
          CHECK(st.predicted_ms == Approx(cost.stage_latency(st)));
          sum += st.predicted_ms;
        }
        CHECK(sum == Approx(s.predicted_latency_ms));
      } else {
        double end = 0;
        for (const auto& l : s.streamed().launches) end = std::max(end, l.predicted_finish_ms);
        CHECK(end == Approx(s.predicted_latency_ms));
      }
      latency[entry.name] = s.predicted_latency_ms;
    }
    const double eps = 1e-9;
    for (const char* variant : {"ios", "ios-parallel"}) {
      CHECK(latency[variant] <= latency["sequential"] + eps);
    }
    CHECK(latency["dos"] <= latency["sequential"] + eps);
    const double single_entry = run_scheduler("ios", "groups=single-entry", graph, cost).predicted_latency_ms;
    CHECK(single_entry <= latency["sequential"] + eps);
    CHECK(latency["ios"] <= single_entry + eps);  // any-shape groups include single-entry ones

    // Greedy's stages are antichains: inside IOS's space when they have <= s groups.
    const Schedule greedy = run_scheduler("greedy", "", graph, cost);
    bool fits = true;
    for (const Stage& st : greedy.staged().stages) fits = fits && st.groups.size() <= 8;
    if (fits) {
      ++greedy_compared;
      CHECK(latency["ios"] <= latency["greedy"] + eps);
      CHECK(single_entry <= latency["greedy"] + eps);
      CHECK(latency["dos"] <= latency["greedy"] + eps);
    }
    // Unpruned IOS is at least as good as pruned.
    CHECK(run_scheduler("ios", "r=0,s=0", graph, cost).predicted_latency_ms <= latency["ios"] + eps);
  }
  CHECK(greedy_compared > 30);
}

TEST_CASE("schedulers: stats per block", "[scheduler]") {
  // Two Inception-like blocks in a row: the concat of the first feeds the second.
  std::vector<std::pair<int, int>> edges = {{1, 2}, {1, 3}, {4, 5}, {5, 6}, {5, 7}, {8, 9},
                                            {0, 10}, {2, 10}, {3, 10}, {6, 10}, {7, 10}, {9, 10}};
  const size_t first = edges.size();
  for (size_t i = 0; i < first; ++i) edges.emplace_back(edges[i].first + 11, edges[i].second + 11);
  for (int u : {11, 12, 15, 19}) edges.emplace_back(10, u);
  const UnitGraph graph = UnitGraph::from_edges(22, edges);
  REQUIRE(graph.blocks().size() == 2);
  AdditiveCost cost(std::vector<double>(22, 1.0), 0.1);
  SearchStats stats;
  const Schedule s = run_scheduler("ios-parallel", "r=0,s=0,groups=single-entry", graph, cost, &stats);
  CHECK(check_schedule(graph, s) == "");
  REQUIRE(stats.blocks.size() == 2);
  for (const BlockStats& b : stats.blocks) {
    CHECK(b.units == 11);
    CHECK(b.width == 6);
    CHECK(b.states == 180);
    CHECK(b.transitions == 4871);
    CHECK(b.stages_costed > 0);
  }
  CHECK(stats.blocks[0].predicted_ms + stats.blocks[1].predicted_ms == Approx(s.predicted_latency_ms));
}
