// Reductions over any axes: ReduceMean, ReduceSum, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp (axes an
// attribute, ReduceSum's an input from opset 13, the others' from 18, which
// onnx/opset_adapter.h rewrites to the attribute).
//
// Their entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_reduce(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  ReduceAttrs a;
  std::vector<int64_t> axes = r.get_ints("axes").value_or(std::vector<int64_t>{});
  const bool axes_input = r.op_type() == "ReduceSum" ? r.opset() >= 13 : r.opset() >= 18;
  if (axes_input) {
    if (r.has("axes")) r.fail("has an axes attribute; from opset {} the axes are input 1", r.opset());
    if (auto v = r.constant_ints(1, "reduction axes")) axes = *v;
    if (axes.empty() && r.get_int("noop_with_empty_axes", 0) != 0) {
      r.fail("noop_with_empty_axes = 1 without axes (the input unchanged) is not supported; remove the node");
    }
  }
  for (int64_t& axis : axes) axis = normalize_axis(r, axis, static_cast<int64_t>(x.size()));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    r.fail("reduces axes [{}] of shape {}: an axis is listed twice", fmt::join(axes, ", "), to_string(x));
  }
  a.axes = axes;
  a.keepdims = r.get_int("keepdims", 1) != 0;
  return a;
}

Shape reduce_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<ReduceAttrs>();
  std::vector<bool> reduced(in[0].size(), a.axes.empty());  // no axes: every axis
  for (int64_t axis : a.axes)
    reduced[static_cast<size_t>(checked_axis(node, in, axis, in[0].size()))] = true;
  Shape out;
  for (size_t d = 0; d < in[0].size(); ++d) {
    if (!reduced[d]) {
      out.push_back(in[0][d]);
    } else if (a.keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

Shapes reduce_shapes(const Node& node, const Shapes& in) { return {reduce_one(node, in)}; }

// A reduction is a pool-like unit: one output per window of input elements,
// then element-wise epilogues (unit formation rule 1). One FLOP per input
// element (mean_flops), the input elements per output as the reduction.
OpInfo reduction(OpKind kind, std::string_view name) {
  return work(op(kind, name, 1, parse_reduce, reduce_shapes, anchor(OpClass::kPool)), 0, mean_flops,
              mean_reduction);
}

}  // namespace

OpInfo reduce_mean_op() { return reduction(OpKind::kReduceMean, "ReduceMean"); }
OpInfo reduce_sum_op() { return reduction(OpKind::kReduceSum, "ReduceSum"); }
OpInfo reduce_max_op() { return reduction(OpKind::kReduceMax, "ReduceMax"); }
OpInfo reduce_min_op() { return reduction(OpKind::kReduceMin, "ReduceMin"); }
OpInfo reduce_prod_op() { return reduction(OpKind::kReduceProd, "ReduceProd"); }
OpInfo reduce_l1_op() { return reduction(OpKind::kReduceL1, "ReduceL1"); }
OpInfo reduce_l2_op() { return reduction(OpKind::kReduceL2, "ReduceL2"); }
OpInfo reduce_sum_square_op() { return reduction(OpKind::kReduceSumSquare, "ReduceSumSquare"); }
OpInfo reduce_log_sum_exp_op() { return reduction(OpKind::kReduceLogSumExp, "ReduceLogSumExp"); }

}  // namespace ios::ir::ops
