// The element-wise operators. Their math is ir/elementwise.h, shared by both
// backends and by constant folding; here are their entries in the operator
// table (ir/op_info.h): ONNX names, attribute parsers, traits and work
// (docs/architecture.md, "Adding an operator").

#include <string>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_clip(const AttributeReader& r, const Shapes&) {
  ClipAttrs a;
  if (r.opset() < 11) {
    a.min = r.get_float("min", a.min);
    a.max = r.get_float("max", a.max);
    return a;
  }
  if (auto v = r.constant_values(1, "min bound")) {
    if (v->size() != 1) r.fail("the min bound must have exactly one element");
    a.min = static_cast<float>((*v)[0]);
  }
  if (auto v = r.constant_values(2, "max bound")) {
    if (v->size() != 1) r.fail("the max bound must have exactly one element");
    a.max = static_cast<float>((*v)[0]);
  }
  return a;
}

Attrs parse_hard_sigmoid(const AttributeReader& r, const Shapes&) {
  return HardSigmoidAttrs{r.get_float("alpha", 0.2f), r.get_float("beta", 0.5f)};
}

Attrs parse_pow_exponent(const AttributeReader& r, const Shapes&) {
  // The backends fuse Pow as a step with a constant operand (x^c); a run-time
  // exponent would be a second activation the kernels do not raise to.
  if (!r.input_is_constant(1)) {
    r.fail(
        "the exponent (input 1) is computed at run time; ios supports Pow with a constant exponent "
        "only");
  }
  return std::monostate{};
}

Attrs parse_gelu(const AttributeReader& r, const Shapes&) {
  const std::string approximate = r.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    r.fail("Gelu approximate '{}' is not supported; use 'none' or 'tanh'", approximate);
  }
  return GeluAttrs{approximate == "tanh"};
}

}  // namespace

OpInfo relu_op() {
  return work(op(OpKind::kRelu, "Relu", 6, nullptr, same_as_input, with_prologue(unary())), 1);
}

OpInfo clip_op() {
  return work(op(OpKind::kClip, "Clip", 6, parse_clip, same_as_input, unary()), 2);
}

OpInfo sigmoid_op() {
  // FLOPs per output: exp, add, divide, negate.
  return work(op(OpKind::kSigmoid, "Sigmoid", 6, nullptr, same_as_input, unary()), 4);
}

OpInfo hard_sigmoid_op() {
  return work(
      op(OpKind::kHardSigmoid, "HardSigmoid", 6, parse_hard_sigmoid, same_as_input, unary()), 3);
}

OpInfo hard_swish_op() {
  return work(op(OpKind::kHardSwish, "HardSwish", 14, nullptr, same_as_input, unary()), 5);
}

OpInfo add_op() {
  return work(inputs(op(OpKind::kAdd, "Add", 7, nullptr, broadcast, binary()), two), 1);
}

OpInfo mul_op() {
  return work(inputs(op(OpKind::kMul, "Mul", 7, nullptr, broadcast, binary()), two), 1);
}

OpInfo tanh_op() {
  // FLOPs per output: like Sigmoid, plus a scale.
  return work(op(OpKind::kTanh, "Tanh", 6, nullptr, same_as_input, unary()), 5);
}

OpInfo sub_op() {
  return work(inputs(op(OpKind::kSub, "Sub", 7, nullptr, broadcast, binary()), two), 1);
}

OpInfo div_op() {
  return work(inputs(op(OpKind::kDiv, "Div", 7, nullptr, broadcast, binary()), two), 1);
}

OpInfo pow_op() {
  // FLOPs per output: log, multiply, exp.
  return work(inputs(op(OpKind::kPow, "Pow", 7, parse_pow_exponent, broadcast, binary()), two), 3);
}

OpInfo sqrt_op() { return work(op(OpKind::kSqrt, "Sqrt", 6, nullptr, same_as_input, unary()), 1); }

OpInfo reciprocal_op() {
  return work(op(OpKind::kReciprocal, "Reciprocal", 6, nullptr, same_as_input, unary()), 1);
}

OpInfo erf_op() {
  // FLOPs per output: a polynomial, like Tanh.
  return work(op(OpKind::kErf, "Erf", 9, nullptr, same_as_input, unary()), 5);
}

OpInfo exp_op() { return work(op(OpKind::kExp, "Exp", 6, nullptr, same_as_input, unary()), 1); }

OpInfo gelu_op() {
  // FLOPs per output: the erf (or tanh) polynomial and 3 products.
  return work(op(OpKind::kGelu, "Gelu", 20, parse_gelu, same_as_input, unary()), 8);
}

}  // namespace ios::ir::ops
