// ONNX operators that ios imports as other IR operators, run end to end on
// the CPU executor against float64 truths computed here from the ONNX
// definitions: Einsum (Transpose, Reshape and MatMul; onnx/einsum.h) and
// InstanceNormalization (LayerNormalization, then the per-channel scale and
// shift). The refusals name the node and the equation.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "model_test_util.h"
#include "onnx/model_builder.h"

namespace ios::test {
namespace {

using Values = std::vector<double>;

std::vector<float> wave(int64_t count, double phase) {
  std::vector<float> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase));
  return v;
}

int64_t elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Every output of `file` run by a sequential schedule on the CPU executor.
std::map<std::string, exec::HostTensor> run_model(const std::string& file,
                                                  const std::map<std::string, exec::HostTensor>& inputs,
                                                  ir::Graph* imported = nullptr) {
  const auto model = onnx::import_model(file, onnx::ImportOptions{});
  const auto graph = sched::UnitGraph::form(model.graph);
  auto cost = simulated_cost(graph);
  const auto schedule = make_schedule("sequential", "", graph, cost);
  cpu::CpuExecutor executor(graph, exec::lower(graph, schedule), cpu::ExecutorOptions{1});
  if (imported) *imported = model.graph;
  return executor.run(inputs);
}

// ONNX Einsum in float64, by visiting every assignment of the indices.
Values einsum_truth(const std::vector<std::string>& operands, const std::string& output,
                    const std::vector<std::vector<float>>& values, const std::vector<std::vector<int64_t>>& shapes) {
  std::map<char, int64_t> size;
  for (size_t k = 0; k < operands.size(); ++k) {
    for (size_t d = 0; d < operands[k].size(); ++d) size[operands[k][d]] = shapes[k][d];
  }
  std::string letters;
  for (const auto& [c, n] : size) letters += c;
  std::vector<int64_t> out_dims;
  for (char c : output) out_dims.push_back(size.at(c));
  Values out(static_cast<size_t>(elements(out_dims)), 0.0);
  std::map<char, int64_t> at;
  for (char c : letters) at[c] = 0;
  auto offset = [&](const std::string& idx, const std::vector<int64_t>& dims) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o = o * dims[d] + at.at(idx[d]);
    return static_cast<size_t>(o);
  };
  while (true) {
    double term = 1.0;
    for (size_t k = 0; k < operands.size(); ++k) term *= values[k][offset(operands[k], shapes[k])];
    out[offset(output, out_dims)] += term;
    size_t d = letters.size();
    while (d > 0 && ++at[letters[d - 1]] == size.at(letters[d - 1])) at[letters[--d]] = 0;
    if (d == 0) break;
  }
  return out;
}

struct EinsumCase {
  std::string equation;  // as PyTorch writes it, spaces included where it does
  std::vector<std::string> operands;
  std::string output;
  std::vector<std::vector<int64_t>> shapes;
  bool constant_b = false;  // the second operand a weight
};

void check_einsum(const EinsumCase& c) {
  INFO("Einsum '" << c.equation << "'");
  ModelBuilder b;
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  std::map<std::string, exec::HostTensor> inputs;
  for (size_t k = 0; k < c.shapes.size(); ++k) {
    const std::string name = k == 0 ? "a" : "b";
    values.push_back(wave(elements(c.shapes[k]), static_cast<double>(k)));
    if (k == 1 && c.constant_b) {
      b.weight(name, c.shapes[k], values.back());
    } else {
      b.input(name, c.shapes[k]);
      inputs[name] = exec::HostTensor(c.shapes[k], values.back());
    }
    names.push_back(name);
  }
  ModelBuilder::text(b.node("Einsum", names, {"y"}, "attention/Einsum"), "equation", c.equation);
  b.output("y", static_cast<int>(c.output.size()));
  ir::Graph graph;
  const auto outputs = run_model(b.save("einsum.onnx"), inputs, &graph);
  for (const auto& node : graph.nodes()) {
    const bool lowered = node.op == ir::OpKind::kTranspose || node.op == ir::OpKind::kReshape || node.op == ir::OpKind::kMatMul;
    CHECK(lowered);
  }
  const Values truth = einsum_truth(c.operands, c.output, values, c.shapes);
  const exec::HostTensor& y = outputs.at("y");
  REQUIRE(y.data.size() == truth.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(y.data[i] - truth[i]) <= 1e-5 * (1.0 + std::abs(truth[i])));
  }
}

TEST_CASE("Einsum imports as Transpose, Reshape and MatMul and matches a float64 einsum", "[cpu][onnx][einsum]") {
  // MaxViT's relative-position attention, as torchvision writes it.
  check_einsum({"B G H I D, B G H J D -> B G H I J", {"BGHID", "BGHJD"}, "BGHIJ", {{1, 2, 3, 4, 5}, {1, 2, 3, 6, 5}}});
  check_einsum({"B G H I J, B G H J D -> B G H I D", {"BGHIJ", "BGHJD"}, "BGHID", {{1, 2, 3, 4, 6}, {1, 2, 3, 6, 5}}});
  check_einsum({"bij,bjk->bik", {"bij", "bjk"}, "bik", {{3, 4, 5}, {3, 5, 2}}});
  // Several free and contracted indices, a weight operand, an output order
  // of its own and an implicit output (alphabetical: i, k).
  check_einsum({"abc,cd->dba", {"abc", "cd"}, "dba", {{2, 3, 4}, {4, 5}}, true});
  check_einsum({"nhwc,hwck->nk", {"nhwc", "hwck"}, "nk", {{2, 3, 2, 4}, {3, 2, 4, 5}}, true});
  check_einsum({"ij,jk", {"ij", "jk"}, "ik", {{3, 4}, {4, 2}}});
  check_einsum({"ijk->kij", {"ijk"}, "kij", {{2, 3, 4}}});
}

