// Shape inference over the IR: each node's output shapes come from its
// operator's shape function in the operator table (ir/op_info.h; each
// operator's own in lib/ir/ops).
#include "ir/shape_inference.h"

#include <algorithm>

#include "core/error.h"
#include "ir/op_info.h"

namespace ios::ir {

int64_t window_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t span = input + pad_begin + pad_end - (dilation * (kernel - 1) + 1);
  if (span < 0) return 0;
  return (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<Shape> infer_node_shapes(const Node& node, const std::vector<Shape>& in) {
  return node_output_shapes(node, in);
}

void infer_shapes(Graph& graph) {
  for (NodeId n : graph.topological_order()) {
    const Node& node = graph.node(n);
    std::vector<Shape> in;
    in.reserve(node.inputs.size());
    for (TensorId t : node.inputs) in.push_back(graph.tensor(t).shape);
    std::vector<Shape> out = infer_node_shapes(node, in);
    IOS_ASSERT(out.size() == node.outputs.size(), "node '{}' ({}) has {} outputs, inferred {}",
               node.name, op_name(node.op), node.outputs.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) graph.tensor(node.outputs[i]).shape = std::move(out[i]);
  }
}

}  // namespace ios::ir
