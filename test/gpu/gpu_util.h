// Helpers for the CUDA backend tests: small IR graphs built by hand, random
// inputs, simple schedules, and comparison against the CPU reference.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/engine.h"
#include "exec/compare.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"
#include "op_suite.h"

namespace ios::gputest {

using HostMap = std::map<std::string, exec::HostTensor>;

// Builds an ir::Graph node by node; output shapes come from ir's shape inference.
class GraphBuilder {
 public:
  ir::TensorId input(const std::string& name, ir::Shape shape) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    const ir::TensorId id = graph_.add_tensor(std::move(t));
    graph_.inputs().push_back(id);
    return id;
  }
  // Uniform random weights scaled by `scale` (keep outputs O(1)).
  ir::TensorId weight(const std::string& name, ir::Shape shape, float scale = 0.5f) {
    exec::HostTensor r = exec::random_tensor(shape, ++seed_, -scale, scale);
    return constant(name, std::move(shape), std::move(r.data));
  }
  ir::TensorId constant(const std::string& name, ir::Shape shape, std::vector<float> data) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.data = std::make_shared<const std::vector<float>>(std::move(data));
    return graph_.add_tensor(std::move(t));
  }
  // Adds a node with `outputs` outputs named name, name:1, ...; returns the first.
  ir::TensorId node(ir::OpKind op, const std::string& name, std::vector<ir::TensorId> inputs, ir::Attrs attrs = {},
                    int outputs = 1) {
    ir::Node n;
    n.name = name;
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    std::vector<ir::Shape> in_shapes;
    for (ir::TensorId t : n.inputs) in_shapes.push_back(graph_.tensor(t).shape);
    std::vector<ir::TensorId> outs;
    for (int i = 0; i < outputs; ++i) {
      ir::Tensor t;
      t.name = i == 0 ? name : name + ":" + std::to_string(i);
      outs.push_back(graph_.add_tensor(std::move(t)));
    }
    n.outputs = outs;
    const std::vector<ir::Shape> shapes = ir::infer_node_shapes(n, in_shapes);
    for (size_t i = 0; i < outs.size(); ++i) graph_.tensor(outs[i]).shape = shapes.at(i);
    graph_.add_node(std::move(n));
    return outs.front();
  }
  // Conv with random weights [out, in/group, k, k] and (optionally) bias.
  ir::TensorId conv(const std::string& name, ir::TensorId x, int64_t out, int64_t k,
                    int64_t stride = 1, ios::ir::Dims pads = {0, 0, 0, 0}, int64_t group = 1,
                    bool bias = true, int64_t dilation = 1) {
    const int64_t in = graph_.tensor(x).shape.at(1);
    ir::ConvAttrs a;
    a.kernel = {k, k};
    a.stride = {stride, stride};
    a.dilation = {dilation, dilation};
    a.pads = pads;
    a.group = group;
    const float scale = 1.0f / static_cast<float>(std::sqrt(static_cast<double>(in / group * k * k)));
    std::vector<ir::TensorId> inputs{x, weight(name + ".w", {out, in / group, k, k}, scale * 1.7f)};
    if (bias) inputs.push_back(weight(name + ".b", {out}, 0.2f));
    return node(ir::OpKind::kConv, name, std::move(inputs), a);
  }
  void output(ir::TensorId t) { graph_.outputs().push_back(t); }
  ir::Graph& graph() { return graph_; }

 private:
  ir::Graph graph_;
  uint64_t seed_ = 100;
};

HostMap random_inputs(const ir::Graph& graph, uint64_t seed);

// A model file that scripts/make-models.sh writes, by export_models.py's
// naming: <name>[-b<N>|-bdyn][-<H>x<W>].onnx.
struct ShippedModel {
  std::string name;             // "inception_v3", "randwire"
  std::filesystem::path file;
  std::optional<int64_t> batch;  // the static batch (-b<N>, or none: 1); nullopt for -bdyn
  bool runs_at(int64_t batch_size) const { return !batch || *batch == batch_size; }
  // What to pass as ImportOptions::batch: the batch for a symbolic one, else
  // none (the file's own; the importer refuses a batch of 0).
  std::optional<int64_t> import_batch(int64_t batch_size) const {
    return batch ? std::nullopt : std::optional<int64_t>(batch_size);
  }
};

// The models in `dir`, one per name (a -bdyn file preferred, since it runs at
// every batch), sorted by name; $IOS_GPU_TEST_MODELS=name,name restricts them.
std::vector<ShippedModel> shipped_models(const std::filesystem::path& dir);
cuda::TensorMap to_tensor_map(const HostMap& inputs);

// One unit per stage, in UnitId order: the operator suite's.
using optest::sequential_schedule;

// Runs `plan` on the GPU and returns the outputs as host tensors.
HostMap run_gpu(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const HostMap& inputs,
                const cuda::EngineOptions& options);

// CHECKs every output of `actual` against `expected` (names and values).
void check_outputs(const HostMap& actual, const HostMap& expected, const exec::Tolerance& tolerance,
                   const std::string& what);

// The graph on the GPU (sequential schedule; CUDA graph on and off; fp32
// with tight tolerance, tf32 looser) against the CPU reference interpreter.
void check_against_reference(const ir::Graph& graph, const std::string& what);

// The bound of one 16-bit output element: `ulps` units in the last place of
// the type (2^-10 for float16, 2^-7 for bfloat16) times 1 + |expected|, the
// operator suite's per-element rule (optest::check_case). Each element is
// held to its own magnitude: a small value next to a large one in the same
// output gets no share of the large one's bound.
double half_bound(ir::ElementType type, double expected, double ulps);
// The elements of `actual` beyond half_bound of `expected` (a NaN or an
// infinity must be matched exactly), with the first `keep` of them described.
struct HalfMismatches {
  int64_t count = 0;
  std::vector<std::string> first;
};
HalfMismatches half_mismatches(const exec::HostTensor& actual, const exec::HostTensor& expected,
                               ir::ElementType type, double ulps, size_t keep = 5);

// The graph converted to float16 and to bfloat16 (ir::convert_to_half,
// inputs and outputs included) on the GPU against the CPU executor on the
// same converted graph and plan, inputs rounded to the type, within 4 ulps
// per element (half_bound), as the operator suite's 16-bit cases are checked.
void check_half_against_executor(const ir::Graph& graph, const std::string& what);
// Every output of `expected` is in `actual` and each of its elements within
// 4 ulps of `type` times 1 + |expected element| (half_bound).
void check_half_outputs(const HostMap& actual, const HostMap& expected, ir::ElementType type);

}  // namespace ios::gputest
