// The memory-bounded DP (sched/memory_bound.h, SolveLimits::memory): the
// live bytes of stages on hand-computed blocks, and on random DAGs that a
// bound between the sequential schedule's peak and the unbounded schedule's
// keeps every stage within it, costs no more than the sequential schedule,
// and changes nothing when it binds nothing.
#include <catch2/catch.hpp>

#include <random>

#include "paper_graphs.h"
#include "sched/block_dag.h"
#include "sched/builtin_schedulers.h"
#include "sched/ios_dp.h"
#include "sched/memory_bound.h"
#include "synthetic_cost.h"

using namespace ios::sched;
using ios::sched::test::AdditiveCost;
using ios::sched::test::EdgeList;

namespace {

// Each unit's output read by its successors; sinks' outputs are read after
// the block.
BlockMemory memory_of(const BlockDag& dag, const std::vector<int64_t>& out, const std::vector<int64_t>& workspace = {}) {
  BlockMemory m;
  for (int x = 0; x < dag.n; ++x) {
    m.out_bytes[static_cast<size_t>(x)] = out.at(static_cast<size_t>(x));
    if (!workspace.empty()) m.workspace[static_cast<size_t>(x)] = workspace.at(static_cast<size_t>(x));
    m.readers[static_cast<size_t>(x)] = dag.succ[static_cast<size_t>(x)];
    if (dag.succ[static_cast<size_t>(x)] == 0) m.escapes |= bit(x);
  }
  m.bound = int64_t{1} << 60;
  return m;
}

IosOptions options_for(int r, int s) {
  IosOptions o;
  o.max_group_units = r;
  o.max_groups = s;
  return o;
}

// Two chains 0 -> 1 and 2 -> 3 joined by 4: run one after the other they
// keep at most three outputs live, side by side four.
EdgeList two_chains() { return {5, {{0, 1}, {2, 3}, {1, 4}, {3, 4}}}; }

}  // namespace

TEST_CASE("memory bound: live bytes of two chains, by hand", "[memory]") {
  const BlockDag dag = BlockDag::from_edges(5, two_chains().edges);
  BlockMemory m = memory_of(dag, {100, 100, 100, 100, 10});
  m.carried = 7;
  CHECK(m.live_after(0) == 7);
  CHECK(m.stage_bytes(0, bit(0)) == 107);
  CHECK(m.live_after(bit(0)) == 107);                      // 0 is read by 1, not yet run
  CHECK(m.stage_bytes(bit(0), bit(1)) == 207);             // 0 and 1
  CHECK(m.live_after(bit(0) | bit(1)) == 107);             // 0 died, 1 waits for 4
  CHECK(m.stage_bytes(bit(0) | bit(2), bit(1) | bit(3)) == 407);
  CHECK(m.live_after(dag.all()) == 17);                    // only the sink's output, read after the block
  // A sequential order peaks at three outputs, the concurrent one at four.
  std::vector<Stage> sequential;
  for (int x = 0; x < 5; ++x) sequential.push_back({Strategy::kConcurrent, {{x}}, 0.0});
  CHECK(m.peak(dag, sequential) == 307);
  const std::vector<Stage> paired = {{Strategy::kConcurrent, {{0}, {2}}, 0.0},
                                     {Strategy::kConcurrent, {{1}, {3}}, 0.0},
                                     {Strategy::kConcurrent, {{4}}, 0.0}};
  CHECK(m.peak(dag, paired) == 407);
  // Workspaces count per unit of the stage.
  BlockMemory w = memory_of(dag, {0, 0, 0, 0, 0}, {5, 6, 7, 8, 9});
  CHECK(w.stage_bytes(bit(0) | bit(2), bit(1) | bit(3)) == 14);
}

TEST_CASE("memory bound: the DP keeps the two chains within the bound", "[memory]") {
  const BlockDag dag = BlockDag::from_edges(5, two_chains().edges);
  AdditiveCost cost({1, 1, 1, 1, 1}, 0.1);
  BlockMemory m = memory_of(dag, {100, 100, 100, 100, 10});
  const BlockSolution free = solve_block(dag, options_for(3, 8), cost);
  CHECK(m.peak(dag, free.stages) == 400);  // the chains side by side
  m.bound = 300;
  SolveLimits limits;
  limits.memory = &m;
  const BlockSolution bounded = solve_block(dag, options_for(3, 8), cost, {}, limits);
  REQUIRE(bounded.feasible);
  CHECK(m.peak(dag, bounded.stages) <= 300);
  CHECK(bounded.latency_ms > free.latency_ms);
  CHECK(bounded.latency_ms <= sequential_block(dag, cost).latency_ms);
  m.bound = 150;  // below any order's need (a unit and its input)
  const BlockSolution none = solve_block(dag, options_for(3, 8), cost, {}, limits);
  CHECK_FALSE(none.feasible);
  CHECK(none.complete);
  CHECK(none.stages.empty());
}

TEST_CASE("memory bound: random DAGs, every bound between sequential and unbounded", "[memory]") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 4 + trial % 9;
    std::vector<std::pair<int, int>> edges;
    std::bernoulli_distribution edge(0.3);
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (edge(rng)) edges.emplace_back(u, v);
      }
    }
    const BlockDag dag = BlockDag::from_edges(n, edges);
    std::uniform_int_distribution<int64_t> bytes(1, 1000);
    std::uniform_real_distribution<double> ms(0.1, 2.0);
    std::vector<int64_t> out, workspace;
    std::vector<double> weight;
    for (int x = 0; x < n; ++x) {
      out.push_back(bytes(rng));
      workspace.push_back(x % 3 == 0 ? bytes(rng) : 0);
      weight.push_back(ms(rng));
    }
    AdditiveCost cost(weight, 0.05);
    BlockMemory m = memory_of(dag, out, workspace);
    const IosOptions options = options_for(trial % 2 == 0 ? 3 : 0, trial % 3 == 0 ? 2 : 0);
    const BlockSolution free = solve_block(dag, options, cost);
    const BaselineBlock sequential = sequential_block(dag, cost);
    const int64_t free_peak = m.peak(dag, free.stages);
    const int64_t sequential_peak = m.peak(dag, sequential.stages);
    INFO("trial " << trial << ", " << n << " units, sequential peak " << sequential_peak << ", unbounded "
                  << free_peak);
    SolveLimits limits;
    limits.memory = &m;
    // A bound that binds nothing changes nothing.
    m.bound = std::max(free_peak, sequential_peak);
    const BlockSolution same = solve_block(dag, options, cost, {}, limits);
    REQUIRE(same.feasible);
    CHECK(same.latency_ms == Approx(free.latency_ms));
    for (int64_t bound : {sequential_peak, (sequential_peak + free_peak) / 2, free_peak - 1}) {
      if (bound < sequential_peak) continue;
      m.bound = bound;
      const BlockSolution bounded = solve_block(dag, options, cost, {}, limits);
      INFO("bound " << bound);
      REQUIRE(bounded.feasible);
      CHECK(m.peak(dag, bounded.stages) <= bound);
      CHECK(bounded.latency_ms <= sequential.latency_ms + 1e-9);
      CHECK(bounded.latency_ms >= free.latency_ms - 1e-9);
    }
  }
}
