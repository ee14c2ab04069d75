// The searching schedulers' guarantees: never slower than the greedy and
// sequential baselines under any pruning, a time limit that bounds the
// search and still yields a complete schedule, and the search-size estimate
// the time limit plans with.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <random>

#include "exhaustive.h"
#include "paper_graphs.h"
#include "schedule_check.h"
#include "sched/builtin_schedulers.h"
#include "sched/ios_dp.h"
#include "sched/scheduler.h"
#include "synthetic_cost.h"

using namespace ios::sched;
using ios::sched::test::AdditiveCost;
using ios::sched::test::check_schedule;
using ios::sched::test::EdgeList;
using ios::sched::test::Exhaustive;
using ios::sched::test::RandomStageCost;

namespace {

struct Run {
  Schedule schedule;
  SearchStats stats;
  double seconds = 0.0;
};

Run run(const std::string& name, const std::string& params, const UnitGraph& graph, CostModel& cost,
        double time_limit_s = 0.0) {
  const SchedulerEntry& entry = find_scheduler(name);
  std::unique_ptr<Scheduler> scheduler = entry.make(Params::parse(name, entry.params, params));
  scheduler->set_time_limit(time_limit_s);
  Run out;
  const auto start = std::chrono::steady_clock::now();
  out.schedule = scheduler->run(graph, cost, out.stats);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(check_schedule(graph, out.schedule) == "");
  REQUIRE(out.stats.blocks.size() == graph.blocks().size());
  return out;
}

// N parallel branches (of the model's input) joined by one unit: units
// 0..N-1 all feed N.
UnitGraph fan_out(int branches, int max_block_units) {
  std::vector<std::pair<int, int>> edges;
  for (int k = 0; k < branches; ++k) edges.emplace_back(k, branches);
  return UnitGraph::from_edges(branches + 1, edges, max_block_units);
}

// Each block's latency is no more than its greedy and sequential ones.
void check_never_worse(const UnitGraph& graph, CostModel& cost, const Run& searched, bool with_greedy) {
  const Run greedy = run("greedy", "", graph, cost);
  const Run sequential = run("sequential", "", graph, cost);
  for (size_t b = 0; b < graph.blocks().size(); ++b) {
    INFO("block " << b);
    const double eps = 1e-9 * (1.0 + sequential.stats.blocks[b].predicted_ms);
    CHECK(searched.stats.blocks[b].predicted_ms <= sequential.stats.blocks[b].predicted_ms + eps);
    if (with_greedy) CHECK(searched.stats.blocks[b].predicted_ms <= greedy.stats.blocks[b].predicted_ms + eps);
  }
  double sum = 0.0;
  for (const Stage& stage : searched.schedule.staged().stages) sum += stage.predicted_ms;
  CHECK(sum == Approx(searched.schedule.predicted_latency_ms));
}

}  // namespace

TEST_CASE("search budget: a fan-out wider than s keeps greedy's stage", "[search_budget]") {
  // A stage costs its longest group plus 2: one stage of all 10 branches
  // (greedy) beats the two or more that s = 8 allows.
  const UnitGraph graph = fan_out(10, 64);
  REQUIRE(graph.blocks().size() == 1);
  AdditiveCost cost(std::vector<double>(11, 1.0), 2.0);
  const Run ios = run("ios", "", graph, cost);
  const Run greedy = run("greedy", "", graph, cost);
  CHECK(ios.schedule.predicted_latency_ms == Approx(greedy.schedule.predicted_latency_ms));
  CHECK(ios.stats.blocks[0].search == BlockSearch::kComplete);
  CHECK(ios.stats.blocks[0].kept == BlockSource::kGreedy);
  check_never_worse(graph, cost, ios, true);
  // Without the pruning the DP itself finds a stage of all ten branches.
  const Run unpruned = run("ios", "s=0", graph, cost);
  CHECK(unpruned.stats.blocks[0].kept == BlockSource::kScheduler);
  CHECK(unpruned.schedule.predicted_latency_ms <= ios.schedule.predicted_latency_ms + 1e-12);
  // IOS-Merge's stages are single units and merges: it is held to sequential only.
  const Run merge = run("ios-merge", "", graph, cost);
  for (const Stage& stage : merge.schedule.staged().stages) {
    CHECK((stage.strategy == Strategy::kMerge || stage.groups.size() == 1));
  }
  check_never_worse(graph, cost, merge, false);
}

