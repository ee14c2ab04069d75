#include "exec/schedule_memory.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "exec/memory_layout.h"
#include "exec/storage_plan.h"
#include "sched/memory_bound.h"
#include "sched/merge.h"

namespace ios::exec {

namespace {

// The predicted workspace of launch `k`: the largest of its convolutions'.
int64_t launch_workspace(const sched::UnitGraph& units, const ExecPlan& plan, const StoragePlan& storage,
                         size_t k) {
  const ir::Graph& g = *units.ir();
  const Kernel& kernel = plan.kernels[k];
  if (kernel.merged) {
    const sched::MergeSpec& spec = storage.merge_spec(static_cast<int>(k));
    if (spec.kind != sched::MergeKind::kConv) return 0;
    const Region& out = storage.merged_region(static_cast<int>(k));
    const ir::Shape& shape = out.shape;
    const int64_t plane =
        shape.size() >= 3 ? ir::num_elements(ir::Shape(shape.begin() + 2, shape.end())) : 1;
    return sched::predicted_conv_workspace(shape.at(0), spec.in_channels, spec.conv, plane);
  }
  int64_t most = 0;
  for (sched::UnitId u : kernel.units) most = std::max(most, sched::predicted_unit_workspace(g, units.unit(u)));
  return most;
}

}  // namespace

sched::MemoryInfo schedule_memory(const sched::UnitGraph& graph, const ExecPlan& plan) {
  IOS_ASSERT(graph.ir() != nullptr, "memory accounting needs a unit graph formed from an IR graph");
  const ir::Graph& g = *graph.ir();
  const StoragePlan storage(graph, plan);
  const std::vector<MemoryRequest> requests = storage.memory_requests();
  const HappensBefore order(static_cast<int>(plan.kernels.size()), std::max(plan.num_streams, 1), plan.num_events,
                            plan.steps);
  sched::MemoryInfo info;
  info.arena_bytes = plan_memory(requests, order, kArenaAlignment).total_bytes;
  for (ir::TensorId t : storage.inputs()) info.inputs_bytes += ir::tensor_bytes(g.tensor(t));
  for (ir::TensorId t : storage.outputs()) info.outputs_bytes += ir::tensor_bytes(g.tensor(t));

  info.live_peak_bytes = live_peak_bytes(requests, order, kArenaAlignment);

  for (const ir::Tensor& t : g.tensors()) {
    if (t.is_constant() && t.data) info.weights_bytes += ir::tensor_bytes(t);
  }
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    if (!plan.kernels[k].merged) continue;
    const sched::MergeSpec& spec = storage.merge_spec(static_cast<int>(k));
    int64_t elements = spec.in_channels * spec.out_channels + spec.out_channels;  // weight and bias
    if (spec.kind == sched::MergeKind::kConv) {
      elements = spec.out_channels * spec.in_channels * ir::num_elements(spec.conv.kernel) +
                 spec.out_channels;
    }
    const int merged_storage = storage.merged_region(static_cast<int>(k)).storage;
    info.merged_weights_bytes +=
        elements * ir::bytes_of(storage.storages().at(static_cast<size_t>(merged_storage)).type);
  }
  info.weights_bytes += info.merged_weights_bytes;

  info.workspace_bytes.assign(static_cast<size_t>(std::max(plan.num_streams, 1)), 0);
  for (const Step& step : plan.steps) {
    if (step.kind != Step::Kind::kLaunch) continue;
    int64_t& w = info.workspace_bytes.at(static_cast<size_t>(step.stream));
    w = std::max(w, launch_workspace(graph, plan, storage, static_cast<size_t>(step.kernel)));
  }
  info.workspaces_predicted = true;
  return info;
}

sched::MemoryInfo schedule_memory(const sched::UnitGraph& graph, const sched::Schedule& schedule,
                                  StageJoin join) {
  return schedule_memory(graph, lower(graph, schedule, join));
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  if (bytes < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace ios::exec
