// Concat along any axis; producers write straight into the output.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_concat(const AttributeReader& r, const Shapes& in) {
  return AxisAttrs{normalize_axis(r, r.get_int("axis", 0), static_cast<int64_t>(in.at(0).size()))};
}

Shape concat_one(const Node& node, const std::vector<Shape>& in) {
  if (in.empty()) fail(node, in, "has no inputs");
  const auto axis =
      static_cast<size_t>(checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size()));
  Shape out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != out.size()) fail(node, in, "inputs have different ranks");
    for (size_t d = 0; d < out.size(); ++d) {
      if (d == axis) continue;
      if (in[i][d] != out[d]) fail(node, in, "inputs differ on axis {} (not the concat axis)", d);
    }
    out[axis] += in[i][axis];
  }
  return out;
}

Shapes concat_shapes(const Node& node, const Shapes& in) { return {concat_one(node, in)}; }

}  // namespace

OpInfo concat_op() {
  return inputs(op(OpKind::kConcat, "Concat", 4, parse_concat, concat_shapes,
                   as_zero_copy(anchor(OpClass::kConcat))),
                all);
}

}  // namespace ios::ir::ops
