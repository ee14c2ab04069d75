// IOS operator merge: convolutions that read the same tensor computed as one
// convolution. Kernels are zero-padded to the largest size and placed so that
// every member's output is reproduced exactly; the merged output's channels
// are the members' outputs, concatenated in member order.
//
// The merge is recorded in a schedule and carried out when a plan is built
// (assemble_merged_weights); the user's model is never rewritten.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "sched/unit_graph.h"

namespace ios::sched {

struct MergeMember {
  UnitId unit = 0;
  int64_t out_channels = 0;
  int64_t channel_offset = 0;           // first channel of this member in the merged output
  std::array<int64_t, 2> kernel_offset{0, 0};  // {row, col} where its kernel sits in the merged one
};

struct MergeSpec {
  ir::TensorId input = ir::kNone;  // the tensor every member reads
  ir::ConvAttrs conv;              // merged kernel, common stride/dilation, merged pads, group = 1
  int64_t in_channels = 0;
  int64_t out_channels = 0;        // sum over members
  std::vector<MergeMember> members;
};

// Whether the units can merge, and how. Legal when: >= 2 units, every unit is
// a plain kConv unit (no prologue) whose conv reads the same tensor, groups = 1,
// equal stride and dilation, the same fused epilogue (same activation and
// parameters), and the zero-padded kernels line up: for each member and axis,
// merged_pad_begin - pad_begin == offset (in dilated steps) and the output
// sizes are equal. Returns the reason otherwise (for error messages).
struct MergeCheck {
  std::optional<MergeSpec> spec;
  std::string reason;  // why not, when spec is empty
};
MergeCheck check_merge(const UnitGraph& graph, const std::vector<UnitId>& units);

// The merged weights [out_channels, in_channels, kh, kw] (row-major) and bias
// [out_channels] built from the members' (already BN-folded) weights.
struct MergedWeights {
  std::vector<float> weight;
  std::vector<float> bias;
};
MergedWeights assemble_merged_weights(const UnitGraph& graph, const MergeSpec& spec);

}  // namespace ios::sched
