// BlockDag: one block of a unit graph in the form the schedulers search over.
//
// A block holds at most 64 units, renumbered 0..n-1 in topological order (the
// UnitId order of the block), so every set of units is one uint64_t mask and
// every edge goes from a lower to a higher local index. Only edges inside the
// block are kept: blocks run one after another, so edges from earlier blocks
// are always satisfied.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "sched/unit_graph.h"

namespace ios::sched {

inline constexpr int kMaxBlockUnits = 64;

inline uint64_t bit(int i) { return uint64_t{1} << i; }
inline int popcount(uint64_t mask) { return std::popcount(mask); }
inline int lowest(uint64_t mask) { return std::countr_zero(mask); }
// All bits strictly above i (i in [0, 63]).
inline uint64_t bits_above(int i) { return i >= 63 ? 0 : ~uint64_t{0} << (i + 1); }

struct BlockDag {
  int n = 0;
  std::vector<UnitId> units;          // local index -> global UnitId
  // Empty, or per local unit the global units it stands for, in the order
  // they run (a search DAG whose free units were joined to the unit they
  // chain to: contract_free_units in ios_dp.h); units[i] is members[i][0].
  std::vector<std::vector<UnitId>> members;
  std::array<uint64_t, kMaxBlockUnits> pred{};  // direct predecessors inside the block
  std::array<uint64_t, kMaxBlockUnits> succ{};  // direct successors inside the block
  std::array<uint64_t, kMaxBlockUnits> desc{};  // all descendants (paths of length >= 1)
  std::array<uint64_t, kMaxBlockUnits> anc{};   // all ancestors
  // Each unit's chain in the IOS reference implementation's decomposition:
  // chain 0 is a longest chain of the block (most units), chain 1 a longest
  // chain of what is left, and so on; ties go to the lowest local indices.
  // The search issues a stage's groups in the order of their chains, so a
  // stage starts its part of the block's longest chain first.
  std::array<int, kMaxBlockUnits> chain{};

  uint64_t all() const { return n == 64 ? ~uint64_t{0} : bit(n) - 1; }

  // The units [block.begin, block.end) of `graph` and the edges between them.
  static BlockDag from_block(const UnitGraph& graph, const Block& block);
  // A DAG on local units 0..n-1 (u -> v requires u < v); global ids are 0..n-1.
  static BlockDag from_edges(int n, const std::vector<std::pair<int, int>>& edges);

  // Largest antichain (Dilworth: n minus a maximum matching of the
  // transitive-closure bipartite graph).
  int width() const;
  // Number of edges inside the block.
  int num_edges() const;

 private:
  void finish();  // desc, anc and chain from succ/pred
};

}  // namespace ios::sched
