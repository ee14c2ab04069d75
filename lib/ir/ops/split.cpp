// Split along one axis into every output (sizes from the attribute, the input or num_outputs).
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_split(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  SplitAttrs a;
  const auto rank = static_cast<int64_t>(x.size());
  a.axis = normalize_axis(r, r.get_int("axis", 0), rank);
  std::optional<std::vector<int64_t>> sizes;
  if (r.opset() < 13) {
    sizes = r.get_ints("split");
  } else if (auto v = r.constant_ints(1, "split sizes")) {
    sizes = std::move(v);
  }
  const int64_t dim = x[static_cast<size_t>(a.axis)];
  const auto parts = static_cast<int64_t>(r.num_outputs());
  if (sizes) {
    a.sizes = *sizes;
  } else {
    if (dim % parts != 0) r.fail("cannot split {} evenly into {} outputs", dim, parts);
    a.sizes.assign(static_cast<size_t>(parts), dim / parts);
  }
  return a;
}

std::vector<Shape> split_all(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<SplitAttrs>();
  const auto axis = static_cast<size_t>(checked_axis(node, in, a.axis, in[0].size()));
  if (a.sizes.size() != node.outputs.size()) {
    fail(node, in, "has {} split sizes for {} outputs", a.sizes.size(), node.outputs.size());
  }
  const int64_t total = std::accumulate(a.sizes.begin(), a.sizes.end(), int64_t{0});
  if (total != in[0][axis] ||
      std::any_of(a.sizes.begin(), a.sizes.end(), [](int64_t s) { return s < 0; })) {
    fail(node, in, "split sizes sum to {}, axis {} has {}", total, axis, in[0][axis]);
  }
  std::vector<Shape> out;
  for (int64_t s : a.sizes) {
    Shape piece = in[0];
    piece[axis] = s;
    out.push_back(piece);
  }
  return out;
}

Shapes split_shapes(const Node& node, const Shapes& in) { return split_all(node, in); }

}  // namespace

OpInfo split_op() {
  return every_output(
      op(OpKind::kSplit, "Split", 2, parse_split, split_shapes, anchor(OpClass::kLayout)));
}

}  // namespace ios::ir::ops
