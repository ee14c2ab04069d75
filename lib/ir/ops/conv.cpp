// Conv: 2-D convolution of NCHW tensors, grouped and dilated; bias optional.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_conv(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const Shape& w = in.at(1);
  need_rank(r, x, 4, "only 2-D convolutions (4-D NCHW input) are supported");
  need_rank(r, w, 4, "only 2-D convolutions (4-D weights) are supported");
  ConvAttrs a;
  a.kernel = pair_attr(r, "kernel_shape", {w[2], w[3]});
  a.stride = pair_attr(r, "strides", {1, 1});
  a.dilation = pair_attr(r, "dilations", {1, 1});
  a.group = r.get_int("group", 1);
  a.pads = window_pads(r, x, a.kernel, a.stride, a.dilation);
  return a;
}

Shape conv_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  need_rank(node, in, 0, 4);
  need_rank(node, in, 1, 4);
  const auto& a = node.attr<ConvAttrs>();
  const Shape& x = in[0];
  const Shape& w = in[1];
  if (a.group < 1 || x[1] != w[1] * a.group || w[0] % a.group != 0) {
    fail(node, in, "{} input channels do not fit weights {} with group {}", x[1], to_string(w),
         a.group);
  }
  if (w[2] != a.kernel[0] || w[3] != a.kernel[1]) {
    fail(node, in, "kernel {}x{} differs from the weight shape", a.kernel[0], a.kernel[1]);
  }
  if (in.size() == 3 && in[2] != Shape{w[0]}) {
    fail(node, in, "the bias must have shape {}", w[0]);
  }
  return window_op(node, in, w[0], a.kernel, a.stride, a.dilation, a.pads, false);
}

Shapes conv_shapes(const Node& node, const Shapes& in) { return {conv_one(node, in)}; }

// Cin/group * kh * kw, read off the weight tensor [Cout, Cin/group, kh, kw].
double conv_reduction(const Graph& g, const Node& n) {
  const Shape& w = input_shape(g, n, 1);
  IOS_ASSERT(w.size() == 4, "conv '{}' has a weight of rank {}", n.name, w.size());
  return static_cast<double>(w[1] * w[2] * w[3]);
}

double conv_flops(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  const bool bias = n.inputs.size() > 2;
  return 2.0 * out * conv_reduction(g, n) + (bias ? out : 0.0);
}

}  // namespace

OpInfo conv_op() {
  return work(inputs(op(OpKind::kConv, "Conv", 1, parse_conv, conv_shapes, anchor(OpClass::kConv)),
                     up_to_three),
              0, conv_flops, conv_reduction);
}

}  // namespace ios::ir::ops
