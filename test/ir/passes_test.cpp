// IR passes on hand-built graphs. Numerics are checked against direct loops
// written here (conv then batch norm, versus the folded conv).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>

#include "ir/passes.h"
#include "ir/shape_inference.h"
#include "ir_test_util.h"

namespace {

using namespace ios::ir;
using ios::test::activation;
using ios::test::add;
using ios::test::count_ops;
using ios::test::graph_input;
using ios::test::pattern;
using ios::test::weight;

// Direct NCHW convolution (batch 1) in double.
std::vector<double> conv_direct(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                const Shape& ws, const std::vector<float>* bias, const ConvAttrs& a,
                                const Shape& ys) {
  std::vector<double> y(static_cast<size_t>(num_elements(ys)), 0.0);
  const int64_t cin_g = ws[1], cout_g = ws[0] / a.group;
  for (int64_t o = 0; o < ys[1]; ++o) {
    const int64_t g = o / cout_g;
    for (int64_t i = 0; i < ys[2]; ++i) {
      for (int64_t j = 0; j < ys[3]; ++j) {
        double acc = bias ? (*bias)[static_cast<size_t>(o)] : 0.0;
        for (int64_t c = 0; c < cin_g; ++c) {
          for (int64_t ki = 0; ki < ws[2]; ++ki) {
            for (int64_t kj = 0; kj < ws[3]; ++kj) {
              const int64_t hi = i * a.stride[0] - a.pads[0] + ki * a.dilation[0];
              const int64_t wj = j * a.stride[1] - a.pads[1] + kj * a.dilation[1];
              if (hi < 0 || hi >= xs[2] || wj < 0 || wj >= xs[3]) continue;
              const int64_t ch = g * cin_g + c;
              acc += static_cast<double>(x[static_cast<size_t>((ch * xs[2] + hi) * xs[3] + wj)]) *
                     w[static_cast<size_t>(((o * cin_g + c) * ws[2] + ki) * ws[3] + kj)];
            }
          }
        }
        y[static_cast<size_t>((o * ys[2] + i) * ys[3] + j)] = acc;
      }
    }
  }
  return y;
}

struct ConvBn {
  Graph g;
  TensorId x, w, b, y, c;
  ConvAttrs attrs;
  std::vector<float> gamma{1.5f, 0.5f, -2.0f}, beta{0.1f, -0.2f, 0.3f}, mean{0.25f, -0.5f, 1.0f},
      var{0.8f, 2.0f, 0.05f};
  float eps = 1e-3f;
};

// x[1x2x5x6] -> Conv(3 filters, 3x3, stride 1x2, asymmetric pads) -> BN -> y
ConvBn conv_bn(bool with_bias) {
  ConvBn m;
  m.x = graph_input(m.g, "x", {1, 2, 5, 6});
  m.w = weight(m.g, "w", {3, 2, 3, 3}, pattern(3 * 2 * 9, 0.1f));
  m.attrs.kernel = {3, 3};
  m.attrs.pads = {1, 0, 0, 2};  // asymmetric
  m.attrs.stride = {1, 2};
  std::vector<TensorId> ins{m.x, m.w};
  if (with_bias) {
    m.b = weight(m.g, "b", {3}, {0.5f, -1.0f, 2.0f});
    ins.push_back(m.b);
  }
  m.c = activation(m.g, "c");
  add(m.g, OpKind::kConv, "conv", ins, {m.c}, m.attrs);
  TensorId params[4] = {weight(m.g, "gamma", {3}, m.gamma), weight(m.g, "beta", {3}, m.beta),
                        weight(m.g, "mean", {3}, m.mean), weight(m.g, "var", {3}, m.var)};
  m.y = activation(m.g, "y");
  add(m.g, OpKind::kBatchNorm, "bn", {m.c, params[0], params[1], params[2], params[3]}, {m.y},
      BatchNormAttrs{m.eps});
  m.g.outputs().push_back(m.y);
  infer_shapes(m.g);
  return m;
}

}  // namespace

