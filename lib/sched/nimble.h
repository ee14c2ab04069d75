// Nimble's stream assignment (Kwon et al., NeurIPS 2020, Algorithm 1 and the
// supplement's Theorems 1-3):
//  1. G' = the minimum equivalent graph of the DAG (its transitive reduction:
//     edge u -> v stays iff no other path leads from u to v);
//  2. B = the bipartite graph with x_u -> y_v for every edge of G';
//  3. a maximum matching of B (augmenting paths, i.e. Ford-Fulkerson on unit
//     capacities);
//  4. matched edges chain units together; each chain is one stream.
// Then units without a path between them never share a stream (maximum
// logical concurrency) and the synchronizations needed, the edges of G'
// whose ends are on different streams, number |E'| - |matching| (the minimum
// for such an assignment).
#pragma once

#include <utility>
#include <vector>

#include "sched/block_dag.h"

namespace ios::sched {

struct NimbleAssignment {
  std::vector<std::pair<int, int>> reduced_edges;  // E' (local indices)
  std::vector<std::pair<int, int>> matching;       // matched edges of E'
  std::vector<int> stream;                         // per unit; chains in order of their first unit
  int num_streams = 0;
  int synchronizations = 0;  // edges of E' between different streams
};

NimbleAssignment nimble_assign(const BlockDag& dag);

}  // namespace ios::sched
