// Bad inputs: each must give one UserError whose single-line message names
// the file (and the node or tensor) and says what to do.
#include <catch2/catch.hpp>

#include <cmath>
#include <utility>

#include "core/error.h"
#include "import_error.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::test::import_error;
using ios::test::ModelBuilder;

// x[1x3x8x8] -> Conv(4 filters, 3x3, pad 1) -> Relu -> y
ModelBuilder small_model(int64_t batch = 1) {
  ModelBuilder b;
  b.input("x", {batch, 3, 8, 8});
  b.ramp_weight("w", {4, 3, 3, 3});
  b.ramp_weight("bias", {4});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv1");
  ModelBuilder::ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu1");
  b.output("y", 4);
  return b;
}

}  // namespace

TEST_CASE("a missing file is a UserError naming the path", "[onnx][errors]") {
  const std::string path = (ios::test::scratch_dir() / "does_not_exist.onnx").string();
  const std::string message = import_error(path);
  CHECK(message.find("no such file") != std::string::npos);
}

TEST_CASE("a file that is not ONNX is a UserError", "[onnx][errors]") {
  const auto path = ios::test::scratch_dir() / "not_onnx.onnx";
  ios::test::write_bytes(path, "this is a plain text file, not a protobuf\n\x01\x02\xff\xfe garbage");
  const std::string message = import_error(path.string());
  CHECK(message.find("not a valid ONNX model") != std::string::npos);

  const auto empty = ios::test::scratch_dir() / "empty.onnx";
  ios::test::write_bytes(empty, "");
  CHECK(import_error(empty.string()).find("empty") != std::string::npos);

  const auto dir = ios::test::scratch_dir() / "a_directory.onnx";
  std::filesystem::create_directories(dir);
  CHECK(import_error(dir.string()).find("directory") != std::string::npos);
}

TEST_CASE("a truncated model is a UserError wherever it is cut", "[onnx][errors]") {
  const std::string bytes = small_model().bytes();
  // Every cut must fail cleanly (parse failure, missing parts, or short weights).
  int cuts = 0;
  for (size_t keep = 1; keep < bytes.size(); keep += std::max<size_t>(1, bytes.size() / 40)) {
    const auto path = ios::test::scratch_dir() / "truncated.onnx";
    ios::test::write_bytes(path, bytes.substr(0, keep));
    import_error(path.string());
    ++cuts;
  }
  CHECK(cuts >= 30);
  const auto path = ios::test::scratch_dir() / "truncated_half.onnx";
  ios::test::write_bytes(path, bytes.substr(0, bytes.size() / 2));
  CHECK(import_error(path.string()).find("ONNX model") != std::string::npos);
}

TEST_CASE("a graph with a cycle is a UserError naming a node on it", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.node("Add", {"x", "back"}, {"sum"}, "add_in_cycle");
  b.node("Relu", {"sum"}, {"back"}, "relu_in_cycle");
  b.node("Relu", {"back"}, {"y"}, "after_cycle");
  b.output("y", 2);
  const std::string message = import_error(b.save("cycle.onnx"));
  CHECK(message.find("cycle") != std::string::npos);
  const bool names_cycle_node = message.find("add_in_cycle") != std::string::npos ||
                                message.find("relu_in_cycle") != std::string::npos;
  CHECK(names_cycle_node);
  CHECK(message.find("after_cycle") == std::string::npos);
}

TEST_CASE("an unsupported operator names the node and its type and lists the supported ones", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"r"}, "relu0");
  b.node("Hardmax", {"r"}, {"y"}, "hardmax_1");
  b.output("y", 2);
  const std::string message = import_error(b.save("unsupported.onnx"));
  CHECK(message.find("hardmax_1") != std::string::npos);
  CHECK(message.find("Hardmax") != std::string::npos);
  CHECK(message.find("not supported") != std::string::npos);
  CHECK(message.find("supported operators: Conv, Relu") != std::string::npos);
  CHECK(message.find("HardSwish") != std::string::npos);

  ModelBuilder custom;
  custom.input("x", {1, 4});
  auto& n = custom.node("FancyOp", {"x"}, {"y"}, "fancy");
  n.set_domain("com.example");
  auto* imp = custom.model.add_opset_import();
  imp->set_domain("com.example");
  imp->set_version(1);
  custom.output("y", 2);
  const std::string custom_message = import_error(custom.save("custom_domain.onnx"));
  CHECK(custom_message.find("com.example.FancyOp") != std::string::npos);
  CHECK(custom_message.find("fancy") != std::string::npos);
}

