// Small IR graphs built by hand for the CPU backend tests: every operator,
// nested concats, merge candidates with different kernel sizes.
#pragma once

#include <string>
#include <vector>

#include "cpu_test_util.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace ios::test {

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

  // A constant with seeded random values in [lo, hi).
  ir::TensorId constant(const std::string& name, ir::Shape shape, float lo = -0.5f, float hi = 0.5f) {
    ir::Tensor t;
    t.name = name;
    t.data = std::make_shared<const std::vector<float>>(random_values(ir::num_elements(shape), ++seed_, lo, hi));
    t.shape = std::move(shape);
    return graph_.add_tensor(std::move(t));
  }

  std::vector<ir::TensorId> node_n(ir::OpKind op, std::vector<ir::TensorId> inputs, ir::Attrs attrs,
                                   std::vector<std::string> outputs) {
    ir::Node node;
    node.name = outputs.at(0) + "_node";
    node.op = op;
    node.inputs = std::move(inputs);
    node.attrs = std::move(attrs);
    for (const auto& name : outputs) {
      ir::Tensor t;
      t.name = name;
      node.outputs.push_back(graph_.add_tensor(std::move(t)));
    }
    std::vector<ir::TensorId> ids = node.outputs;
    graph_.add_node(std::move(node));
    return ids;
  }

  ir::TensorId node(ir::OpKind op, std::vector<ir::TensorId> inputs, ir::Attrs attrs, const std::string& output) {
    return node_n(op, std::move(inputs), std::move(attrs), {output}).at(0);
  }

  // Conv with random weights and bias over the kernel's spatial axes; pads
  // the begins, then the ends ({top, left, bottom, right} in 2-D). A stride
  // of {1, 1} is every axis 1.
  ir::TensorId conv(ir::TensorId x, int64_t in_channels, int64_t out_channels, ios::ir::Dims kernel,
                    ios::ir::Dims pads, const std::string& output, ios::ir::Dims stride = {1, 1},
                    int64_t group = 1) {
    ir::ConvAttrs a;
    a.kernel = kernel;
    a.pads = pads;
    a.stride = stride == ios::ir::Dims{1, 1} ? ios::ir::Dims(kernel.size(), 1) : stride;
    a.dilation.assign(kernel.size(), 1);
    a.group = group;
    ir::Shape w_shape{out_channels, in_channels / group};
    w_shape.insert(w_shape.end(), kernel.begin(), kernel.end());
    const auto w = constant(output + "_w", w_shape);
    const auto b = constant(output + "_b", {out_channels});
    return node(ir::OpKind::kConv, {x, w, b}, a, output);
  }

  ir::TensorId relu(ir::TensorId x, const std::string& output) {
    return node(ir::OpKind::kRelu, {x}, std::monostate{}, output);
  }

  ir::TensorId concat(std::vector<ir::TensorId> inputs, const std::string& output, int64_t axis = 1) {
    return node(ir::OpKind::kConcat, std::move(inputs), ir::AxisAttrs{axis}, output);
  }

  // Sets the outputs and infers every shape.
  ir::Graph finish(std::vector<ir::TensorId> outputs) {
    graph_.outputs() = std::move(outputs);
    ir::infer_shapes(graph_);
    return std::move(graph_);
  }

 private:
  ir::Graph graph_;
  uint64_t seed_ = 1000;
};

}  // namespace ios::test
