// The peak device memory of a schedule, from the same storage plan and arena
// placement the backends allocate from (storage_plan.h, memory_layout.h), so
// the figure a report shows is the figure a run allocates.
//
// Parts (sched::MemoryInfo):
//  - activations: the arena plan_memory() places the storage plan's storages
//    in (graph inputs and outputs included, never shared), at
//    kArenaAlignment. The CPU backend allocates exactly this arena; the CUDA
//    backend allocates it plus the scratch storages its lowering adds.
//  - live peak: the largest sum of storage bytes that may be live while one
//    launch runs (under the plan's happens-before order, so concurrent
//    branches count together), without placement. The arena is at least this
//    in practice, more where placement fragments; the search bounds this
//    figure (it can be summed stage by stage) and checks the arena after.
//  - weights: the model's constants plus the concatenated weights of every
//    merged convolution or matrix product (the backends keep both).
//  - workspaces: one per stream in use, the largest any launch on that stream
//    needs. Predicted (there is no GPU to ask cuDNN): an explicit-GEMM
//    (im2col) buffer for a convolution that is not 1x1 with stride 1 and no
//    padding, none for anything else, capped at the CUDA engine's default
//    workspace limit per convolution (sched::predicted_conv_workspace).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "exec/plan.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::exec {

// The arena alignment both backends' plans are reported at (bytes).
inline constexpr int64_t kArenaAlignment = 256;

// The memory of `plan`, lowered from a schedule of `graph` (which must have
// an IR). Throws UserError when the plan merges units that cannot merge.
sched::MemoryInfo schedule_memory(const sched::UnitGraph& graph, const ExecPlan& plan);

// The same for a validated schedule, lowered as a run lowers it (`join`:
// kDeviceSync for ios-run --launch synced, whose synchronizations let more
// storages share memory).
sched::MemoryInfo schedule_memory(const sched::UnitGraph& graph, const sched::Schedule& schedule,
                                  StageJoin join = StageJoin::kEvents);

// "12.3 MiB" (binary units; bytes below 1 KiB as "512 B").
std::string format_bytes(int64_t bytes);

}  // namespace ios::exec