TEST_CASE("search budget: a 50-branch fan-out under a time limit", "[search_budget]") {
  // Parts of 17 units: the s = 8 search of one takes seconds; 0.5 s for all.
  const UnitGraph graph = fan_out(50, 17);
  REQUIRE(graph.blocks().size() >= 3);
  AdditiveCost cost(std::vector<double>(51, 1.0), 2.0);
  const Run ios = run("ios", "", graph, cost, 0.5);
  // The limit bounds the search; the baselines and the bookkeeping come on
  // top, and the machine may be shared: a generous bound.
  CHECK(ios.seconds < 5.0);
  int incomplete = 0;
  for (const BlockStats& b : ios.stats.blocks) incomplete += b.search != BlockSearch::kComplete;
  CHECK(incomplete > 0);
  check_never_worse(graph, cost, ios, true);
}

TEST_CASE("search budget: random DAGs, any pruning, never worse than the baselines", "[search_budget]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30);
    const double p = 0.05 + 0.4 * unit(rng);
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (unit(rng) < p) edges.emplace_back(u, v);
      }
    }
    const UnitGraph graph = UnitGraph::from_edges(n, edges, 4 + static_cast<int>(rng() % 10));
    INFO("trial " << trial << " n " << n << " edges " << edges.size());
    for (const char* params : {"", "r=1,s=1", "r=2,s=2", "s=1", "groups=single-entry,s=2"}) {
      INFO("params " << params);
      RandomStageCost cost(static_cast<uint64_t>(trial));
      check_never_worse(graph, cost, run("ios", params, graph, cost), true);
      check_never_worse(graph, cost, run("ios-parallel", params, graph, cost), true);
      check_never_worse(graph, cost, run("ios-merge", params, graph, cost), false);
    }
    RandomStageCost cost(static_cast<uint64_t>(trial));
    check_never_worse(graph, cost, run("dos", "s=2", graph, cost), true);
    // A limit too short for any search still gives a complete schedule.
    const Run rushed = run("ios", "", graph, cost, 1e-6);
    for (const BlockStats& b : rushed.stats.blocks) {
      CHECK((b.search == BlockSearch::kSkipped || b.search == BlockSearch::kAbandoned ||
             b.search == BlockSearch::kComplete || b.search == BlockSearch::kReduced));
    }
    check_never_worse(graph, cost, rushed, true);
  }
}

TEST_CASE("search budget: an ample limit changes nothing", "[search_budget]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 4 + static_cast<int>(rng() % 20);
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 4 == 0) edges.emplace_back(u, v);
      }
    }
    const UnitGraph graph = UnitGraph::from_edges(n, edges, 12);
    RandomStageCost cost(static_cast<uint64_t>(trial));
    const Run unbounded = run("ios", "", graph, cost);
    const Run bounded = run("ios", "", graph, cost, 60.0);
    const auto& a = unbounded.schedule.staged().stages;
    const auto& b = bounded.schedule.staged().stages;
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].groups == b[k].groups);
      CHECK(a[k].strategy == b[k].strategy);
    }
    for (const BlockStats& s : bounded.stats.blocks) CHECK(s.search == BlockSearch::kComplete);
  }
}

TEST_CASE("search budget: a search past its deadline is abandoned cleanly", "[search_budget]") {
  const EdgeList g = ios::sched::test::inception_v3_last_block();
  const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
  AdditiveCost cost(std::vector<double>(static_cast<size_t>(g.n), 1.0), 0.1);
  SolveLimits limits;
  limits.deadline = std::chrono::steady_clock::now();
  const BlockSolution abandoned = solve_block(dag, IosOptions{}, cost, {}, limits);
  CHECK_FALSE(abandoned.complete);
  CHECK(abandoned.stages.empty());
  const BlockSolution finished = solve_block(dag, IosOptions{}, cost);
  CHECK(finished.complete);
  CHECK_FALSE(finished.stages.empty());
}

