// SimulatedCostModel: an analytical, deterministic latency model for when no
// GPU is at hand. Each kernel is a roofline with an occupancy factor (from
// the unit-work model and a device profile); a stage, or a whole schedule, is
// lowered to its ExecPlan and run on the GPU simulator (lib/sim), so every
// schedule form is predicted by the same rules. Formulas, knobs and blind
// spots: docs/cost-model.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cost/device_profile.h"
#include "cost/unit_work.h"
#include "exec/plan.h"
#include "ir/precision.h"
#include "sched/cost_model.h"
#include "sim/simulator.h"

namespace ios::cost {

struct SimulatedOptions {
  // Math used by float32 convolutions and GEMMs (element-wise work is always
  // FP32). Products of float16 or bfloat16 tensors always run on their type's
  // tensor cores where the device has them, whatever this says.
  ir::MathMode math = ir::MathMode::kFp32;
  // How the plans run: a captured CUDA graph, or plain launches from one
  // host thread (ios-run --no-cuda-graph; ios-optimize --launch plain).
  sim::LaunchMode launch = sim::LaunchMode::kGraph;
  // How stages are lowered: kDeviceSync (with kPlain) is the IOS paper's
  // engine, which synchronizes the device after each stage (--launch synced).
  exec::StageJoin join = exec::StageJoin::kEvents;
};

// The launch mode of the options as schedules record it: "graph", "plain"
// or "synced" (plain launches, kDeviceSync).
std::string launch_name(const SimulatedOptions& options);
// Its inverse: sets the options' launch and join for a launch mode.
void set_launch(SimulatedOptions& options, std::string_view launch);

// Output elements per thread block of a kernel of `outputs` output elements
// on `p`: outputs_per_block, doubled up to max_outputs_per_block while the
// kernel still fills at least one wave (docs/cost-model.md, "Tile sizes").
double tile_outputs(const DeviceProfile& p, double outputs);

class SimulatedCostModel : public sched::CostModel {
 public:
  // Shapes (batch included) come from the IR behind `graph`, which must
  // outlive the model.
  SimulatedCostModel(const sched::UnitGraph& graph, DeviceProfile profile,
                     SimulatedOptions options = {});

  std::string name() const override { return "simulated"; }
  // The simulated latency of the stage's lowered plan (a one-stage schedule
  // in the options' launch mode): fork, groups, join; or with kDeviceSync
  // the groups and the synchronization after them, and for a single-group
  // stage, which is not synchronized after, what it adds to a stream of its
  // own repetitions.
  double stage_latency(const sched::Stage& stage) override;
  // The unit's kernels' launches and solo work: in the simulator a kernel's
  // launch takes launch_us on its stream and sharing the device only slows
  // its work down, whatever runs beside it.
  UnitBound unit_bound(sched::UnitId unit) override;
  // Units whose kernels time alike share a class: a concurrent stage is
  // simulated from its units' kernel costs and its groups' shapes alone.
  int64_t cost_class(sched::UnitId unit) override { return class_.at(static_cast<size_t>(unit)); }
  // A unit without kernels (views): an empty launch takes no time.
  bool free_unit(sched::UnitId unit) override { return kernels_.at(static_cast<size_t>(unit)).empty(); }
  // A stage's kernels follow from its units' operators, attributes and
  // shapes, and merges also from which inputs they share: all in the
  // signature.
  bool costs_follow_signatures() const override { return true; }
  // stage_latency reads only what the constructor computed.
  bool thread_safe() const override { return true; }

  const DeviceProfile& profile() const { return profile_; }
  const SimulatedOptions& options() const { return options_; }
  const sched::UnitGraph& graph() const { return graph_; }
  const UnitWork& work(sched::UnitId unit) const { return work_.at(static_cast<size_t>(unit)); }

  // One kernel alone on the device.
  sim::KernelCost time_kernel(const KernelWork& kernel) const;

  // The simulator's device limits for this profile and the options' launch mode.
  sim::DeviceLimits limits() const;
  // The device kernels of every launch of `plan` (merged convolutions as one).
  std::vector<std::vector<sim::KernelCost>> kernel_costs(const exec::ExecPlan& plan) const;
  // The same into `costs`, reusing its buffers.
  void kernel_costs_into(const exec::ExecPlan& plan,
                         std::vector<std::vector<sim::KernelCost>>& costs) const;
  // Runs `plan` (lowered from a schedule of this model's graph) on the simulator.
  sim::Timeline simulate(const exec::ExecPlan& plan) const;
  // Predicted latency in ms of a validated schedule: its whole lowered plan
  // simulated in the options' launch mode (what ios-optimize reports for
  // every scheduler).
  double schedule_latency(const sched::Schedule& schedule) const;

 private:
  const sched::UnitGraph& graph_;
  DeviceProfile profile_;
  SimulatedOptions options_;
  std::vector<UnitWork> work_;                         // per unit
  std::vector<std::vector<sim::KernelCost>> kernels_;  // per unit, from work_
  std::vector<int64_t> class_;                         // per unit: equal kernels_, equal class
};

}  // namespace ios::cost
