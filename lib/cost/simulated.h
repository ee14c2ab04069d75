// SimulatedCostModel: an analytical, deterministic stage-latency model for
// when no GPU is at hand. Each kernel is a roofline with an occupancy factor;
// concurrent groups share the device in a small fluid simulation (kernels
// that together need more SMs or bandwidth than the device has slow down in
// proportion). Formulas, knobs and blind spots: docs/cost-model.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "cost/device_profile.h"
#include "cost/unit_work.h"

namespace ios::cost {

// Math used by convolutions and GEMMs (element-wise work is always FP32).
enum class Precision { kFp32, kTf32 };
std::string_view precision_name(Precision precision);  // "fp32" / "tf32"

struct SimulatedOptions {
  Precision precision = Precision::kFp32;
};

// A kernel as the device sees it when it runs alone (derived from KernelWork
// and the profile).
struct KernelTiming {
  double launch_us = 0.0;        // fixed per-kernel overhead on its stream
  double work_us = 0.0;          // roofline time after the launch
  double sm_share = 0.0;         // fraction of the SMs it occupies, (0, 1]
  double bandwidth_share = 0.0;  // fraction of the usable bandwidth it draws, [0, 1]
  double total_us() const { return launch_us + work_us; }
};

class SimulatedCostModel : public CostModel {
 public:
  // Shapes (batch included) come from the IR behind `graph`, which must
  // outlive the model.
  SimulatedCostModel(const sched::UnitGraph& graph, DeviceProfile profile,
                     SimulatedOptions options = {});

  std::string name() const override { return "simulated"; }
  double stage_latency(const sched::Stage& stage) override;

  const DeviceProfile& profile() const { return profile_; }
  const SimulatedOptions& options() const { return options_; }
  const UnitWork& work(sched::UnitId unit) const { return work_.at(static_cast<size_t>(unit)); }

  // One kernel alone on the device.
  KernelTiming time_kernel(const KernelWork& kernel) const;

 private:
  // Makespan in microseconds of streams that start together, each running its
  // kernels in order.
  double simulate_us(const std::vector<std::vector<KernelTiming>>& streams) const;

  const sched::UnitGraph& graph_;
  DeviceProfile profile_;
  SimulatedOptions options_;
  std::vector<UnitWork> work_;  // per unit
};

}  // namespace ios::cost