TEST_CASE("fold_batchnorm matches conv followed by batch norm", "[ir][passes]") {
  for (bool with_bias : {true, false}) {
    SECTION(with_bias ? "with bias" : "without bias") {
      ConvBn m = conv_bn(with_bias);
      const Shape xs = m.g.tensor(m.x).shape, ws = m.g.tensor(m.w).shape, ys = m.g.tensor(m.y).shape;
      const std::vector<float> x = pattern(static_cast<size_t>(num_elements(xs)), 0.3f, 4);
      const std::vector<float> w = *m.g.tensor(m.w).data;
      const std::vector<float> bias{0.5f, -1.0f, 2.0f};

      // Reference: conv, then y = gamma * (c - mean) / sqrt(var + eps) + beta.
      std::vector<double> ref = conv_direct(x, xs, w, ws, with_bias ? &bias : nullptr, m.attrs, ys);
      const size_t plane = static_cast<size_t>(ys[2] * ys[3]);
      for (size_t k = 0; k < ref.size(); ++k) {
        const size_t o = k / plane;
        ref[k] = m.gamma[o] * (ref[k] - m.mean[o]) / std::sqrt(static_cast<double>(m.var[o]) + m.eps) + m.beta[o];
      }

      REQUIRE(fold_batchnorm(m.g) == 1);
      REQUIRE(m.g.num_nodes() == 1);
      const Node& conv = m.g.node(0);
      CHECK(conv.op == OpKind::kConv);
      REQUIRE(conv.inputs.size() == 3);
      CHECK(m.g.tensor(conv.outputs[0]).name == "y");
      CHECK(m.g.outputs() == std::vector<TensorId>{conv.outputs[0]});
      const Tensor& fw = m.g.tensor(conv.inputs[1]);
      const Tensor& fb = m.g.tensor(conv.inputs[2]);
      REQUIRE(fw.is_constant());
      REQUIRE(fb.is_constant());
      CHECK(fw.shape == ws);
      CHECK(fb.shape == Shape{3});
      CHECK(fw.name != "w");  // a new tensor: the original may be shared
      const std::vector<double> folded = conv_direct(x, xs, *fw.data, fw.shape, fb.data.get(), conv.attr<ConvAttrs>(), ys);
      REQUIRE(folded.size() == ref.size());
      double worst = 0;
      for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(folded[k] - ref[k]));
      CHECK(worst < 1e-4);
      CHECK(std::abs(ref[0]) + std::abs(ref[ref.size() / 2]) > 0.0);  // the values are not trivial
      infer_shapes(m.g);
      CHECK(m.g.tensor(conv.outputs[0]).shape == ys);
    }
  }
}

TEST_CASE("fold_batchnorm keeps a standalone BN and one whose conv output is shared", "[ir][passes]") {
  {
    Graph g;
    const TensorId x = graph_input(g, "x", {1, 3, 4, 4});
    const TensorId r = activation(g, "r");
    add(g, OpKind::kRelu, "relu", {x}, {r});
    std::vector<TensorId> p;
    for (const char* name : {"g", "b", "m", "v"}) p.push_back(weight(g, name, {3}, {1, 1, 1}));
    const TensorId y = activation(g, "y");
    add(g, OpKind::kBatchNorm, "bn_after_relu", {r, p[0], p[1], p[2], p[3]}, {y}, BatchNormAttrs{});
    const TensorId y2 = activation(g, "y2");
    add(g, OpKind::kBatchNorm, "bn_on_input", {x, p[0], p[1], p[2], p[3]}, {y2}, BatchNormAttrs{});
    g.outputs() = {y, y2};
    infer_shapes(g);
    CHECK(fold_batchnorm(g) == 0);
    CHECK(count_ops(g, OpKind::kBatchNorm) == 2);
  }
  {
    ConvBn m = conv_bn(true);
    // A second reader of the conv output: folding would change what it sees.
    const TensorId side = activation(m.g, "side");
    add(m.g, OpKind::kRelu, "side_relu", {m.c}, {side});
    m.g.outputs().push_back(side);
    CHECK(fold_batchnorm(m.g) == 0);
    CHECK(count_ops(m.g, OpKind::kBatchNorm) == 1);
  }
  {
    ConvBn m = conv_bn(true);
    m.g.outputs().push_back(m.c);  // the conv output is itself a graph output
    CHECK(fold_batchnorm(m.g) == 0);
  }
}