TEST_CASE("search budget: the search-size estimate", "[search_budget]") {
  IosOptions exact;
  exact.strategies = StrategySet::kConcurrent;
  exact.max_group_units = 0;
  exact.max_groups = 0;
  exact.group_shape = GroupShape::kSingleEntry;
  const EdgeList g = ios::sched::test::inception_v3_last_block();
  const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
  // Every state sampled: the count is exact (Table 1: 180 states, 4,871 transitions).
  const SearchEstimate all = estimate_search(dag, exact, 1 << 20, 1000);
  CHECK(all.exact_states);
  CHECK(all.states == 180);
  CHECK(all.transitions == Approx(4871));
  // 48 of them: within a factor of two.
  const SearchEstimate sampled = estimate_search(dag, exact);
  CHECK(sampled.transitions > 4871 / 2.0);
  CHECK(sampled.transitions < 4871 * 2.0);
  // An antichain of 14 under s = 8: sum over states of sum_{j<=8} C(|S|, j).
  std::vector<std::pair<int, int>> none;
  const BlockDag wide = BlockDag::from_edges(14, none);
  double expected = 0.0;
  for (int k = 1; k <= 14; ++k) {
    double states = 1.0, endings = 0.0, choose = 1.0;
    for (int i = 0; i < k; ++i) states = states * (14 - i) / (i + 1);
    for (int j = 1; j <= std::min(k, 8); ++j) {
      choose = choose * (k - j + 1) / j;
      endings += choose;
    }
    expected += states * endings;
  }
  AdditiveCost cost(std::vector<double>(14, 1.0), 0.1);
  const BlockSolution solved = solve_block(wide, IosOptions{}, cost);
  CHECK(static_cast<double>(solved.transitions) == Approx(expected));
  const SearchEstimate estimate = estimate_search(wide, IosOptions{});
  CHECK(estimate.states == 16383);
  CHECK(estimate.transitions > expected / 2.0);
  CHECK(estimate.transitions < expected * 2.0);
  // Too many states to list: the paper's bound, flagged as such.
  const SearchEstimate capped = estimate_search(wide, IosOptions{}, 1000);
  CHECK_FALSE(capped.exact_states);
  CHECK(capped.transitions >= expected);
}

TEST_CASE("the search's schedule depends neither on its threads nor on the cost model's stage bound",
          "[search_budget]") {
  std::mt19937 rng(2024);
  bool spared = false;  // the bound skipped a costing somewhere
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 30 + static_cast<int>(rng() % 30);
    std::vector<std::pair<int, int>> edges;
    for (int v = 1; v < n; ++v) {
      for (int u = std::max(0, v - 6); u < v; ++u) {
        if (rng() % 3 == 0) edges.emplace_back(u, v);
      }
    }
    const UnitGraph graph = UnitGraph::from_edges(n, edges, 12);  // several blocks
    std::vector<double> weight(static_cast<size_t>(n));
    for (double& w : weight) w = 0.01 + 0.001 * static_cast<double>(rng() % 100);
    for (const char* name : {"ios", "ios-parallel", "dos"}) {
      INFO("trial " << trial << ", " << name);
      AdditiveCost plain(weight, 0.002), bounded(weight, 0.002, 0.7, /*bounded=*/true);
      const Run reference = run(name, "", graph, plain);
      for (int threads : {1, 4}) {
        for (double limit : {0.0, 30.0}) {
          const SchedulerEntry& entry = find_scheduler(name);
          std::unique_ptr<Scheduler> scheduler = entry.make(Params::parse(name, entry.params, ""));
          scheduler->set_threads(threads);
          scheduler->set_time_limit(limit);
          SearchStats stats;
          const Schedule s = scheduler->run(graph, bounded, stats);
          REQUIRE(s.staged().stages.size() == reference.schedule.staged().stages.size());
          for (size_t k = 0; k < s.staged().stages.size(); ++k) {
            CHECK(s.staged().stages[k].groups == reference.schedule.staged().stages[k].groups);
            CHECK(s.staged().stages[k].strategy == reference.schedule.staged().stages[k].strategy);
          }
          CHECK(s.predicted_latency_ms == reference.schedule.predicted_latency_ms);
          // The bound only spares costings.
          int64_t costed = 0, reference_costed = 0;
          for (const auto& b : stats.blocks) costed += b.stages_costed;
          for (const auto& b : reference.stats.blocks) reference_costed += b.stages_costed;
          CHECK(costed <= reference_costed);
          spared = spared || costed < reference_costed;
        }
      }
    }
  }
  CHECK(spared);
}

