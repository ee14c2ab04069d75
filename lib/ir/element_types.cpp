#include "ir/element_types.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "ir/half_conversion.h"

namespace ios::ir {
namespace {

// The type a node computes and writes.
ElementType node_type(const Graph& graph, const Node& node) {
  if (node.op == OpKind::kCast) return node.attr<CastAttrs>().to;
  for (TensorId t : node.inputs) {
    if (t != kNone && !graph.tensor(t).is_constant()) return graph.tensor(t).type;
  }
  return ElementType::kFloat32;
}

void round_weight(Graph& graph, TensorId id, const Node& reader, const std::string& source) {
  Tensor& w = graph.tensor(id);
  if (!is_half(w.type)) return;
  const float limit = max_finite(w.type);
  std::vector<float> rounded(*w.data);
  for (float& v : rounded) {
    if (std::isfinite(v) && std::fabs(v) > limit) {
      user_error(
          "{}: weight '{}' of node '{}' ({}) holds {}, beyond {}'s largest value {}; keep the node "
          "in "
          "float32 (--keep-fp32 {})",
          source, w.name, reader.name, op_name(reader.op), v, type_name(w.type), limit,
          keep_fp32_argument(reader.name, op_name(reader.op)));
    }
    v = round_to(v, w.type);
  }
  w.data = std::make_shared<const std::vector<float>>(std::move(rounded));
}

}  // namespace

void assign_element_types(Graph& graph,
                          const std::unordered_map<std::string, ElementType>& declared,
                          const std::string& source) {
  for (TensorId id : graph.inputs()) {
    auto it = declared.find(graph.tensor(id).name);
    graph.tensor(id).type = it == declared.end() ? ElementType::kFloat32 : it->second;
  }
  for (NodeId n : graph.topological_order()) {
    const ElementType type = node_type(graph, graph.node(n));
    for (TensorId t : graph.node(n).outputs) graph.tensor(t).type = type;
  }
  // Weights, in tensor order (copies are appended and need no visit).
  const size_t num_tensors = graph.num_tensors();
  for (size_t i = 0; i < num_tensors; ++i) {
    const auto id = static_cast<TensorId>(i);
    if (!graph.tensor(id).is_constant() || graph.tensor(id).consumers.empty()) continue;
    std::map<ElementType, std::vector<NodeId>> readers;
    for (NodeId n : graph.tensor(id).consumers) {
      const Node& node = graph.node(n);
      // A Cast reads its input at the input's own type; constants before
      // a Cast are folded at import, so this is the declared type.
      const ElementType type =
          node.op == OpKind::kCast ? ElementType::kFloat32 : node_type(graph, node);
      readers[type].push_back(n);
    }
    bool first = true;
    for (const auto& [type, nodes] : readers) {
      TensorId target = id;
      if (!first) {
        Tensor copy = graph.tensor(id);
        copy.name = fmt::format("{}/{}", copy.name, type_name(type));
        copy.producer = kNone;
        copy.consumers.clear();
        target = graph.add_tensor(std::move(copy));
        for (NodeId n : nodes) {
          for (TensorId& in : graph.node(n).inputs) {
            if (in == id) in = target;
          }
        }
      }
      first = false;
      graph.tensor(target).type = type;
      round_weight(graph, target, graph.node(nodes.front()), source);
    }
  }
  graph.relink();
}

TypeCounts count_types(const Graph& graph) {
  TypeCounts counts;
  for (const Tensor& t : graph.tensors()) ++counts.of[static_cast<int>(t.type)];
  return counts;
}

}  // namespace ios::ir
