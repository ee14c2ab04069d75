// A small helper to build IR graphs by hand for the cost-model tests. Shapes
// are computed here with the ONNX formulas; weights are zero-filled (the cost
// models read shapes only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::test {

class IrBuilder {
 public:
  ir::Graph graph;

  ir::TensorId input(const std::string& name, ir::Shape shape) {
    const ir::TensorId t = graph.add_tensor({name, std::move(shape), ir::kNone, {}, nullptr});
    graph.inputs().push_back(t);
    return t;
  }

  ir::TensorId weight(const std::string& name, ir::Shape shape) {
    auto data = std::make_shared<const std::vector<float>>(
        static_cast<size_t>(ir::num_elements(shape)), 0.0f);
    return graph.add_tensor({name, std::move(shape), ir::kNone, {}, data});
  }

  ir::TensorId activation(const std::string& name, ir::Shape shape) {
    return graph.add_tensor({name, std::move(shape), ir::kNone, {}, nullptr});
  }

  // Conv (+ bias) and, when `relu`, a Relu whose output is named `name` (the
  // conv's own output is then `name` + "_conv").
  ir::TensorId conv(const std::string& name, ir::TensorId x, int64_t cout, int64_t k,
                    int64_t stride = 1, int64_t pad = 0, int64_t group = 1, bool relu = true) {
    const ir::Shape in = graph.tensor(x).shape;
    const int64_t ho = (in[2] + 2 * pad - k) / stride + 1;
    const int64_t wo = (in[3] + 2 * pad - k) / stride + 1;
    ir::ConvAttrs a;
    a.kernel = {k, k};
    a.stride = {stride, stride};
    a.pads = {pad, pad, pad, pad};
    a.group = group;
    const ir::TensorId w = weight(name + "_w", {cout, in[1] / group, k, k});
    const ir::TensorId b = weight(name + "_b", {cout});
    const ir::Shape out_shape{in[0], cout, ho, wo};
    const ir::TensorId y = activation(relu ? name + "_conv" : name, out_shape);
    graph.add_node({name + "_node", ir::OpKind::kConv, {x, w, b}, {y}, a});
    if (!relu) return y;
    const ir::TensorId r = activation(name, out_shape);
    graph.add_node({name + "_relu", ir::OpKind::kRelu, {y}, {r}, {}});
    return r;
  }

  ir::TensorId avg_pool(const std::string& name, ir::TensorId x, int64_t k, int64_t stride,
                        int64_t pad) {
    const ir::Shape in = graph.tensor(x).shape;
    ir::PoolAttrs a;
    a.kernel = {k, k};
    a.stride = {stride, stride};
    a.pads = {pad, pad, pad, pad};
    const ir::Shape out{in[0], in[1], (in[2] + 2 * pad - k) / stride + 1,
                        (in[3] + 2 * pad - k) / stride + 1};
    const ir::TensorId y = activation(name, out);
    graph.add_node({name + "_node", ir::OpKind::kAveragePool, {x}, {y}, a});
    return y;
  }

  ir::TensorId max_pool(const std::string& name, ir::TensorId x, int64_t k, int64_t stride) {
    const ir::Shape in = graph.tensor(x).shape;
    ir::PoolAttrs a;
    a.kernel = {k, k};
    a.stride = {stride, stride};
    const ir::Shape out{in[0], in[1], (in[2] - k) / stride + 1, (in[3] - k) / stride + 1};
    const ir::TensorId y = activation(name, out);
    graph.add_node({name + "_node", ir::OpKind::kMaxPool, {x}, {y}, a});
    return y;
  }

  ir::TensorId concat(const std::string& name, const std::vector<ir::TensorId>& xs) {
    ir::Shape out = graph.tensor(xs.at(0)).shape;
    out[1] = 0;
    for (ir::TensorId x : xs) out[1] += graph.tensor(x).shape[1];
    const ir::TensorId y = activation(name, out);
    graph.add_node({name + "_node", ir::OpKind::kConcat, xs, {y}, ir::AxisAttrs{1}});
    return y;
  }

  // Gemm with B transposed (ONNX's usual Linear): [M, K] x [N, K]^T + C.
  ir::TensorId gemm(const std::string& name, ir::TensorId a, int64_t n) {
    const ir::Shape in = graph.tensor(a).shape;
    const ir::TensorId w = weight(name + "_w", {n, in[1]});
    const ir::TensorId c = weight(name + "_b", {n});
    ir::GemmAttrs attrs;
    attrs.trans_b = true;
    const ir::TensorId y = activation(name, {in[0], n});
    graph.add_node({name + "_node", ir::OpKind::kGemm, {a, w, c}, {y}, attrs});
    return y;
  }

  ir::TensorId flatten(const std::string& name, ir::TensorId x) {
    const ir::Shape in = graph.tensor(x).shape;
    const ir::TensorId y = activation(name, {in[0], ir::num_elements(in) / in[0]});
    graph.add_node({name + "_node", ir::OpKind::kFlatten, {x}, {y}, ir::AxisAttrs{1}});
    return y;
  }

  void output(ir::TensorId t) { graph.outputs().push_back(t); }
};

}  // namespace ios::test
