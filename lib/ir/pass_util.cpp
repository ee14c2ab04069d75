#include "ir/pass_util.h"

#include <algorithm>

namespace ios::ir::pass_util {

bool single_private_use(const Graph& graph, TensorId t, NodeId consumer) {
  const Tensor& tensor = graph.tensor(t);
  if (tensor.consumers.size() != 1 || tensor.consumers[0] != consumer) return false;
  if (graph.is_graph_output(t)) return false;
  const Node& c = graph.node(consumer);
  return std::count(c.inputs.begin(), c.inputs.end(), t) == 1;
}

std::optional<float> scalar_constant(const Graph& graph, TensorId t) {
  const Tensor& tensor = graph.tensor(t);
  if (!tensor.is_constant() || tensor.data->size() != 1) return std::nullopt;
  return (*tensor.data)[0];
}

}  // namespace ios::ir::pass_util
