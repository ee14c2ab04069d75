// Operator merge legality and weight assembly (sched/merge.h), for
// convolutions and for matrix products with constant weights. The padding
// arithmetic of merged convolutions is in merge_geometry.cpp.
#include "sched/merge.h"

#include "ir/window.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "ir/op_info.h"
#include "ir/window.h"
#include "sched/fused_epilogue.h"
#include "sched/merge_geometry.h"

namespace ios::sched {

namespace {

MergeCheck fail(std::string why) {
  MergeCheck check;
  check.reason = std::move(why);
  return check;
}

// Convolutions: the padded-kernel merge (units are valid ids, >= 2, distinct).
MergeCheck check_conv_merge(const UnitGraph& graph, const std::vector<UnitId>& units) {
  const ir::Graph* ir = graph.ir();
  MergeCheck check;
  std::vector<ConvGeometry> geometry;
  MergeSpec spec;
  spec.kind = MergeKind::kConv;
  for (size_t m = 0; m < units.size(); ++m) {
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
    const size_t rank = attrs.spatial_rank() + 2;
    if (!w.is_constant() || !constant_bias || w.shape.size() != rank || in.shape.size() != rank ||
        out.shape.size() != rank) {
      return fail(fmt::format(
          "convolution of unit '{}' is not a convolution with constant weights and bias", unit.id));
    }
    if (m > 0 && attrs.spatial_rank() != geometry.front().conv.spatial_rank()) {
      return fail(fmt::format("unit '{}' is a {}-D convolution, unit '{}' a {}-D one", unit.id,
                              attrs.spatial_rank(), graph.unit(units[0]).id,
                              geometry.front().conv.spatial_rank()));
    }
    if (attrs.group != 1) {
      return fail(fmt::format("unit '{}' is a grouped convolution (group = {})", unit.id, attrs.group));
    }
    if (ir::Dims(w.shape.begin() + 2, w.shape.end()) != attrs.kernel || w.shape[1] != in.shape[1]) {
      return fail(fmt::format("weights of unit '{}' do not match its kernel and input", unit.id));
    }
    if (m > 0) {
      std::string why;
      if (!same_epilogue(*ir, graph.unit(units[0]), unit, &why)) return fail(why);
    }
    ConvGeometry g;
    g.conv = attrs;
    g.input_spatial.assign(in.shape.begin() + 2, in.shape.end());
    g.output_spatial.assign(out.shape.begin() + 2, out.shape.end());
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

// The Gemm attributes a merged product can reproduce: op(A) = A, a plain sum
// with C, and C a row vector broadcast over the rows.
std::string gemm_unmergeable(const ir::Graph& ir, const ir::Node& gemm) {
  const auto& a = gemm.attr<ir::GemmAttrs>();
  if (a.trans_a) return "transA = 1";
  if (a.alpha != 1.0f) return fmt::format("alpha = {}", a.alpha);
  const bool has_c = gemm.inputs.size() > 2 && gemm.inputs[2] != ir::kNone;
  if (!has_c) return {};
  if (a.beta != 1.0f) return fmt::format("beta = {}", a.beta);
  const ir::Tensor& c = ir.tensor(gemm.inputs[2]);
  if (!c.is_constant()) return "a C that is not a constant";
  const ir::Tensor& y = ir.tensor(gemm.outputs.at(0));
  const int64_t n = y.shape.back();
  const bool row = (c.shape.size() == 1 && c.shape[0] == n) ||
                   (c.shape.size() == 2 && c.shape[0] == 1 && c.shape[1] == n);
  if (!row)
    return fmt::format("C of shape {} (a merge needs [{}] or [1, {}])", ir::to_string(c.shape), n,
                       n);
  return {};
}

// Matrix products with constant weights (units are valid ids, >= 2, distinct).
MergeCheck check_matmul_merge(const UnitGraph& graph, const std::vector<UnitId>& units) {
  const ir::Graph& ir = *graph.ir();
  MergeSpec spec;
  spec.kind = MergeKind::kMatMul;
  ir::Shape leading;  // A's shape without its last axis
  for (size_t m = 0; m < units.size(); ++m) {
    const Unit& unit = graph.unit(units[m]);
    const bool product = unit.kind == UnitKind::kMatMul && unit.anchor != ir::kNone &&
                         (ir.node(unit.anchor).op == ir::OpKind::kMatMul ||
                          ir.node(unit.anchor).op == ir::OpKind::kGemm);
    if (!product) {
      return fail(fmt::format("unit '{}' is a {} unit, not a MatMul or Gemm", unit.id,
                              unit_kind_name(unit.kind)));
    }
    if (unit.nodes.empty() || unit.nodes.front() != unit.anchor) {
      return fail(fmt::format("unit '{}' has fused work before its {}", unit.id,
                              ir::op_name(ir.node(unit.anchor).op)));
    }
    for (size_t i = 1; i < unit.nodes.size(); ++i) {
      const ir::Node& e = ir.node(unit.nodes[i]);
      if (!ir::is_elementwise(e.op)) {
        return fail(
            fmt::format("unit '{}' fuses a {} after its product; only element-wise "
                        "epilogues run on a member's columns",
                        unit.id, ir::op_name(e.op)));
      }
    }
    const ir::Node& node = ir.node(unit.anchor);
    if (node.inputs.size() < 2)
      return fail(fmt::format("{} of unit '{}' has no weights", ir::op_name(node.op), unit.id));
    const ir::TensorId x = node.inputs[0];
    const ir::Tensor& a = ir.tensor(x);
    const ir::Tensor& w = ir.tensor(node.inputs[1]);
    const ir::Tensor& y = ir.tensor(node.outputs.at(0));
    if (m == 0) {
      spec.input = x;
    } else if (x != spec.input) {
      return fail(fmt::format("units '{}' and '{}' read different tensors ('{}' and '{}')",
                              graph.unit(units[0]).id, unit.id, ir.tensor(spec.input).name,
                              a.name));
    }
    if (a.is_constant()) {
      return fail(fmt::format("{} of unit '{}' multiplies a constant '{}', not an activation",
                              ir::op_name(node.op), unit.id, a.name));
    }
    if (!w.is_constant()) {
      return fail(fmt::format("{} of unit '{}' has weights '{}' that are not constant",
                              ir::op_name(node.op), unit.id, w.name));
    }
    if (a.shape.size() < 2) {
      return fail(fmt::format("{} of unit '{}' has a {}-D input '{}'; a merge needs rank >= 2",
                              ir::op_name(node.op), unit.id, a.shape.size(), a.name));
    }
    if (w.shape.size() != 2) {
      return fail(fmt::format(
          "{} of unit '{}' has {}-D weights '{}' {}; a merge needs 2-D weights (no broadcast "
          "batch)",
          ir::op_name(node.op), unit.id, w.shape.size(), w.name, ir::to_string(w.shape)));
    }
    bool trans_b = false;
    if (node.op == ir::OpKind::kGemm) {
      const std::string why = gemm_unmergeable(ir, node);
      if (!why.empty()) return fail(fmt::format("Gemm of unit '{}' has {}", unit.id, why));
      trans_b = node.attr<ir::GemmAttrs>().trans_b;
    }
    const int64_t k = trans_b ? w.shape[1] : w.shape[0];
    const int64_t n = trans_b ? w.shape[0] : w.shape[1];
    const ir::Shape lead(a.shape.begin(), a.shape.end() - 1);
    ir::Shape expected = lead;
    expected.push_back(n);
    if (k != a.shape.back() || y.shape != expected) {
      return fail(fmt::format(
          "{} of unit '{}' maps {} with weights {} to {}, not a product over the last axis",
          ir::op_name(node.op), unit.id, ir::to_string(a.shape), ir::to_string(w.shape),
          ir::to_string(y.shape)));
    }
    if (m == 0) {
      leading = lead;
      spec.in_channels = k;
    }
    MergeMember member;
    member.unit = units[m];
    member.out_channels = n;
    member.channel_offset = spec.out_channels;
    spec.out_channels += n;
    spec.members.push_back(member);
  }
  spec.rows = ir::num_elements(leading);
  MergeCheck check;
  check.spec = std::move(spec);
  return check;
}

bool is_product(const ir::Graph& ir, const Unit& unit) {
  return unit.kind == UnitKind::kMatMul ||
         (unit.anchor != ir::kNone && (ir.node(unit.anchor).op == ir::OpKind::kMatMul ||
                                       ir.node(unit.anchor).op == ir::OpKind::kGemm));
}

}  // namespace

ir::Shape MergeSpec::output_shape(const ir::Shape& member_output) const {
  ir::Shape shape = member_output;
  IOS_ASSERT(shape.size() >= 2, "merged output of rank {}", shape.size());
  if (kind == MergeKind::kConv) {
    shape[1] = out_channels;
  } else {
    shape.back() = out_channels;
  }
  return shape;
}

MergeCheck check_merge(const UnitGraph& graph, const std::vector<UnitId>& units) {
  if (units.size() < 2) return fail("a merge needs at least two units");
  const ir::Graph* ir = graph.ir();
  if (ir == nullptr) return fail("the unit graph has no IR graph behind it");
  for (UnitId u : units) {
    if (u < 0 || u >= graph.size()) return fail(fmt::format("no unit {}", u));
  }
  {
    std::vector<UnitId> sorted = units;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return fail("a unit appears twice in the merge");
    }
  }
  const Unit& first = graph.unit(units[0]);
  // One kernel writes every member's output: they must share an element type.
  for (UnitId u : units) {
    const Unit& unit = graph.unit(u);
    if (unit.anchor == ir::kNone || first.anchor == ir::kNone) break;
    const ir::ElementType a = ir->tensor(ir->node(first.anchor).outputs.at(0)).type;
    const ir::ElementType b = ir->tensor(ir->node(unit.anchor).outputs.at(0)).type;
    if (a != b) {
      return fail(fmt::format("units '{}' and '{}' compute in different element types ({} and {})",
                              first.id, unit.id, ir::type_name(a), ir::type_name(b)));
    }
  }
  const bool products = is_product(*ir, first);
  for (UnitId u : units) {
    const Unit& unit = graph.unit(u);
    const bool conv = unit.kind == UnitKind::kConv;
    if ((products && conv) ||
        (!products && first.kind == UnitKind::kConv && is_product(*ir, unit))) {
      const Unit& c = conv ? unit : first;
      const Unit& p = conv ? first : unit;
      return fail(
          fmt::format("unit '{}' is a convolution and unit '{}' a matrix product; only "
                      "convolutions merge with convolutions and products with products",
                      c.id, p.id));
    }
  }
  return products ? check_matmul_merge(graph, units) : check_conv_merge(graph, units);
}

namespace {

// [K, sum N_i]: member i's weights in columns [off_i, off_i + N_i) (a
// transB Gemm weight [N_i, K] transposed); its Gemm C as the bias there.
MergedWeights assemble_matmul_weights(const UnitGraph& graph, const MergeSpec& spec) {
  const ir::Graph& ir = *graph.ir();
  const int64_t k = spec.in_channels;
  const int64_t total = spec.out_channels;
  MergedWeights merged;
  merged.weight.assign(static_cast<size_t>(k * total), 0.0f);
  merged.bias.assign(static_cast<size_t>(total), 0.0f);
  for (const MergeMember& member : spec.members) {
    const ir::Node& node = ir.node(graph.unit(member.unit).anchor);
    const ir::Tensor& w = ir.tensor(node.inputs.at(1));
    const bool trans_b = node.op == ir::OpKind::kGemm && node.attr<ir::GemmAttrs>().trans_b;
    const int64_t n = member.out_channels;
    IOS_ASSERT(w.data && w.shape.size() == 2 && ir::num_elements(w.shape) == k * n,
               "weights of unit {} do not match the merge spec", member.unit);
    const std::vector<float>& src = *w.data;
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        const size_t from = static_cast<size_t>(trans_b ? c * k + r : r * n + c);
        merged.weight[static_cast<size_t>(r * total + member.channel_offset + c)] = src[from];
      }
    }
    if (node.op == ir::OpKind::kGemm && node.inputs.size() > 2 && node.inputs[2] != ir::kNone) {
      const ir::Tensor& b = ir.tensor(node.inputs[2]);
      IOS_ASSERT(b.data && static_cast<int64_t>(b.data->size()) == n,
                 "C of unit {} does not match its columns", member.unit);
      std::copy(b.data->begin(), b.data->end(),
                merged.bias.begin() + static_cast<std::ptrdiff_t>(member.channel_offset));
    }
  }
  return merged;
}

}  // namespace

