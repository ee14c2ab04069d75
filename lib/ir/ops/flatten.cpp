// Flatten to 2-D: a view of its input.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_flatten(const AttributeReader& r, const Shapes& in) {
  const auto rank = static_cast<int64_t>(in.at(0).size());
  int64_t axis = r.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) r.fail("axis out of range for rank {}", rank);
  return AxisAttrs{axis};
}

Shapes flatten_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto axis = checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size(), true);
  const Shape head(in[0].begin(), in[0].begin() + axis), tail(in[0].begin() + axis, in[0].end());
  return {Shape{num_elements(head), num_elements(tail)}};
}

}  // namespace

OpInfo flatten_op() {
  return op(OpKind::kFlatten, "Flatten", 1, parse_flatten, flatten_shapes,
            as_view(anchor(OpClass::kLayout)));
}

}  // namespace ios::ir::ops
