// UnitGraph from explicit edges: reachability, cut points, blocks, width,
// and a block's chain decomposition.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "sched/block_dag.h"
#include "sched/unit_graph.h"

using ios::sched::UnitGraph;

TEST_CASE("reachability follows paths, not just edges", "[unit_graph]") {
  // 0 -> 1 -> 2, 0 -> 3
  const UnitGraph g = UnitGraph::from_edges(4, {{0, 1}, {1, 2}, {0, 3}});
  CHECK(g.reaches(0, 2));
  CHECK(g.reaches(0, 3));
  CHECK_FALSE(g.reaches(2, 0));
  CHECK_FALSE(g.reaches(1, 3));
  CHECK_FALSE(g.reaches(1, 1));
}

TEST_CASE("blocks are cut at units every path crosses", "[unit_graph]") {
  // Two diamonds joined at unit 3: 0 -> {1,2} -> 3 -> {4,5} -> 6.
  const UnitGraph g = UnitGraph::from_edges(
      7, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5}, {4, 6}, {5, 6}});
  // Cut points 0, 3, 6. The single unit 0 forms a chain block; {1,2,3} and
  // {4,5,6} are the diamond bodies ending at their cut points.
  REQUIRE(g.blocks().size() == 3);
  CHECK(g.blocks()[0].begin == 0);
  CHECK(g.blocks()[0].end == 1);
  CHECK(g.blocks()[1].begin == 1);
  CHECK(g.blocks()[1].end == 4);
  CHECK(g.blocks()[1].width == 2);
  CHECK(g.blocks()[2].end == 7);
  CHECK(g.block_of(5) == 2);
}

TEST_CASE("consecutive single-unit blocks form one chain block", "[unit_graph]") {
  const UnitGraph g = UnitGraph::from_edges(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  REQUIRE(g.blocks().size() == 1);
  CHECK(g.blocks()[0].size() == 5);
  CHECK(g.blocks()[0].width == 1);
}

TEST_CASE("a region wider than the cap is split into consecutive parts", "[unit_graph]") {
  // 10 independent units then a join: one region of 11 units, cap 4.
  std::vector<std::pair<int, int>> edges;
  for (int u = 0; u < 10; ++u) edges.emplace_back(u, 10);
  const UnitGraph g = UnitGraph::from_edges(11, edges, /*max_block_units=*/4);
  REQUIRE(g.blocks().size() == 3);
  int covered = 0;
  for (const auto& b : g.blocks()) {
    CHECK(b.size() <= 4);
    CHECK(b.split_by_cap);
    CHECK(b.begin == covered);
    covered = b.end;
  }
  CHECK(covered == 11);
}

TEST_CASE("a wide region is split where the least data crosses: between NASNet-like cells",
          "[unit_graph]") {
  // A stem, then 6 cells of 9 units that each read the two previous cells'
  // outputs (so no cell output is a cut point and all cells form one
  // region): two adjustments, four branches, two sums and the cell's concat.
  std::vector<std::pair<int, int>> edges;
  int next = 1;
  int prev = 0, prev2 = 0;  // the last two cells' outputs (the stem for the first)
  for (int cell = 0; cell < 6; ++cell) {
    const int a = next, b = next + 1, p = next + 2, s1 = next + 6, s2 = next + 7, h = next + 8;
    edges.insert(edges.end(), {{prev, a}, {prev2, b}, {a, p}, {b, p + 1}, {a, p + 2}, {b, p + 3},
                               {p, s1}, {p + 1, s1}, {p + 2, s2}, {p + 3, s2}, {s1, h}, {s2, h}});
    prev2 = prev;
    prev = h;
    next += 9;
  }
  const UnitGraph g = UnitGraph::from_edges(next, edges, /*max_block_units=*/12);
  // A near-equal split would make five parts of 10-11 units across the
  // cells; the cheapest cuts are the cell boundaries, where only the last
  // two cells' outputs cross.
  REQUIRE(g.blocks().size() == 7);
  CHECK(g.blocks()[0].size() == 1);  // the stem
  for (int cell = 0; cell < 6; ++cell) {
    const auto& block = g.blocks()[static_cast<size_t>(cell + 1)];
    CHECK(block.begin == 1 + 9 * cell);
    CHECK(block.end == 10 + 9 * cell);
    CHECK(block.split_by_cap);
  }
}

TEST_CASE("a fan-out wider than the cap gets the fewest parts, as even as they come",
          "[unit_graph]") {
  // 30 independent units then a join: 31 units, cap 8: at least 4 parts.
  std::vector<std::pair<int, int>> edges;
  for (int u = 0; u < 30; ++u) edges.emplace_back(u, 30);
  const UnitGraph g = UnitGraph::from_edges(31, edges, /*max_block_units=*/8);
  REQUIRE(g.blocks().size() == 4);
  int smallest = 8, largest = 0;
  for (const auto& b : g.blocks()) {
    smallest = std::min(smallest, b.size());
    largest = std::max(largest, b.size());
  }
  CHECK(largest - smallest <= 1);
}

TEST_CASE("width is the largest antichain (Dilworth)", "[unit_graph]") {
  // The IOS paper's Figure 13 shape: d independent chains of length c.
  const int d = 4, c = 3;
  std::vector<std::pair<int, int>> edges;
  for (int chain = 0; chain < d; ++chain) {
    for (int i = 0; i + 1 < c; ++i) edges.emplace_back(chain * c + i, chain * c + i + 1);
  }
  const UnitGraph g = UnitGraph::from_edges(d * c, edges);
  CHECK(ios::sched::block_width(g, 0, d * c) == d);

  // A crown where greedy chain covers fail: 0->2, 0->3, 1->3, 1->4; width 3.
  const UnitGraph crown = UnitGraph::from_edges(5, {{0, 2}, {0, 3}, {1, 3}, {1, 4}});
  CHECK(ios::sched::block_width(crown, 0, 5) == 3);
}

namespace {

// Reachability and cut points by brute force (a full transitive closure),
// the definitions the linear-time UnitGraph code must agree with.
struct Closure {
  int n;
  std::vector<std::vector<bool>> reach;
  Closure(int n_, const std::vector<std::pair<int, int>>& edges)
      : n(n_), reach(static_cast<size_t>(n_), std::vector<bool>(static_cast<size_t>(n_), false)) {
    for (auto [u, v] : edges) reach[static_cast<size_t>(u)][static_cast<size_t>(v)] = true;
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (reach[static_cast<size_t>(i)][static_cast<size_t>(k)] && reach[static_cast<size_t>(k)][static_cast<size_t>(j)])
            reach[static_cast<size_t>(i)][static_cast<size_t>(j)] = true;
  }
  bool cut(int u) const {
    for (int v = 0; v < n; ++v) {
      if (v != u && !reach[static_cast<size_t>(u)][static_cast<size_t>(v)] && !reach[static_cast<size_t>(v)][static_cast<size_t>(u)]) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("reachability and block cuts agree with a brute-force closure on random DAGs", "[unit_graph]") {
  std::mt19937 rng(20261122);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30);
    const double density = 0.05 + 0.4 * static_cast<double>(rng() % 100) / 100.0;
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (static_cast<double>(rng() % 1000) / 1000.0 < density) edges.emplace_back(u, v);
      }
    }
    const Closure truth(n, edges);
    const UnitGraph g = UnitGraph::from_edges(n, edges);
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) REQUIRE(g.reaches(u, v) == truth.reach[static_cast<size_t>(u)][static_cast<size_t>(v)]);
    }
    // Every block ends at a cut point (or the last unit); a cut point inside
    // a block only where the block is a chain of cut points.
    for (const auto& block : g.blocks()) {
      INFO("trial " << trial << ", block [" << block.begin << ", " << block.end << ")");
      CHECK((block.end == n || truth.cut(block.end - 1)));
      bool all_cuts = true;
      for (int u = block.begin; u < block.end; ++u) all_cuts = all_cuts && truth.cut(u);
      for (int u = block.begin; u + 1 < block.end; ++u) CHECK((!truth.cut(u) || all_cuts));
    }
  }
}

