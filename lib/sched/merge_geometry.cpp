#include "sched/merge_geometry.h"

#include <fmt/format.h>

#include <algorithm>

namespace ios::sched {

int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                         int64_t pad_begin, int64_t pad_end) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t padded = input + pad_begin + pad_end;
  if (padded < span || stride <= 0) return 0;
  return (padded - span) / stride + 1;
}

MergeGeometryResult merge_geometry(const std::vector<ConvGeometry>& members) {
  MergeGeometryResult result;
  if (members.empty()) {
    result.reason = "no convolutions to merge";
    return result;
  }
  const ConvGeometry& first = members.front();
  for (size_t m = 0; m < members.size(); ++m) {
    const ConvGeometry& g = members[m];
    if (g.conv.group != 1) {
      result.reason = fmt::format("member {} is a grouped convolution (group = {})", m, g.conv.group);
      return result;
    }
    if (g.conv.stride != first.conv.stride) {
      result.reason = fmt::format("member {} has stride {}, member 0 has {}", m,
                                  ir::to_string(g.conv.stride), ir::to_string(first.conv.stride));
      return result;
    }
    if (g.conv.dilation != first.conv.dilation) {
      result.reason =
          fmt::format("member {} has dilation {}, member 0 has {}", m,
                      ir::to_string(g.conv.dilation), ir::to_string(first.conv.dilation));
      return result;
    }
    if (g.input_spatial != first.input_spatial || g.output_spatial != first.output_spatial) {
      result.reason =
          fmt::format("member {} maps {} to {}, member 0 maps {} to {}", m,
                      ir::to_string(g.input_spatial), ir::to_string(g.output_spatial),
                      ir::to_string(first.input_spatial), ir::to_string(first.output_spatial));
      return result;
    }
  }

  const size_t rank = first.conv.spatial_rank();
  MergedGeometry merged;
  merged.conv.stride = first.conv.stride;
  merged.conv.dilation = first.conv.dilation;
  merged.conv.kernel.assign(rank, 0);
  merged.conv.pads.assign(2 * rank, 0);
  merged.conv.group = 1;
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t k_max = 0;
    for (const ConvGeometry& g : members) k_max = std::max(k_max, g.conv.kernel[axis]);
    merged.conv.kernel[axis] = k_max;
  }
  merged.kernel_offsets.assign(members.size(), ir::Dims(rank, 0));
  for (size_t m = 0; m < members.size(); ++m) {
    for (size_t axis = 0; axis < rank; ++axis) {
      merged.kernel_offsets[m][axis] = (merged.conv.kernel[axis] - members[m].conv.kernel[axis]) / 2;
    }
  }
  // Named from the last axis: columns, rows, frames.
  auto axis_name = [rank](size_t axis) {
    constexpr const char* kNames[3] = {"frames", "rows", "columns"};
    return kNames[3 - rank + axis];
  };
  for (size_t axis = 0; axis < rank; ++axis) {
    const int64_t d = first.conv.dilation[axis];
    const int64_t k_merged = merged.conv.kernel[axis];
    const int64_t o0 = merged.kernel_offsets[0][axis];
    const int64_t pad_begin = first.conv.pads[axis] + o0 * d;
    const int64_t pad_end =
        first.conv.pads[axis + rank] + (k_merged - first.conv.kernel[axis] - o0) * d;
    for (size_t m = 0; m < members.size(); ++m) {
      const ConvGeometry& g = members[m];
      const int64_t o = merged.kernel_offsets[m][axis];
      if (g.conv.pads[axis] + o * d != pad_begin) {
        result.reason = fmt::format(
            "{}: member {} ({} kernel, pad begin {}) placed at offset {} needs merged pad "
            "begin {}, member 0 needs {}",
            axis_name(axis), m, ir::to_string(g.conv.kernel), g.conv.pads[axis], o,
            g.conv.pads[axis] + o * d, pad_begin);
        return result;
      }
    }
    const int64_t out = conv_output_size(first.input_spatial[axis], k_merged,
                                         first.conv.stride[axis], d, pad_begin, pad_end);
    if (out != first.output_spatial[axis]) {
      result.reason =
          fmt::format("{}: the merged convolution would produce {} outputs, the members {}",
                      axis_name(axis), out, first.output_spatial[axis]);
      return result;
    }
    merged.conv.pads[axis] = pad_begin;
    merged.conv.pads[axis + rank] = pad_end;
  }
  result.merged = std::move(merged);
  return result;
}

}  // namespace ios::sched
