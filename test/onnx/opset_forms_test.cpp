// Models at IR 9-10 and opsets 18-21: each changed operator form is read as
// its opset-13 equivalent, and forms without one are named errors.
#include <catch2/catch.hpp>

#include "import_error.h"
#include "ir/graph.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::test::import_error;
using ios::test::ModelBuilder;

ModelBuilder newer(int64_t opset, int64_t ir_version = 10) {
  ModelBuilder b(opset);
  b.model.set_ir_version(ir_version);
  return b;
}

const ios::ir::Node& only_node(const ios::ir::Graph& g, ios::ir::OpKind op) {
  const ios::ir::Node* found = nullptr;
  for (const auto& n : g.nodes()) {
    if (n.op == op) {
      REQUIRE(found == nullptr);
      found = &n;
    }
  }
  REQUIRE(found != nullptr);
  return *found;
}

}  // namespace

TEST_CASE("an IR 10 / opset 21 model passes the IR 8 checker through the rewrite", "[onnx][opset]") {
  for (int64_t opset : {18, 19, 20, 21}) {
    ModelBuilder b = newer(opset);
    b.input("x", {1, 2, 4, 4});
    b.node("Relu", {"x"}, {"y"});
    b.output("y", 4);
    const auto model = ios::onnx::import_model(b.save("relu-" + std::to_string(opset) + ".onnx"));
    CHECK(model.graph.num_nodes() == 1);
  }
}