TEST_CASE("a gather of an activation at one constant index imports as Slice and Reshape", "[onnx]") {
  ModelBuilder b;
  b.input("x", {1, 3, 4, 4});
  b.int_constant("idx", {}, {-2});
  auto& g = b.node("Gather", {"x", "idx"}, {"y"}, "pick_channel");
  ModelBuilder::integer(g, "axis", 1);
  b.output("y", 3);
  const auto model = ios::onnx::import_model(b.save("gather_activation.onnx"), {});
  const ios::ir::Graph& ir = model.graph;
  REQUIRE(ir.num_nodes() == 2);
  CHECK(ir.node(0).op == ios::ir::OpKind::kSlice);
  const auto& slice = ir.node(0).attr<ios::ir::SliceAttrs>();
  CHECK(slice.axes == std::vector<int64_t>{1});
  CHECK(slice.starts == std::vector<int64_t>{1});  // -2 of 3 channels
  CHECK(slice.ends == std::vector<int64_t>{2});
  CHECK(ir.node(1).op == ios::ir::OpKind::kReshape);
  CHECK(ir.tensor(ir.outputs().at(0)).name == "y");
  CHECK(ir.tensor(ir.outputs().at(0)).shape == ios::ir::Shape{1, 4, 4});
}

TEST_CASE("a gather of an activation at several or out-of-range indices is refused naming the node", "[onnx][errors]") {
  const auto gather = [](const std::string& file, std::vector<int64_t> dims, std::vector<int64_t> indices) {
    ModelBuilder b;
    b.input("x", {1, 3, 4, 4});
    b.int_constant("idx", std::move(dims), std::move(indices));
    auto& g = b.node("Gather", {"x", "idx"}, {"y"}, "pick_channel");
    ModelBuilder::integer(g, "axis", 1);
    b.output("y", 4);
    return import_error(b.save(file));
  };
  const std::string several = gather("gather_two.onnx", {2}, {0, 2});
  CHECK(several.find("pick_channel") != std::string::npos);
  CHECK(several.find("indices of shape [2] is not supported") != std::string::npos);
  const std::string out_of_range = gather("gather_out_of_range.onnx", {1}, {3});
  CHECK(out_of_range.find("pick_channel") != std::string::npos);
  CHECK(out_of_range.find("index 3 is out of range for axis 1 of length 3") != std::string::npos);
}

TEST_CASE("a symbolic batch without --batch says to pass --batch N", "[onnx][errors]") {
  const std::string path = small_model(-1).save("symbolic_batch.onnx");
  const std::string message = import_error(path);
  CHECK(message.find("'x'") != std::string::npos);
  CHECK(message.find("symbolic batch") != std::string::npos);
  CHECK(message.find("--batch N") != std::string::npos);

  ios::onnx::ImportOptions options;
  options.batch = 3;
  const auto model = ios::onnx::import_model(path, options);
  CHECK(model.batch == 3);
  REQUIRE(model.inputs.size() == 1);
  CHECK(model.inputs[0].second == ios::ir::Shape{3, 3, 8, 8});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == ios::ir::Shape{3, 4, 8, 8});
}

TEST_CASE("a symbolic spatial dimension needs a full --input-shape", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 3, -1, -1}, "height");
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y", 4);
  const std::string path = b.save("symbolic_hw.onnx");
  ios::onnx::ImportOptions batch_only;
  batch_only.batch = 2;
  CHECK(import_error(path, batch_only).find("--input-shape x:") != std::string::npos);

  ios::onnx::ImportOptions full;
  full.input_shapes["x"] = {2, 3, 5, 7};
  const auto model = ios::onnx::import_model(path, full);
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == ios::ir::Shape{2, 3, 5, 7});

  ios::onnx::ImportOptions wrong_name;
  wrong_name.input_shapes["input"] = {1, 3, 4, 4};
  const std::string message = import_error(path, wrong_name);
  CHECK(message.find("'input'") != std::string::npos);
  CHECK(message.find("inputs are: x") != std::string::npos);

  ios::onnx::ImportOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {3, 4, 4};
  CHECK(import_error(path, wrong_rank).find("rank") != std::string::npos);

  ios::onnx::ImportOptions zero_batch;
  zero_batch.batch = 0;
  CHECK(import_error(path, zero_batch).find("--batch") != std::string::npos);
}

