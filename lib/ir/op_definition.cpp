// The shared builders and checks of the operators' definitions (ir/op_definition.h).
#include "ir/op_definition.h"

#include <algorithm>

#include "ir/shape_inference.h"

namespace ios::ir::ops {

int64_t normalize_axis(const AttributeReader& r, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) r.fail("axis {} out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

size_t window_rank(const AttributeReader& r, const Shape& x, std::string_view what) {
  if (x.size() < 3 || x.size() > 5) {
    r.fail("input has shape {}; {} takes 1-D (N,C,L), 2-D (N,C,H,W) or 3-D (N,C,T,H,W) input",
           to_string(x), what);
  }
  return x.size() - 2;
}

Dims window_pads(const AttributeReader& r, const Shape& x, const Dims& kernel, const Dims& stride,
                 const Dims& dilation) {
  const size_t rank = kernel.size();
  const std::string auto_pad = r.get_string("auto_pad", "NOTSET");
  Dims pads(2 * rank, 0);
  if (auto_pad == "NOTSET") {
    const auto p = r.get_ints("pads").value_or(pads);
    if (p.size() != 2 * rank) {
      r.fail("pads has {} entries; a {}-D window takes {} (the begins, then the ends)", p.size(),
             rank, 2 * rank);
    }
    pads = p;
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t a = 0; a < rank; ++a) {
      const int64_t in = x[2 + a];
      if (stride[a] < 1 || dilation[a] < 1 || kernel[a] < 1)
        r.fail("kernel, strides and dilations must be >= 1");
      const int64_t out = (in + stride[a] - 1) / stride[a];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 - in);
      const int64_t small = total / 2, large = total - small;
      pads[a] = auto_pad == "SAME_UPPER" ? small : large;
      pads[a + rank] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "VALID") {
    r.fail("unknown auto_pad '{}'", auto_pad);
  }
  return pads;
}

Dims spatial_attr(const AttributeReader& r, const char* name, size_t rank, Dims fallback) {
  const auto v = r.get_ints(name);
  if (!v) return fallback;
  if (v->size() != rank)
    r.fail("{} has {} entries; a {}-D window takes {}", name, v->size(), rank, rank);
  return *v;
}

void need_rank(const AttributeReader& r, const Shape& x, size_t rank, const char* what) {
  if (x.size() != rank) r.fail("input has shape {}; {}", to_string(x), what);
}

void only_first_output(const AttributeReader& r) {
  for (int o = 1; o < r.num_outputs(); ++o) {
    if (r.output_used(o)) {
      r.fail("output {} ('{}') is used, but ios computes only the first output of {}", o,
             r.output_name(o), r.op_type());
    }
  }
}

std::string describe(const Node& node, const std::vector<Shape>& in) {
  std::string shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) shapes += ", ";
    shapes += to_string(in[i]);
  }
  return fmt::format("node '{}' ({}) with input shapes [{}]", node.name, op_name(node.op), shapes);
}

void need_inputs(const Node& node, const std::vector<Shape>& in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi) {
    fail(node, in, "expects {} to {} inputs, has {}", lo, hi, in.size());
  }
}

void need_rank(const Node& node, const std::vector<Shape>& in, size_t index, size_t rank) {
  if (in[index].size() != rank) {
    fail(node, in, "input {} must have rank {}, has rank {}", index, rank, in[index].size());
  }
}

Shape window_op(const Node& node, const std::vector<Shape>& in, int64_t channels,
                const Dims& kernel, const Dims& stride, const Dims& dilation, const Dims& pads,
                bool ceil_mode) {
  const Shape& x = in[0];
  const size_t rank = kernel.size();
  if (rank < 1 || rank > 3 || x.size() != rank + 2 || stride.size() != rank ||
      dilation.size() != rank || pads.size() != 2 * rank) {
    fail(node, in, "a {}-D window needs input of rank {} and {} strides, dilations and {} pads",
         rank, rank + 2, rank, 2 * rank);
  }
  Shape out{x[0], channels};
  for (size_t a = 0; a < rank; ++a) {
    if (kernel[a] < 1 || stride[a] < 1 || dilation[a] < 1 || pads[a] < 0 || pads[a + rank] < 0) {
      fail(node, in, "kernel, stride and dilation must be >= 1 and pads >= 0");
    }
    // The window's extent is file data: bound it before the arithmetic
    // below can overflow (a huge dilation times a huge kernel).
    if (kernel[a] > kMaxWindowExtent || dilation[a] > kMaxWindowExtent ||
        stride[a] > kMaxWindowExtent || pads[a] > kMaxWindowExtent ||
        pads[a + rank] > kMaxWindowExtent || (kernel[a] - 1) * dilation[a] > kMaxWindowExtent) {
      fail(node, in,
           "the window on spatial axis {} (kernel {}, dilation {}, stride {}, pads {} and {}) is "
           "larger "
           "than {}; fix the attributes",
           a, kernel[a], dilation[a], stride[a], pads[a], pads[a + rank], kMaxWindowExtent);
    }
    const int64_t size = window_output_size(x[2 + a], kernel[a], stride[a], dilation[a], pads[a],
                                            pads[a + rank], ceil_mode);
    if (size <= 0) {
      fail(node, in, "the {} window (dilation {}) does not fit the padded input", to_string(kernel),
           dilation[a]);
    }
    // With ceil_mode, ONNX's formula can place the last window entirely in
    // the end padding, where PyTorch drops it; refuse the ambiguous case.
    if (ceil_mode && (size - 1) * stride[a] >= x[2 + a] + pads[a]) {
      fail(node, in,
           "with ceil_mode the last window starts in the padding (ONNX and PyTorch "
           "disagree on the output size); re-export without ceil_mode");
    }
    out.push_back(size);
  }
  return out;
}