TEST_CASE("Einsum forms ios does not lower are refused naming the node and the equation", "[cpu][onnx][einsum]") {
  struct Refused {
    std::string equation, why;
    int output_rank;
  };
  const std::vector<Refused> cases = {
      {"ii->i", "repeats in operand 0 (a diagonal)", 1},
      {"ij->i", "index 'j' is summed over", 1},
      {"ij,jk->k", "index 'i' is summed over in operand 0 alone", 1},
      {"...ij,...jk->...ik", "ellipsis", 2},
      {"i,i->", "a scalar output is not supported", 0},
  };
  for (const auto& [equation, why, output_rank] : cases) {
    INFO(equation);
    ModelBuilder b;
    const bool two = equation.find(',') != std::string::npos;
    const bool square = equation.rfind("ii", 0) == 0;
    const bool vectors = equation.rfind("i,i", 0) == 0;
    b.input("a", vectors ? std::vector<int64_t>{4} : square ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{3, 4});
    if (two) b.input("b", vectors ? std::vector<int64_t>{4} : std::vector<int64_t>{4, 2});
    ModelBuilder::text(b.node("Einsum", two ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, {"y"},
                              "attention/Einsum"),
                       "equation", equation);
    b.output("y", output_rank);
    try {
      onnx::import_model(b.save("einsum_refused.onnx"), onnx::ImportOptions{});
      FAIL("imported");
    } catch (const UserError& e) {
      const std::string message = e.what();
      CHECK_THAT(message, Catch::Contains("einsum_refused.onnx") && Catch::Contains("'attention/Einsum'") &&
                              Catch::Contains("Einsum '" + equation + "'") && Catch::Contains(why));
    }
  }
}

// InstanceNormalization in float64: each (n, c) plane normalized, then
// scale[c] * x + B[c].
Values instance_norm_truth(const std::vector<float>& x, const std::vector<int64_t>& dims, const std::vector<float>& scale,
                           const std::vector<float>& bias, double epsilon) {
  const int64_t plane = elements(dims) / (dims[0] * dims[1]);
  Values out(x.size());
  for (int64_t nc = 0; nc < dims[0] * dims[1]; ++nc) {
    const size_t c = static_cast<size_t>(nc % dims[1]), base = static_cast<size_t>(nc * plane);
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < plane; ++i) mean += x[base + static_cast<size_t>(i)];
    mean /= static_cast<double>(plane);
    for (int64_t i = 0; i < plane; ++i) var += std::pow(x[base + static_cast<size_t>(i)] - mean, 2);
    var /= static_cast<double>(plane);
    for (int64_t i = 0; i < plane; ++i) {
      const size_t k = base + static_cast<size_t>(i);
      out[k] = (x[k] - mean) / std::sqrt(var + epsilon) * scale[c] + bias[c];
    }
  }
  return out;
}

TEST_CASE("InstanceNormalization imports as LayerNormalization and matches float64", "[cpu][onnx][instance_norm]") {
  // GroupNorm as PyTorch exports it (ones and zeros: LayerNorm alone), and
  // with a scale and shift of its own (then a Mul and an Add).
  for (const bool affine : {false, true}) {
    INFO((affine ? "with scale and B" : "ones and zeros"));
    const std::vector<int64_t> dims{2, 3, 4, 5};
    const std::vector<float> x = wave(elements(dims), 0.5);
    const std::vector<float> scale = affine ? std::vector<float>{0.5f, -1.0f, 2.0f} : std::vector<float>{1, 1, 1};
    const std::vector<float> bias = affine ? std::vector<float>{0.25f, 0.0f, -3.0f} : std::vector<float>{0, 0, 0};
    ModelBuilder b;
    b.input("x", dims);
    b.weight("scale", {3}, scale);
    b.weight("bias", {3}, bias);
    ModelBuilder::real(b.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm"), "epsilon", 1e-3f);
    b.output("y", 4);
    ir::Graph graph;
    const auto outputs = run_model(b.save("instance_norm.onnx"), {{"x", exec::HostTensor(dims, x)}}, &graph);
    CHECK(graph.num_nodes() == (affine ? 3 : 1));
    CHECK(graph.node(0).op == ir::OpKind::kLayerNorm);
    const Values truth = instance_norm_truth(x, dims, scale, bias, 1e-3);
    const exec::HostTensor& y = outputs.at("y");
    REQUIRE(y.data.size() == truth.size());
    for (size_t i = 0; i < truth.size(); ++i) {
      INFO("element " << i);
      CHECK(std::abs(y.data[i] - truth[i]) <= 1e-5 * (1.0 + std::abs(truth[i])));
    }
  }
}

}  // namespace
}  // namespace ios::test
