#include "cost/budgeted.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "sched/signature.h"

namespace ios::cost {

namespace {

bool one_unit(const sched::Stage& stage) {
  return stage.groups.size() == 1 && stage.groups.front().size() == 1;
}

// A unit's kernel class: the node that starts its main (first) kernel, the
// per-shape flags the libraries treat apart, its element type when 16-bit
// (other kernels: tensor cores whatever the precision, half the bytes), and
// its predicted solo latency
// to within a factor of 4 (a launch-bound kernel strays from its prediction
// differently than a compute-bound one).
std::string kernel_class(const UnitWork& work, double solo_ms) {
  if (work.kernels.empty()) return "none";
  const KernelWork& k = work.kernels.front();
  const double us = std::max(solo_ms * 1000.0, 1e-3);
  const int size = static_cast<int>(std::floor(std::log2(us) / 2.0));
  return k.what + (k.matmul_like ? "/mm" : "") + (k.winograd ? "/wino" : "") +
         (k.asymmetric ? "/1xk" : "") + (ir::is_half(k.type) ? std::string("/") + ir::short_name(k.type) : "") + "/" +
         std::to_string(size);
}

constexpr int kConcurrencyBuckets = 7;  // merges, then 1..5 groups, then more
constexpr int kMergeBucket = 0;

}  // namespace

BudgetedCostModel::BudgetedCostModel(const sched::UnitGraph& graph, sched::CostModel& device,
                                     SimulatedCostModel& estimate, BudgetOptions options)
    : graph_(graph), device_(device), estimate_(estimate), options_(options) {
  IOS_ASSERT(options.optimism >= 0.0 && options.optimism < 1.0, "optimism {} outside [0, 1)",
             options.optimism);
  IOS_ASSERT(options.own_weight >= 0.0 && options.own_weight <= 1.0, "own_weight {} outside [0, 1]",
             options.own_weight);
  std::map<std::string, int> classes;
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    sched::Stage alone;
    alone.groups = {{u}};
    solo_ms_.push_back(estimate_.stage_latency(alone));
    const auto [it, added] = classes.emplace(kernel_class(estimate_.work(u), solo_ms_.back()),
                                             static_cast<int>(classes.size()));
    unit_class_.push_back(it->second);
  }
  own_log_ratio_.assign(solo_ms_.size(), std::numeric_limits<double>::quiet_NaN());
  class_log_ratio_.resize(classes.size());
  concurrency_log_ratio_.resize(kConcurrencyBuckets);
}

double BudgetedCostModel::stage_latency(const sched::Stage& stage) {
  const std::string signature = sched::stage_signature(graph_, stage);
  if (auto it = measured_.find(signature); it != measured_.end()) return it->second;
  if (!not_known_.contains(signature)) {
    if (std::optional<double> known = device_.known_latency(stage)) {
      measured_.emplace(signature, *known);
      ++counts_.reused;
      learn(stage, *known);
      return *known;
    }
    not_known_.insert(signature);
  }
  if (one_unit(stage) && budget_left()) return measure(stage, signature);
  if (predicted_.insert(signature).second) ++counts_.predicted;
  const double optimism = counts_.exhausted ? 0.0 : options_.optimism;
  return predict(stage) * (1.0 - optimism);
}

std::optional<double> BudgetedCostModel::known_latency(const sched::Stage& stage) {
  auto it = measured_.find(sched::stage_signature(graph_, stage));
  if (it == measured_.end()) return std::nullopt;
  return it->second;
}

bool BudgetedCostModel::is_measured(const sched::Stage& stage) const {
  return measured_.contains(sched::stage_signature(graph_, stage));
}

bool BudgetedCostModel::settle(const std::vector<sched::Stage>& stages) {
  bool changed = false;
  for (const sched::Stage& stage : stages) {
    const std::string signature = sched::stage_signature(graph_, stage);
    if (measured_.contains(signature)) continue;
    if (!budget_left()) break;
    measure(stage, signature);
    changed = true;
  }
  return changed;
}

bool BudgetedCostModel::budget_left() {
  if (counts_.exhausted) return false;
  const bool stages_left = options_.max_stages < 0 || counts_.measured < options_.max_stages;
  const bool time_left = options_.max_seconds <= 0.0 || counts_.measuring_s < options_.max_seconds;
  if (stages_left && time_left) return true;
  // Once spent, stays spent: the rest of the search uses predictions only,
  // without optimism, and drops the optimistic ones it kept.
  counts_.exhausted = true;
  ++revision_;
  return false;
}

double BudgetedCostModel::measure(const sched::Stage& stage, const std::string& signature) {
  const auto start = std::chrono::steady_clock::now();
  const double ms = device_.stage_latency(stage);
  counts_.measuring_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++counts_.measured;
  if (predicted_.erase(signature) > 0) --counts_.predicted;
  measured_.emplace(signature, ms);
  learn(stage, ms);
  return ms;
}

sched::CostModel::UnitBound BudgetedCostModel::unit_bound(sched::UnitId unit) {
  UnitBound bound = estimate_.unit_bound(unit);
  const double scale = bound_scale();
  bound.stream_ms *= scale;
  bound.slots_ms *= scale;
  bound.dram_ms *= scale;
  return bound;
}

