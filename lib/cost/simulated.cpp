#include "cost/simulated.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "core/error.h"
#include "sched/merge.h"

namespace ios::cost {

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
  }
  return "?";
}

SimulatedCostModel::SimulatedCostModel(const sched::UnitGraph& graph, DeviceProfile profile,
                                       SimulatedOptions options)
    : graph_(graph), profile_(std::move(profile)), options_(options) {
  IOS_ASSERT(graph.ir() != nullptr,
             "the simulated cost model needs a unit graph formed from an IR graph");
  work_.reserve(static_cast<size_t>(graph.size()));
  for (sched::UnitId u = 0; u < graph.size(); ++u) work_.push_back(unit_work(graph, u));
}

KernelTiming SimulatedCostModel::time_kernel(const KernelWork& k) const {
  const DeviceProfile& p = profile_;
  KernelTiming t;
  t.launch_us = p.launch_overhead_us;

  // Occupancy, in fractional thread blocks (no wave quantization, so time
  // never drops when work grows): outputs_per_block outputs per block, at
  // least one block; a library splits a long reduction (split-K) into chunks
  // of split_k_length, but only as far as needed to fill the device.
  const double fill = static_cast<double>(p.sm_count * p.blocks_per_sm);
  const double blocks = std::max(1.0, k.outputs / static_cast<double>(p.outputs_per_block));
  const double split = std::clamp(k.reduction / static_cast<double>(p.split_k_length), 1.0,
                                  std::max(1.0, fill / blocks));
  t.sm_share = std::min(1.0, blocks * split / fill);

  // Roofline: compute on the SMs the kernel occupies, memory at the device's
  // usable bandwidth.
  const bool tensor_cores =
      k.matmul_like && options_.precision == Precision::kTf32 && p.peak_tf32_tflops > 0.0;
  const double peak_flops_per_us = tensor_cores
                                       ? p.peak_tf32_tflops * 1e6 * p.tensor_core_efficiency
                                       : p.peak_fp32_tflops * 1e6 * p.compute_efficiency;
  const double bytes_per_us = p.mem_bandwidth_gbs * 1e3 * p.memory_efficiency;
  const double compute_us = k.flops / (peak_flops_per_us * t.sm_share);
  const double memory_us = k.bytes() / bytes_per_us;
  t.work_us = std::max(compute_us, memory_us);
  t.bandwidth_share = t.work_us > 0.0 ? std::min(1.0, k.bytes() / t.work_us / bytes_per_us) : 0.0;
  return t;
}

double SimulatedCostModel::simulate_us(
    const std::vector<std::vector<KernelTiming>>& streams) const {
  // Fluid model. Each stream is in one of: launching its next kernel (a fixed
  // delay that uses no device resources), queued (launched, but the device
  // already holds max_concurrent_kernels kernels), working, or done. While
  // kernels work together each progresses at 1/s of its solo speed, where
  // s = max(1, sum of SM shares, sum of bandwidth shares), times
  // (1 + concurrency_interference) when more than one works.
  enum class Phase { kLaunch, kQueued, kWork, kDone };
  struct State {
    size_t next = 0;  // index of the current kernel
    Phase phase = Phase::kDone;
    double remaining = 0.0;  // kLaunch: us of launch left; kWork: solo us of work left
  };
  const size_t n = streams.size();
  std::vector<State> state(n);
  std::deque<size_t> queue;  // queued streams, first come first served
  size_t working = 0;
  auto start_kernel = [&](size_t s) {
    if (state[s].next >= streams[s].size()) {
      state[s].phase = Phase::kDone;
      return;
    }
    state[s].phase = Phase::kLaunch;
    state[s].remaining = streams[s][state[s].next].launch_us;
  };
  for (size_t s = 0; s < n; ++s) start_kernel(s);

  const auto max_working = static_cast<size_t>(profile_.max_concurrent_kernels);
  constexpr double kEps = 1e-9;
  double now = 0.0;
  for (;;) {
    // Transitions at `now`, repeated until nothing changes (zero-length
    // launches and work finish immediately).
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t s = 0; s < n; ++s) {
        State& st = state[s];
        if (st.phase == Phase::kLaunch && st.remaining <= kEps) {
          st.phase = Phase::kQueued;
          queue.push_back(s);
          changed = true;
        } else if (st.phase == Phase::kWork && st.remaining <= kEps) {
          --working;
          ++st.next;
          start_kernel(s);
          changed = true;
        }
      }
      while (!queue.empty() && working < max_working) {
        State& st = state[queue.front()];
        st.phase = Phase::kWork;
        st.remaining = streams[queue.front()][st.next].work_us;
        queue.pop_front();
        ++working;
        changed = true;
      }
    }

    double sm = 0.0, bandwidth = 0.0;
    for (size_t s = 0; s < n; ++s) {
      if (state[s].phase != Phase::kWork) continue;
      sm += streams[s][state[s].next].sm_share;
      bandwidth += streams[s][state[s].next].bandwidth_share;
    }
    double slowdown = std::max({1.0, sm, bandwidth});
    if (working > 1) slowdown *= 1.0 + profile_.concurrency_interference;

    double dt = std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < n; ++s) {
      if (state[s].phase == Phase::kLaunch) dt = std::min(dt, state[s].remaining);
      if (state[s].phase == Phase::kWork) dt = std::min(dt, state[s].remaining * slowdown);
    }
    if (std::isinf(dt)) break;  // every stream is done
    now += dt;
    for (size_t s = 0; s < n; ++s) {
      if (state[s].phase == Phase::kLaunch) state[s].remaining -= dt;
      if (state[s].phase == Phase::kWork) state[s].remaining -= dt / slowdown;
    }
  }
  IOS_ASSERT(queue.empty() && working == 0, "simulation ended with {} queued, {} working kernels",
             queue.size(), working);
  return now;
}

double SimulatedCostModel::stage_latency(const sched::Stage& stage) {
  IOS_ASSERT(!stage.groups.empty(), "a stage needs at least one group");
  if (stage.strategy == sched::Strategy::kMerge) {
    IOS_ASSERT(stage.groups.size() == 1, "a merge stage has exactly one group, got {}",
               stage.groups.size());
    const sched::MergeCheck check = sched::check_merge(graph_, stage.groups[0]);
    IOS_ASSERT(check.spec.has_value(), "merge stage is not mergeable: {}", check.reason);
    const UnitWork merged = merged_conv_work(graph_, *check.spec);
    return simulate_us({{time_kernel(merged.kernels.at(0))}}) / 1000.0;
  }

  std::vector<std::vector<KernelTiming>> streams;
  streams.reserve(stage.groups.size());
  for (const auto& group : stage.groups) {
    std::vector<KernelTiming>& kernels = streams.emplace_back();
    for (sched::UnitId u : group) {
      for (const KernelWork& k : work(u).kernels) kernels.push_back(time_kernel(k));
    }
  }
  double us = simulate_us(streams);
  if (stage.groups.size() > 1) us += profile_.event_sync_overhead_us;
  return us / 1000.0;
}

}  // namespace ios::cost
