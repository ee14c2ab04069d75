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
      result.reason = fmt::format("member {} has stride {}x{}, member 0 has {}x{}", m,
                                  g.conv.stride[0], g.conv.stride[1], first.conv.stride[0],
                                  first.conv.stride[1]);
      return result;
    }
    if (g.conv.dilation != first.conv.dilation) {
      result.reason = fmt::format("member {} has dilation {}x{}, member 0 has {}x{}", m,
                                  g.conv.dilation[0], g.conv.dilation[1], first.conv.dilation[0],
                                  first.conv.dilation[1]);
      return result;
    }
    if (g.input_hw != first.input_hw || g.output_hw != first.output_hw) {
      result.reason = fmt::format(
          "member {} maps {}x{} to {}x{}, member 0 maps {}x{} to {}x{}", m, g.input_hw[0],
          g.input_hw[1], g.output_hw[0], g.output_hw[1], first.input_hw[0], first.input_hw[1],
          first.output_hw[0], first.output_hw[1]);
      return result;
    }
  }

  MergedGeometry merged;
  merged.conv.stride = first.conv.stride;
  merged.conv.dilation = first.conv.dilation;
  merged.conv.group = 1;
  for (int axis = 0; axis < 2; ++axis) {
    int64_t k_max = 0;
    for (const ConvGeometry& g : members) k_max = std::max(k_max, g.conv.kernel[axis]);
    merged.conv.kernel[axis] = k_max;
  }
  merged.kernel_offsets.resize(members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    for (int axis = 0; axis < 2; ++axis) {
      merged.kernel_offsets[m][axis] = (merged.conv.kernel[axis] - members[m].conv.kernel[axis]) / 2;
    }
  }
  const char* axis_name[2] = {"rows", "columns"};
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t d = first.conv.dilation[axis];
    const int64_t k_merged = merged.conv.kernel[axis];
    const int64_t o0 = merged.kernel_offsets[0][axis];
    const int64_t pad_begin = first.conv.pads[axis] + o0 * d;
    const int64_t pad_end =
        first.conv.pads[axis + 2] + (k_merged - first.conv.kernel[axis] - o0) * d;
    for (size_t m = 0; m < members.size(); ++m) {
      const ConvGeometry& g = members[m];
      const int64_t o = merged.kernel_offsets[m][axis];
      if (g.conv.pads[axis] + o * d != pad_begin) {
        result.reason = fmt::format(
            "{}: member {} ({}x{} kernel, pad begin {}) placed at offset {} needs merged pad "
            "begin {}, member 0 needs {}",
            axis_name[axis], m, g.conv.kernel[0], g.conv.kernel[1], g.conv.pads[axis], o,
            g.conv.pads[axis] + o * d, pad_begin);
        return result;
      }
    }
    const int64_t out =
        conv_output_size(first.input_hw[axis], k_merged, first.conv.stride[axis], d, pad_begin, pad_end);
    if (out != first.output_hw[axis]) {
      result.reason = fmt::format("{}: the merged convolution would produce {} outputs, the members {}",
                                  axis_name[axis], out, first.output_hw[axis]);
      return result;
    }
    merged.conv.pads[axis] = pad_begin;
    merged.conv.pads[axis + 2] = pad_end;
  }
  result.merged = std::move(merged);
  return result;
}

}  // namespace ios::sched