TEST_CASE("the ONNX checker's complaints become one-line UserErrors", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", {"x", "extra"}, {"y"}, "relu_two_inputs");  // Relu takes one input
  b.weight("extra", {1}, {0.0f});
  b.output("y", 2);
  const std::string message = import_error(b.save("checker.onnx"));
  CHECK(message.find("checker") != std::string::npos);
}

TEST_CASE("weights that are not float32 are rejected by name", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.int_weight("offsets", {4}, {1, 2, 3, 4});
  b.node("Add", {"x", "offsets"}, {"y"}, "add_int");
  b.output("y", 2);
  // ONNX's own type check (Add needs equal types) or ios's weight check.
  const std::string message = import_error(b.save("int_weight.onnx"));
  CHECK(message.find("add_int") != std::string::npos);
}

TEST_CASE("a weight whose data is shorter than its dims is rejected", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.weight("w", {4, 3, 3, 3}, std::vector<float>(50, 0.5f));  // needs 108
  b.node("Conv", {"x", "w"}, {"y"}, "conv_short");
  b.output("y", 4);
  const std::string message = import_error(b.save("short_weight.onnx"));
  CHECK(message.find("'w'") != std::string::npos);
  CHECK(message.find("corrupt or truncated") != std::string::npos);
}

TEST_CASE("a run-time Reshape target is rejected with the node name", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.input("target", {2});
  b.model.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::INT64);
  b.node("Reshape", {"x", "target"}, {"y"}, "dynamic_reshape");
  b.output("y", 2);
  const std::string message = import_error(b.save("dynamic_reshape.onnx"));
  // Either the integer graph input or the run-time target is named.
  const bool named = message.find("target") != std::string::npos;
  CHECK(named);
}

TEST_CASE("a Pow whose exponent is computed at run time is rejected with the node name", "[onnx][errors]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.input("exponent", {1, 4});
  b.node("Pow", {"x", "exponent"}, {"y"}, "runtime_pow");
  b.output("y", 2);
  const std::string message = import_error(b.save("runtime_pow.onnx"));
  CHECK(message.find("runtime_pow") != std::string::npos);
  CHECK(message.find("exponent") != std::string::npos);
  CHECK(message.find("constant exponent only") != std::string::npos);

  // The same node with a constant exponent imports.
  ModelBuilder ok;
  ok.input("x", {1, 4});
  ok.ramp_weight("exponent", {1, 4});
  ok.node("Pow", {"x", "exponent"}, {"y"}, "constant_pow");
  ok.output("y", 2);
  CHECK(ios::onnx::import_model(ok.save("constant_pow.onnx")).graph.num_nodes() == 1);
}

TEST_CASE("an operator older than the opset range ios follows names the node and the opset", "[onnx][errors]") {
  // (Models before opset 7 are converted to opset 9 first: opset_forms_test.cpp.)
  ModelBuilder b(13);
  b.input("x", {1, 4});
  b.node("Celu", {"x"}, {"y"}, "old_celu");
  b.output("y", 2);
  b.model.mutable_opset_import(0)->set_version(11);
  const std::string message = import_error(b.save("old_celu.onnx"));
  CHECK(message.find("old_celu") != std::string::npos);
  CHECK(message.find("Celu") != std::string::npos);
}

