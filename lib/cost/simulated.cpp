#include "cost/simulated.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "sched/merge.h"

namespace ios::cost {

std::string launch_name(const SimulatedOptions& options) {
  if (options.launch == sim::LaunchMode::kGraph) return "graph";
  return options.join == exec::StageJoin::kDeviceSync ? "synced" : "plain";
}

void set_launch(SimulatedOptions& options, std::string_view launch) {
  IOS_ASSERT(launch == "graph" || launch == "plain" || launch == "synced", "launch mode '{}'", launch);
  options.launch = launch == "graph" ? sim::LaunchMode::kGraph : sim::LaunchMode::kPlain;
  options.join = launch == "synced" ? exec::StageJoin::kDeviceSync : exec::StageJoin::kEvents;
}

SimulatedCostModel::SimulatedCostModel(const sched::UnitGraph& graph, DeviceProfile profile,
                                       SimulatedOptions options)
    : graph_(graph), profile_(std::move(profile)), options_(options) {
  IOS_ASSERT(options.join == exec::StageJoin::kEvents || options.launch == sim::LaunchMode::kPlain,
             "a host that synchronizes the device between stages launches plainly");
  IOS_ASSERT(graph.ir() != nullptr,
             "the simulated cost model needs a unit graph formed from an IR graph");
  work_.reserve(static_cast<size_t>(graph.size()));
  kernels_.reserve(static_cast<size_t>(graph.size()));
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    work_.push_back(unit_work(graph, u));
    std::vector<sim::KernelCost>& parts = kernels_.emplace_back();
    for (const KernelWork& k : work_.back().kernels) parts.push_back(time_kernel(k));
  }
  // Classes by the exact kernel costs: the simulator reads nothing else of a
  // unit in an unmerged launch.
  std::map<std::vector<double>, int64_t> classes;
  class_.reserve(kernels_.size());
  for (const auto& parts : kernels_) {
    std::vector<double> key;
    for (const sim::KernelCost& k : parts) {
      key.insert(key.end(), {k.launch_us, k.work_us, k.sm_share, k.bandwidth_share, k.working_set_mb});
    }
    class_.push_back(classes.emplace(std::move(key), static_cast<int64_t>(classes.size())).first->second);
  }
}

double tile_outputs(const DeviceProfile& p, double outputs) {
  // Libraries ship kernels for several tile sizes and pick a larger tile for
  // a larger problem (more reuse per block), but not one so large that the
  // kernel leaves part of the device idle: the tile doubles from
  // outputs_per_block up to max_outputs_per_block while the kernel still
  // has at least one full wave of blocks (cuDNN 7's Volta kernels, for
  // example, come in 128x32, 128x64 and 128x128 output tiles).
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  const double largest = static_cast<double>(std::max(p.outputs_per_block, p.max_outputs_per_block));
  double tile = static_cast<double>(p.outputs_per_block);
  while (tile * 2.0 <= largest && outputs / (tile * 2.0) >= fill) tile *= 2.0;
  return tile;
}

sim::KernelCost SimulatedCostModel::time_kernel(const KernelWork& k) const {
  const DeviceProfile& p = profile_;
  sim::KernelCost t;
  t.launch_us = p.launch_overhead_us;

  // Occupancy: tile_outputs() outputs per thread block, at least one
  // block; a library splits a long reduction (split-K) into chunks of
  // split_k_length, but only as far as needed to fill the device. With
  // whole_waves, blocks run in waves of `fill`: a kernel of 1.25 waves takes
  // two, and its last wave leaves three quarters of the slots to whatever
  // runs beside it, so it occupies on average five eighths of the slots.
  // Otherwise blocks are fractional, spread evenly. Either way the time
  // never drops when work grows.
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  const double blocks = std::max(1.0, k.outputs / tile_outputs(p, k.outputs));
  const double split = std::clamp(k.reduction / static_cast<double>(p.split_k_length), 1.0,
                                  std::max(1.0, fill / blocks));
  const double slots = blocks * split;
  // 1e-9: a kernel of exactly n waves is not rounded up to n + 1 by the division.
  const double waves =
      p.whole_waves ? std::max(1.0, std::ceil(slots / fill - 1e-9)) : std::max(1.0, slots / fill);
  t.sm_share = std::min(1.0, slots / (waves * fill));

  // Roofline: compute on the SMs the kernel occupies, memory at the device's
  // usable bandwidth.
  // Float32 products use TF32 tensor cores with Precision::kTf32; 16-bit
  // ones always use their type's tensor cores (fp32 accumulation), and run
  // at the FP32 rate on a device without them.
  const bool half = ir::is_half(k.type);
  const double tensor_peak_tflops = tensor_core_peak_tflops(p, k.type);
  const bool tensor_cores =
      k.matmul_like && tensor_peak_tflops > 0.0 && (half || options_.math == ir::MathMode::kTf32);
  double peak_flops_per_us = tensor_cores ? tensor_peak_tflops * 1e6 * p.tensor_core_efficiency
                                          : p.peak_fp32_tflops * 1e6 * p.compute_efficiency;
  // Per-shape efficiency of the library's convolution kernels (FP32 ones:
  // tensor-core kernels take no Winograd path).
  if (!tensor_cores && k.winograd) peak_flops_per_us *= p.winograd_speedup;
  if (k.asymmetric) peak_flops_per_us *= p.asymmetric_conv_efficiency;
  const double bytes_per_us = p.mem_bandwidth_gbs * 1e3 * p.memory_efficiency;
  const double compute_us = k.flops / (peak_flops_per_us * t.sm_share);
  const double memory_us = k.bytes() / bytes_per_us;
  t.work_us = std::max(compute_us, memory_us);
  t.bandwidth_share = t.work_us > 0.0 ? std::min(1.0, k.bytes() / t.work_us / bytes_per_us) : 0.0;
  t.working_set_mb = k.bytes() / 1e6;
  return t;
}

