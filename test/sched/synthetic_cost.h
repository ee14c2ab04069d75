// Synthetic cost models for scheduler tests: no GPU, no IR, deterministic.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sched/cost_model.h"

namespace ios::sched::test {

// Additive cost with a concurrency benefit: a concurrent stage takes the
// longest group (sum of its units' weights) plus a per-stage overhead; a
// merged stage takes merge_factor * (sum of weights) plus the overhead.
// Several threads may ask it at once; with `bounded` it gives the search
// each unit's weight as a lower bound (a concurrent stage takes at least its
// longest group).
class AdditiveCost : public sched::CostModel {
 public:
  explicit AdditiveCost(std::vector<double> weight, double stage_overhead = 0.0,
                        double merge_factor = 0.7, bool bounded = false)
      : weight_(std::move(weight)), overhead_(stage_overhead), merge_factor_(merge_factor),
        bounded_(bounded) {}

  std::string name() const override { return "synthetic-additive"; }

  double stage_latency(const Stage& stage) override {
    ++calls;
    if (stage.strategy == Strategy::kMerge) {
      double sum = 0.0;
      for (const auto& group : stage.groups) {
        for (UnitId u : group) sum += weight_.at(static_cast<size_t>(u));
      }
      return merge_factor_ * sum + overhead_;
    }
    double longest = 0.0;
    for (const auto& group : stage.groups) {
      double sum = 0.0;
      for (UnitId u : group) sum += weight_.at(static_cast<size_t>(u));
      longest = std::max(longest, sum);
    }
    return longest + overhead_;
  }
  UnitBound unit_bound(UnitId unit) override {
    if (!bounded_) return {};
    return {.stream_ms = weight_.at(static_cast<size_t>(unit))};
  }
  bool thread_safe() const override { return true; }

  std::atomic<int64_t> calls{0};

 private:
  std::vector<double> weight_;
  double overhead_;
  double merge_factor_;
  bool bounded_;
};

// A random latency per distinct stage (strategy + set of units), drawn on
// first use and remembered, so any search sees one consistent cost function
// with no structure a search could exploit by accident.
class RandomStageCost : public sched::CostModel {
 public:
  explicit RandomStageCost(uint64_t seed) : rng_(seed) {}

  std::string name() const override { return "synthetic-random"; }

  double stage_latency(const Stage& stage) override {
    ++calls;
    std::vector<UnitId> units;
    for (const auto& group : stage.groups) units.insert(units.end(), group.begin(), group.end());
    std::sort(units.begin(), units.end());
    auto key = std::make_pair(stage.strategy, units);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    // Integers keep sums exact, so "equal cost" comparisons are exact.
    std::uniform_int_distribution<int> dist(1, 1000);
    const double value = dist(rng_);
    memo_.emplace(std::move(key), value);
    return value;
  }

  int64_t calls = 0;

 private:
  std::mt19937_64 rng_;
  std::map<std::pair<Strategy, std::vector<UnitId>>, double> memo_;
};

}  // namespace ios::sched::test
