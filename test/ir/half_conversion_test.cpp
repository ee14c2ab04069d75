// The conversion to half precision (ir/half_conversion.h): which operators stay
// float32, and where the conversion puts them.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "ir/element_type.h"
#include "ir/op_info.h"
#include "ir/half_conversion.h"
#include "ir_test_util.h"

namespace ios::ir {
namespace {

// The operators the conversion keeps in float32, as docs/cli.md promises
// users (`--precision fp16|bf16`): normalizations, Softmax and LogSoftmax,
// the summing reductions (ReduceL2, ReduceSumSquare and ReduceLogSumExp among
// them: a sum of squares leaves float16's range from a norm of 256), Exp (its
// result leaves float16's range from an input of 11.1: e^11.1 > 65504) and
// Pow. Written out here, not read from the library, so that an operator
// dropped from or added to the list fails.
const std::set<std::string> kDocumentedFloat32 = {
    "LayerNormalization", "BatchNormalization", "Softmax",         "LogSoftmax",
    "ReduceMean",         "ReduceSum",          "ReduceProd",      "ReduceL1",
    "ReduceL2",           "ReduceSumSquare",    "ReduceLogSumExp", "Exp",
    "Pow"};

TEST_CASE("the operators kept in float32 at half precision are exactly the documented ones",
          "[ir][precision]") {
  std::set<std::string> kept;
  for (const OpInfo& info : all_ops()) {
    if (kept_in_float32(info.kind)) kept.insert(std::string(info.onnx_name));
  }
  CHECK(kept == kDocumentedFloat32);
  // Every documented name is an operator of the table.
  for (const std::string& name : kDocumentedFloat32) {
    INFO(name);
    CHECK(find_onnx_op(name) != nullptr);
  }
}

// x -> Relu -> Exp -> Relu -> y, converted: the Relus compute in the 16-bit
// type, Exp in float32 between Casts, the graph output float32.
TEST_CASE("a converted Exp computes and stores float32 between half-precision neighbours",
          "[ir][precision]") {
  for (const ElementType type : {ElementType::kFloat16, ElementType::kBFloat16}) {
    INFO(type_name(type));
    Graph g;
    const TensorId x = test::graph_input(g, "x", {1, 4});
    const TensorId r = test::activation(g, "r", {1, 4});
    const TensorId e = test::activation(g, "e", {1, 4});
    const TensorId y = test::activation(g, "y", {1, 4});
    test::add(g, OpKind::kRelu, "relu", {x}, {r});
    test::add(g, OpKind::kExp, "exp", {r}, {e});
    test::add(g, OpKind::kRelu, "relu2", {e}, {y});
    g.outputs().push_back(y);
    g.relink();
    ConversionOptions options;
    options.type = type;
    const ConversionStats stats = convert_to_half(g, options, "exp.onnx");
    CHECK(stats.float32_nodes == 1);
    CHECK(stats.half_nodes == 2);
    for (const Node& n : g.nodes()) {
      INFO(n.name);
      const ElementType out = g.tensor(n.outputs[0]).type;
      if (n.op == OpKind::kExp) {
        CHECK(out == ElementType::kFloat32);
        for (TensorId in : n.inputs) CHECK(g.tensor(in).type == ElementType::kFloat32);
      } else if (n.op == OpKind::kRelu) {
        CHECK(out == type);
      }
    }
    CHECK(g.tensor(g.outputs().at(0)).type == ElementType::kFloat32);
  }
}

}  // namespace
}  // namespace ios::ir