TEST_CASE("a block's chains are taken longest first, as the IOS reference decomposes it", "[unit_graph]") {
  // Inception V3's last block (test/sched/paper_graphs.h): 0 the 1x1 branch,
  // 1 -> {2, 3} the 3x3 branch, 4 -> 5 -> {6, 7} the double 3x3 branch,
  // 8 -> 9 the pooling branch, 10 the concat.
  const auto last = ios::sched::BlockDag::from_edges(
      11, {{1, 2}, {1, 3}, {4, 5}, {5, 6}, {5, 7}, {8, 9}, {0, 10}, {2, 10}, {3, 10}, {6, 10}, {7, 10}, {9, 10}});
  const std::vector<int> expected = {3, 1, 1, 4, 0, 0, 0, 5, 2, 2, 0};
  for (int u = 0; u < 11; ++u) {
    INFO("unit " << u);
    CHECK(last.chain[static_cast<size_t>(u)] == expected[static_cast<size_t>(u)]);
  }

  // On random DAGs: every chain is totally ordered, and chain c is as long
  // as the longest chain among the units of chains c, c + 1, ...
  std::mt19937 rng(20261125);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 24);
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 4 == 0) edges.emplace_back(u, v);
      }
    }
    const Closure truth(n, edges);
    const auto dag = ios::sched::BlockDag::from_edges(n, edges);
    INFO("trial " << trial << ", n " << n);
    int chains = 0;
    for (int u = 0; u < n; ++u) chains = std::max(chains, dag.chain[static_cast<size_t>(u)] + 1);
    for (int c = 0; c < chains; ++c) {
      std::vector<int> members;
      for (int u = 0; u < n; ++u) {
        if (dag.chain[static_cast<size_t>(u)] == c) members.push_back(u);
      }
      REQUIRE(!members.empty());
      for (size_t k = 0; k + 1 < members.size(); ++k) {
        CHECK(truth.reach[static_cast<size_t>(members[k])][static_cast<size_t>(members[k + 1])]);
      }
      // The longest chain among units of chain >= c, by longest path in the
      // closure restricted to them.
      std::vector<int> longest(static_cast<size_t>(n), 0);
      int best = 0;
      for (int u = n - 1; u >= 0; --u) {
        if (dag.chain[static_cast<size_t>(u)] < c) continue;
        longest[static_cast<size_t>(u)] = 1;
        for (int v = u + 1; v < n; ++v) {
          if (dag.chain[static_cast<size_t>(v)] >= c && truth.reach[static_cast<size_t>(u)][static_cast<size_t>(v)]) {
            longest[static_cast<size_t>(u)] = std::max(longest[static_cast<size_t>(u)], longest[static_cast<size_t>(v)] + 1);
          }
        }
        best = std::max(best, longest[static_cast<size_t>(u)]);
      }
      CHECK(static_cast<int>(members.size()) == best);
    }
  }
}

TEST_CASE("a chain of 20,000 units forms blocks in linear time and memory", "[unit_graph]") {
  std::vector<std::pair<int, int>> edges;
  for (int u = 0; u + 1 < 20000; ++u) edges.emplace_back(u, u + 1);
  const UnitGraph g = UnitGraph::from_edges(20000, edges, 40, 9.0);
  CHECK(g.blocks().size() == 500);
  CHECK(g.reaches(0, 19999));
  CHECK_FALSE(g.reaches(19999, 0));
}
