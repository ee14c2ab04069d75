#include "ir/graph.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "core/error.h"

namespace ios::ir {

int64_t num_elements(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

TensorId Graph::add_tensor(Tensor tensor) {
  tensors_.push_back(std::move(tensor));
  return static_cast<TensorId>(tensors_.size() - 1);
}

NodeId Graph::add_node(Node node) {
  const auto id = static_cast<NodeId>(nodes_.size());
  for (TensorId in : node.inputs) tensor(in).consumers.push_back(id);
  for (TensorId out : node.outputs) {
    IOS_ASSERT(tensor(out).producer == kNone, "tensor '{}' has two producers", tensor(out).name);
    tensor(out).producer = id;
  }
  nodes_.push_back(std::move(node));
  return id;
}

std::optional<TensorId> Graph::find_tensor(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<TensorId>(i);
  }
  return std::nullopt;
}

bool Graph::is_graph_output(TensorId id) const {
  return std::find(outputs_.begin(), outputs_.end(), id) != outputs_.end();
}

std::vector<NodeId> Graph::topological_order() const {
  // Kahn's algorithm with a min-heap so that ties keep insertion order.
  std::vector<int> pending(nodes_.size(), 0);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (TensorId in : nodes_[n].inputs) {
      if (tensor(in).producer != kNone) ++pending[n];
    }
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (pending[n] == 0) ready.push(static_cast<NodeId>(n));
  }
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    const NodeId n = ready.top();
    ready.pop();
    order.push_back(n);
    for (TensorId out : node(n).outputs) {
      for (NodeId c : tensor(out).consumers) {
        // A node may read the same tensor twice: decrement once per use.
        if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
      }
    }
  }
  if (order.size() != nodes_.size()) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (pending[n] > 0) {
        const Node& stuck = nodes_[n];
        user_error("the graph has a cycle through node '{}' ({}); an ONNX graph must be acyclic",
                   stuck.name.empty() ? tensor(stuck.outputs.at(0)).name : stuck.name,
                   op_name(stuck.op));
      }
    }
  }
  return order;
}

void Graph::replace_uses(TensorId from, TensorId to) {
  for (Node& n : nodes_) {
    for (TensorId& in : n.inputs) {
      if (in == from) in = to;
    }
  }
  for (TensorId& out : outputs_) {
    if (out == from) out = to;
  }
  relink();
}

void Graph::relink() {
  for (Tensor& t : tensors_) {
    t.producer = kNone;
    t.consumers.clear();
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (TensorId in : nodes_[n].inputs) tensor(in).consumers.push_back(static_cast<NodeId>(n));
    for (TensorId out : nodes_[n].outputs) tensor(out).producer = static_cast<NodeId>(n);
  }
}

void Graph::compact(const std::vector<bool>& dead) {
  IOS_ASSERT(dead.size() == nodes_.size(), "dead mask has {} entries for {} nodes", dead.size(),
             nodes_.size());
  std::vector<Node> kept;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!dead[n]) kept.push_back(std::move(nodes_[n]));
  }
  nodes_ = std::move(kept);

  // Keep tensors still referenced, in their original order.
  std::vector<bool> used(tensors_.size(), false);
  for (const Node& n : nodes_) {
    for (TensorId t : n.inputs) used[static_cast<size_t>(t)] = true;
    for (TensorId t : n.outputs) used[static_cast<size_t>(t)] = true;
  }
  for (TensorId t : inputs_) used[static_cast<size_t>(t)] = true;
  for (TensorId t : outputs_) used[static_cast<size_t>(t)] = true;
  std::vector<TensorId> remap(tensors_.size(), kNone);
  std::vector<Tensor> kept_tensors;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (!used[t]) continue;
    remap[t] = static_cast<TensorId>(kept_tensors.size());
    kept_tensors.push_back(std::move(tensors_[t]));
  }
  tensors_ = std::move(kept_tensors);
  auto apply = [&](std::vector<TensorId>& ids) {
    for (TensorId& id : ids) id = remap[static_cast<size_t>(id)];
  };
  for (Node& n : nodes_) {
    apply(n.inputs);
    apply(n.outputs);
  }
  apply(inputs_);
  apply(outputs_);
  relink();

  // Re-sort so that NodeId order is a topological order (passes rely on it).
  const std::vector<NodeId> order = topological_order();
  std::vector<Node> sorted;
  sorted.reserve(nodes_.size());
  for (NodeId n : order) sorted.push_back(std::move(nodes_[static_cast<size_t>(n)]));
  nodes_ = std::move(sorted);
  relink();
}

}  // namespace ios::ir