TEST_CASE("fold_batchnorm leaves a weight shared by another conv intact", "[ir][passes]") {
  ConvBn m = conv_bn(true);
  const std::vector<float> original = *m.g.tensor(m.w).data;
  const TensorId other = activation(m.g, "other");
  add(m.g, OpKind::kConv, "other_conv", {m.x, m.w}, {other}, m.attrs);
  m.g.outputs().push_back(other);
  REQUIRE(fold_batchnorm(m.g) == 1);
  const auto other_id = m.g.find_tensor("other");
  REQUIRE(other_id);
  const Node& oc = m.g.node(m.g.tensor(*other_id).producer);
  CHECK(m.g.tensor(oc.inputs[1]).name == "w");
  CHECK(*m.g.tensor(oc.inputs[1]).data == original);
}

namespace {

// x -> [producer] -> Pad(pads, value) -> consumer(attrs) -> y
struct PadCase {
  Graph g;
  TensorId y;
};

PadCase pad_case(OpKind producer, std::vector<int64_t> pads, float value, OpKind consumer, Attrs consumer_attrs,
                 PadAttrs::Mode mode = PadAttrs::Mode::kConstant) {
  PadCase c;
  const TensorId x = graph_input(c.g, "x", {1, 4, 6, 6});
  TensorId in = x;
  if (producer != OpKind::kAdd) {  // kAdd here means "no producer"
    in = activation(c.g, "act");
    add(c.g, producer, "producer", {x}, {in}, producer == OpKind::kClip ? Attrs{ClipAttrs{0.0f, 6.0f}} : Attrs{});
  }
  const TensorId p = activation(c.g, "padded");
  PadAttrs pa;
  pa.mode = mode;
  pa.pads = std::move(pads);
  pa.value = value;
  add(c.g, OpKind::kPad, "pad", {in}, {p}, pa);
  c.y = activation(c.g, "y");
  std::vector<TensorId> ins{p};
  if (consumer == OpKind::kConv) ins.push_back(weight(c.g, "w", {2, 4, 3, 3}, pattern(72, 0.1f)));
  add(c.g, consumer, "consumer", ins, {c.y}, std::move(consumer_attrs));
  c.g.outputs() = {c.y};
  infer_shapes(c.g);
  return c;
}

int folds(PadCase c) { return fold_pad(c.g); }

ConvAttrs conv3x3() {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.pads = {1, 0, 0, 1};
  return a;
}

PoolAttrs pool3x3(bool include_pad = false, ios::ir::Dims pads = {0, 0, 0, 0}) {
  PoolAttrs a;
  a.kernel = {3, 3};
  a.stride = {2, 2};
  a.pads = pads;
  a.count_include_pad = include_pad;
  return a;
}

}  // namespace

TEST_CASE("fold_pad folds a zero Pad into the conv reading it", "[ir][passes]") {
  PadCase c = pad_case(OpKind::kAdd, {0, 0, 1, 2, 0, 0, 3, 0}, 0.0f, OpKind::kConv, conv3x3());
  const Shape before = c.g.tensor(c.y).shape;
  REQUIRE(fold_pad(c.g) == 1);
  REQUIRE(c.g.num_nodes() == 1);
  const Node& conv = c.g.node(0);
  CHECK(conv.attr<ConvAttrs>().pads == ios::ir::Dims{2, 2, 3, 1});
  CHECK(c.g.tensor(conv.inputs[0]).name == "x");
  infer_shapes(c.g);
  CHECK(c.g.tensor(conv.outputs[0]).shape == before);
}

