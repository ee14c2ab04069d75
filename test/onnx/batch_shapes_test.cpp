// How graph inputs get their static shapes: --batch fills symbolic batch
// dimensions only, a static batch is the model's own unless rewritten, and
// the shapes a schedule records are reproduced or refused.
#include <catch2/catch.hpp>

#include "import_error.h"
#include "model_builder.h"

using ios::ir::Shape;
using ios::onnx::ImportOptions;
using ios::test::import_error;
using ios::test::ModelBuilder;

namespace {

// y = a @ b + c, as ONNX's test_gemm_alpha: a is 3x5 (or Nx5 with a
// symbolic batch), b 5x4 and c 1x4 have static dim 0 unrelated to the batch.
std::string gemm_model(const std::string& file, int64_t a_rows) {
  ModelBuilder b;
  b.input("a", {a_rows, 5});
  b.input("b", {5, 4});
  b.input("c", {1, 4});
  b.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  b.output("y", 2);
  return b.save(file);
}

}  // namespace

TEST_CASE("a static model keeps every input's own dim 0", "[onnx][batch]") {
  const std::string path = gemm_model("gemm_static.onnx", 3);
  const auto model = ios::onnx::import_model(path);
  CHECK(model.batch == 3);
  REQUIRE(model.inputs.size() == 3);
  CHECK(model.inputs[0].second == Shape{3, 5});
  CHECK(model.inputs[1].second == Shape{5, 4});
  CHECK(model.inputs[2].second == Shape{1, 4});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == Shape{3, 4});

  ImportOptions same;
  same.batch = 3;  // the model's own batch: accepted, nothing rewritten
  const auto again = ios::onnx::import_model(path, same);
  CHECK(again.inputs[1].second == Shape{5, 4});
  CHECK(again.inputs[2].second == Shape{1, 4});
}

TEST_CASE("the batch option fills symbolic batch dimensions only", "[onnx][batch]") {
  const std::string path = gemm_model("gemm_symbolic.onnx", -1);
  ImportOptions options;
  options.batch = 7;
  const auto model = ios::onnx::import_model(path, options);
  CHECK(model.batch == 7);
  CHECK(model.inputs[0].second == Shape{7, 5});
  CHECK(model.inputs[1].second == Shape{5, 4});
  CHECK(model.inputs[2].second == Shape{1, 4});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == Shape{7, 4});
}

TEST_CASE("a batch option that differs from a static batch is refused unless rewritten",
          "[onnx][batch]") {
  ModelBuilder b;
  b.input("x", {2, 3});
  b.input("y", {2, 3});
  b.node("Add", {"x", "y"}, {"z"}, "add");
  b.output("z", 2);
  const std::string path = b.save("static_add.onnx");
  ImportOptions options;
  options.batch = 4;
  const std::string message = import_error(path, options);
  CHECK(message.find("batch is static") != std::string::npos);
  CHECK(message.find("'x'") != std::string::npos);
  CHECK(message.find("--rewrite-batch") != std::string::npos);

  options.rewrite_batch = true;
  const auto model = ios::onnx::import_model(path, options);
  CHECK(model.batch == 4);
  CHECK(model.inputs[0].second == Shape{4, 3});
  CHECK(model.inputs[1].second == Shape{4, 3});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == Shape{4, 3});

  ImportOptions rewrite_alone;
  rewrite_alone.rewrite_batch = true;
  CHECK(import_error(path, rewrite_alone).find("needs --batch") != std::string::npos);
}

TEST_CASE("a static dimension of size 0 is named as such, not as a symbolic batch",
          "[onnx][batch]") {
  ModelBuilder b;
  b.input("data", {0, 3, 4});
  b.node("Relu", {"data"}, {"y"}, "relu");
  b.output("y", 3);
  const std::string message = import_error(b.save("zero_dim.onnx"));
  CHECK(message.find("static dimension 0 of size 0") != std::string::npos);
  CHECK(message.find("0x3x4") != std::string::npos);
  CHECK(message.find("symbolic") == std::string::npos);
  CHECK(message.find("'?'") == std::string::npos);
}

TEST_CASE("recorded input shapes are reproduced, and refused where the model contradicts them",
          "[onnx][batch]") {
  const std::string symbolic = gemm_model("gemm_recorded.onnx", -1);
  ImportOptions recorded;
  recorded.recorded_source = "gemm.schedule.json";
  recorded.recorded_inputs = {{"a", {6, 5}}, {"b", {5, 4}}, {"c", {1, 4}}};
  const auto model = ios::onnx::import_model(symbolic, recorded);
  CHECK(model.batch == 6);
  CHECK(model.inputs[0].second == Shape{6, 5});
  CHECK(model.inputs[2].second == Shape{1, 4});

  // A static dimension that disagrees: the schedule is for other shapes.
  ImportOptions contradicted = recorded;
  contradicted.recorded_inputs[2].second = {6, 4};
  const std::string message = import_error(symbolic, contradicted);
  CHECK(message.find("gemm.schedule.json") != std::string::npos);
  CHECK(message.find("'c'") != std::string::npos);
  CHECK(message.find("6x4") != std::string::npos);
  CHECK(message.find("1x4") != std::string::npos);

  ImportOptions missing = recorded;
  missing.recorded_inputs.pop_back();
  CHECK(import_error(symbolic, missing).find("no shape for input 'c'") != std::string::npos);

  ImportOptions unknown = recorded;
  unknown.recorded_inputs.push_back({"d", {1}});
  CHECK(import_error(symbolic, unknown).find("'d'") != std::string::npos);

  ImportOptions rank = recorded;
  rank.recorded_inputs[1].second = {5, 4, 1};
  CHECK(import_error(symbolic, rank).find("rank") != std::string::npos);

  // A schedule made with --rewrite-batch on a static model needs it again.
  const std::string fixed = gemm_model("gemm_recorded_static.onnx", 3);
  ImportOptions rewritten;
  rewritten.recorded_source = "rewritten.schedule.json";
  rewritten.recorded_inputs = {{"a", {8, 5}}, {"b", {8, 4}}, {"c", {8, 4}}};
  rewritten.batch = 8;
  CHECK(import_error(fixed, rewritten).find("--rewrite-batch") != std::string::npos);
}
