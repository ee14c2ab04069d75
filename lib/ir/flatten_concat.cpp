// The import pass ir::flatten_concat (declared and described in ir/passes.h).
#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

int flatten_concat(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  int flattened = 0;
  // Outer concats first (NodeId order is topological), so one outer concat
  // absorbs a whole nest.
  for (size_t o = graph.num_nodes(); o-- > 0;) {
    if (dead[o] || graph.node(static_cast<NodeId>(o)).op != OpKind::kConcat) continue;
    const int64_t axis = graph.node(static_cast<NodeId>(o)).attr<AxisAttrs>().axis;
    std::vector<TensorId> inputs;
    // Expands one input recursively.
    auto expand = [&](auto&& self, TensorId t, NodeId reader) -> void {
      const NodeId p = graph.tensor(t).producer;
      if (p != kNone && !dead[static_cast<size_t>(p)] && graph.node(p).op == OpKind::kConcat &&
          graph.node(p).attr<AxisAttrs>().axis == axis && single_private_use(graph, t, reader)) {
        dead[static_cast<size_t>(p)] = true;
        ++flattened;
        for (TensorId inner : graph.node(p).inputs) self(self, inner, p);
      } else {
        inputs.push_back(t);
      }
    };
    for (TensorId t : graph.node(static_cast<NodeId>(o)).inputs) expand(expand, t, static_cast<NodeId>(o));
    graph.node(static_cast<NodeId>(o)).inputs = std::move(inputs);
  }
  if (flattened) graph.compact(dead);
  return flattened;
}

}  // namespace ios::ir
