// The arithmetic behind operator merge (sched/merge.h), kept apart from the
// unit graph so it can be checked on its own.
//
// Member m has kernel k_m, begin/end pads pb_m/pe_m and dilation d per
// spatial axis (one for 1-D, two for 2-D, three for 3-D convolutions; all
// members have the same axes).
// With the merged kernel K = max k_m and the member's kernel placed o_m rows
// (columns) into it, the merged convolution computes the member's output
// exactly iff  merged_pad_begin = pb_m + o_m * d  and the output sizes are
// equal: output row i reads input rows i*stride - P + t*d for merged kernel
// row t, which for t = o_m + t' is the member's i*stride - pb_m + t'*d, and
// the zero rows of the padded kernel contribute nothing. We place kernels
// centred, o_m = (K - k_m) / 2 (rounded down), as the IOS reference does, and
// reject members for which that placement does not line up (asymmetric or
// non-matching pads).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::sched {

struct ConvGeometry {
  ir::ConvAttrs conv;  // pads: the begins, then the ends
  ir::Dims input_spatial;
  ir::Dims output_spatial;
};

struct MergedGeometry {
  ir::ConvAttrs conv;  // merged kernel, common stride/dilation, merged pads, group 1
  std::vector<ir::Dims> kernel_offsets;  // per member, one offset per spatial axis
};

struct MergeGeometryResult {
  std::optional<MergedGeometry> merged;
  std::string reason;  // why not, when merged is empty
};

// Output size of a convolution along one axis.
int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                         int64_t pad_begin, int64_t pad_end);

// The merged geometry of `members` (>= 1), or why they cannot share one.
MergeGeometryResult merge_geometry(const std::vector<ConvGeometry>& members);

}  // namespace ios::sched
