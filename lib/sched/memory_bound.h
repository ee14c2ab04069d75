// The memory bound of a search (ios-optimize --memory-limit): the live
// activation bytes of every stage, summed from the units' outputs, which the
// DP (ios_dp.h) keeps within a bound stage by stage.
//
// The placed arena a backend allocates (exec/schedule_memory.h) cannot be
// summed stage by stage: placement depends on the whole plan. So the search
// bounds live bytes, a per-stage figure, and ios-optimize checks the placed
// arena of the schedule found afterwards and repairs (docs/schedulers.md,
// *Memory*). Live bytes while a stage runs, after the units `done`:
//  - carried: the graph inputs and outputs (persistent, never shared: the
//    whole run), and activations made before the block and read after it;
//  - the outputs of done units that a unit not yet done reads, or that are
//    read after the block;
//  - activations made before the block that a unit of the block not yet
//    done reads (and nothing after it);
//  - the outputs of the stage's own units.
// A unit's output is its tensors others read (Unit::outputs), of float32
// elements; in-place epilogues, zero-copy concat slices and merged outputs
// take no more than that, and tensors inside a unit are not counted.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sched/block_dag.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// Predicted cuDNN workspaces (there is no GPU to ask): an explicit-GEMM
// (im2col) buffer for a convolution that is not 1x1 with stride 1 and no
// padding, none for a pointwise one (an implicit GEMM reads its input as it
// is) or any other operator, capped at kPredictedWorkspaceCap, the CUDA
// engine's default workspace limit per convolution.
inline constexpr int64_t kPredictedWorkspaceCap = int64_t{256} << 20;
int64_t predicted_conv_workspace(int64_t batch, int64_t in_channels, const ir::ConvAttrs& conv,
                                 int64_t out_plane);
// The largest of a unit's convolutions' (0 without an IR).
int64_t predicted_unit_workspace(const ir::Graph& graph, const Unit& unit);

struct BlockMemory {
  int64_t bound = 0;    // the most live bytes a stage may have
  int64_t carried = 0;  // live for the whole block
  std::array<int64_t, kMaxBlockUnits> out_bytes{};  // per local unit (persistent outputs excluded)
  std::array<uint64_t, kMaxBlockUnits> readers{};   // per local unit: the local units reading its outputs
  std::array<int64_t, kMaxBlockUnits> workspace{};  // per local unit: predicted_unit_workspace
  uint64_t escapes = 0;  // units whose outputs are read after the block
  std::vector<std::pair<int64_t, uint64_t>> inputs;  // made before, read only in the block: bytes, readers

  // Live bytes after the units `done` (predecessor-closed) ran.
  int64_t live_after(uint64_t done) const {
    int64_t live = carried;
    for (uint64_t b = done; b; b &= b - 1) {
      const int x = lowest(b);
      if ((escapes & bit(x)) != 0 || (readers[static_cast<size_t>(x)] & ~done) != 0) live += out_bytes[static_cast<size_t>(x)];
    }
    for (const auto& [bytes, readers_mask] : inputs) {
      if ((readers_mask & ~done) != 0) live += bytes;
    }
    return live;
  }
  // Bytes while `stage` runs after `done`: the live bytes, and a workspace
  // per unit of the stage (each group runs on a stream with its own
  // workspace; a group of several units needs only its largest, so this
  // overcounts such groups, on the safe side).
  int64_t stage_bytes(uint64_t done, uint64_t stage) const {
    int64_t live = live_after(done);
    for (uint64_t b = stage; b; b &= b - 1) {
      const auto x = static_cast<size_t>(lowest(b));
      live += out_bytes[x] + workspace[x];
    }
    return live;
  }
  // The most live bytes of any of `stages` (global ids of `dag`'s block), in order.
  int64_t peak(const BlockDag& dag, const std::vector<Stage>& stages) const;
};

// Each block's memory (UnitGraph::blocks() order), with bound `bound`. The
// graph must have an IR.
std::vector<BlockMemory> block_memories(const UnitGraph& graph, int64_t bound);

// The largest bytes of a staged schedule's stages by this measure, live
// bytes and workspaces (what the search compares with the bound).
int64_t staged_live_peak(const UnitGraph& graph, const StagedSchedule& staged);

}  // namespace ios::sched
