// Brute-force reference for the IOS/DOS DP, written independently of
// ios_dp.cpp: stages are found by trying every subset of the units still to
// run (forward, from the start of the schedule), rules are checked directly
// on edge lists and a reachability matrix, groups come from a union-find.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "sched/cost_model.h"
#include "sched/ios_dp.h"

namespace ios::sched::test {

class Exhaustive {
 public:
  Exhaustive(int n, std::vector<std::pair<int, int>> edges, IosOptions options,
             sched::CostModel& cost, MergePredicate can_merge = {})
      : n_(n), edges_(std::move(edges)), options_(options), cost_(cost), can_merge_(std::move(can_merge)) {
    reach_.assign(static_cast<size_t>(n * n), false);
    for (auto [u, v] : edges_) reach_[static_cast<size_t>(u * n + v)] = true;
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (reaches(i, k) && reaches(k, j)) reach_[static_cast<size_t>(i * n + j)] = true;
  }

  bool reaches(int u, int v) const { return reach_[static_cast<size_t>(u * n_ + v)]; }

  // Each unit's chain: repeatedly the longest chain of the units left (most
  // units, from the lowest deepest start, down through the lowest index).
  std::vector<int> chains() const {
    std::vector<int> chain(static_cast<size_t>(n_), -1);
    for (int c = 0;; ++c) {
      std::vector<int> length(static_cast<size_t>(n_), 0);
      int start = -1;
      for (int i = n_ - 1; i >= 0; --i) {
        if (chain[static_cast<size_t>(i)] >= 0) continue;
        length[static_cast<size_t>(i)] = 1;
        for (int j = i + 1; j < n_; ++j) {
          if (chain[static_cast<size_t>(j)] < 0 && reaches(i, j)) {
            length[static_cast<size_t>(i)] =
                std::max(length[static_cast<size_t>(i)], length[static_cast<size_t>(j)] + 1);
          }
        }
        if (start < 0 || length[static_cast<size_t>(i)] >= length[static_cast<size_t>(start)]) start = i;
      }
      if (start < 0) return chain;
      for (int x = start; x >= 0;) {
        chain[static_cast<size_t>(x)] = c;
        int next = -1;
        for (int j = x + 1; j < n_ && next < 0; ++j) {
          if (chain[static_cast<size_t>(j)] < 0 && reaches(x, j) &&
              length[static_cast<size_t>(j)] == length[static_cast<size_t>(x)] - 1) {
            next = j;
          }
        }
        x = next;
      }
    }
  }

