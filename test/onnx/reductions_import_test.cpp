// ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceMean, ReduceL1, ReduceL2,
// ReduceSumSquare and ReduceLogSumExp over any axes,
// Tile and LogSoftmax as the importer reads them, and their hostile forms
// refused naming the node.
#include <catch2/catch.hpp>

#include "import_error.h"
#include "ir/graph.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::ir::OpKind;
using ios::test::import_error;
using ios::test::ModelBuilder;

const ios::ir::Node& last_node(const ios::ir::Graph& g) { return g.node(static_cast<ios::ir::NodeId>(g.num_nodes() - 1)); }

}  // namespace

TEST_CASE("reductions over any axes: ReduceSum's axes input, the others' attribute", "[onnx][reduce]") {
  SECTION("ReduceSum (opset 13) over channels and width, without keepdims") {
    ModelBuilder b(13);
    b.input("x", {2, 3, 4, 5});
    b.int_weight("axes", {2}, {1, -1});
    ModelBuilder::integer(b.node("ReduceSum", {"x", "axes"}, {"y"}, "sum"), "keepdims", 0);
    b.output("y", 2);
    const auto model = ios::onnx::import_model(b.save("reduce_sum.onnx"));
    const auto& sum = last_node(model.graph);
    CHECK(sum.op == OpKind::kReduceSum);
    CHECK(sum.attr<ios::ir::ReduceAttrs>().axes == std::vector<int64_t>{1, 3});
    CHECK(model.graph.tensor(sum.outputs[0]).shape == ios::ir::Shape{2, 4});
  }
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean"}) {
    DYNAMIC_SECTION(op << " over channels (opset 13)") {
      ModelBuilder b(13);
      b.input("x", {2, 3, 4});
      ModelBuilder::ints(b.node(op, {"x"}, {"y"}, "reduce"), "axes", {1});
      b.output("y", 3);
      const auto model = ios::onnx::import_model(b.save(std::string(op) + ".onnx"));
      CHECK(model.graph.tensor(last_node(model.graph).outputs[0]).shape == ios::ir::Shape{2, 1, 4});
    }
  }
  // The norms and ReduceLogSumExp (ConvNeXt-V2's GRN): the axes an attribute
  // at opset 13, an input at opset 18 (read as the opset-13 form), negative
  // axes normalized, with and without keepdims.
  const std::vector<std::pair<const char*, OpKind>> norms = {{"ReduceL1", OpKind::kReduceL1},
                                                             {"ReduceL2", OpKind::kReduceL2},
                                                             {"ReduceSumSquare", OpKind::kReduceSumSquare},
                                                             {"ReduceLogSumExp", OpKind::kReduceLogSumExp}};
  for (const auto& [op, kind] : norms) {
    for (const int64_t opset : {13, 18}) {
      for (const int64_t keepdims : {0, 1}) {
        DYNAMIC_SECTION(op << " over height and width (opset " << opset << ", keepdims " << keepdims << ")") {
          ModelBuilder b(opset);
          if (opset >= 18) b.model.set_ir_version(10);  // what opset-18 exporters write
          b.input("x", {2, 3, 4, 5});
          auto& node = opset >= 18 ? b.node(op, {"x", "axes"}, {"y"}, "norm") : b.node(op, {"x"}, {"y"}, "norm");
          if (opset >= 18) {
            b.int_weight("axes", {2}, {-2, 1});
          } else {
            ModelBuilder::ints(node, "axes", {-2, 1});
          }
          ModelBuilder::integer(node, "keepdims", keepdims);
          b.output("y", keepdims != 0 ? 4 : 2);
          const auto model = ios::onnx::import_model(b.save(std::string(op) + ".onnx"));
          const auto& n = last_node(model.graph);
          CHECK(n.op == kind);
          CHECK(n.attr<ios::ir::ReduceAttrs>().axes == std::vector<int64_t>{1, 2});
          CHECK(model.graph.tensor(n.outputs[0]).shape ==
                (keepdims != 0 ? ios::ir::Shape{2, 1, 1, 5} : ios::ir::Shape{2, 5}));
        }
      }
    }
    DYNAMIC_SECTION(op << " without axes reduces every axis") {
      ModelBuilder b(13);
      b.input("x", {2, 3, 4});
      ModelBuilder::integer(b.node(op, {"x"}, {"y"}, "all"), "keepdims", 0);
      b.output("y", 0);
      const auto model = ios::onnx::import_model(b.save(std::string(op) + "_all.onnx"));
      CHECK(model.graph.tensor(last_node(model.graph).outputs[0]).shape == ios::ir::Shape{});
    }
  }
}

TEST_CASE("hostile reductions, tiles and log-softmaxes are refused naming the node", "[onnx][reduce][errors]") {
  SECTION("an axis listed twice") {
    ModelBuilder b(13);
    b.input("x", {2, 3, 4});
    ModelBuilder::ints(b.node("ReduceMax", {"x"}, {"y"}, "twice"), "axes", {1, -2});
    b.output("y", 3);
    const std::string message = import_error(b.save("axis_twice.onnx"));
    CHECK(message.find("twice") != std::string::npos);
  }
  SECTION("ReduceSum's noop_with_empty_axes without axes") {
    ModelBuilder b(13);
    b.input("x", {2, 3});
    ModelBuilder::integer(b.node("ReduceSum", {"x"}, {"y"}, "noop"), "noop_with_empty_axes", 1);
    b.output("y", 2);
    CHECK(import_error(b.save("noop.onnx")).find("'noop' (ReduceSum): noop_with_empty_axes = 1") != std::string::npos);
  }
  const auto tile = [](std::vector<int64_t> repeats) {
    ModelBuilder b(13);
    b.input("x", {2, 3, 4});
    b.int_weight("repeats", {static_cast<int64_t>(repeats.size())}, repeats);
    b.node("Tile", {"x", "repeats"}, {"y"}, "tile");
    b.output("y", 3);
    return b;
  };
  SECTION("a Tile of the right repeats imports") {
    const auto model = ios::onnx::import_model(tile({1, 2, 3}).save("tile.onnx"));
    CHECK(model.graph.tensor(last_node(model.graph).outputs[0]).shape == ios::ir::Shape{2, 6, 12});
  }
  SECTION("Tile repeats of the wrong count, zero, negative or overflowing") {
    for (const auto& repeats : {std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 0, 1},
                                std::vector<int64_t>{1, -3, 1}, std::vector<int64_t>{1, int64_t{1} << 40, 1 << 20},
                                std::vector<int64_t>{INT64_MAX, INT64_MAX, INT64_MAX}}) {
      const std::string message = import_error(tile(repeats).save("tile_bad.onnx"));
      CHECK(message.find("tile") != std::string::npos);
    }
  }
  SECTION("Tile repeats computed at run time") {
    ModelBuilder b(13);
    b.input("x", {2, 3});
    b.input("repeats", {2});
    b.model.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        ::onnx::TensorProto::INT64);
    b.node("Tile", {"x", "repeats"}, {"y"}, "tile");
    b.output("y", 2);
    CHECK(import_error(b.save("tile_runtime.onnx")).find("repeats") != std::string::npos);
  }
  SECTION("LogSoftmax before opset 13 over flattened axes") {
    ModelBuilder b(11);
    b.input("x", {2, 3, 4});
    ModelBuilder::integer(b.node("LogSoftmax", {"x"}, {"y"}, "logsm"), "axis", 1);
    b.output("y", 3);
    CHECK(import_error(b.save("logsoftmax11.onnx")).find("'logsm' (LogSoftmax): LogSoftmax-11 normalizes over axes 1..") !=
          std::string::npos);
  }
}
