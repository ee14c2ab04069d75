// The IOS DP: search-space sizes against the IOS paper's Table 1, and
// optimality against an exhaustive search on random DAGs.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "exhaustive.h"
#include "paper_graphs.h"
#include "sched/block_dag.h"
#include "sched/ios_dp.h"
#include "synthetic_cost.h"
#include "test_paths.h"

using namespace ios::sched;
using ios::sched::test::AdditiveCost;
using ios::sched::test::EdgeList;
using ios::sched::test::Exhaustive;
using ios::sched::test::RandomStageCost;

namespace {

IosOptions unpruned(StrategySet strategies, GroupShape shape) {
  IosOptions o;
  o.strategies = strategies;
  o.max_group_units = 0;
  o.max_groups = 0;
  o.group_shape = shape;
  o.ending_rule = EndingRule::kIos;
  return o;
}

BlockSolution solve(const EdgeList& g, const IosOptions& options) {
  AdditiveCost cost(std::vector<double>(static_cast<size_t>(g.n), 1.0), 0.1);
  const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
  BlockSolution s = solve_block(dag, options, cost);
  CHECK(s.stages_costed == cost.calls);
  return s;
}

// Rounds to two significant digits, as the paper prints its counts.
double two_digits(double x) {
  const double scale = std::pow(10.0, std::floor(std::log10(x)) - 1);
  return std::round(x / scale) * scale;
}

}  // namespace

TEST_CASE("ios dp: Inception V3 last block matches Table 1", "[ios_dp][paper]") {
  const EdgeList g = ios::sched::test::inception_v3_last_block();
  CHECK(BlockDag::from_edges(g.n, g.edges).width() == 6);  // Table 1: n = 11, d = 6
  const BlockSolution single = solve(g, unpruned(StrategySet::kConcurrent, GroupShape::kSingleEntry));
  CHECK(single.states == 180);
  CHECK(single.transitions == 4871);  // Table 1: 4.9 x 10^3
  const BlockSolution any = solve(g, unpruned(StrategySet::kConcurrent, GroupShape::kAny));
  CHECK(any.states == 180);
  CHECK(any.transitions == 5040);
}

TEST_CASE("ios dp: SqueezeNet fire module with bypass matches Table 1", "[ios_dp][paper]") {
  const EdgeList g = ios::sched::test::squeezenet_fire_with_bypass();
  CHECK(BlockDag::from_edges(g.n, g.edges).width() == 3);  // Table 1: n = 6, d = 3
  const BlockSolution single = solve(g, unpruned(StrategySet::kConcurrent, GroupShape::kSingleEntry));
  CHECK(single.states == 12);
  CHECK(single.transitions == 51);  // Table 1: 51
  const BlockSolution any = solve(g, unpruned(StrategySet::kConcurrent, GroupShape::kAny));
  CHECK(any.states == 12);
  CHECK(any.transitions == 60);
}

TEST_CASE("ios dp: counts agree with a brute-force walk of the same space", "[ios_dp][paper]") {
  // The brute force tries every subset of the remaining units as the next
  // stage; its reachable states and allowed (state, stage) pairs must be the
  // DP's states and transitions.
  for (const EdgeList& g : {ios::sched::test::inception_v3_last_block(),
                            ios::sched::test::squeezenet_fire_with_bypass()}) {
    for (GroupShape shape : {GroupShape::kSingleEntry, GroupShape::kAny}) {
      const IosOptions options = unpruned(StrategySet::kConcurrent, shape);
      AdditiveCost cost(std::vector<double>(static_cast<size_t>(g.n), 1.0));
      Exhaustive brute(g.n, g.edges, options, cost);
      const auto [states, pairs] = brute.count_states_and_pairs();
      const BlockSolution dp = solve(g, options);
      CHECK(dp.states == states);
      CHECK(dp.transitions == pairs);
    }
  }
}