TEST_CASE("fold_pad refuses what the window cannot express", "[ir][passes]") {
  // Non-zero value before a conv.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, 1.0f, OpKind::kConv, conv3x3())) == 0);
  // Channel padding.
  {
    PadCase c = pad_case(OpKind::kAdd, {0, 1, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kMaxPool, pool3x3());
    CHECK(fold_pad(c.g) == 0);
  }
  // Reflect mode.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kAveragePool, pool3x3(),
                          PadAttrs::Mode::kReflect)) == 0);
  // AveragePool that excludes its own padding: the explicit zeros would count differently.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kAveragePool,
                          pool3x3(false, {1, 1, 1, 1}))) == 0);
  // MaxPool with zero padding of a tensor that may be negative.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kMaxPool, pool3x3())) == 0);
  // MaxPool whose padding would reach a whole window.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 3, 0, 0, 0, 0, 0}, -INFINITY, OpKind::kMaxPool, pool3x3())) == 0);
  // AveragePool likewise: a pad the import refuses is not made by folding.
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 3, 0, 0, 0, 0, 0}, 0.0f, OpKind::kAveragePool, pool3x3(true))) == 0);
  CHECK(folds(pad_case(OpKind::kAdd, {0, 0, 2, 0, 0, 0, 0, 0}, 0.0f, OpKind::kAveragePool,
                          pool3x3(true, {1, 0, 0, 0}))) == 0);
}

TEST_CASE("fold_pad folds into pooling where the semantics match", "[ir][passes]") {
  {
    PadCase c = pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kAveragePool, pool3x3());
    const Shape before = c.g.tensor(c.y).shape;
    REQUIRE(fold_pad(c.g) == 1);
    const auto& a = c.g.node(0).attr<PoolAttrs>();
    CHECK(a.pads == ios::ir::Dims{1, 1, 1, 1});
    CHECK(a.count_include_pad);
    infer_shapes(c.g);
    CHECK(c.g.tensor(c.g.node(0).outputs[0]).shape == before);
  }
  {
    PadCase c = pad_case(OpKind::kAdd, {0, 0, 1, 0, 0, 0, 0, 1}, 0.0f, OpKind::kAveragePool,
                         pool3x3(true, {0, 1, 1, 0}));
    REQUIRE(fold_pad(c.g) == 1);
    CHECK(c.g.node(0).attr<PoolAttrs>().pads == ios::ir::Dims{1, 1, 1, 1});
  }
  {
    PadCase c = pad_case(OpKind::kAdd, {0, 0, 1, 1, 0, 0, 1, 1}, -INFINITY, OpKind::kMaxPool, pool3x3());
    REQUIRE(fold_pad(c.g) == 1);
    CHECK(c.g.node(0).attr<PoolAttrs>().pads == ios::ir::Dims{1, 1, 1, 1});
  }
  for (OpKind producer : {OpKind::kRelu, OpKind::kClip, OpKind::kSigmoid}) {
    PadCase c = pad_case(producer, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, OpKind::kMaxPool, pool3x3());
    REQUIRE(fold_pad(c.g) == 1);
    REQUIRE(c.g.num_nodes() == 2);
    CHECK(c.g.node(1).attr<PoolAttrs>().pads == ios::ir::Dims{1, 1, 1, 1});
    CHECK(c.g.tensor(c.g.node(1).inputs[0]).name == "act");
  }
}

TEST_CASE("fold_pad removes all-zero Pads even with several readers", "[ir][passes]") {
  Graph g;
  const TensorId x = graph_input(g, "x", {1, 2, 4, 4});
  const TensorId p = activation(g, "p");
  PadAttrs zero;
  zero.pads.assign(8, 0);
  add(g, OpKind::kPad, "noop", {x}, {p}, zero);
  const TensorId p2 = activation(g, "p2");
  PadAttrs real;
  real.pads = {0, 0, 1, 1, 0, 0, 1, 1};
  add(g, OpKind::kPad, "after_noop", {p}, {p2}, real);
  const TensorId y1 = activation(g, "y1"), y2 = activation(g, "y2");
  ConvAttrs a;
  a.kernel = {3, 3};
  add(g, OpKind::kConv, "conv", {p2, weight(g, "w", {1, 2, 3, 3}, pattern(18, 0.1f))}, {y1}, a);
  add(g, OpKind::kRelu, "relu", {p}, {y2});
  g.outputs() = {y1, y2};
  infer_shapes(g);
  CHECK(fold_pad(g) == 2);
  CHECK(count_ops(g, OpKind::kPad) == 0);
  for (const Node& n : g.nodes()) CHECK(g.tensor(n.inputs[0]).name == "x");
  infer_shapes(g);
  CHECK(g.tensor(g.outputs()[0]).shape == Shape{1, 1, 4, 4});
}

