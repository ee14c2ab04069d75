// LayerNormalization (opset 17+): constant Scale and B that broadcast to the normalized
// dims, statistics in float32 (stash_type 1). Mean, variance, then normalize, scale
// and shift: about 8 FLOPs per element.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <cmath>

#include "ir/broadcast.h"
#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_layer_norm(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) {
    r.fail("input X is a scalar; LayerNormalization normalizes a tensor of rank 1 or more");
  }
  LayerNormAttrs a;
  a.axis = normalize_axis(r, r.get_int("axis", -1), rank);
  a.epsilon = r.get_float("epsilon", 1e-5f);
  if (!std::isfinite(a.epsilon) || a.epsilon < 0.0f) {
    r.fail("epsilon {} is not a finite number >= 0", a.epsilon);
  }
  // stash_type 1 computes mean and variance in float32, as ios's kernels do
  // (or better); another type would ask for other rounding.
  const int64_t stash_type = r.get_int("stash_type", 1);
  if (stash_type != 1) {
    r.fail("stash_type {} is not supported (only 1, float32 statistics)", stash_type);
  }
  const Shape dims = a.normalized_dims(x);
  const char* names[] = {"X", "Scale", "B"};
  for (int i = 1; i < 3 && static_cast<size_t>(i) < in.size(); ++i) {
    if (!r.input_is_constant(i)) {
      r.fail(
          "input {} ({}) is computed at run time; ios supports LayerNormalization with "
          "constant Scale and B only",
          i, names[i]);
    }
    if (!broadcasts_to(in[static_cast<size_t>(i)], dims)) {
      r.fail(
          "input {} ({}) has shape {}, which does not broadcast to the normalized dims {} "
          "(axis {} of {})",
          i, names[i], to_string(in[static_cast<size_t>(i)]), to_string(dims), a.axis,
          to_string(x));
    }
  }
  return a;
}

Shapes layer_norm_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 2, 3);
  const auto& attrs = node.attr<LayerNormAttrs>();
  checked_axis(node, in, attrs.axis, in[0].size());
  const Shape dims = attrs.normalized_dims(in[0]);
  for (size_t i = 1; i < in.size(); ++i) {
    if (!broadcasts_to(in[i], dims)) {
      fail(node, in, "input {} does not broadcast to the normalized dims {}", i, to_string(dims));
    }
  }
  return {in[0]};
}

}  // namespace

OpInfo layer_norm_op() {
  return work(inputs(op(OpKind::kLayerNorm, "LayerNormalization", 17, parse_layer_norm,
                        layer_norm_shapes, anchor(OpClass::kPool)),
                     up_to_three),
              8);
}

}  // namespace ios::ir::ops
