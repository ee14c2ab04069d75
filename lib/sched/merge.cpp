// Operator merge legality and weight assembly (sched/merge.h). The padding
// arithmetic is in merge_geometry.cpp.
#include "sched/merge.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "sched/fused_epilogue.h"
#include "sched/merge_geometry.h"

namespace ios::sched {

MergeCheck check_merge(const UnitGraph& graph, const std::vector<UnitId>& units) {
  MergeCheck check;
  auto fail = [&](std::string why) {
    check.reason = std::move(why);
    return check;
  };
  if (units.size() < 2) return fail("a merge needs at least two units");
  const ir::Graph* ir = graph.ir();
  if (ir == nullptr) return fail("the unit graph has no IR graph behind it");
  {
    std::vector<UnitId> sorted = units;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return fail("a unit appears twice in the merge");
    }
  }

  std::vector<ConvGeometry> geometry;
  MergeSpec spec;
  for (size_t m = 0; m < units.size(); ++m) {
    if (units[m] < 0 || units[m] >= graph.size()) return fail(fmt::format("no unit {}", units[m]));
    const Unit& unit = graph.unit(units[m]);
    if (unit.kind != UnitKind::kConv || unit.anchor == ir::kNone ||
        ir->node(unit.anchor).op != ir::OpKind::kConv) {
      return fail(fmt::format("unit '{}' is a {} unit, not a convolution", unit.id,
                              unit_kind_name(unit.kind)));
    }
    if (unit.nodes.empty() || unit.nodes.front() != unit.anchor) {
      return fail(fmt::format("unit '{}' has fused work before its convolution", unit.id));
    }
    const ir::Node& conv = ir->node(unit.anchor);
    if (conv.inputs.size() < 2) return fail(fmt::format("convolution of unit '{}' has no weights", unit.id));
    const ir::TensorId x = conv.inputs[0];
    if (m == 0) {
      spec.input = x;
    } else if (x != spec.input) {
      return fail(fmt::format("units '{}' and '{}' read different tensors ('{}' and '{}')",
                              graph.unit(units[0]).id, unit.id, ir->tensor(spec.input).name,
                              ir->tensor(x).name));
    }
    const ir::Tensor& w = ir->tensor(conv.inputs[1]);
    const ir::Tensor& in = ir->tensor(x);
    const ir::Tensor& out = ir->tensor(conv.outputs.at(0));
    const auto& attrs = conv.attr<ir::ConvAttrs>();
    const bool constant_bias = conv.inputs.size() < 3 || ir->tensor(conv.inputs[2]).is_constant();
    if (!w.is_constant() || !constant_bias || w.shape.size() != 4 || in.shape.size() != 4 ||
        out.shape.size() != 4) {
      return fail(fmt::format("convolution of unit '{}' is not a 2-D convolution with constant weights and bias",
                              unit.id));
    }
    if (attrs.group != 1) {
      return fail(fmt::format("unit '{}' is a grouped convolution (group = {})", unit.id, attrs.group));
    }
    if (w.shape[2] != attrs.kernel[0] || w.shape[3] != attrs.kernel[1] || w.shape[1] != in.shape[1]) {
      return fail(fmt::format("weights of unit '{}' do not match its kernel and input", unit.id));
    }
    if (m > 0) {
      std::string why;
      if (!same_epilogue(*ir, graph.unit(units[0]), unit, &why)) return fail(why);
    }
    ConvGeometry g;
    g.conv = attrs;
    g.input_hw = {in.shape[2], in.shape[3]};
    g.output_hw = {out.shape[2], out.shape[3]};
    geometry.push_back(g);
    MergeMember member;
    member.unit = units[m];
    member.out_channels = w.shape[0];
    member.channel_offset = spec.out_channels;
    spec.out_channels += w.shape[0];
    spec.in_channels = in.shape[1];
    spec.members.push_back(member);
  }
  MergeGeometryResult merged = merge_geometry(geometry);
  if (!merged.merged) return fail(merged.reason);
  spec.conv = merged.merged->conv;
  for (size_t m = 0; m < spec.members.size(); ++m) {
    spec.members[m].kernel_offset = merged.merged->kernel_offsets[m];
  }
  check.spec = std::move(spec);
  return check;
}

MergedWeights assemble_merged_weights(const UnitGraph& graph, const MergeSpec& spec) {
  const ir::Graph* ir = graph.ir();
  IOS_ASSERT(ir != nullptr, "merged weights need the IR graph");
  const int64_t out_c = spec.out_channels;
  const int64_t in_c = spec.in_channels;
  const int64_t kh = spec.conv.kernel[0];
  const int64_t kw = spec.conv.kernel[1];
  MergedWeights merged;
  merged.weight.assign(static_cast<size_t>(out_c * in_c * kh * kw), 0.0f);
  merged.bias.assign(static_cast<size_t>(out_c), 0.0f);
  for (const MergeMember& member : spec.members) {
    const ir::Node& conv = ir->node(graph.unit(member.unit).anchor);
    const ir::Tensor& w = ir->tensor(conv.inputs.at(1));
    IOS_ASSERT(w.data && w.shape.size() == 4 && w.shape[0] == member.out_channels &&
                   w.shape[1] == in_c,
               "weights of unit {} do not match the merge spec", member.unit);
    const int64_t mh = w.shape[2];
    const int64_t mw = w.shape[3];
    const int64_t oh = member.kernel_offset[0];
    const int64_t ow = member.kernel_offset[1];
    IOS_ASSERT(oh >= 0 && ow >= 0 && oh + mh <= kh && ow + mw <= kw,
               "kernel of unit {} does not fit the merged kernel", member.unit);
    const std::vector<float>& src = *w.data;
    for (int64_t o = 0; o < member.out_channels; ++o) {
      for (int64_t c = 0; c < in_c; ++c) {
        for (int64_t i = 0; i < mh; ++i) {
          for (int64_t j = 0; j < mw; ++j) {
            const size_t from = static_cast<size_t>(((o * in_c + c) * mh + i) * mw + j);
            const size_t to = static_cast<size_t>(
                (((member.channel_offset + o) * in_c + c) * kh + (oh + i)) * kw + (ow + j));
            merged.weight[to] = src[from];
          }
        }
      }
    }
    if (conv.inputs.size() > 2 && conv.inputs[2] != ir::kNone) {
      const ir::Tensor& b = ir->tensor(conv.inputs[2]);
      IOS_ASSERT(b.data && static_cast<int64_t>(b.data->size()) == member.out_channels,
                 "bias of unit {} does not match its output channels", member.unit);
      std::copy(b.data->begin(), b.data->end(),
                merged.bias.begin() + static_cast<std::ptrdiff_t>(member.channel_offset));
    }
  }
  return merged;
}

}  // namespace ios::sched