MergedWeights assemble_merged_weights(const UnitGraph& graph, const MergeSpec& spec) {
  const ir::Graph* ir = graph.ir();
  IOS_ASSERT(ir != nullptr, "merged weights need the IR graph");
  if (spec.kind == MergeKind::kMatMul) return assemble_matmul_weights(graph, spec);
  const int64_t out_c = spec.out_channels;
  const int64_t in_c = spec.in_channels;
  // On T, H, W (ir/window.h): a 1-D or 2-D kernel has leading axes of 1.
  const ir::Axes3 k = ir::axes3(spec.conv.kernel, 1);
  const int64_t volume = ir::Window3::volume(k);
  MergedWeights merged;
  merged.weight.assign(static_cast<size_t>(out_c * in_c * volume), 0.0f);
  merged.bias.assign(static_cast<size_t>(out_c), 0.0f);
  for (const MergeMember& member : spec.members) {
    const ir::Node& conv = ir->node(graph.unit(member.unit).anchor);
    const ir::Tensor& w = ir->tensor(conv.inputs.at(1));
    IOS_ASSERT(w.data && w.shape.size() == spec.conv.spatial_rank() + 2 &&
                   w.shape[0] == member.out_channels && w.shape[1] == in_c,
               "weights of unit {} do not match the merge spec", member.unit);
    const ir::Axes3 mk = ir::spatial3(w.shape);
    const ir::Axes3 off = ir::axes3(member.kernel_offset, 0);
    for (size_t d = 0; d < 3; ++d) {
      IOS_ASSERT(off[d] >= 0 && off[d] + mk[d] <= k[d],
                 "kernel of unit {} does not fit the merged kernel", member.unit);
    }
    const std::vector<float>& src = *w.data;
    size_t from = 0;
    for (int64_t o = 0; o < member.out_channels; ++o) {
      for (int64_t c = 0; c < in_c; ++c) {
        const int64_t base = ((member.channel_offset + o) * in_c + c) * volume;
        for (int64_t t = 0; t < mk[0]; ++t) {
          for (int64_t i = 0; i < mk[1]; ++i) {
            for (int64_t j = 0; j < mk[2]; ++j) {
              const int64_t to = base + ((off[0] + t) * k[1] + (off[1] + i)) * k[2] + (off[2] + j);
              merged.weight[static_cast<size_t>(to)] = src[from++];
            }
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
