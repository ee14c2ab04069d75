// fuse_layer_norm (ir/passes.h) on hand-built graphs of PyTorch's opset-13
// layer normalization: what it fuses, into what, and every variation it must
// leave alone.
#include <catch2/catch.hpp>

#include <functional>

#include "ir/passes.h"
#include "ir/shape_inference.h"
#include "ir_test_util.h"

namespace {

using namespace ios::ir;
using ios::test::activation;
using ios::test::add;
using ios::test::count_ops;
using ios::test::graph_input;
using ios::test::weight;

// Knobs for one decomposed layer normalization of x [2, 5, 8].
struct Pattern {
  std::vector<int64_t> axes{2};     // of both reductions (normalized, sorted)
  std::vector<int64_t> var_axes{};  // when set, the variance's axes differ
  float exponent = 2.0f;
  float eps = 1e-5f;
  bool eps_first = false;  // Add(eps, v)
  bool mul = true, add_bias = true;
  bool gamma_first = false;  // Mul(gamma, y)
  Shape gamma_shape{8};
  bool gamma_constant = true;
  bool extra_use_of_mean = false;  // m is also a graph output
  bool extra_use_of_diff = false;  // d is also read by a Relu
  bool second_x = false;           // the variance's Sub reads another input
};

struct Built {
  Graph g;
  TensorId x = kNone, y = kNone;
};

Built build(const Pattern& p) {
  Built b;
  Graph& g = b.g;
  b.x = graph_input(g, "x", {2, 5, 8});
  const TensorId x2 = p.second_x ? graph_input(g, "x2", {2, 5, 8}) : b.x;
  ReduceAttrs r;
  r.axes = p.axes;
  const TensorId m = activation(g, "m");
  add(g, OpKind::kReduceMean, "mean", {b.x}, {m}, r);
  const TensorId d = activation(g, "d");
  add(g, OpKind::kSub, "sub", {x2, m}, {d});
  const TensorId pw = activation(g, "p");
  add(g, OpKind::kPow, "pow", {d, weight(g, "two", {}, {p.exponent})}, {pw});
  ReduceAttrs rv = r;
  if (!p.var_axes.empty()) rv.axes = p.var_axes;
  const TensorId v = activation(g, "v");
  add(g, OpKind::kReduceMean, "var", {pw}, {v}, rv);
  const TensorId eps = weight(g, "eps", {}, {p.eps});
  const TensorId ve = activation(g, "ve");
  add(g, OpKind::kAdd, "add_eps", p.eps_first ? std::vector{eps, v} : std::vector{v, eps}, {ve});
  const TensorId s = activation(g, "s");
  add(g, OpKind::kSqrt, "sqrt", {ve}, {s});
  TensorId y = activation(g, "n");
  add(g, OpKind::kDiv, "div", {d, s}, {y});
  if (p.mul) {
    std::vector<float> gamma(static_cast<size_t>(num_elements(p.gamma_shape)));
    for (size_t i = 0; i < gamma.size(); ++i) gamma[i] = 0.5f + 0.25f * static_cast<float>(i);
    const TensorId gt = p.gamma_constant ? weight(g, "gamma", p.gamma_shape, gamma)
                                         : graph_input(g, "gamma", p.gamma_shape);
    const TensorId out = activation(g, "scaled");
    add(g, OpKind::kMul, "mul", p.gamma_first ? std::vector{gt, y} : std::vector{y, gt}, {out});
    y = out;
  }
  if (p.add_bias) {
    const TensorId out = activation(g, "y");
    add(g, OpKind::kAdd, "add_beta", {y, weight(g, "beta", {8}, {0, 1, 2, 3, 4, 5, 6, 7})}, {out});
    y = out;
  }
  g.outputs().push_back(y);
  if (p.extra_use_of_mean) g.outputs().push_back(m);
  if (p.extra_use_of_diff) {
    const TensorId relu = activation(g, "relu");
    add(g, OpKind::kRelu, "relu", {d}, {relu});
    g.outputs().push_back(relu);
  }
  infer_shapes(g);
  b.y = y;
  return b;
}

}  // namespace

