// UnitGraph bookkeeping: edges, reachability, cut points and blocks.
// Unit formation itself (which IR nodes make a unit) is in unit_formation.cpp.
#include "sched/unit_graph.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"

namespace ios::sched {

std::string_view unit_kind_name(UnitKind kind) {
  switch (kind) {
    case UnitKind::kConv: return "conv";
    case UnitKind::kSepConv: return "sepconv";
    case UnitKind::kPool: return "pool";
    case UnitKind::kMatMul: return "matmul";
    case UnitKind::kConcat: return "concat";
    case UnitKind::kElementwise: return "elementwise";
    case UnitKind::kLayout: return "layout";
    case UnitKind::kSoftmax: return "softmax";
  }
  return "?";
}

UnitGraph UnitGraph::from_edges(int num_units, const std::vector<std::pair<int, int>>& edges,
                                int max_block_units, double max_block_log10_bound) {
  IOS_ASSERT(num_units > 0, "a unit graph needs units");
  IOS_ASSERT(max_block_units >= 1 && max_block_units <= 64,
             "max_block_units {} outside 1..64 (a DP state is one 64-bit word)", max_block_units);
  UnitGraph graph;
  graph.max_block_units_ = max_block_units;
  graph.max_block_log10_bound_ = max_block_log10_bound;
  graph.units_.resize(static_cast<size_t>(num_units));
  for (int u = 0; u < num_units; ++u) {
    graph.units_[static_cast<size_t>(u)].id = "u" + std::to_string(u);
    graph.units_[static_cast<size_t>(u)].kind = UnitKind::kConv;
  }
  graph.preds_.assign(static_cast<size_t>(num_units), {});
  graph.succs_.assign(static_cast<size_t>(num_units), {});
  for (auto [from, to] : edges) {
    IOS_ASSERT(from >= 0 && to >= 0 && from < num_units && to < num_units && from != to,
               "bad edge {} -> {}", from, to);
    // UnitId order must be topological; synthetic graphs are given that way.
    IOS_ASSERT(from < to, "edge {} -> {} goes against the unit order", from, to);
    auto& s = graph.succs_[static_cast<size_t>(from)];
    if (std::find(s.begin(), s.end(), to) != s.end()) continue;
    s.push_back(to);
    graph.preds_[static_cast<size_t>(to)].push_back(from);
  }
  graph.finish();
  return graph;
}

bool UnitGraph::reaches(UnitId from, UnitId to) const {
  return descendants_.at(static_cast<size_t>(from)).test(static_cast<size_t>(to));
}

std::optional<UnitId> UnitGraph::find(std::string_view id) const {
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].id == id) return static_cast<UnitId>(u);
  }
  return std::nullopt;
}

int UnitGraph::block_of(UnitId u) const { return block_of_.at(static_cast<size_t>(u)); }

UnitId UnitGraph::producer_unit(ir::TensorId t) const {
  if (t < 0 || static_cast<size_t>(t) >= tensor_producer_.size()) return ir::kNone;
  return tensor_producer_[static_cast<size_t>(t)];
}

double log10_search_bound(int units, int width) {
  if (units <= 0 || width <= 0) return 0.0;
  const double per_chain = static_cast<double>(units) / width;
  return width * std::log10((per_chain + 2.0) * (per_chain + 1.0) / 2.0);
}

int block_width(const UnitGraph& graph, UnitId begin, UnitId end) {
  // Dilworth: the largest antichain equals the smallest chain cover, which is
  // n minus a maximum matching in the bipartite graph of the transitive
  // closure (left copy -> right copy when a path exists).
  const int n = end - begin;
  std::vector<int> match_right(static_cast<size_t>(n), -1);
  std::vector<char> seen;
  std::function<bool(int)> augment = [&](int left) {
    for (int right = 0; right < n; ++right) {
      if (!graph.reaches(begin + left, begin + right) || seen[static_cast<size_t>(right)]) continue;
      seen[static_cast<size_t>(right)] = 1;
      if (match_right[static_cast<size_t>(right)] < 0 ||
          augment(match_right[static_cast<size_t>(right)])) {
        match_right[static_cast<size_t>(right)] = left;
        return true;
      }
    }
    return false;
  };
  int matching = 0;
  for (int left = 0; left < n; ++left) {
    seen.assign(static_cast<size_t>(n), 0);
    if (augment(left)) ++matching;
  }
  return n - matching;
}

