// The import pass ir::fuse_mish (declared and described in ir/passes.h).
#include "ir/passes.h"

#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

namespace {

// The node making `t` when it is of kind `op` and `t` is read only by
// `reader` (once) and is no graph output; kNone otherwise.
NodeId private_producer(const Graph& graph, const std::vector<bool>& dead, TensorId t, NodeId reader, OpKind op) {
  const NodeId p = graph.tensor(t).producer;
  if (p == kNone || dead[static_cast<size_t>(p)] || graph.node(p).op != op) return kNone;
  return single_private_use(graph, t, reader) ? p : kNone;
}

}  // namespace

int fuse_mish(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  int fused = 0;
  for (size_t n = 0; n < graph.num_nodes(); ++n) {
    const NodeId id = static_cast<NodeId>(n);
    const Node& mul = graph.node(id);
    if (dead[n] || mul.op != OpKind::kMul || mul.inputs.size() != 2) continue;
    for (size_t first = 0; first < 2; ++first) {
      const TensorId x = mul.inputs[first];
      const NodeId tanh = private_producer(graph, dead, mul.inputs[1 - first], id, OpKind::kTanh);
      if (tanh == kNone) continue;
      const NodeId softplus = private_producer(graph, dead, graph.node(tanh).inputs.at(0), tanh, OpKind::kSoftplus);
      if (softplus == kNone || graph.node(softplus).inputs.at(0) != x || graph.tensor(x).is_constant()) continue;
      if (graph.tensor(mul.outputs.at(0)).shape != graph.tensor(x).shape) continue;
      dead[static_cast<size_t>(tanh)] = true;
      dead[static_cast<size_t>(softplus)] = true;
      Node& mish = graph.node(id);  // keeps its name and output tensor
      mish.op = OpKind::kMish;
      mish.inputs = {x};
      mish.attrs = std::monostate{};
      ++fused;
      break;
    }
  }
  if (fused) graph.compact(dead);
  return fused;
}

}  // namespace ios::ir