// Size operands that are negative or not finite: ONNX's shape inference turns
// them into garbage shapes, the message names the node, the operand and the
// value instead (each once read "more than 2^34 elements").
TEST_CASE("negative and non-finite size operands name the node, the operand and the value",
          "[onnx][errors][sizes]") {
  using Catch::Contains;
  const auto resize_scales = [](float h) {
    ModelBuilder b;
    b.input("x", {1, 2, 5, 6});
    b.weight("scales", {4}, {1.0f, 1.0f, h, 2.0f});
    b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
    b.output("y", 4);
    return b;
  };
  CHECK_THAT(import_error(resize_scales(-2.0f).save("neg_scales.onnx")),
             Contains("node 'up' (Resize): input 2 ('scales') holds -2 at position 2; scales must "
                      "be positive finite numbers"));
  CHECK_THAT(import_error(resize_scales(std::nanf("")).save("nan_scales.onnx")),
             Contains("'scales') holds nan at position 2"));
  CHECK_THAT(import_error(resize_scales(INFINITY).save("inf_scales.onnx")),
             Contains("'scales') holds inf at position 2"));
  {
    ModelBuilder b;
    b.input("x", {1, 2, 5, 6});
    b.int_weight("sizes", {4}, {1, 2, -10, 12});
    b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
    b.output("y", 4);
    CHECK_THAT(import_error(b.save("neg_sizes.onnx")),
               Contains("node 'up' (Resize): input 3 ('sizes') holds -10 at position 2"));
  }
  {
    ModelBuilder b;
    b.input("x", {1, 4, 5, 6});
    b.int_weight("parts", {2}, {-1, 5});
    ModelBuilder::integer(b.node("Split", {"x", "parts"}, {"y", "z"}, "split"), "axis", 1);
    b.output("y", 4);
    b.output("z", 4);
    CHECK_THAT(import_error(b.save("neg_split.onnx")),
               Contains("node 'split' (Split): input 1 ('parts') holds -1 at position 0; split "
                        "sizes must be finite numbers >= 0"));
  }
  {
    ModelBuilder b;
    b.input("x", {1, 3, 8, 8});
    b.int_weight("pads", {8}, {0, 0, -10, 0, 0, 0, 0, 0});
    b.node("Pad", {"x", "pads"}, {"y"}, "pad");
    b.output("y", 4);
    CHECK_THAT(import_error(b.save("pad_beyond.onnx")),
               Contains("node 'pad' (Pad): input 1 ('pads') pads axis 2 (size 8) by -10 and 0, "
                        "which leaves -2 elements"));
  }
}

TEST_CASE("a Transpose whose perm does not fit its input names the file and the node",
          "[onnx][errors][sizes]") {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  ModelBuilder::ints(b.node("Transpose", {"x"}, {"t"}, "transpose"), "perm", {0, 1, 2});
  b.node("Relu", {"t"}, {"y"}, "relu");
  b.output("y", 3);
  CHECK_THAT(import_error(b.save("transpose_short_perm.onnx")),
             Catch::Contains("node 'transpose' (Transpose): attribute 'perm' has 3 entries for an "
                             "input of rank 4"));
}

TEST_CASE("element types are named once, with ONNX's code", "[onnx][errors][sizes]") {
  for (const auto& [code, name] : {std::pair{17, "17 (float8 e4m3fn)"},
                                   std::pair{99, "99 (not an ONNX element type)"}}) {
    ModelBuilder b;
    b.input("x", {1, 3, 8, 8});
    auto* w = b.model.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(code);
    w->add_dims(1);
    w->set_raw_data(std::string(1, '\0'));
    b.node("Add", {"x", "w"}, {"y"}, "add");
    b.output("y", 4);
    const std::string e = import_error(b.save("type_" + std::to_string(code) + ".onnx"));
    CHECK_THAT(e, Catch::Contains(std::string("element type ") + name));
    CHECK_THAT(e, !Catch::Contains("type type"));
  }
}

TEST_CASE("a 5 MB node name and a NUL in a name are echoed as short, whole lines",
          "[onnx][errors][sizes]") {
  for (const std::string& name : {std::string(5'000'000, 'n'), std::string("bad\0name\n", 9)}) {
    ModelBuilder b;
    b.input("x", {1, 3, 8, 8});
    b.node("LpNormalization", {"x"}, {"y"}, name);
    b.output("y", 4);
    const std::string e = import_error(b.save("long_name.onnx"));
    CHECK(e.size() < 2000);
    CHECK(e.find('\0') == std::string::npos);
    CHECK_THAT(e, Catch::Contains("'bad\\x00name\\n'") || Catch::Contains("... (5000000 bytes)"));
  }
}
