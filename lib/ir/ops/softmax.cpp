// Softmax and LogSoftmax over one axis.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_softmax(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t opset = r.opset();
  const int64_t axis = normalize_axis(r, r.get_int("axis", opset < 13 ? 1 : -1), rank);
  // Before opset 13, Softmax flattens the axes from `axis` on into one.
  for (int64_t d = axis + 1; opset < 13 && d < rank; ++d) {
    if (x[static_cast<size_t>(d)] != 1) {
      r.fail(
          "{}-{} normalizes over axes {}.. flattened; ios supports one axis (re-export with "
          "opset 13)",
          r.op_type(), opset, axis);
    }
  }
  return AxisAttrs{axis};
}

Shapes softmax_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size());
  return {in[0]};
}

}  // namespace

OpInfo softmax_op() {
  // FLOPs per output: max, subtract, exp, sum, divide.
  return work(
      op(OpKind::kSoftmax, "Softmax", 1, parse_softmax, softmax_shapes, anchor(OpClass::kSoftmax)),
      5);
}

OpInfo log_softmax_op() {
  // FLOPs per output: Softmax's, the log instead of the divide.
  return work(op(OpKind::kLogSoftmax, "LogSoftmax", 1, parse_softmax, softmax_shapes,
                 anchor(OpClass::kSoftmax)),
              5);
}

}  // namespace ios::ir::ops
