// The operator table (ir/op_info.h). One entry per ir::OpKind; the entries
// are listed in OpKind order and checked against it at first use.
#include "ir/op_info.h"

#include <algorithm>

#include "core/error.h"
#include "ir/op_attributes.h"
#include "ir/op_shapes.h"

namespace ios::ir {
namespace {

double output_elements(const Graph& g, const Node& n) {
  return static_cast<double>(num_elements(g.tensor(n.outputs.at(0)).shape));
}

const Shape& input_shape(const Graph& g, const Node& n, size_t input) {
  IOS_ASSERT(input < n.inputs.size(), "node '{}' ({}) has no input {}", n.name, op_name(n.op), input);
  return g.tensor(n.inputs[input]).shape;
}

// --- Data inputs: how many leading ONNX inputs are IR tensors. -------------

int up_to_three(int onnx_inputs) { return std::min(onnx_inputs, 3); }  // X, W, [B]; A, B, [C]
int two(int) { return 2; }
int all(int onnx_inputs) { return onnx_inputs; }
int five(int) { return 5; }

// --- Work. ----------------------------------------------------------------

// Cin/group * kh * kw, read off the weight tensor [Cout, Cin/group, kh, kw].
double conv_reduction(const Graph& g, const Node& n) {
  const Shape& w = input_shape(g, n, 1);
  IOS_ASSERT(w.size() == 4, "conv '{}' has a weight of rank {}", n.name, w.size());
  return static_cast<double>(w[1] * w[2] * w[3]);
}

double gemm_k(const Graph& g, const Node& n) {
  const Shape& a = input_shape(g, n, 0);
  IOS_ASSERT(!a.empty(), "matmul '{}' has a scalar input", n.name);
  if (n.op == OpKind::kGemm) {
    IOS_ASSERT(a.size() == 2, "gemm '{}' has an input of rank {}", n.name, a.size());
    return static_cast<double>(n.attr<GemmAttrs>().trans_a ? a[0] : a[1]);
  }
  return static_cast<double>(a.back());
}

double window_reduction(const Graph&, const Node& n) {
  const auto& a = n.attr<PoolAttrs>();
  return static_cast<double>(a.kernel[0] * a.kernel[1]);
}

double mean_reduction(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  return out > 0 ? static_cast<double>(num_elements(input_shape(g, n, 0))) / out : 1.0;
}

double conv_flops(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  const bool bias = n.inputs.size() > 2;
  return 2.0 * out * conv_reduction(g, n) + (bias ? out : 0.0);
}

double gemm_flops(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  const bool bias = n.inputs.size() > 2;
  return 2.0 * out * gemm_k(g, n) + (bias ? out : 0.0);
}

double matmul_flops(const Graph& g, const Node& n) { return 2.0 * output_elements(g, n) * gemm_k(g, n); }
double window_flops(const Graph& g, const Node& n) { return output_elements(g, n) * window_reduction(g, n); }
double mean_flops(const Graph& g, const Node& n) {
  return static_cast<double>(num_elements(input_shape(g, n, 0)));
}

// Bilinear: four weight products, four multiplies and three adds per output
// (ir/resize_math.h); nearest only copies.
double resize_flops(const Graph& g, const Node& n) {
  return n.attr<ResizeAttrs>().mode == resize::Mode::kLinear ? 11.0 * output_elements(g, n) : 0.0;
}
double resize_reduction(const Graph&, const Node& n) {
  return n.attr<ResizeAttrs>().mode == resize::Mode::kLinear ? 4.0 : 1.0;
}

// --- Traits. ---------------------------------------------------------------

OpTraits unary(bool in_place = true) {
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
OpInfo op(OpKind kind, std::string_view onnx_name, int since_opset, ParseAttrsFn parse, ShapeFn shape,
          OpTraits traits) {
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

OpInfo inputs(OpInfo info, DataInputsFn data_inputs, int required = 2) {
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

OpInfo work(OpInfo info, double flops_per_output, WorkFn flops = nullptr, WorkFn reduction = nullptr) {
  info.flops_per_output = flops_per_output;
  info.flops = flops;
  info.reduction = reduction;
  return info;
}

std::vector<OpInfo> make_table() {
  namespace A = attrs;
  namespace S = shapes;
  using K = OpKind;
  std::vector<OpInfo> t = {
      work(inputs(op(K::kConv, "Conv", 1, A::conv, S::conv, anchor(OpClass::kConv)), up_to_three), 0, conv_flops,
           conv_reduction),
      work(op(K::kRelu, "Relu", 6, nullptr, S::same_as_input, with_prologue(unary())), 1),
      work(op(K::kClip, "Clip", 6, A::clip, S::same_as_input, unary()), 2),
      work(op(K::kSigmoid, "Sigmoid", 6, nullptr, S::same_as_input, unary()), 4),  // exp, add, divide, negate
      work(op(K::kHardSigmoid, "HardSigmoid", 6, A::hard_sigmoid, S::same_as_input, unary()), 3),
      work(op(K::kHardSwish, "HardSwish", 14, nullptr, S::same_as_input, unary()), 5),
      work(inputs(op(K::kAdd, "Add", 7, nullptr, S::broadcast, binary()), two), 1),
      work(inputs(op(K::kMul, "Mul", 7, nullptr, S::broadcast, binary()), two), 1),
      inputs(op(K::kConcat, "Concat", 4, A::concat, S::concat, as_zero_copy(anchor(OpClass::kConcat))), all),
      every_output(op(K::kSplit, "Split", 2, A::split, S::split, anchor(OpClass::kLayout))),
      op(K::kSlice, "Slice", 1, A::slice, S::slice, anchor(OpClass::kLayout)),
      work(op(K::kMaxPool, "MaxPool", 1, A::max_pool, S::pool, anchor(OpClass::kPool)), 0, window_flops,
           window_reduction),
      work(op(K::kAveragePool, "AveragePool", 1, A::average_pool, S::pool, anchor(OpClass::kPool)), 0, window_flops,
           window_reduction),
      work(op(K::kGlobalAveragePool, "GlobalAveragePool", 1, A::global_pool, S::global_pool, anchor(OpClass::kPool)),
           0, mean_flops, mean_reduction),
      work(op(K::kReduceMean, "ReduceMean", 1, A::reduce_mean, S::reduce, anchor(OpClass::kPool)), 0, mean_flops,
           mean_reduction),
      op(K::kFlatten, "Flatten", 1, A::flatten, S::flatten, as_view(anchor(OpClass::kLayout))),
      op(K::kReshape, "Reshape", 5, A::reshape, S::reshape, as_view(anchor(OpClass::kLayout))),
      op(K::kTranspose, "Transpose", 1, A::transpose, S::transpose, anchor(OpClass::kLayout)),
      work(inputs(op(K::kGemm, "Gemm", 7, A::gemm, S::gemm, anchor(OpClass::kMatMul)), up_to_three), 0, gemm_flops,
           gemm_k),
      work(inputs(op(K::kMatMul, "MatMul", 1, nullptr, S::matmul, anchor(OpClass::kMatMul)), two), 0, matmul_flops,
           gemm_k),
      work(op(K::kSoftmax, "Softmax", 1, A::softmax, S::softmax, anchor(OpClass::kSoftmax)), 5),  // max, subtract, exp, sum, divide
      op(K::kPad, "Pad", 2, A::pad, S::pad, anchor(OpClass::kLayout)),
      work(inputs(op(K::kBatchNorm, "BatchNormalization", 7, A::batch_norm, S::batch_norm, unary()), five, 5), 2),
      work(op(K::kTanh, "Tanh", 6, nullptr, S::same_as_input, unary()), 5),  // like Sigmoid, plus a scale
      work(inputs(op(K::kSub, "Sub", 7, nullptr, S::broadcast, binary()), two), 1),
      work(inputs(op(K::kDiv, "Div", 7, nullptr, S::broadcast, binary()), two), 1),
      work(inputs(op(K::kPow, "Pow", 7, A::pow_exponent, S::broadcast, binary()), two), 3),  // log, multiply, exp
      work(op(K::kSqrt, "Sqrt", 6, nullptr, S::same_as_input, unary()), 1),
      work(op(K::kReciprocal, "Reciprocal", 6, nullptr, S::same_as_input, unary()), 1),
      work(op(K::kErf, "Erf", 9, nullptr, S::same_as_input, unary()), 5),  // a polynomial, like Tanh
      work(op(K::kExp, "Exp", 6, nullptr, S::same_as_input, unary()), 1),
      // Resampling on H and W, a window operator like a pool (it takes epilogues).
      work(legacy(op(K::kResize, "Resize", 10, A::resize, S::resize, anchor(OpClass::kPool)), "Upsample", 7, 9), 0,
           resize_flops, resize_reduction),
      // Mean, variance, then normalize, scale and shift: about 8 FLOPs per element.
      work(inputs(op(K::kLayerNorm, "LayerNormalization", 17, A::layer_norm, S::layer_norm, anchor(OpClass::kPool)),
                  up_to_three),
           8),
      work(op(K::kGelu, "Gelu", 20, A::gelu, S::same_as_input, unary()), 8),  // the erf (or tanh) polynomial and 3 products
  };
  return t;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> entries = [] {
    std::vector<OpInfo> t = make_table();
    IOS_ASSERT(t.size() == static_cast<size_t>(kNumOpKinds), "the operator table has {} entries for {} operators",
               t.size(), kNumOpKinds);
    for (size_t i = 0; i < t.size(); ++i) {
      IOS_ASSERT(static_cast<size_t>(t[i].kind) == i && t[i].shape != nullptr,
                 "operator table entry {} ({}) is out of OpKind order or has no shape function", i, t[i].onnx_name);
    }
    return t;
  }();
  return entries;
}

}  // namespace

const OpInfo& op_info(OpKind op) {
  const auto index = static_cast<size_t>(op);
  IOS_ASSERT(index < table().size(), "no operator table entry for operator {}", static_cast<int>(op));
  return table()[index];
}

const std::vector<OpInfo>& all_ops() { return table(); }

const OpInfo* find_onnx_op(std::string_view onnx_name) {
  for (const OpInfo& info : table()) {
    if (info.onnx_name == onnx_name || (!info.legacy_name.empty() && info.legacy_name == onnx_name)) return &info;
  }
  return nullptr;
}

std::string_view op_name(OpKind op) {
  const auto index = static_cast<size_t>(op);
  return index < table().size() ? table()[index].onnx_name : std::string_view("?");
}

bool is_epilogue_candidate(const Graph& graph, const Node& node) {
  switch (op_info(node.op).traits.elementwise) {
    case Elementwise::kUnary:
      return true;
    case Elementwise::kBinary: {
      int activations = 0;
      for (TensorId t : node.inputs) activations += graph.tensor(t).is_constant() ? 0 : 1;
      return activations == 1;
    }
    case Elementwise::kNone:
      return false;
  }
  return false;
}

ew::Params elementwise_params(const Node& node) {
  return std::visit(
      [](const auto& a) -> ew::Params {
        if constexpr (requires { a.ew_params(); }) {
          return a.ew_params();
        } else {
          return {};
        }
      },
      node.attrs);
}

std::vector<Shape> node_output_shapes(const Node& node, const std::vector<Shape>& in) {
  return op_info(node.op).shape(node, in);
}

double node_flops(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  if (n.outputs.empty()) return 0.0;
  const OpInfo& info = op_info(n.op);
  if (info.flops) return info.flops(graph, n);
  return info.flops_per_output * output_elements(graph, n);
}

double node_reduction(const Graph& graph, const Node& node) {
  const OpInfo& info = op_info(node.op);
  return info.reduction ? info.reduction(graph, node) : 1.0;
}

}  // namespace ios::ir
