// BatchNormalization where no convolution precedes it (otherwise import folds it): an
// element-wise operator of five inputs.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_batch_norm(const AttributeReader& r, const Shapes&) {
  if (r.get_int("training_mode", 0) != 0)
    r.fail("training_mode BatchNormalization is not supported");
  only_first_output(r);
  return BatchNormAttrs{r.get_float("epsilon", 1e-5f)};
}

Shapes batch_norm_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 5, 5);
  if (in[0].size() < 2) fail(node, in, "input must have rank >= 2");
  for (size_t i = 1; i < 5; ++i) {
    if (in[i] != Shape{in[0][1]}) fail(node, in, "parameter {} must have shape {}", i, in[0][1]);
  }
  return {in[0]};
}

}  // namespace

OpInfo batch_norm_op() {
  return work(inputs(op(OpKind::kBatchNorm, "BatchNormalization", 7, parse_batch_norm,
                        batch_norm_shapes, unary()),
                     five, 5),
              2);
}

}  // namespace ios::ir::ops
