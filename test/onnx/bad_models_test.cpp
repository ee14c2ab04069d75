// The files onnx_models/make_bad_models.py writes (scripts/setup.sh runs it):
// broken ones give one-line UserErrors naming the file, valid ones import.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/error.h"
#include "import_error.h"
#include "onnx/importer.h"
#include "test_paths.h"

namespace {

using ios::test::import_error;

std::string bad_model(const std::string& file) {
  const auto path = ios::test::bad_models_dir() / file;
  INFO("missing " << path.string() << ": run scripts/setup.sh (make_bad_models.py writes it)");
  REQUIRE(std::filesystem::exists(path));
  return path.string();
}

int count(const ios::ir::Graph& g, ios::ir::OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

}  // namespace

TEST_CASE("make_bad_models.py: each broken file is one UserError", "[onnx][errors][bad]") {
  CHECK(import_error(bad_model("not_onnx.onnx")).find("not a valid ONNX model") != std::string::npos);
  CHECK(import_error(bad_model("truncated.onnx")).find("not a valid ONNX model") != std::string::npos);
  CHECK(import_error(bad_model("cycle.onnx")).find("cycle") != std::string::npos);
  const std::string unsupported = import_error(bad_model("unsupported_op.onnx"));
  CHECK(unsupported.find("weird_node") != std::string::npos);
  CHECK(unsupported.find("LpNormalization") != std::string::npos);
  CHECK(unsupported.find("supported operators: Conv") != std::string::npos);
  CHECK(import_error(bad_model("symbolic_batch.onnx")).find("--batch N") != std::string::npos);
}

TEST_CASE("make_bad_models.py: the valid models import", "[onnx][bad]") {
  {
    ios::onnx::ImportOptions options;
    options.batch = 2;
    const auto m = ios::onnx::import_model(bad_model("symbolic_batch.onnx"), options);
    CHECK(m.graph.tensor(m.graph.outputs().at(0)).shape == ios::ir::Shape{2, 4, 8, 8});
  }
  {
    const auto m = ios::onnx::import_model(bad_model("tiny_conv.onnx"));
    CHECK(m.graph.num_nodes() == 2);
    CHECK(m.graph.tensor(m.graph.outputs().at(0)).shape == ios::ir::Shape{1, 4, 8, 8});
  }
  {
    const auto m = ios::onnx::import_model(bad_model("two_branch.onnx"));
    CHECK(count(m.graph, ios::ir::OpKind::kConv) == 2);
    CHECK(m.graph.tensor(m.graph.outputs().at(0)).shape == ios::ir::Shape{1, 16, 8, 8});
  }
  {
    // Inception-E style: the two inner concats join the outer one.
    const auto m = ios::onnx::import_model(bad_model("inception_like.onnx"));
    REQUIRE(count(m.graph, ios::ir::OpKind::kConcat) == 1);
    for (const auto& n : m.graph.nodes()) {
      if (n.op == ios::ir::OpKind::kConcat) CHECK(n.inputs.size() == 6);
    }
    CHECK(m.graph.tensor(m.graph.outputs().at(0)).shape == ios::ir::Shape{1, 48, 8, 8});
  }
}