TEST_CASE("fuse_layer_norm turns PyTorch's decomposition into one LayerNormalization",
          "[ir][passes][layernorm]") {
  SECTION("Mul by gamma and Add of beta become Scale and B") {
    Built b = build(Pattern{});
    const std::string out_name = b.g.tensor(b.y).name;
    REQUIRE(fuse_layer_norm(b.g) == 1);
    REQUIRE(b.g.num_nodes() == 1);
    const Node& ln = b.g.node(0);
    CHECK(ln.op == OpKind::kLayerNorm);
    CHECK(ln.attr<LayerNormAttrs>().axis == 2);
    CHECK(ln.attr<LayerNormAttrs>().epsilon == 1e-5f);
    REQUIRE(ln.inputs.size() == 3);
    CHECK(b.g.tensor(ln.inputs[0]).name == "x");
    CHECK(b.g.tensor(ln.inputs[1]).name == "gamma");
    CHECK(b.g.tensor(ln.inputs[2]).name == "beta");
    CHECK(b.g.tensor(ln.outputs.at(0)).name == out_name);  // downstream names unchanged
    CHECK(b.g.tensor(b.g.outputs().at(0)).name == out_name);
    infer_shapes(b.g);
    CHECK(b.g.tensor(ln.outputs[0]).shape == Shape{2, 5, 8});
  }
  SECTION("operands in the other order, eps first and gamma first, still fuse") {
    Pattern p;
    p.eps_first = true;
    p.gamma_first = true;
    p.gamma_shape = {1, 1, 8};  // broadcasts to the normalized dims
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    CHECK(count_ops(b.g, OpKind::kLayerNorm) == 1);
    CHECK(b.g.num_nodes() == 1);
  }
  SECTION("without Mul and Add: Scale is ones, no B") {
    Pattern p;
    p.mul = false;
    p.add_bias = false;
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    REQUIRE(b.g.num_nodes() == 1);
    const Node& ln = b.g.node(0);
    REQUIRE(ln.inputs.size() == 2);
    const Tensor& scale = b.g.tensor(ln.inputs[1]);
    REQUIRE(scale.is_constant());
    CHECK(scale.shape == Shape{8});
    CHECK(*scale.data == std::vector<float>(8, 1.0f));
    CHECK(b.g.tensor(ln.outputs[0]).name == "n");
  }
  SECTION("an Add of a bias without a Mul becomes B") {
    Pattern p;
    p.mul = false;
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    REQUIRE(b.g.num_nodes() == 1);
    REQUIRE(b.g.node(0).inputs.size() == 3);
    CHECK(b.g.tensor(b.g.node(0).inputs[2]).name == "beta");
  }
  SECTION("several trailing axes") {
    Pattern p;
    p.axes = {1, 2};
    p.gamma_shape = {5, 8};
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    CHECK(b.g.node(0).op == OpKind::kLayerNorm);
    CHECK(b.g.node(0).attr<LayerNormAttrs>().axis == 1);
  }
}

TEST_CASE("fuse_layer_norm leaves every other pattern alone", "[ir][passes][layernorm]") {
  const std::vector<std::pair<std::string, std::function<void(Pattern&)>>> variants{
      {"exponent 3", [](Pattern& p) { p.exponent = 3.0f; }},
      {"the mean also a graph output", [](Pattern& p) { p.extra_use_of_mean = true; }},
      {"the difference read by another node", [](Pattern& p) { p.extra_use_of_diff = true; }},
      {"the variance of another tensor", [](Pattern& p) { p.second_x = true; }},
      {"not the last axis",
       [](Pattern& p) {
         p.axes = {1};
         p.gamma_shape = {1, 8};
         p.mul = false;
         p.add_bias = false;
       }},
      {"reductions over different axes",
       [](Pattern& p) {
         p.axes = {1, 2};
         p.var_axes = {2};
         p.mul = false;
         p.add_bias = false;
       }},
      {"a negative epsilon", [](Pattern& p) { p.eps = -1e-3f; }},
  };
  for (const auto& [name, change] : variants) {
    SECTION(name) {
      Pattern p;
      change(p);
      Built b = build(p);
      const size_t nodes = b.g.num_nodes();
      CHECK(fuse_layer_norm(b.g) == 0);
      CHECK(b.g.num_nodes() == nodes);
      CHECK(count_ops(b.g, OpKind::kLayerNorm) == 0);
    }
  }
  SECTION("a gamma computed at run time stays a Mul after the fused normalization") {
    Pattern p;
    p.gamma_constant = false;
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    CHECK(count_ops(b.g, OpKind::kLayerNorm) == 1);
    CHECK(count_ops(b.g, OpKind::kMul) == 1);  // not folded into Scale
    // The bias Add follows the Mul, not the normalization.
    CHECK(count_ops(b.g, OpKind::kAdd) == 1);
  }
  SECTION("a gamma that would broadcast the output stays a Mul") {
    Pattern p;
    p.gamma_shape = {3, 1, 1, 8};
    Built b = build(p);
    REQUIRE(fuse_layer_norm(b.g) == 1);
    CHECK(count_ops(b.g, OpKind::kMul) == 1);
  }
}
