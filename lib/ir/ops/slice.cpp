// Slice with constant starts, ends, axes and steps.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_slice(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (r.opset() < 10) {
    starts = r.get_ints("starts").value_or(std::vector<int64_t>{});
    ends = r.get_ints("ends").value_or(std::vector<int64_t>{});
    axes = r.get_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = r.constant_ints(1, "slice starts").value();
    ends = r.constant_ints(2, "slice ends").value();
    if (auto v = r.constant_ints(3, "slice axes")) axes = *v;
    if (auto v = r.constant_ints(4, "slice steps")) steps = *v;
  }
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    r.fail("starts, ends, axes and steps have different lengths");
  }
  // Clamp as ONNX specifies: positive steps to [0, dim], negative steps
  // to [0, dim - 1] for starts and [-1, dim - 1] for ends.
  SliceAttrs a;
  const auto rank = static_cast<int64_t>(x.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t axis = normalize_axis(r, axes[k], rank);
    if (std::find(a.axes.begin(), a.axes.end(), axis) != a.axes.end())
      r.fail("axis {} sliced twice", axis);
    const int64_t dim = x[static_cast<size_t>(axis)];
    const int64_t step = steps[k];
    if (step == 0) r.fail("slice step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    a.axes.push_back(axis);
    a.starts.push_back(s);
    a.ends.push_back(e);
    a.steps.push_back(step);
  }
  return a;
}

Shape slice_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<SliceAttrs>();
  const size_t n = a.axes.size();
  if (a.starts.size() != n || a.ends.size() != n || a.steps.size() != n) {
    fail(node, in, "axes, starts, ends and steps have different lengths");
  }
  Shape out = in[0];
  for (size_t i = 0; i < n; ++i) {
    const auto axis = static_cast<size_t>(checked_axis(node, in, a.axes[i], out.size()));
    const int64_t dim = in[0][axis];
    const int64_t start = a.starts[i], end = a.ends[i], step = a.steps[i];
    int64_t len = 0;
    if (step > 0) {
      if (start < 0 || start > dim || end < 0 || end > dim) fail(node, in, "slice not normalized");
      len = end > start ? (end - start + step - 1) / step : 0;
    } else if (step < 0) {
      if (start < 0 || start > dim - 1 || end < -1 || end > dim - 1)
        fail(node, in, "slice not normalized");
      len = start > end ? (start - end - step - 1) / -step : 0;
    } else {
      fail(node, in, "slice step 0");
    }
    out[axis] = len;
  }
  return out;
}

Shapes slice_shapes(const Node& node, const Shapes& in) { return {slice_one(node, in)}; }

}  // namespace

OpInfo slice_op() {
  return op(OpKind::kSlice, "Slice", 1, parse_slice, slice_shapes, anchor(OpClass::kLayout));
}

}  // namespace ios::ir::ops