TEST_CASE("flatten_concat merges nests on one axis in order", "[ir][passes]") {
  Graph g;
  const TensorId x = graph_input(g, "x", {1, 2, 3, 3});
  std::vector<TensorId> leaf;
  for (int k = 0; k < 5; ++k) {
    leaf.push_back(activation(g, "l" + std::to_string(k)));
    add(g, OpKind::kRelu, "relu" + std::to_string(k), {x}, {leaf.back()});
  }
  const TensorId a = activation(g, "a"), b = activation(g, "b"), shared = activation(g, "shared"),
                 y = activation(g, "y"), z = activation(g, "z");
  add(g, OpKind::kConcat, "a", {leaf[0], leaf[1]}, {a}, AxisAttrs{1});
  add(g, OpKind::kConcat, "b", {a, leaf[2]}, {b}, AxisAttrs{1});
  add(g, OpKind::kConcat, "shared", {leaf[3], leaf[4]}, {shared}, AxisAttrs{1});  // two readers
  add(g, OpKind::kConcat, "y", {leaf[4], b, shared}, {y}, AxisAttrs{1});
  add(g, OpKind::kRelu, "z", {shared}, {z});
  // Inner concats on another axis than the outer one stay.
  const TensorId c1 = activation(g, "c1"), c2 = activation(g, "c2"), w = activation(g, "w");
  add(g, OpKind::kConcat, "c1", {leaf[0], leaf[1]}, {c1}, AxisAttrs{1});
  add(g, OpKind::kConcat, "c2", {leaf[2], leaf[3]}, {c2}, AxisAttrs{1});
  add(g, OpKind::kConcat, "w", {c1, c2}, {w}, AxisAttrs{2});
  g.outputs() = {y, z, w};
  infer_shapes(g);
  const Shape before = g.tensor(y).shape;
  CHECK(flatten_concat(g) == 2);
  CHECK(count_ops(g, OpKind::kConcat) == 5);
  const auto yid = g.find_tensor("y");
  REQUIRE(yid);
  const Node& outer = g.node(g.tensor(*yid).producer);
  std::vector<std::string> names;
  for (TensorId t : outer.inputs) names.push_back(g.tensor(t).name);
  CHECK(names == std::vector<std::string>{"l4", "l0", "l1", "l2", "shared"});
  infer_shapes(g);
  CHECK(g.tensor(*yid).shape == before);
  CHECK(g.tensor(g.outputs()[2]).shape == Shape{1, 4, 6, 3});
}

TEST_CASE("remove_dead_nodes drops chains nobody reads", "[ir][passes]") {
  Graph g;
  const TensorId x = graph_input(g, "x", {1, 2});
  const TensorId a = activation(g, "a"), b = activation(g, "b"), y = activation(g, "y");
  add(g, OpKind::kRelu, "dead1", {x}, {a});
  add(g, OpKind::kSigmoid, "dead2", {a}, {b});
  add(g, OpKind::kRelu, "live", {x}, {y});
  g.outputs() = {y};
  CHECK(remove_dead_nodes(g) == 2);
  REQUIRE(g.num_nodes() == 1);
  CHECK(g.node(0).name == "live");
  CHECK(g.num_tensors() == 2);
}

