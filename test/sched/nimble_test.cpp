// Nimble's stream assignment: the supplement's Theorems 1-3 on random DAGs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "sched/block_dag.h"
#include "sched/nimble.h"

using namespace ios::sched;

namespace {

// Maximum matching size by exhaustive recursion over left vertices (small n).
int max_matching(int n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> adj(static_cast<size_t>(n));
  for (auto [u, v] : edges) adj[static_cast<size_t>(u)].push_back(v);
  std::map<std::pair<int, uint64_t>, int> memo;
  std::function<int(int, uint64_t)> best = [&](int u, uint64_t used) -> int {
    if (u == n) return 0;
    auto key = std::make_pair(u, used);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    int b = best(u + 1, used);
    for (int v : adj[static_cast<size_t>(u)]) {
      if (!(used >> v & 1)) b = std::max(b, 1 + best(u + 1, used | (uint64_t{1} << v)));
    }
    return memo[key] = b;
  };
  return best(0, 0);
}

}  // namespace

TEST_CASE("nimble: maximum logical concurrency and minimum synchronizations", "[nimble]") {
  std::mt19937_64 rng(2020);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + trial % 14;
    const double p = 0.05 + 0.6 * unit(rng);
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < n; ++u)
      for (int v = u + 1; v < n; ++v)
        if (unit(rng) < p) edges.emplace_back(u, v);
    const BlockDag dag = BlockDag::from_edges(n, edges);
    const NimbleAssignment a = nimble_assign(dag);
    INFO("trial " << trial << " n " << n << " edges " << edges.size());

    // Reachability from the edge list (Floyd-Warshall), independent of BlockDag.
    std::vector<std::vector<bool>> reach(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n)));
    for (auto [u, v] : edges) reach[static_cast<size_t>(u)][static_cast<size_t>(v)] = true;
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (reach[static_cast<size_t>(i)][static_cast<size_t>(k)] && reach[static_cast<size_t>(k)][static_cast<size_t>(j)])
            reach[static_cast<size_t>(i)][static_cast<size_t>(j)] = true;

    // E' is the transitive reduction: the edges with no other path.
    std::vector<std::pair<int, int>> reduced;
    for (auto [u, v] : edges) {
      bool other = false;
      for (int w = 0; w < n; ++w) {
        other = other || (reach[static_cast<size_t>(u)][static_cast<size_t>(w)] && reach[static_cast<size_t>(w)][static_cast<size_t>(v)]);
      }
      if (!other) reduced.emplace_back(u, v);
    }
    std::sort(reduced.begin(), reduced.end());
    auto got = a.reduced_edges;
    std::sort(got.begin(), got.end());
    REQUIRE(got == reduced);

    // Theorem 1/2: units with no path between them never share a stream.
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (!reach[static_cast<size_t>(u)][static_cast<size_t>(v)]) {
          CHECK(a.stream[static_cast<size_t>(u)] != a.stream[static_cast<size_t>(v)]);
        }
      }
    }
    // The matching is maximum, and each stream is a path of E' edges.
    CHECK(static_cast<int>(a.matching.size()) == max_matching(n, reduced));
    CHECK(a.num_streams == n - static_cast<int>(a.matching.size()));
    for (int s = 0; s < a.num_streams; ++s) {
      int prev = -1;
      for (int u = 0; u < n; ++u) {
        if (a.stream[static_cast<size_t>(u)] != s) continue;
        if (prev >= 0) CHECK(std::binary_search(reduced.begin(), reduced.end(), std::make_pair(prev, u)));
        prev = u;
      }
      CHECK(prev >= 0);
    }
    // Theorem 3: synchronizations = |E'| - |matching|, counted directly.
    int cross = 0;
    for (auto [u, v] : reduced) cross += a.stream[static_cast<size_t>(u)] != a.stream[static_cast<size_t>(v)];
    CHECK(a.synchronizations == cross);
    CHECK(cross == static_cast<int>(reduced.size()) - static_cast<int>(a.matching.size()));
  }
}
