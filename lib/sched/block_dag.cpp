#include "sched/block_dag.h"

#include <algorithm>

#include "core/error.h"

namespace ios::sched {

BlockDag BlockDag::from_block(const UnitGraph& graph, const Block& block) {
  const int n = block.size();
  if (n > kMaxBlockUnits) {
    user_error("block [{}, {}) has {} units; the search handles at most {} per block "
               "(lower the block size cap)",
               block.begin, block.end, n, kMaxBlockUnits);
  }
  IOS_ASSERT(n > 0, "empty block [{}, {})", block.begin, block.end);
  BlockDag dag;
  dag.n = n;
  for (int i = 0; i < n; ++i) dag.units.push_back(block.begin + i);
  for (int i = 0; i < n; ++i) {
    for (UnitId s : graph.succs(block.begin + i)) {
      if (s < block.begin || s >= block.end) continue;
      const int j = s - block.begin;
      IOS_ASSERT(j > i, "unit edge {} -> {} goes against the UnitId order", block.begin + i, s);
      dag.succ[static_cast<size_t>(i)] |= bit(j);
      dag.pred[static_cast<size_t>(j)] |= bit(i);
    }
  }
  dag.finish();
  return dag;
}

BlockDag BlockDag::from_edges(int n, const std::vector<std::pair<int, int>>& edges) {
  IOS_ASSERT(n > 0 && n <= kMaxBlockUnits, "a block DAG has 1..64 units, not {}", n);
  BlockDag dag;
  dag.n = n;
  for (int i = 0; i < n; ++i) dag.units.push_back(i);
  for (auto [u, v] : edges) {
    IOS_ASSERT(u >= 0 && v < n && u < v, "edge {} -> {} must go from a lower to a higher index",
               u, v);
    dag.succ[static_cast<size_t>(u)] |= bit(v);
    dag.pred[static_cast<size_t>(v)] |= bit(u);
  }
  dag.finish();
  return dag;
}

void BlockDag::finish() {
  for (int i = n; i-- > 0;) {
    uint64_t d = succ[static_cast<size_t>(i)];
    for (uint64_t s = d; s; s &= s - 1) d |= desc[static_cast<size_t>(lowest(s))];
    desc[static_cast<size_t>(i)] = d;
  }
  for (int i = 0; i < n; ++i) {
    uint64_t a = pred[static_cast<size_t>(i)];
    for (uint64_t p = a; p; p &= p - 1) a |= anc[static_cast<size_t>(lowest(p))];
    anc[static_cast<size_t>(i)] = a;
  }
  // A chain is any set of units that descend from one another; the longest
  // one left is found from the deepest start (the units' lengths computed in
  // reverse topological order) and followed down through the lowest index
  // one unit shorter.
  uint64_t left = all();
  std::array<int, kMaxBlockUnits> length{};
  for (int c = 0; left != 0; ++c) {
    int start = -1;
    for (int i = n; i-- > 0;) {
      if ((left & bit(i)) == 0) continue;
      int below = 0;
      for (uint64_t d = desc[static_cast<size_t>(i)] & left; d; d &= d - 1) {
        below = std::max(below, length[static_cast<size_t>(lowest(d))]);
      }
      length[static_cast<size_t>(i)] = below + 1;
      if (start < 0 || length[static_cast<size_t>(i)] >= length[static_cast<size_t>(start)]) start = i;
    }
    for (int x = start; x >= 0;) {
      chain[static_cast<size_t>(x)] = c;
      left &= ~bit(x);
      int next = -1;
      for (uint64_t d = desc[static_cast<size_t>(x)] & left; d; d &= d - 1) {
        if (length[static_cast<size_t>(lowest(d))] == length[static_cast<size_t>(x)] - 1) {
          next = lowest(d);
          break;
        }
      }
      x = next;
    }
  }
}

int BlockDag::num_edges() const {
  int e = 0;
  for (int i = 0; i < n; ++i) e += popcount(succ[static_cast<size_t>(i)]);
  return e;
}

int BlockDag::width() const {
  // Kuhn's augmenting paths on left i -> right j when j descends from i.
  std::array<int, kMaxBlockUnits> match_right;
  match_right.fill(-1);
  uint64_t seen = 0;
  auto augment = [&](auto&& self, int left) -> bool {
    for (uint64_t r = desc[static_cast<size_t>(left)] & ~seen; r; r &= r - 1) {
      const int right = lowest(r);
      if (seen & bit(right)) continue;
      seen |= bit(right);
      if (match_right[static_cast<size_t>(right)] < 0 ||
          self(self, match_right[static_cast<size_t>(right)])) {
        match_right[static_cast<size_t>(right)] = left;
        return true;
      }
    }
    return false;
  };
  int matching = 0;
  for (int left = 0; left < n; ++left) {
    seen = 0;
    if (augment(augment, left)) ++matching;
  }
  return n - matching;
}

}  // namespace ios::sched