TEST_CASE("run_import_passes runs every pass and reports counts", "[ir][passes]") {
  ConvBn m = conv_bn(false);
  const PassStats stats = run_import_passes(m.g);
  CHECK(stats.batchnorm_folded == 1);
  CHECK(stats.pads_folded == 0);
  CHECK(stats.concats_flattened == 0);
  CHECK(stats.dead_removed == 0);
  CHECK(count_ops(m.g, OpKind::kBatchNorm) == 0);
}

// --- fuse_gelu -----------------------------------------------------------------

namespace gelu {

// x [2, 8] (a MatMul's output) through a GELU chain as PyTorch 1.13 exports
// nn.GELU() (erf) or nn.GELU(approximate='tanh'), at opsets 13 and 17 alike;
// `changes` alters one thing to show what the pass must refuse.
struct Changes {
  float sqrt2 = 1.4142135f;          // the erf form's divisor
  float cubic = 0.044715f;           // the tanh form's x^3 coefficient
  bool erf_read_twice = false;       // a second node reads the erf/tanh output
  bool intermediate_is_output = false;
  bool other_x_in_product = false;   // the final product reads another tensor than x
  bool cube_by_pow = false;          // Pow(x, 3) for x * (x * x)
  bool half_first = false;           // (x * 0.5) * h for (x * h) * 0.5
};

struct Chain {
  Graph g;
  TensorId x = kNone, y = kNone, core_out = kNone;
};

Chain make(bool tanh_form, const Changes& c = {}) {
  Chain m;
  Graph& g = m.g;
  const TensorId in = graph_input(g, "in", {2, 4});
  const TensorId other = graph_input(g, "other", {2, 8});
  m.x = activation(g, "x", {2, 8});
  add(g, OpKind::kMatMul, "mm", {in, weight(g, "w", {4, 8}, pattern(32, 0.1f))}, {m.x});
  auto scalar = [&](const std::string& name, float v) { return weight(g, name, {}, {v}); };
  auto t = [&](const std::string& name) { return activation(g, name, {2, 8}); };
  TensorId core_in;
  if (!tanh_form) {
    core_in = t("scaled");
    add(g, OpKind::kDiv, "div", {m.x, scalar("c_sqrt2", c.sqrt2)}, {core_in});
  } else {
    const TensorId cube = t("cube");
    if (c.cube_by_pow) {
      add(g, OpKind::kPow, "pow", {m.x, scalar("c_three", 3.0f)}, {cube});
    } else {
      const TensorId sq = t("sq");
      add(g, OpKind::kMul, "sq", {m.x, m.x}, {sq});
      add(g, OpKind::kMul, "cube", {m.x, sq}, {cube});
    }
    const TensorId term = t("term"), inner = t("inner");
    add(g, OpKind::kMul, "term", {scalar("c_cubic", c.cubic), cube}, {term});
    add(g, OpKind::kAdd, "inner", {m.x, term}, {inner});
    core_in = t("scaled");
    add(g, OpKind::kMul, "scale", {scalar("c_k", 0.7978846f), inner}, {core_in});
  }
  m.core_out = t("core");
  add(g, tanh_form ? OpKind::kTanh : OpKind::kErf, "core", {core_in}, {m.core_out});
  const TensorId h = t("h");
  add(g, OpKind::kAdd, "plus_one", {m.core_out, scalar("c_one", 1.0f)}, {h});
  const TensorId x_in_product = c.other_x_in_product ? other : m.x;
  m.y = t("y");
  if (c.half_first) {
    const TensorId half_x = t("half_x");
    add(g, OpKind::kMul, "half_x", {x_in_product, scalar("c_half", 0.5f)}, {half_x});
    add(g, OpKind::kMul, "gelu_out", {half_x, h}, {m.y});
  } else {
    const TensorId xh = t("xh");
    add(g, OpKind::kMul, "xh", {x_in_product, h}, {xh});
    add(g, OpKind::kMul, "gelu_out", {scalar("c_half", 0.5f), xh}, {m.y});
  }
  g.outputs() = {m.y};
  if (c.erf_read_twice) {
    const TensorId extra = t("extra");
    add(g, OpKind::kRelu, "extra", {m.core_out}, {extra});
    g.outputs().push_back(extra);
  }
  if (c.intermediate_is_output) g.outputs().push_back(h);
  return m;
}

// The one Gelu node replacing the chain, reading the MatMul's output and
// writing the chain's output tensor.
void check_fused(Chain& m, bool tanh_form) {
  CHECK(fuse_gelu(m.g) == 1);
  REQUIRE(m.g.num_nodes() == 2);
  const Node& gelu = m.g.node(1);
  CHECK(gelu.op == OpKind::kGelu);
  CHECK(gelu.name == "gelu_out");
  CHECK(gelu.attr<GeluAttrs>().tanh == tanh_form);
  REQUIRE(gelu.inputs.size() == 1);
  CHECK(m.g.tensor(gelu.inputs[0]).name == "x");
  CHECK(m.g.tensor(gelu.outputs.at(0)).name == "y");
  CHECK(m.g.tensor(m.g.outputs().at(0)).name == "y");
  CHECK_NOTHROW(infer_shapes(m.g));
}

void check_untouched(Chain& m) {
  const size_t nodes = m.g.num_nodes();
  CHECK(fuse_gelu(m.g) == 0);
  CHECK(m.g.num_nodes() == nodes);
  CHECK(count_ops(m.g, OpKind::kGelu) == 0);
}

}  // namespace gelu