TEST_CASE("ios dp: single-entry schedule counts match Table 1", "[ios_dp][paper]") {
  // Table 1's last column: 3.8 x 10^6 schedules for Inception V3's block and
  // 1.3 x 10^2 for SqueezeNet's, counted in the single-entry space.
  const IosOptions options = unpruned(StrategySet::kConcurrent, GroupShape::kSingleEntry);
  {
    const EdgeList g = ios::sched::test::squeezenet_fire_with_bypass();
    AdditiveCost cost(std::vector<double>(static_cast<size_t>(g.n), 1.0));
    Exhaustive brute(g.n, g.edges, options, cost);
    const auto [best, count] = brute.enumerate_all();  // one by one
    CHECK(count == brute.count_schedules());
    CHECK(two_digits(static_cast<double>(count)) == 130.0);
  }
  {
    const EdgeList g = ios::sched::test::inception_v3_last_block();
    AdditiveCost cost(std::vector<double>(static_cast<size_t>(g.n), 1.0));
    Exhaustive brute(g.n, g.edges, options, cost);
    CHECK(two_digits(static_cast<double>(brute.count_schedules())) == 3.8e6);
  }
}

TEST_CASE("ios dp: RandWire block ws-32-4-0.75-4 matches Table 1", "[ios_dp][paper]") {
  const auto file = ios::test::randwire_graphs_dir() / "ws-32-4-0.75-4.txt";
  INFO("reads " << file.string() << " (committed with the sources)");
  REQUIRE(std::filesystem::exists(file));
  const EdgeList g = ios::sched::test::randwire_block(file);
  REQUIRE(g.n == 33);
  CHECK(BlockDag::from_edges(g.n, g.edges).width() == 8);  // Table 1: n = 33, d = 8
  const BlockSolution single = solve(g, unpruned(StrategySet::kConcurrent, GroupShape::kSingleEntry));
  CHECK(single.transitions == 1170663);  // Table 1: 1.2 x 10^6
}

TEST_CASE("ios dp: rebuilt schedule is consistent", "[ios_dp]") {
  const EdgeList g = ios::sched::test::inception_v3_last_block();
  std::vector<double> w = {3, 2, 4, 4, 1, 5, 3, 3, 2, 2, 1};
  AdditiveCost cost(w, 0.5);
  const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
  for (GroupShape shape : {GroupShape::kAny, GroupShape::kSingleEntry}) {
    IosOptions o;
    o.strategies = StrategySet::kConcurrent;
    o.group_shape = shape;
    const BlockSolution s = solve_block(dag, o, cost);
    double sum = 0.0;
    std::vector<int> seen(static_cast<size_t>(g.n), 0);
    for (const Stage& stage : s.stages) {
      CHECK(stage.predicted_ms == cost.stage_latency(stage));
      sum += stage.predicted_ms;
      CHECK(static_cast<int>(stage.groups.size()) <= o.max_groups);
      for (const auto& group : stage.groups) {
        CHECK(static_cast<int>(group.size()) <= o.max_group_units);
        for (UnitId u : group) ++seen[static_cast<size_t>(u)];
      }
    }
    CHECK(sum == Approx(s.latency_ms));
    for (int c : seen) CHECK(c == 1);
    // Sequential costs 30 + 11 * 0.5; running the branches side by side is cheaper.
    CHECK(s.latency_ms < 30 + 11 * 0.5);
  }
}

TEST_CASE("ios dp: groups are the weakly connected components, the block's longest chain first", "[ios_dp]") {
  // Inception V3's last block. Chains: 4 5 6 10 (the block's longest), then
  // 1 2, then 8 9, then 0, 3 and 7 alone.
  const EdgeList g = ios::sched::test::inception_v3_last_block();
  const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
  struct Case {
    const char* what;
    uint64_t stage;
    std::vector<std::vector<int>> groups;  // in issue order
  };
  const Case cases[] = {
      // {1,2,3} joined by 1->2, 1->3; {5,6,7}; {9} alone: {5,6,7} holds
      // part of chain 0, so it is issued first.
      {"three components", bit(1) | bit(2) | bit(3) | bit(5) | bit(6) | bit(7) | bit(9),
       {{5, 6, 7}, {1, 2, 3}, {9}}},
      // Figure 10's batch-1 second stage: the 3x3 double branch's three
      // convolutions, the 1x3 and 3x1 of the 3x3 branch, and the pooling
      // branch. In the order of their first units the chain would go last
      // but one and start after every other group's launches.
      {"Figure 10's batch-1 second stage", bit(2) | bit(3) | bit(5) | bit(6) | bit(7) | bit(8) | bit(9),
       {{5, 6, 7}, {2}, {8, 9}, {3}}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const auto groups = ending_groups(dag, c.stage);
    REQUIRE(groups.size() == c.groups.size());
    for (size_t k = 0; k < groups.size(); ++k) CHECK(groups[k] == c.groups[k]);
  }
  // The solver lists a stage's groups in this order too (checked against
  // the exhaustive search's own chain decomposition on random DAGs below).
}

namespace {

EdgeList random_dag(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double p = 0.1 + 0.5 * unit(rng);
  EdgeList g;
  g.n = n;
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) {
      if (unit(rng) < p) g.edges.emplace_back(u, v);
    }
  }
  return g;
}

