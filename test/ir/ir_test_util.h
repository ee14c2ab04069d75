// Small helpers to build IR graphs by hand in tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::test {

inline ir::TensorId activation(ir::Graph& g, const std::string& name, ir::Shape shape = {}) {
  ir::Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  return g.add_tensor(std::move(t));
}

inline ir::TensorId graph_input(ir::Graph& g, const std::string& name, ir::Shape shape) {
  const ir::TensorId id = activation(g, name, std::move(shape));
  g.inputs().push_back(id);
  return id;
}

inline ir::TensorId weight(ir::Graph& g, const std::string& name, ir::Shape shape, std::vector<float> values) {
  ir::Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.data = std::make_shared<const std::vector<float>>(std::move(values));
  return g.add_tensor(std::move(t));
}

// Values v(i) = scale * ((i * 7) % 11 - 5): small, varied, deterministic.
inline std::vector<float> pattern(size_t n, float scale, int shift = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(shift)) % 11) - 5);
  return v;
}

inline ir::NodeId add(ir::Graph& g, ir::OpKind op, const std::string& name, std::vector<ir::TensorId> inputs,
                      std::vector<ir::TensorId> outputs, ir::Attrs attrs = {}) {
  ir::Node n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  return g.add_node(std::move(n));
}

inline int count_ops(const ir::Graph& g, ir::OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

}  // namespace ios::test