TEST_CASE("fuse_gelu replaces PyTorch's erf GELU chain with one Gelu node", "[ir][passes]") {
  gelu::Chain m = gelu::make(false);
  gelu::check_fused(m, false);
}

TEST_CASE("fuse_gelu replaces PyTorch's tanh GELU chain with one Gelu node", "[ir][passes]") {
  gelu::Chain m = gelu::make(true);
  gelu::check_fused(m, true);
}

TEST_CASE("fuse_gelu accepts Pow(x, 3) and the product grouped as (x * 0.5) * h", "[ir][passes]") {
  gelu::Changes c;
  c.cube_by_pow = true;
  c.half_first = true;
  gelu::Chain tanh_chain = gelu::make(true, c);
  gelu::check_fused(tanh_chain, true);
  gelu::Chain erf_chain = gelu::make(false, c);
  gelu::check_fused(erf_chain, false);
}

TEST_CASE("fuse_gelu leaves chains that are not exactly GELU alone", "[ir][passes]") {
  SECTION("a divisor other than sqrt(2)") {
    gelu::Changes c;
    c.sqrt2 = 1.4143f;  // 7e-5 off
    gelu::Chain m = gelu::make(false, c);
    gelu::check_untouched(m);
  }
  SECTION("a cubic coefficient other than 0.044715") {
    gelu::Changes c;
    c.cubic = 0.0447f;
    gelu::Chain m = gelu::make(true, c);
    gelu::check_untouched(m);
  }
  SECTION("the erf output read by another node") {
    gelu::Changes c;
    c.erf_read_twice = true;
    gelu::Chain m = gelu::make(false, c);
    gelu::check_untouched(m);
  }
  SECTION("the tanh output read by another node") {
    gelu::Changes c;
    c.erf_read_twice = true;
    gelu::Chain m = gelu::make(true, c);
    gelu::check_untouched(m);
  }
  SECTION("an intermediate that is a graph output") {
    gelu::Changes c;
    c.intermediate_is_output = true;
    gelu::Chain m = gelu::make(false, c);
    gelu::check_untouched(m);
  }
  SECTION("the product reading another tensor than erf's x") {
    gelu::Changes c;
    c.other_x_in_product = true;
    gelu::Chain m = gelu::make(false, c);
    gelu::check_untouched(m);
    gelu::Chain half_first = gelu::make(true, [] { gelu::Changes d; d.other_x_in_product = d.half_first = true; return d; }());
    gelu::check_untouched(half_first);
  }
}

TEST_CASE("run_import_passes fuses GELU chains", "[ir][passes]") {
  gelu::Chain m = gelu::make(true);
  CHECK(run_import_passes(m.g).gelus_fused == 1);
  CHECK(count_ops(m.g, OpKind::kGelu) == 1);
}
