// OracleDevice: a stand-in for a GPU in tests and benchmarks of the measured
// search, where no GPU is at hand. It answers stage latencies the way
// `--cost measured` does (each distinct stage "measured" once, then
// remembered, and known_latency() plays the profile database), but from a
// model the search does not know:
//
//  - the GPU simulator with a hidden profile: the search's profile with its
//    efficiencies, overheads and concurrency terms changed (HiddenChanges),
//    per-shape kernel efficiencies included (Winograd 3x3, 1xk / kx1);
//  - times a reproducible factor per stage, uniform in [1 - noise, 1 + noise]
//    and drawn from a hash of the stage's signature and a seed, so that no
//    correction of the simulator can predict a stage exactly.
//
// It counts every question (a stage it had not answered before). No program
// of ios offers it: it exists to test and benchmark the budgeted search
// (cost/budgeted.h) against a known truth.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "cost/simulated.h"
#include "sched/cost_model.h"

namespace ios::cost {

struct OracleOptions {
  double noise = 0.2;  // relative half-width of the per-stage factor
  uint64_t seed = 1;
};

// The hidden profile: `base` with every knob the simulator has moved by a
// fixed, documented amount (oracle_device.cpp).
DeviceProfile hidden_profile(const DeviceProfile& base);

class OracleDevice : public sched::CostModel {
 public:
  // `graph` (with its IR) must outlive the oracle.
  OracleDevice(const sched::UnitGraph& graph, const DeviceProfile& search_profile,
               OracleOptions options = {}, SimulatedOptions simulated = {});

  std::string name() const override { return "oracle"; }
  double stage_latency(const sched::Stage& stage) override;
  std::optional<double> known_latency(const sched::Stage& stage) override;
  bool costs_follow_signatures() const override { return true; }

  // Distinct stages answered so far: the questions a GPU would have timed.
  int64_t questions() const { return static_cast<int64_t>(answers_.size()); }
  // The latency of `stage` without counting a question (for scoring a
  // schedule after the search).
  double truth(const sched::Stage& stage);
  // A staged schedule's latency on the oracle: the sum of its stages'
  // truths, what the IOS search minimises (no question counted).
  double truth(const sched::Schedule& schedule);

 private:
  double truth(const sched::Stage& stage, const std::string& signature);

  const sched::UnitGraph& graph_;
  OracleOptions options_;
  SimulatedCostModel hidden_;
  std::unordered_map<std::string, double> answers_;  // by stage signature
};

}  // namespace ios::cost