int64_t checked_axis(const Node& node, const std::vector<Shape>& in, int64_t axis, size_t rank,
                     bool allow_rank) {
  const auto limit = static_cast<int64_t>(rank) + (allow_rank ? 1 : 0);
  if (axis < 0 || axis >= limit) fail(node, in, "axis {} out of range for rank {}", axis, rank);
  return axis;
}

Shapes same_as_input(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  return {in[0]};
}

Shapes broadcast(const Node& node, const Shapes& in) {
  need_inputs(node, in, 2, 2);
  auto out = broadcast_shapes(in[0], in[1]);
  if (!out) fail(node, in, "shapes do not broadcast");
  return {*out};
}

double output_elements(const Graph& g, const Node& n) {
  return static_cast<double>(num_elements(g.tensor(n.outputs.at(0)).shape));
}

const Shape& input_shape(const Graph& g, const Node& n, size_t input) {
  IOS_ASSERT(input < n.inputs.size(), "node '{}' ({}) has no input {}", n.name, op_name(n.op),
             input);
  return g.tensor(n.inputs[input]).shape;
}

int up_to_three(int onnx_inputs) { return std::min(onnx_inputs, 3); }

int two(int) { return 2; }

int all(int onnx_inputs) { return onnx_inputs; }

int five(int) { return 5; }

double mean_reduction(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  return out > 0 ? static_cast<double>(num_elements(input_shape(g, n, 0))) / out : 1.0;
}

double mean_flops(const Graph& g, const Node& n) {
  return static_cast<double>(num_elements(input_shape(g, n, 0)));
}

OpTraits unary(bool in_place) {
  OpTraits t;
  t.elementwise = Elementwise::kUnary;
  t.in_place = in_place;
  return t;
}

OpTraits binary() {
  OpTraits t;
  t.elementwise = Elementwise::kBinary;
  return t;
}

OpTraits anchor(OpClass op_class) {
  OpTraits t;
  t.op_class = op_class;
  return t;
}

OpTraits with_prologue(OpTraits t) {
  t.prologue = true;
  return t;
}

OpTraits as_view(OpTraits t) {
  t.view = true;
  return t;
}

OpTraits as_zero_copy(OpTraits t) {
  t.zero_copy = true;
  return t;
}

// One entry. Fields not given keep OpInfo's defaults.
OpInfo op(OpKind kind, std::string_view onnx_name, int since_opset, ParseAttrsFn parse,
          ShapeFn shape, OpTraits traits) {
  OpInfo info;
  info.kind = kind;
  info.onnx_name = onnx_name;
  info.since_opset = since_opset;
  info.parse_attrs = parse;
  info.shape = shape;
  info.traits = traits;
  info.required_inputs = 2;
  return info;
}

OpInfo inputs(OpInfo info, DataInputsFn data_inputs, int required) {
  info.data_inputs = data_inputs;
  info.required_inputs = required;
  return info;
}

OpInfo every_output(OpInfo info) {
  info.every_output = true;
  return info;
}

OpInfo legacy(OpInfo info, std::string_view name, int since_opset, int until_opset) {
  info.legacy_name = name;
  info.legacy_since_opset = since_opset;
  info.legacy_until_opset = until_opset;
  return info;
}

OpInfo work(OpInfo info, double flops_per_output, WorkFn flops, WorkFn reduction) {
  info.flops_per_output = flops_per_output;
  info.flops = flops;
  info.reduction = reduction;
  return info;
}

}  // namespace ios::ir::ops
