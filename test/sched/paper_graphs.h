// The blocks of the IOS paper's Table 1, as unit DAGs (u -> v: v reads u).
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ios::sched::test {

struct EdgeList {
  int n = 0;
  std::vector<std::pair<int, int>> edges;
};

// Inception V3's last block (Mixed_7c): 0 1x1; 1 3x3_1 (1x1) feeding 2 1x3
// and 3 3x1; 4 3x3dbl_1 (1x1) feeding 5 3x3dbl_2 (3x3) feeding 6 1x3 and
// 7 3x1; 8 avg-pool feeding 9 1x1; 10 the concat of the six branch outputs.
inline EdgeList inception_v3_last_block() {
  EdgeList g;
  g.n = 11;
  g.edges = {{1, 2}, {1, 3}, {4, 5}, {5, 6}, {5, 7}, {8, 9},
             {0, 10}, {2, 10}, {3, 10}, {6, 10}, {7, 10}, {9, 10}};
  return g;
}

// SqueezeNet fire module with a 1x1 bypass convolution: 0 squeeze feeding
// 1 expand-1x1 and 2 expand-3x3, 3 their concat, 4 the bypass conv on the
// block input, 5 the sum of 3 and 4.
inline EdgeList squeezenet_fire_with_bypass() {
  EdgeList g;
  g.n = 6;
  g.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 5}, {4, 5}};
  return g;
}

// A RandWire stage from the IOS repository's Watts-Strogatz graph files
// (line 1: nodes, line 2: edges, then "u v" pairs): every node is one unit
// reading the sum of its predecessors (sources read the block input), and
// one more unit sums the sinks.
inline EdgeList randwire_block(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  EdgeList g;
  int nodes = 0, edges = 0;
  in >> nodes >> edges;
  std::vector<bool> has_succ(static_cast<size_t>(nodes), false);
  for (int i = 0; i < edges; ++i) {
    int u = 0, v = 0;
    if (!(in >> u >> v)) throw std::runtime_error("truncated " + file.string());
    if (u > v) std::swap(u, v);
    g.edges.emplace_back(u, v);
    has_succ[static_cast<size_t>(u)] = true;
  }
  for (int u = 0; u < nodes; ++u) {
    if (!has_succ[static_cast<size_t>(u)]) g.edges.emplace_back(u, nodes);
  }
  g.n = nodes + 1;
  return g;
}

}  // namespace ios::sched::test
