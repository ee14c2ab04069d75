// UnitGraph bookkeeping: edges, reachability, cut points and blocks.
// Unit formation itself (which IR nodes make a unit) is in unit_formation.cpp.
#include "sched/unit_graph.h"

#include <algorithm>
#include <limits>
#include <tuple>
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
  IOS_ASSERT(from >= 0 && to >= 0 && from < size() && to < size(), "units {} and {} of {}", from, to, size());
  if (from >= to) return false;  // UnitIds are a topological order
  // Depth-first over successors; nothing past `to` can lead back to it.
  std::vector<char> seen(static_cast<size_t>(to - from + 1), 0);
  std::vector<UnitId> stack = {from};
  while (!stack.empty()) {
    const UnitId u = stack.back();
    stack.pop_back();
    for (UnitId s : succs_[static_cast<size_t>(u)]) {
      if (s == to) return true;
      if (s > to || seen[static_cast<size_t>(s - from)]) continue;
      seen[static_cast<size_t>(s - from)] = 1;
      stack.push_back(s);
    }
  }
  return false;
}

std::optional<UnitId> UnitGraph::find(std::string_view id) const {
  if (by_id_.size() != units_.size()) {  // synthetic graphs have no index
    for (size_t u = 0; u < units_.size(); ++u) {
      if (units_[u].id == id) return static_cast<UnitId>(u);
    }
    return std::nullopt;
  }
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
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
  // closure (left copy -> right copy when a path exists). Blocks are
  // contiguous in a topological order, so every path between two of their
  // units stays inside: the closure is computed on the block alone.
  const int n = end - begin;
  std::vector<DynBitset> closure(static_cast<size_t>(n), DynBitset(static_cast<size_t>(n)));
  for (int u = n; u-- > 0;) {
    for (UnitId s : graph.succs(begin + u)) {
      if (s >= end) continue;
      closure[static_cast<size_t>(u)].set(static_cast<size_t>(s - begin));
      closure[static_cast<size_t>(u)] |= closure[static_cast<size_t>(s - begin)];
    }
  }
  std::vector<int> match_right(static_cast<size_t>(n), -1);
  std::vector<char> seen;
  std::function<bool(int)> augment = [&](int left) {
    for (int right = 0; right < n; ++right) {
      if (!closure[static_cast<size_t>(left)].test(static_cast<size_t>(right)) ||
          seen[static_cast<size_t>(right)]) {
        continue;
      }
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

namespace {

// Whether a part of `size` units fits the caps whatever its width (the
// paper's bound grows with the width, and a part is never wider than it is
// long).
bool fits_any_width(int size, double max_log10_bound) {
  return size <= 1 || log10_search_bound(size, size) <= max_log10_bound;
}

}  // namespace

// The split of a region follows its narrow waists: a cut before unit k
// costs the units before k whose outputs are read after it (within
// max_block_units of the cut on either side: the data that crosses between
// parts). The split takes the cheapest cuts, among those the fewest parts,
// then the most even ones, every part within the caps. NASNet's regions are then cut between cells,
// where only the last two cells' outputs cross; a fan-out's branches all
// cost the same, so it gets the fewest parts; a region that fits stays whole.
std::vector<Block> UnitGraph::split_region(UnitId begin, UnitId end) const {
  const int n = end - begin;
  const int window = max_block_units_;
  auto at = [begin](UnitId u) { return static_cast<size_t>(u - begin); };

  // crossing[k - begin]: the units a cut before unit k separates from a reader.
  std::vector<int64_t> crossing(static_cast<size_t>(n) + 1, 0);
  for (UnitId k = begin + 1; k < end; ++k) {
    for (UnitId u = std::max(begin, k - window); u < k; ++u) {
      const auto& readers = succs_[static_cast<size_t>(u)];
      crossing[at(k)] += std::any_of(readers.begin(), readers.end(), [&](UnitId s) {
        return s >= k && s < std::min(end, k + window);
      });
    }
  }

  // A cheap upper bound of the width of [j, k): the runs of consecutive
  // units that each read the unit just before them cover it with paths, so
  // (Dilworth) it is at most 1 + the units in (j, k) that do not. Chains
  // (width 1) then never need the exact width.
  std::vector<int> breaks(static_cast<size_t>(n) + 1, 0);  // prefix sums over (begin, u]
  for (UnitId u = begin + 1; u < end; ++u) {
    const auto& p = preds_[static_cast<size_t>(u)];
    breaks[at(u)] = breaks[at(u - 1)] + !std::binary_search(p.begin(), p.end(), u - 1);
  }
  auto fits = [&](UnitId j, UnitId k) {
    const int size = k - j;
    if (fits_any_width(size, max_block_log10_bound_)) return true;
    const int at_most = 1 + breaks[at(k - 1)] - breaks[at(j)];
    if (log10_search_bound(size, std::min(size, at_most)) <= max_block_log10_bound_) return true;
    return log10_search_bound(size, block_width(*this, j, k)) <= max_block_log10_bound_;
  };
  // longest[j - begin]: the end of the longest part starting at j within
  // the caps. A part's sub-ranges fit too (narrower and shorter), so the
  // ends only move forward with j.
  std::vector<UnitId> longest(static_cast<size_t>(n));
  UnitId part_end = begin + 1;
  for (UnitId j = begin; j < end; ++j) {
    part_end = std::max(part_end, j + 1);
    while (part_end < end && part_end + 1 - j <= window && fits(j, part_end + 1)) ++part_end;
    longest[at(j)] = part_end;
  }

  // Cheapest split of [begin, k): the outputs it cuts off, then the fewest
  // parts, then the most even sizes (the least sum of squared sizes: a
  // block's search grows steeply with its size), and where its last part
  // starts.
  struct Best {
    int64_t crossing = std::numeric_limits<int64_t>::max();
    int parts = 0;
    int64_t squares = 0;
    UnitId from = 0;
    auto key() const { return std::tie(crossing, parts, squares); }
  };
  std::vector<Best> best(static_cast<size_t>(n) + 1);
  best[0] = {0, 0, 0, begin};
  for (UnitId k = begin + 1; k <= end; ++k) {
    Best& b = best[at(k)];
    for (UnitId j = k - 1; j >= begin && longest[at(j)] >= k; --j) {
      const Best& prefix = best[at(j)];
      const Best candidate = {prefix.crossing + (j > begin ? crossing[at(j)] : 0), prefix.parts + 1,
                              prefix.squares + int64_t{k - j} * (k - j), j};
      if (candidate.key() < b.key()) b = candidate;
    }
  }
  std::vector<Block> parts;
  for (UnitId k = end; k > begin; k = best[at(k)].from) {
    Block block;
    block.begin = best[at(k)].from;
    block.end = k;
    block.width = block_width(*this, block.begin, block.end);
    parts.push_back(block);
  }
  std::reverse(parts.begin(), parts.end());
  for (Block& block : parts) block.split_by_cap = parts.size() > 1;
  return parts;
}

void UnitGraph::finish() {
  const size_t n = units_.size();
  for (auto& p : preds_) std::sort(p.begin(), p.end());
  for (auto& s : succs_) std::sort(s.begin(), s.end());

  by_id_.clear();
  for (size_t u = 0; u < n; ++u) by_id_.emplace(units_[u].id, static_cast<UnitId>(u));
  if (by_id_.size() != n) by_id_.clear();  // repeated ids (synthetic graphs): linear find()

  // Cut points: units that every other unit reaches or is reached from. All
  // units before a cut point in UnitId order are then its ancestors, so the
  // ranges between consecutive cut points are closed under dependencies.
  // In a topological order, u reaches every later unit exactly when each
  // later unit has a predecessor at or after u (by induction along the
  // order), and every earlier unit reaches u exactly when each earlier unit
  // has a successor at or before u: two running extrema, linear in edges.
  const auto count = static_cast<UnitId>(n);
  std::vector<UnitId> min_last_pred(n + 1, count);  // min over v >= u of v's last predecessor
  for (size_t v = n; v-- > 0;) {
    const UnitId last = preds_[v].empty() ? UnitId{-1} : preds_[v].back();
    min_last_pred[v] = std::min(min_last_pred[v + 1], last);
  }
  std::vector<std::pair<UnitId, UnitId>> ranges;
  UnitId start = 0;
  UnitId max_first_succ = -1;  // max over v < u of v's first successor (n: a sink)
  for (size_t u = 0; u < n; ++u) {
    const auto id = static_cast<UnitId>(u);
    if (max_first_succ <= id && min_last_pred[u + 1] >= id) {
      ranges.emplace_back(start, id + 1);
      start = id + 1;
    }
    const UnitId first = succs_[u].empty() ? count : succs_[u].front();
    max_first_succ = std::max(max_first_succ, first);
  }
  if (start < count) ranges.emplace_back(start, count);

  // Runs of single-unit ranges (chains such as a stem) become one block. A
  // range of several units between consecutive cut points is never a chain
  // (each unit of a chain is a cut point), so only runs of singles merge.
  std::vector<std::pair<UnitId, UnitId>> merged;
  bool last_is_chain = false;
  for (auto range : ranges) {
    const bool single = range.second - range.first == 1;
    if (single && !merged.empty() && last_is_chain) {
      merged.back().second = range.second;
      continue;
    }
    merged.push_back(range);
    last_is_chain = single;
  }

  blocks_.clear();
  for (auto [begin, end] : merged) {
    const std::vector<Block> parts = split_region(begin, end);
    blocks_.insert(blocks_.end(), parts.begin(), parts.end());
  }
  block_of_.assign(n, 0);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    for (UnitId u = blocks_[b].begin; u < blocks_[b].end; ++u) {
      block_of_[static_cast<size_t>(u)] = static_cast<int>(b);
    }
  }
}

}  // namespace ios::sched