struct RuleSet {
  EndingRule rule;
  GroupShape shape;
  int r, s;
  StrategySet strategies;
};

std::vector<RuleSet> rule_sets() {
  std::vector<RuleSet> sets;
  const std::pair<int, int> prunings[] = {{0, 0}, {3, 8}, {2, 2}, {1, 3}};
  for (StrategySet st : {StrategySet::kConcurrent, StrategySet::kBoth, StrategySet::kMerge}) {
    for (auto [r, s] : prunings) {
      for (GroupShape shape : {GroupShape::kAny, GroupShape::kSingleEntry}) {
        sets.push_back({EndingRule::kIos, shape, r, s, st});
      }
      sets.push_back({EndingRule::kDos, GroupShape::kAny, r, s, st});
    }
  }
  return sets;
}

}  // namespace

TEST_CASE("ios dp: optimal against exhaustive search on random DAGs", "[ios_dp][exhaustive]") {
  std::mt19937_64 rng(20210401);
  const auto sets = rule_sets();
  int compared = 0;
  for (int trial = 0; trial < 360; ++trial) {
    const int n = 1 + trial % 9;
    const EdgeList g = random_dag(rng, n);
    const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
    // Mergeable: units with the same label (labels drawn per DAG).
    std::vector<int> label(static_cast<size_t>(n));
    for (int& l : label) l = static_cast<int>(rng() % 3);
    MergePredicate can_merge = [label](const std::vector<UnitId>& units) {
      for (UnitId u : units) {
        if (label[static_cast<size_t>(u)] != label[static_cast<size_t>(units[0])]) return false;
      }
      return true;
    };
    const RuleSet& rs = sets[static_cast<size_t>(trial) % sets.size()];
    // Each DAG is checked under its own rule set and under two fixed ones.
    for (const RuleSet& set : {rs, sets[0], sets[1]}) {
      IosOptions o;
      o.ending_rule = set.rule;
      o.group_shape = set.shape;
      o.max_group_units = set.r;
      o.max_groups = set.s;
      o.strategies = set.strategies;
      RandomStageCost cost(rng());
      const BlockSolution dp = solve_block(dag, o, cost, can_merge);
      Exhaustive brute(g.n, g.edges, o, cost, can_merge);
      const double best = brute.best();
      INFO("trial " << trial << " n " << n << " edges " << g.edges.size() << " rule "
                    << static_cast<int>(set.rule) << " shape " << static_cast<int>(set.shape)
                    << " r " << set.r << " s " << set.s << " strategies "
                    << static_cast<int>(set.strategies));
      REQUIRE(dp.latency_ms == best);
      if (n <= 6) CHECK(brute.enumerate_all().first == best);
      // The rebuilt schedule: each stage allowed after the previous ones,
      // costed as recorded, summing to the optimum.
      uint32_t done = 0;
      double sum = 0.0;
      for (const Stage& stage : dp.stages) {
        uint32_t mask = 0;
        for (const auto& group : stage.groups) {
          for (UnitId u : group) mask |= uint32_t{1} << u;
        }
        REQUIRE((mask & done) == 0);
        const auto allowed = brute.stage_cost(done, mask);
        REQUIRE(allowed.has_value());
        CHECK(stage.predicted_ms == cost.stage_latency(stage));
        if (stage.strategy == Strategy::kConcurrent) {
          const auto groups = brute.components(mask);
          REQUIRE(groups.size() == stage.groups.size());
          for (size_t k = 0; k < groups.size(); ++k) {
            CHECK(std::vector<UnitId>(groups[k].begin(), groups[k].end()) == stage.groups[k]);
          }
        } else {
          CHECK(stage.groups.size() == 1);
          CHECK(can_merge(stage.groups[0]));
        }
        sum += stage.predicted_ms;
        done |= mask;
      }
      CHECK(done == (uint32_t{1} << n) - 1);
      CHECK(sum == best);
      ++compared;
    }
  }
  CHECK(compared == 1080);
}

