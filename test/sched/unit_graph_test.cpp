// UnitGraph from explicit edges: reachability, cut points, blocks, width.
#include <catch2/catch.hpp>

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
