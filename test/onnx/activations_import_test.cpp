// The activations of networks outside torchvision as the importer reads
// them: Mish (ONNX 18) and PyTorch's x * tanh(softplus(x)) made one node,
// variadic Sum, Mean, Max and Min as chains of binary operators, Squeeze and
// Unsqueeze of an activation as a Reshape, and the
// attribute and slope checks that name the node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "import_error.h"
#include "ir/graph.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::ir::OpKind;
using ios::test::import_error;
using ios::test::ModelBuilder;

size_t count(const ios::ir::Graph& g, OpKind op) {
  return static_cast<size_t>(
      std::count_if(g.nodes().begin(), g.nodes().end(), [&](const ios::ir::Node& n) { return n.op == op; }));
}

// Conv -> the activation under test -> output, on [1, 2, 4, 4].
ModelBuilder conv_then(int64_t opset) {
  ModelBuilder b(opset);
  if (opset >= 18) b.model.set_ir_version(10);
  b.input("x", {1, 2, 4, 4});
  b.ramp_weight("w", {2, 2, 1, 1});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  return b;
}

}  // namespace

TEST_CASE("Mish of opset 18 and PyTorch's x * tanh(softplus(x)) import as one Mish node", "[onnx][activations]") {
  SECTION("ONNX Mish (opset 18)") {
    ModelBuilder b = conv_then(18);
    b.node("Mish", {"c"}, {"y"}, "mish");
    b.output("y", 4);
    const auto model = ios::onnx::import_model(b.save("mish18.onnx"));
    CHECK(count(model.graph, OpKind::kMish) == 1);
    CHECK(model.graph.num_nodes() == 2);
  }
  for (bool tanh_first : {false, true}) {
    DYNAMIC_SECTION("the exporter's chain, the product's tanh operand " << (tanh_first ? "first" : "second")) {
      ModelBuilder b = conv_then(13);
      b.node("Softplus", {"c"}, {"sp"});
      b.node("Tanh", {"sp"}, {"t"});
      b.node("Mul", tanh_first ? std::vector<std::string>{"t", "c"} : std::vector<std::string>{"c", "t"}, {"y"});
      b.output("y", 4);
      const auto model = ios::onnx::import_model(b.save("mish13.onnx"));
      CHECK(count(model.graph, OpKind::kMish) == 1);
      CHECK(model.graph.num_nodes() == 2);
    }
  }
  SECTION("a chain whose softplus is read elsewhere stays as it is") {
    ModelBuilder b = conv_then(13);
    b.node("Softplus", {"c"}, {"sp"});
    b.node("Tanh", {"sp"}, {"t"});
    b.node("Mul", {"c", "t"}, {"y"});
    b.output("y", 4);
    b.output("sp", 4);
    const auto model = ios::onnx::import_model(b.save("mish_shared.onnx"));
    CHECK(count(model.graph, OpKind::kMish) == 0);
    CHECK(count(model.graph, OpKind::kSoftplus) == 1);
  }
}

TEST_CASE("variadic Sum, Mean, Max and Min import as chains of binary operators", "[onnx][activations]") {
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    DYNAMIC_SECTION(op) {
      ModelBuilder b(13);
      b.input("a", {1, 3, 2, 2});
      b.input("b", {1, 3, 2, 2});
      b.input("c", {3, 1, 1});
      b.node(op, {"a", "b", "c"}, {"y"}, "variadic");
      b.output("y", 4);
      const auto model = ios::onnx::import_model(b.save(std::string(op) + ".onnx"));
      const OpKind chain = std::string(op) == "Max" ? OpKind::kMax : std::string(op) == "Min" ? OpKind::kMin : OpKind::kAdd;
      CHECK(count(model.graph, chain) == 2);
      CHECK(count(model.graph, OpKind::kMul) == (std::string(op) == "Mean" ? 1u : 0u));
      CHECK(model.graph.tensor(model.graph.outputs()[0]).name == "y");
      CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == ios::ir::Shape{1, 3, 2, 2});
    }
  }
}

TEST_CASE("hostile activation attributes and PRelu slopes are refused naming the node", "[onnx][activations][errors]") {
  SECTION("a slope of the wrong length") {
    ModelBuilder b = conv_then(13);
    b.ramp_weight("slope", {5, 1, 1});
    b.node("PRelu", {"c", "slope"}, {"y"}, "prelu");
    b.output("y", 4);
    const std::string message = import_error(b.save("prelu_slope.onnx"));
    CHECK(message.find("prelu") != std::string::npos);
  }
  SECTION("a slope that would grow the output") {
    ModelBuilder b = conv_then(13);
    b.ramp_weight("slope", {3, 2, 1, 1});
    b.node("PRelu", {"c", "slope"}, {"y"}, "prelu");
    b.output("y", 4);
    const std::string message = import_error(b.save("prelu_grow.onnx"));
    CHECK(message.find("'prelu' (PRelu): the slope has shape 3x2x1x1, which does not broadcast to the input's "
                       "1x2x4x4") != std::string::npos);
  }
  SECTION("Celu with alpha 0 (it divides by alpha)") {
    ModelBuilder b = conv_then(13);
    ModelBuilder::real(b.node("Celu", {"c"}, {"y"}, "celu"), "alpha", 0.0f);
    b.output("y", 4);
    CHECK(import_error(b.save("celu0.onnx")).find("'celu' (Celu): alpha 0 is not a positive number") !=
          std::string::npos);
  }
  SECTION("LeakyRelu with an infinite alpha") {
    ModelBuilder b = conv_then(13);
    ModelBuilder::real(b.node("LeakyRelu", {"c"}, {"y"}, "leaky"), "alpha", std::numeric_limits<float>::infinity());
    b.output("y", 4);
    CHECK(import_error(b.save("leaky_inf.onnx")).find("'leaky' (LeakyRelu): alpha inf is not a finite number") !=
          std::string::npos);
  }
  SECTION("Mish before opset 18") {
    ModelBuilder b = conv_then(17);
    b.node("Mish", {"c"}, {"y"}, "mish");
    b.output("y", 4);
    CHECK(import_error(b.save("mish17.onnx")).find("mish") != std::string::npos);
  }
}

TEST_CASE("Squeeze and Unsqueeze of an activation import as a Reshape", "[onnx][activations]") {
  // PyTorch's AvgPool1d: Unsqueeze to N,C,1,L, a 2-D pool, Squeeze back.
  ModelBuilder b(13);
  b.input("x", {2, 3, 8});
  b.int_weight("axes", {1}, {2});
  b.node("Unsqueeze", {"x", "axes"}, {"u"}, "unsqueeze");
  auto& pool = b.node("AveragePool", {"u"}, {"p"}, "pool");
  ModelBuilder::ints(pool, "kernel_shape", {1, 2});
  ModelBuilder::ints(pool, "strides", {1, 2});
  b.node("Squeeze", {"p", "axes"}, {"y"}, "squeeze");
  b.output("y", 3);
  const auto model = ios::onnx::import_model(b.save("squeeze.onnx"));
  CHECK(count(model.graph, OpKind::kReshape) == 2);
  CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == ios::ir::Shape{2, 3, 4});
}
