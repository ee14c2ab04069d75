// Reshape to a constant shape (0 and -1 resolved at import): a view of its input.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_reshape(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto shape_input = r.constant_ints(1, "target shape");
  if (!shape_input) r.fail("has no target shape input (Reshape before opset 5 is not supported)");
  const std::vector<int64_t>& target = *shape_input;
  const bool allow_zero = r.get_int("allowzero", 0) != 0;
  ReshapeAttrs a;
  int64_t known = 1;
  std::optional<size_t> infer_at;
  for (size_t d = 0; d < target.size(); ++d) {
    int64_t v = target[d];
    if (v == 0 && !allow_zero) {
      if (d >= x.size()) r.fail("target copies dimension {} that the input lacks", d);
      v = x[d];
    }
    if (v == -1) {
      if (infer_at) r.fail("target has two -1 entries");
      infer_at = d;
      v = 1;
    } else if (v < 0) {
      r.fail("target has a negative entry {}", v);
    } else if (__builtin_mul_overflow(known, v, &known)) {
      // The target comes from the file: its product must not wrap.
      r.fail("target [{}] has more elements than int64 can count", fmt::join(target, ", "));
    }
    a.shape.push_back(v);
  }
  const int64_t total = num_elements(x);
  if (infer_at) {
    if (known == 0 || total % known != 0)
      r.fail("cannot reshape {} to [{}]", to_string(x), fmt::join(target, ", "));
    a.shape[*infer_at] = total / known;
  }
  return a;
}

Shapes reshape_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const Shape& target = node.attr<ReshapeAttrs>().shape;
  if (std::any_of(target.begin(), target.end(), [](int64_t d) { return d < 0; }) ||
      num_elements(target) != num_elements(in[0])) {
    fail(node, in, "cannot reshape to {}", to_string(target));
  }
  return {target};
}

}  // namespace

OpInfo reshape_op() {
  return op(OpKind::kReshape, "Reshape", 5, parse_reshape, reshape_shapes,
            as_view(anchor(OpClass::kLayout)));
}

}  // namespace ios::ir::ops