void UnitGraph::finish() {
  const size_t n = units_.size();
  for (auto& p : preds_) std::sort(p.begin(), p.end());
  for (auto& s : succs_) std::sort(s.begin(), s.end());

  // Reachability, in reverse topological (= reverse UnitId) order.
  descendants_.assign(n, DynBitset(n));
  for (size_t u = n; u-- > 0;) {
    for (UnitId s : succs_[u]) {
      descendants_[u].set(static_cast<size_t>(s));
      descendants_[u] |= descendants_[static_cast<size_t>(s)];
    }
  }

  // Cut points: units that every other unit reaches or is reached from. All
  // units before a cut point in UnitId order are then its ancestors, so the
  // ranges between consecutive cut points are closed under dependencies.
  std::vector<size_t> ancestors(n, 0);
  for (size_t u = 0; u < n; ++u) {
    for (size_t v = u + 1; v < n; ++v) {
      if (descendants_[u].test(v)) ++ancestors[v];
    }
  }
  std::vector<std::pair<UnitId, UnitId>> ranges;
  UnitId start = 0;
  for (size_t u = 0; u < n; ++u) {
    if (ancestors[u] + descendants_[u].count() == n - 1) {
      ranges.emplace_back(start, static_cast<UnitId>(u + 1));
      start = static_cast<UnitId>(u + 1);
    }
  }
  if (start < static_cast<UnitId>(n)) ranges.emplace_back(start, static_cast<UnitId>(n));

  // Runs of single-unit ranges (chains such as a stem) become one block.
  std::vector<std::pair<UnitId, UnitId>> merged;
  for (auto range : ranges) {
    const bool single = range.second - range.first == 1;
    if (single && !merged.empty() && merged.back().second - merged.back().first >= 1) {
      auto& last = merged.back();
      const bool last_is_chain =
          last.second - last.first == 1 || block_width(*this, last.first, last.second) == 1;
      if (last_is_chain) {
        last.second = range.second;
        continue;
      }
    }
    merged.push_back(range);
  }

  // Regions larger than the caps (units, search bound) are split into the
  // fewest near-equal consecutive parts that fit; a prefix of a topological
  // order is dependency-closed, so parts run in sequence like blocks.
  blocks_.clear();
  for (auto [begin, end] : merged) {
    const int size = end - begin;
    for (int parts = (size + max_block_units_ - 1) / max_block_units_;; ++parts) {
      std::vector<Block> split;
      bool fits = true;
      for (int p = 0; p < parts && fits; ++p) {
        Block block;
        block.begin = begin + static_cast<UnitId>(static_cast<int64_t>(size) * p / parts);
        block.end = begin + static_cast<UnitId>(static_cast<int64_t>(size) * (p + 1) / parts);
        block.split_by_cap = parts > 1;
        block.width = block_width(*this, block.begin, block.end);
        fits = block.size() <= 1 ||
               log10_search_bound(block.size(), block.width) <= max_block_log10_bound_;
        split.push_back(block);
      }
      if (fits) {
        blocks_.insert(blocks_.end(), split.begin(), split.end());
        break;
      }
    }
  }
  block_of_.assign(n, 0);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    for (UnitId u = blocks_[b].begin; u < blocks_[b].end; ++u) {
      block_of_[static_cast<size_t>(u)] = static_cast<int>(b);
    }
  }
}

}  // namespace ios::sched