  // Groups of a stage: connected components of the edges inside it, each
  // sorted, ordered by the lowest chain of their units without a predecessor
  // in the group, then by first unit.
  std::vector<std::vector<int>> components(uint32_t stage) const {
    std::vector<int> parent(static_cast<size_t>(n_));
    for (int i = 0; i < n_; ++i) parent[static_cast<size_t>(i)] = i;
    std::function<int(int)> find = [&](int x) {
      return parent[static_cast<size_t>(x)] == x ? x : parent[static_cast<size_t>(x)] = find(parent[static_cast<size_t>(x)]);
    };
    for (auto [u, v] : edges_) {
      if ((stage >> u & 1) && (stage >> v & 1)) parent[static_cast<size_t>(find(u))] = find(v);
    }
    std::map<int, std::vector<int>> by_root;
    for (int i = 0; i < n_; ++i) {
      if (stage >> i & 1) by_root[find(i)].push_back(i);
    }
    std::vector<std::vector<int>> groups;
    for (auto& [root, members] : by_root) groups.push_back(members);
    std::sort(groups.begin(), groups.end());
    const std::vector<int> chain = chains();
    auto rank = [&](const std::vector<int>& group) {
      int r = n_;
      for (int x : group) {
        bool first = true;
        for (int y : group) first = first && !reaches(y, x);
        if (first) r = std::min(r, chain[static_cast<size_t>(x)]);
      }
      return r;
    };
    std::stable_sort(groups.begin(), groups.end(),
                     [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    return groups;
  }

  // The cost of running `stage` right after `done`, or nullopt when the
  // rules do not allow it.
  std::optional<std::pair<double, Strategy>> stage_cost(uint32_t done, uint32_t stage) {
    for (auto [u, v] : edges_) {
      if ((stage >> v & 1) && !((done | stage) >> u & 1)) return std::nullopt;  // pred not run
      if (options_.ending_rule == EndingRule::kDos && (stage >> u & 1) && (stage >> v & 1)) {
        return std::nullopt;  // DOS: no unit of the stage has a successor in it
      }
    }
    const auto groups = components(stage);
    const int r = options_.max_group_units;
    const int s = options_.max_groups;
    if (s != 0 && static_cast<int>(groups.size()) > s) return std::nullopt;
    bool all_single = true;
    for (const auto& g : groups) {
      if (options_.ending_rule == EndingRule::kIos && r != 0 && static_cast<int>(g.size()) > r) {
        return std::nullopt;
      }
      if (g.size() > 1) all_single = false;
      if (options_.group_shape == GroupShape::kSingleEntry) {
        bool has_entry = false;
        for (int x : g) {
          bool all = true;
          for (int y : g) all = all && (y == x || reaches(x, y));
          has_entry = has_entry || all;
        }
        if (!has_entry) return std::nullopt;
      }
    }
    const bool single_unit = groups.size() == 1 && groups[0].size() == 1;
    std::optional<std::pair<double, Strategy>> best;
    if (options_.strategies != StrategySet::kMerge || single_unit) {
      Stage st;
      for (const auto& g : groups) st.groups.emplace_back(g.begin(), g.end());
      best = std::make_pair(cost_.stage_latency(st), Strategy::kConcurrent);
    }
    if (options_.strategies != StrategySet::kConcurrent && !single_unit && all_single && can_merge_) {
      std::vector<UnitId> units;
      for (const auto& g : groups) units.push_back(g[0]);
      if (can_merge_(units)) {
        Stage st;
        st.strategy = Strategy::kMerge;
        st.groups.push_back(units);
        const double c = cost_.stage_latency(st);
        if (!best || c < best->first) best = std::make_pair(c, Strategy::kMerge);
      }
    }
    return best;
  }

  // Best total latency, memoized over the set of units already run.
  double best() {
    memo_.clear();
    return best_from(0);
  }

  // Every schedule enumerated one by one (no memo): the best latency and the
  // number of schedules. Only for small n.
  std::pair<double, int64_t> enumerate_all() {
    double best_total = std::numeric_limits<double>::infinity();
    int64_t count = 0;
    enumerate_from(0, 0.0, best_total, count);
    return {best_total, count};
  }

  // States (sets still to run, excluding the empty one) reachable from the
  // whole block, and (state, stage) pairs allowed from them.
  std::pair<int64_t, int64_t> count_states_and_pairs() {
    std::map<uint32_t, bool> seen;
    int64_t pairs = 0;
    std::function<void(uint32_t)> visit = [&](uint32_t done) {
      if (done == all() || seen.count(done)) return;
      seen[done] = true;
      const uint32_t rest = all() & ~done;
      for (uint32_t stage = rest; stage; stage = (stage - 1) & rest) {
        if (stage_cost(done, stage)) {
          ++pairs;
          visit(done | stage);
        }
      }
    };
    visit(0);
    return {static_cast<int64_t>(seen.size()), pairs};
  }

  // Number of schedules, counted with a memo over the set already run.
  int64_t count_schedules() {
    counts_.clear();
    return count_from(0);
  }

 private:
  uint32_t all() const { return (uint32_t{1} << n_) - 1; }

  double best_from(uint32_t done) {
    if (done == all()) return 0.0;
    auto it = memo_.find(done);
    if (it != memo_.end()) return it->second;
    double best_total = std::numeric_limits<double>::infinity();
    const uint32_t rest = all() & ~done;
    for (uint32_t stage = rest; stage; stage = (stage - 1) & rest) {
      if (auto c = stage_cost(done, stage)) best_total = std::min(best_total, c->first + best_from(done | stage));
    }
    memo_[done] = best_total;
    return best_total;
  }

  void enumerate_from(uint32_t done, double so_far, double& best_total, int64_t& count) {
    if (done == all()) {
      ++count;
      best_total = std::min(best_total, so_far);
      return;
    }
    const uint32_t rest = all() & ~done;
    for (uint32_t stage = rest; stage; stage = (stage - 1) & rest) {
      if (auto c = stage_cost(done, stage)) enumerate_from(done | stage, so_far + c->first, best_total, count);
    }
  }

  int64_t count_from(uint32_t done) {
    if (done == all()) return 1;
    auto it = counts_.find(done);
    if (it != counts_.end()) return it->second;
    int64_t total = 0;
    const uint32_t rest = all() & ~done;
    for (uint32_t stage = rest; stage; stage = (stage - 1) & rest) {
      if (stage_cost(done, stage)) total += count_from(done | stage);
    }
    counts_[done] = total;
    return total;
  }

  int n_;
  std::vector<std::pair<int, int>> edges_;
  IosOptions options_;
  sched::CostModel& cost_;
  MergePredicate can_merge_;
  std::vector<bool> reach_;
  std::map<uint32_t, double> memo_;
  std::map<uint32_t, int64_t> counts_;
};

}  // namespace ios::sched::test