// The unit bounds prune an ending when its longest group alone would lose.
// A merged stage may be faster than its longest member (the merged kernel
// does the members' work at once), so the bound never prunes a possible
// merge: with mergeable units and merges at 0.3 of the members' summed
// weight, the bounded search must find what the unbounded one and the
// exhaustive search find, and must choose merges that beat the bound.
TEST_CASE("ios dp: the unit bounds never prune a merge that can win", "[search_budget][ios_dp]") {
  std::mt19937_64 rng(20261128);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int merges = 0, below_bound = 0, compared = 0;
  int64_t costed = 0, costed_unbounded = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int n = 2 + trial % 9;
    std::vector<std::pair<int, int>> edges;
    const double p = 0.1 + 0.4 * unit(rng);
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (unit(rng) < p) edges.emplace_back(u, v);
      }
    }
    const BlockDag dag = BlockDag::from_edges(n, edges);
    // Mergeable: units of the same label (two labels per DAG).
    std::vector<int> label(static_cast<size_t>(n));
    for (int& l : label) l = static_cast<int>(rng() % 2);
    const MergePredicate can_merge = [label](const std::vector<UnitId>& units) {
      for (UnitId u : units) {
        if (label[static_cast<size_t>(u)] != label[static_cast<size_t>(units[0])]) return false;
      }
      return true;
    };
    std::vector<double> weight(static_cast<size_t>(n));
    for (double& w : weight) w = 0.25 * static_cast<double>(1 + rng() % 16);
    IosOptions pruned;  // the defaults: r = 3, s = 8, both strategies
    IosOptions unpruned;
    unpruned.max_group_units = 0;
    unpruned.max_groups = 0;
    for (const IosOptions& options : {pruned, unpruned}) {
      INFO("trial " << trial << " n " << n << " edges " << edges.size() << " r "
                    << options.max_group_units);
      AdditiveCost plain(weight, 0.05, 0.3), bounded(weight, 0.05, 0.3, /*bounded=*/true);
      const BlockSolution reference = solve_block(dag, options, plain, can_merge);
      const BlockSolution searched = solve_block(dag, options, bounded, can_merge);
      REQUIRE(reference.complete);
      REQUIRE(searched.complete);
      CHECK(searched.latency_ms == Approx(reference.latency_ms).epsilon(1e-12));
      AdditiveCost brute_cost(weight, 0.05, 0.3);
      Exhaustive brute(n, edges, options, brute_cost, can_merge);
      CHECK(reference.latency_ms == Approx(brute.best()).epsilon(1e-12));
      costed += searched.stages_costed;
      costed_unbounded += reference.stages_costed;
      for (const Stage& stage : reference.stages) {
        if (stage.strategy != Strategy::kMerge) continue;
        ++merges;
        double longest = 0.0;
        for (UnitId u : stage.groups[0])
          longest = std::max(longest, weight[static_cast<size_t>(u)]);
        below_bound += stage.predicted_ms < longest ? 1 : 0;
      }
      ++compared;
    }
  }
  CHECK(compared == 240);
  // The case reaches what it is about: optimal schedules with merges faster
  // than their longest member, and a bound that spares costings elsewhere.
  CHECK(merges > 150);
  CHECK(below_bound > 150);
  CHECK(costed < costed_unbounded);
}
