// ReduceMean over any axes (attribute before opset 18, input from 18).
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_reduce_mean(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  ReduceAttrs a;
  std::vector<int64_t> axes = r.get_ints("axes").value_or(std::vector<int64_t>{});
  if (r.opset() >= 18) {
    if (auto v = r.constant_ints(1, "reduction axes")) axes = *v;
  }
  for (int64_t& axis : axes) axis = normalize_axis(r, axis, static_cast<int64_t>(x.size()));
  std::sort(axes.begin(), axes.end());
  // Trailing axes are what a layer normalization written out in primitive
  // operators reduces (ir/passes.h fuses it; unfused it runs as it is).
  const bool trailing = !axes.empty() && axes.back() == static_cast<int64_t>(x.size()) - 1 &&
                        axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (!trailing && (x.size() != 4 || axes != std::vector<int64_t>{2, 3})) {
    r.fail(
        "ReduceMean is supported over H and W (axes [2, 3]) of a 4-D tensor or over trailing "
        "axes only; this one reduces axes [{}] of shape {}",
        fmt::join(axes, ", "), to_string(x));
  }
  a.axes = axes;
  a.keepdims = r.get_int("keepdims", 1) != 0;
  return a;
}

Shape reduce_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<ReduceAttrs>();
  std::vector<bool> reduced(in[0].size(), false);
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

}  // namespace

OpInfo reduce_mean_op() {
  return work(op(OpKind::kReduceMean, "ReduceMean", 1, parse_reduce_mean, reduce_shapes,
                 anchor(OpClass::kPool)),
              0, mean_flops, mean_reduction);
}

}  // namespace ios::ir::ops