namespace {

// Units in classes: a concurrent stage costs a function of its groups'
// class sequences in issue order (the longest group, an overhead per group
// and, when `ordered`, a term that depends on the order), so equal class
// keys cost the same and a search may share them (CostModel::cost_class).
// Units of weight 0 are free (CostModel::free_unit) when `free` is set.
class ClassedCost : public CostModel {
 public:
  ClassedCost(std::vector<int> cls, std::vector<double> weight, bool classed, bool free, bool ordered = true)
      : cls_(std::move(cls)), weight_(std::move(weight)), classed_(classed), free_(free), ordered_(ordered) {}
  std::string name() const override { return "synthetic-classed"; }
  double stage_latency(const Stage& stage) override {
    ++calls;
    double longest = 0.0, order = 0.0;
    for (size_t k = 0; k < stage.groups.size(); ++k) {
      double sum = 0.0;
      for (UnitId u : stage.groups[k]) sum += weight_.at(static_cast<size_t>(u));
      longest = std::max(longest, sum);
      if (ordered_) order += 0.01 * static_cast<double>(k) * sum;
    }
    const double scale = stage.strategy == Strategy::kMerge ? 0.7 : 1.0;
    return scale * longest + order + 0.25 * static_cast<double>(stage.groups.size());
  }
  int64_t cost_class(UnitId u) override { return classed_ ? cls_.at(static_cast<size_t>(u)) : -1; }
  bool free_unit(UnitId u) override { return free_ && weight_.at(static_cast<size_t>(u)) == 0.0; }
  int64_t calls = 0;

 private:
  std::vector<int> cls_;
  std::vector<double> weight_;
  bool classed_, free_, ordered_;
};

// Every unit of `dag` exactly once, each after its predecessors (in an
// earlier stage, or earlier in its group).
void check_covers(const BlockDag& dag, const std::vector<Stage>& stages) {
  std::vector<int> stage_of(static_cast<size_t>(dag.n), -1), place(static_cast<size_t>(dag.n), -1);
  for (size_t k = 0; k < stages.size(); ++k) {
    for (const auto& group : stages[k].groups) {
      for (size_t i = 0; i < group.size(); ++i) {
        const auto u = static_cast<size_t>(group[i]);
        REQUIRE(stage_of[u] == -1);
        stage_of[u] = static_cast<int>(k);
        place[u] = static_cast<int>(i);
      }
    }
  }
  for (int v = 0; v < dag.n; ++v) {
    REQUIRE(stage_of[static_cast<size_t>(v)] >= 0);
    for (uint64_t b = dag.pred[static_cast<size_t>(v)]; b; b &= b - 1) {
      const auto u = static_cast<size_t>(lowest(b));
      const auto w = static_cast<size_t>(v);
      REQUIRE((stage_of[u] < stage_of[w] || (stage_of[u] == stage_of[w] && place[u] < place[w])));
    }
  }
}

}  // namespace

