// Conv: 1-D, 2-D and 3-D convolution (N,C,L; N,C,H,W; N,C,T,H,W), grouped
// and dilated; bias optional.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_conv(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const Shape& w = in.at(1);
  const size_t rank = window_rank(r, x, "Conv");
  if (w.size() != x.size()) {
    r.fail("weights have shape {}; a {}-D convolution takes weights of rank {}", to_string(w), rank,
           x.size());
  }
  ConvAttrs a;
  a.kernel = spatial_attr(r, "kernel_shape", rank, Dims(w.begin() + 2, w.end()));
  a.stride = spatial_attr(r, "strides", rank, filled(rank, 1));
  a.dilation = spatial_attr(r, "dilations", rank, filled(rank, 1));
  a.group = r.get_int("group", 1);
  a.pads = window_pads(r, x, a.kernel, a.stride, a.dilation);
  return a;
}

Shape conv_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  const auto& a = node.attr<ConvAttrs>();
  need_rank(node, in, 0, a.spatial_rank() + 2);
  need_rank(node, in, 1, a.spatial_rank() + 2);
  const Shape& x = in[0];
  const Shape& w = in[1];
  if (a.group < 1 || x[1] != w[1] * a.group || w[0] % a.group != 0) {
    fail(node, in, "{} input channels do not fit weights {} with group {}", x[1], to_string(w),
         a.group);
  }
  if (!std::equal(a.kernel.begin(), a.kernel.end(), w.begin() + 2)) {
    fail(node, in, "kernel {} differs from the weight shape", to_string(a.kernel));
  }
  if (in.size() == 3 && in[2] != Shape{w[0]}) {
    fail(node, in, "the bias must have shape {}", w[0]);
  }
  return window_op(node, in, w[0], a.kernel, a.stride, a.dilation, a.pads, false);
}

Shapes conv_shapes(const Node& node, const Shapes& in) { return {conv_one(node, in)}; }

// Cin/group times the kernel's volume, read off the weight tensor
// [Cout, Cin/group, k...].
double conv_reduction(const Graph& g, const Node& n) {
  const Shape& w = input_shape(g, n, 1);
  IOS_ASSERT(w.size() >= 3, "conv '{}' has a weight of rank {}", n.name, w.size());
  return static_cast<double>(num_elements(w) / w[0]);
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
