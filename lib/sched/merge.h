// IOS operator merge: operators that read the same tensor computed as one.
//  - Convolutions: kernels are zero-padded to the largest size and placed so
//    that every member's output is reproduced exactly; the merged output's
//    channels are the members' outputs, concatenated in member order.
//  - Matrix products with constant weights (a transformer block's Q, K and V
//    projections: MatMul(x, W_i) with x of rank >= 2 and W_i [K, N_i], or
//    Gemm(x, W_i[, c_i]) on a 2-D x): one product x * [W_1 | W_2 | ...] with
//    the weights concatenated along their last axis; member i's result is
//    the columns [off_i, off_i + N_i) of the merged output's last axis.
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

// What the merged operator is.
enum class MergeKind {
  kConv,    // one convolution; members are channel slices (axis 1)
  kMatMul,  // one matrix product; members are last-axis slices
};

struct MergeMember {
  UnitId unit = 0;
  int64_t out_channels = 0;    // convolution: output channels; matrix product: N_i (columns)
  int64_t channel_offset = 0;  // first channel (column) of this member in the merged output
  ir::Dims kernel_offset{0, 0};  // per spatial axis, where its kernel sits in the merged one
};

struct MergeSpec {
  MergeKind kind = MergeKind::kConv;
  ir::TensorId input = ir::kNone;  // the tensor every member reads
  ir::ConvAttrs conv;        // kConv: merged kernel, common stride/dilation, merged pads, group = 1
  int64_t in_channels = 0;   // kConv: input channels; kMatMul: K, the reduction length
  int64_t out_channels = 0;  // sum over members (channels, or columns of the last axis)
  int64_t rows = 0;  // kMatMul: rows of the product, the input's leading dimensions multiplied
  std::vector<MergeMember> members;

  // The merged output's shape: the first member's output with its channels
  // (kConv, axis 1) or its last axis (kMatMul) widened to out_channels.
  ir::Shape output_shape(const ir::Shape& member_output) const;
};

// Whether the units can merge, and how. The first unit's anchor decides the
// kind; mixing convolutions and matrix products is rejected.
// Convolutions are legal when: >= 2 units, every unit is a plain kConv unit
// (no prologue) whose conv reads the same tensor, groups = 1, equal stride and
// dilation, the same fused epilogue (same activation and parameters), and the
// zero-padded kernels line up: for each member and axis, merged_pad_begin -
// pad_begin == offset (in dilated steps) and the output sizes are equal.
// Matrix products are legal when: >= 2 units, every unit is a kMatMul unit
// with no prologue whose anchor is a MatMul reading the same activation A
// (rank >= 2) times a constant 2-D weight [K, N_i] with the same K, or a Gemm
// with transA = 0, alpha = 1 and (when it has C) beta = 1 and a constant C of
// [N_i] or [1, N_i], on a 2-D A, with a constant weight [K, N_i] (transB = 0)
// or [N_i, K] (transB = 1). Their fused epilogues may differ: each runs on its
// member's columns only, and must be element-wise. Returns the reason otherwise
// (for error messages).
struct MergeCheck {
  std::optional<MergeSpec> spec;
  std::string reason;  // why not, when spec is empty
};
MergeCheck check_merge(const UnitGraph& graph, const std::vector<UnitId>& units);

// The merged weights and bias [out_channels] built from the members'
// (already BN-folded) weights. kConv: weight [out_channels, in_channels,
// k...]; kMatMul: weight [K, out_channels] (row-major, member i's columns at its
// offset, a transB weight transposed), bias from the Gemm members' C (zero
// for MatMul members, whose bias is an Add of their epilogue).
struct MergedWeights {
  std::vector<float> weight;
  std::vector<float> bias;
};
MergedWeights assemble_merged_weights(const UnitGraph& graph, const MergeSpec& spec);

}  // namespace ios::sched