TEST_CASE("versions newer than ios reads are refused by name", "[onnx][opset][errors]") {
  ModelBuilder b = newer(22);
  b.input("x", {1, 2, 4, 4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", 4);
  CHECK(import_error(b.save("opset22.onnx")).find("opset 22 is newer than ios reads (up to 21)") !=
        std::string::npos);
  b.model.mutable_opset_import(0)->set_version(13);
  b.model.set_ir_version(11);
  CHECK(import_error(b.save("ir11.onnx")).find("IR version 11 is newer than ios reads (up to 10)") !=
        std::string::npos);
}

TEST_CASE("opset 18 ReduceMean axes input becomes the axes of the opset-13 form", "[onnx][opset]") {
  ModelBuilder b = newer(18);
  b.input("x", {1, 3, 4, 4});
  b.int_weight("axes", {2}, {-1, 2});
  ModelBuilder::integer(b.node("ReduceMean", {"x", "axes"}, {"y"}, "mean"), "keepdims", 1);
  b.output("y", 4);
  const auto model = ios::onnx::import_model(b.save("reduce18.onnx"));
  const auto& mean = only_node(model.graph, ios::ir::OpKind::kReduceMean);
  CHECK(mean.attr<ios::ir::ReduceAttrs>().axes == std::vector<int64_t>{2, 3});
  CHECK(model.graph.tensor(mean.outputs[0]).shape == ios::ir::Shape{1, 3, 1, 1});

  SECTION("axes computed at run time are named") {
    ModelBuilder c = newer(18);
    c.input("x", {1, 3, 4, 4});
    c.input("axes", {2});
    c.model.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        ::onnx::TensorProto::INT64);
    c.node("ReduceMean", {"x", "axes"}, {"y"}, "mean");
    c.output("y", 4);
    const std::string message = import_error(c.save("reduce18_input_axes.onnx"));
    CHECK(message.find("'mean' (ReduceMean)") != std::string::npos);
    CHECK(message.find("axes input 'axes' is computed at run time") != std::string::npos);
  }
  SECTION("noop_with_empty_axes has no opset-13 equivalent") {
    ModelBuilder c = newer(18);
    c.input("x", {1, 3, 4, 4});
    ModelBuilder::integer(c.node("ReduceMean", {"x"}, {"y"}, "mean"), "noop_with_empty_axes", 1);
    c.output("y", 4);
    CHECK(import_error(c.save("reduce18_noop.onnx")).find("noop_with_empty_axes") != std::string::npos);
  }
}

TEST_CASE("opset 18 Split num_outputs becomes split sizes, the last part smaller", "[onnx][opset]") {
  ModelBuilder b = newer(18);
  b.input("x", {1, 10, 4, 4});
  auto& split = b.node("Split", {"x"}, {"a", "b", "c"}, "split");
  ModelBuilder::integer(split, "axis", 1);
  ModelBuilder::integer(split, "num_outputs", 3);
  b.node("Relu", {"a"}, {"ya"});
  b.node("Relu", {"b"}, {"yb"});
  b.node("Relu", {"c"}, {"yc"});
  b.output("ya", 4);
  b.output("yb", 4);
  b.output("yc", 4);
  const auto model = ios::onnx::import_model(b.save("split18.onnx"));
  CHECK(only_node(model.graph, ios::ir::OpKind::kSplit).attr<ios::ir::SplitAttrs>().sizes ==
        std::vector<int64_t>{4, 4, 2});

  SECTION("num_outputs that disagrees with the outputs is named") {
    b.model.mutable_graph()->mutable_node(0)->mutable_attribute(1)->set_i(2);
    CHECK(import_error(b.save("split18_bad.onnx")).find("num_outputs is 2 but the node has 3 outputs") !=
          std::string::npos);
  }
}

TEST_CASE("opset 18 Pad axes input becomes pads for every axis", "[onnx][opset]") {
  for (const bool negative : {false, true}) {
    ModelBuilder b = newer(18);
    b.input("x", {1, 2, 4, 4});
    b.int_weight("pads", {4}, {1, 2, 3, 4});
    b.int_weight("axes", {2}, negative ? std::vector<int64_t>{-2, -1} : std::vector<int64_t>{2, 3});
    b.weight("value", {}, {0.5f});
    ModelBuilder::text(b.node("Pad", {"x", "pads", "value", "axes"}, {"p"}, "pad"), "mode", "edge");
    b.node("Relu", {"p"}, {"y"});
    b.output("y", 4);
    const auto model = ios::onnx::import_model(b.save("pad18.onnx"));
    const auto& pad = only_node(model.graph, ios::ir::OpKind::kPad);
    CHECK(pad.attr<ios::ir::PadAttrs>().pads == std::vector<int64_t>{0, 0, 1, 2, 0, 0, 3, 4});
    CHECK(model.graph.tensor(pad.outputs[0]).shape == ios::ir::Shape{1, 2, 8, 10});
  }
  SECTION("mode wrap (opset 19) is refused by name") {
    ModelBuilder b = newer(19);
    b.input("x", {1, 2, 4, 4});
    b.int_weight("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    ModelBuilder::text(b.node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", "wrap");
    b.output("y", 4);
    const std::string message = import_error(b.save("pad19_wrap.onnx"));
    CHECK(message.find("'pad' (Pad)") != std::string::npos);
    CHECK(message.find("'wrap'") != std::string::npos);
  }
}

TEST_CASE("opset 19 AveragePool dilations: 1 is read, others are refused", "[onnx][opset]") {
  for (const int64_t dilation : {1, 2}) {
    ModelBuilder b = newer(19);
    b.input("x", {1, 2, 8, 8});
    auto& pool = b.node("AveragePool", {"x"}, {"y"}, "pool");
    ModelBuilder::ints(pool, "kernel_shape", {3, 3});
    ModelBuilder::ints(pool, "dilations", {dilation, dilation});
    b.output("y", 4);
    const std::string path = b.save("pool19.onnx");
    if (dilation == 1) {
      CHECK(ios::onnx::import_model(path).graph.num_nodes() == 1);
    } else {
      CHECK(import_error(path).find("AveragePool with dilations") != std::string::npos);
    }
  }
}

TEST_CASE("opset 18 Resize antialias 0 and stretch are read, other values refused", "[onnx][opset]") {
  auto resize18 = [](int64_t opset, int64_t antialias, const std::string& policy, const std::string& coordinates) {
    ModelBuilder b = newer(opset);
    b.input("x", {1, 2, 4, 4});
    b.weight("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
    auto& node = b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
    ModelBuilder::text(node, "mode", "linear");
    ModelBuilder::text(node, "coordinate_transformation_mode", coordinates);
    ModelBuilder::integer(node, "antialias", antialias);
    ModelBuilder::text(node, "keep_aspect_ratio_policy", policy);
    b.output("y", 4);
    return b;
  };
  const auto model = ios::onnx::import_model(resize18(18, 0, "stretch", "half_pixel").save("resize18.onnx"));
  const auto& resize = only_node(model.graph, ios::ir::OpKind::kResize);
  CHECK(resize.attr<ios::ir::ResizeAttrs>().mode == ios::ir::resize::Mode::kLinear);
  CHECK(model.graph.tensor(resize.outputs[0]).shape == ios::ir::Shape{1, 2, 8, 8});

  const std::string antialias = import_error(resize18(18, 1, "stretch", "half_pixel").save("resize18_aa.onnx"));
  CHECK(antialias.find("'up' (Resize)") != std::string::npos);
  CHECK(antialias.find("antialias = 1") != std::string::npos);
  const std::string policy = import_error(resize18(18, 0, "not_larger", "half_pixel").save("resize18_policy.onnx"));
  CHECK(policy.find("'up' (Resize)") != std::string::npos);
  CHECK(policy.find("keep_aspect_ratio_policy 'not_larger'") != std::string::npos);
  const std::string symmetric =
      import_error(resize18(19, 0, "stretch", "half_pixel_symmetric").save("resize19_symmetric.onnx"));
  CHECK(symmetric.find("'up' (Resize)") != std::string::npos);
  CHECK(symmetric.find("half_pixel_symmetric") != std::string::npos);
}

TEST_CASE("IR 9-10 element types (float8, int4) are refused by name", "[onnx][opset][errors]") {
  ModelBuilder b = newer(19);
  b.input("x", {1, 2, 4, 4});
  ModelBuilder::integer(b.node("Cast", {"x"}, {"c"}, "to_fp8"), "to", 17);  // FLOAT8E4M3FN
  ModelBuilder::integer(b.node("Cast", {"c"}, {"y"}, "back"), "to", 1);
  b.output("y", 4);
  const std::string message = import_error(b.save("fp8.onnx"));
  CHECK(message.find("'to_fp8' (Cast)") != std::string::npos);
  CHECK(message.find("float8 or int4") != std::string::npos);
}

TEST_CASE("opset-18 forms with missing inputs or outputs are named errors and never crash", "[onnx][opset][errors]") {
  // Found by the ONNX import fuzzer: a Split with num_outputs and no input
  // read input 0 out of range; num_outputs 0 would have divided by zero.
  SECTION("Split with num_outputs and no data input") {
    ModelBuilder b = newer(18);
    b.input("x", {1, 4, 2, 2});
    ModelBuilder::integer(b.node("Split", {}, {"a", "c"}, "split"), "num_outputs", 2);
    b.node("Relu", {"x"}, {"y"});
    b.output("y", 4);
    const std::string message = import_error(b.save("split18_no_input.onnx"));
    INFO(message);
    CHECK(message.find("the ONNX checker rejected the model") != std::string::npos);
  }
  SECTION("Split with num_outputs 0 and no outputs") {
    ModelBuilder b = newer(18);
    b.input("x", {1, 4, 2, 2});
    ModelBuilder::integer(b.node("Split", {"x"}, {"s"}, "split"), "num_outputs", 0);
    b.model.mutable_graph()->mutable_node(0)->clear_output();
    b.node("Relu", {"x"}, {"y"});
    b.output("y", 4);
    const std::string message = import_error(b.save("split18_zero.onnx"));
    INFO(message);
    CHECK(message.find("the ONNX checker rejected the model") != std::string::npos);
  }
  SECTION("Pad with axes but no pads") {
    ModelBuilder b = newer(18);
    b.input("x", {1, 2, 4, 4});
    b.int_weight("axes", {2}, {2, 3});
    b.node("Pad", {"x", "", "", "axes"}, {"y"}, "pad");
    b.output("y", 4);
    const std::string message = import_error(b.save("pad18_no_pads.onnx"));
    INFO(message);
    CHECK(message.find("the ONNX checker rejected the model") != std::string::npos);
  }
}

TEST_CASE("opset 6 models are converted to opset 9 by ONNX's version converter", "[onnx][opset]") {
  // PyTorch's opset-6 exports: Add with the broadcast attribute (trailing
  // axes), BatchNormalization with is_test; before IR 4 every initializer is
  // a graph input too.
  auto opset6 = [](bool axis_broadcast) {
    ModelBuilder b(6);
    b.model.set_ir_version(3);
    b.input("x", {2, 3, 4, 4});
    const std::vector<int64_t> bias_dims = axis_broadcast ? std::vector<int64_t>{3} : std::vector<int64_t>{4};
    b.ramp_weight("bias", bias_dims);
    b.input("bias", bias_dims);
    auto& add = b.node("Add", {"x", "bias"}, {"a"}, "bias_add");
    ModelBuilder::integer(add, "broadcast", 1);
    if (axis_broadcast) ModelBuilder::integer(add, "axis", 1);
    for (const char* name : {"scale", "shift", "mean", "var"}) {
      b.weight(name, {3}, {1.0f, 0.5f, 2.0f});
      b.input(name, {3});
    }
    auto& bn = b.node("BatchNormalization", {"a", "scale", "shift", "mean", "var"}, {"y"}, "bn");
    ModelBuilder::integer(bn, "is_test", 1);
    b.output("y", 4);
    return b;
  };
  const auto model = ios::onnx::import_model(opset6(false).save("opset6.onnx"));
  const auto& bias_add = only_node(model.graph, ios::ir::OpKind::kAdd);
  CHECK(model.graph.tensor(bias_add.inputs[1]).shape == ios::ir::Shape{4});
  CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == ios::ir::Shape{2, 3, 4, 4});

  SECTION("a broadcast along a leading axis, which the converter does not rewrite, is refused in one line") {
    const std::string message = import_error(opset6(true).save("opset6_axis.onnx"));
    CHECK(message.find("opset6_axis.onnx: opset 6 is older than ios reads (from 7)") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  SECTION("a model the opset-6 checker rejects is named, not converted") {
    ModelBuilder c(6);
    c.model.set_ir_version(3);
    c.input("x", {2, 3});
    c.node("Relu", {"x", "x"}, {"y"}, "two_inputs");
    c.output("y", 2);
    const std::string message = import_error(c.save("opset6_bad.onnx"));
    CHECK(message.find("opset6_bad.onnx: the ONNX checker rejected the model") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  SECTION("a graph output nothing produces is named before the converter") {
    // Found by the ONNX import fuzzer: the checker accepts it, and ONNX's
    // converter wrote through a null pointer on it.
    ModelBuilder c(6);
    c.input("x", {2, 3});
    c.node("Relu", {"x"}, {"y"}, "relu");
    c.output("z", 2);
    const std::string message = import_error(c.save("opset6_undefined_output.onnx"));
    CHECK(message.find(
              "opset6_undefined_output.onnx: graph output 'z' is not produced by any node") !=
          std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}