sim::DeviceLimits SimulatedCostModel::limits() const {
  sim::DeviceLimits limits;
  limits.max_concurrent_kernels = profile_.max_concurrent_kernels;
  limits.concurrency_interference = profile_.concurrency_interference;
  limits.l2_cache_mb = profile_.l2_cache_mb;
  limits.cache_contention = profile_.cache_contention;
  limits.event_wait_us = profile_.event_sync_overhead_us;
  limits.mode = options_.launch;
  limits.host_call_us = profile_.host_launch_us;
  limits.host_sync_us = profile_.host_sync_us;
  return limits;
}

std::vector<std::vector<sim::KernelCost>> SimulatedCostModel::kernel_costs(
    const exec::ExecPlan& plan) const {
  std::vector<std::vector<sim::KernelCost>> costs;
  kernel_costs_into(plan, costs);
  return costs;
}

void SimulatedCostModel::kernel_costs_into(const exec::ExecPlan& plan,
                                           std::vector<std::vector<sim::KernelCost>>& costs) const {
  costs.resize(plan.kernels.size());
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const exec::Kernel& kernel = plan.kernels[i];
    std::vector<sim::KernelCost>& parts = costs[i];
    if (!kernel.merged) {
      IOS_ASSERT(kernel.units.size() == 1, "an unmerged launch runs one unit, not {}",
                 kernel.units.size());
      const auto& unit = kernels_.at(static_cast<size_t>(kernel.units[0]));
      parts.assign(unit.begin(), unit.end());
      continue;
    }
    const sched::MergeCheck check = sched::check_merge(graph_, kernel.units);
    IOS_ASSERT(check.spec.has_value(), "merge stage is not mergeable: {}", check.reason);
    const UnitWork merged = merged_work(graph_, *check.spec);
    parts.clear();
    for (const KernelWork& k : merged.kernels) parts.push_back(time_kernel(k));
  }
}

sim::Timeline SimulatedCostModel::simulate(const exec::ExecPlan& plan) const {
  return sim::simulate(plan, kernel_costs(plan), limits());
}

double SimulatedCostModel::schedule_latency(const sched::Schedule& schedule) const {
  return simulate(exec::lower(graph_, schedule, options_.join)).makespan_us / 1000.0;
}

// The buffers of stage_latency, one set per thread: the search costs
// millions of stages, and a warm set allocates nothing for an unmerged one.
struct StageWorkspace {
  exec::ExecPlan plan;
  std::vector<std::vector<sim::KernelCost>> costs;
  sim::Simulator simulator;
};

double SimulatedCostModel::stage_latency(const sched::Stage& stage) {
  IOS_ASSERT(!stage.groups.empty(), "a stage needs at least one group");
  if (stage.strategy == sched::Strategy::kMerge) {
    IOS_ASSERT(stage.groups.size() == 1, "a merge stage has exactly one group, got {}",
               stage.groups.size());
  }
  // What schedule_latency() of a one-stage schedule computes, without its
  // allocations.
  thread_local StageWorkspace ws;
  exec::lower_stage(stage, ws.plan, options_.join);
  kernel_costs_into(ws.plan, ws.costs);
  const double once_us = ws.simulator.run(ws.plan, ws.costs, limits()).makespan_us;
  if (options_.join != exec::StageJoin::kDeviceSync || stage.groups.size() > 1) return once_us / 1000.0;
  // A single-group stage is not synchronized after: the host issues the
  // next stage while it runs. Its cost is what it adds to a stream of its
  // own repetitions (as the IOS paper's engine timed such a stage), the
  // makespan of two back-to-back copies less that of one.
  const size_t steps = ws.plan.steps.size();
  ws.plan.steps.reserve(2 * steps);
  for (size_t i = 0; i < steps; ++i) ws.plan.steps.push_back(ws.plan.steps[i]);
  const double twice_us = ws.simulator.run(ws.plan, ws.costs, limits()).makespan_us;
  return (twice_us - once_us) / 1000.0;
}

// A kernel keeps its stream busy for at least its launch and its solo work;
// working with others it progresses at most at its solo rate, and the
// kernels working at once never fill more than all the slots or all the
// bandwidth (sim::Simulation's slowdown), so the slot-time and the
// bandwidth-time of a stage's kernels each fit within the stage.
sched::CostModel::UnitBound SimulatedCostModel::unit_bound(sched::UnitId unit) {
  UnitBound bound;
  for (const sim::KernelCost& k : kernels_.at(static_cast<size_t>(unit))) {
    bound.stream_ms += k.total_us() / 1000.0;
    bound.slots_ms += k.work_us * k.sm_share / 1000.0;
    bound.dram_ms += k.work_us * k.bandwidth_share / 1000.0;
  }
  return bound;
}

}  // namespace ios::cost
