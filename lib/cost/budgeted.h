// BudgetedCostModel: measured search that measures only the contenders.
//
// The IOS search considers thousands (Inception V3) to hundreds of
// thousands (RandWire, NASNet) of stages; timing each on the GPU takes far
// longer than the search itself. This model answers every stage at once
// from the GPU simulator, corrected by what the device measured so far, and
// asks the device only for:
//
//  1. every one-unit stage the search asks for (the sequential baselines
//     need them, and they calibrate the corrections): a few hundred stages;
//  2. the stages a searching scheduler settles (settle()): the baselines'
//     stages, and the stages the DP chooses for a block. The block is then
//     searched again with their measurements, until every stage of the
//     block's schedule is measured (sched/ios_scheduler.cpp).
//
// Unmeasured stages are searched at an optimistic estimate, (1 - optimism)
// times the corrected prediction, so that a stage the simulator overrates is
// still tried. Guarantee: when settling ends with every chosen stage
// measured, the schedule's latency is its measured latency, and no schedule
// of the search space is faster unless it contains a stage that runs more
// than `optimism` below its corrected prediction. Stages measured before (the
// device's known_latency(): the profile database) are used as measured and
// cost nothing. When the budget is spent, settling stops: the search still
// completes, the remaining stages keep their (not optimistic) corrected
// predictions, and is_measured() tells which stages of the schedule are
// predicted.
//
// Corrections (docs/cost-model.md, "Budgeted measurement"): each unit has a
// kernel class (the operator of its main kernel and its per-shape flags);
// a class's factor is the geometric mean of measured / predicted over its
// measured one-unit stages. A unit measured alone blends its own ratio with
// its class's (`own_weight`). A stage is predicted as the simulator's
// latency times its units' factors, weighted by their predicted solo
// latencies (a merge: the device's overall factor, its kernel being none of
// its members'), times a factor per number of groups (and one for merges)
// learned from the multi-unit stages measured so far (concurrent stages of
// a width with fewer than two measured take all widths' factor).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cost/simulated.h"
#include "sched/cost_model.h"
#include "sched/unit_graph.h"

namespace ios::cost {

// `ios-optimize --cost measured`'s default --profile-budget: three times
// what NASNet-A's search (the widest of the IOS paper's networks) measures
// against the benchmark's oracle (docs/benchmarks.md, "Measured search").
inline constexpr int64_t kDefaultProfileBudget = 5000;

struct BudgetOptions {
  int64_t max_stages = kDefaultProfileBudget;  // new measurements; < 0: no limit
  double max_seconds = 0.0;                    // of measuring; 0: no limit
  double optimism = 0.25;  // unmeasured stages are searched at (1 - optimism) x prediction
  double own_weight = 0.5;  // a unit's own measured ratio vs its class's, in [0, 1]
};

struct BudgetCounts {
  int64_t measured = 0;   // stages the device timed in this run
  int64_t reused = 0;     // stages it had measured before (profile database)
  int64_t predicted = 0;  // distinct stages answered by the corrected simulator only
  double measuring_s = 0.0;  // time the device took to answer
  bool exhausted = false;    // the budget ran out
};

class BudgetedCostModel : public sched::CostModel {
 public:
  // `graph`, `device` and `estimate` must outlive the model; `estimate`
  // simulates the same graph (batch included) as `device` measures.
  BudgetedCostModel(const sched::UnitGraph& graph, sched::CostModel& device,
                    SimulatedCostModel& estimate, BudgetOptions options = {});

  std::string name() const override { return device_.name(); }
  double stage_latency(const sched::Stage& stage) override;
  std::optional<double> known_latency(const sched::Stage& stage) override;
  bool settle(const std::vector<sched::Stage>& stages) override;
  // The simulator's bounds, scaled down by the smallest ratio any answer
  // can have to the simulator: the least measured / simulated of the stages
  // measured so far, and (1 - optimism) times the smallest correction
  // factor. (A stage measured later, below that, can be skipped where it
  // would have won; one-unit stages, measured before the DP runs, cannot.)
  UnitBound unit_bound(sched::UnitId unit) override;
  // Advances when a correction factor has moved by more than 2% since the
  // last revision, and when the budget runs out (predictions lose their
  // optimism): a search keeps its predicted stage costs until then.
  uint64_t revision() const override { return revision_; }
  // Measured and predicted latencies both follow signatures.
  bool costs_follow_signatures() const override { return true; }

  const BudgetCounts& counts() const { return counts_; }
  // Whether `stage`'s latency is a measurement (this run's or an earlier
  // one's), not a prediction.
  bool is_measured(const sched::Stage& stage) const;
  const BudgetOptions& options() const { return options_; }

 private:
  struct LogMean {
    double sum = 0.0;
    int64_t n = 0;
    void add(double x) {
      sum += x;
      ++n;
    }
    double mean() const { return n > 0 ? sum / static_cast<double>(n) : 0.0; }
  };

  bool budget_left();  // false from the first time the budget is found spent
  double measure(const sched::Stage& stage, const std::string& signature);
  double predict(const sched::Stage& stage) const;
  double units_factor(const sched::Stage& stage) const;
  double base_factor(const sched::Stage& stage) const;
  double unit_factor(sched::UnitId unit) const;
  static int concurrency_bucket(const sched::Stage& stage);
  void learn(const sched::Stage& stage, double measured_ms);  // and revises
  void learn_ratios(const sched::Stage& stage, double measured_ms);
  double bound_scale();
  // The class and concurrency factors' logarithms, in one vector.
  std::vector<double> log_factors() const;

  const sched::UnitGraph& graph_;
  sched::CostModel& device_;
  SimulatedCostModel& estimate_;
  BudgetOptions options_;
  BudgetCounts counts_;
  std::unordered_map<std::string, double> measured_;  // by stage signature
  std::unordered_set<std::string> not_known_;         // the device had no measurement
  std::unordered_set<std::string> predicted_;         // and not measured since
  std::vector<double> solo_ms_;      // per unit: the simulator's one-unit stage
  std::vector<int> unit_class_;      // per unit
  std::vector<double> own_log_ratio_;  // per unit; NaN until measured alone
  std::vector<LogMean> class_log_ratio_;
  LogMean all_log_ratio_;
  std::vector<LogMean> concurrency_log_ratio_;  // per concurrency_bucket()
  LogMean any_concurrency_log_ratio_;  // all concurrent stages: for a width not yet learned
  double least_measured_ratio_ = 1.0;  // measured / simulated, over the measured stages
  double bound_scale_ = -1.0;          // < 0: to compute again (after learn())
  uint64_t revision_ = 0;
  std::vector<double> revision_log_factors_;  // log_factors() when revision_ last advanced
};

}  // namespace ios::cost
