// The element-wise operators. Their math is ir/elementwise.h, shared by both
// backends and by constant folding; here are their entries in the operator
// table (ir/op_info.h): ONNX names, attribute parsers, traits and work
// (docs/architecture.md, "Adding an operator").

#include <cmath>
#include <string>

#include "ir/op_definition.h"
#include "ir/shape_inference.h"

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

// alpha, checked finite; `positive`: also > 0 (Celu divides by it).
float activation_alpha(const AttributeReader& r, float fallback, bool positive = false) {
  const float alpha = r.get_float("alpha", fallback);
  if (!std::isfinite(alpha) || (positive && !(alpha > 0.0f))) {
    r.fail("alpha {} is not a {}number; give a finite alpha{}", alpha, positive ? "positive " : "finite ",
           positive ? " > 0" : "");
  }
  return alpha;
}

Attrs parse_leaky_relu(const AttributeReader& r, const Shapes&) {
  return ActivationAttrs{activation_alpha(r, 0.01f), 0.0f};
}

Attrs parse_elu(const AttributeReader& r, const Shapes&) { return ActivationAttrs{activation_alpha(r, 1.0f), 0.0f}; }

Attrs parse_celu(const AttributeReader& r, const Shapes&) {
  return ActivationAttrs{activation_alpha(r, 1.0f, true), 0.0f};
}

Attrs parse_thresholded_relu(const AttributeReader& r, const Shapes&) {
  return ActivationAttrs{activation_alpha(r, 1.0f), 0.0f};
}

Attrs parse_cast(const AttributeReader& r, const Shapes&) {
  const auto to = r.element_type_attribute("to");
  if (!to) {
    r.fail(
        "Cast to element type {} on a tensor computed at run time; ios runs float32, float16 and "
        "bfloat16 tensors only",
        r.get_int("to", 0));
  }
  return CastAttrs{*to};
}

Attrs parse_selu(const AttributeReader& r, const Shapes&) {
  // ONNX's defaults: the constants of the SELU paper, as float32.
  const float alpha = activation_alpha(r, 1.67326319217681884765625f);
  const float gamma = r.get_float("gamma", 1.05070102214813232421875f);
  if (!std::isfinite(gamma)) r.fail("gamma {} is not a finite number; give a finite gamma", gamma);
  return ActivationAttrs{alpha, gamma};
}

// PRelu's slope broadcasts to x one way: the output has x's shape (a slope
// per channel is [C, 1, 1] for NCHW, [C, 1] for NCL, or one value).
Attrs parse_prelu(const AttributeReader& r, const Shapes& in) {
  if (in.size() == 2) {
    const auto out = broadcast_shapes(in[0], in[1]);
    if (!out || *out != in[0]) {
      r.fail("the slope has shape {}, which does not broadcast to the input's {}; give one slope, one per "
             "channel ([C, 1, 1] for N,C,H,W) or a slope of the input's trailing shape",
             to_string(in[1]), to_string(in[0]));
    }
  }
  return std::monostate{};
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

namespace ios::ir::ops {

// FLOPs per output: a compare and a product (and exp for the exponential
// ones, counted like Exp's 1 plus the rest).
OpInfo leaky_relu_op() {
  return work(op(OpKind::kLeakyRelu, "LeakyRelu", 6, parse_leaky_relu, same_as_input, unary()), 2);
}

OpInfo prelu_op() {
  return work(inputs(op(OpKind::kPRelu, "PRelu", 7, parse_prelu, broadcast, binary()), two), 2);
}

OpInfo elu_op() { return work(op(OpKind::kElu, "Elu", 6, parse_elu, same_as_input, unary()), 3); }

OpInfo selu_op() { return work(op(OpKind::kSelu, "Selu", 6, parse_selu, same_as_input, unary()), 4); }

OpInfo celu_op() { return work(op(OpKind::kCelu, "Celu", 12, parse_celu, same_as_input, unary()), 4); }

OpInfo softplus_op() {
  // FLOPs per output: exp and log1p.
  return work(op(OpKind::kSoftplus, "Softplus", 1, nullptr, same_as_input, unary()), 4);
}

OpInfo softsign_op() {
  return work(op(OpKind::kSoftsign, "Softsign", 1, nullptr, same_as_input, unary()), 3);
}

OpInfo mish_op() {
  // FLOPs per output: Softplus's, Tanh's and a product.
  return work(op(OpKind::kMish, "Mish", 18, nullptr, same_as_input, unary()), 10);
}

OpInfo thresholded_relu_op() {
  return work(
      op(OpKind::kThresholdedRelu, "ThresholdedRelu", 10, parse_thresholded_relu, same_as_input, unary()), 1);
}

OpInfo neg_op() { return work(op(OpKind::kNeg, "Neg", 6, nullptr, same_as_input, unary()), 1); }

// Cast between the float types (integer Casts are shape arithmetic, folded
// at import). A Cast that changes the type is no epilogue: it reads and
// writes elements of different sizes, so it cannot run in place.
OpInfo cast_op() {
  return work(op(OpKind::kCast, "Cast", 6, parse_cast, same_as_input, unary()), 1);
}

OpInfo abs_op() { return work(op(OpKind::kAbs, "Abs", 6, nullptr, same_as_input, unary()), 1); }

// Max and Min of two operands; the importer makes a chain of them for more
// (onnx/graph_builder.cpp). Opset 6's form (equal shapes) is a case of 8's.
OpInfo max_op() { return work(inputs(op(OpKind::kMax, "Max", 6, nullptr, broadcast, binary()), two), 1); }

OpInfo min_op() { return work(inputs(op(OpKind::kMin, "Min", 6, nullptr, broadcast, binary()), two), 1); }

}  // namespace ios::ir::ops