double BudgetedCostModel::bound_scale() {
  if (bound_scale_ >= 0.0) return bound_scale_;
  double least_factor = 1.0;
  for (sched::UnitId u = 0; u < graph_.size(); ++u) least_factor = std::min(least_factor, unit_factor(u));
  double least_concurrency = 1.0;
  for (const LogMean& bucket : concurrency_log_ratio_) {
    if (bucket.n >= 2) least_concurrency = std::min(least_concurrency, std::exp(bucket.mean()));
  }
  if (any_concurrency_log_ratio_.n >= 2) {
    least_concurrency = std::min(least_concurrency, std::exp(any_concurrency_log_ratio_.mean()));
  }
  least_factor *= least_concurrency;
  bound_scale_ = std::min(least_measured_ratio_, (1.0 - options_.optimism) * least_factor);
  return bound_scale_;
}

double BudgetedCostModel::unit_factor(sched::UnitId unit) const {
  const LogMean& cls = class_log_ratio_[static_cast<size_t>(unit_class_[static_cast<size_t>(unit)])];
  const double base = cls.n > 0 ? cls.mean() : all_log_ratio_.mean();
  const double own = own_log_ratio_[static_cast<size_t>(unit)];
  if (std::isnan(own)) return std::exp(base);
  return std::exp(options_.own_weight * own + (1.0 - options_.own_weight) * base);
}

double BudgetedCostModel::units_factor(const sched::Stage& stage) const {
  double weighted = 0.0, total = 0.0;
  for (const auto& group : stage.groups) {
    for (sched::UnitId u : group) {
      const double w = solo_ms_[static_cast<size_t>(u)];
      weighted += w * unit_factor(u);
      total += w;
    }
  }
  return total > 0.0 ? weighted / total : std::exp(all_log_ratio_.mean());
}

int BudgetedCostModel::concurrency_bucket(const sched::Stage& stage) {
  if (stage.strategy == sched::Strategy::kMerge) return kMergeBucket;
  return std::min(static_cast<int>(stage.groups.size()), kConcurrencyBuckets - 1);
}

// What the measured units say of a stage: a merged operator is another
// kernel than its members (a merge of 3x3 convolutions takes no Winograd
// path), so it gets the device's overall factor; other stages their units'.
double BudgetedCostModel::base_factor(const sched::Stage& stage) const {
  if (stage.strategy == sched::Strategy::kMerge) return std::exp(all_log_ratio_.mean());
  return units_factor(stage);
}

double BudgetedCostModel::predict(const sched::Stage& stage) const {
  double factor = base_factor(stage);
  if (!one_unit(stage)) {
    // Two stages measured before a bucket's factor is trusted: one may be an
    // outlier. Concurrent stages of a width not yet measured take the
    // factor of all concurrent stages.
    const int b = concurrency_bucket(stage);
    const LogMean& bucket = concurrency_log_ratio_[static_cast<size_t>(b)];
    if (bucket.n >= 2) {
      factor *= std::exp(bucket.mean());
    } else if (b != kMergeBucket && any_concurrency_log_ratio_.n >= 2) {
      factor *= std::exp(any_concurrency_log_ratio_.mean());
    }
  }
  return estimate_.stage_latency(stage) * factor;
}

std::vector<double> BudgetedCostModel::log_factors() const {
  std::vector<double> out;
  for (const LogMean& m : class_log_ratio_) out.push_back(m.n > 0 ? m.mean() : all_log_ratio_.mean());
  for (const LogMean& m : concurrency_log_ratio_) out.push_back(m.n >= 2 ? m.mean() : 0.0);
  out.push_back(any_concurrency_log_ratio_.n >= 2 ? any_concurrency_log_ratio_.mean() : 0.0);
  return out;
}

void BudgetedCostModel::learn(const sched::Stage& stage, double measured_ms) {
  learn_ratios(stage, measured_ms);
  std::vector<double> now = log_factors();
  bool moved = revision_log_factors_.size() != now.size();
  for (size_t i = 0; !moved && i < now.size(); ++i) {
    moved = std::abs(now[i] - revision_log_factors_[i]) > std::log(1.02);
  }
  if (moved) {
    ++revision_;
    revision_log_factors_ = std::move(now);
  }
}

void BudgetedCostModel::learn_ratios(const sched::Stage& stage, double measured_ms) {
  // Zero-cost stages (views only) say nothing about the device.
  if (measured_ms <= 0.0) return;
  bound_scale_ = -1.0;
  const double simulated = estimate_.stage_latency(stage);
  if (simulated > 0.0) least_measured_ratio_ = std::min(least_measured_ratio_, measured_ms / simulated);
  if (one_unit(stage)) {
    const sched::UnitId u = stage.groups.front().front();
    const double solo = solo_ms_[static_cast<size_t>(u)];
    if (solo <= 0.0) return;
    const double log_ratio = std::log(measured_ms / solo);
    if (std::isnan(own_log_ratio_[static_cast<size_t>(u)])) {
      own_log_ratio_[static_cast<size_t>(u)] = log_ratio;
      class_log_ratio_[static_cast<size_t>(unit_class_[static_cast<size_t>(u)])].add(log_ratio);
      all_log_ratio_.add(log_ratio);
    }
    return;
  }
  const double expected = simulated * base_factor(stage);
  if (expected <= 0.0) return;
  const int b = concurrency_bucket(stage);
  concurrency_log_ratio_[static_cast<size_t>(b)].add(std::log(measured_ms / expected));
  if (b != kMergeBucket) any_concurrency_log_ratio_.add(std::log(measured_ms / expected));
}

}  // namespace ios::cost