TEST_CASE("ios dp: stages of equal cost classes are costed once, the result unchanged", "[ios_dp]") {
  std::mt19937_64 rng(20261128);
  int64_t with = 0, without = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + trial % 13;
    const EdgeList g = random_dag(rng, n);
    const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
    std::vector<int> cls(static_cast<size_t>(n));
    std::vector<double> weight(static_cast<size_t>(n));
    const double kWeights[] = {1.0, 2.0, 3.5};
    for (size_t i = 0; i < cls.size(); ++i) {
      cls[i] = static_cast<int>(rng() % 3);
      weight[i] = kWeights[cls[i]];
    }
    MergePredicate can_merge = [&cls](const std::vector<UnitId>& units) {
      for (UnitId u : units) {
        if (cls[static_cast<size_t>(u)] != cls[static_cast<size_t>(units[0])]) return false;
      }
      return true;
    };
    IosOptions o;
    o.max_group_units = trial % 2 == 0 ? 3 : 0;
    o.max_groups = trial % 3 == 0 ? 2 : 8;
    ClassedCost plain(cls, weight, false, false), classed(cls, weight, true, false);
    const BlockSolution a = solve_block(dag, o, plain, can_merge);
    const BlockSolution b = solve_block(dag, o, classed, can_merge);
    INFO("trial " << trial << " n " << n);
    REQUIRE(b.latency_ms == a.latency_ms);
    REQUIRE(b.stages.size() == a.stages.size());
    for (size_t k = 0; k < a.stages.size(); ++k) {
      CHECK(b.stages[k].groups == a.stages[k].groups);
      CHECK(b.stages[k].strategy == a.stages[k].strategy);
      CHECK(b.stages[k].predicted_ms == a.stages[k].predicted_ms);
    }
    CHECK(b.stages_costed == classed.calls);
    CHECK(b.stages_costed <= a.stages_costed);
    with += b.stages_costed;
    without += a.stages_costed;
  }
  // Three classes over up to 14 units: many stages repeat an earlier one's classes.
  CHECK(with * 4 < without * 3);
}

TEST_CASE("ios dp: free units join a neighbour, and the search finds no slower a schedule", "[ios_dp]") {
  // Two chains: conv -> reshape -> transpose -> reshape, as a detector head
  // ends, into one concat (free too).
  {
    const BlockDag dag = BlockDag::from_edges(9, {{0, 1}, {1, 2}, {2, 3}, {3, 8}, {4, 5}, {5, 6}, {6, 7}, {7, 8}});
    ClassedCost cost({0, 1, 2, 1, 0, 1, 2, 1, 1}, {2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0}, false, true);
    const BlockDag joined = contract_free_units(dag, cost);
    // conv + reshape, transpose + reshape per chain, and the concat.
    REQUIRE(joined.n == 5);
    CHECK(joined.members == std::vector<std::vector<UnitId>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8}});
    // A conv that may merge with the other chain's stays alone.
    const MergePredicate convs = [](const std::vector<UnitId>& u) {
      return u.size() == 2 && std::min(u[0], u[1]) == 0 && std::max(u[0], u[1]) == 4;
    };
    const BlockDag kept = contract_free_units(dag, cost, convs);
    CHECK(kept.members == std::vector<std::vector<UnitId>>{{0}, {1, 2, 3}, {4}, {5, 6, 7}, {8}});
    // No free unit: the DAG itself.
    ClassedCost none({0, 1, 2, 1, 0, 1, 2, 1, 1}, std::vector<double>(9, 1.0), false, true);
    CHECK(contract_free_units(dag, none).members.empty());
  }
  std::mt19937_64 rng(52);
  int faster = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + trial % 11;
    const EdgeList g = random_dag(rng, n);
    const BlockDag dag = BlockDag::from_edges(g.n, g.edges);
    std::vector<double> weight(static_cast<size_t>(n));
    for (double& w : weight) w = rng() % 3 == 0 ? 0.0 : 1.0 + static_cast<double>(rng() % 4);
    // Without the order term: the joined DAG's chains, and so the issue
    // order of a stage's groups, may differ from the block's.
    ClassedCost cost(std::vector<int>(static_cast<size_t>(n), 0), weight, false, true, false);
    const BlockDag joined = contract_free_units(dag, cost);
    for (const RuleSet& set : rule_sets()) {
      if (set.rule != EndingRule::kIos || set.strategies == StrategySet::kMerge) continue;
      IosOptions o;
      o.group_shape = set.shape;
      o.max_group_units = set.r;
      o.max_groups = set.s;
      o.strategies = StrategySet::kConcurrent;
      const BlockSolution a = solve_block(dag, o, cost);
      const BlockSolution b = solve_block(joined, o, cost);
      INFO("trial " << trial << " n " << n << " joined " << joined.n);
      check_covers(dag, b.stages);
      double sum = 0.0;
      for (const Stage& stage : b.stages) {
        CHECK(stage.predicted_ms == cost.stage_latency(stage));
        sum += stage.predicted_ms;
      }
      CHECK(sum == Approx(b.latency_ms));
      CHECK(b.latency_ms <= a.latency_ms + 1e-12);
      if (b.latency_ms < a.latency_ms - 1e-12) ++faster;
    }
  }
  CHECK(faster > 0);
}
